"""The category of a statement written by hand, and what changing a memory's category means.

The panel's "+ Remember something" composer ("auto-classifies")
stores what the user typed through :func:`~dexai_memory.agent_tools.tools.remember`
with the category :func:`guess_category` reads from it: the offline
extractor's own rules (warnings, standing instructions, goals, preferences,
insights, people), no model and no network. :func:`category_changes` gives
the fields an edit must write to move a memory to another category (its
``metadata["category"]`` and the memory type the category stands for, as
``remember`` would have stored it).
"""

from __future__ import annotations

import re
from typing import Any

from ..models import Memory, MemoryType, Turn
from .tools import CATEGORY_TYPES, Category

#: A statement of taste the extractor reads as a plain fact when it has no "I" ("Prefers dark mode").
_TASTE = re.compile(r"\b(?:prefers?|preferred|likes?|loves?|hates?|dislikes?|favou?rite)\b", re.I)
#: Memory type -> category, for notes the extractor gives no category of their own.
_BY_TYPE = {
    MemoryType.PREFERENCE: Category.PREFERENCE,
    MemoryType.INSIGHT: Category.INSIGHT,
    MemoryType.RELATIONSHIP: Category.PERSON,
    MemoryType.COMMITMENT: Category.GOAL,
    MemoryType.TASK: Category.GOAL,
    MemoryType.PROCEDURE: Category.PROCEDURE,
    MemoryType.PATTERN: Category.CONVENTION,
}


def guess_category(text: str) -> Category:
    """The :class:`Category` of ``text`` as the offline extractor reads a user's sentence;
    :attr:`Category.FACT` when it finds nothing more specific."""
    from ..extraction.offline.extractor import OfflineExtractor

    notes = OfflineExtractor().extract_sync([Turn(id="panel", user_id="panel", content=text, role="user")])
    for note in notes:
        if note.category:
            try:
                return Category.parse(note.category)
            except ValueError:
                pass
        if note.type in _BY_TYPE:
            return _BY_TYPE[note.type]
    return Category.PREFERENCE if _TASTE.search(text) else Category.FACT


def category_changes(memory: Memory, category: str | Category) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(changes, metadata)`` for :func:`dexai_memory.lifecycle.editing.edit` that move ``memory``
    to ``category``: its type as :data:`~dexai_memory.agent_tools.tools.CATEGORY_TYPES` says, and
    ``metadata["category"]``. Raises :class:`~dexai_memory.errors.InvalidMemory` for an unknown one."""
    cat = Category.parse(category)
    mtype, _importance = CATEGORY_TYPES[cat]
    changes: dict[str, Any] = {} if memory.type is mtype else {"type": mtype.value}
    metadata: dict[str, Any] = {"category": cat.value}
    if cat is Category.GOAL and not isinstance(memory.metadata.get("commitment"), dict):
        metadata["commitment"] = {"what": memory.content, "who": None, "due_at": None, "due_text": None,
                                  "status": "open"}
    return changes, metadata
