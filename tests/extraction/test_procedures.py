"""Procedures and code conventions the session's user states: the offline rules, then through the
doors (a real daemon on a real native store: the hook events of a session, the next session's
L1 block, ``dexai memory assemble`` and ``POST /api/context/assemble``'s function)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.config import Settings, load_settings
from dexai_memory.extraction.haiku import _parse_note
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.models import MemoryType, SearchFilters, Turn
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.assembly import assemble_context
from tests.hook_daemon import context_of, handle, running_daemon

U = "priya"


def notes_of(text: str, *, role: str = "user", speaker: str | None = None) -> list[tuple[str, str | None, str]]:
    turn = Turn(id="t1", user_id=U, content=text, role=role, speaker=speaker)
    return [(n.type.value, n.category, n.content) for n in OfflineExtractor().extract_sync([turn])]


@pytest.mark.parametrize(
    ("said", "content"),
    [
        ("To release, I bump the version in pyproject.toml, tag the commit and push the tag.",
         "To release: bump the version in pyproject.toml, then tag the commit, then push the tag."),
        ("When we cut a release, we first run the full test suite, then build the wheel, then upload it "
         "with twine.",
         "To cut a release: run the full test suite, then build the wheel, then upload it with twine."),
        ("We always run `make lint` before `make test`.", "The team always runs `make lint` before `make test`."),
        ("I usually run ruff, then mypy, then pytest before I push.",
         "The user usually runs ruff, then mypy, then pytest before the user pushes."),
        ("Our deploy process is: run the migrations, then deploy the API, then warm the cache.",
         "Deploy process: run the migrations, then deploy the API, then warm the cache."),
        ("To fix a flaky test: reproduce it with pytest -p no:randomly, then bisect, then add a regression test.",
         "To fix a flaky test: reproduce it with pytest -p no:randomly, then bisect, then add a regression test."),
        ("Release process:\n1. bump the version in pyproject.toml\n2. update CHANGELOG.md\n3. tag vX.Y.Z",
         "Release process: bump the version in pyproject.toml, then update CHANGELOG.md, then tag vX.Y.Z."),
        ("Some context first.\nTo deploy:\n- run the smoke tests\n- deploy with `make ship`",
         "To deploy: run the smoke tests, then deploy with `make ship`."),
        ("Before we merge, we run the tests and update the changelog.",
         "To merge: run the tests, then update the changelog."),
    ],
)
def test_a_workflow_the_user_states_is_one_procedure_with_its_steps_in_order(said: str, content: str) -> None:
    notes = notes_of(said)
    assert ("PROCEDURE", "procedure", content) in notes, notes


@pytest.mark.parametrize(
    ("said", "content"),
    [
        ("We name tests test_<unit>_<case>.", "The team names tests test_<unit>_<case>."),
        ("Errors derive from DexaiMemoryError.", "Errors derive from DexaiMemoryError."),
        ("Use snake_case for module names.", "Use snake_case for module names."),
        ("Name feature branches feat/<ticket>-<short-name>.", "Name feature branches feat/<ticket>-<short-name>."),
        ("Tests live in tests/<package>/ mirroring the source tree.",
         "Tests live in tests/<package>/ mirroring the source tree."),
        ("Every public function has a docstring.", "Every public function has a docstring."),
    ],
)
def test_a_code_convention_the_user_states_is_a_pattern(said: str, content: str) -> None:
    assert notes_of(said) == [("PATTERN", "convention", content)]


@pytest.mark.parametrize(
    "said",
    [
        "First run the tests, then commit.",              # a request for now, no workflow named
        "To fix this, run the migration and restart the server.",  # this one problem
        "To be honest, we run the tests and deploy on Fridays.",   # a way of speaking
        "When you get a chance, fix the test and push.",           # not a workflow's purpose
        "To reproduce: run make test and check the log.",          # the bug at hand
        "Rename this function to parse_config.",
        "Could you name it foo?",
        "Can we always run lint before tests?",
    ],
)
def test_requests_for_now_and_questions_are_no_procedure_or_convention(said: str) -> None:
    assert not [n for n in notes_of(said) if n[0] in ("PROCEDURE", "PATTERN")]


def test_only_the_session_user_is_a_source() -> None:
    said = "To release, I bump the version in pyproject.toml, tag the commit and push the tag."
    assert not [n for n in notes_of(said, role="assistant") if n[0] == "PROCEDURE"]
    assert not [n for n in notes_of(said, speaker="Caroline") if n[0] == "PROCEDURE"]


def test_instructions_stay_instructions() -> None:
    assert notes_of("Always run the linters before pushing to main.") == [
        ("INSIGHT", "instruction", "Always run the linters before pushing to main.")]


def test_the_model_may_answer_the_new_types() -> None:
    note = _parse_note({"content": "To release: bump the version, then tag.", "type": "PROCEDURE"}, ["t1"], None)
    assert note is not None and note.type is MemoryType.PROCEDURE and note.category == "procedure"
    note = _parse_note({"content": "Tests are named test_<unit>_<case>.", "type": "pattern"}, ["t1"], None)
    assert note is not None and note.type is MemoryType.PATTERN and note.category == "convention"


# --------------------------------------------------------------------------- through the doors
SESSION = [
    "To release, I bump the version in pyproject.toml, tag the commit and push the tag.",
    "We name tests test_<unit>_<case>.",
    "Errors derive from OrbitError.",
    "ok thanks",
]


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    return load_settings(home=isolated_home)


async def _a_session(settings: Settings) -> None:
    async with NativeProvider(settings.db_path, embedder=None) as store, running_daemon(settings, store) as daemon:
        for i, prompt in enumerate(SESSION):
            await handle(daemon, "user-prompt-submit", {"session_id": "s1", "prompt": prompt, "prompt_id": f"p{i}"},
                         user=U)
            await handle(daemon, "stop", {"session_id": "s1", "last_assistant_message": "Done."}, user=U)
        assert await daemon.flush()


async def test_a_session_leaves_procedures_and_conventions_for_the_next_one(settings: Settings) -> None:
    await _a_session(settings)
    async with NativeProvider(settings.db_path, embedder=None) as store:
        kept = await store.list(user_id=U, filters=SearchFilters(types=(MemoryType.PROCEDURE, MemoryType.PATTERN)))
        assert sorted((m.type.value, m.content) for m in kept) == [
            ("PATTERN", "Errors derive from OrbitError."),
            ("PATTERN", "The team names tests test_<unit>_<case>."),
            ("PROCEDURE", "To release: bump the version in pyproject.toml, then tag the commit, then push the tag."),
        ]
        async with running_daemon(settings, store) as daemon:
            block = context_of(await handle(daemon, "session-start", {"session_id": "s2", "source": "startup"},
                                            user=U), "SessionStart")
        assert "Procedures (how the user works):\n- To release: bump the version" in block, block
        conventions = block.split("Conventions (how the code is written):", 1)[1]
        assert "test_<unit>_<case>" in conventions and "OrbitError" in conventions

        # the assembled context: the procedure the task names is critical (tier 1)
        out = await assemble_context(store, U, settings, budget=600, signals={"task": "release v2.0"})
        tier1 = {p.memory_id for p in out.placements if p.tier == "tier1" and p.kind == "procedure"}
        procedure = next(m for m in kept if m.type is MemoryType.PROCEDURE)
        assert tier1 == {procedure.id}, out.context
        assert "[procedure] To release: bump the version" in out.context
        # no task: both are background
        out = await assemble_context(store, U, settings, budget=600, signals={"query": "what is the weather"})
        kinds = {p.kind for p in out.placements if p.tier == "tier3"}
        assert {"procedure", "convention"} <= kinds, out.context


def test_dexai_memory_assemble_shows_them(settings: Settings) -> None:
    asyncio.run(_a_session(settings))
    result = CliRunner().invoke(cli, ["memory", "assemble", "--user", U, "--json", "-s", "task=how do we release",
                                      "-b", "500"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert "To release: bump the version in pyproject.toml" in out["context"]
    assert any(m["kind"] == "procedure" and m["tier"] == "tier1" for m in out["memories"]), out


def test_a_procedure_compresses_to_its_purpose_and_a_chain_of_steps() -> None:
    from dexai_memory.recall.forms import build_forms

    forms = build_forms("To release: bump the version in pyproject.toml, then tag the commit, then push the tag.")
    assert forms["compressed"] == "release: bump version pyproject.toml -> tag commit -> push tag"
    assert build_forms("Routine (asked in 2 sessions): run the tests, then commit, then push to main.")[
        "compressed"] == "routine: run tests -> commit -> push main"


def test_a_workflow_inside_a_longer_prompt_is_admitted_and_kept() -> None:
    from dexai_memory.capture.admit import admit
    from dexai_memory.capture.gate import Gate

    said = "Thanks. To release, I bump the version, tag the commit and push the tag. Can you do that now?"
    turn = Turn(id="t1", user_id=U, content=said, role="user", metadata={"source": "claude-code:user"})
    admission = admit(turn, [], Gate(0.3))
    assert admission.passed and admission.turn is not None  # the regex signals alone score it 0
    assert notes_of(said) == [("PROCEDURE", "procedure", "To release: bump the version, then tag the commit, "
                                                         "then push the tag.")]


async def test_a_new_way_to_release_replaces_the_old_one(settings: Settings) -> None:
    said = ["To release, I bump the version in pyproject.toml, tag the commit and push the tag.",
            "To release, I now run the changelog script, bump the version in pyproject.toml and push the tag."]
    async with NativeProvider(settings.db_path, embedder=None) as store, running_daemon(settings, store) as daemon:
        for i, prompt in enumerate(said):
            await handle(daemon, "user-prompt-submit", {"session_id": f"s{i}", "prompt": prompt, "prompt_id": "p"},
                         user=U)
            await handle(daemon, "stop", {"session_id": f"s{i}", "last_assistant_message": "Done."}, user=U)
            assert await daemon.flush()
        kept = await store.list(user_id=U, filters=SearchFilters(types=(MemoryType.PROCEDURE,), valid_only=False))
    current = [m for m in kept if m.is_valid]
    assert [m.content for m in current] == [
        "To release: run the changelog script, then bump the version in pyproject.toml, then push the tag."]
    [old] = [m for m in kept if not m.is_valid]
    assert old.superseded_by == current[0].id  # kept in history
