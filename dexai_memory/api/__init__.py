"""The local HTTP API (and the panel it serves): ``dexai panel``, on 127.0.0.1 only.

- :mod:`.auth`: the per-install token (``<home>/api-token``, mode 0600) and the
  middleware that asks every ``/api/`` request for it (``Authorization: Bearer``).
- :mod:`.requests`: reading a request: its JSON body, fields, user and project;
  errors as ``{"error": "..."}``.
- :mod:`.memories`: memory CRUD, search, pin/unpin, forget/restore, history, facts.
- :mod:`.upkeep`: clear and undo, conflicts and their resolution, consolidation.
- :mod:`.context`: the persistent context by category and ``POST /api/context/assemble``.
- :mod:`.history`: the past Claude Code sessions learned (``learn-history``), and forgetting one.
- :mod:`.app`: :func:`~.app.build_app`, the Starlette application (routes, errors,
  OpenAPI schema from the route docstrings, the panel's static files).
- :mod:`.server`: :func:`~.server.serve`, uvicorn on a socket bound to 127.0.0.1.

Every route is a thin translation to the library functions the CLI calls
(:mod:`dexai_memory.lifecycle`, :mod:`dexai_memory.agent_tools`,
:mod:`dexai_memory.recall`, :mod:`dexai_memory.consolidation`): the rules live once.
"""
