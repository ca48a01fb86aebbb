"""``benchmarks.prompt_wait_bench`` with one pair: the real Claude Code CLI with and without the
plugin against the fake Messages API; both arms reach the fake API and the result is well formed
(its figures are not asserted: they are what the benchmark reports, not what the test requires)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from benchmarks.prompt_wait_bench import main, parse_debug_log

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ENVELOPE = {"benchmark", "schema", "date", "quick", "machine", "params", "summary", "results"}
RUN_KEYS = {"pair", "arm", "session_id", "wait_ms", "wall_ms", "returncode", "other_requests",
            "cli_time_to_request_ms", "linger_s"}


def test_one_pair_reaches_the_fake_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "prompt_wait.json"
    assert main(["--runs", "1", "--json", str(target)]) == 0
    out = capsys.readouterr().out
    assert str(target) in out and "ratio of medians" in out
    data = json.loads(target.read_text(encoding="utf-8"))
    assert ENVELOPE <= set(data)
    assert data["benchmark"] == "prompt_wait" and data["schema"] == 1
    params = data["params"]
    assert params["runs"] == 1 and params["cold"] is False and params["busy"] is False
    # warm: the plugin's daemon answered before the pair and still did after it
    assert params["daemon_answering"] is True and params["daemon_answering_after"] is True
    assert params["package"].endswith("__init__.py")
    for key, value in data["summary"].items():
        assert value is None or isinstance(value, int | float | str), key
        if isinstance(value, float):
            assert math.isfinite(value), key
    assert data["summary"]["errors"] == 0
    assert data["summary"]["wait_ratio_p50"] > 0

    results = data["results"]
    runs = results["runs"]
    assert sorted(r["arm"] for r in runs) == ["with", "without"]
    for run in runs:
        assert RUN_KEYS <= set(run)
        assert run["returncode"] == 0 and "error" not in run
        assert 0 < run["wait_ms"] <= run["wall_ms"]  # the main request reached the fake API
    assert {arm: s["wait"]["n"] for arm, s in results["arms"].items()} == {"with": 1, "without": 1}
    with_run = next(r for r in runs if r["arm"] == "with")
    without_run = next(r for r in runs if r["arm"] == "without")
    # the plugin's hooks ran in the with-plugin arm only (read from the CLI's debug log)
    assert {"SessionStart", "UserPromptSubmit"} <= {h["event"] for h in with_run["hooks"]}
    assert without_run["hooks"] == [] and without_run["mcp"] == []
    assert "UserPromptSubmit" in results["hooks"]
    # the daemon the run started is stopped and its temporary directory removed
    workdir = params["workdir"]
    assert not Path(workdir).exists()
    # a stopped daemon releases its lock before its process has exited: give it a moment to go
    deadline = time.monotonic() + 10
    while (left := [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p).find(workdir) >= 0]) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_parse_debug_log(tmp_path: Path) -> None:
    log = tmp_path / "debug.txt"
    log.write_text(
        '2026-11-24T22:02:27.784Z [DEBUG] Hooks: SessionStart:startup ["/p/hooks/dexai-hook" session-start] '
        "(plugin dexai-memory@inline) finished with status 0 (214ms)\n"
        '2026-11-24T22:02:27.790Z [DEBUG] Hooks: Stop ["x"] (plugin agents-md@builtin) finished with status 0 (3ms)\n'
        '2026-11-24T22:02:27.597Z [DEBUG] MCP server "plugin:dexai-memory:dexai-memory": Starting connection '
        "with timeout of 30000ms\n"
        '2026-11-24T22:02:29.317Z [DEBUG] MCP server "plugin:dexai-memory:dexai-memory": stdio server rejected '
        "initialize after the version negotiation probe timed out, then answered a second server/discover\n"
        '2026-11-24T22:02:29.318Z [DEBUG] MCP server "plugin:dexai-memory:dexai-memory": Successfully connected '
        "(transport: stdio) in 1729ms\n", encoding="utf-8")
    t0 = 1795557747.0  # 2026-11-24T22:02:27Z
    parsed = parse_debug_log(log, t0)
    assert parsed["hooks"] == [{"event": "SessionStart", "name": "SessionStart:startup", "ms": 214, "rc": 0,
                                "finished_at_ms": 784.0}]
    assert parsed["mcp"] == [{"server": "plugin:dexai-memory:dexai-memory", "started_at_ms": 597.0, "ms": 1729,
                              "connected_at_ms": 2318.0, "probe_timed_out": True}]
