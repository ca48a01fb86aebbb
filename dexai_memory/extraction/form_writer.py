"""Compression forms of memories (summary, compressed, index: :mod:`dexai_memory.recall.forms`)
written by a model, the offline rules behind it.

:class:`OfflineFormWriter` applies the rules (:func:`~dexai_memory.recall.forms.build_forms`).
:class:`HaikuFormWriter` asks Claude Haiku (API key or Claude Code sign-in, whichever
:mod:`dexai_memory.extraction.factory` chose) through a ``write_forms`` tool, up to
:data:`BATCH_SIZE` memories a call, for each one's summary (one sentence), compressed form
(telegraphic, at most 12 words, exact names, paths and numbers kept) and index key (2-4
words). Every answer is checked (:func:`~dexai_memory.recall.forms.checked_forms`); a memory
whose forms are missing or fail the check gets the rules' forms. When the model cannot be
asked (daily token budget spent, Claude Code unreachable) or its call fails, the rules write
the forms of that batch and of the rest of the run: never an error to the user.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ExtractionError, ModelUnavailable
from ..recall.forms import BY_MODEL, BY_RULES, build_forms, checked_forms
from ..text.redaction import redact
from ..text.tokens import truncate_to_tokens
from .base import FormWriter, WrittenForms
from .haiku import carrier
from .model_call import MalformedAnswer, ModelCall

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["BATCH_SIZE", "FORMS_SYSTEM", "WRITE_FORMS_TOOL", "HaikuFormWriter", "OfflineFormWriter"]

logger = logging.getLogger(__name__)

#: Memories per model call.
BATCH_SIZE = 20
#: Most tokens of one memory shown to the model (a longer one is cut; its summary is of the start).
CONTENT_TOKENS = 400

WRITE_FORMS_TOOL: dict[str, Any] = {
    "name": "write_forms",
    "description": "Record the short forms of each numbered memory.",
    "input_schema": {
        "type": "object",
        "properties": {
            "forms": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer", "description": "the memory's number"},
                        "summary": {"type": "string", "description": "one sentence"},
                        "compressed": {"type": "string", "description": "telegraphic, at most 12 words"},
                        "index": {"type": "string", "description": "2-4 lower-case words, space-separated"},
                    },
                    "required": ["n", "summary", "compressed", "index"],
                },
            }
        },
        "required": ["forms"],
    },
}

FORMS_SYSTEM = """You write short forms of memories an assistant keeps, for a context budget.
For each numbered memory write:
- summary: one sentence (at most 25 words) that keeps its point; never longer than the memory;
- compressed: telegraphic, at most 12 words, no articles or filler; keep exact names, file
  paths, identifiers, numbers and negations ("not", "never", "instead");
- index: a topic key of 2-4 lower-case words separated by spaces (no underscores), the words
  someone would search for.
Each form is shorter than the one before it. Answer with write_forms, one entry per memory,
with its number n."""


class OfflineFormWriter(FormWriter):
    """The offline rules (:func:`~dexai_memory.recall.forms.build_forms`); no model."""

    async def write(self, contents: Sequence[str]) -> list[WrittenForms]:
        return [WrittenForms(build_forms(c), BY_RULES) for c in contents]


class HaikuFormWriter(FormWriter):
    """Forms written by Claude Haiku through a ``write_forms`` tool (see the module docstring)."""

    uses_model = True

    def __init__(self, client: AsyncAnthropic | ModelCall, model: str = "", *, batch_size: int = BATCH_SIZE,
                 max_tokens: int = 4096):
        self._tool = carrier(client, model, max_tokens)
        self.batch_size = max(1, batch_size)
        #: Memories whose forms the model wrote, and those the rules wrote instead, since creation.
        self.by_model = 0
        self.by_rules = 0

    async def aclose(self) -> None:
        await self._tool.aclose()

    async def write(self, contents: Sequence[str]) -> list[WrittenForms]:
        out: list[WrittenForms] = []
        asking = True
        for start in range(0, len(contents), self.batch_size):
            batch = list(contents[start:start + self.batch_size])
            answers: list[Mapping[str, str] | None] = [None] * len(batch)
            asked = False
            if asking:
                try:
                    answers = await self._ask(batch)
                    asked = True
                except ModelUnavailable as exc:
                    asking = False
                    logger.warning("compression forms: the offline rules write them: %s", exc)
                except ExtractionError as exc:
                    asking = False  # the API failing: no more calls this run; the next run asks again
                    logger.warning("compression forms: the model failed, the offline rules write them: %s", exc)
            for content, forms in zip(batch, answers, strict=True):
                if forms is not None:
                    out.append(WrittenForms(forms, BY_MODEL, True))
                    self.by_model += 1
                else:
                    out.append(WrittenForms(build_forms(content), BY_RULES, asked))
                    self.by_rules += 1
        return out

    async def _ask(self, batch: list[str]) -> list[Mapping[str, str] | None]:
        """The checked forms the model wrote for each of ``batch`` (None where it gave nothing
        usable); raises :class:`ExtractionError` (:class:`ModelUnavailable`) when it cannot."""

        def parse(data: Mapping[str, Any]) -> list[Mapping[str, str] | None]:
            items = data.get("forms", data.get("notes"))  # a bare list in a text answer comes as "notes"
            if not isinstance(items, list):
                raise MalformedAnswer("'forms' is not a list")
            found: list[Mapping[str, str] | None] = [None] * len(batch)
            for item in items:
                if not isinstance(item, Mapping):
                    continue
                n = item.get("n")
                if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(batch) or found[n - 1]:
                    continue
                forms = checked_forms(batch[n - 1], {k: redact(v) if isinstance(v, str) else v
                                                     for k, v in item.items()})
                found[n - 1] = forms
            if not any(found):
                raise MalformedAnswer("no usable forms in the answer")
            return found

        prompt = "MEMORIES:\n" + "\n".join(
            f"{n}. {truncate_to_tokens(' '.join(redact(c).split()), CONTENT_TOKENS)}"
            for n, c in enumerate(batch, 1))
        return await self._tool.ask(FORMS_SYSTEM, prompt, WRITE_FORMS_TOOL, parse, "compression forms")
