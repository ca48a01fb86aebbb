"""Claude Haiku behind the extraction interfaces: :class:`HaikuExtractor`
(structured output via a ``record_memories`` tool) and :class:`HaikuClassifier`
(``classify_update``), on the official ``anthropic`` client.

:class:`HaikuTool` carries their structured calls over the Messages API with an
API key (a forced tool, the client's retries for transport errors); the same
classes run over the user's Claude Code sign-in with
:class:`~dexai_memory.extraction.claude_code.ClaudeCodeCall`. The retry loop
and the token budget are :class:`~dexai_memory.extraction.model_call.ModelCall`'s.
The summarizer on Haiku is in :mod:`dexai_memory.extraction.summarizer`;
:mod:`dexai_memory.extraction.factory` picks Haiku or offline from the settings.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from ..errors import ExtractionError, InvalidMemory
from ..models import (
    Commitment,
    ExtractedNote,
    Memory,
    MemoryType,
    Turn,
    UpdateAction,
    UpdateDecision,
)
from ..supersession.classifier import UpdateClassifier
from ..text.dates import format_day, resolve
from ..text.redaction import REDACTED, redact
from .base import Extractor
from .model_call import Answer, MalformedAnswer, ModelCall, loads, tool_input
from .usage import Usage

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from .usage import DailyBudget

__all__ = ["HaikuClassifier", "HaikuExtractor", "HaikuTool", "carrier"]

logger = logging.getLogger(__name__)

_NOTE_TYPES = [t.value for t in (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.EVENT, MemoryType.INSIGHT,
                                 MemoryType.RELATIONSHIP, MemoryType.COMMITMENT, MemoryType.TASK,
                                 MemoryType.PROCEDURE, MemoryType.PATTERN)]

RECORD_MEMORIES_TOOL: dict[str, Any] = {
    "name": "record_memories",
    "description": "Record the durable facts worth remembering from the conversation turns. "
                   "Call it exactly once; pass an empty list when there is nothing to keep.",
    "input_schema": {
        "type": "object",
        "properties": {
            "notes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string",
                                    "description": "One self-contained statement in the third person, naming "
                                                   "people (never 'I', 'you', 'he'), with absolute dates."},
                        "type": {"type": "string", "enum": _NOTE_TYPES},
                        "importance": {"type": "integer", "minimum": 1, "maximum": 10},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                        "event_date": {"type": ["string", "null"],
                                       "description": "ISO date (YYYY-MM-DD, YYYY-MM or YYYY) the statement is about"},
                        "entities": {"type": "array", "items": {"type": "string"}},
                        "source_ids": {"type": "array", "items": {"type": "string"},
                                       "description": "ids of the turns this note comes from"},
                        "commitment": {
                            "type": ["object", "null"],
                            "properties": {"what": {"type": "string"}, "who": {"type": ["string", "null"]},
                                           "when": {"type": ["string", "null"],
                                                    "description": "ISO date or date-time it is due"}},
                            "required": ["what"],
                        },
                    },
                    "required": ["content", "type", "importance"],
                },
            }
        },
        "required": ["notes"],
    },
}

EXTRACTION_SYSTEM = """You extract long-term memories from conversation turns.
For each durable fact worth remembering, record one note with record_memories.

Categories: FACT, PREFERENCE, EVENT, INSIGHT, RELATIONSHIP, COMMITMENT, TASK, PROCEDURE, PATTERN

Rules:
- Only extract genuinely new or updated information from the turns marked TO EXTRACT;
  the CONTEXT turns are for reference only.
- Skip greetings, acknowledgments, questions without information and filler.
- Write each note in the third person with the speaker's name ("Caroline went to ...",
  never "I went to ..."), self-contained: no pronouns without a name in the same note.
- Resolve relative dates ("yesterday", "last week", "next Friday") against the turn's
  timestamp and write the absolute date in the note; set event_date (ISO).
