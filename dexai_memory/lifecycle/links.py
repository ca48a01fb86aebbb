"""Links between memories, found at consolidation: what recall follows for a second hop.

:func:`discover_links` reads a user's current memories (notes, facts, decisions and the
raw turns archived in L3; not snapshots or episodes) and links two of them, at most
:data:`MAX_LINKS_PER_MEMORY` links a memory, when

``entity``
    they name the same rare name: a capitalised word not at the start of a sentence (or at
    the start, when another memory has it inside a sentence), a CamelCase or snake_case
    identifier, an ACRONYM (:func:`names`), named by at most
    :data:`MAX_NAME_MEMORIES` memories. A name every memory carries (the user, the project,
    a speaker) links nothing; the rarest shared names link first;
``file``
    they name the same file (:func:`files`: a path or a file name with an extension, compared
    by its base name), named by at most :data:`MAX_FILE_MEMORIES` memories;
``fix``
    a reports an error (:data:`ERROR_WORDS`: "error", "fails", "traceback", "crash" ...) and b,
    stated later (within :data:`FIX_WINDOW_DAYS`), fixes it (:data:`FIX_WORDS`: "fixed",
    "resolved", "workaround", "the cause was", "decided" ...) about the same thing (:func:`about_the_same`:
    a shared name or file, or two topic words and a third of the shorter one's); each error
    links its two closest fixes;
``reason``
    a states a decision (:data:`DECISION_WORDS`: "decided", "chose", "going with" ...) and b,
    said in the same session or within a day, gives a reason (:data:`REASON_WORDS`:
    "because", "so that", "due to" ...) about the same thing.

Two memories of one source turn (a raw turn and the notes taken from it) are tied by
their provenance already and are never linked; nor are memories of different projects.
The rules are words only: no model, deterministic, so a run finds the same links again,
and the store keeps each (a, b, kind) once
(:meth:`~dexai_memory.providers.base.MemoryProvider.add_links`). Recall brings a hit's linked
memories in as candidates (:mod:`dexai_memory.recall.linked`); ``dexai memory get ID``
shows a memory's links.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence, Set
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..models import Memory, MemoryLink, MemoryType, SearchFilters, utcnow
from ..text.words import STOP_WORDS, content_words

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Types that are linked (snapshots and episodes have their own readers).
LINKED_TYPES = tuple(t for t in MemoryType if t not in (MemoryType.SNAPSHOT, MemoryType.EPISODE))
#: A name named by more memories than this is a subject of everything, not a link.
MAX_NAME_MEMORIES = 6
#: The same for a file name.
MAX_FILE_MEMORIES = 10
#: Links a memory takes part in at most (per run; the rarest shared names first).
MAX_LINKS_PER_MEMORY = 5
#: Days after an error within which a statement can be its fix.
FIX_WINDOW_DAYS = 30.0
#: Fixes linked to one error at most.
FIXES_PER_ERROR = 2

ERROR_WORDS = re.compile(
    r"(?i)\b(?:errors?|exceptions?|traceback|fails?|failed|failing|failures?|crash(?:es|ed|ing)?|broken|bugs?|"
    r"panics?|segfaults?|timed out|time ?outs?|doesn't work|does not work|not working|won't start|refused)\b")
FIX_WORDS = re.compile(
    r"(?i)\b(?:fix(?:ed|es|ing)?|resolved|solved|workaround|the cause (?:was|is)|caused by|root cause|patched|"
    r"works now|now works|turned out|decided|switched to|the solution)\b")
DECISION_WORDS = re.compile(
    r"(?i)\b(?:decided|decides|decision|chose|chosen|going with|went with|settled on|agreed (?:to|on|that)|"
    r"opted|we(?:'ll| will) use|will use|picked)\b")
#: A reason, said as one ("since" is left out: as often "since we last talked" as a reason).
REASON_WORDS = re.compile(
    r"(?i)(?:\bbecause|\B'cause|\bcuz|\bso that|\bdue to|\bthe reason|\breasons? (?:is|was|being)|\bin order to|"
    r"\bto avoid|\bwhich is why|\bthat's why)\b")

_MONTHS_AND_DAYS = frozenset(
    "january february march april may june july august september october november december jan feb mar apr jun "
    "jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday today tomorrow "
    "yesterday mon tue tues wed thu thur thurs fri sat sun".split())
#: Chat abbreviations written in capitals that name nothing.
_NOT_NAMES = frozenset("btw lol omg tbh imo imho fyi asap ok okay thx pls idk brb".split())
_NAME = re.compile(r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][a-zA-Z0-9]*)+|[A-Z]{2,}[0-9]*|[A-Z][a-z'’]{2,}|"
                   r"[a-z][a-z0-9]*_[a-z0-9_]+)\b")
_FILE = re.compile(r"(?<![\w@])(?:[\w.-]+/)*([\w-]+\.(?:py|pyi|js|mjs|ts|tsx|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|"
                   r"hpp|cs|swift|md|rst|yaml|yml|json|toml|ini|cfg|sql|sh|bash|css|scss|html|txt|lock|proto|"
                   r"tf|dockerfile))\b", re.IGNORECASE)
#: Words of the markers above: not topic words.
_MARKER_WORDS = frozenset(
    "error errors exception exceptions traceback fail fails failed failing failure failures crash crashes crashed "
    "broken bug bugs fix fixed fixes fixing resolved solved workaround cause caused root patched works work "
    "turned decided decides decision chose chosen going went settled agreed opted use picked because cause cuz "
    "due reason reasons order avoid why user".split())


def names(text: str, known: Set[str] = frozenset()) -> set[str]:
    """The names of ``text``, lower-cased (see the module docstring). A capitalised word at the start
    of a sentence (or after "Speaker:") is a name only when it is one of ``known`` (names found
    inside other sentences); month and day names never are."""
    found: set[str] = set()
    for m in _NAME.finditer(text):
        word = m.group(0)
        low = word.lower().replace("’", "'").removesuffix("'s")
        if low in STOP_WORDS or low in _MONTHS_AND_DAYS or low in _NOT_NAMES or len(low) < 2:
            continue
        i = m.start() - 1
        while i >= 0 and text[i] in " \t":
            i -= 1
        if word[0].isupper() and word[1:].replace("'", "").replace("’", "").islower() and (
                i < 0 or text[i] in ".!?:;\n\"'([") and low not in known:
            continue
        found.add(low)
    return found


def files(text: str) -> set[str]:
    """The files ``text`` names, by base name, lower-cased ("src/app.py" and "app.py" are one)."""
    return {m.group(1).lower() for m in _FILE.finditer(text)}


def topic_words(text: str) -> set[str]:
    """Content words of ``text`` without the error, fix, decision and reason markers."""
    return {w for w in content_words(text) if w not in _MARKER_WORDS and not w.isdigit()}


def about_the_same(a: Memory, b: Memory) -> bool:
    """Whether two memories speak of one thing: a shared name or file, or at least two shared topic
    words making a third of the shorter memory's."""
    return _Features(a).about_the_same(_Features(b))


