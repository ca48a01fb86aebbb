"""Routines: the same requests, in the same order, in two sessions or more, kept as a procedure.

A request for the task at hand ("run the tests", "commit and push") is not a memory (see
docs/coding-sessions.md), but a sequence of requests the user makes session after session
is how they work. At consolidation (before episodes are staged, while an episode still holds
the prompts of its session), :func:`store_routines` reads the prompts each episode keeps (its
"Asked:" lines: the user's own words, never tool output or the assistant's narration), turns
each prompt into its requests ("run the tests, then commit" -> ``run tests``, ``commit``; a
prompt that asks for nothing adds none), and looks for runs of :data:`MIN_STEPS` to
:data:`MAX_STEPS` requests that come in the same order in at least :data:`MIN_SESSIONS`
sessions of one project. Each run (the longest ones; a run inside a longer one is not kept
again) becomes one PROCEDURE memory, ``category`` "procedure", ``metadata["source"]``
"routine"::

    "Routine (asked in 3 sessions): run the tests, then commit, then push to main."

Its id is derived from the user, the project and the requests, so a later consolidation
updates the one memory (the sessions it was seen in, the newest wording) instead of adding
another. Offline rules, no model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MemoryNotFound
from ..extraction.offline.session_rules import REQUEST
from ..models import Memory, MemoryType, SearchFilters
from ..text.words import STOP_WORDS, split_words

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

#: Sessions a sequence of requests must come in to be a routine.
MIN_SESSIONS = 2
#: Fewest and most requests of one routine.
MIN_STEPS, MAX_STEPS = 2, 5
#: Importance and confidence of a routine (derived from repetition, not said as a rule).
ROUTINE_IMPORTANCE, ROUTINE_CONFIDENCE = 6, 0.7
#: Most episodes read per user.
READ_LIMIT = 2000

_CLAUSES = re.compile(r"\s*(?:[.;!?\n]+|,?\s+and\s+then\s+|,\s*then\s+|\s+then\s+|,\s*and\s+(?=\w+\s)|\s+and\s+"
                      r"(?=(?:commit|push|run|test|build|deploy|merge|tag|release|publish|lint|format)\b))\s*", re.I)
_LEAD = re.compile(r"^(?:(?:ok|okay|great|good|yes|now|also|please|so|next|then|and|first|finally)\b[,!]?\s*|"
                   r"(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?)+", re.I)
_TRAILING = re.compile(r"(?:\s+(?:again|now|please|too|as well|for me|for us|quickly))+$", re.I)
_FILLER = frozenset("again now please also then this that it them these those all everything quickly just first".split())


@dataclass(frozen=True, slots=True)
class Routine:
    """A run of requests seen in the same order in ``sessions``; ``steps``: the newest wording."""

    keys: tuple[str, ...]
    steps: tuple[str, ...]
    sessions: tuple[str, ...]
    project: str | None = None

    @property
    def content(self) -> str:
        return f"Routine (asked in {len(self.sessions)} sessions): " + ", then ".join(self.steps) + "."

    def memory_id(self, user_id: str) -> str:
        digest = hashlib.sha256("\0".join((user_id, self.project or "", *self.keys)).encode()).hexdigest()[:20]
        return f"routine_{digest}"


def asked(content: str) -> list[str]:
    """The prompts an episode's full narrative lists under "Asked:" (none once it was staged)."""
    lines = content.split("\n")
    if "Asked:" not in lines:
        return []
    out = []
    for line in lines[lines.index("Asked:") + 1:]:
        if not line.startswith("- "):
            break
        out.append(line[2:].strip())
    return out


def requests_of(prompt: str) -> list[tuple[str, str]]:
    """``(key, wording)`` of each request in ``prompt``, in order: a clause that starts with a
    request verb ("run the tests again" -> ``run tests``)."""
    out = []
    for clause in _CLAUSES.split(prompt):
        clause = _LEAD.sub("", clause.strip().strip("`\"'")).strip(" ,")
        if not clause or len(clause) > 120 or not REQUEST.match(clause):
            continue
        words = [w for w in split_words(clause.lower()) if w not in STOP_WORDS and w not in _FILLER]
        if not words:
            continue
        key = " ".join(words[:4])
        clause = _TRAILING.sub("", clause)
        out.append((key, clause[:1].lower() + clause[1:]))
    return out


def find_routines(sessions: Sequence[tuple[str, Sequence[str]]], project: str | None = None) -> list[Routine]:
    """The routines of ``sessions`` (``(session id, prompts)``, oldest first): runs of requests in
    the same order in :data:`MIN_SESSIONS` sessions or more, longest first."""
    seen: dict[tuple[str, ...], list[str]] = {}
    wording: dict[str, str] = {}
    for session, prompts in sessions:
        keys: list[str] = []
        for prompt in prompts:
            for key, words in requests_of(prompt):
                wording[key] = words  # the newest wording
                if not keys or keys[-1] != key:
                    keys.append(key)
        windows = {tuple(keys[i:i + n]) for n in range(MIN_STEPS, MAX_STEPS + 1) for i in range(len(keys) - n + 1)}
        for window in windows:
            if len(set(window)) == len(window) and session not in seen.setdefault(window, []):
                seen[window].append(session)
    kept: list[Routine] = []
    for window in sorted((w for w, s in seen.items() if len(s) >= MIN_SESSIONS), key=lambda w: (-len(w), w)):
        if any(_inside(window, r.keys) and set(seen[window]) <= set(r.sessions) for r in kept):
            continue
        kept.append(Routine(window, tuple(wording[k] for k in window), tuple(seen[window]), project))
    return kept


def _inside(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    return any(long[i:i + len(short)] == short for i in range(len(long) - len(short) + 1))


async def store_routines(provider: MemoryProvider, user_id: str, *, dry_run: bool = False) -> int:
    """Find ``user_id``'s routines in their episodes and store each as a PROCEDURE memory (added, or
    updated when the sessions or the wording changed; one the user deleted, archived or replaced
    stays so); returns how many were (or would be) written."""
    episodes = await provider.list(user_id=user_id, filters=SearchFilters(types=(MemoryType.EPISODE,)),
                                   limit=READ_LIMIT)
    by_project: dict[str | None, list[Memory]] = {}
    for m in episodes:
        by_project.setdefault(m.project, []).append(m)
    written = 0
    for project, ms in by_project.items():
        ms.sort(key=lambda m: (m.created_at, m.id))
        sessions = [(m.session_id or m.id, asked(m.content)) for m in ms]
        for routine in find_routines([s for s in sessions if s[1]], project):
            rid = routine.memory_id(user_id)
            metadata = {"category": "procedure", "source": "routine", "sessions": list(routine.sessions),
                        "steps": list(routine.steps)}
            try:
                old = await provider.get(rid, user_id=user_id, include_deleted=True)
            except MemoryNotFound:
                old = None
            if old is not None and (not old.is_valid or old.content == routine.content
                                    and old.metadata.get("sessions") == metadata["sessions"]):
                continue
            written += 1
            if dry_run:
                continue
            if old is None:
                await provider.add(Memory(id=rid, content=routine.content, user_id=user_id, project=project,
                                          type=MemoryType.PROCEDURE, importance=ROUTINE_IMPORTANCE,
                                          confidence=ROUTINE_CONFIDENCE, metadata=metadata))
            else:
                await provider.update(rid, user_id=user_id, content=routine.content,
                                      metadata={**old.metadata, **metadata})
    return written
