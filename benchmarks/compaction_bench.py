"""Compaction survival (issues 5 and 10): do facts said in the conversation reach the model after each compaction?

A scripted long session through the real Claude Code CLI (the one bundled with
claude-agent-sdk, driven by :mod:`testing.harness`) against the local fake
Messages API (:mod:`dexai_memory.demo.fakeapi`), whose compaction summary keeps
nothing (``"The user and assistant chatted."``). As installed: the CLI signs in
with a token (no ``ANTHROPIC_API_KEY`` anywhere, so dexai-memory runs its
offline extractor), the benchmark starts no daemon and writes nothing to the
store; every fact reaches memory only by being said in the conversation. Three
arms, same prompts, same fake model:

* **autostart**: the repository's plugin is loaded; its hooks start the
  daemon themselves when none answers (``daemon.autostart: true``, the
  default) and it extracts the captured turns;
* **own-daemon**: the plugin with ``daemon.autostart: false`` and a daemon the user
  runs themselves (``dexai daemon start`` before the session, as a systemd unit would);
* **without**: the same session with no plugin and no hooks.

Session script
--------------
1. *Planting*: the user states the N facts in the first prompts (four a
   prompt), in every arm, so before any compaction every fact is in context.
   The ``channel`` of a fact (pin / remember / prompt) is kept in the data for
   comparison with earlier results, but as installed every fact is only said.

2. *Rounds*: each round runs ``--fillers`` filler turns (generic coding
   requests that share no distinctive word with any fact), then compacts:
   odd rounds with a manual ``/compact`` (the next filler prompt is then the
   first request after it), even rounds automatically (``--autocompact
   100000``; the last filler's reply reports ``usage.input_tokens = 90000``,
   so the next turn compacts before sending its own request).

What "present" means
--------------------
Every fact carries one distinctive made-up token (``Vellichor``,
``Grimsby``, ...), used nowhere else in the script. A fact is *present* after
a round when its token occurs, case-insensitively and as a whole word, in the
text of the first ``/v1/messages`` request after that round's compaction
request (:func:`dexai_memory.demo.fakeapi.text_of`: system prompt, every message,
hook context included). The token survives any rewording by the extractor
(third person, resolved dates). *in block* counts the tokens found inside a
``<dexai-memory>`` block, *outside* those found elsewhere (the summary keeps
nothing, so outside hits can only come from messages kept verbatim).

Reported per round and arm: survival of all planted facts and of the facts
that must rank high (preferences, warnings and decisions), the injected blocks' tokens
(:func:`dexai_memory.text.tokens.count_tokens`; the largest single block and the
sum of the blocks of that request) and the round's wall time. For every fact
missing in the *with* arm, a diagnosis says which part of the pipeline lost
it (capture, profile/commitment eligibility, section budget, relevance).

Targets (issue 5): 100 % of high-importance facts and >= 95 % of all facts
after every round, injected block <= 800 tokens, in both memory arms. Defaults: N=20,
K=4; ``--quick``: N=5, K=2.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, arg_parser, format_table, say, write_result
from dexai_memory.demo.claude_cli import ClaudeRun, claude_version
from dexai_memory.demo.fakeapi import (
    DEFAULT_COMPACTION_SUMMARY,
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    is_compaction_prompt,
    last_user_text,
    text_of,
)
from dexai_memory.recall.block import FENCE_CLOSE, FENCE_OPEN
from dexai_memory.text.tokens import count_tokens

NAME = "compaction"
USER = "bench"
#: The fake model's compaction summary: keeps nothing of the conversation.
SUMMARY = DEFAULT_COMPACTION_SUMMARY
#: ``--autocompact`` window (the CLI's minimum) and the usage that pushes it over.
AUTOCOMPACT_WINDOW = 100_000
AUTOCOMPACT_USAGE = 90_000
FACTS_PER_PROMPT = 4
#: Injected-block target (tokens).
BLOCK_TARGET = 800
#: Importance a pinned fact is stored with.
PIN_IMPORTANCE = 8

KIND_TYPES = {"preference": "PREFERENCE", "decision": "FACT", "warning": "INSIGHT", "commitment": "COMMITMENT"}
KIND_CATEGORIES = {"preference": "preference", "decision": "fact", "warning": "warning", "commitment": "goal"}


@dataclass(frozen=True)
class PlantedFact:
    """One fact the user plants early in the session."""

    key: str
    kind: str
    """preference | decision | warning | commitment"""
    channel: str
    """pin | remember | prompt (how it reaches the store in the *with* arm)"""
    token: str
    """The distinctive word whose presence counts as the fact being present."""
    said: str
    """What the user says in the planting prompt (first person)."""
    stored: str
    """The memory text for the ``pin`` and ``remember`` channels."""

    @property
    def pinned(self) -> bool:
        return self.channel == "pin"

    @property
    def high(self) -> bool:
        """Must rank high (importance >= 7 in the store): preferences, warnings, decisions."""
        return self.kind in ("preference", "warning", "decision")

    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"(?<![A-Za-z0-9]){re.escape(self.token)}(?![A-Za-z0-9])", re.IGNORECASE)


def _f(key: str, kind: str, channel: str, token: str, said: str, stored: str) -> PlantedFact:
    return PlantedFact(key, kind, channel, token, said, stored)


#: The planted facts; any prefix mixes kinds and channels (``--quick`` takes the first 5).
FACTS: tuple[PlantedFact, ...] = (
    _f("f01", "preference", "pin", "Vellichor",
       "I prefer the Vellichor colour theme in every editor screenshot.",
       "The user prefers the Vellichor colour theme in editor screenshots."),
    _f("f02", "decision", "prompt", "Tarnwick",
       "We decided to keep user sessions in the Tarnwick cache instead of Redis.",
       "Sessions are kept in the Tarnwick cache instead of Redis."),
    _f("f03", "warning", "remember", "Grimsby",
       "Never run the Grimsby migration on a Friday, it locks the orders table.",
       "Never run the Grimsby migration on a Friday: it locks the orders table."),
    _f("f04", "commitment", "prompt", "Obelisk",
       "I will send the Obelisk load-test report to Priya by next Tuesday.",
       "The user will send the Obelisk load-test report to Priya by next Tuesday."),
    _f("f05", "preference", "remember", "Zanderfell",
       "I prefer squash merges with the Zanderfell ticket prefix in every commit title.",
       "The user prefers squash merges with the Zanderfell ticket prefix in commit titles."),
    _f("f06", "decision", "pin", "Halvorsen",
       "We chose Postgres 16 with the Halvorsen extension for full-text search.",
       "The project uses Postgres 16 with the Halvorsen extension for full-text search."),
    _f("f07", "warning", "prompt", "Brackwater",
       "Be careful: the Brackwater staging cluster shares its database with production.",
       "The Brackwater staging cluster shares its database with production."),
    _f("f08", "commitment", "remember", "Fennimore",
       "I promised to rotate the Fennimore certificates before the end of the month.",
       "Rotate the Fennimore certificates before the end of the month."),
    _f("f09", "preference", "prompt", "Ravensby",
       "I prefer short bullet-point answers that link the Ravensby style guide.",
       "The user prefers short bullet-point answers linking the Ravensby style guide."),
    _f("f10", "decision", "remember", "Solenne",
       "We decided the mobile app will use the Solenne design system.",
       "The mobile app will use the Solenne design system."),
    _f("f11", "warning", "pin", "Cobbleton",
       "Never deploy the Cobbleton service unless its feature flag is off.",
       "Never deploy the Cobbleton service unless its feature flag is off."),
    _f("f12", "commitment", "prompt", "Wexford",
       "I'm going to pair with Ignatius on the Wexford importer on Monday.",
       "The user will pair with Ignatius on the Wexford importer on Monday."),
    _f("f13", "preference", "remember", "Ottoline",
       "I like pytest fixtures named after the Ottoline convention.",
       "The user likes pytest fixtures named after the Ottoline convention."),
    _f("f14", "decision", "prompt", "Dunmore",
       "We settled on four replicas for the Dunmore worker pool.",
       "The Dunmore worker pool runs four replicas."),
    _f("f15", "warning", "remember", "Pellucid",
       "Watch out: the Pellucid API allows only 30 requests per minute.",
       "The Pellucid API allows only 30 requests per minute; stay under it."),
    _f("f16", "commitment", "pin", "Larkspur",
       "I committed to finishing the Larkspur billing export this week.",
       "The user will finish the Larkspur billing export this week."),
    _f("f17", "preference", "prompt", "Thistlewood",
       "I prefer alerts on the Thistlewood dashboard rather than by email.",
       "The user prefers alerts on the Thistlewood dashboard rather than by email."),
    _f("f18", "decision", "pin", "Merriwether",
       "We agreed to drop support for the Merriwether legacy client in version 3.",
       "Support for the Merriwether legacy client is dropped in version 3."),
    _f("f19", "warning", "prompt", "Ashcombe",
       "Don't touch the Ashcombe cron job, it feeds the finance reports.",
       "Do not touch the Ashcombe cron job: it feeds the finance reports."),
    _f("f20", "commitment", "remember", "Quarrington",
       "I need to review the Quarrington parser pull request tomorrow.",
       "Review the Quarrington parser pull request tomorrow."),
)

#: Filler requests: generic work sharing no distinctive word with any fact.
FILLERS = (
    "Rename the helper functions in utils.py to clearer names.",
    "Add type hints to the config loader.",
    "Write a docstring for the retry decorator.",
    "Explain the difference between a list and a tuple in Python.",
    "Refactor the argument parser into smaller functions.",
    "Fix the typo in the README installation section.",
    "Sort the imports in the main module.",
    "Add a unit test for the string slugify helper.",
    "Replace the print calls in the scripts folder with logging.",
    "Summarise what the iterator protocol requires.",
    "Make the progress bar show the elapsed time.",
    "Split the long function in parser.py into two.",
    "Convert the constants module to use an enum.",
    "Tidy the whitespace in the templates directory.",
)
PLANT_INTRO = "Some context for this project before we start."


@dataclass(frozen=True)
class Scenario:
    facts: tuple[PlantedFact, ...]
    rounds: int
    fillers: int

    def planting_prompts(self) -> list[str]:
        groups = [self.facts[i:i + FACTS_PER_PROMPT] for i in range(0, len(self.facts), FACTS_PER_PROMPT)]
        return [" ".join([PLANT_INTRO, *(f.said for f in g)]) for g in groups]


@dataclass
class RoundResult:
    round: int
    trigger: str
    present: dict[str, bool]
    in_block: dict[str, bool]
    outside: dict[str, bool]
    block_tokens: list[int]
    wall_s: float
    request_index: int
    summary_only: bool
    """The request's conversation starts with the continuation summary (the compaction happened)."""
    blocks: list[str] = field(default_factory=list)
    """The ``<dexai-memory>`` blocks of that request."""

    def share(self, facts: Sequence[PlantedFact]) -> float | None:
        if not facts:
            return None
        return sum(self.present[f.key] for f in facts) / len(facts)


