"""Seconds to score one paper step, projected from the per-duel CPU that the benchmarks measured.

A paper step is 256 problems x 8 codes x 8 suites = 16,384 duels. ``bench_referee.py`` measures,
on the machine it runs on, the CPU each duel costs the referee's own process (``P``), its sandbox
workers (``W``), a ``RefereePool``'s dealing process (``D``) and its referee processes (``P_k``,
their measured CPU less ``W``), and the authors' layout's parent (``P_a``) and interpreters
(``C_a``); ``bench_ray.py`` measures what a Ray pool adds (overhead ``o`` on the workers' time,
``c`` of driver time per chunk). This module turns those figures into seconds per step on more
cores. It is arithmetic, not a measurement of a larger machine; the assumptions are the ones
``docs/performance.md`` states:

* sandbox CPU scales linearly with cores (one worker per core, jobs spread evenly);
* one referee is serial: ``duels x (P + W / cores)``;
* a pool of ``K`` referee processes: ``duels x (D + P_k / K + W / cores)``, the dealing counted
  as if none of it overlapped the processes (an upper bound);
* Ray: ``duels x P + duels x W x (1 + o) / (cores x nodes) + jobs x c``, one chunk per job (an
  upper bound: the pool sends fewer, larger chunks);
* the authors' layout overlaps its parent with its interpreters:
  ``duels x max(P_a, (P_a + C_a) / cores)``.

``bench_referee.py`` adds :func:`project` of its own figures to every report (``projection``).
For the table in ``docs/performance.md``, with the Ray rows::

    python benchmarks/bench_referee.py --out referee.json
    python benchmarks/bench_ray.py > ray.json
    python benchmarks/projection.py referee.json --ray ray.json

Options size the step and the machines: ``--duels`` (problems x codes x suites of your own
step), ``--node-cores``, ``--pool`` (``RefereePool`` sizes), ``--ray-nodes``; ``--json`` prints
the rows as the report's ``projection`` block.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAPER_STEP_DUELS = 256 * 8 * 8
"""Duels in one step of the paper's runs: 256 problems x 8 codes x 8 suites."""
NODE_CORES = 64
POOL_PROCESSES = (16, 32)
RAY_NODES = (1, 4)


class FiguresError(ValueError):
    """A benchmark report lacks a figure the projection needs (names the file and the key)."""


@dataclass(frozen=True)
class StepFigures:
    """Per-duel CPU figures (milliseconds) measured by ``bench_referee.py`` and ``bench_ray.py``.

    Attributes:
        cores: Cores of the machine the figures were measured on.
        parent_ms: ``P``, the referee's own process (all its threads).
        workers_ms: ``W``, its sandbox workers and their job children.
        jobs_per_duel: Sandbox jobs per duel.
        best_duels_per_s: The referee's best measured rate on that machine.
        dealing_ms: ``D``, a ``RefereePool``'s dealing process; None when not measured.
        pool_referee_ms: ``P_k``, its referee processes' own work; None when not measured.
        authors_parent_ms: ``P_a``; None when the authors' layout was not measured.
        authors_children_ms: ``C_a``, the authors' layout's interpreters.
        authors_duels_per_s: The authors' layout's best measured rate.
        ray_overhead: ``o``, Ray's extra time on the workers' share (a fraction, at least 0).
        ray_chunk_ms: ``c``, driver time per chunk when chunks are pipelined.
    """

    cores: int
    parent_ms: float
    workers_ms: float
    jobs_per_duel: float
    best_duels_per_s: float
    dealing_ms: float | None = None
    pool_referee_ms: float | None = None
    authors_parent_ms: float | None = None
    authors_children_ms: float | None = None
    authors_duels_per_s: float | None = None
    ray_overhead: float | None = None
    ray_chunk_ms: float | None = None


@dataclass(frozen=True)
class Row:
    """One line of the projection: where, seconds per step for the referee and the authors."""

    where: str
    referee_s: float
    authors_s: float | None
    formula: str


def _number(report: Mapping[str, Any], path: str, source: str) -> float:
    node: Any = report
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            raise FiguresError(f"{source}: no {path!r} (is it a report of the right benchmark?)")
        node = node[key]
    if isinstance(node, bool) or not isinstance(node, (int, float)) or node < 0:
        raise FiguresError(f"{source}: {path!r} must be a number >= 0, got {node!r}")
    return float(node)


