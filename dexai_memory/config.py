"""Typed, frozen settings for dexai-memory, loaded from ``memory.yaml`` files.

Every default is declared exactly once, on its dataclass field below. The packaged
``args/memory.yaml`` lists every key with the same values (a test keeps them equal) so users
can read what exists; a user's file overrides only the keys it names. Values are validated and
converted at load time; a bad value raises :class:`~dexai_memory.errors.ConfigError` naming
the file, the dotted key and the reason.

Where files are looked up, later ones overriding earlier ones:

1. the packaged defaults (``dexai_memory/args/memory.yaml``);
2. ``<home>/memory.yaml`` where ``<home>`` is :func:`home_dir`;
3. an explicit path (``--config`` on the CLI, ``load_settings(path=...)``).
"""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .datadir import home_dir
from .errors import ConfigError
from .limits import LifecycleConfig, LimitsConfig, PersistentContextConfig

#: Keys of earlier versions a file may still set (not an error): key -> the warning logged ("" = none).
RETIRED_KEYS = {"hooks.daemon_timeout_seconds": "", "hooks.inline_flush_seconds": "", **dict.fromkeys(
    ("extraction.spacy", "extraction.spacy_model"), "no spaCy pipeline is loaded; entities are found by regex")}

DEFAULT_MODEL = "claude-haiku-4-5-20251001"
DEFAULT_GATE_THRESHOLD = 0.3
#: Bulk ingest extracts every turn: no live latency to protect, and a skipped turn is a lost fact.
DEFAULT_INGEST_GATE_THRESHOLD = 0.0
#: Default of ``extraction.gate_divergence_weight``.
DEFAULT_DIVERGENCE_WEIGHT = 0.2
DEFAULT_COMPACTION_INSTRUCTIONS = (
    "Preserve: current task state, user preferences, active commitments, key technical decisions, file paths being "
    "edited. Discard: routine greetings, tool output details, intermediate reasoning.")


def _check(min_: float | None = None, max_: float | None = None, choices: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"min": min_, "max": max_, "choices": choices}


@dataclass(frozen=True)
class StorageConfig:
    """Where and how memories are stored."""

    #: Which provider backs memory: native (SQLite), mem0, zep, postgres or memory (in the process, kept nowhere).
    provider: str = field(default="native", metadata=_check(choices=("native", "mem0", "zep", "postgres", "memory")))
    #: SQLite file name inside the data directory (native provider).
    db_filename: str = "memory.db"
    #: How long SQLite waits on a locked database, in milliseconds.
    busy_timeout_ms: int = field(default=5000, metadata=_check(0, 600_000))
    #: A write that still finds the database locked after busy_timeout_ms is retried, with a growing
    #: pause, for at most this many seconds before it fails (bounded: a write is never dropped silently).
    busy_retry_seconds: float = field(default=60.0, metadata=_check(0.0, 3600.0))
    #: Send writes to the native store while an external provider is unhealthy.
    fallback_to_native: bool = True


@dataclass(frozen=True)
class EmbeddingConfig:
    """The embedder used for vector search."""

    #: onnx-minilm (offline default, 384-d), none (BM25 only), sentence-transformers (extra), or
    #: static-minilm (a static table distilled from MiniLM: ~100x faster to embed, less precise).
    backend: str = field(default="onnx-minilm", metadata=_check(choices=("onnx-minilm", "none", "sentence-transformers",
                                                                          "static-minilm")))
    #: Model name for the sentence-transformers backend.
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    #: Texts embedded per model call, at most (a call also stops at ~512 word pieces: cache-sized
    #: calls are faster per text).
    batch_size: int = field(default=32, metadata=_check(1, 1024))
    #: Longest input in word pieces; longer text is truncated.
    max_length: int = field(default=256, metadata=_check(8, 512))
    #: CPU threads for onnxruntime (0 = onnxruntime's choice).
    threads: int = field(default=1, metadata=_check(0, 64))
    #: ``dexai memory ingest`` / ``import --vectors auto`` embed before returning for files of at most
    #: this many turns / memories; larger files are stored with vectors deferred (filled by the daemon
    #: or ``dexai memory reembed --missing``), because the embedder is most of their time.
    ingest_now_max_turns: int = field(default=1000, metadata=_check(0, 10_000_000))
    #: The model of bulk work (``ingest`` / ``import --vectors now``, ``reembed``, the daemon's deferred
    #: vectors) with the onnx-minilm backend: ``exact`` (default) the pinned MiniLM, as everywhere else;
    #: ``int8`` MiniLM run on int8 activations (built once into ``<data dir>/models``, needs the ``onnx``
    #: package): ~2.3x faster to embed, its vectors within cosine 0.95 (mean ~0.99) of the exact ones,
    #: queries stay exact; LoCoMo recall after ``ingest`` 80.1 % instead of 80.9 %.
    bulk_model: str = field(default="exact", metadata=_check(choices=("exact", "int8")))


