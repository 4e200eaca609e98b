"""Shared fixtures: one warm local sandbox for the whole session (starting one costs ~0.1 s)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from codea1_env.sandbox.base import IsolationReport, Job, JobResult, Sandbox


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