def figures_from_reports(
    referee: Mapping[str, Any],
    ray: Mapping[str, Any] | None = None,
    *,
    referee_source: str = "bench_referee report",
    ray_source: str = "bench_ray report",
) -> StepFigures:
    """The figures of a ``bench_referee.py`` report (and optionally a ``bench_ray.py`` one).

    Raises:
        FiguresError: A needed key is missing or not a number; the message names the source.
    """

    def num(path: str) -> float:
        return _number(referee, path, referee_source)

    workers = num("referee.sandbox_workers_cpu_ms_per_duel") + num(
        "referee.children_cpu_ms_per_duel"
    )
    fields: dict[str, Any] = {
        "cores": int(num("machine.cpus")),
        "parent_ms": num("referee.parent_cpu_ms_per_duel"),  # the same pass as workers_ms
        "workers_ms": workers,
        "jobs_per_duel": num("ceilings.jobs_per_duel"),  # the report's own figure
        "best_duels_per_s": num("referee.duels_per_s"),
    }
    if "referee_processes" in referee:
        fields["dealing_ms"] = num("referee_processes.dealing_cpu_ms_per_duel")
        fields["pool_referee_ms"] = max(
            num("referee_processes.referee_processes_cpu_ms_per_duel") - workers, 0.0
        )
    if "authors_layout" in referee:
        fields["authors_parent_ms"] = num("authors_layout.parent_cpu_ms_per_duel")
        fields["authors_children_ms"] = num("authors_layout.children_cpu_ms_per_duel")
        fields["authors_duels_per_s"] = num("authors_layout.duels_per_s")
    if ray is not None:
        overheads = ray.get("overhead_pct_vs_local")
        if not isinstance(overheads, Mapping) or not overheads:
            raise FiguresError(f"{ray_source}: no 'overhead_pct_vs_local' figures")
        values = list(overheads.values())
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
            raise FiguresError(f"{ray_source}: 'overhead_pct_vs_local' must hold numbers")
        fields["ray_overhead"] = max(0.0, *values) / 100.0  # a negative overhead is noise
        fields["ray_chunk_ms"] = _number(ray, "ray_chunk_ms.pipelined_cost", ray_source)
    return StepFigures(**fields)


def _authors_s(fig: StepFigures, duels: int, cores: int) -> float | None:
    if fig.authors_parent_ms is None or fig.authors_children_ms is None:
        return None
    per_duel = max(fig.authors_parent_ms, (fig.authors_parent_ms + fig.authors_children_ms) / cores)
    return duels * per_duel / 1000.0


def project(
    fig: StepFigures,
    *,
    duels: int = PAPER_STEP_DUELS,
    node_cores: int = NODE_CORES,
    pool_processes: Sequence[int] = POOL_PROCESSES,
    ray_nodes: Sequence[int] = RAY_NODES,
) -> list[Row]:
    """Seconds per step of ``duels`` duels, here and on larger machines, from ``fig``.

    Rows: the measured rate here; ``fig.cores`` idle cores from the CPU figures; one
    ``node_cores``-core node with one referee and with each pool size (when the pool was
    measured); one referee on ``n`` Ray nodes for each of ``ray_nodes`` (when Ray was measured).
    """
    if duels <= 0 or node_cores <= 0 or min([*pool_processes, *ray_nodes], default=1) <= 0:
        raise ValueError("duels, node_cores, pool sizes and Ray node counts must be positive")
    p, w = fig.parent_ms, fig.workers_ms
    rows = [
        Row(
            f"this box, {fig.cores} cores, the measured best rate",
            duels / fig.best_duels_per_s,
            duels / fig.authors_duels_per_s if fig.authors_duels_per_s else None,
            f"{duels:,} / {fig.best_duels_per_s:,.0f} duels/s",
        ),
        Row(
            f"this box, {fig.cores} idle cores, from the CPU figures",
            duels * (p + w / fig.cores) / 1000.0,
            _authors_s(fig, duels, fig.cores),
            f"{duels:,} x ({p:.3f} + {w:.3f} / {fig.cores}) ms",
        ),
        Row(
            f"one {node_cores}-core node, one referee",
            duels * (p + w / node_cores) / 1000.0,
            _authors_s(fig, duels, node_cores),
            f"{duels:,} x ({p:.3f} + {w:.3f} / {node_cores}) ms",
        ),
    ]
    if fig.dealing_ms is not None and fig.pool_referee_ms is not None:
        d, pk = fig.dealing_ms, fig.pool_referee_ms
        for k in pool_processes:
            rows.append(
                Row(
                    f"one {node_cores}-core node, `RefereePool` of {k}",
                    duels * (d + pk / k + w / node_cores) / 1000.0,
                    _authors_s(fig, duels, node_cores),
                    f"{duels:,} x ({d:.3f} + {pk:.3f} / {k} + {w:.3f} / {node_cores}) ms",
                )
            )
    if fig.ray_overhead is not None and fig.ray_chunk_ms is not None:
        jobs = duels * fig.jobs_per_duel
        o, c = fig.ray_overhead, fig.ray_chunk_ms
        for n in ray_nodes:
            cores = node_cores * n
            rows.append(
                Row(
                    f"Ray pool, {n} node{'s' if n > 1 else ''} of {node_cores} cores, one referee",
                    (duels * p + duels * w * (1 + o) / cores + jobs * c) / 1000.0,
                    None,
                    f"{duels:,} x {p:.3f} ms + {duels:,} x {w:.3f} x {1 + o:.3f} / {cores} ms"
                    f" + {jobs:,.0f} jobs x {c:.3f} ms",
                )
            )
    return rows