- Commitments must include: what, who (if mentioned), when (if mentioned, ISO).
- Rate importance: 1-3 mundane, 4-6 useful, 7-9 significant, 10 critical.
- Never record passwords, API keys, tokens or anything marked [redacted].
- In a coding session (the user talking to an assistant), what the user says is the source:
  standing instructions about how to work ("always ...", "never ...", "use X, not Y") are
  PREFERENCE notes in the imperative; decisions keep their reason; warnings, project facts,
  names, owners and commitments are kept with their exact names, paths and versions.
  A workflow the user states (how they release, run the tests, make a fix; "first ..., then
  ...", numbered steps) is one PROCEDURE note with its steps in order ("To release: bump the
  version in pyproject.toml, then tag the commit, then push the tag."). A code convention the
  user states (naming, error handling, test layout: "tests are named test_<unit>_<case>",
  "errors derive from FooError") is a PATTERN note, kept as said.
  Requests for the task at hand ("fix this test", "run it again"), pasted logs, code, diffs
  and tool output, and the assistant's narration are not memories."""

CLASSIFY_UPDATE_TOOL: dict[str, Any] = {
    "name": "classify_update",
    "description": "Decide how a new fact relates to each existing memory.",
    "input_schema": {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "memory_id": {"type": "string"},
                        "action": {"type": "string", "enum": [a.value for a in UpdateAction]},
                        "reason": {"type": "string"},
                        "merged_content": {"type": ["string", "null"],
                                           "description": "for UPDATE: the merged statement"},
                    },
                    "required": ["memory_id", "action", "reason"],
                },
            }
        },
        "required": ["decisions"],
    },
}

CLASSIFY_SYSTEM = """You maintain a memory store. Compare a NEW fact with EXISTING memories and
decide, for each existing memory, one action:
- ADD: unrelated, the new fact is stored separately;
- UPDATE: the new fact refines or adds detail to it (give merged_content);
- SUPERSEDE: same subject and attribute with a different value (the old one is no longer true);
- NOOP: the new fact says the same thing (a duplicate).
Give a short reason for every decision. Answer with classify_update."""


class HaikuTool(ModelCall):
    """The Messages API with an API key: a forced tool; the ``anthropic`` client retries
    transport errors, an API error raises :class:`ExtractionError` (the queue retries the job)."""

    source = "api_key"

    def __init__(self, client: AsyncAnthropic, model: str, *, max_tokens: int = 2048,
                 budget: DailyBudget | None = None):
        super().__init__(model, max_tokens=max_tokens, budget=budget)
        self.client = client

    async def aclose(self) -> None:
        """Close the underlying client."""
        await self.client.close()

    async def send(self, system: str, prompt: str, tool: Mapping[str, Any], what: str) -> Answer:
        import anthropic  # already imported by whoever built the client

        try:
            create: Any = self.client.messages.create  # the SDK's overloads want TypedDicts
            message = await create(
                model=self.model, max_tokens=self.max_tokens, system=system, tools=[tool],
                tool_choice={"type": "tool", "name": tool["name"]},
                messages=[{"role": "user", "content": prompt}],
            )
        except anthropic.APIError as exc:
            raise ExtractionError(f"{what} failed: Anthropic API error: {exc}") from exc
        usage = Usage.of(getattr(message, "usage", None))
        try:
            return Answer(tool_input(getattr(message, "content", None), tool["name"]), usage)
        except MalformedAnswer as exc:
            return Answer(None, usage, str(exc))


def carrier(client: AsyncAnthropic | ModelCall, model: str, max_tokens: int) -> ModelCall:
    """``client`` itself when it is a :class:`ModelCall`, else a :class:`HaikuTool` on it."""
    return client if isinstance(client, ModelCall) else HaikuTool(client, model, max_tokens=max_tokens)


def _as_int(value: Any, lo: int, hi: int, default: int) -> int:
    try:
        number = round(float(value))
    except (TypeError, ValueError):
        return default
    return max(lo, min(hi, number))


def _as_confidence(value: Any, default: float = 0.7) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if number != number:  # NaN
        return default
    if 1.0 < number <= 100.0:
        number /= 100.0
    return max(0.0, min(1.0, number))


def _as_str_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return ()
    return tuple(dict.fromkeys(str(v).strip() for v in value if isinstance(v, str | int) and str(v).strip()))


_ISO_DATE = re.compile(r"^\d{4}(?:-\d{2}(?:-\d{2})?)?$")