@dataclass(frozen=True)
class SearchConfig:
    """Hybrid search: BM25 (FTS5) and vectors (sqlite-vec) fused by reciprocal rank."""

    #: rrf (reciprocal rank fusion), bm25 (keyword only) or vector (semantic only).
    fusion: str = field(default="rrf", metadata=_check(choices=("rrf", "bm25", "vector")))
    #: The k of RRF: score = sum(weight / (k + rank)). 20 rather than the usual 60: top ranks
    #: that both retrievers agree on count more (LoCoMo dev 0-3 evidence recall 78.2 -> 80.4 %).
    rrf_k: int = field(default=20, metadata=_check(1, 1000))
    bm25_weight: float = field(default=1.0, metadata=_check(0.0, 10.0))
    #: MiniLM finds paraphrases BM25 misses; weighted 1.5 (LoCoMo dev 0-3: 80.4 -> 81.7 %).
    vector_weight: float = field(default=1.5, metadata=_check(0.0, 10.0))
    #: Candidates taken from each retriever before fusion.
    candidates: int = field(default=50, metadata=_check(1, 2000))
    #: Embed the raw turns archived in L3 (TRANSCRIPT memories). Off: they are found by BM25 only,
    #: and ingest embeds about a third as many texts (faster on one core).
    embed_transcripts: bool = True
    #: A user with more vectors than this is searched through an approximate (HNSW) index when
    #: usearch is installed (``pip install dexai-memory[ann]``), its candidates rescored exactly;
    #: at or below it, vector search is exact. 0 = always exact.
    ann_threshold: int = field(default=20_000, metadata=_check(0, 1_000_000_000))
    #: A store with more rows than this leaves the query's common words (in over 2 % of the rows)
    #: out of BM25 while a rarer one remains, so a search does not rank every match of a common
    #: word (native provider); at or below it, BM25 ranks every match. 0 = never.
    bm25_prune_threshold: int = field(default=200_000, metadata=_check(0, 1_000_000_000))
    #: Vectors the native provider keeps in memory across users (~1.5 KB each, plus the HNSW graph
    #: of a user past ``ann_threshold``): past it, the users searched least recently are dropped and
    #: read again on their next search (~0.3 s per 10k vectors). 0 = no limit.
    index_max_vectors: int = field(default=2_000_000, metadata=_check(0, 1_000_000_000))
    #: search/API/panel floor: a result without a query keyword needs this similarity (null: the embedder's).
    min_similarity: float | None = field(default=None, metadata=_check(0.0, 1.0))


