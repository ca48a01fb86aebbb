"""Narrative statements that share a name and a word are not one frame with another value.

Notes taken from a conversation (LoCoMo) name a speaker and share a common word
with many other notes; with a change marker ("new", "now", "took") the frame rule read
them as changes and replaced one note by an unrelated one, so the old note could
no longer be found (evidence recall 80.8 % -> 79.1 % on LoCoMo's development split).
The frame must cover at least half of the shorter statement's words.
"""

from __future__ import annotations

import pytest

from dexai_memory.models import Memory, UpdateAction
from dexai_memory.supersession.rules import OfflineClassifier


@pytest.mark.parametrize(("old", "new"), [
    ("Melanie and Caroline can make a real impact together.",
     "The art really took Melanie to that moment and Melanie can feel the serenity."),
    ("Now Caroline wants to help people go through it too.",
     "Now Caroline is passionate about creating a safe, inviting place for people to grow."),
    ("Jon said must've taken Gina ages to design it.",
     "Jon said Gina never shies away from a challenge and always try something new."),
])
def test_two_narrative_notes_sharing_a_name_and_a_word_are_both_kept(old: str, new: str) -> None:
    decision = OfflineClassifier().decide(new, Memory(old, user_id="u"))
    assert decision.action is not UpdateAction.SUPERSEDE, decision.reason


def test_a_short_statement_of_one_frame_is_still_changed() -> None:
    decision = OfflineClassifier().decide("The user switched their editor to Neovim.",
                                          Memory("The user uses Emacs as their editor.", user_id="u"))
    assert decision.action is UpdateAction.SUPERSEDE, decision.reason
