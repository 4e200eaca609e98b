"""Shared fixtures: one warm local sandbox for the whole session (starting one costs ~0.1 s)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from codea1_env.sandbox.base import IsolationReport, Job, JobResult, Sandbox

OUR_PACKAGES = ("codea1_env", "agents", "tests", "examples", "benchmarks")
"""Top-level names of this repository's code: a missing one is a bug, never a missing extra."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires(*modules): skip unless these optional third-party modules are installed "
        "(they come with an extra: pip install 'codea1[train,dev]')",
    )


if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    # One pytest-xdist worker per core (``-n auto``): each worker, and every process it starts,
    # computes with one thread, so that two workers' torch ops do not share two cores four ways.
    os.environ["OMP_NUM_THREADS"] = "1"


SLOW_DEFAULT_SECONDS = 30.0
"""The estimate of a ``slow`` test that gives none (``pytest.mark.slow(seconds=...)``)."""


def estimated_seconds(item: pytest.Item) -> float:
    """A test's expected duration for ordering: its ``slow`` mark's ``seconds``, else 0."""
    mark = item.get_closest_marker("slow")
    if mark is None:
        return 0.0
    return float(mark.kwargs.get("seconds", SLOW_DEFAULT_SECONDS))


def worksteal_chunk_sizes(count: int, workers: int) -> list[int]:
    """How pytest-xdist's ``worksteal`` first splits ``count`` tests among ``workers``.

    Each idle worker in turn takes the first ``remaining // workers_left`` of the tests left, in
    order; later it steals from the end of the longest queue.
    """
    sizes = []
    remaining = count
    for left in range(workers, 0, -1):
        sizes.append(remaining // left)
        remaining -= sizes[-1]
    return sizes


def first_blocks(
    count: int, workers: int, dist: str, maxschedchunk: int | None = None
) -> list[int] | None:
    """The sizes of the contiguous runs of the collection that pytest-xdist first hands each
    worker, in order; None when it does not cut the collection so (one process, ``loadfile``,
    ``loadscope``, ...).

    ``worksteal`` cuts all of it, one block per worker; ``load`` gives each worker a first run
    of a quarter of its share (at least 2 tests) and the rest later, in order.
    """
    if workers <= 1:
        return None
    if dist == "worksteal":
        return worksteal_chunk_sizes(count, workers)
    if dist == "load" and count >= 2 * workers:
        chunk = max(min(count // workers // 4, maxschedchunk or count), 2)
        return [chunk] * workers
    return None


def longest_first(items: list[pytest.Item], blocks: list[int] | None) -> list[pytest.Item]:
    """The tests in the order that starts the longest ones first, one per worker.

    Without ``blocks`` (:func:`first_blocks`) the ``slow`` tests come first, longest first.
    With them, the slow tests are dealt longest first to the block with the least estimated
    work (so the learning test and the next longest start together on two workers instead of one
    after the other on the first), each block starting with its own; the tests past the blocks
    follow. Otherwise every test keeps its collection order.
    """
    slow = sorted(
        (item for item in items if estimated_seconds(item) > 0),
        key=lambda item: -estimated_seconds(item),
    )
    fast = [item for item in items if estimated_seconds(item) == 0]
    if not blocks:
        return slow + fast
    dealt: list[list[pytest.Item]] = [[] for _ in blocks]
    load = [0.0] * len(blocks)
    left: list[pytest.Item] = []
    for item in slow:
        open_blocks = [i for i, size in enumerate(blocks) if len(dealt[i]) < size]
        if not open_blocks:
            left.append(item)
            continue
        target = min(open_blocks, key=lambda i: (load[i], i))
        dealt[target].append(item)
        load[target] += estimated_seconds(item)
    rest = iter(fast)
    for block, size in zip(dealt, blocks):
        block.extend(item for _, item in zip(range(size - len(block)), rest))
    return [item for block in dealt for item in block] + left + list(rest)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each pytest-xdist worker how it is scheduled (xdist sets its own ``dist`` to no)."""
    node.workerinput["codea1_dist"] = str(node.config.option.dist)
    node.workerinput["codea1_maxschedchunk"] = getattr(node.config.option, "maxschedchunk", None)


@pytest.hookimpl(trylast=True)  # after ``-k``/``-m``/``--deselect``: the blocks are of what runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``slow`` tests first, longest first, the others in collection order.

    Under pytest-xdist (``-n auto``) the longest tests then start at once, one per worker, and
    the other workers take the many short ones meanwhile, instead of one worker meeting a
    ten-minute test when the rest is nearly done.
    """
    worker = getattr(config, "workerinput", None)
    blocks = None
    if worker is not None:
        blocks = first_blocks(
            len(items),
            int(worker.get("workercount", 1)),
            str(worker.get("codea1_dist", "no")),
            worker.get("codea1_maxschedchunk"),
        )
    items[:] = longest_first(items, blocks)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires"):
        missing = [name for name in mark.args if importlib.util.find_spec(name) is None]
        if missing:
            pytest.skip(f"needs {', '.join(missing)}, not installed (an extra of codea1)")


def missing_extra(exc: BaseException) -> str | None:
    """The third-party module whose absence raised ``exc``, or None.

    Our modules re-raise a missing optional dependency as an ``ImportError`` that names the extra
    (``from`` the ``ModuleNotFoundError``), so the chain of causes is followed.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            top = seen.name.split(".")[0]
            return None if top in OUR_PACKAGES else seen.name
        seen = seen.__cause__
    return None


@pytest.fixture
def skip_if_extra_missing() -> Callable[[BaseException], None]:
    """Skip the test when ``exc`` comes from an optional module that is not installed."""

    def check(exc: BaseException) -> None:
        name = missing_extra(exc)
        if name is not None:
            pytest.skip(f"needs {name}, not installed (an extra of codea1): {exc}")

    return check


class CountingSandbox:
    """Wraps a sandbox and counts ``run`` calls and jobs (to check batching)."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner
        self.runs = 0
        self.jobs = 0

    def run(self, jobs: Sequence[Job]) -> list[JobResult]:
        self.runs += 1
        self.jobs += len(jobs)
        return self.inner.run(jobs)

    def isolation(self) -> IsolationReport:
        return self.inner.isolation()

    def close(self) -> None:
        """Shared: the session fixture closes the inner sandbox."""

    def __enter__(self) -> CountingSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(scope="session")
def shared_sandbox() -> Iterator[Sandbox]:
    from codea1_env.sandbox.local import LocalSandbox

    sandbox = LocalSandbox()
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.fixture
def sandbox(shared_sandbox: Sandbox) -> CountingSandbox:
    return CountingSandbox(shared_sandbox)


@pytest.fixture
def start_reward_server() -> Iterator[Callable[..., Any]]:
    """``start(core, **service_kwargs)``: ``codea1 serve-reward``'s server in this process.

    It listens on 127.0.0.1 (a free port, ``server.url``), batches with a 20 ms window unless
    told otherwise, and is stopped (queue drained, core closed) after the test.
    """
    import threading

    from agents.integrations.reward_service import RewardServer, RewardService, make_server

    started: list[tuple[RewardServer, threading.Thread]] = []

    def start(core: Any, **service_kwargs: Any) -> RewardServer:
        service = RewardService(core, **{"batch_window_s": 0.02, **service_kwargs})
        server = make_server(service, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        started.append((server, thread))
        return server

    yield start
    for server, thread in started:
        server.stop()
        thread.join(10)
