"""hook_bench's smallest mode (``--quick --hooks-only``, with ``--baseline HEAD``) runs the plugin's
launcher against real daemons (this checkout's and HEAD's, exported) and a cold start, and
writes well-formed JSON (no speed is asserted: the machine is shared)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.hook_bench import EVENTS, NOOP, PROMPT_TARGET_MS
from tests.benchmarks.test_benchmarks_quick import nonneg, run_quick


@pytest.mark.slow
def test_hook_bench_quick(tmp_path: Path) -> None:
    data = run_quick("hook_bench", tmp_path, "--hooks-only", "--baseline", "HEAD")
    assert data["benchmark"] == "hooks"
    assert data["params"]["hook_size"] == 1000 and data["params"]["baseline"] == "HEAD"
    assert data["params"]["prompt_target_p95_ms"] == PROMPT_TARGET_MS
    hooks = data["results"]["hooks"]
    for event in (NOOP, *EVENTS):
        for arm in ("plugin+daemon", "baseline+daemon", "in-process"):
            stats = hooks[f"{arm}/{event}"]
            assert 0 < stats["p50_ms"] <= stats["p95_ms"], (arm, event)
            async_hook = event == "post-tool-use"  # Bash: async by hooks.json; the Read stays synchronous
            assert stats["user_waits"] == ("async" if async_hook else "sync"), (arm, event)
            assert stats["wait_p95_ms"] == (0.0 if async_hook else stats["p95_ms"])
        assert nonneg(hooks[f"plugin+daemon/{event}"]["cpu_p50_ms"])
    for part in ("sh alone", "curl alone"):
        assert hooks[f"{part}/{NOOP}"]["p50_ms"] > 0
    # every prompt was answered by the daemon with a block (the synthetic store has matches)
    for arm in ("plugin+daemon", "in-process"):
        answered, n = hooks[f"{arm}/user-prompt-submit"]["answered_with_context"].split("/")
        assert answered == n
    where = data["results"]["where"]
    assert set(where) == {"process start", *EVENTS}
    for event in EVENTS:
        assert 0 < where[event]["start_share_pct"] <= 100 and 0 <= where[event]["daemon_share_pct"] <= 100
    assert where["process start"]["launcher_noop_p50_ms"] == hooks[f"plugin+daemon/{NOOP}"]["p50_ms"]
    cold = data["results"]["cold"]
    (run,) = cold["runs"]
    assert isinstance(run["same_block"], bool) and isinstance(run["same_l1"], bool)
    for mode in ("cold", "warm"):
        assert run[mode]["session_start_ms"] > 0 and run[mode]["first_prompt_ms"] > 0
    assert run["warm"]["block_tokens"] > 0
    summary = data["summary"]
    assert summary["user_prompt_submit_target_p95_ms"] == PROMPT_TARGET_MS
    assert isinstance(summary["user_prompt_submit_target_met"], bool)
    assert nonneg(summary["plugin_daemon_user_prompt_submit_p95_ms"])
    assert nonneg(summary["baseline_daemon_user_prompt_submit_p95_ms"])
    assert nonneg(summary["cold_session_start_p50_ms"]) and summary["cold_first_prompt_same_block"] in ("0/1", "1/1")
    assert nonneg(summary["load_avg_1m_start"]) and nonneg(summary["load_avg_1m_end"])
    assert "Machine load" in data["_stdout"] and "Cold start" in data["_stdout"]
