"""The settings sections that keep memory and work small: ``persistent_context``, ``lifecycle``
and ``limits`` (the caps on what one turn, one hook input and one transcript may cost).

Typed, frozen sections of :class:`~dexai_memory.config.Settings`, declared here
(one concept: budgets and caps) and loaded and validated like every other
section by :mod:`dexai_memory.config`; every default is declared once, on
its field, and listed in the packaged ``memory.yaml``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

_T = TypeVar("_T")

__all__ = ["CUT_MARK", "DEFAULT_MAX_MEMORY_CHARS", "CategoryLimits", "LifecycleConfig", "LimitsConfig",
           "PersistentContextConfig", "clip", "clip_content", "clip_strings", "memory_text_error"]

#: The default of ``limits.max_memory_chars``: the longest text of one memory written by hand.
DEFAULT_MAX_MEMORY_CHARS = 2000


def bounds(min_: float | None = None, max_: float | None = None) -> dict[str, Any]:
    """Field metadata :func:`dexai_memory.config.load_settings` validates a number against."""
    return {"min": min_, "max": max_, "choices": ()}


@dataclass(frozen=True)
class CategoryLimits:
    """How much of one persistent-context category the L1 block shows."""

    #: At most this many memories of the category.
    max_items: int = field(default=10, metadata=bounds(0, 100))
    #: At most this many tokens of the category's lines (its title included).
    max_tokens: int = field(default=500, metadata=bounds(0, 10_000))


@dataclass(frozen=True)
class PersistentContextConfig:
    """The persistent context: standing knowledge shown in every L1 block at session start and
    after compaction, by category (see :mod:`dexai_memory.recall.persistent`)."""

    enabled: bool = True
    #: Tokens of the whole section, every category together (Claude Code caps hook output at
    #: 10,000 characters, about 2,500 tokens, for the whole block).
    max_tokens: int = field(default=1000, metadata=bounds(0, 2000))
    #: Only memories at least this confident enter (hand-added ones start at 0.6, extracted at 0.75).
    min_confidence: float = field(default=0.6, metadata=bounds(0.0, 1.0))
    #: Only memories at least this important enter.
    min_importance: int = field(default=6, metadata=bounds(1, 10))
    instruction: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 400))
    warning: CategoryLimits = field(default_factory=lambda: CategoryLimits(5, 300))
    goal: CategoryLimits = field(default_factory=lambda: CategoryLimits(1, 100))
    procedure: CategoryLimits = field(default_factory=lambda: CategoryLimits(5, 300))
    convention: CategoryLimits = field(default_factory=lambda: CategoryLimits(8, 250))
    preference: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 500))
    project_fact: CategoryLimits = field(default_factory=lambda: CategoryLimits(20, 1000))
    person: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 300))
    insight: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 500))


@dataclass(frozen=True)
class LifecycleConfig:
    """What keeps memory small and true (see :mod:`dexai_memory.lifecycle`): the cap on durable
    facts and its eviction score, expiry by category, pins, and the undo window of ``clear``."""

    #: Hard cap of current durable facts (FACT, PREFERENCE, INSIGHT, RELATIONSHIP, PROCEDURE, PATTERN) per user.
    max_facts: int = field(default=150, metadata=bounds(1, 1_000_000))
    #: Eviction starts above this many (gradually, ``prune_batch`` per cleanup run).
    prune_from: int = field(default=120, metadata=bounds(1, 1_000_000))
    #: Most memories evicted per cleanup run while under ``max_facts``.
    prune_batch: int = field(default=10, metadata=bounds(1, 100_000))
    #: Eviction weight (age in days x weight / confidence; higher goes first) per lifecycle category.
    project_weight: float = field(default=0.8, metadata=bounds(0.0, 100.0))
    preference_weight: float = field(default=0.3, metadata=bounds(0.0, 100.0))
    identity_weight: float = field(default=0.5, metadata=bounds(0.0, 100.0))
    #: Days without a reference after which a memory of the category is archived (0 = never).
    project_expiry_days: int = field(default=60, metadata=bounds(0, 36_500))
    preference_expiry_days: int = field(default=180, metadata=bounds(0, 36_500))
    identity_expiry_days: int = field(default=365, metadata=bounds(0, 36_500))
    #: Days after which a durable fact never retrieved (injected or recalled) nor cited is archived,
    #: whatever its category (0 = never); pinned memories and memories written by hand are kept.
    unused_forget_days: int = field(default=90, metadata=bounds(0, 36_500))
    #: Most pinned memories per user; the next pin is refused with a message.
    max_pins: int = field(default=10, metadata=bounds(0, 1000))
    #: Minutes during which ``dexai memory undo`` brings back what ``dexai memory clear`` removed.
    undo_minutes: float = field(default=60.0, metadata=bounds(0.0, 525_600.0))


@dataclass(frozen=True)
class LimitsConfig:
    """Caps on the work one input may cause, so a huge reply, prompt or transcript costs a
    bounded time and memory and never stalls the daemon or a hook.

    Where each applies:

    * ``max_turn_chars``: every string of a hook event as the daemon's executor receives it
      (any door: command hook, http hook, Agent SDK, replay), every turn the daemon admits
      (:meth:`~dexai_memory.daemon.core.MemoryDaemon.submit_turn`, before redaction and the
      gate), every job written to ``queue.db`` and every job read back from it (before
      extraction): a longer text keeps its head and its tail around a
      ``[... N characters cut ...]`` line (:func:`clip`);
    * ``max_hook_input_bytes``: the hook JSON a command hook reads from stdin (the launcher and
      the Python client); the rest is read and thrown away, and what the cut input still holds
      (session id, transcript path, the start of the prompt) is used;
    * ``max_backup_bytes``: the end of a transcript PreCompact backs up (redacted line by line,
      each line first held to ``max_turn_chars`` per string);
    * ``max_memory_chars``: the text of one memory written by hand, at every door (``dexai memory
      add`` / ``edit`` / ``supersede``, ``dexai memory facts add``, the MCP ``remember`` tool,
      ``POST /api/memories`` and the panel's box): a longer text is refused, never cut, with the
      message of :func:`memory_text_error`;
    * ``max_killed_runs``: runs of one queued job the worker may die in before the job is a
      dead letter, so a turn that kills the worker never blocks the jobs behind it.
    """

    #: Characters of one turn (and of each string of a hook event) kept; a longer text keeps its
    #: head and tail. The offline extractor takes ~30 ms per 1,000 characters.
    max_turn_chars: int = field(default=20_000, metadata=bounds(1_000, 1_000_000))
    #: Bytes of hook input a command hook reads from stdin (Claude Code's JSON).
    max_hook_input_bytes: int = field(default=2 * 1024 * 1024, metadata=bounds(64 * 1024, 256 * 1024 * 1024))
    #: Runs of one extraction job the worker may die in (killed, out of memory) before the job
    #: becomes a dead letter (``dexai memory retry`` puts it back); counted before each run.
    max_killed_runs: int = field(default=3, metadata=bounds(1, 100))
    #: Bytes at the end of a transcript PreCompact backs up into ``<home>/transcripts``.
    max_backup_bytes: int = field(default=8 * 1024 * 1024, metadata=bounds(64 * 1024, 1024 * 1024 * 1024))
    #: Characters of the text of one memory written by hand (CLI, MCP ``remember``, API, panel);
    #: a longer text is refused with the same message at every door. Memories are single statements.
    max_memory_chars: int = field(default=DEFAULT_MAX_MEMORY_CHARS, metadata=bounds(100, 1_000_000))


def memory_text_error(text: str, limit: int = DEFAULT_MAX_MEMORY_CHARS) -> str | None:
    """The message refusing ``text`` as one memory's text when it has more than ``limit``
    characters (``limits.max_memory_chars``); None when it fits. Every door that stores a memory
    written by hand shows this same message."""
    if len(text) <= limit:
        return None
    return (f"the text is {len(text):,} characters, longer than the {limit:,} a memory may hold "
            "(limits.max_memory_chars); store one concise statement per memory")


#: The line that replaces the middle of a clipped text (``{n}``: characters cut).
CUT_MARK = "\n[... {n} characters cut ...]\n"
#: How far a cut point moves back to the previous white space, so a word (a secret token that
#: redaction must still recognise) is never split in two.
_WORD_SLACK = 200
#: Nesting depth of hook JSON :func:`clip_strings` walks; deeper values are dropped (None).
MAX_DEPTH = 32


def _head_end(text: str, at: int) -> int:
    space = max(text.rfind(" ", at - _WORD_SLACK, at), text.rfind("\n", at - _WORD_SLACK, at))
    return space if space > 0 else at


def _tail_start(text: str, at: int) -> int:
    found = [i for i in (text.find(" ", at, at + _WORD_SLACK), text.find("\n", at, at + _WORD_SLACK)) if i >= 0]
    return min(found) + 1 if found else at


def clip(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters; else its head and its tail (two thirds
    and one third of ``limit``, cut at white space) around a ``[... N characters cut ...]`` line.
    The result is never longer than ``limit`` and clipping it again changes nothing."""
    if len(text) <= limit:
        return text
    room = max(2, limit - len(CUT_MARK.format(n=len(text))))
    head = _head_end(text, room * 2 // 3)
    tail = _tail_start(text, len(text) - (room - head))
    return f"{text[:head]}{CUT_MARK.format(n=tail - head)}{text[tail:]}"


def clip_content(item: _T, limit: int) -> _T:
    """``item`` (a frozen dataclass with a ``content`` string: a turn) with its content
    :func:`clip`-ped to ``limit``; ``item`` itself when it fits."""
    content = getattr(item, "content", None)
    if not isinstance(content, str) or len(content) <= limit:
        return item
    return dataclasses.replace(item, content=clip(content, limit))  # type: ignore[type-var]


def clip_strings(value: Any, limit: int, _depth: int = 0) -> Any:
    """``value`` (parsed JSON) with every string :func:`clip`-ped to ``limit`` characters;
    containers nested deeper than :data:`MAX_DEPTH` become None. Returns ``value`` itself
    when nothing changed."""
    if isinstance(value, str):
        return clip(value, limit)
    if _depth >= MAX_DEPTH and isinstance(value, dict | list):
        return None
    if isinstance(value, dict):
        out = {k: clip_strings(v, limit, _depth + 1) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, list):
        items = [clip_strings(v, limit, _depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
