"""The floors and ceilings ``benchmarks/bench_referee.py`` reports beside its timings.

The floors are measured (an empty job through a real sandbox, an empty interpreter); the
ceilings are arithmetic on them and on the benchmark's own figures. These tests check the
arithmetic on known figures and that the floors measure something real; they time nothing
against a threshold.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from codea1_env.sandbox.local import LocalSandbox

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_referee.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_referee_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


FLOOR = {
    "empty_job_cpu_ms": 3.0,
    "empty_job_worker_cpu_ms": 2.5,
    "empty_job_wall_ms": 3.2,
    "empty_interpreter_cpu_ms": 30.0,
    "empty_interpreter_wall_ms": 31.0,
}
REFEREE = {"jobs": 300, "min_cpu_ms_per_duel": 1.5, "min_parent_cpu_ms_per_duel": 0.6}
AUTHORS = {"interpreters": 256, "min_cpu_ms_per_duel": 7.0}


def test_ceilings_are_the_floors_arithmetic(bench: ModuleType) -> None:
    out = bench.ceilings(FLOOR, REFEREE, AUTHORS, duels=2048, cores=2)
    jobs_per_duel = 300 / 2048
    assert out["jobs_per_duel"] == pytest.approx(jobs_per_duel, abs=1e-4)
    assert out["process_floor_ms_per_duel"] == pytest.approx(3.0 * jobs_per_duel, abs=1e-4)
    assert out["process_floor_share_of_cpu"] == pytest.approx(3.0 * jobs_per_duel / 1.5, abs=1e-3)
    assert out["duels_per_s_if_every_core_busy"] == pytest.approx(2 * 1000 / 1.5, abs=0.1)
    assert out["authors_process_floor_ms_per_duel"] == pytest.approx(30.0 * 256 / 2048, abs=1e-4)
    assert out["cpu_ms_per_duel_for_10x"] == pytest.approx(0.7)
    assert out["per_core_ratio_if_only_processes_cost"] == pytest.approx(
        7.0 / (3.0 * jobs_per_duel), abs=0.01
    )
    # the parent's CPU already holds its dispatch: only the workers' floor is added to it
    assert out["per_core_ratio_if_only_processes_and_parent_cost"] == pytest.approx(
        7.0 / (2.5 * jobs_per_duel + 0.6), abs=0.01
    )


def test_ceilings_without_the_authors_side(bench: ModuleType) -> None:
    out = bench.ceilings(FLOOR, REFEREE, None, duels=2048, cores=2)
    assert "per_core_ratio_if_only_processes_cost" not in out
    assert "authors_process_floor_ms_per_duel" not in out
    assert out["duels_per_s_if_every_core_busy"] > 0


def test_floors_measure_real_processes(bench: ModuleType) -> None:
    # CPU times from /proc come in clock ticks (10 ms): enough jobs that a fork, a confinement
    # and an exit each (1-4 ms of CPU) add up to many ticks
    with LocalSandbox(workers=2) as sandbox:
        floor = bench.floors(sandbox, workers=2, runs=120)
    assert set(floor) == set(FLOOR)
    assert floor["empty_job_worker_cpu_ms"] > 0.0  # a fork, a confinement and an exit
    assert floor["empty_job_cpu_ms"] >= floor["empty_job_worker_cpu_ms"]
    assert floor["empty_interpreter_cpu_ms"] > 0.0
    assert floor["empty_interpreter_wall_ms"] > 0.0