def _as_date(value: Any, anchor: datetime | None) -> tuple[str | None, datetime | None]:
    """(ISO text, datetime) of a model-given date: ISO, ISO date-time or a phrase resolved against ``anchor``."""
    if not isinstance(value, str) or not value.strip():
        return None, None
    text = value.strip()
    if _ISO_DATE.match(text):
        if len(text) == 10:
            try:
                day = date.fromisoformat(text)
            except ValueError:
                return None, None
            return text, datetime(day.year, day.month, day.day, tzinfo=UTC)
        return text, None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        found = resolve(text, anchor)
        if found is None:
            return None, None
        return found.iso, datetime(found.date.year, found.date.month, found.date.day, tzinfo=UTC)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.date().isoformat(), moment


def _turn_line(turn: Turn) -> str:
    when = f" ({turn.timestamp.strftime('%Y-%m-%d %H:%M')} UTC, {format_day(turn.timestamp.date())})" \
        if turn.timestamp else ""
    who = turn.speaker or turn.role
    caption = turn.metadata.get("caption") if turn.metadata else None
    shared = f" [shared a photo: {redact(str(caption))}]" if caption else ""
    return f"[{turn.id}] {who}{when}: {redact(turn.content)}{shared}"


class HaikuExtractor(Extractor):
    """Extraction by Claude Haiku with a ``record_memories`` tool (see the module docstring).

    ``client`` is an ``anthropic.AsyncAnthropic``; its own retries handle
    transient API errors. A malformed answer is repaired where possible
    (types coerced, values clamped, JSON found in text), retried once, and
    then reported as :class:`ExtractionError`.
    """

    def __init__(self, client: AsyncAnthropic | ModelCall, model: str = "", *, max_tokens: int = 2048):
        self._tool = carrier(client, model, max_tokens)

    @property
    def model(self) -> str:
        return self._tool.model

    async def aclose(self) -> None:
        """Close the Anthropic client."""
        await self._tool.aclose()

    def prompt(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> str:
        """The user message sent to the model (every text redacted)."""
        lines: list[str] = []
        if context:
            lines.append("CONTEXT (reference only):")
            lines.extend(_turn_line(c) if isinstance(c, Turn) else f"- {redact(str(c))}" for c in context)
            lines.append("")
        lines.append("TO EXTRACT:")
        lines.extend(_turn_line(t) for t in turns)
        return "\n".join(lines)

    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        if not turns:
            return []
        ids = [t.id for t in turns]
        anchor = next((t.timestamp for t in reversed(turns) if t.timestamp), None)

        def parse(data: Mapping[str, Any]) -> list[ExtractedNote]:
            return _parse_notes(data, ids, anchor)

        notes = await self._tool.ask(EXTRACTION_SYSTEM, self.prompt(turns, context), RECORD_MEMORIES_TOOL, parse,
                                     f"extraction of turns {', '.join(ids[:3])}{'...' if len(ids) > 3 else ''}")
        logger.debug("Haiku extracted %d notes from %d turns", len(notes), len(turns))
        return notes


def _parse_notes(data: Mapping[str, Any], turn_ids: Sequence[str], anchor: datetime | None) -> list[ExtractedNote]:
    raw = data.get("notes")
    if isinstance(raw, str):
        raw = loads(raw)
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, list):
        raise MalformedAnswer(f"'notes' is not a list (got {type(raw).__name__})")
    notes: list[ExtractedNote] = []
    dropped = 0
    for item in raw:
        note = _parse_note(item, turn_ids, anchor)
        if note is None:
            dropped += 1
        else:
            notes.append(note)
    if raw and not notes:
        raise MalformedAnswer(f"none of the {len(raw)} notes was usable")
    if dropped:
        logger.warning("dropped %d unusable note(s) of %d from the model's answer", dropped, len(raw))
    return notes


