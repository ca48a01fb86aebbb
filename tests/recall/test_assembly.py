"""Tiered context assembly and compression levels (issue 18, items 1-2), on a real SQLite store.

Budgets, tier sums, rebalancing by activity, unused budget passed down, the
level chosen for tight and loose budgets, the focused file's decision in tier
1, contradictions and error fixes, forms stored by consolidation and by
another writer (an episode), and the public Python entry point.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.consolidation import consolidate
from dexai_memory.errors import InvalidSignals
from dexai_memory.models import Contradiction, Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.assembly import TIERS, assemble_context, tier_budgets, tier_shares
from dexai_memory.recall.block import FENCE_TOKENS
from dexai_memory.recall.focus import Focus
from dexai_memory.recall.forms import FORMS_KEY, FORMS_OF_KEY, build_forms, content_key, forms_of
from dexai_memory.text.tokens import count_tokens

U = "dev"
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
DECISION = ("In src/payments/refund.py refunds are issued through the ledger service instead of calling Stripe "
            "directly, because partial refunds must be reconciled nightly. The old direct path was removed.")


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(settings.db_path, embedder=None) as p:
        yield p


def mem(content: str, type: MemoryType = MemoryType.FACT, *, category: str | None = None, importance: int = 7,
        minutes: int = 0, **meta: object) -> Memory:
    metadata = {**meta, **({"category": category} if category else {})}
    return Memory(content=content, user_id=U, type=type, importance=importance, metadata=metadata,
                  created_at=NOW - timedelta(minutes=minutes))


async def seed(store: NativeProvider, facts: int = 30) -> dict[str, Memory]:
    named = {
        "decision": mem(DECISION, category="decision", importance=8),
        "warning": mem("Never run the billing migrations without a fresh backup.", MemoryType.INSIGHT,
                       category="warning", importance=8),
        "instruction": mem("Always run make check before pushing.", MemoryType.INSIGHT, category="instruction"),
        "fix": mem("Fixed the TimeoutError in orders/sync.py by raising the pool size to 20.", MemoryType.INSIGHT),
        "preference": mem("The user prefers pytest fixtures over setUp methods.", MemoryType.PREFERENCE),
        "other_file": mem("In src/auth/login.py sessions replaced JWT tokens.", category="decision"),
    }
    for m in named.values():
        await store.add(m)
    for i in range(facts):
        await store.add(mem(f"The reporting job {i} exports warehouse table t{i} to the analytics bucket daily.",
                            importance=5, minutes=i + 1))
    return named


def check_shape(result, budget: int) -> None:  # type: ignore[no-untyped-def]
    assert set(result.tiers) == set(TIERS)
    assert result.token_count <= budget
    assert result.token_count == count_tokens(result.context)
    if result.context:
        assert result.token_count == FENCE_TOKENS + sum(result.tiers.values())
    else:
        assert result.token_count == 0 and sum(result.tiers.values()) == 0
    assert len(result.memory_ids) == len(set(result.memory_ids)), "a memory was shown twice"


# --------------------------------------------------------------------------- forms
def test_offline_forms_are_deterministic_and_shrink() -> None:
    forms = build_forms(DECISION)
    assert forms == build_forms(DECISION)
    assert set(forms) == {"summary", "compressed", "index"}
    assert forms["summary"].startswith("In src/payments/refund.py refunds are issued")
    assert "The old direct path" not in forms["summary"]  # first sentence only
    assert "src/payments/refund.py" in forms["compressed"] and " the " not in forms["compressed"]
    assert "refund.py" in forms["index"] and len(forms["index"].split()) <= 3
    sizes = [count_tokens(DECISION), *(count_tokens(forms[k]) for k in ("summary", "compressed", "index"))]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < sizes[0] / 4
    short = build_forms("Never force-push to main.")
    assert short["summary"] == "Never force-push to main." and "main" in short["compressed"]


def test_stored_forms_win_unless_the_content_changed() -> None:
    episode = mem("A long session narrative " * 20, MemoryType.INSIGHT,
                  forms={"summary": "Debugged auth flow.", "compressed": "auth_fix: tz→utc", "index": "auth_tz_fix"})
    f = forms_of(episode)
    assert f.stored and (f.summary, f.compressed, f.index) == ("Debugged auth flow.", "auth_fix: tz→utc",
                                                               "auth_tz_fix")
    built = mem("Old text.", forms={"summary": "Old text.", "compressed": "old", "index": "old"},
                **{FORMS_OF_KEY: content_key("Old text.")})
    edited = built.replace(content="The new text about Kafka partitions.")
    assert forms_of(built).stored and not forms_of(edited).stored
    assert "Kafka" in forms_of(edited).compressed
    broken = mem("Shape matters.", forms={"summary": "", "compressed": 3})
    assert not forms_of(broken).stored


# --------------------------------------------------------------------------- budgets and tiers
@pytest.mark.parametrize("budget", [30, 60, 120, 250, 500, 1000, 3000, 8000])
async def test_always_within_budget_and_tiers_add_up(store: NativeProvider, settings: Settings,
                                                     budget: int) -> None:
    await seed(store)
    signals = {"current_file": "src/payments/refund.py", "recent_errors": ["TimeoutError in orders/sync.py"],
               "query": "warehouse exports and refunds", "activity": "debugging"}
    result = await assemble_context(store, U, settings, budget=budget, signals=signals, now=NOW)
    check_shape(result, budget)
    assert result.budget == budget
    if budget >= 250:
        assert result.tiers["tier1"] > 0 and "refund" in result.context
    if budget <= FENCE_TOKENS:
        assert result.context == ""


async def test_default_budget_and_empty_store(store: NativeProvider, settings: Settings) -> None:
    empty = await assemble_context(store, U, settings)
    assert empty.context == "" and empty.token_count == 0 and empty.budget == settings.assembly.budget_tokens == 8000
    await seed(store, facts=3)
    full = await assemble_context(store, U, settings, signals={"prompt": "what do we know?"})
    check_shape(full, 8000)
    everything = {m.id for m in await store.list(user_id=U, limit=100)}
    assert set(full.memory_ids) == everything  # a loose budget shows (or indexes) every memory


def test_shares_default_and_rebalanced_by_activity(settings: Settings) -> None:
    cfg = settings.assembly
    coding = tier_shares(cfg, "coding")
    assert coding == pytest.approx({"tier1": 0.25, "tier2": 0.375, "tier3": 0.25, "tier4": 0.125})
    debugging = tier_shares(cfg, "debugging")
    assert tier_budgets(8000, debugging) == {"tier1": 3000, "tier2": 2500, "tier3": 1500, "tier4": 1000}
    planning = tier_shares(cfg, "planning")
    assert planning["tier2"] < coding["tier2"] and planning["tier3"] > coding["tier3"]
    assert sum(tier_budgets(7777, debugging).values()) == 7777
    assert Focus.parse({"activity": "Debug"}).activity == "debugging"
    assert Focus.parse({"activity": "gardening"}).activity == "coding"


async def test_debugging_gives_tier1_more(store: NativeProvider, settings: Settings) -> None:
    for i in range(12):
        await store.add(mem(f"In src/payments/refund.py step {i} validates currency code and amount {i} before "
                            f"posting to the ledger, with a retry budget of {i} attempts.", category="decision"))
    signals = {"current_file": "src/payments/refund.py"}
    coding = await assemble_context(store, U, settings, budget=700, signals={**signals, "activity": "coding"})
    debugging = await assemble_context(store, U, settings, budget=700, signals={**signals, "activity": "debugging"})
    check_shape(coding, 700)
    check_shape(debugging, 700)
    assert debugging.budgets["tier1"] > coding.budgets["tier1"]
    assert debugging.tiers["tier1"] > coding.tiers["tier1"]
    shown = lambda r: sum(p.tier == "tier1" for p in r.placements)  # noqa: E731
    assert shown(debugging) >= shown(coding)


async def test_unused_budget_is_passed_down(store: NativeProvider, settings: Settings) -> None:
    for i in range(40):  # background only: no file, task, error or instruction to fill tier 1
        await store.add(mem(f"The reporting job {i} exports warehouse table t{i} to the analytics bucket.",
                            importance=6, minutes=i))
    result = await assemble_context(store, U, settings, budget=1000, signals={})
    check_shape(result, 1000)
    assert result.tiers["tier1"] == 0 and result.tiers["tier2"] == 0
    assert result.tiers["tier3"] > result.budgets["tier3"]  # it got tier 1's and tier 2's budget too
    assert result.tiers["tier3"] <= sum(result.budgets[t] for t in ("tier1", "tier2", "tier3"))


# --------------------------------------------------------------------------- levels
async def test_level_follows_the_budget(store: NativeProvider, settings: Settings) -> None:
    """DECISION's tier 1 line costs 65 tokens full, 50 as its summary, 37 compressed; the tier's
    title 12. Tier 1 gets 25 % of what the 35-token fence leaves."""
    await store.add(mem(DECISION, category="decision"))
    signals = {"current_file": "src/payments/refund.py"}
    levels = {}
    for budget in (2000, 290, 235):
        result = await assemble_context(store, U, settings, budget=budget, signals=signals)
        check_shape(result, budget)
        assert [p.tier for p in result.placements] == ["tier1"]
        levels[budget] = result.placements[0].level
        shown = DECISION if levels[budget] == "full" else build_forms(DECISION)[levels[budget]]
        assert shown in result.context
    assert levels == {2000: "full", 290: "summary", 235: "compressed"}
    tiny = await assemble_context(store, U, settings, budget=FENCE_TOKENS + 25, signals=signals)
    check_shape(tiny, FENCE_TOKENS + 25)
    assert [(p.tier, p.level) for p in tiny.placements] == [("tier4", "index")]  # still findable by topic
    assert build_forms(DECISION)["index"] in tiny.context


async def test_stored_forms_are_what_is_shown(store: NativeProvider, settings: Settings) -> None:
    narrative = "We spent the session on the auth flow. " * 30
    await store.add(mem(narrative, MemoryType.INSIGHT, category="decision",
                        forms={"summary": "Debugged the auth flow: token expiry used local time, now UTC.",
                               "compressed": "auth_fix: tz→utc, +test", "index": "auth_tz_fix"}))
    result = await assemble_context(store, U, settings, budget=FENCE_TOKENS + 30, signals={"task": "auth flow"})
    check_shape(result, FENCE_TOKENS + 30)
    assert "auth_fix: tz→utc, +test" in result.context or "auth_tz_fix" in result.context


# --------------------------------------------------------------------------- tier 1
async def test_file_signal_puts_its_decision_in_tier1(store: NativeProvider, settings: Settings) -> None:
    named = await seed(store, facts=60)
    result = await assemble_context(store, U, settings, budget=1500,
                                    signals={"current_file": "src/payments/refund.py", "activity": "coding"})
    check_shape(result, 1500)
    first = result.placements[0]
    assert (first.memory_id, first.tier, first.kind) == (named["decision"].id, "tier1", "decision: refund.py")
    tier_of = {p.memory_id: p.tier for p in result.placements}
    assert tier_of[named["warning"].id] == "tier1" and tier_of[named["instruction"].id] == "tier1"
    assert tier_of.get(named["other_file"].id) != "tier1"  # another file's decision is not critical
    other = await assemble_context(store, U, settings, budget=1500, signals={"current_file": "src/auth/login.py"})
    assert other.placements[0].memory_id == named["other_file"].id
    by_module = await assemble_context(store, U, settings, budget=1500, signals={"current_file": "payments/refund"})
    assert by_module.placements[0].memory_id == named["decision"].id


async def test_open_contradictions_and_error_fixes_are_critical(store: NativeProvider, settings: Settings) -> None:
    named = await seed(store, facts=5)
    a = await store.add(mem("The staging database is Postgres 15."))
    b = await store.add(mem("The staging database is Postgres 16."))
    assert store.contradiction_log is not None
    await store.contradiction_log.add(Contradiction(U, a.id, b.id, "version"))
    result = await assemble_context(store, U, settings, budget=2000,
                                    signals={"recent_errors": ["TimeoutError raised in orders/sync.py"]})
    check_shape(result, 2000)
    tier1 = [(p.memory_id, p.kind) for p in result.placements if p.tier == "tier1"]
    assert tier1[:2] == [(a.id, "open conflict"), (b.id, "open conflict")]
    assert (named["fix"].id, "fix") in tier1
    assert "Postgres 15. vs. The staging database is Postgres 16." in result.context


async def test_bad_signals_and_budgets_are_refused(store: NativeProvider, settings: Settings) -> None:
    with pytest.raises(InvalidSignals, match="recent_errors"):
        await assemble_context(store, U, settings, signals={"recent_errors": [1, 2]})
    with pytest.raises(InvalidSignals, match="budget"):
        await assemble_context(store, U, settings, budget=0)
    with pytest.raises(InvalidSignals, match="signals"):
        await assemble_context(store, U, settings, signals=["not", "an", "object"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------- consolidation
async def test_consolidation_builds_forms(store: NativeProvider, settings: Settings) -> None:
    named = await seed(store, facts=3)
    episode = await store.add(mem("Session narrative. " * 10, MemoryType.INSIGHT,
                                  forms={"summary": "s", "compressed": "c", "index": "i"}))
    dry = await consolidate(store, U, settings, None, dry_run=True)
    assert dry.forms_built == len(named) + 3 and dry.to_dict()["forms_built"] == dry.forms_built
    assert FORMS_KEY not in (await store.get(named["decision"].id, user_id=U)).metadata  # a dry run writes nothing
    report = await consolidate(store, U, settings, None)
    assert report.forms_built == len(named) + 3
    stored = await store.get(named["decision"].id, user_id=U)
    assert stored.metadata[FORMS_KEY] == build_forms(DECISION)
    assert stored.metadata["category"] == "decision"  # the rest of the metadata is kept
    assert (await store.get(episode.id, user_id=U)).metadata[FORMS_KEY] == {"summary": "s", "compressed": "c",
                                                                             "index": "i"}
    assert (await consolidate(store, U, settings, None)).forms_built == 0  # nothing new
    await store.update(named["warning"].id, user_id=U, content="Never run billing migrations on Fridays.")
    assert (await consolidate(store, U, settings, None)).forms_built == 1  # the edited one only
    again = await store.get(named["warning"].id, user_id=U)
    assert forms_of(again).stored and "Fridays" in again.metadata[FORMS_KEY]["compressed"]


async def test_public_entry_point(store: NativeProvider, settings: Settings) -> None:
    import dexai_memory

    assert dexai_memory.assemble_context is assemble_context and "assemble_context" in dexai_memory.__all__
    await seed(store, facts=2)
    result = await dexai_memory.assemble_context(store, U, settings, budget=600,
                                                 signals={"current_file": "src/payments/refund.py"})
    data = result.to_json()
    assert set(data) >= {"context", "token_count", "tiers", "memories"} and data["token_count"] <= 600


async def test_the_recall_tool_expands_an_index_topic(store: NativeProvider, settings: Settings) -> None:
    from dexai_memory.recall.ranking import recall_block

    named = await seed(store, facts=20)
    tiny = await assemble_context(store, U, settings, budget=FENCE_TOKENS + 25, signals={})
    assert [p.tier for p in tiny.placements] == ["tier4"] and "expands these): " in tiny.context
    for m in named.values():  # every named memory's topic key finds it again (BM25 only: no embedder)
        topic = forms_of(m).index
        expanded = await recall_block(store, U, topic, settings)
        assert m.id in [r.memory.id for r in expanded.memories][:3], topic


async def test_background_shows_facts_not_yet_confident_enough_for_the_persistent_context(
        store: NativeProvider, settings: Settings) -> None:
    """A fact added by hand starts at confidence 0.6, under the persistent context's floor: it does not float at
    every session start, but background has room for it before it is reduced to an index key."""
    added = Memory(content="The staging database is db-staging.internal on port 5433", user_id=U,
                   type=MemoryType.FACT, importance=5, confidence=0.6)
    await store.add(added)
    result = await assemble_context(store, U, settings, budget=400)
    assert [(p.memory_id, p.tier) for p in result.placements] == [(added.id, "tier3")]
    assert "db-staging.internal on port 5433" in result.context
    tight = await assemble_context(store, U, settings, budget=FENCE_TOKENS + 25)
    assert [p.level for p in tight.placements] == ["index"]
    assert "db-staging.internal" in tight.context  # the index key keeps the name's hyphen
