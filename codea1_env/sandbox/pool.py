"""A pool of workers that runs a batch of jobs in parallel, one job per worker at a time.

Backends supply the workers (local processes or containers); the pool hands each job to the next
free worker, so jobs are spread by load. A worker about to go idle waits for its zygote to finish
cleaning up after its last job, so nothing of a batch outlives :meth:`WorkerPool.run`.

A worker whose zygote broke is restarted and the job run again from the start on the fresh
worker; if it breaks that one too, the job is blamed: all its calls are marked CRASH and the
worker is restarted once more. A restart that fails raises
:class:`~codea1_env.sandbox.base.SandboxUnavailable`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from codea1_env.sandbox.base import (
    CallResult,
    CallStatus,
    IsolationReport,
    Job,
    JobResult,
    Limits,
    LimitsError,
    SandboxUnavailable,
)
from codea1_env.sandbox.child import WorkerBroken
from codea1_env.sandbox.driver import ZygoteClient

__all__ = ["PooledSandbox", "PooledWorker", "WorkerPool", "check_jobs"]


class PooledWorker(Protocol):
    """What the pool needs from a worker."""

    name: str

    @property
    def client(self) -> ZygoteClient:
        """The connection to the worker's zygote."""
        ...

    def restart(self) -> None:
        """Replace a broken worker process with a fresh one (may raise SandboxUnavailable)."""
        ...


def check_jobs(jobs: Sequence[Job]) -> None:
    """Reject malformed jobs with a clear error before anything runs.

    Raises:
        TypeError: ``jobs`` is not a sequence of :class:`Job`, or a field has the wrong type.
        ValueError: a limit out of the range the sandbox enforces (see ``Limits.check``).
    """
    if isinstance(jobs, Job) or not isinstance(jobs, Sequence):
        raise TypeError("run() takes a sequence of Job objects")
    checked: set[int] = set()
    for position, job in enumerate(jobs):
        if not isinstance(job, Job):
            raise TypeError(f"jobs[{position}] is {type(job).__name__}, not Job")
        if not isinstance(job.program, str):
            raise TypeError(f"jobs[{position}].program must be str")
        for name in ("calls", "stdin_inputs"):
            items = getattr(job, name)
            if not isinstance(items, (tuple, list)) or not all(isinstance(x, str) for x in items):
                raise TypeError(f"jobs[{position}].{name} must be a tuple of str")
        if job.calls and job.stdin_inputs:
            raise ValueError(f"jobs[{position}] has both calls and stdin_inputs")
        if not isinstance(job.limits, Limits):
            raise TypeError(f"jobs[{position}].limits must be Limits")
        if id(job.limits) in checked:  # a batch's jobs mostly share one Limits
            continue
        checked.add(id(job.limits))
        try:
            job.limits.check()  # built checked; this catches one changed since (__setattr__)
        except LimitsError as exc:
            raise ValueError(
                f"jobs[{position}].limits.{exc.field} = {exc.value!r} is invalid: expected "
                f"{exc.allowed}"
            ) from None


def _broken_result(job: Job, reason: str) -> JobResult:
    error = f"the worker died twice while running this job: {reason}"[:1000]
    return JobResult(
        calls=tuple(CallResult(CallStatus.CRASH, error=error) for _ in range(job.n_calls)),
        setup_status=CallStatus.CRASH,
        setup_error=error,
        tag=job.tag,
        events={"worker_broken": 2},
    )


class _Batch:
    """The jobs of one :meth:`WorkerPool.run` call, taken one at a time (under the pool lock)."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.jobs = jobs
        self.next = 0
        self.done: list[JobResult | None] = [None] * len(jobs)

    def take(self) -> int | None:
        """The index of the next job to run, None when every job was taken."""
        if self.next >= len(self.jobs):
            return None
        self.next += 1
        return self.next - 1

    def results(self) -> list[JobResult]:
        """Every job's result, in order (all jobs must have run)."""
        out = [result for result in self.done if result is not None]
        if len(out) != len(self.jobs):
            raise RuntimeError("a batch finished with jobs that did not run")
        return out


