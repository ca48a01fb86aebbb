"""One structured question to a model, whatever carries it: :class:`ModelCall`.

The extractor, the update classifier and the summarizer on Claude each ask one
question with a JSON answer (the input of a "tool" such as ``record_memories``).
Two carriers implement it:

- :class:`~dexai_memory.extraction.haiku.HaikuTool`: the Messages API with an
  API key (the ``anthropic`` client, a forced tool);
- :class:`~dexai_memory.extraction.claude_code.ClaudeCodeCall`: the user's
  signed-in Claude Code, through the Agent SDK's ``query()`` (JSON in text).

The loop is written once here: check the token budget, send, count the tokens
the answer reports, parse, one more attempt after a malformed answer, then the
carrier's error (:attr:`ModelCall.failure`).
"""

from __future__ import annotations

import abc
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ExtractionError
from .usage import Usage

if TYPE_CHECKING:
    from .usage import DailyBudget

__all__ = ["MALFORMED_RETRIES", "Answer", "MalformedAnswer", "ModelCall", "json_in_text", "schema_prompt", "text_input",
           "tool_input"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Retries after a malformed model answer (transport errors are the carrier's business).
MALFORMED_RETRIES = 1


class MalformedAnswer(Exception):
    """The model's answer could not be used (triggers the retry)."""


@dataclass(frozen=True)
class Answer:
    """What one send produced: the tool input (or why there is none) and the tokens it cost."""

    data: Mapping[str, Any] | None
    usage: Usage
    problem: str = ""


class ModelCall(abc.ABC):
    """A structured question to a model; see the module docstring.

    ``budget``, when given, is checked before each attempt (a spent budget raises
    :class:`~dexai_memory.errors.ModelUnavailable`) and charged with what each
    answer reports.
    """

    #: What a call that cannot be completed raises.
    failure: type[ExtractionError] = ExtractionError
    #: Name of the carrier in the usage ledger and in ``doctor``.
    source: str = "model"

    def __init__(self, model: str, *, max_tokens: int = 2048, budget: DailyBudget | None = None):
        self.model = model
        self.max_tokens = max_tokens
        self.budget = budget

    async def aclose(self) -> None:  # noqa: B027 - a hook with nothing to release by default
        """Release what the carrier holds (a client); nothing by default."""

    @abc.abstractmethod
    async def send(self, system: str, prompt: str, tool: Mapping[str, Any], what: str) -> Answer:
        """One attempt: ask and return the input of ``tool`` the answer holds (or the problem).

        Raises :attr:`failure` when the model cannot be reached at all."""

    async def ask(self, system: str, prompt: str, tool: Mapping[str, Any],
                  parse: Callable[[Mapping[str, Any]], _T], what: str) -> _T:
        """``parse`` of the model's answer to ``prompt``; raises :attr:`failure` after
        ``1 + MALFORMED_RETRIES`` malformed answers."""
        problem = "no answer"
        for attempt in range(1 + MALFORMED_RETRIES):
            if self.budget is not None:
                self.budget.check()
            answer = await self.send(system, prompt, tool, what)
            if self.budget is not None:
                self.budget.charge(self.source, answer.usage)
            try:
                if answer.data is None:
                    raise MalformedAnswer(answer.problem or "no answer")
                return parse(answer.data)
            except MalformedAnswer as exc:
                problem = str(exc)
                logger.warning("%s: malformed model output (attempt %d of %d): %s", what, attempt + 1,
                               1 + MALFORMED_RETRIES, problem)
        raise self.failure(f"{what} failed: the model's output was malformed twice ({problem})")


def tool_input(content: Any, tool_name: str) -> Mapping[str, Any]:
    """The input of the ``tool_name`` call in a message's ``content`` blocks, or JSON found
    in its text (repair); else :class:`MalformedAnswer`."""
    texts: list[str] = []
    for block in content or []:
        kind = getattr(block, "type", None)
        if kind == "tool_use" and getattr(block, "name", None) == tool_name:
            data = block.input
            if isinstance(data, str):
                data = loads(data)
            if not isinstance(data, Mapping):
                raise MalformedAnswer(f"{tool_name} input is not an object")
            return data
        if kind == "text":
            texts.append(block.text)
    return text_input("\n".join(texts), tool_name)


def text_input(text: str, tool_name: str) -> Mapping[str, Any]:
    """The JSON object in a text answer meant as ``tool_name``'s input, else :class:`MalformedAnswer`."""
    text = text.strip()
    if not text:
        raise MalformedAnswer(f"no {tool_name} tool call and no text")
    data = json_in_text(text)
    if data is None:
        raise MalformedAnswer(f"no {tool_name} tool call and no JSON in the text")
    return data


def loads(text: str) -> Any:
    """``json.loads``, a failure reported as :class:`MalformedAnswer`."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise MalformedAnswer(f"invalid JSON: {exc}") from None


def json_in_text(text: str) -> Mapping[str, Any] | None:
    """The first JSON object (or list, as ``notes`` / ``decisions``) in ``text``: fenced or bare."""
    fenced = re.search(r"```(?:json)?\s*(.+?)```", text, re.S)
    candidates = [fenced.group(1)] if fenced else []
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start >= 0:
        candidates.append(text[start:])
    for candidate in candidates:
        try:
            data, _ = json.JSONDecoder().raw_decode(candidate.strip())
        except ValueError:
            continue
        if isinstance(data, list):
            return {"notes": data, "decisions": data}
        if isinstance(data, Mapping):
            return data
    return None


def schema_prompt(system: str, tool: Mapping[str, Any]) -> str:
    """``system`` for a carrier without forced tools: the tool's purpose and input schema, and
    the instruction to answer with that JSON object only."""
    schema = json.dumps(tool.get("input_schema", {}), separators=(",", ":"))
    return (f"{system}\n\nAnswer with one JSON object and nothing else (no prose, no code fence): the input "
            f"of the {tool.get('name', 'answer')} tool ({tool.get('description', '')}), matching this JSON "
            f"schema: {schema}")
