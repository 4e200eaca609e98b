"""The referee's pipeline: a batch's stages run in the sandbox while the next stage is planned.

With a backend that has ``submit`` (every pooled backend), :meth:`Referee.judge_many` cuts a
batch into stages and hands each stage's jobs over without waiting; the judgements must be
exactly those of the one-call path a plain ``run``-only sandbox gets.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Job, Limits, SandboxUnavailable
from codea1_env.sandbox.local import LocalSandbox
from codea1_env.scoring.referee import Referee, busy_seconds, pipeline_stages
from codea1_env.stability import StabilityOptions

CLIP = Problem(
    task_id="t/clip",
    prompt='def clip(x: int) -> int:\n    """Clip x to the range 0..10."""',
    entry_point="clip",
    canonical_solution="def clip(x: int) -> int:\n    return min(max(x, 0), 10)\n",
    tests=("assert clip(-4) == 0", "assert clip(3) == 3", "assert clip(10) == 10"),
)
SQUARE = Problem(
    task_id="t/square",
    prompt='def sq(x: int) -> int:\n    """Return x squared."""',
    entry_point="sq",
    canonical_solution="def sq(x: int) -> int:\n    return x * x\n",
    tests=("assert sq(2) == 4", "assert sq(-3) == 9"),
)
CLIP_CODES = [
    CLIP.canonical_solution,
    "def clip(x):\n    return min(x, 10)\n",  # forgets the lower bound
    "def clip(x) return 1\n",
    "def clip(x):\n    return sorted([0, x, 10])[1]\n",
]
SQUARE_CODES = [
    SQUARE.canonical_solution,
    "def sq(x):\n    return x + x\n",
    "def sq(x):\n    1/0\n",
]
CLIP_SUITES = [
    "assert clip(-1) == 0\nassert clip(11) == 10",
    "assert clip(5) == 6\nassert clip(100) == 10\nassert clip(0) == 0",
    "x = -12\nassert clip(x) == 0\nassert clip(7) == 7",
]
SQUARE_SUITES = ["assert sq(2) == 4\nassert sq(3) == 9", "assert sq(0) == 0\nassert sq(-2) == 4"]


def _batch() -> list[Any]:
    """Five items: the clip problem three times (GT calls shared across stages) and the square."""
    return [
        (CLIP, CLIP_CODES, [CLIP_SUITES] * len(CLIP_CODES)),
        (SQUARE, SQUARE_CODES, [SQUARE_SUITES] * len(SQUARE_CODES)),
        (CLIP, CLIP_CODES[:2], [CLIP_SUITES[1:]] * 2),
        (SQUARE, SQUARE_CODES[1:], [SQUARE_SUITES[::-1]] * 2),
        (CLIP, CLIP_CODES[2:], [["assert clip(11) == 10"]] * 2),
    ]


class RunOnly:
    """The shared sandbox without ``submit``: the referee takes its one-call path."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.runs = 0

    def run(self, jobs: Any) -> Any:
        self.runs += 1
        return self.inner.run(jobs)

    def isolation(self) -> Any:
        return self.inner.isolation()

    def close(self) -> None:
        """Shared: the session fixture closes the inner sandbox."""


class Submitting(RunOnly):
    """The shared sandbox with ``submit`` counted, and one submitted batch made to fail."""

    def __init__(self, inner: Any, fail_at: int | None = None) -> None:
        super().__init__(inner)
        self.submits = 0
        self.fail_at = fail_at
        self.handles: list[Handle] = []

    def submit(self, jobs: Any) -> Any:
        self.submits += 1
        handle = Handle(self.inner.submit(jobs), failing=self.submits == self.fail_at)
        self.handles.append(handle)
        return handle


class Handle:
    """A submitted batch that records being waited on (and can fail like a dead backend)."""

    def __init__(self, pending: Any, failing: bool) -> None:
        self.pending = pending
        self.failing = failing
        self.waited = False

    @property
    def span(self) -> tuple[float, float]:
        return self.pending.span  # type: ignore[no-any-return]

    def result(self) -> Any:
        results = self.pending.result()
        self.waited = True
        if self.failing:
            raise SandboxUnavailable("the backend went away")
        return results


def _untimed(verdicts: Any) -> tuple[Any, ...]:
    return tuple(dataclasses.replace(v, duration_s=0.0) for v in verdicts)


def _scores(judgements: list[Any]) -> list[Any]:
    """Everything a judgement decided (call durations are measured, so they are left out)."""
    return [
        (
            j.compiled,
            j.coder_rewards,
            j.tester_rewards,
            j.gt_pass_rates,
            [
                [(s.coder_pair_reward, _untimed(s.verdicts), s.rejected, s.n_invalid) for s in row]
                for row in j.suites
            ],
            [_untimed(row) for row in j.mistake_book],
        )
        for j in judgements
    ]