class WorkerPool:
    """Dispatches jobs to workers from a thread per worker."""

    def __init__(self, workers: Sequence[PooledWorker]) -> None:
        if not workers:
            raise ValueError("a pool needs at least one worker")
        self.workers = list(workers)
        self._idle: queue.SimpleQueue[PooledWorker] = queue.SimpleQueue()
        for worker in self.workers:
            self._idle.put(worker)
        self._executor = ThreadPoolExecutor(
            max_workers=len(self.workers), thread_name_prefix="codea1-sandbox"
        )
        self._lock = threading.Lock()
        self._queued = 0  # jobs submitted but not yet started

    def run(self, jobs: Sequence[Job]) -> list[JobResult]:
        """Run ``jobs`` on all workers and return their results in order."""
        with self._lock:
            self._queued += len(jobs)
        if len(jobs) == 1:
            return [self._run_one(jobs[0])]
        # One task per worker that can help, each taking jobs until none is left: far less
        # hand-off per job than a future per job.
        batch = _Batch(jobs)
        tasks = [
            self._executor.submit(self._drain, batch)
            for _ in range(min(len(jobs), len(self.workers)))
        ]
        for task in tasks:
            task.result()
        return batch.results()

    def _run_one(self, job: Job) -> JobResult:
        with self._lock:
            self._queued -= 1
        worker = self._idle.get()
        try:
            return self._run_on(worker, job)
        finally:
            self._release(worker)

    def _drain(self, batch: _Batch) -> None:
        """Take a worker and run the batch's jobs on it until none is left."""
        worker = self._idle.get()
        try:
            while True:
                with self._lock:
                    index = batch.take()
                    if index is None:
                        return
                    self._queued -= 1
                batch.done[index] = self._run_on(worker, batch.jobs[index])
        finally:
            self._release(worker)

    def _release(self, worker: PooledWorker) -> None:
        """Return a worker to the idle set, after its zygote cleaned up if nothing is queued."""
        try:
            with self._lock:
                going_idle = self._queued == 0
            if going_idle:  # let the zygote finish cleaning up before run() returns
                worker.client.settle()
        except WorkerBroken:
            worker.restart()
        finally:
            self._idle.put(worker)

    def _run_on(self, worker: PooledWorker, job: Job) -> JobResult:
        try:
            return worker.client.run_job(job)
        except WorkerBroken:
            worker.restart()
        try:
            return worker.client.run_job(job)
        except WorkerBroken as exc:
            # Twice in a row on the same job: blame the job, not the backend.
            worker.restart()
            return _broken_result(job, str(exc))

    def shutdown(self) -> None:
        """Stop the dispatch threads (workers are stopped by their backend)."""
        self._executor.shutdown(wait=True, cancel_futures=True)


class PooledSandbox:
    """The lifecycle every pool-owning backend shares: run through the pool, report, close.

    Subclasses set ``_pool`` (a :class:`WorkerPool`), ``_report`` (their
    :class:`~codea1_env.sandbox.base.IsolationReport`), ``_closed`` and ``_finalizer`` (releases
    what the workers held), and may extend :meth:`_after_close`.
    """

    _pool: WorkerPool
    _report: IsolationReport
    _closed: bool
    _finalizer: Callable[[], Any]
    _workers: list[Any]

    def run(self, jobs: Sequence[Job]) -> list[JobResult]:
        """Run a batch of jobs in parallel on all workers; one result per job, in order.

        Raises:
            TypeError, ValueError: malformed jobs (nothing is run).
            SandboxUnavailable: the sandbox is closed or a worker cannot be restarted.
        """
        if self._closed:
            raise SandboxUnavailable("the sandbox is closed")
        check_jobs(jobs)
        if not jobs:
            return []
        return self._pool.run(jobs)

    def isolation(self) -> IsolationReport:
        """The layers the probes found active on every worker."""
        return self._report

    def close(self) -> None:
        """Stop the workers and release what they held. Idempotent."""
        if self._closed:
            return
        self._closed = True
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()
        self._finalizer()
        self._after_close()

    def _after_close(self) -> None:
        """Release backend-specific resources after the workers are gone (default: none)."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def workers(self) -> int:
        """Number of workers (containers, for the Docker backend)."""
        return len(self._workers)
