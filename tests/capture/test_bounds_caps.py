"""The caps on one turn's text (``limits.max_turn_chars``): :func:`clip`, the queue, hook input."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from dexai_memory.capture.queue import ExtractionQueue, Job
from dexai_memory.capture.queue_file import enqueue_turn
from dexai_memory.hooks.client import hook_input, read_bounded, salvage_object
from dexai_memory.limits import MAX_DEPTH, LimitsConfig, clip, clip_strings
from dexai_memory.models import Turn
from dexai_memory.text.redaction import redact

WORDS = " ".join(f"word{i}" for i in range(200_000))  # about 1.4 MB


@pytest.mark.parametrize("limit", [1_000, 5_000, 20_000])
def test_clip_keeps_head_and_tail_within_the_limit(limit: int) -> None:
    out = clip(WORDS, limit)
    assert len(out) <= limit
    assert out.startswith("word0 word1 ") and out.endswith(" word199999")
    cut = int(out.split("[... ", 1)[1].split(" characters cut", 1)[0])
    assert len(out) - len(f"\n[... {cut} characters cut ...]\n") + cut == len(WORDS)
    assert clip(out, limit) == out  # clipping twice changes nothing


def test_clip_never_splits_a_word_so_a_secret_is_still_recognised() -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4" * 12
    text = f"{'filler ' * 3000}the key is {secret} {'more ' * 3000}"
    for limit in range(14_000, 16_000, 37):  # cut points all around the secret
        out = clip(text, limit)
        assert secret[:20] not in out or secret in out  # whole or gone, never a fragment
        assert secret not in redact(out)


def test_short_text_and_nested_payload() -> None:
    assert clip("short", 1000) == "short"
    payload = {"session_id": "s", "prompt": WORDS, "tool_response": [{"stdout": WORDS}], "n": 3}
    out = clip_strings(payload, 2000)
    assert out["session_id"] == "s" and out["n"] == 3
    assert len(out["prompt"]) <= 2000 and len(out["tool_response"][0]["stdout"]) <= 2000
    small = {"a": ["b", {"c": "d"}]}
    assert clip_strings(small, 2000) is small  # nothing to cut: the same object
    deep: object = "x"
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    clip_strings(deep, 2000)  # a hostile nesting is cut off, not a RecursionError


def test_a_megabyte_turn_is_queued_clipped(tmp_path: Path) -> None:
    queue = ExtractionQueue(tmp_path / "queue.db", max_turn_chars=20_000).open()
    queue.enqueue(Turn(id="t1", user_id="u", content=WORDS, speaker="Sam"), context=[WORDS])
    seen: list[Job] = []

    async def take(batch: Sequence[Job]) -> None:
        seen.extend(batch)

    asyncio.run(queue.drain(take))
    queue.close()
    assert len(seen) == 1
    assert len(seen[0].turn.content) <= 20_000 and "characters cut" in seen[0].turn.content
    assert all(len(c) <= 20_000 for c in seen[0].context)
    with sqlite3.connect(tmp_path / "queue.db") as conn:
        (payload,) = conn.execute("SELECT payload FROM jobs").fetchone()
    assert len(payload) < 3 * 20_000  # what is on disk is bounded too


def test_an_uncapped_row_from_an_older_writer_is_clipped_when_read(tmp_path: Path) -> None:
    path = tmp_path / "queue.db"
    enqueue_turn(path, {"id": "old", "user_id": "u", "content": "x"})
    with sqlite3.connect(path) as conn:  # what a version without caps wrote
        conn.execute("UPDATE jobs SET payload = ?", (json.dumps({"turn": {"id": "old", "user_id": "u",
                                                                          "content": WORDS}}),))
    queue = ExtractionQueue(path, max_turn_chars=5_000).open()
    seen: list[Job] = []

    async def take(batch: Sequence[Job]) -> None:
        seen.extend(batch)

    asyncio.run(queue.drain(take))
    queue.close()
    assert len(seen[0].turn.content) <= 5_000


def test_hook_input_over_its_cap_keeps_what_the_cut_json_holds() -> None:
    raw = json.dumps({"session_id": "s1", "transcript_path": "/t.jsonl", "hook_event_name": "UserPromptSubmit",
                      "prompt": "I prefer pnpm. " + "é\"\\" * 3_000_000})
    text, more = read_bounded(io.StringIO(raw), 100_000)
    assert len(text) == 100_000 and more == len(raw) - 100_000
    payload = hook_input(text, more)
    assert payload["session_id"] == "s1" and payload["transcript_path"] == "/t.jsonl"
    assert payload["prompt"].startswith("I prefer pnpm.") and "characters cut" in payload["prompt"]
    for cut in range(1, 200):  # cut anywhere, even inside an escape: never raises
        salvage_object(raw[:cut])
    assert hook_input('{"a": 1}', 0) == {"a": 1}
    assert LimitsConfig().max_hook_input_bytes == 2 * 1024 * 1024  # hooks/dexai-hook holds the same
    assert "DEXAI_HOOK_MAX_INPUT:-2097152" in (Path(__file__).parents[2] / "hooks" / "dexai-hook").read_text()


def test_ingest_admits_a_long_turn_clipped(isolated_home: Path) -> None:
    """``dexai memory ingest`` (Pipeline.admit) holds a turn to the cap before redaction and the gate."""
    from dexai_memory.config import load_settings
    from dexai_memory.pipeline import Pipeline
    from dexai_memory.providers.native import NativeProvider

    settings = load_settings(home=isolated_home)
    pipeline = Pipeline(NativeProvider(settings.db_path, embedder=None), settings)
    clean, _ = pipeline.admit(Turn(id="t", user_id="u", content=WORDS, speaker="Sam"))
    assert clean is not None and len(clean.content) <= settings.limits.max_turn_chars
    assert clean.content.startswith("word0 ") and clean.content.endswith(" word199999")
