"""Admission: the only way a turn enters memory - redact, then gate.

:func:`admit` is called by every capture path, always in this order:

1. **redact** (:func:`redact_turn`, :func:`redact_context`): the turn's text,
   the image captions in its metadata (``caption``, ``blip_caption``) and the
   recent turns given as context lose their ``<private>`` sections and
   secrets (:func:`dexai_memory.text.redaction.redact`); a turn with nothing left is
   dropped;
2. **evidence** (:func:`~dexai_memory.capture.evidence.evidence_kind`): a coding
   session's tool results, the assistant's replies, slash commands, interruptions and
   prompts that are only pasted output are not read for memories (they stay context);
3. **gate** (:class:`~dexai_memory.capture.gate.Gate`): the *redacted* text is
   scored against the *redacted* context, so the gate never sees, and a
   verdict never depends on, what memory will not keep (a secret token does
   not count as a new entity).

The capture paths:

* hook events (Stop, PostToolUse, SessionEnd; command hooks, http hooks, Agent SDK
  callbacks): the daemon's event executor (:mod:`dexai_memory.daemon.executor`)
  -> :meth:`dexai_memory.daemon.MemoryDaemon.submit_turn` -> :func:`admit`
  -> :meth:`~dexai_memory.capture.queue.ExtractionQueue.enqueue`; an event no daemon
  answered waits in ``queue.db`` redacted (:func:`dexai_memory.hooks.client.deliver`)
  and is replayed the same way;
* the daemon's ``enqueue`` socket operation: ``submit_turn`` as above;
* file ingest (``dexai memory ingest``): :meth:`~dexai_memory.pipeline.Pipeline.ingest`
  -> :meth:`~dexai_memory.pipeline.Pipeline.admit` -> :func:`admit`; the L3
  transcripts it archives are the redacted turns.

Every place text enters our files or a model, and what cleans it
================================================================
==============================  ====================================================
where                           cleaned by
==============================  ====================================================
``queue.db`` (turn, context)    :func:`admit`, on every capture path above
memories extracted from the     :func:`redact_turn` again in
queue                           :meth:`~dexai_memory.pipeline.Pipeline.process`:
                                the queue file is shared, and a row written by
                                another process (an older hook, a direct caller of
                                ``enqueue_turn``, which leaves redaction to its
                                caller) is cleaned before extraction
the Haiku model (extraction,    :mod:`dexai_memory.extraction.haiku` (the model
classification, summaries)      boundary: every turn line, context line, existing
and what it returns             memory, note, commitment, merged text and summary
                                goes through ``privacy.redact``)
offline extraction              :mod:`dexai_memory.extraction.offline` (turn text
                                and captions)
hook state files (the last      :func:`dexai_memory.daemon.session_state.redact_for_state`
prompt, the compaction marker:  (called by :mod:`dexai_memory.daemon.executor`)
snapshot, last and recent
prompts)
the task snapshot memory        the same redacted snapshot (``on_pre_compact``)
transcript backups              :func:`dexai_memory.daemon.session_state.backup_transcript`
(``<home>/transcripts``)        (every string of every line, through
                                ``redact_for_state``)
the ``remember`` tool           :func:`dexai_memory.agent_tools.remember`
                                (refuses what is all private or secret)
every write to the store        :mod:`dexai_memory.providers.redacting`: every
(``dexai memory add/import``,   backend's ``add``, ``add_many``, ``update`` and
``facts add``, the panel, MCP,  history entries, whatever the door (an import of an
notes, snapshots, episodes)     export keeps its already-redacted text as is)
the Agent SDK session store     :func:`dexai_memory.sessions.store.redact_entry`
(``sessions.db``)               (every string of every entry)
the prefetch state file and     :func:`dexai_memory.recall.prefetch.error_item`
its "Known about ..." header    (a failing command's output is redacted first)
==============================  ====================================================

Standard library only (the command hook imports it on every captured turn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..extraction.signals import session_cue
from ..limits import LimitsConfig, clip_content
from ..models import Turn
from ..text.redaction import redact
from .evidence import evidence_kind, is_session_turn
from .gate import Gate, GateResult

__all__ = ["CAPTION_KEYS", "Admission", "admit", "redact_context", "redact_turn"]

#: Metadata keys holding the text of a shared image (LoCoMo ``blip_caption``), redacted like the text.
CAPTION_KEYS = ("caption", "blip_caption")


class Admission(NamedTuple):  # a NamedTuple: a dataclass costs ~1 ms to define in every hook process
    """What :func:`admit` decided about one turn."""

    #: The redacted turn, or None when nothing was left after redaction.
    turn: Turn | None
    #: The redacted context the gate scored the turn against (queued with it).
    context: tuple[str, ...]
    #: The gate's verdict on the redacted text (score 0, not passed, when nothing was left or
    #: the turn is evidence).
    verdict: GateResult
    #: Why the turn is evidence, not a source of memories (:func:`evidence_kind`), else None.
    evidence: str | None = None

    @property
    def passed(self) -> bool:
        """Whether the turn is to be queued: something was left and the gate passed it."""
        return self.turn is not None and self.verdict.passed


def redact_turn(turn: Turn) -> Turn | None:
    """The turn with private sections and secrets removed; None if nothing is left."""
    content = redact(turn.content).strip()
    meta = dict(turn.metadata)
    for key in CAPTION_KEYS:
        if isinstance(meta.get(key), str):
            meta[key] = redact(meta[key])
    if not content:
        return None
    if content == turn.content and meta == dict(turn.metadata):
        return turn
    return Turn(id=turn.id, user_id=turn.user_id, content=content, role=turn.role, speaker=turn.speaker,
                timestamp=turn.timestamp, session_id=turn.session_id, project=turn.project, metadata=meta)


def redact_context(context: Sequence[str]) -> tuple[str, ...]:
    """The recent turns given with a turn, each redacted (they are queued with it)."""
    return tuple(redact(str(c)) for c in context)


def admit(turn: Turn | Mapping[str, Any], context: Sequence[str], gate: Gate, *,
          max_chars: int = LimitsConfig.max_turn_chars) -> Admission:
    """Hold ``turn`` (a :class:`~dexai_memory.models.Turn` or its dict) to ``max_chars``
    (``limits.max_turn_chars``: its head and tail, :func:`~dexai_memory.limits.clip`), redact it
    and ``context``, set evidence aside, then score the redacted text with ``gate`` against the
    redacted context (see the module docstring).

    Queue the result when :attr:`Admission.passed`; what to do with a turn that
    did not pass (keep it as context, archive it) is the caller's choice.
    """
    raw = clip_content(turn if isinstance(turn, Turn) else Turn.from_dict(turn), max_chars)  # bounded work first
    clean = redact_turn(raw)
    recent = redact_context(context)
    if clean is None:
        return Admission(None, recent, GateResult(0.0, False, {}))
    kind = evidence_kind(clean)
    if kind is not None:
        return Admission(clean, recent, GateResult(0.0, False, {}), kind)
    verdict = gate.score(clean.content, recent)
    if not verdict.passed and clean.role == "user" and is_session_turn(clean) and session_cue(clean.content):
        # a coding prompt is terse and lower-case ("install gh (CLI)", "always verify and run hooks"):
        # the chat signals miss it, what it says lasts; the extractor still keeps only statements
        verdict = GateResult(max(verdict.score, gate.threshold), True, {**verdict.signals, "session": gate.threshold})
    return Admission(clean, recent, verdict)
