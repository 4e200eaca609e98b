"""The Ray backend: a pool of Ray actors, each running the local fork-server sandbox on its node.

``pip install 'codea1[ray]'``. Each actor holds one
:class:`~codea1_env.sandbox.local.LocalSandbox` with ``workers_per_actor`` warm, confined workers,
so every job gets exactly the local backend's isolation, limits and results; Ray only carries jobs
to the actors and results back. Jobs and results are frozen dataclasses of plain data: they
pickle.

How a batch runs (:meth:`RaySandbox.run`):

* **Split by load.** The batch is cut into chunks on the fly. A live actor with room (fewer than
  :data:`CHUNKS_IN_FLIGHT` chunks outstanding) and the lowest load (outstanding jobs per worker)
  gets the next chunk, sized to its share of what is left
  (``ceil(left * its_workers / (live_workers * CHUNKS_IN_FLIGHT))``, at least one job per
  worker). Chunks therefore start large and shrink toward the end of the batch, and a fast actor
  simply comes back for more: few round trips, no straggler holding a big tail. Each actor runs
  its outstanding chunks concurrently on its worker pool, so its workers never wait for a round
  trip.
* **Failure.** When an actor dies (node lost, process killed, ``ray.kill``), fails inside, or
  holds a chunk past the chunk's deadline (the sum of its jobs' time limits plus
  ``hang_timeout_s``: a frozen node), it is killed, every chunk it held goes back to the front of
  the queue for a live actor, and a replacement actor is started in the background. A chunk's
  result is recorded only from the call that completed, so no job is lost or counted twice.
* **Bounds.** A job may be re-run ``max_retries`` times after failures; one more failure raises
  :class:`~codea1_env.sandbox.base.SandboxUnavailable` (never a made-up verdict). A slot whose
  actor fails ``max_retries + 1`` times in a row without finishing a chunk is given up for the
  rest of the batch (tried again on the next batch). With no live actor and none starting,
  :meth:`RaySandbox.run` raises :class:`~codea1_env.sandbox.base.SandboxUnavailable`.

Start-up (``ray.init`` when needed, actors, their fork servers) takes a few seconds: create one
``RaySandbox`` per run and reuse it for every batch.

Every node that hosts an actor must be able to import ``codea1_env``: install the package there,
or ship it with the job, ``ray.init(runtime_env={"py_modules": [codea1_env]})`` (or the same in
``init_kwargs``); see ``docs/scale_out.md``.
"""

from __future__ import annotations

import collections
import math
import os
import re
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codea1_env.sandbox.base import IsolationReport, Job, JobResult, SandboxUnavailable
from codea1_env.sandbox.layers import python_versions, resolve_required
from codea1_env.sandbox.pool import check_jobs

__all__ = ["CHUNKS_IN_FLIGHT", "RAY_EXTRA", "RaySandbox", "SandboxActor", "job_time_bound"]

RAY_EXTRA = "pip install 'codea1[ray]'"
"""How to install Ray for this backend."""
CHUNKS_IN_FLIGHT = 2
"""Chunks outstanding per actor (one running while the next is already there)."""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Unavailable|Exit|Interrupt)\b[^:]*: ")
_POLL_S = 1.0
"""Longest single wait for results, so deadlines are checked at least this often."""


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SandboxUnavailable(f"the Ray sandbox backend needs Ray: {RAY_EXTRA}") from None
    return ray


def job_time_bound(job: Job) -> float:
    """Longest a healthy worker can take on ``job``, in seconds (its limits, plus 1 s of slack).

    Every call may run in a child of its own (after a crash or an exit the next call starts a
    fresh child, which runs the program's top level again), so each call counts with a setup;
    with CPU timeouts every phase may last up to its wall-clock backstop.
    """
    limits = job.limits
    scale = limits.wall_backstop_factor if limits.timeout_clock == "cpu" else 1.0
    children = max(1, job.n_calls)
    phases = children * limits.setup_timeout_s + job.n_calls * limits.call_timeout_s
    return phases * scale + 1.0


