"""Text handling shared by every stage: words and stop words, token counts, dates, redaction.

* :mod:`~dexai_memory.text.words`: the one tokenizer (:func:`split_words`) and the one
  stop list (:data:`STOP_WORDS`);
* :mod:`~dexai_memory.text.tokens`: the token estimate every budget uses;
* :mod:`~dexai_memory.text.dates`: relative dates resolved against a turn's time;
* :mod:`~dexai_memory.text.redaction`: ``<private>`` text and secrets kept out of memory;
* :mod:`~dexai_memory.text.json_input`: JSON from outside, with bounded nesting and no lone surrogates.

Standard library only. Names load from their module on first use (the command
hook imports this package on every event and needs one or two of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

__all__ = [
    "JOINERS",
    "REDACTED",
    "REQUEST_WORDS",
    "STOP_WORDS",
    "ResolvedDate",
    "clean",
    "contains_secret",
    "content_words",
    "count_tokens",
    "find_dates",
    "format_day",
    "is_future",
    "normalize",
    "parse_locomo_timestamp",
    "redact",
    "redact_all",
    "resolve",
    "rewrite_dates",
    "search_terms",
    "split_words",
    "truncate_to_tokens",
]

_LAZY = {
    **dict.fromkeys(("JOINERS", "REQUEST_WORDS", "STOP_WORDS", "content_words", "normalize", "search_terms",
                     "split_words"), "words"),
    **dict.fromkeys(("count_tokens", "truncate_to_tokens"), "tokens"),
    **dict.fromkeys(("ResolvedDate", "find_dates", "format_day", "is_future", "parse_locomo_timestamp", "resolve",
                     "rewrite_dates"), "dates"),
    **dict.fromkeys(("REDACTED", "clean", "contains_secret", "redact", "redact_all"), "redaction"),
}

if TYPE_CHECKING:
    from .dates import (
        ResolvedDate,
        find_dates,
        format_day,
        is_future,
        parse_locomo_timestamp,
        resolve,
        rewrite_dates,
    )
    from .redaction import REDACTED, clean, contains_secret, redact, redact_all
    from .tokens import count_tokens, truncate_to_tokens
    from .words import (
        JOINERS,
        REQUEST_WORDS,
        STOP_WORDS,
        content_words,
        normalize,
        search_terms,
        split_words,
    )

__getattr__ = lazy_exports(__name__, _LAZY)