@dataclass(frozen=True)
class ExtractionConfig:
    """The warm path: heuristic gate, extraction queue and extractor."""

    #: Gate score at or above which a turn is extracted (0-1).
    gate_threshold: float = field(default=DEFAULT_GATE_THRESHOLD, metadata=_check(0.0, 1.0))
    #: The same for bulk ingest (``dexai memory ingest``, a whole conversation at once): 0 extracts
    #: every turn (the extractor still drops filler and scores importance with the gate).
    ingest_gate_threshold: float = field(default=DEFAULT_INGEST_GATE_THRESHOLD, metadata=_check(0.0, 1.0))
    #: Most the daemon's divergence signal (a turn far in meaning from its session's recent turns,
    #: computed in the background when the embedder is loaded) adds to a gate score; 0 turns it off.
    gate_divergence_weight: float = field(default=DEFAULT_DIVERGENCE_WEIGHT, metadata=_check(0.0, 0.5))
    #: Model used for extraction when an API key is set.
    extraction_model: str = DEFAULT_MODEL
    #: auto (Haiku with an API key, else through a signed-in Claude Code, else offline), haiku (API key),
    #: claude_code (the sign-in) or offline; ``$DEXAI_EXTRACTOR`` overrides it.
    extractor: str = field(default="auto", metadata=_check(choices=("auto", "haiku", "claude_code", "offline")))
    #: Environment variable holding the Anthropic API key.
    api_key_env: str = "ANTHROPIC_API_KEY"
    #: Claude Code CLI used for extraction through the user's sign-in: empty finds ``claude`` on PATH,
    #: then the one bundled in claude-agent-sdk; ``none`` never uses the sign-in (``$DEXAI_CLAUDE_CODE_CLI``).
    claude_code_cli: str = ""
    #: Model tokens (input + output) extraction, classification and consolidation may use per day
    #: (local time), with an API key or the sign-in; then the offline extractor answers. 0: no limit.
    daily_token_budget: int = field(default=300_000, metadata=_check(0, 1_000_000_000_000))
    #: Turns processed per batch.
    batch_size: int = field(default=5, metadata=_check(1, 1000))
    #: Seconds before a partial batch is flushed.
    flush_interval_seconds: float = field(default=5.0, metadata=_check(0.0, 3600.0))
    #: Jobs held in memory; beyond it the overflow policy applies.
    max_queue_size: int = field(default=1000, metadata=_check(1, 10_000_000))
    #: spill (keep on disk, process later) or reject (refuse new jobs loudly).
    overflow_policy: str = field(default="spill", metadata=_check(choices=("spill", "reject")))
    #: Attempts before a job becomes a dead letter.
    max_retries: int = field(default=3, metadata=_check(0, 100))
    #: First retry delay; doubles each attempt.
    retry_backoff_seconds: float = field(default=2.0, metadata=_check(0.0, 3600.0))


@dataclass(frozen=True)
class CompactionConfig:
    """Compaction strategy (Claude Code hooks and server-side compaction)."""

    #: Proactive compaction at this share of the context window (%).
    proactive_threshold_pct: int = field(default=60, metadata=_check(1, 100))
    #: Context window size used for the proactive threshold.
    context_window_tokens: int = field(default=200_000, metadata=_check(1000, 10_000_000))
    #: Custom compaction instructions (preserve / discard).
    instructions: str = DEFAULT_COMPACTION_INSTRUCTIONS
    #: Use server-side compaction when dexai controls the API loop.
    use_server_side: bool = True
    #: Input tokens that trigger server-side compaction.
    server_side_trigger_tokens: int = field(default=80_000, metadata=_check(1000, 10_000_000))
    #: Pause after compaction so memory can be re-injected.
    pause_after_compaction: bool = True
    #: Similarity under which a message counts as a topic shift.
    topic_shift_threshold: float = field(default=0.4, metadata=_check(0.0, 1.0))
    #: Minutes of inactivity that make an idle-compaction opportunity.
    idle_minutes: float = field(default=5.0, metadata=_check(0.0, 1440.0))


@dataclass(frozen=True)
class AutoRecallConfig:
    """L2 -> L1 injection on each user prompt."""

    enabled: bool = True
    #: At most this many memories per injection (800 tokens hold 30-45 notes: the budget binds); 0 = off.
    max_memories: int = field(default=40, metadata=_check(0, 100))
    #: At most this many tokens for the whole injected block.
    max_tokens: int = field(default=800, metadata=_check(50, 100_000))
    #: Minimum relevance (0-1) of an injected memory (0.15: some evidence; see :mod:`dexai_memory.recall.ranking`).
    relevance_threshold: float = field(default=0.15, metadata=_check(0.0, 1.0))
    #: Skip recall when the prompt clearly continues the current topic.
    skip_on_continuation: bool = True
    #: Bring the memories linked to the first hits (found at consolidation) in, scored below them.
    follow_links: bool = True
    #: Use reorders recall: a score x at most 1 +/- this, up when replies used the memory, down when ignored (0 = off).
    usage_weight: float = field(default=0.1, metadata=_check(0.0, 0.5))


@dataclass(frozen=True)
class L1BlockConfig:
    """Token budget of each section of the L1 memory block."""

    profile_tokens: int = field(default=150, metadata=_check(0, 10_000))
    memories_tokens: int = field(default=500, metadata=_check(0, 10_000))
    commitments_tokens: int = field(default=200, metadata=_check(0, 10_000))
    session_tokens: int = field(default=150, metadata=_check(0, 10_000))
    #: Commitments due within this many days are shown.
    commitments_due_days: int = field(default=7, metadata=_check(0, 3650))


