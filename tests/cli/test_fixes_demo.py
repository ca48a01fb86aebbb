"""``dexai demo --help`` offers only the demo's own options: it runs in a throw-away data directory
as its own user, so --user/--project/--home/--config would mean nothing (and are refused)."""

from __future__ import annotations

import re
import subprocess
import sys


def dexai(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_demo_help_lists_only_its_own_options() -> None:
    out = dexai("demo", "--help")
    assert out.returncode == 0
    options = set(re.findall(r"^\s+(--[a-z-]+)", out.stdout.split("Options:")[1], flags=re.M))
    assert options == {"--keep", "--timeout", "--json"}
    assert "-h, --help" in out.stdout


def test_an_option_of_the_other_commands_is_a_usage_error() -> None:
    for option in ("--user", "--project", "--home", "--config"):
        out = dexai("demo", option, "x")
        assert out.returncode == 2 and f"No such option '{option}'" in out.stderr
