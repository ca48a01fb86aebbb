"""The semantic-divergence signal: a turn whose meaning departs from the recent turns scores higher.

The gate's regex signals (:mod:`dexai_memory.extraction.signals`) see words, not topics: "we
moved the whole team to the Lisbon office" after ten turns about a test failure says
something new even when no signal fires strongly. This signal is the cosine distance of the
turn's vector to the mean of the recent turns' vectors (:func:`distance`), turned into a
bounded score (:func:`divergence_score`): nothing below :data:`FLOOR`, then linear up to
``extraction.gate_divergence_weight`` (0.2 by default; 0 turns it off) at distance 1.

It costs an embedding (a few milliseconds a turn with the MiniLM model, more on a busy
machine), so the daemon keeps it off the hooks' path: the gate answers at once with its
regex signals; only a turn it did not pass, whose score plus the weight would reach the
threshold (:func:`worth_a_look`), is looked at again in the background
(:meth:`Divergence.reconsider`), and only when the store's embedder is already loaded (the
signal never loads a model). Vectors of recent turns are cached (:data:`CACHE_SIZE` texts).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import DEFAULT_DIVERGENCE_WEIGHT
from ..extraction.signals import GateResult

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..models import Turn

#: Default of ``extraction.gate_divergence_weight``: the most the signal adds to a turn's score.
DEFAULT_WEIGHT = DEFAULT_DIVERGENCE_WEIGHT
#: Cosine distance to the recent turns' mean below which the signal adds nothing.
FLOOR = 0.6
#: Recent turns needed to say what "the recent turns" are about.
MIN_RECENT = 2
#: Turn vectors cached (the recent turns of the sessions being served).
CACHE_SIZE = 512
#: Second looks waiting at once; beyond it a turn is not looked at again (a burst of caught-up
#: prompts must not queue minutes of embedding behind the hooks). They run one at a time.
MAX_PENDING = 32


def distance(vector: np.ndarray, recent: np.ndarray) -> float:
    """Cosine distance (0-2) of ``vector`` to the mean of the ``recent`` vectors (unit vectors, one a row)."""
    mean = recent.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if norm == 0.0:
        return 1.0
    return 1.0 - float(np.dot(vector, mean) / (norm * (float(np.linalg.norm(vector)) or 1.0)))


def divergence_score(dist: float, weight: float = DEFAULT_WEIGHT) -> float:
    """What a distance adds to the gate's score: 0 up to :data:`FLOOR`, ``weight`` at 1 and beyond."""
    if weight <= 0 or dist <= FLOOR:
        return 0.0
    return round(weight * min(1.0, (dist - FLOOR) / (1.0 - FLOOR)), 4)


def worth_a_look(verdict: GateResult, threshold: float, weight: float = DEFAULT_WEIGHT) -> bool:
    """Whether the signal could change ``verdict``: not passed, not filler, and within ``weight``
    of ``threshold``."""
    return weight > 0 and not verdict.passed and verdict.score > 0 and verdict.score + weight >= threshold


class Divergence:
    """The signal over one embedder, with a small cache of turn vectors (thread-safe)."""

    def __init__(self, embedder: Embedder, weight: float = DEFAULT_WEIGHT, *, cache_size: int = CACHE_SIZE):
        self.embedder = embedder
        self.weight = weight
        self.cache_size = cache_size
        self._vectors: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (one a row), embedding only those not cached."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        fresh = dict(zip(missing, self.embedder.embed_batch(missing), strict=True)) if missing else {}
        with self._lock:
            self._vectors.update(fresh)
            out = []
            for text in texts:
                vec = fresh.get(text)
                if vec is None:
                    vec = self._vectors[text] if text in self._vectors else self.embedder.embed(text)
                self._vectors[text] = vec
                self._vectors.move_to_end(text)
                out.append(vec)
            while len(self._vectors) > self.cache_size:
                self._vectors.popitem(last=False)
        return np.asarray(out, dtype=np.float32)

    def distance(self, text: str, recent: Sequence[str]) -> float | None:
        """The turn's cosine distance to the mean of ``recent`` (None with fewer than
        :data:`MIN_RECENT` recent turns)."""
        recent = [r for r in recent if r.strip()]
        if len(recent) < MIN_RECENT:
            return None
        vectors = self.vectors([*recent, text])
        return distance(vectors[-1], vectors[:-1])

    def reconsider(self, verdict: GateResult, text: str, recent: Sequence[str], threshold: float) -> GateResult:
        """``verdict`` with the divergence signal added (blocking: embeds; run it in a worker thread)."""
        dist = self.distance(text, recent)
        added = divergence_score(dist, self.weight) if dist is not None else 0.0
        if added <= 0:
            return verdict
        score = round(min(1.0, verdict.score + added), 4)
        return GateResult(score, score >= threshold, {**verdict.signals, "divergence": added})


class SecondLook:
    """The daemon's second look at a turn its gate did not pass: the divergence signal over the
    store's embedder (``embedder_of()``, read at each look: the store may change it), when
    ``weight`` is above 0 and that embedder is loaded."""

    def __init__(self, weight: float, embedder_of: Callable[[], Any]):
        self.weight = weight
        self.embedder_of = embedder_of
        self._signal: Divergence | None = None
        self._one_at_a_time: Any = None  # an asyncio.Lock, made on the daemon's loop
        #: Second looks waiting or running.
        self.pending = 0
        #: Turns the second look admitted, and the ones it skipped (:data:`MAX_PENDING` waiting).
        self.admitted = self.skipped = 0

    def signal(self) -> Divergence | None:
        """The divergence signal, or None (weight 0, no embedder, or its model not loaded yet)."""
        embedder = self.embedder_of()
        if self.weight <= 0 or embedder is None or not getattr(embedder, "loaded", True):
            return None
        inner = getattr(embedder, "inner", embedder)  # not the store's note cache: turns have their own
        if self._signal is None or self._signal.embedder is not inner:
            self._signal = Divergence(inner, self.weight)
        return self._signal

    def wanted(self, verdict: GateResult, threshold: float) -> Divergence | None:
        """The signal when it could change ``verdict`` (:func:`worth_a_look`) and fewer than
        :data:`MAX_PENDING` looks wait, else None."""
        if not worth_a_look(verdict, threshold, self.weight):
            return None
        if self.pending >= MAX_PENDING:
            self.skipped += 1
            return None
        return self.signal()

    async def reconsider(self, signal: Divergence, turn: Turn, context: Sequence[str], verdict: GateResult,
                         threshold: float, enqueue: Callable[[Turn, tuple[str, ...]], Any]) -> GateResult:
        """``verdict`` with the signal added (embedded in a worker thread); ``enqueue(turn, context)``
        (in a worker thread too) when the turn passes now. Returns the new verdict."""
        import asyncio

        if self._one_at_a_time is None:
            self._one_at_a_time = asyncio.Lock()
        self.pending += 1
        try:
            async with self._one_at_a_time:
                again = await asyncio.to_thread(signal.reconsider, verdict, turn.content, context, threshold)
                if again.passed:
                    await asyncio.to_thread(enqueue, turn, tuple(context))
                    self.admitted += 1
        finally:
            self.pending -= 1
        return again