@dataclass(frozen=True)
class ConsolidationConfig:
    """Cold path: L2 clusters merged into L3 abstracts."""

    enabled: bool = True
    interval_hours: float = field(default=24.0, metadata=_check(0.001, 24 * 365))
    #: Preferred local hour (0-23) for the daily run.
    preferred_hour: int = field(default=3, metadata=_check(0, 23))
    min_cluster_size: int = field(default=3, metadata=_check(2, 1000))
    cluster_similarity: float = field(default=0.85, metadata=_check(0.0, 1.0))
    min_age_days: float = field(default=7.0, metadata=_check(0.0, 3650.0))
    consolidation_model: str = DEFAULT_MODEL
    #: Session notes accumulated in a session before Stop schedules a consolidation.
    min_new_notes: int = field(default=10, metadata=_check(1, 100_000))
    #: Most memories whose compression forms the model writes in one consolidation run (new,
    #: edited and rules-built ones, in that order; new and edited ones past it get the offline rules).
    model_forms_per_run: int = field(default=200, metadata=_check(0, 100_000))


@dataclass(frozen=True)
class SupersessionConfig:
    """ADD / UPDATE / SUPERSEDE / NOOP classification of new notes."""

    enabled: bool = True
    comparison_top_k: int = field(default=10, metadata=_check(1, 100))
    classification_model: str = DEFAULT_MODEL
    #: Keep superseded memories (archive) instead of deleting them.
    archive_superseded: bool = True


def _default_retention() -> dict[str, int | None]:
    return {"FACT": None, "PREFERENCE": None, "INSIGHT": None, "RELATIONSHIP": None, "COMMITMENT": None,
            "EVENT": 90, "TASK": 30, "SESSION_NOTE": 7, "SNAPSHOT": 7, "TRANSCRIPT": None, "EPISODE": 180,
            "PROCEDURE": None, "PATTERN": None}


#: Default of ``hooks.prefetch_tokens``.
DEFAULT_PREFETCH_TOKENS = 300


@dataclass(frozen=True)
class HooksConfig:
    """Claude Code / Agent SDK hooks."""

    enabled: bool = True
    #: Inject memory into subagents too.
    subagents: bool = False
    #: Project directories (or names) where memory is switched off.
    disabled_projects: tuple[str, ...] = ()
    #: Seconds a hook that finds no daemon answering waits for the one it starts before it
    #: queues the event for the daemon to replay and answers a no-op (PreCompact waits up to
    #: ``precompact_wait_seconds``).
    cold_start_wait_seconds: float = field(default=8.0, metadata=_check(0.0, 25.0))
    #: Seconds PreCompact waits for a daemon to take its checkpoint (the hook's limit is 60).
    precompact_wait_seconds: float = field(default=50.0, metadata=_check(0.0, 55.0))
    #: Tokens PostToolUse may add about the file, failing command or branch a tool just touched
    #: (file-aware prefetch, :mod:`dexai_memory.daemon.prefetch_items`); 0 = off.
    prefetch_tokens: int = field(default=DEFAULT_PREFETCH_TOKENS, metadata=_check(0, 4000))
    #: Most memories one PostToolUse prefetch adds.
    prefetch_items: int = field(default=3, metadata=_check(1, 20))
    #: PreCompact and SessionEnd turn the session (or the stretch since the last compaction) into
    #: an EPISODE memory with its artifacts (:mod:`dexai_memory.capture.episodes`).
    episodes: bool = True


#: The port of the daemon's opt-in http hooks, see ``daemon.http_port``.
DEFAULT_HOOK_HTTP_PORT = 47019


