"""A click group whose subcommands live in their own modules and import on use.

Keeping imports lazy keeps ``dexai hook ...`` (a new process per Claude Code
event) fast: only the module of the command that runs is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import click


class LazyGroup(click.Group):
    """``lazy_commands`` maps a command name to ``"module:attribute"``."""

    def __init__(self, *args: Any, lazy_commands: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def _available(self) -> list[str]:
        names = []
        for name, target in self.lazy_commands.items():
            module = target.split(":", 1)[0]
            if importlib.util.find_spec(module) is not None:
                names.append(name)
        return names

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._available()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, attr = self.lazy_commands[cmd_name].split(":", 1)
            if importlib.util.find_spec(module_name) is None:
                return None
            return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]
        return super().get_command(ctx, cmd_name)