def _parse_note(item: Any, turn_ids: Sequence[str], anchor: datetime | None) -> ExtractedNote | None:
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, Mapping):
        return None
    content = item.get("content")
    if not isinstance(content, str):
        return None
    content = redact(_SPACES.sub(" ", content).strip())
    if len(content) < 3 or content == REDACTED:
        return None
    try:
        note_type = MemoryType.parse(str(item.get("type") or "FACT"))
    except InvalidMemory:
        note_type = MemoryType.FACT
    if note_type.value not in _NOTE_TYPES:
        note_type = MemoryType.FACT
    sources = tuple(s for s in _as_str_list(item.get("source_ids")) if s in turn_ids) or tuple(turn_ids)
    event_date, _ = _as_date(item.get("event_date"), anchor)
    commitment = None
    raw_commitment = item.get("commitment")
    if isinstance(raw_commitment, str) and raw_commitment.strip():
        raw_commitment = {"what": raw_commitment}
    if isinstance(raw_commitment, Mapping) and isinstance(raw_commitment.get("what"), str) \
            and raw_commitment["what"].strip():
        due_text = raw_commitment.get("when") if isinstance(raw_commitment.get("when"), str) else None
        _, due_at = _as_date(due_text, anchor)
        who = raw_commitment.get("who")
        commitment = Commitment(what=redact(raw_commitment["what"].strip()),
                                who=who.strip() if isinstance(who, str) and who.strip() else None,
                                due_at=due_at, due_text=due_text)
        note_type = MemoryType.COMMITMENT if note_type in (MemoryType.FACT, MemoryType.TASK) else note_type
    return ExtractedNote(content=content, type=note_type, importance=_as_int(item.get("importance"), 1, 10, 5),
                         confidence=_as_confidence(item.get("confidence")), source_ids=sources,
                         event_date=event_date, entities=_as_str_list(item.get("entities")), commitment=commitment,
                         category=_WAY_CATEGORIES.get(note_type))


#: The category a procedure or convention note carries, as the offline rules write them.
_WAY_CATEGORIES = {MemoryType.PROCEDURE: "procedure", MemoryType.PATTERN: "convention"}


_SPACES = re.compile(r"\s+")


class HaikuClassifier(UpdateClassifier):
    """ADD / UPDATE / SUPERSEDE / NOOP by Claude Haiku with a ``classify_update`` tool."""

    def __init__(self, client: AsyncAnthropic | ModelCall, model: str = "", *, max_tokens: int = 1024):
        self._tool = carrier(client, model, max_tokens)

    async def aclose(self) -> None:
        await self._tool.aclose()

    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        if not existing:
            return [UpdateDecision(UpdateAction.ADD, None, "nothing similar stored")]
        by_id = {m.id: m for m in existing}
        lines = [f"NEW: {redact(new_fact)}", "", "EXISTING:"]
        lines.extend(f"[{m.id}] {redact(m.content)}" for m in existing)

        def parse(data: Mapping[str, Any]) -> list[UpdateDecision]:
            raw = data.get("decisions")
            if isinstance(raw, str):
                raw = loads(raw)
            if isinstance(raw, Mapping):
                raw = [raw]
            if not isinstance(raw, list):
                raise MalformedAnswer("'decisions' is not a list")
            decided: dict[str, UpdateDecision] = {}
            for item in raw:
                if not isinstance(item, Mapping):
                    continue
                memory_id = str(item.get("memory_id") or "").strip().strip("[]")
                try:
                    action = UpdateAction(str(item.get("action") or "").strip().upper())
                except ValueError:
                    continue
                if memory_id not in by_id or memory_id in decided:
                    continue
                reason = item.get("reason")
                reason = reason.strip() if isinstance(reason, str) and reason.strip() else f"{action.value} (Haiku)"
                merged = item.get("merged_content")
                merged = redact(merged.strip()) if isinstance(merged, str) and merged.strip() else None
                if action is UpdateAction.ADD:
                    decided[memory_id] = UpdateDecision(UpdateAction.ADD, None, reason)
                else:
                    decided[memory_id] = UpdateDecision(action, memory_id, reason,
                                                        merged if action is UpdateAction.UPDATE else None)
            if not decided:
                raise MalformedAnswer("no usable decision for any existing memory")
            return [decided.get(m.id) or UpdateDecision(UpdateAction.ADD, None, "not classified by the model")
                    for m in existing]

        return await self._tool.ask(CLASSIFY_SYSTEM, "\n".join(lines), CLASSIFY_UPDATE_TOOL, parse,
                                    "update classification")