class SandboxActor:
    """The body of one Ray actor: a :class:`~codea1_env.sandbox.local.LocalSandbox` on its node.

    :class:`RaySandbox` wraps this class with ``ray.remote``; it is an ordinary class so that it
    can be read, and tested, without Ray.

    Args:
        workers: Worker processes of the local sandbox.
        require: Isolation layers the local sandbox must have (resolved by the driver).
        local_options: More :class:`~codea1_env.sandbox.local.LocalSandbox` keyword arguments.

    Raises:
        SandboxUnavailable: the local sandbox cannot start on this node.
    """

    def __init__(
        self, workers: int, require: Sequence[str], local_options: Mapping[str, Any]
    ) -> None:
        from codea1_env.sandbox.local import LocalSandbox

        self._sandbox = LocalSandbox(workers=workers, require=tuple(require), **local_options)

    def describe(self) -> dict[str, Any]:
        """Where this actor runs and what its sandbox provides.

        Returns:
            ``{"host", "pid", "workers", "worker_pids", "isolation"}``.
        """
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "workers": self._sandbox.workers,
            "worker_pids": self._sandbox.worker_pids(),
            "isolation": self._sandbox.isolation(),
        }

    def run(self, jobs: list[Job]) -> list[JobResult]:
        """Run a chunk of jobs on this node's workers; one result per job, in order."""
        return self._sandbox.run(jobs)

    def close(self) -> None:
        """Stop the local sandbox (its workers, uids and scratch directories)."""
        self._sandbox.close()


@dataclass
class _Chunk:
    """Positions of some jobs of the batch, sent to one actor in one call."""

    positions: list[int]
    failures: int = 0


@dataclass
class _Slot:
    """One place in the pool: the current actor (replaced when it dies) and its bookkeeping."""

    index: int
    workers: int
    handle: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    live: bool = False
    starting: Any = None
    in_flight_jobs: int = 0
    in_flight_chunks: int = 0
    failures_in_a_row: int = 0


@dataclass
class _Flight:
    """A chunk on its way: the actor slot, the chunk and when to give up on that actor."""

    slot: _Slot
    chunk: _Chunk
    deadline: float


def _combine_reports(infos: Sequence[Mapping[str, Any]]) -> IsolationReport:
    """The layers active on every actor, reported as backend ``"ray"``."""
    reports: list[IsolationReport] = [info["isolation"] for info in infos]
    layers = dict(reports[0].layers)
    for report in reports[1:]:
        layers = {name: on and report.layers.get(name, False) for name, on in layers.items()}
    notes = [
        f"actors run {reports[0].backend} sandboxes; one per actor on: "
        + ", ".join(sorted({f"{info['host']} ({info['workers']} workers)" for info in infos}))
    ]
    for report in reports:
        notes.extend(note for note in report.notes if note not in notes)
    python = python_versions(v for r in reports for v in r.python.split(", "))
    return IsolationReport(backend="ray", layers=layers, notes=tuple(notes), python=python)


