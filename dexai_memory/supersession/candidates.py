"""Supersession candidates by word overlap, in memory, for bulk ingest.

The warm path finds the memories a new note is compared with by
``provider.search`` (the top-S similar valid memories supersession compares a note with).
Ingest stores thousands of notes in a row, and one FTS query per note grows
with the store: on a 1,200-row LoCoMo user a query costs ~3 ms, because the
speakers' names match every row. :class:`CandidateIndex` answers the same
question from an inverted index of the user's current notes, kept up to date
as ingest adds, merges and supersedes them.

It is built for the offline classifier
(:class:`~dexai_memory.supersession.rules.OfflineClassifier`), whose rules are all
about shared words: repeats and refinements share most of their content
words, a superseding note has the same subject and attribute ("moved to" and
"moved from X to" share the "lives in" slot), and an explicit change names
the old value or the event it moves ("moved from Lisbon ...", "the dentist
appointment moved to ..."). Which candidate is kept, merged or superseded is
the classifier's decision; the index only finds them.
So the candidates of a note are

* every memory with the same (subject, attribute) slot
  (:func:`~dexai_memory.supersession.rules.subject_attribute`), and
* the memories sharing an informative word with it (a word in at most
  :attr:`CandidateIndex.common_fraction` of the notes; the names that appear
  everywhere are skipped as probes but still count in the overlap),

ranked by Jaccard overlap of content words, ``top_k`` of them (only the
``prefilter * top_k`` memories sharing the most probe words are ranked, so a
note costs the same in a store of 600 notes or 60,000). With a Haiku
classifier, ingest keeps ``provider.search`` (semantic candidates).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Set

from ..models import Memory, MemoryType
from .rules import content_words, jaccard, subject_attribute

#: Types that never take part in supersession (raw turns, task snapshots).
EXCLUDED_TYPES = frozenset({MemoryType.TRANSCRIPT, MemoryType.SNAPSHOT, MemoryType.EPISODE})


def _slot(content: str) -> tuple[str, str] | None:
    found = subject_attribute(content)
    return (found[0], found[1]) if found else None


class CandidateIndex:
    """An inverted index of one store's current notes (any number of users)."""

    def __init__(self, memories: Iterable[Memory] = (), *, common_fraction: float = 0.05,
                 min_common: int = 50, prefilter: int = 3):
        #: A word in more than ``max(min_common, common_fraction * size)`` notes is not used as a probe.
        self.common_fraction = common_fraction
        self.min_common = min_common
        #: Memories kept per wanted candidate after counting shared words (Jaccard ranks those).
        self.prefilter = prefilter
        self._memories: dict[str, Memory] = {}
        self._words: dict[str, frozenset[str]] = {}
        # postings are insertion-ordered dicts (not sets) so ties break the same way on every run
        self._postings: dict[tuple[str, str], dict[str, None]] = {}
        self._slots: dict[tuple[str, str, str], set[str]] = {}
        for memory in memories:
            self.add(memory)

    def __len__(self) -> int:
        return len(self._memories)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._memories

    @staticmethod
    def indexable(memory: Memory) -> bool:
        """Whether ``memory`` can be a supersession target (current, not a transcript or snapshot)."""
        return memory.is_valid and not memory.deleted and memory.type not in EXCLUDED_TYPES

    def add(self, memory: Memory) -> None:
        """Index ``memory`` (replacing an older version with the same id); ignored if not indexable."""
        self.remove(memory.id)
        if not self.indexable(memory):
            return
        words = frozenset(content_words(memory.content))
        self._memories[memory.id] = memory
        self._words[memory.id] = words
        for word in words:
            self._postings.setdefault((memory.user_id, word), {})[memory.id] = None
        slot = _slot(memory.content)
        if slot is not None:
            self._slots.setdefault((memory.user_id, *slot), set()).add(memory.id)

    def remove(self, memory_id: str) -> None:
        """Forget ``memory_id`` (superseded, merged away or deleted); no-op if unknown."""
        memory = self._memories.pop(memory_id, None)
        if memory is None:
            return
        for word in self._words.pop(memory_id):
            posting = self._postings.get((memory.user_id, word))
            if posting is not None:
                posting.pop(memory_id, None)
                if not posting:
                    del self._postings[(memory.user_id, word)]
        slot = _slot(memory.content)
        if slot is not None:
            ids = self._slots.get((memory.user_id, *slot))
            if ids is not None:
                ids.discard(memory_id)

    def get(self, memory_id: str) -> Memory | None:
        """The indexed memory with that id, if any."""
        return self._memories.get(memory_id)

    def candidates(self, content: str, *, user_id: str, top_k: int = 10,
                   exclude: Set[str] = frozenset()) -> list[Memory]:
        """The ``top_k`` memories of ``user_id`` most likely to be classified against ``content``."""
        words = content_words(content)
        limit = max(self.min_common, int(self.common_fraction * len(self._memories)))
        shared: collections.Counter[str] = collections.Counter()
        for word in sorted(words):
            posting = self._postings.get((user_id, word))
            if posting and len(posting) <= limit:
                shared.update(iter(posting))
        for memory_id in exclude:
            shared.pop(memory_id, None)
        # the memories sharing the most probe words (ties in a fixed order, so runs are reproducible) ...
        ids = {i for i, _ in shared.most_common(self.prefilter * top_k)}
        # ... and every memory with the same subject and attribute
        slot = _slot(content)
        same_slot = self._slots.get((user_id, *slot), set()) if slot else set()
        ids |= same_slot - exclude
        # same slot first (the SUPERSEDE candidates), then by overlap; ids break ties deterministically
        scored = sorted((i not in same_slot, -jaccard(words, self._words[i]), i) for i in ids)
        return [self._memories[i] for _, _, i in scored[:top_k]]
