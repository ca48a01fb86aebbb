"""The house rules, checked on the source (issue 12).

* Imports run one way along the data path: a module imports only families
  further down (``LAYERS``) or its own family, and nothing forms a circle.
* Nothing in the library imports :mod:`dexai_memory.demo` but ``dexai demo``
  (tests and benchmarks may), and nothing in it imports the repository's
  test-only ``testing`` package, which the wheel does not ship.
* No module over 600 lines; no class with more than 30 methods.

Run it alone with ``python -m pytest tests/test_architecture.py``; on failure
it names the offending import, module or class. Imports under
``if TYPE_CHECKING:`` count too: a type a layer needs from above is a sign
the concept lives in the wrong place.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "dexai_memory"
SOURCES = {PACKAGE: REPO / "dexai_memory", f"{PACKAGE}.cli": REPO / "cli"}

# Families from the bottom of the data path (the store and the foundation
# everything shares) to the front ends. A module may import a family of a
# lower rank, or its own family; never one of the same or a higher rank.
LAYERS: tuple[tuple[str, ...], ...] = (
    # the foundation every stage shares
    ("version", "data", "args"),
    ("errors",),
    ("lazy",),                                                      # imports on use; names a missing extra
    ("text",),                                                      # words, token counts, dates, redaction
    ("triggers", "datadir"),
    ("models",),
    ("limits",),
    ("config",),
    ("embeddings",),
    # the data path, from the store up
    ("providers",),                                                 # the store
    ("commitments",),                                               # commitments on the store
    ("supersession",),                                              # deciding ADD/UPDATE/SUPERSEDE/NOOP
    ("lifecycle",),                                                 # caps, eviction, expiry, pins, clear
    ("recall",),                                                    # provider -> ranking -> L1 block
    ("extraction",),                                                # turns -> notes
    ("capture",),                                                   # admit, gate, queue
    ("pipeline",),                                                  # queue -> extraction -> supersession -> store
    ("consolidation", "api_compaction", "agent_tools", "backup", "sessions"),  # services on top of the store
    ("panel",),                                                     # the panel's static files
    ("api",),                                                       # the local HTTP API over the services
    ("daemon",),                                                    # the daemon: the one executor, its socket
    ("history",),                                                   # past sessions replayed (learn-history)
    ("hooks",),                                                     # the agent's front ends (thin doors)
    ("mcp_server", "hook_runtime"),                                 # entry points
    ("demo",),                                                      # what `dexai demo` runs on
    ("",),                                                          # the public API (dexai_memory/__init__)
    ("cli",),                                                       # the command line
)
RANK = {family: rank for rank, families in enumerate(LAYERS) for family in families}
MAX_LINES = 600
MAX_METHODS = 30
DEMO_USERS = {f"{PACKAGE}.cli.demo"}  # the only library module allowed to import dexai_memory.demo


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for prefix, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = path
    return found


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _imports(module: str) -> Iterator[tuple[str, int]]:
    """(imported library module, line) for every import in ``module``, nested ones included."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if _is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    yield sub, node.lineno
                elif target in MODULES:
                    yield target, node.lineno


def _family(module: str) -> str:
    rest = module.removeprefix(PACKAGE).lstrip(".")
    return rest.split(".")[0]


GRAPH = {module: {t for t, _ in _imports(module) if t != module} for module in MODULES}


def _facade_edge(src: str, dst: str) -> bool:
    """A package's ``__init__`` re-exporting one of its own submodules."""
    return _is_package(src) and dst.startswith(src + ".")


def test_every_family_has_a_rank() -> None:
    unknown = sorted({_family(m) for m in MODULES} - set(RANK))
    assert not unknown, f"add these families to LAYERS in {Path(__file__).name}: {unknown}"


def test_imports_run_down_the_data_path() -> None:
    upward = []
    for module in sorted(MODULES):
        for target, line in sorted(set(_imports(module))):
            if target == module or _facade_edge(module, target):
                continue
            src, dst = _family(module), _family(target)
            if src == dst:
                continue
            if RANK[dst] >= RANK[src]:
                upward.append(f"{MODULES[module].relative_to(REPO)}:{line} {module} imports {target} "
                              f"({src!r} rank {RANK[src]} -> {dst!r} rank {RANK[dst]})")
    assert not upward, "imports up the data path:\n" + "\n".join(upward)


def _cycles() -> list[list[str]]:
    graph = {m: {t for t in deps if not _facade_edge(m, t)} for m, deps in GRAPH.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circles() -> None:
    assert not _cycles(), f"import circles: {_cycles()}"


def test_demo_is_not_imported_by_the_library() -> None:
    users = sorted(m for m, deps in GRAPH.items()
                   if _family(m) != "demo" and m not in DEMO_USERS
                   and any(_family(d) == "demo" for d in deps))
    assert not users, f"library modules importing dexai_memory.demo: {users}"


def test_the_library_never_imports_the_test_package() -> None:
    """The repository's ``testing/`` (fake Zep, PostgreSQL helper, ...) is not in the wheel."""
    users = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n == "testing" or n.startswith(("testing.", f"{PACKAGE}.testing")) for n in names):
                users.append(module)
    assert not users, f"library modules importing the test-only testing package: {sorted(set(users))}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module: str) -> None:
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module].relative_to(REPO)} has {lines} lines (max {MAX_LINES}): split it"


def test_class_size() -> None:
    big = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                if len(methods) > MAX_METHODS:
                    big.append(f"{module}.{node.name}: {len(methods)} methods")
    assert not big, f"classes over {MAX_METHODS} methods: {big}"


def test_the_checker_sees_imports() -> None:
    """Guards the guard: the graph finds known edges, relative and nested ones included."""
    assert f"{PACKAGE}.errors" in GRAPH[f"{PACKAGE}.models"]
    assert f"{PACKAGE}.hooks.client" in GRAPH[f"{PACKAGE}.hook_runtime"]
    assert any(_family(d) == "demo" for d in GRAPH[f"{PACKAGE}.cli.demo"])


def test_every_package_ships_in_the_wheel() -> None:
    """Each folder of the package is listed in pyproject's ``packages`` (else the wheel lacks it)."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {m for m in MODULES if _is_package(m)}
    assert not folders - listed, f"add to pyproject.toml [tool.setuptools] packages: {sorted(folders - listed)}"


#: The modules that open SQLite files with the stdlib ``sqlite3`` (the queue, the session store, the
#: replay log, backup copies); the memory database is opened through
#: :func:`dexai_memory.providers.native.driver.store_sqlite` only, so one process never has it open
#: in two copies of SQLite (see that module).
STDLIB_SQLITE_USERS = {
    f"{PACKAGE}.capture.queue_file", f"{PACKAGE}.sessions.store", f"{PACKAGE}.providers.fallback",
    f"{PACKAGE}.backup", f"{PACKAGE}.cli.doctor", f"{PACKAGE}.providers.native.driver",
}


def test_the_memory_database_is_opened_by_one_sqlite_library() -> None:
    found = set()
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "sqlite3"):
                found.add(module)
    assert found <= STDLIB_SQLITE_USERS, f"stdlib sqlite3.connect in {sorted(found - STDLIB_SQLITE_USERS)}"
    assert f"{PACKAGE}.capture.queue_file" in found  # the checker sees calls
