"""RefereePool: the same judgements and the same mistake book as one referee, in processes."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
from judging_helpers import fenced, plain_judgement

from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems import load_source
from codea1_env.scoring.mutation import generate_mutants
from codea1_env.scoring.pool import RefereePool, RefereePoolError
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions

PROBLEMS = [
    "bank/reverse_words",
    "bank/is_palindrome",
    "bank/run_length_encode",
    "bank/caesar_shift",
    "bank/count_vowels",
    "bank/longest_common_prefix",
]


def _items(offset: int) -> list[tuple[Any, list[str], list[list[str]]]]:
    """A batch: GT, mutants and junk codes; suites of GT tests, wrong claims and junk text."""
    source = load_source("bank")
    items = []
    for number, task_id in enumerate(PROBLEMS):
        problem = source[task_id]
        mutants = [m.source for m in generate_mutants(problem.gt_program)][:2]
        codes = [fenced(problem.gt_program), *(fenced(m) for m in mutants), "no code at all"]
        tests = list(problem.tests)
        suites = []
        for index in range(len(codes)):
            start = (index + offset + number) % len(tests)
            kept = tests[start:] + tests[:start]
            wrong = kept[0].rsplit("==", 1)[0] + "== 123456789"
            # the third suite holds no test (prose, then "assert True": rejected, scored 0)
            junk = "Looks right to me.\nassert True"
            suites.append(["\n".join(kept[:3]), "\n".join([wrong, *kept[3:5]]), junk])
        items.append((problem, codes, suites))
    # a problem twice in one batch: both items are scored, in their order, by one process
    return items + [items[offset % len(items)]]


STABILITY = StabilityOptions(
    quality_filter=True,
    always_pass_after=2,
    book_capacity_per_problem=3,
    book_capacity_total=12,
    book_refresh_every=2,
)


def test_the_pool_judges_as_one_referee_does(shared_sandbox):
    single = Referee(
        sandbox=shared_sandbox, mistake_book=InMemoryMistakeBook(), stability=STABILITY
    )
    with RefereePool(processes=2, sandbox_workers=1, stability=STABILITY) as pool:
        assert pool.isolation().layers == shared_sandbox.isolation().layers
        for offset in range(3):
            batch = _items(offset)
            ours = pool.judge_many(batch)
            theirs = single.judge_many(batch)
            assert [plain_judgement(j) for j in ours] == [plain_judgement(j) for j in theirs]
            assert pool.mistake_book.to_dict() == single.mistake_book.to_dict()
        assert pool.mistake_book.size() > 0  # the batches did exercise the book
        assert any(j.metrics["mistake_book/evicted"] for j in ours)
        # the GT of every problem ran once per process that owns it: the caches are warm
        assert pool.stats["jobs"] > 0
        assert pool.refresh_book([p for p, _, _ in batch]) == single.refresh_book(
            [p for p, _, _ in batch]
        )


def test_golden_mode_reads_and_writes_no_book(shared_sandbox):
    config = RewardConfig(mode="golden")
    single = Referee(sandbox=shared_sandbox, reward_config=config)
    with RefereePool(processes=2, sandbox_workers=1, reward_config=config) as pool:
        batch = _items(0)
        assert [plain_judgement(j) for j in pool.judge_many(batch)] == [
            plain_judgement(j) for j in single.judge_many(batch)
        ]
        assert pool.mistake_book.size() == 0


def test_bad_arguments_and_a_dead_process_get_clear_errors():
    with pytest.raises(ValueError, match="processes must be at least 1"):
        RefereePool(processes=0)
    with pytest.raises(ValueError, match="sandbox_workers must be at least 1"):
        RefereePool(processes=1, sandbox_workers=0)
    pool = RefereePool(processes=2, sandbox_workers=1)
    batch = _items(0)
    with pytest.raises(ValueError, match="candidate_limits"):
        pool.judge_many(batch, candidate_limits=[None])
    assert pool.judge_many([]) == []
    before = pool.mistake_book.to_dict()
    os.kill(pool.pids[1], signal.SIGKILL)
    with pytest.raises(RefereePoolError, match="referee process 1"):
        pool.judge_many(batch)
    assert pool.mistake_book.to_dict() == before  # nothing of the failed batch was applied
    with pytest.raises(RefereePoolError, match="closed"):
        pool.judge_many(batch)
    pool.close()  # idempotent


def test_a_sandbox_that_cannot_start_is_reported_with_its_error():
    with pytest.raises(RefereePoolError, match="could not start"):
        RefereePool(processes=1, backend="no-such-backend")


def test_a_script_without_a_main_guard_can_start_a_pool(tmp_path):
    """The processes are fresh interpreters: the caller's __main__ is not run again in them."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(
        "from codea1_env.problems import load_source\n"
        "from codea1_env.scoring.pool import RefereePool\n"
        "problem = load_source('bank')['bank/reverse_words']\n"
        "code = '```python\\n' + problem.gt_program + '\\n```'\n"
        "with RefereePool(processes=2, sandbox_workers=1) as pool:\n"
        '    print(pool.judge(problem, [code], [[\'assert reverse_words("a b") == "b a"\']])'
        ".coder_rewards)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1.0,)"
