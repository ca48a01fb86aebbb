"""The category of a statement written by hand (the panel's composer), and a category change."""

from __future__ import annotations

import pytest

from dexai_memory.agent_tools.classify import category_changes, guess_category
from dexai_memory.agent_tools.tools import Category
from dexai_memory.errors import InvalidMemory
from dexai_memory.models import Memory, MemoryType


@pytest.mark.parametrize(("text", "category"), [
    ("I prefer tabs over spaces", Category.PREFERENCE),
    ("Prefers dark mode", Category.PREFERENCE),
    ("Never force-push to main", Category.WARNING),
    ("Always run make check before pushing", Category.INSTRUCTION),
    ("My goal this quarter is to ship the panel", Category.GOAL),
    ("I realised the cache was stale", Category.INSIGHT),
    ("The orders service runs on port 8443", Category.FACT),
    ("Lisbon", Category.FACT),
], ids=lambda v: v if isinstance(v, str) else None)
def test_guess_category(text: str, category: Category) -> None:
    assert guess_category(text) is category


def test_category_changes_follow_remember() -> None:
    m = Memory(content="Run the linter first", user_id="u", type=MemoryType.FACT, metadata={"category": "fact"})
    assert category_changes(m, "instruction") == ({"type": "INSIGHT"}, {"category": "instruction"})
    assert category_changes(m, "fact") == ({}, {"category": "fact"})
    changes, metadata = category_changes(m, "goal")
    assert changes == {"type": "COMMITMENT"} and metadata["commitment"]["status"] == "open"
    with pytest.raises(InvalidMemory, match="unknown category"):
        category_changes(m, "mood")