@dataclass
class ArmResult:
    mode: str
    """without | autostart | own-daemon"""
    before: dict[str, bool] = field(default_factory=dict)
    """Presence in the last request before the first compaction (sanity: all present)."""
    rounds: list[RoundResult] = field(default_factory=list)
    setup_s: float = 0.0
    wall_s: float = 0.0
    runs: int = 0
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def with_memory(self) -> bool:
        return self.mode != "without"


#: The arms, in the order they run.
ARMS = ("without", "autostart", "own-daemon")


# --------------------------------------------------------------------------- measuring


def memory_blocks(text: str) -> list[str]:
    """The ``<dexai-memory>`` blocks in ``text``."""
    return re.findall(re.escape(FENCE_OPEN) + r".*?" + re.escape(FENCE_CLOSE), text, flags=re.S)


def outside_blocks(text: str) -> str:
    return re.sub(re.escape(FENCE_OPEN) + r".*?" + re.escape(FENCE_CLOSE), "", text, flags=re.S)


def presence(text: str, facts: Sequence[PlantedFact]) -> tuple[dict[str, bool], dict[str, bool], dict[str, bool]]:
    """(present anywhere, present inside a memory block, present outside blocks) per fact key."""
    blocks = "\n".join(memory_blocks(text))
    rest = outside_blocks(text)
    return ({f.key: bool(f.pattern().search(text)) for f in facts},
            {f.key: bool(f.pattern().search(blocks)) for f in facts},
            {f.key: bool(f.pattern().search(rest)) for f in facts})