class RaySandbox:
    """Run jobs on a pool of Ray actors, each a local fork-server sandbox on its node.

    Args:
        actors: Number of actors. ``None``: the cluster's free CPUs divided by the CPUs one actor
            asks for (at least 1).
        workers_per_actor: Worker processes in each actor's local sandbox (parallel jobs per
            actor). On a cluster, set it to the cores of a CPU node.
        address: Ray cluster to connect to when Ray is not initialized yet (``"auto"``,
            ``"ray://head:10001"`` ...); ``None`` starts a local Ray instance or joins the one in
            ``$RAY_ADDRESS``.
        init_kwargs: More ``ray.init`` arguments, used only when this sandbox initializes Ray
            (for example ``{"num_cpus": 2, "include_dashboard": False}``).
        require: Isolation layers every actor's sandbox must have; ``None`` resolves the local
            default here, on the driver (``$CODEA1_SANDBOX_REQUIRE``, else
            :data:`~codea1_env.sandbox.layers.DEFAULT_REQUIRED_LAYERS`); ``()`` requires nothing.
        max_retries: Times a job is re-run after the actor running it failed, and times in a row
            a slot's actor is replaced, before giving up (see the module docstring).
        actor_options: More ``ActorClass.options(...)`` arguments, for example
            ``{"resources": {"sandbox_node": 1}}`` to keep actors on the CPU nodes that
            advertise that resource, or ``{"num_cpus": 8}`` (default: ``workers_per_actor`` CPUs
            per actor and the ``"SPREAD"`` scheduling strategy).
        local_options: More :class:`~codea1_env.sandbox.local.LocalSandbox` arguments for every
            actor (``confinement``, ``tmp_mb``, ``python_paths``, ``preimport``).
        start_timeout_s: How long the actors may take to be placed and started.
        hang_timeout_s: Seconds an actor may hold a chunk beyond the sum of its jobs' time limits
            before it is considered frozen, killed and replaced.

    Raises:
        SandboxUnavailable: Ray is not installed or cannot start, the actors cannot be placed
            within ``start_timeout_s``, or an actor's local sandbox cannot start (the message
            carries its reason, for example a missing isolation layer).
        ValueError: bad arguments.

    Example:
        >>> with RaySandbox(actors=2, workers_per_actor=1) as sandbox:     # doctest: +SKIP
        ...     [result] = sandbox.run([Job("def f(x): return x + 1", calls=("f(1)",))])
        >>> result.calls[0].value                                          # doctest: +SKIP
        2
    """

    def __init__(
        self,
        actors: int | None = None,
        workers_per_actor: int = 2,
        address: str | None = None,
        init_kwargs: Mapping[str, Any] | None = None,
        require: Sequence[str] | None = None,
        max_retries: int = 2,
        *,
        actor_options: Mapping[str, Any] | None = None,
        local_options: Mapping[str, Any] | None = None,
        start_timeout_s: float = 120.0,
        hang_timeout_s: float = 60.0,
    ) -> None:
        if actors is not None and int(actors) < 1:
            raise ValueError(f"actors must be at least 1, got {actors}")
        if int(workers_per_actor) < 1:
            raise ValueError(f"workers_per_actor must be at least 1, got {workers_per_actor}")
        if int(max_retries) < 0:
            raise ValueError(f"max_retries must not be negative, got {max_retries}")
        if not start_timeout_s > 0 or not hang_timeout_s > 0:
            raise ValueError("start_timeout_s and hang_timeout_s must be positive")
        self.required = resolve_required(require)
        self.workers_per_actor = int(workers_per_actor)
        self.max_retries = int(max_retries)
        self.hang_timeout_s = float(hang_timeout_s)
        self.last_run: dict[str, float] = {}
        """Counters of the latest :meth:`run`: ``jobs``, ``chunks``, ``resubmitted_jobs``,
        ``actor_failures``, ``restarts`` and ``seconds``."""
        self._local_options = dict(local_options or {})
        self._lock = threading.Lock()
        self._closed = False
        self._slots: list[_Slot] = []
        self._ray = _import_ray()
        self._owns_ray = False
        if not self._ray.is_initialized():
            try:
                self._ray.init(address=address, **dict(init_kwargs or {}))
            except Exception as exc:  # noqa: BLE001 - any start failure means "no Ray here"
                raise SandboxUnavailable(f"Ray cannot start: {exc}") from None
            self._owns_ray = True
        try:
            self._options = self._actor_options(actor_options)
            count = self._actor_count(actors)
            self._actor_class = self._ray.remote(SandboxActor)
            self._start_pool(count, start_timeout_s)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- start-up
    def _actor_options(self, extra: Mapping[str, Any] | None) -> dict[str, Any]:
        options: dict[str, Any] = {
            "num_cpus": self.workers_per_actor,
            "scheduling_strategy": "SPREAD",
        }
        options.update(extra or {})
        options["max_concurrency"] = CHUNKS_IN_FLIGHT
        options["max_restarts"] = 0  # replacements are started by the pool, which knows why
        return options

    def _actor_count(self, actors: int | None) -> int:
        cpus_each = float(self._options.get("num_cpus") or 0)
        total = float(self._ray.cluster_resources().get("CPU", 0))
        if cpus_each > total:
            raise SandboxUnavailable(
                f"one sandbox actor asks for {cpus_each:g} CPUs but the Ray cluster has "
                f"{total:g}; lower workers_per_actor or pass actor_options={{'num_cpus': ...}}"
            )
        if actors is not None:
            return int(actors)
        free = float(self._ray.available_resources().get("CPU", 0))
        return max(1, int(free // cpus_each)) if cpus_each else 1

    def _launch(self, slot: _Slot) -> None:
        """Start an actor for ``slot``; it joins the pool when its ``describe`` call returns."""
        slot.handle = self._actor_class.options(**self._options).remote(
            self.workers_per_actor, self.required, self._local_options
        )
        slot.live = False
        slot.starting = slot.handle.describe.remote()

    def _start_pool(self, count: int, timeout_s: float) -> None:
        self._slots = [_Slot(index=i, workers=self.workers_per_actor) for i in range(count)]
        for slot in self._slots:
            self._launch(slot)
        refs = [slot.starting for slot in self._slots]
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        if len(ready) < len(refs):
            raise SandboxUnavailable(
                f"only {len(ready)} of {count} sandbox actors started within {timeout_s:g} s "
                f"(each asks for {self._options})); cluster resources: "
                f"{self._ray.cluster_resources()}"
            )
        for slot in self._slots:
            try:
                slot.info = self._ray.get(slot.starting)
            except Exception as exc:  # noqa: BLE001 - the actor's own error, passed on
                reason = _reason(exc)
                if "No module named" in reason:
                    reason += (
                        "\nEvery node that hosts a sandbox actor must be able to import "
                        "codea1_env: install codea1 there, or ship it with the job: "
                        "ray.init(runtime_env={'py_modules': [codea1_env]}) (or the same in "
                        "RaySandbox(init_kwargs=...))."
                    )
                raise SandboxUnavailable(f"a sandbox actor could not start: {reason}") from None
            slot.starting = None
            slot.live = True
        self._report = _combine_reports([slot.info for slot in self._slots])

    # ----------------------------------------------------------------- Sandbox protocol
    def run(self, jobs: Sequence[Job]) -> list[JobResult]:
        """Run a batch on the pool; one result per job, in job order.

        Calls from several threads are served one batch at a time.

        Raises:
            TypeError, ValueError: malformed jobs (nothing is run).
            SandboxUnavailable: the sandbox is closed, no actor is left, or a job's actor failed
                more than ``max_retries`` times.
        """
        if self._closed:
            raise SandboxUnavailable("the sandbox is closed")
        check_jobs(jobs)
        if not jobs:
            return []
        with self._lock:
            return _Batch(self, list(jobs)).run()

    def isolation(self) -> IsolationReport:
        """The layers active in every actor's local sandbox, as backend ``"ray"``."""
        return self._report

    def close(self) -> None:
        """Stop every actor (and Ray, when this sandbox started it). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop_actors()

    def _stop_actors(self) -> None:
        ray = self._ray
        if not ray.is_initialized():  # Ray is down already: so are the actors
            for slot in self._slots:
                slot.handle, slot.live, slot.starting = None, False, None
            return
        closing = []
        for slot in self._slots:
            if slot.handle is not None and slot.live:
                closing.append(slot.handle.close.remote())
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=10.0)
        for slot in self._slots:
            if slot.handle is not None:
                self._kill(slot)
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()

    def __enter__(self) -> RaySandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- introspection
    @property
    def actors(self) -> int:
        """Number of actor slots in the pool."""
        return len(self._slots)

    @property
    def workers(self) -> int:
        """Worker processes over all actors (parallel jobs)."""
        return sum(slot.workers for slot in self._slots)

    @property
    def owns_ray(self) -> bool:
        """True when this sandbox called ``ray.init`` (and :meth:`close` shuts Ray down)."""
        return self._owns_ray

    def actor_handles(self) -> list[Any]:
        """The Ray handles of the live actors (for monitoring, or to kill one in a test)."""
        return [slot.handle for slot in self._slots if slot.live]

    def actor_info(self) -> list[dict[str, Any]]:
        """What each live actor reported when it started (host, pid, workers, worker pids)."""
        return [dict(slot.info) for slot in self._slots if slot.live]

    def wait_ready(self, timeout_s: float = 60.0) -> int:
        """Wait for replacement actors that are still starting, and let them join the pool.

        A replacement started during a batch joins the pool when the batch sees it start. One
        still starting when its batch ends joins at the next batch, or here: call this before
        reading :meth:`actor_handles` or :meth:`actor_info` if every slot must be filled. A
        replacement that fails to start is dropped here and started again by the next batch.

        Args:
            timeout_s: How long to wait for the starting actors, in seconds.

        Returns:
            The number of live actors afterwards.

        Raises:
            SandboxUnavailable: the sandbox is closed.
        """
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("the sandbox is closed")
            starting = {s.starting: s for s in self._slots if s.starting is not None}
            if starting:
                ready, _ = self._ray.wait(
                    list(starting), num_returns=len(starting), timeout=timeout_s
                )
                for ref in ready:
                    self._join(starting[ref])  # one that failed is started again by a batch
            return sum(1 for slot in self._slots if slot.live)

    # ----------------------------------------------------------------- helpers for _Batch
    def _join(self, slot: _Slot) -> str | None:
        """Let ``slot``'s started actor join the pool; on a failed start kill it, say why."""
        try:
            slot.info = self._ray.get(slot.starting)
        except Exception as exc:  # noqa: BLE001 - the actor's own start failed
            self._kill(slot)
            return _reason(exc)
        slot.starting = None
        slot.live = True
        return None

    def _kill(self, slot: _Slot) -> None:
        handle, slot.handle, slot.live, slot.starting = slot.handle, None, False, None
        slot.in_flight_jobs = slot.in_flight_chunks = 0
        try:
            self._ray.kill(handle, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone is what we want
            return


def _reason(exc: BaseException) -> str:
    """The message of the error behind a Ray error, without Ray's traceback and colours.

    Ray reports an actor's failure as text holding the remote traceback; the reason is its last
    unindented ``Type: message`` line and whatever follows it.
    """
    cause = getattr(exc, "cause", None)
    text = _ANSI.sub("", str(cause if cause is not None else exc)).strip()
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _ERROR_LINE.match(line)]
    if starts:
        lines = lines[starts[-1] :]
    elif lines:
        lines = lines[-1:]
    return "\n".join(lines).strip()[:2000] or type(exc).__name__


class _Batch:
    """One :meth:`RaySandbox.run` call: dispatch chunks, collect results, recover from failures."""

    def __init__(self, pool: RaySandbox, jobs: list[Job]) -> None:
        self.pool = pool
        self.ray = pool._ray
        self.jobs = jobs
        self.results: list[JobResult | None] = [None] * len(jobs)
        self.unassigned = collections.deque(range(len(jobs)))
        self.retry: collections.deque[_Chunk] = collections.deque()
        self.flights: dict[Any, _Flight] = {}
        self.done = 0
        self.last_reason = ""
        self.stats: dict[str, float] = {
            "jobs": len(jobs),
            "chunks": 0,
            "resubmitted_jobs": 0,
            "actor_failures": 0,
            "restarts": 0,
        }

    def run(self) -> list[JobResult]:
        started = time.perf_counter()
        for slot in self.pool._slots:
            if slot.handle is None:  # lost in an earlier batch: a fresh budget of restarts
                slot.failures_in_a_row = 0
                self._restart(slot)
        try:
            while self.done < len(self.jobs):
                self._dispatch()
                self._collect()
        finally:
            self.pool.last_run = {**self.stats, "seconds": time.perf_counter() - started}
        return [result for result in self.results if result is not None]

    # ----------------------------------------------------------------- dispatch
    def _next_chunk(self, slot: _Slot) -> _Chunk | None:
        if self.retry:
            return self.retry.popleft()
        left = len(self.unassigned)
        if not left:
            return None
        live_workers = sum(s.workers for s in self.pool._slots if s.live)
        share = math.ceil(left * slot.workers / (live_workers * CHUNKS_IN_FLIGHT))
        size = min(left, max(slot.workers, share))
        return _Chunk([self.unassigned.popleft() for _ in range(size)])

    def _dispatch(self) -> None:
        """Give chunks to the least-loaded live actors with room, until none has room or work."""
        while self.retry or self.unassigned:
            room = [s for s in self.pool._slots if s.live and s.in_flight_chunks < CHUNKS_IN_FLIGHT]
            if not room:
                return
            slot = min(room, key=lambda s: (s.in_flight_jobs / s.workers, s.index))
            chunk = self._next_chunk(slot)
            if chunk is None:
                return
            jobs = [self.jobs[p] for p in chunk.positions]
            bound = sum(job_time_bound(job) for job in jobs)
            # Chunks on one actor share its workers: this one may wait for those already there.
            held = [f.deadline for f in self.flights.values() if f.slot is slot]
            deadline = time.monotonic() + bound + self.pool.hang_timeout_s
            if held:
                deadline = max(deadline, max(held) + bound)
            ref = slot.handle.run.remote(jobs)
            self.flights[ref] = _Flight(slot, chunk, deadline)
            slot.in_flight_jobs += len(jobs)
            slot.in_flight_chunks += 1
            self.stats["chunks"] += 1

    # ----------------------------------------------------------------- collection
    def _collect(self) -> None:
        """Wait for one chunk or one starting actor (or the nearest deadline) and handle it."""
        starting = {s.starting: s for s in self.pool._slots if s.starting is not None}
        if not self.flights and not starting:
            raise SandboxUnavailable(
                f"every Ray sandbox actor is dead and could not be replaced ({self.done} of "
                f"{len(self.jobs)} jobs finished); last failure: {self.last_reason}"
            )
        now = time.monotonic()
        nearest = min((f.deadline for f in self.flights.values()), default=now + _POLL_S)
        timeout = min(_POLL_S, max(0.0, nearest - now))
        ready, _ = self.ray.wait([*self.flights, *starting], num_returns=1, timeout=timeout)
        for ref in ready:
            if ref in starting:
                self._started(starting[ref])
            elif ref in self.flights:
                self._finished(ref)
        now = time.monotonic()
        late = {f.slot.index: f.slot for f in self.flights.values() if f.deadline < now}
        for slot in late.values():
            self._fail(slot, "it held a chunk past the chunk's deadline (frozen?)")

    def _started(self, slot: _Slot) -> None:
        reason = self.pool._join(slot)
        if reason is not None:  # the replacement failed to start
            self.last_reason = f"a replacement actor could not start: {reason}"
            slot.failures_in_a_row += 1
            self._restart(slot)

    def _finished(self, ref: Any) -> None:
        flight = self.flights[ref]
        slot, positions = flight.slot, flight.chunk.positions
        try:
            results = self.ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - actor death or an error inside the actor
            self._fail(slot, _reason(exc))
            return
        if not isinstance(results, list) or len(results) != len(positions):
            self._fail(slot, f"it returned {type(results).__name__} for {len(positions)} jobs")
            return
        del self.flights[ref]
        slot.in_flight_jobs -= len(positions)
        slot.in_flight_chunks -= 1
        slot.failures_in_a_row = 0
        for position, result in zip(positions, results):
            if self.results[position] is not None:
                raise RuntimeError(f"job {position} got a second result (a RaySandbox bug)")
            self.results[position] = result
        self.done += len(positions)

    # ----------------------------------------------------------------- recovery
    def _fail(self, slot: _Slot, reason: str) -> None:
        """Kill ``slot``'s actor, queue every chunk it held again, start a replacement.

        Raises:
            SandboxUnavailable: a chunk has now failed more than ``max_retries`` times.
        """
        self.stats["actor_failures"] += 1
        self.last_reason = f"actor {slot.index}: {reason}"
        lost = [ref for ref, f in self.flights.items() if f.slot is slot]
        self.pool._kill(slot)
        for ref in lost:
            chunk = self.flights.pop(ref).chunk
            chunk.failures += 1
            if chunk.failures > self.pool.max_retries:
                raise SandboxUnavailable(
                    f"{len(chunk.positions)} job(s) lost the actor running them "
                    f"{chunk.failures} times (max_retries={self.pool.max_retries}); "
                    f"last failure: {self.last_reason}"
                )
            self.stats["resubmitted_jobs"] += len(chunk.positions)
            self.retry.appendleft(chunk)
        slot.failures_in_a_row += 1
        self._restart(slot)

    def _restart(self, slot: _Slot) -> None:
        """Start a replacement for ``slot`` unless it failed too often in a row."""
        if slot.failures_in_a_row > self.pool.max_retries:
            return
        self.stats["restarts"] += 1
        try:
            self.pool._launch(slot)
        except Exception as exc:  # noqa: BLE001 - cannot even submit the actor
            self.last_reason = f"actor {slot.index} could not be restarted: {_reason(exc)}"
            slot.handle = slot.starting = None
