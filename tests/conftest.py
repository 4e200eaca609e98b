"""Shared fixtures: one warm local sandbox for the whole session (starting one costs ~0.1 s)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

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
