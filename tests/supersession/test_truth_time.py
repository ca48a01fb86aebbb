"""Validity times come from when things were said, after a bulk ingest too (turns out of order
included): ``valid_until`` of the old statement is the turn time of the change, and ``--as-of``
between the two shows the old one. A real SQLite store, the offline extractor and rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dexai_memory.config import Settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.models import MemoryType, SearchFilters, Turn
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers import history as timeline
from dexai_memory.providers.native import NativeProvider

T0 = datetime(2026, 3, 2, 10, tzinfo=UTC)


def turn(i: int, text: str, when: datetime) -> Turn:
    return Turn(id=f"t{i}", user_id="u", content=text, role="user", session_id=f"s{i}", timestamp=when)


async def test_bulk_ingest_dates_changes_by_their_turns(provider: NativeProvider, settings: Settings) -> None:
    turns = [turn(1, "I use Emacs as my editor.", T0),
             turn(2, "I switched my editor to Neovim.", T0 + timedelta(days=9)),
             turn(3, "I'm based in London now.", T0 + timedelta(days=30)),
             turn(4, "I'm based in Copenhagen.", T0)]  # said first, ingested last
    await Pipeline(provider, settings, extractor=OfflineExtractor()).ingest(turns, user_id="u", vectors="later")
    notes = {m.content: m for m in await provider.list(user_id="u", filters=SearchFilters(valid_only=False))
             if m.type is not MemoryType.TRANSCRIPT}
    emacs, neovim = notes["The user uses Emacs as their editor."], notes["The user switched their editor to Neovim."]
    assert emacs.superseded_by == neovim.id and emacs.valid_until == T0 + timedelta(days=9)
    assert neovim.valid_from == T0 + timedelta(days=9) and neovim.valid_until is None
    copenhagen = notes["The user is based in Copenhagen."]
    assert copenhagen.valid_until == T0 + timedelta(days=30)
    then = await timeline.as_of(provider, T0 + timedelta(days=4), user_id="u")
    assert sorted(m.content for m in then if m.type is not MemoryType.TRANSCRIPT) == [
        "The user is based in Copenhagen.", "The user uses Emacs as their editor."]
