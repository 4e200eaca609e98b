"""The suite's own order: the longest tests start first on every pytest-xdist worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import longest_first, worksteal_chunk_sizes


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
def test_the_chunks_are_the_collection(count: int, workers: int) -> None:
    sizes = worksteal_chunk_sizes(count, workers)
    assert sum(sizes) == count and len(sizes) == workers
    assert max(sizes) - min(sizes) <= 1


def test_alone_the_slow_tests_come_first_longest_first() -> None:
    ordered = names(longest_first(collection(), workers=1, dist="no"))
    assert ordered[:4] == ["learning", "paper", "resume", "server"]
    assert ordered[4:] == [f"fast{i}" for i in range(10)]


def test_under_worksteal_each_worker_starts_with_its_own_longest() -> None:
    items = collection()
    ordered = longest_first(items, workers=2, dist="worksteal")
    assert sorted(names(ordered)) == sorted(names(items))  # nothing lost or doubled
    first, second = ordered[:7], ordered[7:]  # worksteal's first split of 14 tests
    # The learning test alone on one worker; the next longest tests on the other.
    assert names(first)[0] == "learning" and names(first)[1].startswith("fast")
    assert names(second)[:3] == ["paper", "resume", "server"]
    fast = [name for name in names(ordered) if name.startswith("fast")]
    assert fast == [f"fast{i}" for i in range(10)]  # the short tests keep their order


def test_other_schedulers_get_the_plain_order() -> None:
    ordered = names(longest_first(collection(), workers=2, dist="load"))
    assert ordered[:4] == ["learning", "paper", "resume", "server"]