def as_json(fig: StepFigures, rows: Sequence[Row], duels: int = PAPER_STEP_DUELS) -> dict[str, Any]:
    """The projection as a report block: its inputs and rows (seconds rounded to 0.1)."""
    return {
        "duels_per_step": duels,
        "label": "arithmetic on the figures measured here, not a measurement of larger machines",
        "inputs_ms_per_duel": {
            key: round(value, 4) if isinstance(value, float) else value
            for key, value in vars(fig).items()
            if value is not None
        },
        "rows": [
            {
                "where": row.where,
                "referee_s": round(row.referee_s, 1),
                "authors_s": None if row.authors_s is None else round(row.authors_s, 1),
                "formula": row.formula,
            }
            for row in rows
        ],
    }


def markdown(rows: Sequence[Row], duels: int = PAPER_STEP_DUELS) -> str:
    """The rows as the table ``docs/performance.md`` shows."""
    lines = [
        f"| where | referee, seconds per step of {duels:,} duels | authors' layout "
        "| formula (referee) |",
        "|---|---|---|---|",
    ]
    for row in rows:
        authors = "not measured" if row.authors_s is None else f"{row.authors_s:.1f}"
        lines.append(f"| {row.where} | {row.referee_s:.1f} | {authors} | {row.formula} |")
    return "\n".join(lines)


def _load(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FiguresError(f"{path}: cannot read it ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise FiguresError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise FiguresError(f"{path}: a benchmark report is a JSON object")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("referee", help="a bench_referee.py report (its --out file)")
    parser.add_argument("--ray", help="a bench_ray.py report (its standard output)")
    parser.add_argument(
        "--duels",
        type=int,
        default=PAPER_STEP_DUELS,
        help="duels per step: problems x codes x suites (default: the paper's 256 x 8 x 8)",
    )
    parser.add_argument("--node-cores", type=int, default=NODE_CORES, help="cores per node")
    for flag, default, what in (
        ("--pool", POOL_PROCESSES, "RefereePool sizes to project"),
        ("--ray-nodes", RAY_NODES, "Ray node counts to project, with --ray"),
    ):
        parser.add_argument(
            flag,
            type=int,
            nargs="+",
            default=list(default),
            help=f"{what} (default: {' '.join(map(str, default))})",
        )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if min([args.duels, args.node_cores, *args.pool, *args.ray_nodes]) < 1:
        parser.error("--duels, --node-cores, --pool and --ray-nodes take numbers of at least 1")
    try:
        fig = figures_from_reports(
            _load(args.referee),
            _load(args.ray) if args.ray else None,
            referee_source=args.referee,
            ray_source=args.ray or "",
        )
        rows = project(
            fig,
            duels=args.duels,
            node_cores=args.node_cores,
            pool_processes=args.pool,
            ray_nodes=args.ray_nodes,
        )
    except (FiguresError, ValueError) as exc:
        print(f"projection: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(as_json(fig, rows, args.duels), indent=2))
    else:
        print(markdown(rows, args.duels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
