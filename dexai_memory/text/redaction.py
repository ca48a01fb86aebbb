"""Keeping private text and secrets out of memory.

:func:`redact` runs on every turn before an extractor stores anything or sends
it to a model:

* everything inside ``<private>...</private>`` is dropped (an unclosed
  ``<private>`` drops the rest of the text);
* obvious secrets are replaced by ``[redacted]``: Anthropic, OpenAI, AWS,
  GitHub, Slack, Stripe and Google API keys, bearer tokens, JWTs, private
  key blocks, ``password: ...`` / ``passwd=...`` / ``api_key=...`` values,
  environment assignments of secrets (``PGPASSWORD=...``, ``DB_PASSWORD=...``,
  any ``*_PASSWORD`` / ``*_SECRET`` / ``*_TOKEN`` / ``*_API_KEY``), the
  password of a URL (``postgres://user:...@host``), "password X" / "pw is X"
  when X looks like a password (a digit, a symbol or inner capitals), and
  long high-entropy tokens.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

__all__ = ["REDACTED", "clean", "contains_secret", "redact", "redact_all"]

#: What a secret is replaced with.
REDACTED = "[redacted]"

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.I | re.S)
_STRAY_TAG = re.compile(r"</?private>", re.I)

_SECRETS: tuple[re.Pattern[str], ...] = (
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
               re.S),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),                  # Anthropic
    re.compile(r"\bsk-(?:proj-|svcacct-|None-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),   # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),               # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),              # Slack
    re.compile(r"\bxapp-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b"),      # Stripe
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),                    # Google API key
    re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),  # JWT
)
#: Keep the label, redact the value: "password: hunter2", "Bearer abc...", "aws_secret_access_key = ...".
_LABELLED = re.compile(
    r"(?P<label>\b(?:bearer|authorization:\s*bearer)\s+|"
    r"\b(?:password|passwd|pwd|passphrase|passcode|pin code|secret|client[_ ]secret|api[_ -]?key|access[_ ]token|"
    r"auth[_ ]token|token|aws_secret_access_key|private[_ ]key)\b[\"']?\s*(?P<sep>[:=]|\bis\b)\s*[\"']?)"
    r"(?P<value>[^\s\"',;]+)",
    re.I,
)
#: Environment-style assignments: PGPASSWORD=..., DB_PASSWORD=..., GITHUB_TOKEN: ..., MY_API_KEY=...
_ENV_ASSIGN = re.compile(
    r"(?P<label>\b[A-Za-z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY)[A-Za-z0-9_]*"
    r"[\"']?\s*(?:=|:)\s*[\"']?)(?P<value>[^\s\"',;]+)",
    re.I,
)
#: The password of a URL: scheme://user:PASSWORD@host
_URL_PASSWORD = re.compile(r"(?P<label>\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:)(?P<value>[^/\s@]+)(?=@)", re.I)
#: "pw: x", "pw is x" (always redacted), "password hunter2", "--password Tr0ub4dor&3", "the password to
#: s3cret" (redacted when the value does not read as a word, see _looks_like_password).
_PASSWORD_WORD = re.compile(
    r"(?P<label>\b(?:password|passwd|passphrase|pw)\b[\"']?(?:\s*[:=]\s*|\s+(?:is|was|to)\s+|\s+)[\"']?)"
    r"(?P<value>[^\s\"',;]+)",
    re.I,
)
_TOKEN = re.compile(r"[A-Za-z0-9+/_\-=.]{32,}")


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(token: str) -> bool:
    """A long token mixing upper case, lower case and digits with high entropy (not a word, path or hash)."""
    stripped = token.strip(".=")
    if len(stripped) < 32 or "/" in stripped and stripped.count("/") > 2:
        return False
    classes = sum((any(c.islower() for c in stripped), any(c.isupper() for c in stripped),
                   any(c.isdigit() for c in stripped)))
    return classes == 3 and _entropy(stripped) >= 4.0


_PASSWORD_LABEL = re.compile(r"\b(?:password|passwd|pwd|passphrase|passcode|pin code)\b", re.I)


def _label_value(m: re.Match[str]) -> str:
    value = m.group("value")
    if value == REDACTED:
        return m.group(0)
    if not _PASSWORD_LABEL.search(m.group("label")):
        # "the token is great" is prose; "the token is 8f3k..." is a secret
        if m.group("sep") and m.group("sep").lower() == "is" and not (
                any(c.isdigit() for c in value) or len(value) >= 16):
            return m.group(0)
        if len(value) < 3 or m.group("label").lower().lstrip().startswith(("bearer", "authorization")) and len(value) < 8:
            return m.group(0)
    return m.group("label") + REDACTED


def _looks_like_password(value: str) -> bool:
    """A password rather than a word: has a digit, a symbol, or a capital after the first letter."""
    core = value.rstrip(".!?)")
    if not core or core == REDACTED:
        return False
    return (any(c.isdigit() for c in core) or any(not c.isalnum() for c in core)
            or any(c.isupper() for c in core[1:]))


def _password_word(m: re.Match[str]) -> str:
    value, label = m.group("value"), m.group("label")
    separated = re.search(r"[:=]|\s(?:is|was)\s", label, re.I) is not None
    if value.startswith(REDACTED) or not (separated or _looks_like_password(value)):
        return m.group(0)
    return label + REDACTED


def _env_assign(m: re.Match[str]) -> str:
    value = m.group("value")
    if value.startswith(REDACTED) or value.startswith("$"):  # PGPASSWORD=$SECRET names a variable, no secret
        return m.group(0)
    return m.group("label") + REDACTED


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` fit for our files: NUL and other control characters (but tab and newlines) dropped,
    lone surrogates (half an emoji, undecodable bytes) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", text))


def redact(text: str) -> str:
    """``text`` without private sections and with secrets replaced by ``[redacted]`` (and
    :func:`clean`: every text that enters our files goes through here)."""
    if not text:
        return text
    text = clean(text)
    out = _PRIVATE.sub(" ", text)
    out = _STRAY_TAG.sub("", out)
    for pattern in _SECRETS:
        out = pattern.sub(REDACTED, out)
    out = _LABELLED.sub(_label_value, out)
    out = _ENV_ASSIGN.sub(_env_assign, out)
    out = _URL_PASSWORD.sub(lambda m: m.group("label") + REDACTED, out)
    out = _PASSWORD_WORD.sub(_password_word, out)
    out = _TOKEN.sub(lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), out)
    if out != text:
        out = re.sub(r"[ \t]{2,}", " ", out).strip()
    return out


def redact_all(value: Any) -> Any:
    """``value`` with every string in it, however nested in lists and dicts, through :func:`redact`;
    anything else unchanged (hook state files, transcript backups, episodes' artifacts)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_all(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_all(v) for k, v in value.items()}
    return value


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` would change anything in ``text``."""
    return redact(text) != text
