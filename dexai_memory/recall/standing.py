"""Standing knowledge new to a session: what the user said since the session's block was injected.

The session's block (SessionStart, or the one re-injected after a compaction) opens with the
persistent context: the user's standing instructions, warnings, goal, preferences and facts
(:mod:`.persistent`). What the user says later in the same session ("lets be cautious and verify
at each step", "I have a second yubikey", "lets call it COSMIC Apple Tile") is stored a few
seconds after the turn ends, but no block shows it: the next session's block would, and recall
only when a later prompt happens to share its words. So auto-recall adds, to the block of the
next prompt that asks for work (not an acknowledgement), the memories of the persistent
categories stored since the session's block that the session has not been shown and the recent
conversation no longer holds (:class:`~.ranking.VisibleContext`: while the user's own sentence is
in the last messages it is not repeated).

Priority, as in the persistent context: the project first (instructions, warnings, the goal,
facts and decisions, then the plans and to-dos the user set), then preferences; what the user says of themselves as a person (the
"person" category) only on a personal prompt. At most :data:`MAX_NEW` a prompt, newest last
(the rest follow with the next prompts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..models import Memory, MemoryType, SearchFilters
from .block import always_on
from .persistent import TYPES, is_open, persistent_category

if TYPE_CHECKING:
    from ..limits import PersistentContextConfig
    from .source import RecallSource

#: Most standing memories added to one prompt's block.
MAX_NEW = 5
#: Least importance of a memory added: one notch under the persistent context's default floor (6), since
#: a statement the user made of themselves in this session ("I have a second yubikey", importance 5)
#: is worth one showing.
MIN_IMPORTANCE = 5
#: Categories in the order they are shown: the project (with the plans and to-dos the user set), then
#: preferences, then the person.
ORDER = ("instruction", "warning", "goal", "project_fact", "commitment", "insight", "preference", "person")
#: Types read: the persistent context's, and to-dos.
READ_TYPES = (*TYPES, MemoryType.TASK)


def category(m: Memory) -> str | None:
    """``m``'s category here: its persistent-context one, or "commitment" for an open plan or to-do
    the user set ("The team will start fresh.", "Add a todo: web research remote access")."""
    cat = persistent_category(m)
    if cat is None and m.type in (MemoryType.COMMITMENT, MemoryType.TASK) and is_open(m):
        return "commitment"
    return cat


def pick_new(memories: Sequence[Memory], cfg: PersistentContextConfig, *, exclude: set[str],
             shown: Callable[[Memory], bool], personal: bool, limit: int = MAX_NEW) -> list[Memory]:
    """The standing memories among ``memories`` to add to a prompt's block: current, confident
    (``cfg.min_confidence``), of importance :data:`MIN_IMPORTANCE` or more, not unconfirmed tool
    output, of a category shown on this prompt (``personal``: the person's too), not in
    ``exclude`` (already injected in the session) and not ``shown`` by the recent conversation;
    project first, then preferences, oldest first within a category; at most ``limit``."""
    picked: list[tuple[int, float, Memory]] = []
    for m in {m.id: m for m in memories}.values():
        cat = category(m)
        if cat is None or (cat == "person" and not personal) or m.id in exclude:
            continue
        if not (m.is_valid and m.confidence >= cfg.min_confidence and m.importance >= MIN_IMPORTANCE
                and always_on(m)):
            continue
        if shown(m):
            continue
        picked.append((ORDER.index(cat), m.created_at.timestamp(), m))
    picked.sort(key=lambda x: (x[0], x[1], x[2].id))
    return [m for _, _, m in picked[:limit]]


async def new_standing(provider: RecallSource, user_id: str, cfg: PersistentContextConfig, *, since: datetime,
                       project: str | None, exclude: set[str], shown: Callable[[Memory], bool],
                       personal: bool) -> list[Memory]:
    """:func:`pick_new` over the memories of ``user_id`` (in ``project``) stored since ``since``."""
    if not cfg.enabled:
        return []
    memories = await provider.list(user_id=user_id, filters=SearchFilters(
        project=project, types=READ_TYPES, created_after=since, min_importance=MIN_IMPORTANCE), limit=100)
    return pick_new(memories, cfg, exclude=exclude, shown=shown, personal=personal)
