"""hook_bench's report: the tables it prints and the JSON summary, from its results
(:mod:`benchmarks.hook_bench` measures)."""

from __future__ import annotations

import os
import re
from typing import Any

from benchmarks.common import format_table
from benchmarks.hook_bench import NOOP, PROMPT_TARGET_MS, RECALL_TARGETS_MS


def hook_rows(hooks: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for key, v in hooks.items():
        wait = "async (0)" if v.get("user_waits") == "async" else v.get("wait_p95_ms")
        target = PROMPT_TARGET_MS if key == "plugin+daemon/user-prompt-submit" else None
        rows.append([key, v["p50_ms"], v["p95_ms"], v.get("cpu_p50_ms"), v.get("daemon_cpu_mean_ms"),
                     None if key.startswith("python") else wait, target])
    return rows


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for n, r in results["in_process"].items():
        if "skipped" not in r:
            label = f"{int(n) // 1000}k"
            summary[f"auto_recall_p95_ms_{label}"] = r["auto_recall"]["p95_ms"]
            summary[f"recall_block_p95_ms_{label}"] = r["recall_block"]["p95_ms"]
    for key, v in results["hooks"].items():
        slug = re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")
        summary[f"{slug}_p50_ms"], summary[f"{slug}_p95_ms"] = v["p50_ms"], v["p95_ms"]
        if "wait_p95_ms" in v and not key.startswith("in-process"):
            summary[f"{slug}_wait_p95_ms"] = v["wait_p95_ms"]
    prompt = results["hooks"].get("plugin+daemon/user-prompt-submit")
    if prompt:
        summary["user_prompt_submit_target_p95_ms"] = PROMPT_TARGET_MS
        summary["user_prompt_submit_target_met"] = prompt["wait_p95_ms"] <= PROMPT_TARGET_MS
    for event, w in results["where"].items():
        if event == "process start":
            continue
        summary[f"{re.sub(r'[^a-z0-9]+', '_', event.lower())}_start_share_pct"] = w["start_share_pct"]
    cold = results.get("cold") or {}
    if cold.get("runs"):
        summary["cold_session_start_p50_ms"] = cold["session_start"]["p50_ms"]
        summary["cold_session_start_max_ms"] = cold["session_start"]["max_ms"]
        summary["cold_first_prompt_p50_ms"] = cold["first_prompt"]["p50_ms"]
        summary["cold_first_prompt_same_block"] = cold["same_block"]
    summary["load_avg_1m_start"], summary["load_avg_1m_end"] = results["load"]["start"][0], results["load"]["end"][0]
    return summary


def print_tables(results: dict[str, Any], hook_size: int) -> None:
    load = results["load"]
    print(f"Machine load (1/5/15 min): {load['start']} at the start, {load['end']} at the end "
          f"({os.cpu_count()} cores, shared)")
    rows = []
    for n, r in results["in_process"].items():
        target = RECALL_TARGETS_MS.get(int(n))
        if "skipped" in r:
            rows.append([f"auto_recall @ {int(n):,}", None, None, target, r["skipped"]])
            continue
        rows.append([f"auto_recall @ {int(n):,}", r["auto_recall"]["p50_ms"], r["auto_recall"]["p95_ms"], target,
                     r["mean_injected"]])
        rows.append([f"recall_block @ {int(n):,}", r["recall_block"]["p50_ms"], r["recall_block"]["p95_ms"], None,
                     r["mean_block_tokens"]])
    if rows:
        print(format_table(["in-process", "p50 ms", "p95 ms", "target p95", "mean memories/tokens"], rows,
                           title="Recall latency (in-process, query embedding included)"))
    print()
    print(format_table(["arm/event", "p50 ms", "p95 ms", "launcher cpu p50 ms", "daemon cpu mean ms",
                        "user waits p95 ms", "target p95"], hook_rows(results["hooks"]),
                       title=f"Hooks with the daemon up, {hook_size:,} memories: the launcher's wall time, process "
                             "start to exit (in-process: a hook.event request, no process start); async: Claude "
                             "Code does not wait, the wall time is the hook's cost"))
    print()
    print(format_table(["event", "wall p50 ms", "process start p50 ms", "daemon work p50 ms", "start share %",
                        "daemon share %"],
                       [[e, w["wall_p50_ms"], w["process_start_p50_ms"], w["daemon_p50_ms"], w["start_share_pct"],
                         w["daemon_share_pct"]] for e, w in results["where"].items() if e != "process start"],
                       title=f"Where the time goes (process start: the launcher with the no-op {NOOP}, timed "
                             "beside each event; daemon work: the same event in-process)"))
    parts = results["where"].get("process start") or {}
    print(f"Process start, p50: launcher with {NOOP} {parts.get('launcher_noop_p50_ms')} ms = sh alone "
          f"{parts.get('sh_alone_p50_ms')} + curl alone {parts.get('curl_alone_p50_ms')} (its daemon no-op "
          f"{parts.get('daemon_noop_p50_ms')}) + the launcher script's own forks")
    cold = results.get("cold") or {}
    if cold.get("runs"):
        print()
        print(format_table(["run", "session-start ms", "queued", "first prompt ms", "same block as warm",
                            "tokens cold/warm", "warm session-start ms", "warm prompt ms"],
                           [[i + 1, r["cold"]["session_start_ms"], r["cold"]["queued_for_replay"],
                             r["cold"]["first_prompt_ms"], "yes" if r["same_block"] else "no",
                             f"{r['cold']['block_tokens']}/{r['warm']['block_tokens']}",
                             r["warm"]["session_start_ms"], r["warm"]["first_prompt_ms"]]
                            for i, r in enumerate(cold["runs"])],
                           title="Cold start: no daemon running; session-start starts it and waits "
                                 f"(up to {cold['cold_start_wait_seconds']:g} s), then the first prompt"))