@dataclass(frozen=True)
class DaemonConfig:
    """The background memory daemon."""

    #: Unix socket file name inside the data directory.
    socket_filename: str = "daemon.sock"
    #: Seconds between health checks.
    health_interval_seconds: float = field(default=60.0, metadata=_check(0.1, 86_400.0))
    #: Seconds between runs of the job that embeds memories stored with deferred vectors.
    vector_fill_interval_seconds: float = field(default=30.0, metadata=_check(0.1, 86_400.0))
    #: Most memories that job embeds per run (the rest wait for the next run).
    vector_fill_batch: int = field(default=512, metadata=_check(1, 1_000_000))
    #: Hooks start the daemon (detached) when none answers; false when you run it yourself
    #: (systemd, launchd): with none running, hook events wait in the queue for it.
    autostart: bool = True
    #: Seconds recall waits, right after the daemon started, for the embedding model it loads
    #: then (so the first prompt is recalled as a warm one is).
    cold_recall_wait_seconds: float = field(default=3.0, metadata=_check(0.0, 25.0))
    #: Minutes without hook traffic (and with an empty queue) after which a daemon started by
    #: the hooks or ``dexai daemon start`` exits; 0 = never.
    idle_exit_minutes: float = field(default=30.0, metadata=_check(0.0, 10_080.0))
    #: Port on 127.0.0.1 where ``dexai daemon`` serves the local API and the panel (the same as
    #: ``dexai panel``, which then opens it); 0 = the daemon serves none.
    api_port: int = field(default=8765, metadata=_check(0, 65_535))
    #: Port on 127.0.0.1 where the daemon answers the opt-in ``http`` hooks (UserPromptSubmit,
    #: PostToolUse, Stop) with no process start; 0 = off. ``dexai daemon http-hooks --install`` writes
    #: it into the Claude Code settings (run it again after a change). See :mod:`dexai_memory.daemon.http_hooks`.
    http_port: int = field(default=DEFAULT_HOOK_HTTP_PORT, metadata=_check(0, 65_535))


@dataclass(frozen=True)
class BackupConfig:
    """Backups of ``memory.db`` and ``queue.db`` (``dexai memory backup``, and the daemon's schedule)."""

    #: The daemon backs up on its schedule (``dexai memory backup`` works either way).
    enabled: bool = True
    #: Hours between the daemon's backups.
    interval_hours: float = field(default=24.0, metadata=_check(0.01, 24 * 365))
    #: Backups kept in ``<home>/backups``; older ones are deleted after each new backup.
    keep: int = field(default=7, metadata=_check(1, 10_000))


@dataclass(frozen=True)
class Mem0Config:
    """The Mem0 provider (``pip install dexai-memory[mem0]``)."""

    collection: str = "dexai_memory"
    #: Directory of Mem0's on-disk vector store; empty = <home>/mem0.
    path: str = ""
    #: Mem0's own LLM extraction for ``add_messages``: auto (with an Anthropic key), always, never.
    infer: str = field(default="auto", metadata=_check(choices=("auto", "always", "never")))
    #: The model Mem0 extracts with (its Anthropic LLM provider).
    llm_model: str = DEFAULT_MODEL
    #: Base URL of the Anthropic API for Mem0's LLM; empty = the SDK default.
    llm_base_url: str = ""
    #: Environment variable holding the Anthropic API key Mem0 uses.
    api_key_env: str = "ANTHROPIC_API_KEY"
    #: Minimum cosine similarity (0-1) of a Mem0 search hit (0 = rank everything, like native).
    search_threshold: float = field(default=0.0, metadata=_check(0.0, 1.0))


@dataclass(frozen=True)
class ZepConfig:
    """The Zep provider (``pip install dexai-memory[zep]``)."""

    api_key_env: str = "ZEP_API_KEY"
    #: Base URL of the Zep API; empty = the SDK's default (Zep Cloud).
    base_url: str = ""
    #: Seconds before a Zep request times out.
    timeout_seconds: float = field(default=10.0, metadata=_check(0.1, 600.0))
    #: Retries of a failed Zep request (the SDK's own retry).
    max_retries: int = field(default=2, metadata=_check(0, 10))
    #: Also send session notes to the session's Zep thread (thread.add_messages) for graph ingestion.
    session_threads: bool = True