def compaction_indices(requests: Sequence[RecordedRequest]) -> list[int]:
    return [i for i, r in enumerate(requests) if is_compaction_prompt(r.body)]


# --------------------------------------------------------------------------- the with-memory store


def memory_env(home: Path) -> dict[str, str]:
    """Environment of the CLI, its hooks, the daemon and ``dexai memory``: the store in ``home``, and the
    offline extractor (what a user without an API key gets once the sign-in's daily token budget is spent,
    or with no sign-in; the fake API cannot play Haiku for the sign-in path)."""
    return {"DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": USER, "DEXAI_MEMORY_HOOK_DEBUG": "1",
            "DEXAI_EXTRACTOR": "offline",
            "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}


def _child_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env.update(memory_env(home), ORT_DISABLE_TELEMETRY="1", PYTHONWARNINGS="ignore")
    return env


def _dexai(*args: str, home: Path) -> Any:
    """Run ``dexai ARGS --json`` and return its parsed output."""
    proc = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", *args, "--json"], env=_child_env(home),
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dexai {' '.join(args[:2])} failed: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- one arm


def _answering(prompt: str) -> Callable[[dict[str, Any]], bool]:
    """Predicate: an ordinary (non-compaction) request whose last user turn is ``prompt``."""
    return lambda body: not is_compaction_prompt(body) and prompt in last_user_text(body)


def run_arm(scenario: Scenario, *, mode: str, tmp: Path, timeout: float = 180.0) -> ArmResult:
    """Run the scripted session once (``mode``: without | autostart | own-daemon) and measure every round."""
    from dexai_memory.config import load_settings
    from dexai_memory.daemon.control import lock_held, spawn, stop, wait_until_answering

    arm = ArmResult(mode=mode)
    facts = scenario.facts
    home = tmp / "memory"
    home.mkdir(parents=True)
    t_arm = time.monotonic()
    try:
        with FakeMessagesAPI(compaction_summary=SUMMARY) as api:
            env = memory_env(home)
            env["DEXAI_DAEMON_AUTOSTART"] = "1" if mode == "autostart" else "0"
            if mode == "own-daemon":  # the user's own daemon, started before the session
                settings = load_settings(home=home)
                spawn(settings, reason="the user's own daemon")
                if not wait_until_answering(settings, 60):
                    raise RuntimeError(f"the daemon did not start (see {home / 'daemon.log'})")
            if not arm.with_memory:
                env["DEXAI_MEMORY_DISABLED"] = "1"  # belt and braces: no plugin is loaded anyway
            run = ClaudeRun(home=tmp / "claude-home", base_url=api.base_url, cwd=tmp / "project",
                            plugin_dirs=[REPO_ROOT] if arm.with_memory else [], env=env,
                            autocompact=AUTOCOMPACT_WINDOW, timeout=timeout, auth="token")

            def turn(prompt: str, *, first: bool = False) -> None:
                res = run(prompt) if first else run.resume(prompt)
                arm.runs += 1
                if not res.ok:
                    raise RuntimeError(f"claude failed on {prompt[:40]!r}: {res.stderr.strip()[-800:]}")

            t0 = time.monotonic()
            prompts = scenario.planting_prompts()
            for i, prompt in enumerate(prompts):
                turn(prompt, first=i == 0)
            arm.setup_s = time.monotonic() - t0
            fillers = iter(FILLERS * (1 + (scenario.rounds * (scenario.fillers + 1)) // len(FILLERS)))
            for rnd in range(1, scenario.rounds + 1):
                trigger = "manual" if rnd % 2 == 1 else "auto"
                t_round = time.monotonic()
                for j in range(scenario.fillers):
                    prompt = next(fillers)
                    if trigger == "auto" and j == scenario.fillers - 1:
                        api.enqueue(Reply(text="Done.", input_tokens=AUTOCOMPACT_USAGE), when=_answering(prompt))
                    turn(prompt)
                if rnd == 1:
                    requests = api.message_requests()
                    arm.before = presence(text_of(requests[-1]), facts)[0]
                n_compactions = len(compaction_indices(api.message_requests()))
                if trigger == "manual":
                    res = run.resume("/compact")
                    arm.runs += 1
                    if not res.ok:
                        raise RuntimeError(f"/compact failed: {res.stderr.strip()[-800:]}")
                turn(next(fillers))  # manual: the first prompt after /compact; auto: the turn that compacts
                requests = api.message_requests()
                idx = compaction_indices(requests)
                if len(idx) != n_compactions + 1:
                    raise RuntimeError(f"round {rnd} ({trigger}): expected one compaction request, "
                                       f"saw {len(idx) - n_compactions}")
                after = requests[idx[-1] + 1]
                text = text_of(after)
                present, in_block, outside = presence(text, facts)
                arm.rounds.append(RoundResult(
                    round=rnd, trigger=trigger, present=present, in_block=in_block, outside=outside,
                    block_tokens=[count_tokens(b) for b in memory_blocks(text)], blocks=memory_blocks(text),
                    wall_s=time.monotonic() - t_round, request_index=idx[-1] + 1,
                    summary_only="This session is being continued from a previous conversation" in text))
                say(f"  {mode}, round {rnd} ({trigger}): "
                    f"{sum(present.values())}/{len(facts)} present, "
                    f"{time.monotonic() - t_round:.1f}s")
            if arm.with_memory:
                arm.diagnostics["daemon_ran"] = lock_held(load_settings(home=home))
                arm.diagnostics.update(asyncio.run(diagnose(scenario, arm, home, api, session_id=run.last_session_id)))
    finally:
        if arm.with_memory:
            stop(load_settings(home=home), timeout=15)  # the daemon the hooks started, if any
    arm.wall_s = time.monotonic() - t_arm
    return arm


# --------------------------------------------------------------------------- diagnosis


async def diagnose(scenario: Scenario, arm: ArmResult, home: Path, api: FakeMessagesAPI,
                   session_id: str | None) -> dict[str, Any]:
    """Where each planted fact stands in the store and, for every miss, which stage lost it."""
    from dexai_memory.capture.gate import Gate
    from dexai_memory.capture.queue import ExtractionQueue
    from dexai_memory.config import load_settings
    from dexai_memory.extraction.offline import OfflineExtractor
    from dexai_memory.models import SearchFilters, Turn
    from dexai_memory.providers import make_provider
    from dexai_memory.recall.block import (
        BlockInputs,
        budgets_of,
        compose_block,
        gather_block_inputs,
        profile_of,
    )
    from dexai_memory.recall.ranking import FENCE_TOKENS

    settings = load_settings(home=home)
    facts = scenario.facts
    out: dict[str, Any] = {"facts": {}, "misses": []}
    async with make_provider(settings) as provider:
        stored = await provider.list(user_id=USER, filters=SearchFilters(), limit=1000)
        everything = await provider.list(user_id=USER, filters=SearchFilters(valid_only=False,
                                                                             include_archived=True), limit=5000)
        valid_ids = {m.id for m in stored}
        by_id = {m.id: m for m in everything}
        lost: dict[str, list[dict[str, Any]]] = {}
        for f in facts:
            for m in everything:
                if m.id in valid_ids or not f.pattern().search(m.content):
                    continue
                events = await provider.events(m.id, user_id=USER)
                why = next((e for e in reversed(events) if e.related_id or e.reason), None)
                successor = by_id.get(m.superseded_by or "")
                lost.setdefault(f.key, []).append({
                    "id": m.id, "type": m.type.value, "pinned": m.pinned, "content": m.content,
                    "superseded_by": m.superseded_by,
                    "successor": successor.content if successor else None,
                    "archived": m.archived,
                    "reason": f"{why.action}: {why.reason}" if why else None})
        out["store"] = {"memories": len(stored),
                        "by_type": {t: sum(m.type.value == t for m in stored)
                                    for t in sorted({m.type.value for m in stored})}}
        inputs = await gather_block_inputs(provider, user_id=USER, relevant=[],
                                           commitments_due_days=settings.l1_block.commitments_due_days,
                                           session_id=session_id)
        block = compose_block(inputs, budgets=budgets_of(settings.l1_block),
                              max_tokens=sum(budgets_of(settings.l1_block)) + FENCE_TOKENS)
    # What-if: every durable memory in pinned/importance order, one section, within the 800-token target.
    durable = [m for m in profile_of(stored) if m.type.value not in ("SNAPSHOT", "TRANSCRIPT")]
    fill = compose_block(BlockInputs(relevant=durable), budgets=(0, BLOCK_TARGET - FENCE_TOKENS, 0, 0),
                         max_tokens=BLOCK_TARGET)
    out["whatif_importance_fill"] = {
        "max_tokens": BLOCK_TARGET, "tokens": fill.tokens, "memories": len(fill.items),
        "facts_present": sum(bool(f.pattern().search(fill.text)) for f in facts)}
    sections = {"profile": [m.id for m in inputs.profile], "commitments": [m.id for m in inputs.commitments]}
    kept = {i.memory.id: i.section for i in block.items}
    gate = Gate(settings.extraction.gate_threshold)
    prompts = scenario.planting_prompts()
    extractor = OfflineExtractor()
    notes = {p: await extractor.extract([Turn(id=f"plant-{i}", user_id=USER, content=p, role="user")])
             for i, p in enumerate(prompts)}
    for f in facts:
        mems = [m for m in stored if f.pattern().search(m.content)]
        prompt = next(p for p in prompts if f.said in p)
        info: dict[str, Any] = {
            "kind": f.kind, "channel": f.channel, "token": f.token, "high": f.high,
            "memories": [{"id": m.id, "type": m.type.value, "importance": m.importance, "pinned": m.pinned,
                          "tier": m.tier.value, "content": m.content} for m in mems],
            "eligible": sorted({s for m in mems for s, ids in sections.items() if m.id in ids}),
            "in_l1_block_now": sorted({kept[m.id] for m in mems if m.id in kept}),
            "planting_prompt_gate": round(gate.score(prompt, []).score, 3),
            "planting_prompt_gate_passed": gate.score(prompt, []).passed,
            "lost": lost.get(f.key, []),
            "extracted_from_prompt": [f"{n.type.value} {n.importance}: {n.content}" for n in notes[prompt]
                                      if f.pattern().search(n.content)],
        }
        out["facts"][f.key] = info
    with ExtractionQueue.from_settings(settings) as queue:
        out["queue"] = queue.stats().to_dict()
        out["dead_letters"] = [d.to_dict() for d in queue.dead_letters()]
    log = home / "hooks.log"
    log_text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    out["hook_log"] = {"queued_for_replay": log_text.count("queued for it to replay"),
                       "daemon_failures": log_text.count("failed"),
                       "errors": [ln for ln in log_text.splitlines() if " ERROR " in ln][-5:]}
    for r in arm.rounds:
        for f in facts:
            if r.present[f.key]:
                continue
            info = out["facts"][f.key]
            out["misses"].append({"round": r.round, "trigger": r.trigger, "fact": f.key, "kind": f.kind,
                                  "channel": f.channel, "token": f.token, "stage": miss_stage(info)})
    return out


def miss_stage(info: dict[str, Any]) -> str:
    """Which stage lost a fact that did not reach the model after a compaction."""
    mems = info["memories"]
    if not mems and info["lost"]:
        lost = info["lost"][0]
        if lost["superseded_by"]:
            return (f"supersession: {'pinned ' if lost['pinned'] else ''}{lost['id']} ({lost['type']}) was "
                    f"superseded by {lost['superseded_by']} {lost['successor']!r}"
                    + (f" - {lost['reason']}" if lost["reason"] else ""))
        return f"store: {lost['id']} is no longer valid (archived={lost['archived']})"
    if not mems:
        if not info["planting_prompt_gate_passed"]:
            return "capture: the gate rejected the planting prompt"
        if not info["extracted_from_prompt"]:
            return ("extraction: the offline extractor makes no note holding the token from the planting "
                    "prompt (the gate passed it; no superseded or archived memory holds it either)")
        return "store: the extractor keeps it, but no memory holding the token was ever stored"
    if not info["eligible"]:
        types = sorted({m["type"] for m in mems})
        return (f"selection: stored as {'/'.join(types)} (importance {max(m['importance'] for m in mems)}, "
                "not pinned, not L1) - not eligible for the post-compaction block's profile or commitments, "
                "so it returns only when relevant to the last prompt, which was unrelated")
    if not info["in_l1_block_now"]:
        return f"budget: eligible for {'/'.join(info['eligible'])} but cut by the section/block token budget"
    return "injection: in the block recomputed now, but absent from the request (hook path or timing)"


# --------------------------------------------------------------------------- report


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100.0 * x, 1)


def summarize(scenario: Scenario, arms: dict[str, ArmResult]) -> dict[str, Any]:
    facts = scenario.facts
    high = [f for f in facts if f.high]
    wo = arms["without"]
    summary: dict[str, Any] = {"facts": len(facts), "rounds": len(wo.rounds)}
    for r in wo.rounds:
        summary[f"without_pct_r{r.round}"] = _pct(r.share(facts))
    summary["without_last_pct"] = _pct(wo.rounds[-1].share(facts))
    met = True
    for mode in ARMS[1:]:
        arm = arms[mode]
        for r in arm.rounds:
            summary[f"{mode}_pct_r{r.round}"] = _pct(r.share(facts))
            summary[f"{mode}_high_pct_r{r.round}"] = _pct(r.share(high))
            summary[f"{mode}_max_block_tokens_r{r.round}"] = max(r.block_tokens, default=0)
        summary[f"{mode}_min_pct"] = min(_pct(r.share(facts)) or 0.0 for r in arm.rounds)
        summary[f"{mode}_high_min_pct"] = min(_pct(r.share(high)) or 0.0 for r in arm.rounds) if high else None
        summary[f"{mode}_max_block_tokens"] = max((t for r in arm.rounds for t in r.block_tokens), default=0)
        summary[f"{mode}_wall_s"] = round(arm.wall_s, 1)
        summary[f"{mode}_daemon_ran"] = arm.diagnostics.get("daemon_ran")
        met = met and summary[f"{mode}_min_pct"] >= 95.0 and (summary[f"{mode}_high_min_pct"] or 100.0) >= 100.0 \
            and summary[f"{mode}_max_block_tokens"] <= BLOCK_TARGET
    summary["without_wall_s"] = round(wo.wall_s, 1)
    summary["targets_met"] = "yes" if met else "no"
    return summary


def render(scenario: Scenario, arms: dict[str, ArmResult]) -> str:
    facts = scenario.facts
    high = [f for f in facts if f.high]
    wo = arms["without"]
    rows = [["0 (before)", "-", _pct(sum(wo.before.values()) / len(facts)),
             *[_pct(sum(arms[m].before.values()) / len(facts)) for m in ARMS[1:]], None, None, None]]
    auto, inline = arms["autostart"], arms["own-daemon"]
    for r_wo, r_a, r_i in zip(wo.rounds, auto.rounds, inline.rounds, strict=True):
        rows.append([str(r_a.round), r_a.trigger, _pct(r_wo.share(facts)), _pct(r_a.share(facts)),
                     _pct(r_i.share(facts)), f"{_pct(r_a.share(high))} / {_pct(r_i.share(high))}",
                     f"{max(r_a.block_tokens, default=0)} / {max(r_i.block_tokens, default=0)}",
                     f"{r_a.wall_s:.1f} / {r_i.wall_s:.1f}"])
    table = format_table(
        ["round", "trigger", "without %", "autostart %", "own daemon %", "high % (auto / own)",
         "max block tok", "wall s"], rows,
        title=f"Compaction survival as installed: {len(facts)} facts said in the conversation "
              f"({len(high)} that must rank high), {len(wo.rounds)} compactions, summary {SUMMARY!r}")
    lines = [table]
    for mode in ARMS[1:]:
        arm = arms[mode]
        misses = arm.diagnostics.get("misses") or []
        if misses:
            lines += ["", f"Facts missing ({mode}; fact [kind] rounds -> the stage that lost it):"]
            grouped: dict[tuple[str, str, str], list[int]] = {}
            for m in misses:
                grouped.setdefault((m["token"], m["kind"], m["stage"]), []).append(m["round"])
            for (token, kind, stage), rounds in grouped.items():
                lines.append(f"  {token} [{kind}] r{','.join(map(str, rounds))} -> {stage}")
        leaked = sorted({f.token for r in arm.rounds for f in facts if r.outside[f.key]})
        if leaked:
            lines += ["", f"{mode}: present outside memory blocks (messages kept verbatim): {', '.join(leaked)}"]
    return "\n".join(lines)


def arm_dict(arm: ArmResult, facts: Sequence[PlantedFact]) -> dict[str, Any]:
    return {
        "mode": arm.mode,
        "setup_s": round(arm.setup_s, 2),
        "wall_s": round(arm.wall_s, 2),
        "claude_runs": arm.runs,
        "before_first_compaction_pct": _pct(sum(arm.before.values()) / len(facts)) if arm.before else None,
        "rounds": [{
            "round": r.round, "trigger": r.trigger, "survival_pct": _pct(r.share(facts)),
            "high_importance_pct": _pct(r.share([f for f in facts if f.high])),
            "block_tokens": r.block_tokens, "wall_s": round(r.wall_s, 2),
            "continued_from_summary": r.summary_only,
            "blocks": r.blocks,
            "present": sorted(k for k, v in r.present.items() if v),
            "missing": sorted(k for k, v in r.present.items() if not v),
            "in_block": sorted(k for k, v in r.in_block.items() if v),
            "outside_block": sorted(k for k, v in r.outside.items() if v),
        } for r in arm.rounds],
        "diagnostics": arm.diagnostics,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=None, help=f"facts to plant (default 20; quick 5; max {len(FACTS)})")
    parser.add_argument("--rounds", type=int, default=None, help="compactions (default 4; quick 2)")
    parser.add_argument("--fillers", type=int, default=None, help="filler turns before each compaction (default 3; quick 2)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (stores, transcripts, logs)")
    args = parser.parse_args(argv)
    n = args.facts or (5 if args.quick else 20)
    if not 1 <= n <= len(FACTS):
        parser.error(f"--facts must be between 1 and {len(FACTS)}")
    scenario = Scenario(facts=FACTS[:n], rounds=args.rounds or (2 if args.quick else 4),
                        fillers=args.fillers or (2 if args.quick else 3))
    tmp = Path(tempfile.mkdtemp(prefix="dexai-compaction-bench-"))
    try:
        arms: dict[str, ArmResult] = {}
        for mode in ARMS:
            say(f"{mode}: {n} facts, {scenario.rounds} compactions ...")
            arms[mode] = run_arm(scenario, mode=mode, tmp=tmp / mode)
    finally:
        if args.keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(render(scenario, arms))
    params = {"facts": n, "rounds": scenario.rounds, "fillers_per_round": scenario.fillers,
              "facts_per_prompt": FACTS_PER_PROMPT, "summary": SUMMARY, "claude_version": claude_version(),
              "autocompact_window": AUTOCOMPACT_WINDOW, "block_target_tokens": BLOCK_TARGET,
              "channels": {c: sum(f.channel == c for f in scenario.facts) for c in ("pin", "remember", "prompt")},
              "planted": [{"key": f.key, "kind": f.kind, "channel": f.channel, "token": f.token,
                           "high": f.high, "said": f.said} for f in scenario.facts]}
    path = write_result(NAME, quick=args.quick, params=params, summary=summarize(scenario, arms),
                        results={k: arm_dict(a, scenario.facts) for k, a in arms.items()}, out_dir=args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
