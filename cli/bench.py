"""``dexai bench NAME``: run a benchmark of the repository's ``benchmarks/`` directory.

``benchmarks/`` is not part of the installed package (it needs the repository's
data and writes its results next to itself), so it is looked up in a checkout:
the current directory or one of its parents, then the repository that holds the
package when it is installed editable (``pip install -e``). ``dexai bench``
with no name lists the benchmarks found. Options after NAME other than
``--quick`` and ``--out`` are passed to the benchmark (``dexai bench
locomo_bench --misses 5``); ``dexai bench NAME -- --help`` shows them.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from dexai_memory.cli.common import fail

BENCH_PACKAGE = "benchmarks"


def _is_bench_root(path: Path) -> bool:
    return (path / BENCH_PACKAGE / "__init__.py").is_file() and (path / BENCH_PACKAGE / "common.py").is_file()


def find_repo_root(start: Path | None = None) -> Path | None:
    """The checkout holding ``benchmarks/``: ``start`` (default: cwd) or a parent, else the
    directory above the installed package (an editable install); None if neither has it."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if _is_bench_root(candidate):
            return candidate
    import dexai_memory

    package_parent = Path(dexai_memory.__file__).resolve().parent.parent
    return package_parent if _is_bench_root(package_parent) else None


def available(root: Path) -> list[str]:
    """Benchmark module names under ``root/benchmarks`` (files named ``*_bench.py``)."""
    return sorted(p.stem for p in (root / BENCH_PACKAGE).glob("*_bench.py"))


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                 "help_option_names": ["-h", "--help"]})
@click.argument("name", required=False)
@click.option("--quick", is_flag=True, help="Run a small slice (what CI runs); writes NAME.quick.json.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for the JSON result (default: benchmarks/results/).")
@click.pass_context
def bench(ctx: click.Context, name: str | None, quick: bool, out: Path | None) -> None:
    """Run benchmark NAME (search_bench, locomo_bench, latency_bench, ...): prints a table, writes JSON.

    Without NAME, list the benchmarks of the checkout. Needs a checkout of the
    repository (run it from inside one); extra options go to the benchmark,
    e.g. 'dexai bench locomo_bench --misses 5'; 'dexai bench NAME -- --help' lists them.
    """
    root = find_repo_root()
    if root is None:
        fail("no benchmarks/ directory found: run 'dexai bench' from a checkout of the dexai-memory "
             "repository (benchmarks are not part of the installed package)")
        return
    names = available(root)
    if not name:
        click.echo(f"benchmarks in {root / BENCH_PACKAGE}:")
        for n in names:
            click.echo(f"  {n}")
        click.echo("run one with: dexai bench NAME [--quick] [--out DIR]")
        return
    module_name = name[:-3] if name.endswith(".py") else name
    if module_name not in names and f"{module_name}_bench" in names:
        module_name = f"{module_name}_bench"  # 'dexai bench search' works too
    if module_name not in names:
        fail(f"unknown benchmark {name!r} (available: {', '.join(names) or 'none'})")
        return
    argv = list(ctx.args)
    if quick:
        argv.append("--quick")
    if out is not None:
        argv += ["--out", str(out.resolve())]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module(f"{BENCH_PACKAGE}.{module_name}")
    if not hasattr(module, "main"):
        fail(f"{BENCH_PACKAGE}.{module_name} has no main(argv) function")
        return
    code = module.main(argv)
    if code:
        sys.exit(code)