class _Features:
    """The names, files and topic words of one memory, computed once."""

    __slots__ = ("files", "names", "words")

    def __init__(self, memory: Memory, known: Set[str] = frozenset()):
        self.files, self.words = files(memory.content), topic_words(memory.content)
        # "README.md" names a file, not the name "readme" too
        self.names = names(memory.content, known) - {f.rsplit(".", 1)[0] for f in self.files}

    def about_the_same(self, other: _Features) -> bool:
        if (self.names & other.names) or (self.files & other.files):
            return True
        shared = len(self.words & other.words)
        return shared >= 2 and 3 * shared >= min(len(self.words), len(other.words))


def _when(m: Memory) -> datetime:
    return m.valid_from or m.created_at


def _apart(a: Memory, b: Memory) -> bool:
    """Whether a pair may be linked: one project, no source turn in common."""
    return a.project == b.project and not (set(a.source_ids) & set(b.source_ids))


def _ordered(a: Memory, b: Memory) -> tuple[Memory, Memory]:
    return (a, b) if (_when(a), a.id) <= (_when(b), b.id) else (b, a)


class _Links:
    """Links found so far, at most :data:`MAX_LINKS_PER_MEMORY` neighbours a memory."""

    def __init__(self, user_id: str, now: datetime):
        self.user_id, self.now = user_id, now
        self.found: dict[tuple[str, str, str], MemoryLink] = {}
        self.neighbours: dict[str, set[str]] = defaultdict(set)

    def add(self, a: Memory, b: Memory, kind: str, reason: str) -> None:
        if (a.id, b.id, kind) in self.found or not _apart(a, b):
            return
        new_pair = b.id not in self.neighbours[a.id]
        if new_pair and (len(self.neighbours[a.id]) >= MAX_LINKS_PER_MEMORY
                         or len(self.neighbours[b.id]) >= MAX_LINKS_PER_MEMORY):
            return
        self.found[(a.id, b.id, kind)] = MemoryLink(self.user_id, a.id, b.id, kind, reason, self.now)
        self.neighbours[a.id].add(b.id)
        self.neighbours[b.id].add(a.id)


def _shared_keys(memories: Sequence[Memory], keys_of: dict[str, set[str]], cap: int, kind: str,
                 links: _Links) -> None:
    """Link the memories sharing a key named by 2..``cap`` of them, the rarest keys first."""
    holders: dict[str, list[Memory]] = defaultdict(list)
    for m in memories:
        for key in keys_of[m.id]:
            holders[key].append(m)
    for key, group in sorted(holders.items(), key=lambda kv: (len(kv[1]), kv[0])):
        if not 2 <= len(group) <= cap:
            continue
        for i, one in enumerate(group):
            for two in group[i + 1:]:
                a, b = _ordered(one, two)
                links.add(a, b, kind, f"both name {key}")