@dataclass(frozen=True)
class PostgresConfig:
    """The postgres provider (``pip install dexai-memory[postgres]``). The DSN is never in this file
    (it may hold a password): it is read from the environment variable ``dsn_env`` and never logged."""

    dsn_env: str = "DEXAI_POSTGRES_DSN"
    #: Schema (namespace) of the tables; several stores can share one database.
    schema: str = "dexai_memory"
    #: Connections kept open per process; statements cancelled after statement_timeout_seconds (0: never).
    pool_size: int = field(default=5, metadata=_check(1, 200))
    statement_timeout_seconds: float = field(default=10.0, metadata=_check(0.0, 3600.0))
    #: Seconds to wait for a connection (a down server then fails over to the native store).
    connect_timeout_seconds: float = field(default=5.0, metadata=_check(0.5, 600.0))
    #: HNSW candidates per vector search (pgvector ``hnsw.ef_search``): higher = better recall, slower.
    ef_search: int = field(default=100, metadata=_check(1, 1000))


@dataclass(frozen=True)
class AssemblyConfig:
    """Tiered context assembly (``POST /api/context/assemble``, :func:`dexai_memory.assemble_context`,
    ``dexai memory assemble``): the budget and how it is shared by the four tiers."""

    #: Tokens of the assembled context when the caller gives no budget (the Claude Code hooks keep
    #: their own, smaller budgets).
    budget_tokens: int = field(default=8000, metadata=_check(50, 100_000))
    #: Share of the budget for tier 1 (critical: decisions and warnings about the current file or
    #: task, open contradictions, recent errors and their fixes, standing instructions).
    tier1_share: float = field(default=0.25, metadata=_check(0.0, 1.0))
    #: Share for tier 2 (relevant: what the signals recall).
    tier2_share: float = field(default=0.375, metadata=_check(0.0, 1.0))
    #: Share for tier 3 (background: project conventions and facts, compressed).
    tier3_share: float = field(default=0.25, metadata=_check(0.0, 1.0))
    #: Share for tier 4 (index: "ask me about" topics). Shares are normalised to sum to 1.
    tier4_share: float = field(default=0.125, metadata=_check(0.0, 1.0))


@dataclass(frozen=True)
class Settings:
    """Every setting of dexai-memory. Build with :func:`load_settings`."""

    storage: StorageConfig = field(default_factory=StorageConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    auto_recall: AutoRecallConfig = field(default_factory=AutoRecallConfig)
    l1_block: L1BlockConfig = field(default_factory=L1BlockConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    supersession: SupersessionConfig = field(default_factory=SupersessionConfig)
    #: Days before a valid memory of each type is archived (null = forever).
    retention: Mapping[str, int | None] = field(default_factory=_default_retention)
    persistent_context: PersistentContextConfig = field(default_factory=PersistentContextConfig)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    hooks: HooksConfig = field(default_factory=HooksConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    backup: BackupConfig = field(default_factory=BackupConfig)
    mem0: Mem0Config = field(default_factory=Mem0Config)
    zep: ZepConfig = field(default_factory=ZepConfig)
    postgres: PostgresConfig = field(default_factory=PostgresConfig)
    assembly: AssemblyConfig = field(default_factory=AssemblyConfig)
    #: The data directory these settings were loaded for.
    home: Path = field(default_factory=home_dir)

    @property
    def db_path(self) -> Path:
        """The native provider's SQLite file."""
        return self.home / self.storage.db_filename

    @property
    def backup_dir(self) -> Path:
        """Where backups go: ``<home>/backups``."""
        return self.home / "backups"

    @property
    def socket_path(self) -> Path:
        """The daemon's Unix socket."""
        return self.home / self.daemon.socket_filename

    def with_home(self, home: Path) -> Settings:
        """A copy bound to another data directory."""
        return dataclasses.replace(self, home=Path(home))


# --------------------------------------------------------------------------- loading


def _convert(value: Any, hint: Any, key: str, path: str, meta: Mapping[str, Any]) -> Any:
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _convert(value, args[0], key, path, meta)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"expected true or false, got {value!r}", path=path, key=key)
        return value
    if hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"expected a number, got {value!r}", path=path, key=key)
        if hint is int and (not isinstance(value, int)):
            if float(value).is_integer():
                value = int(value)
            else:
                raise ConfigError(f"expected a whole number, got {value!r}", path=path, key=key)
        value = hint(value)
        lo, hi = meta.get("min"), meta.get("max")
        if lo is not None and value < lo:
            raise ConfigError(f"must be >= {lo}, got {value}", path=path, key=key)
        if hi is not None and value > hi:
            raise ConfigError(f"must be <= {hi}, got {value}", path=path, key=key)
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"expected a string, got {value!r}", path=path, key=key)
        choices = meta.get("choices") or ()
        if choices and value not in choices:
            raise ConfigError(f"must be one of {', '.join(choices)}; got {value!r}", path=path, key=key)
        return value
    if origin is tuple:
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ConfigError(f"expected a list, got {value!r}", path=path, key=key)
        return tuple(str(v) for v in value)
    return value