def _book(referee: Referee) -> dict[str, Any]:
    return {
        p.task_id: [dataclasses.astuple(e) for e in referee.mistake_book.top(p.task_id)]
        for p in (CLIP, SQUARE)
    }


def test_stages_cover_the_batch_in_order_and_at_most_four():
    assert pipeline_stages(1) == [range(0, 1)]
    assert pipeline_stages(0) == [range(0, 0)]
    for n in range(1, 40):
        stages = pipeline_stages(n)
        assert len(stages) == min(n, 4)
        assert [i for stage in stages for i in stage] == list(range(n))
        assert max(map(len, stages)) - min(map(len, stages)) <= 1


def test_busy_seconds_is_the_union_of_the_spans():
    assert busy_seconds([]) == 0.0
    assert busy_seconds([(0.0, 0.0), (5.0, 4.0)]) == 0.0  # empty and reversed spans count nothing
    assert busy_seconds([(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)]) == pytest.approx(3.0)
    assert busy_seconds([(2.0, 3.0), (0.0, 10.0)]) == pytest.approx(10.0)


def test_submitted_batches_give_what_run_gives(shared_sandbox):
    jobs = [
        Job(program=f"def g(x):\n    return x * {k}\n", calls=("g(1)", "g(2)", "g('a')"))
        for k in range(5)
    ] + [Job(program="def g(x):\n    raise ValueError(x)\n", calls=("g(3)",))]
    expected = shared_sandbox.run(jobs)
    first, second = shared_sandbox.submit(jobs), shared_sandbox.submit(jobs[::-1])
    for pending, order in ((first, jobs), (second, jobs[::-1])):
        results = pending.result()
        assert len(results) == len(order)
        for got, job in zip(results, order):
            want = expected[jobs.index(job)]
            assert [(c.status, c.value) for c in got.calls] == [
                (c.status, c.value) for c in want.calls
            ]
        started, ended = pending.span
        assert 0.0 < started <= ended
    assert shared_sandbox.submit([]).result() == []


def test_submit_refuses_a_closed_sandbox_and_bad_jobs():
    sandbox = LocalSandbox(workers=1)
    try:
        with pytest.raises(TypeError):
            sandbox.submit(["not a job"])  # type: ignore[list-item]
        with pytest.raises(ValueError):
            sandbox.submit([Job("x = 1", ("x",), limits=Limits(call_timeout_s=0))])
    finally:
        sandbox.close()
    with pytest.raises(SandboxUnavailable):
        sandbox.submit([Job("x = 1", ())])


@pytest.mark.parametrize(
    "stability",
    [StabilityOptions(), StabilityOptions(quality_filter=True, always_pass_after=2)],
    ids=["default", "quality_filter"],
)
def test_the_pipeline_judges_exactly_as_the_one_call_path(shared_sandbox, stability):
    staged = Submitting(shared_sandbox)
    one_call = RunOnly(shared_sandbox)
    referees = [
        Referee(sandbox=box, mistake_book=InMemoryMistakeBook(), stability=stability)
        for box in (staged, one_call)
    ]
    # The second round replays what the first put in the books; with the quality filter, the
    # tests every candidate passed in round one are discarded from round two on.
    for _ in range(3):
        results = [referee.judge_many(_batch()) for referee in referees]
        assert _scores(results[0]) == _scores(results[1])
        assert _book(referees[0]) == _book(referees[1])
    assert any(entries for entries in _book(referees[0]).values())
    assert staged.submits >= 3 * 2 and staged.runs <= 3 * 4  # stages, and only inputs jobs ran
    assert one_call.runs <= 3 * 2  # inputs jobs (if any) and the batch
    for referee in referees:
        assert referee.stats["sandbox_seconds"] > 0.0
        assert referee.stats["sandbox_wait_seconds"] >= 0.0
    assert referees[0].stats["jobs"] == referees[1].stats["jobs"]
    assert referees[0].stats["calls"] == referees[1].stats["calls"]


def test_one_item_is_not_staged(shared_sandbox):
    staged = Submitting(shared_sandbox)
    referee = Referee(sandbox=staged)
    referee.judge_many(_batch()[:1])
    assert staged.submits == 0 and staged.runs >= 1


def test_a_failed_stage_raises_after_every_stage_finished_and_changes_nothing(shared_sandbox):
    staged = Submitting(shared_sandbox, fail_at=2)
    referee = Referee(sandbox=staged, mistake_book=InMemoryMistakeBook())
    with pytest.raises(SandboxUnavailable, match="went away"):
        referee.judge_many(_batch())
    assert len(staged.handles) == 4
    assert all(handle.waited for handle in staged.handles)
    assert all(not entries for entries in _book(referee).values())
    assert referee.stats["jobs"] == 0.0
    # The referee still works afterwards, and judges as a fresh one does.
    staged.fail_at = None
    fresh = Referee(sandbox=RunOnly(shared_sandbox), mistake_book=InMemoryMistakeBook())
    assert _scores(referee.judge_many(_batch())) == _scores(fresh.judge_many(_batch()))
