"""The memory daemon: one asyncio component that owns the background work.

:class:`MemoryDaemon` wires the small parts together (it does none of their
work itself):

* the **queue worker**: :meth:`ExtractionQueue.run` with
  :meth:`Pipeline.handle` (extraction -> supersession -> provider),
  supervised (restarted with a pause if it crashes);
* the **event executor** (:attr:`MemoryDaemon.executor`): every hook event and every
  recall, whichever door it came through;
* the **schedule** (:mod:`.schedule`): consolidation, cleanup, vector fill and backups
  for every user of the store;
* a **health monitor** every ``daemon.health_interval_seconds``: provider
  health, queue depth, batch latency, dead letters;
* an :class:`~dexai_memory.daemon.ipc.IpcServer` on ``settings.socket_path`` when
  ``serve_socket`` is true (``dexai daemon``), serving :mod:`.ops` to the hooks, the
  CLI and the MCP server; hook events it could not answer in time are replayed at start.
* the local HTTP API and the panel (:class:`~dexai_memory.api.server.ApiServer`)
  on 127.0.0.1:``daemon.api_port`` when ``serve_api`` is true (``dexai daemon``),
  over the daemon's provider.

Use it inside your own event loop::

    async with MemoryDaemon(settings) as daemon:
        daemon.submit_turn(turn)          # gate + enqueue, never blocks
        ...

or ``await daemon.start()`` / ``await daemon.stop()`` /
``await daemon.wait_until_stopped()``. A state enum refuses a second start.
Every background task is kept in one set and cancelled by :meth:`stop`,
which first closes the socket, then lets the worker finish what is due
(``flush_timeout``), then cancels; whatever is left is already committed to
``queue.db`` and is processed at the next start. Writes to the provider by
the worker and the scheduled jobs are serialised by :attr:`write_lock`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import importlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Self

from ..agent_tools.ops import tool_ops
from ..capture.admit import admit
from ..capture.divergence import Divergence, SecondLook
from ..capture.queue import ExtractionQueue, Job
from ..capture.recent import RecentTurns
from ..embeddings import bulk_embedder
from ..errors import DaemonError, DexaiMemoryError, QueueError
from ..limits import clip
from ..models import Turn, utcnow
from ..pipeline import RECENT_TURNS, Pipeline
from .executor import EventExecutor
from .ipc import IpcServer
from .ops import socket_ops

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from ..api.server import ApiServer
    from ..capture.gate import Gate, GateResult
    from ..config import Settings
    from ..consolidation import Summarizer
    from ..extraction.base import Extractor, FormWriter
    from ..providers.base import MemoryProvider
    from ..supersession.classifier import UpdateClassifier

logger = logging.getLogger(__name__)

#: Seconds :meth:`MemoryDaemon.stop` lets the worker drain what is due before cancelling.
DEFAULT_FLUSH_TIMEOUT = 5.0
#: Seconds a cancelled background task gets to clean up.
CANCEL_TIMEOUT = 5.0
#: Seconds the daemon waits at start for another consumer (a daemon going away) to release the queue.
CLAIM_WAIT = 30.0


class DaemonState(enum.Enum):
    """Lifecycle of a :class:`MemoryDaemon` (one way: a stopped daemon is not restarted)."""

    CREATED = "created"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


class MemoryDaemon:
    """Owns the queue worker, the scheduler, the health monitor and the socket.

    ``provider``: a provider to use (not closed by the daemon); by default the
    configured one is built, started and closed by the daemon. ``gate``,
    ``extractor``, ``classifier`` and ``summarizer`` default to the configured
    ones (Haiku with an API key, offline otherwise).
    """

    def __init__(self, settings: Settings, provider: MemoryProvider | None = None, *,
                 extractor: Extractor | None = None, gate: Gate | None = None,
                 classifier: UpdateClassifier | None = None, summarizer: Summarizer | None = None,
                 serve_socket: bool = False, schedule: bool = True, serve_api: bool = False):
        self.settings = settings
        self._provider = provider
        self._owns_provider = provider is None
        self._extractor = extractor
        self._gate = gate
        self._classifier = classifier
        self._summarizer = summarizer
        self._form_writer: FormWriter | None = None
        self.serve_socket = serve_socket
        self.serve_api = serve_api
        #: The local API server while it runs (``serve_api`` and ``daemon.api_port`` set).
        self.api: ApiServer | None = None
        #: Set once the API server started, or failed to (``serve_api``).
        self.api_ready = asyncio.Event()
        self.schedule = schedule
        self.state = DaemonState.CREATED
        self.queue = ExtractionQueue.from_settings(settings)
        self.ipc = IpcServer(settings.socket_path)
        self.pipeline: Pipeline | None = None
        self.scheduler: AsyncIOScheduler | None = None
        #: Serialises the daemon's writes to the provider (worker batches, scheduled jobs).
        self.write_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopped = asyncio.Event()
        #: Each session's last turns: the gate's context (entity novelty, divergence).
        self.recent = RecentTurns(RECENT_TURNS)
        #: The background second look (semantic divergence) at turns the gate did not pass.
        self.second_look = SecondLook(settings.extraction.gate_divergence_weight,
                                      lambda: getattr(self._provider, "embedder", None))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._users: set[str] = set()
        self._started_at: float | None = None
        self._last_health: dict[str, Any] = {}
        self.runs: collections.Counter[str] = collections.Counter()
        self.last_reports: dict[str, Any] = {}
        #: The one event executor (hook events, recall) every door calls.
        self.executor = EventExecutor(self)
        for op, handler in {**socket_ops(self), **tool_ops(self)}.items():
            self.ipc.register(op, handler)

    # ------------------------------------------------------------------ lifecycle
    @property
    def provider(self) -> MemoryProvider:
        """The provider memories are stored in. Raises :class:`DaemonError` before :meth:`start`."""
        if self._provider is None:
            raise DaemonError("the daemon has no provider yet: start it first")
        return self._provider

    @property
    def running(self) -> bool:
        return self.state is DaemonState.RUNNING

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start everything. Raises :class:`DaemonError` if already started (or stopped)."""
        if self.state is not DaemonState.CREATED:
            raise DaemonError(f"the daemon cannot start: it is {self.state.value}")
        self.state = DaemonState.STARTING
        self._loop = asyncio.get_running_loop()
        self._stopped.clear()
        try:
            await self._start_parts()
        except BaseException:
            logger.error("daemon failed to start; cleaning up")
            await self._shutdown(flush_timeout=0)
            raise
        self._started_at = time.monotonic()
        self.state = DaemonState.RUNNING
        logger.info("memory daemon running (home %s, provider %s)", self.settings.home, self.provider.name)

    async def _start_parts(self) -> None:
        if self._provider is None:
            from ..providers import make_provider

            self._provider = make_provider(self.settings)
            await self._provider.start()
        provider = self._provider
        # a store that cannot answer (a provider handed over unstarted, a broken file) fails the start
        # here, before the queue is claimed: the daemon never holds the queue it cannot work on
        await provider.list(user_id="", limit=1)
        classifier = self._classifier
        if classifier is None:
            from ..extraction.factory import make_classifier

            classifier = make_classifier(self.settings)
        self.pipeline = Pipeline(provider, self.settings, gate=self._gate, extractor=self._extractor,
                                 classifier=classifier)
        _ = self.pipeline.gate, self.pipeline.extractor  # build them now, not on the first turn
        self.pipeline.journal = self.queue.save_notes  # extracted notes survive a crash before storage
        self.executor.warm_up(self._spawn(self.executor.load_model(), name="warm-up"))
        await self._claim_queue()
        self.runs["replayed-events"] += await self.executor.replay_queued_events()
        self._spawn(self._supervise("queue-worker", self._run_worker))
        self._spawn(self._health_loop())
        if self.schedule:
            from .schedule import start_scheduler

            self.scheduler = start_scheduler(self)
        if self.serve_socket:
            await self.ipc.start()
        if self.serve_api and self.settings.daemon.api_port:
            async def serve_api() -> None:
                try:  # after start() returns; its imports (~0.5 s) in a thread, off the event loop
                    await asyncio.to_thread(importlib.import_module, "dexai_memory.api.app")
                    from ..api.requests import default_user
                    from ..api.server import ApiServer

                    api = ApiServer(self.settings, provider, default_user(), write_lock=self.write_lock)
                    if await api.start(self.settings.daemon.api_port):
                        self.api = api
                finally:
                    self.api_ready.set()

            self._spawn(serve_api(), name="api-start")

    async def _claim_queue(self) -> None:
        """Become the queue's consumer. A hook extracting inline holds it for a few seconds at
        most, so wait up to :data:`CLAIM_WAIT` for it; another daemon holds it for good (raises)."""
        deadline = time.monotonic() + CLAIM_WAIT
        while True:
            try:
                await asyncio.to_thread(self.queue.claim)
                return
            except QueueError:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.2)

    async def stop(self, flush_timeout: float = DEFAULT_FLUSH_TIMEOUT) -> None:
        """Stop accepting work, let the worker finish what is due (up to ``flush_timeout``
        seconds), cancel the background tasks and close what the daemon opened. Idempotent."""
        if self.state in (DaemonState.STOPPING, DaemonState.STOPPED):
            await self._stopped.wait()
            return
        if self.state is DaemonState.CREATED:
            self.state = DaemonState.STOPPED
            self._stopped.set()
            return
        self.state = DaemonState.STOPPING
        await self._shutdown(flush_timeout=flush_timeout)

    async def _shutdown(self, *, flush_timeout: float) -> None:
        try:
            with contextlib.suppress(DexaiMemoryError, OSError):
                await self.ipc.aclose()
            if self.scheduler is not None:
                self.scheduler.shutdown(wait=False)
                self.scheduler = None
            if flush_timeout > 0 and self.queue.running:
                flushed = await self.queue.flush(flush_timeout)
                if not flushed:
                    logger.warning("queue not drained within %ss; the rest stays in %s for the next start",
                                   flush_timeout, self.queue.path)
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            if tasks:
                done, pending = await asyncio.wait(tasks, timeout=CANCEL_TIMEOUT)
                for task in pending:
                    logger.error("background task %s did not stop within %ss", task.get_name(), CANCEL_TIMEOUT)
            if self.api is not None:  # after its start task is done: the provider outlives it
                await self.api.aclose()
                self.api = None
            self.queue.close()
            if self._owns_provider and self._provider is not None:
                await self._provider.aclose()
                self._provider = None
        finally:
            self.state = DaemonState.STOPPED
            self._stopped.set()
            logger.info("memory daemon stopped")

    async def wait_until_stopped(self) -> None:
        """Wait until :meth:`stop` has finished (from any task)."""
        await self._stopped.wait()

    # ------------------------------------------------------------------ background tasks
    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name or getattr(coro, "__name__", None))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        """Run ``coro`` as one of the daemon's background tasks (cancelled by :meth:`stop`); a
        failure is logged. For work a hook's answer need not wait for (retrieval counters)."""
        task = self._spawn(coro, name)
        task.add_done_callback(_log_failure)
        return task

    async def _supervise(self, name: str, factory: Callable[[], Awaitable[None]], pause: float = 1.0) -> None:
        """Run ``factory()`` until cancelled; log and restart it after ``pause`` if it crashes."""
        while True:
            try:
                await factory()
                return
            except asyncio.CancelledError:
                raise
            except Exception:  # a crashed worker is restarted, never left dead silently
                self.runs[f"{name}.crash"] += 1
                logger.exception("%s crashed; restarting in %.1fs", name, pause)
                await asyncio.sleep(pause)

    async def _run_worker(self) -> None:
        if not self.queue.running:  # after a crash of the worker: claim again
            self.queue.claim()
        await self.queue.run(self._handle)

    async def _handle(self, jobs: Sequence[Job]) -> None:
        assert self.pipeline is not None
        async with self.write_lock:
            await self.pipeline.handle(jobs)

    async def _health_loop(self) -> None:
        interval = self.settings.daemon.health_interval_seconds
        while True:
            await self.check_health()
            await asyncio.sleep(interval)

    async def check_health(self) -> dict[str, Any]:
        """Check the provider and the queue now; returns (and keeps) :meth:`health`."""
        try:
            status = await self.provider.health_check()
            provider = {"healthy": status.healthy, "name": status.provider, "problems": list(status.problems)}
        except DexaiMemoryError as exc:
            provider = {"healthy": False, "name": getattr(self._provider, "name", "?"), "problems": [str(exc)]}
        self._last_health = {"provider": provider, "checked_at": utcnow().isoformat()}
        health = await asyncio.to_thread(self.health)  # the queue's counts are sqlite reads
        if not health["healthy"]:
            logger.warning("daemon health: %s", "; ".join(health["problems"]))
        return health

    def health(self) -> dict[str, Any]:
        """State, provider health (last check), queue depth, batch latency, dead letters."""
        problems: list[str] = []
        queue: dict[str, Any] = {}
        try:
            queue = self.queue.stats().to_dict()
        except DexaiMemoryError as exc:
            problems.append(f"queue: {exc}")
        provider = self._last_health.get("provider") or {}
        if provider and not provider.get("healthy"):
            problems.extend(f"provider: {p}" for p in provider.get("problems") or ["unhealthy"])
        if queue.get("dead"):
            problems.append(f"{queue['dead']} dead letter(s): run 'dexai memory retry'")
        if self.running and not self.queue.running:
            problems.append("the queue worker is not running")
        return {
            "healthy": not problems and self.running,
            "state": self.state.value,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self._started_at, 1) if self._started_at else 0.0,
            "provider": provider,
            "queue": queue,
            "worker_running": self.queue.running,
            "pipeline": self.pipeline.totals.to_dict() if self.pipeline else {},
            "scheduled": self.next_runs(),
            "runs": dict(self.runs),
            "problems": problems,
            "checked_at": self._last_health.get("checked_at"),
        }

    # ------------------------------------------------------------------ scheduler
    def next_runs(self) -> dict[str, str | None]:
        """Next run time of each scheduled job (ISO), for health and ``dexai daemon``."""
        if self.scheduler is None:
            return {}
        return {job.id: job.next_run_time.isoformat() if job.next_run_time else None
                for job in self.scheduler.get_jobs()}

    async def users(self) -> list[str]:
        """Users to maintain: every user of the store when it can list them, else those seen."""
        from ..consolidation import known_users

        return sorted(set(await known_users(self.provider)) | self._users)

    def _consolidation_models(self) -> tuple[Summarizer, FormWriter]:
        """The summarizer and the compression forms' writer (the model when extraction has one,
        else the offline ones), made at the first run and kept."""
        if self._summarizer is None:
            from ..extraction.factory import make_summarizer

            self._summarizer = make_summarizer(self.settings)
        if self._form_writer is None:
            from ..extraction.factory import make_form_writer

            self._form_writer = make_form_writer(self.settings)
        return self._summarizer, self._form_writer

    async def run_consolidation(self, user_id: str | None = None) -> dict[str, Any]:
        """Consolidate one user's memories (or every user's) now; returns the reports."""
        from ..consolidation import consolidate

        reports = {}
        for user in [user_id] if user_id else await self.users():
            try:
                async with self.write_lock:
                    summarizer, form_writer = self._consolidation_models()
                    report = await consolidate(self.provider, user, self.settings, summarizer,
                                               form_writer=form_writer)
                reports[user] = report.to_dict()
            except DexaiMemoryError as exc:
                logger.error("consolidation for %s failed: %s", user, exc)
                reports[user] = {"error": str(exc)}
        self.runs["consolidation"] += 1
        self.last_reports["consolidation"] = reports
        return reports

    async def run_cleanup(self, user_id: str | None = None) -> dict[str, Any]:
        """Apply the retention table, then the fact lifecycle (expiry, the cap on durable facts,
        clears past their undo window: :mod:`dexai_memory.lifecycle`) to one user (or every
        user) now; returns the reports."""
        from ..consolidation import cleanup
        from ..lifecycle.clear import purge_expired
        from ..lifecycle.eviction import run_lifecycle

        reports = {}
        for user in [user_id] if user_id else await self.users():
            try:
                async with self.write_lock:
                    reports[user] = (await cleanup(self.provider, user, self.settings)).to_dict()
                    life = await run_lifecycle(self.provider, user, self.settings.lifecycle)
                    life.purged_clears = await purge_expired(self.provider, self.settings.home, user,
                                                             self.settings.lifecycle)
                    reports[user]["lifecycle"] = life.to_dict()
            except DexaiMemoryError as exc:
                logger.error("cleanup for %s failed: %s", user, exc)
                reports[user] = {"error": str(exc)}
        with contextlib.suppress(DexaiMemoryError):
            await asyncio.to_thread(self.queue.purge_done)
        self.runs["cleanup"] += 1
        self.last_reports["cleanup"] = reports
        return reports

    async def run_vector_fill(self) -> int:
        """Embed up to ``daemon.vector_fill_batch`` memories stored with deferred vectors (bulk ingest)."""
        done, limit, slice_ = 0, self.settings.daemon.vector_fill_batch, 64
        try:
            if not await self.provider.pending_vectors():
                return 0
            # the bulk model (int8 MiniLM, built once on first use) on the daemon's own threads,
            # loaded before the lock is taken
            bulk = bulk_embedder(self.settings.embedding, threads=self.settings.embedding.threads)
            own = self.provider.embedder
            if bulk is None or own is None or bulk.model_id != own.model_id:
                bulk = None  # a provider with an embedder of its own: it fills with that
            else:
                await bulk.aembed("load")
            while done < limit:
                want = min(slice_, limit - done)
                # small slices, so the queue worker's writes never wait long for the lock
                async with self.write_lock:
                    n = await self.provider.fill_vectors(limit=want, batch=want, embedder=bulk)
                done += n
                if n < want:  # nothing more waiting
                    break
        except DexaiMemoryError as exc:
            logger.error("vector fill failed: %s", exc)
        except asyncio.CancelledError:  # shutdown: what is left waits for the next run
            logger.info("vector fill interrupted by shutdown after %d memories", done)
            raise
        if done:
            logger.info("embedded %d memories stored with deferred vectors", done)
            self.runs["vectors"] += 1
        return done

    async def run_backup(self) -> dict[str, Any]:
        """Back up memory.db and queue.db into ``<home>/backups`` now (see :mod:`dexai_memory.backup`).

        Runs in a thread (the online backup API reads a snapshot while the
        worker keeps writing); a failure is logged and reported, never raised.
        """
        from ..backup import create_backup

        try:
            made = await asyncio.to_thread(create_backup, self.settings)
            report: dict[str, Any] = made.to_dict()
        except (DexaiMemoryError, OSError) as exc:
            logger.error("scheduled backup failed: %s", exc)
            report = {"error": str(exc)}
        self.runs["backup"] += 1
        self.last_reports["backup"] = report
        return report

    def schedule_consolidation(self, user_id: str) -> bool:
        """Run a consolidation of ``user_id`` soon (in the background). False if not running."""
        if not self.running:
            return False
        if self.scheduler is not None:
            self.scheduler.add_job(self.run_consolidation, "date", args=[user_id], id=f"consolidate:{user_id}",
                                   replace_existing=True, misfire_grace_time=3600)
        else:
            self._spawn(self.run_consolidation(user_id), name=f"consolidate:{user_id}")
        return True

    # ------------------------------------------------------------------ warm path entry points
    def submit_turn(self, turn: Turn, recent: Sequence[str] = ()) -> GateResult:
        """Hold ``turn`` to ``limits.max_turn_chars`` (head and tail), redact and gate it; queue it
        if it passes. Never waits on extraction. ``recent``: turns of its session the daemon has
        not seen (its context for the gate), held to the same cap.

        Returns the gate's verdict. Raises :class:`DaemonError` when the
        daemon is not running, :class:`QueueError` when the queue refuses it
        (``overflow_policy: reject``).
        """
        if self.state not in (DaemonState.RUNNING, DaemonState.STARTING) or self.pipeline is None:
            raise DaemonError(f"the daemon is {self.state.value}: cannot accept turns")
        cap = self.settings.limits.max_turn_chars
        key = (turn.user_id, turn.session_id)
        seen = self.recent.extend(key, (clip(str(text), cap) for text in recent))
        admission = admit(turn, seen, self.pipeline.gate, max_chars=cap)  # clip, redact, then gate
        clean, verdict = admission.turn, admission.verdict
        if clean is None:
            return verdict
        self._users.add(clean.user_id)
        if verdict.passed:
            self.queue.enqueue(clean, context=admission.context)
        elif admission.evidence is None and self._loop is not None:
            signal = self.second_look.wanted(verdict, self.pipeline.gate.threshold)
            if signal is not None:  # the embedding is not waited for: a second look in the background
                self._loop.call_soon_threadsafe(self._look_again, signal, clean, admission.context, verdict)
        self.recent.append(key, clean.content)
        return verdict

    def _look_again(self, signal: Divergence, turn: Turn, context: Sequence[str], verdict: GateResult) -> None:
        if self.state not in (DaemonState.RUNNING, DaemonState.STARTING) or self.pipeline is None:
            return

        def enqueue(turn: Turn, context: tuple[str, ...]) -> None:
            self.queue.enqueue(turn, context=context)
            self.runs["divergence-admitted"] += 1
            self.queue.notify()

        self.spawn(self.second_look.reconsider(signal, turn, context, verdict, self.pipeline.gate.threshold,
                                               enqueue), "second-look")

    async def flush(self, timeout: float | None = DEFAULT_FLUSH_TIMEOUT) -> bool:  # noqa: ASYNC109 - API
        """Process every queued turn that is due now; True when done within ``timeout``."""
        if not self.running:
            return False
        return await self.queue.flush(timeout)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("background task %s failed", task.get_name(), exc_info=task.exception())