def _build(cls: type, data: Mapping[str, Any], prefix: str, path: str, base: Any) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a mapping, got {data!r}", path=path, key=prefix or None)
    hints = typing.get_type_hints(cls)
    names = {f.name: f for f in dataclasses.fields(cls)}
    changes: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if dotted in RETIRED_KEYS:  # an old file still loads (refusing it would turn memory off in every hook)
            if RETIRED_KEYS[dotted]:
                logging.getLogger(__name__).warning("%s: %s is retired and ignored: %s", path, dotted, RETIRED_KEYS[dotted])
            continue
        if key not in names or key == "home":
            known = ", ".join(n for n in names if n != "home")
            raise ConfigError(f"unknown key (known keys: {known})", path=path, key=dotted)
        f = names[key]
        hint = hints[key]
        current = getattr(base, key)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            changes[key] = _build(hint, value or {}, dotted, path, current)
        elif key == "retention":
            changes[key] = _retention(value, dotted, path, current)
        else:
            changes[key] = _convert(value, hint, dotted, path, f.metadata)
    return dataclasses.replace(base, **changes)


def _retention(value: Any, key: str, path: str, current: Mapping[str, int | None]) -> dict[str, int | None]:
    from .models import MemoryType  # local: models imports errors only

    if not isinstance(value, Mapping):
        raise ConfigError("expected a mapping of memory type to days (or null)", path=path, key=key)
    out = dict(current)
    for type_name, days in value.items():
        name = str(type_name).upper()
        if name not in MemoryType.__members__:
            raise ConfigError(f"unknown memory type {type_name!r}", path=path, key=f"{key}.{type_name}")
        if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days < 0):
            raise ConfigError(f"expected whole days >= 0 or null, got {days!r}", path=path, key=f"{key}.{type_name}")
        out[name] = days
    return out


def default_config_text() -> str:
    """The packaged ``memory.yaml`` as text."""
    from importlib import resources  # not at import time: it pulls in tempfile, zipfile and more

    return resources.files("dexai_memory.args").joinpath("memory.yaml").read_text(encoding="utf-8")


def _read_yaml(path: Path) -> Mapping[str, Any]:
    import yaml  # imported here: command hooks that skip YAML files never pay for it

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file: {exc.strerror}", path=str(path)) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=str(path)) from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError("the top level must be a mapping of sections", path=str(path))
    return data


def load_settings(path: str | Path | None = None, *, home: str | Path | None = None) -> Settings:
    """Load settings: packaged defaults, then ``<home>/memory.yaml``, then ``path``; ``home`` overrides the
    data directory (else :func:`home_dir`). :class:`ConfigError` for unreadable files, unknown keys, bad values."""
    home_path = Path(home).expanduser() if home else home_dir()
    settings = Settings(home=home_path)
    import yaml

    settings = _build(Settings, yaml.safe_load(default_config_text()) or {}, "", "<packaged memory.yaml>", settings)
    user_file = home_path / "memory.yaml"
    if user_file.is_file():
        settings = _build(Settings, _read_yaml(user_file), "", str(user_file), settings)
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise ConfigError("config file not found", path=str(p))
        settings = _build(Settings, _read_yaml(p), "", str(p), settings)
    return settings


def load_user_settings(*, home: str | Path | None = None) -> Settings:
    """:func:`load_settings` without parsing the packaged YAML (~50 ms, too much for a command hook): the
    dataclass defaults equal it (a test checks), so only ``<home>/memory.yaml`` is read, validated alike."""
    home_path = Path(home).expanduser() if home else home_dir()
    settings = Settings(home=home_path)
    user_file = home_path / "memory.yaml"
    if not user_file.is_file():
        return settings
    return _build(Settings, _read_yaml(user_file), "", str(user_file), settings)


def settings_as_dict(settings: Settings) -> dict[str, Any]:
    """All settings as plain data (for ``doctor --json`` and the defaults test)."""
    out = dataclasses.asdict(settings)
    out.pop("home", None)
    return out