def _within(ordered: Sequence[Memory], times: Sequence[datetime], start: datetime, end: datetime) -> Sequence[Memory]:
    """The memories of ``ordered`` (by time, ``times`` theirs) said from ``start`` to ``end``."""
    return ordered[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]


def _errors_and_fixes(memories: Sequence[Memory], features: dict[str, _Features], links: _Links) -> None:
    errors = [m for m in memories if ERROR_WORDS.search(m.content) and not FIX_WORDS.search(m.content)]
    fixes = [m for m in memories if FIX_WORDS.search(m.content)]  # ``memories`` are in time order
    times = [_when(f) for f in fixes]
    window = timedelta(days=FIX_WINDOW_DAYS)
    for error in errors:
        after = [f for f in _within(fixes, times, _when(error), _when(error) + window)
                 if f.id != error.id and features[error.id].about_the_same(features[f.id])]
        for fix in after[:FIXES_PER_ERROR]:
            links.add(error, fix, "fix", "a fix of this error")


def _decisions_and_reasons(memories: Sequence[Memory], features: dict[str, _Features], links: _Links) -> None:
    decisions = [m for m in memories if DECISION_WORDS.search(m.content)]
    reasons = [m for m in memories if REASON_WORDS.search(m.content)]  # in time order
    times = [_when(r) for r in reasons]
    by_session: dict[str, list[Memory]] = defaultdict(list)
    for r in reasons:
        if r.session_id is not None:
            by_session[r.session_id].append(r)
    day = timedelta(days=1)
    for decision in decisions:
        near = {r.id: r for r in _within(reasons, times, _when(decision) - day, _when(decision) + day)}
        near.update((r.id, r) for r in by_session.get(decision.session_id or "", ()))
        for reason in sorted(near.values(), key=lambda r: (_when(r), r.id)):
            if reason.id != decision.id and features[decision.id].about_the_same(features[reason.id]):
                links.add(decision, reason, "reason", "the reason for this decision")


def find_links(memories: Iterable[Memory], *, user_id: str, now: datetime | None = None) -> list[MemoryLink]:
    """The links among ``memories`` (one user's current memories; see the module docstring)."""
    current = sorted((m for m in memories if m.is_valid and m.type in LINKED_TYPES and m.user_id == user_id),
                     key=lambda m: (_when(m), m.id))
    links = _Links(user_id, now or utcnow())
    known = {n for m in current for n in names(m.content)}
    features = {m.id: _Features(m, known) for m in current}
    # the specific kinds first: a memory's few links go to its fixes and reasons before shared names
    _errors_and_fixes(current, features, links)
    _decisions_and_reasons(current, features, links)
    _shared_keys(current, {i: f.files for i, f in features.items()}, MAX_FILE_MEMORIES, "file", links)
    _shared_keys(current, {i: f.names for i, f in features.items()}, MAX_NAME_MEMORIES, "entity", links)
    return list(links.found.values())


async def discover_links(provider: MemoryProvider, user_id: str, *, dry_run: bool = False,
                         now: datetime | None = None) -> int:
    """Find the links among ``user_id``'s current memories and store the new ones; returns how many
    are (or, in a dry run, would be) new. 0 where the backend keeps no links."""
    if not provider.capabilities.links:
        return 0
    memories = await provider.list(user_id=user_id, filters=SearchFilters(types=LINKED_TYPES), limit=1_000_000)
    # words only, but seconds for a large store: in a thread, so the daemon keeps answering the hooks
    found = await asyncio.to_thread(find_links, memories, user_id=user_id, now=now)
    if dry_run:
        known = {(k.memory_a, k.memory_b, k.kind)
                 for k in await provider.links(list({k.memory_a for k in found}), user_id=user_id)}
        return sum((k.memory_a, k.memory_b, k.kind) not in known for k in found)
    new = await provider.add_links(found)
    if new:
        logger.info("linked %d new pairs of memories of %s (%d links found)", new, user_id, len(found))
    return new


async def links_of(provider: MemoryProvider, memory_id: str, *, user_id: str) -> list[dict[str, object]]:
    """The links of one memory as ``dexai memory get`` and the API's memory view show them: each
    link's kind, reason and direction, with the memory at the other end (``other``: id, content,
    whether it is current; None when it was erased since). [] where the backend keeps no links."""
    from ..errors import MemoryNotFound

    out: list[dict[str, object]] = []
    for link in await provider.links([memory_id], user_id=user_id):
        other_id = link.other(memory_id)
        try:
            other = await provider.get(other_id, user_id=user_id)
            brief: dict[str, object] | None = {"id": other.id, "content": other.content, "current": other.is_valid}
        except MemoryNotFound:
            brief = None
        out.append({**link.to_dict(), "direction": "to" if link.memory_a == memory_id else "from",
                    "other_id": other_id, "other": brief})
    return out
