"""An edit by hand (``dexai memory edit``, the panel, the API) on a store: applied and logged."""

from __future__ import annotations

import pytest

from dexai_memory.errors import InvalidMemory, MemoryNotFound
from dexai_memory.lifecycle.editing import edit, parse_settings
from dexai_memory.models import Memory
from dexai_memory.providers.memory import InMemoryProvider


async def test_edit_changes_the_memory_and_logs_it() -> None:
    async with InMemoryProvider() as p:
        m = await p.add(Memory(content="Sam lives in Lisbon", user_id="sam", metadata={"category": "fact", "x": "1"}))
        after = await edit(p, m.id, user_id="sam", changes={"content": "Sam lives in Porto", "importance": 8},
                           metadata={"category": "person", "x": None})
        assert (after.content, after.importance, after.metadata) == ("Sam lives in Porto", 8, {"category": "person"})
        [*_, event] = await p.events(m.id, user_id="sam")
        assert (event.action, event.reason) == ("EDIT", "edited by hand")
        assert event.details == {"content": "Sam lives in Porto", "importance": "8"}
        with pytest.raises(InvalidMemory, match="nothing to change"):
            await edit(p, m.id, user_id="sam", changes={})
        with pytest.raises(InvalidMemory, match="cannot edit"):
            await edit(p, m.id, user_id="sam", changes={"user_id": "bob"})
        with pytest.raises(InvalidMemory, match="empty"):
            await edit(p, m.id, user_id="sam", changes={"content": " "})
        with pytest.raises(MemoryNotFound):
            await edit(p, m.id, user_id="bob", changes={"content": "Bob was here"})
        assert (await p.get(m.id, user_id="sam")).content == "Sam lives in Porto"


def test_parse_settings() -> None:
    assert parse_settings(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(InvalidMemory, match="KEY=VALUE"):
        parse_settings(["nokey"])
