"""CPU and wall metering shared by the benchmarks: this process, its children, sandbox workers.

A sandbox worker (a zygote and the job children it forks and reaps) is not a child of the
benchmark process, so its CPU is read from ``/proc/PID/stat``: the worker's own time plus that
of the children it has reaped (fields 14-17).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Sequence


def rusage_cpu(who: int) -> float:
    """User plus system CPU seconds of ``who`` (``resource.RUSAGE_SELF`` or ``_CHILDREN``)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def tree_cpu(pids: Sequence[int]) -> float:
    """CPU seconds of live processes plus their reaped children (``/proc/PID/stat`` 14-17)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / tick
    return total


class Meter:
    """Wall, this process (all threads), main thread, reaped children and extra live pids."""

    def __init__(self, pids: Sequence[int] = ()) -> None:
        self.pids = list(pids)
        self.start = self._sample()

    def _sample(self) -> tuple[float, ...]:
        return (
            time.perf_counter(),
            time.process_time(),
            time.thread_time(),
            rusage_cpu(resource.RUSAGE_CHILDREN),
            tree_cpu(self.pids),
        )

    def stop(self, count: int, unit: str = "duel") -> dict[str, float]:
        """Figures since construction, per ``unit`` (``count`` of them were done meanwhile)."""
        wall, proc, thread, children, workers = (b - a for a, b in zip(self.start, self._sample()))
        ms = 1000.0 / count
        return {
            "seconds": round(wall, 3),
            f"{unit}s_per_s": round(count / wall, 1),
            f"cpu_ms_per_{unit}": round((proc + children + workers) * ms, 4),
            f"parent_cpu_ms_per_{unit}": round(proc * ms, 4),
            f"main_thread_cpu_ms_per_{unit}": round(thread * ms, 4),
            f"children_cpu_ms_per_{unit}": round(children * ms, 4),
            f"sandbox_workers_cpu_ms_per_{unit}": round(workers * ms, 4),
        }
