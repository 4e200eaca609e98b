"""The suite's own order: the longest tests start first, one per pytest-xdist worker."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import first_blocks, longest_first, worksteal_chunk_sizes


@dataclass
class FakeMark:
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeItem:
    name: str
    slow: FakeMark | None = None

    def get_closest_marker(self, name: str) -> FakeMark | None:
        return self.slow if name == "slow" else None


def collection() -> list[Any]:
    items: list[Any] = [FakeItem(f"fast{i}") for i in range(10)]
    items.insert(3, FakeItem("learning", FakeMark({"seconds": 600})))
    items.insert(7, FakeItem("paper", FakeMark({"seconds": 120})))
    items.append(FakeItem("server", FakeMark()))  # the default estimate
    items.append(FakeItem("resume", FakeMark({"seconds": 60})))
    return items


def names(items: list[Any]) -> list[str]:
    return [item.name for item in items]


@pytest.mark.parametrize(("count", "workers"), [(14, 2), (15, 2), (16, 3), (2, 4)])
def test_the_worksteal_blocks_are_the_collection(count: int, workers: int) -> None:
    sizes = worksteal_chunk_sizes(count, workers)
    assert sum(sizes) == count and len(sizes) == workers
    assert max(sizes) - min(sizes) <= 1


def test_the_first_blocks_of_each_scheduler() -> None:
    assert first_blocks(14, 2, "worksteal") == [7, 7]
    assert first_blocks(100, 2, "load") == [12, 12]  # a quarter of each worker's share
    assert first_blocks(100, 2, "load", maxschedchunk=3) == [3, 3]
    assert first_blocks(10, 2, "load") == [2, 2] and first_blocks(3, 2, "load") is None
    assert first_blocks(100, 1, "worksteal") is None and first_blocks(100, 2, "loadfile") is None


def test_without_blocks_the_slow_tests_come_first_longest_first() -> None:
    ordered = names(longest_first(collection(), None))
    assert ordered[:4] == ["learning", "paper", "resume", "server"]
    assert ordered[4:] == [f"fast{i}" for i in range(10)]


def test_each_block_starts_with_its_own_longest() -> None:
    items = collection()
    for blocks in ([7, 7], [2, 2], [1, 1]):
        ordered = longest_first(items, blocks)
        assert sorted(names(ordered)) == sorted(names(items))  # nothing lost or doubled
        second = ordered[blocks[0] :]
        assert names(ordered)[0] == "learning" and names(second)[0] == "paper", blocks
        fast = [name for name in names(ordered) if name.startswith("fast")]
        assert fast == [f"fast{i}" for i in range(10)]  # the short tests keep their order
    assert names(longest_first(items, [1, 1]))[:4] == ["learning", "paper", "resume", "server"]


SUITE = """
import os
import time
import pytest


def note(name):
    with open(os.environ["ORDER_LOG"], "a") as log:
        log.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {name}\\n")


@pytest.mark.slow(seconds=600)
def test_learning():
    note("learning")
    time.sleep(0.5)


@pytest.mark.slow(seconds=120)
def test_paper():
    note("paper")
    time.sleep(0.3)


@pytest.mark.slow
def test_server():
    note("server")


@pytest.mark.parametrize("i", range(40))
def test_fast(i):
    note(f"fast{i}")
"""


@pytest.mark.parametrize("dist", ["worksteal", "load"])
def test_under_xdist_the_two_longest_start_first_on_two_workers(tmp_path: Path, dist: str) -> None:
    """The real hooks in a real pytest-xdist run (its workers set their own ``dist`` to no)."""
    pytest.importorskip("xdist")
    here = Path(__file__).parent
    (tmp_path / "conftest.py").write_text((here / "conftest.py").read_text(), encoding="utf-8")
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    slow: long\n    requires: extras\n", encoding="utf-8"
    )
    log = tmp_path / "order.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["ORDER_LOG"] = str(log)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"]
        + ["--dist", dist, "-k", "not fast3", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    first: dict[str, str] = {}
    for line in log.read_text().splitlines():
        worker, name = line.split()
        first.setdefault(worker, name)
    assert sorted(first.values()) == ["learning", "paper"], log.read_text()
