"""The one token counter used for every budget in dexai-memory.

Claude's tokenizer is not available offline, so budgets use a fixed, documented
estimate that errs on the high side for English prose and code:

* every run of letters/digits counts ``ceil(len / 4)`` tokens, at least 1;
* every other non-space character (punctuation, symbols, emoji) counts 1.

On English text this lands within ~10-15 % of Claude's own counts and never
depends on network access or a model file. All budgets (L1 block sections, the
auto-recall cap, the benchmarks' "mean block tokens") are measured with
:func:`count_tokens`.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    """Estimated Claude tokens in ``text`` (see the module docstring for the rule)."""
    total = 0
    for piece in _PIECE.findall(text):
        n = len(piece)
        total += (n + 3) // 4 if n > 1 else 1
    return total


def truncate_to_tokens(text: str, max_tokens: int, ellipsis: str = "…") -> str:
    """Cut ``text`` at a word boundary so that it fits ``max_tokens``."""
    if count_tokens(text) <= max_tokens:
        return text
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(" ".join(words[:mid]) + ellipsis) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return (" ".join(words[:lo]) + ellipsis) if lo else ""
