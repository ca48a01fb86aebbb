"""The memory tools as the model sees them: names, descriptions and input schemas.

Defined once, here, with the standard library only: the stdio MCP server
(:mod:`dexai_memory.mcp_server`, a thin client of the daemon that must start
fast) lists them without importing the tools' logic, and the in-process
Agent SDK server (:func:`dexai_memory.agent_tools.mcp.build_mcp_server`) and
the daemon's ``tool.call`` operation (:mod:`.mcp`, :mod:`.ops`) validate
arguments against the same schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

#: The ``category`` values of ``remember``, in the order the model sees them
#: (:class:`dexai_memory.agent_tools.tools.Category` has the same values).
CATEGORIES = ("preference", "fact", "insight", "warning", "goal", "instruction", "person", "procedure", "convention")

REMEMBER_DESCRIPTION = (
    "Store an important fact in persistent memory. Use it when you learn something worth remembering "
    "long-term: a user preference (\"I prefer X\", \"always do Y\", \"never do Z\"), a key project fact, an "
    "insight, a mistake to avoid (warning), a changed goal, how the user does something (procedure: \"to release: "
    "bump the version, then tag, then push\") or a code convention (\"tests are named test_<unit>_<case>\"). Persistent memories survive context "
    "compaction and future sessions. One concise, specific statement per call; newer statements replace "
    "older ones they contradict. Don't over-use it. When the user finished or dropped a commitment or goal, "
    "call it with status done or cancelled."
)
FORGET_DESCRIPTION = (
    "Forget a stored memory (soft delete). Pass memory_id (from recall) to forget that memory, or a query: "
    "it is forgotten only if exactly one memory clearly matches, otherwise the candidates are listed."
)
RECALL_DESCRIPTION = (
    "Search persistent memory. Returns the memories relevant to the query as the block the memory hook "
    "would add to the context for it, followed by their ids (for forget)."
)

REMEMBER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": "The fact to remember (specific and actionable)"},
        "category": {
            "type": "string",
            "enum": list(CATEGORIES),
            "description": "preference (user likes/dislikes), fact (project or personal info), insight "
                           "(realization), warning (mistake to avoid), goal (current objective), instruction "
                           "(a standing rule: \"always run the linter\"), person (someone and their role)",
        },
        "status": {
            "type": "string", "enum": ["done", "cancelled"],
            "description": "Close a commitment or goal instead of storing anything: the one memory_id names, "
                           "else the open one content describes (\"send the report to Priya\")",
        },
        "memory_id": {"type": "string", "description": "With status: the commitment or goal to close"},
        "pin": {"type": "boolean", "description": "Pin it (always in context; at most 10 pins)"},
    },
    "required": ["content", "category"],
}
FORGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memory_id": {"type": "string", "description": "Id of the memory to forget (from recall)"},
        "query": {"type": "string", "description": "Words describing the memory to forget"},
    },
}
RECALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for"},
    },
    "required": ["query"],
}


class ToolSpec(NamedTuple):  # a NamedTuple: a dataclass costs ~1 ms to define in a fast-starting process
    """One tool as the model sees it: name, description and JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        """The tool as MCP ``tools/list`` lists it."""
        return {"name": self.name, "description": self.description, "inputSchema": dict(self.input_schema)}


#: The three tools, in ``TOOL_NAMES`` order; every MCP server of the package lists exactly these.
TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("remember", REMEMBER_DESCRIPTION, REMEMBER_SCHEMA),
    ToolSpec("forget", FORGET_DESCRIPTION, FORGET_SCHEMA),
    ToolSpec("recall", RECALL_DESCRIPTION, RECALL_SCHEMA),
)


def spec_for(name: str) -> ToolSpec | None:
    """The spec of tool ``name`` (None for an unknown tool)."""
    return next((s for s in TOOL_SPECS if s.name == name), None)
