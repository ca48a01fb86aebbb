"""Private sections and secrets never reach memory."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.models import Turn
from dexai_memory.text.redaction import REDACTED, contains_secret, redact

SECRETS = [
    pytest.param("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", id="anthropic"),
    pytest.param("sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", id="openai"),
    pytest.param("AKIAIOSFODNN7EXAMPLE", id="aws-access-key"),
    pytest.param("ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", id="github"),
    pytest.param("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", id="github-pat"),
    pytest.param("xoxb-123456789012-abcdefghijkl", id="slack"),
    pytest.param("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                 id="jwt"),
    pytest.param("Zx8kQ2pLm9Rt4vBn7Yc1Wd5Fg3Hj6Ks0Ae", id="high-entropy"),
]


@pytest.mark.parametrize("secret", SECRETS)
def test_secret_kinds_are_redacted(secret: str) -> None:
    out = redact(f"here it is: {secret} thanks")
    assert secret not in out
    assert REDACTED in out
    assert out.startswith("here it is:") and out.endswith("thanks")


@pytest.mark.parametrize(("text", "kept"), [
    pytest.param("password: hunter22", "password: ", id="password-colon"),
    pytest.param("passwd=s3cr3t!", "passwd=", id="passwd-equals"),
    pytest.param("my password is hunter2", "my password is ", id="password-is"),
    pytest.param("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = ", id="aws-secret"),
    pytest.param("Authorization: Bearer abc123def456ghi", "Authorization: Bearer ", id="bearer"),
])
def test_labelled_values_are_redacted(text: str, kept: str) -> None:
    assert redact(text) == kept + REDACTED


def test_private_key_block() -> None:
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\ndone"
    out = redact(text)
    assert "MIIE" not in out and REDACTED in out and out.endswith("done")


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("hello <private>my ssn is 123</private> world", "hello world", id="inline"),
    pytest.param("a <PRIVATE>x\ny</PRIVATE> b <private>z</private> c", "a b c", id="multi-and-case"),
    pytest.param("keep this <private>but not this", "keep this", id="unclosed"),
])
def test_private_sections_are_dropped(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("text", [
    pytest.param("The token is great", id="token-prose"),
    pytest.param("the bearer of bad news", id="bearer-prose"),
    pytest.param("commit 3eb6f2c5d0f1a2b3c4d5e6f708192a3b4c5d6e7f", id="git-sha"),
    pytest.param("I went to a LGBTQ support group yesterday.", id="plain"),
])
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text
    assert not contains_secret(text)


async def test_nothing_secret_survives_into_notes() -> None:
    turn = Turn(id="t1", user_id="u", speaker="Sam", timestamp=datetime(2023, 5, 8, tzinfo=UTC),
                content="I work at Acme and my API key is sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789. "
                        "I love hiking <private>and my bank PIN is 4321</private> in the Alps. "
                        "My password: hunter22.",
                metadata={"caption": "a photo of a note saying ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"})
    notes = await OfflineExtractor().extract([turn])
    assert notes
    text = " ".join(n.content for n in notes) + " ".join(n.commitment.what for n in notes if n.commitment)
    for leaked in ("sk-ant", "4321", "PIN", "hunter22", "ghp_"):
        assert leaked not in text
    assert any("Sam works at Acme" in n.content for n in notes)
    assert any("hiking" in n.content and "Alps" in n.content for n in notes)


@pytest.mark.parametrize(("text", "secret"), [
    pytest.param("export PGPASSWORD=hunter2 && psql -h db", "hunter2", id="pgpassword-env"),
    pytest.param("DB_PASSWORD=s3cret-Value", "s3cret-Value", id="db-password-env"),
    pytest.param('MYSQL_ROOT_PASSWORD: "rootpw99"', "rootpw99", id="any-underscore-password-yaml"),
    pytest.param("REDIS_PASSWORD = 'abc'", "abc", id="underscore-password-spaced"),
    pytest.param("STRIPE_SECRET=whsec_short", "whsec_short", id="underscore-secret-env"),
    pytest.param("GITLAB_TOKEN=glpat-xyz", "glpat-xyz", id="underscore-token-env"),
    pytest.param("MY_API_KEY=abcd1234", "abcd1234", id="underscore-api-key-env"),
    pytest.param("my password hunter2", "hunter2", id="password-space-value"),
    pytest.param("the password: Tr0ub4dor&3", "Tr0ub4dor&3", id="password-colon-symbols"),
    pytest.param("pw is hunter2", "hunter2", id="pw-is"),
    pytest.param("wifi pw: sunshine", "sunshine", id="pw-colon-word"),
    pytest.param("psql --password Xk9mq", "Xk9mq", id="password-flag"),
    pytest.param("I set the password to correctHorse", "correctHorse", id="password-to-value"),
    pytest.param("DATABASE_URL=postgres://app:s3cr3t@db.local:5432/app", "s3cr3t", id="url-credentials"),
])
def test_password_shapes_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out
    assert contains_secret(text)


@pytest.mark.parametrize("text", [
    pytest.param("The password manager is great", id="password-manager-prose"),
    pytest.param("Password Reset flow is broken", id="password-reset-prose"),
    pytest.param("reset the password to continue", id="password-to-prose"),
    pytest.param("PGPASSWORD=$DB_PASS psql", id="env-var-reference"),
    pytest.param("the token expired yesterday", id="token-prose-2"),
])
def test_password_talk_without_a_password_is_kept(text: str) -> None:
    assert redact(text) == text
