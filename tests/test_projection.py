"""``benchmarks/projection.py``: seconds per paper step from the benchmarks' per-duel figures.

Arithmetic on known figures (the formulas ``docs/performance.md`` states), what a report must
hold, and the command line; nothing here is timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.projection import (
    PAPER_STEP_DUELS,
    FiguresError,
    StepFigures,
    as_json,
    figures_from_reports,
    main,
    markdown,
    project,
)


def referee_report() -> dict[str, Any]:
    """The keys of a ``bench_referee.py`` report the projection reads, with round figures."""
    return {
        "machine": {"cpus": 2},
        "referee": {
            "duels_per_s": 1000.0,
            "parent_cpu_ms_per_duel": 0.5,  # the fastest pass's, as its workers' figures
            "min_parent_cpu_ms_per_duel": 0.4,  # the lowest sample: not mixed with them
            "sandbox_workers_cpu_ms_per_duel": 0.75,
            "children_cpu_ms_per_duel": 0.25,
        },
        "ceilings": {"jobs_per_duel": 256 / 2048},
        "referee_processes": {
            "dealing_cpu_ms_per_duel": 0.1,
            "referee_processes_cpu_ms_per_duel": 1.8,
        },
        "authors_layout": {
            "duels_per_s": 250.0,
            "parent_cpu_ms_per_duel": 0.6,
            "min_parent_cpu_ms_per_duel": 0.55,
            "children_cpu_ms_per_duel": 6.0,
        },
    }


RAY = {
    "overhead_pct_vs_local": {"ray_2x1": 5.0, "ray_1x2": -1.0},
    "ray_chunk_ms": {"pipelined_cost": 0.2},
}


def by_where(rows: list[Any]) -> dict[str, Any]:
    return {row.where: row for row in rows}


def test_figures_read_from_the_reports() -> None:
    fig = figures_from_reports(referee_report(), RAY)
    assert fig.cores == 2
    assert fig.parent_ms == 0.5
    assert fig.workers_ms == pytest.approx(1.0)  # the sandbox workers plus reaped children
    assert fig.jobs_per_duel == pytest.approx(256 / 2048)
    assert fig.dealing_ms == 0.1
    assert fig.pool_referee_ms == pytest.approx(0.8)  # the processes' CPU less the workers'
    assert fig.authors_parent_ms == 0.6 and fig.authors_children_ms == 6.0
    assert fig.ray_overhead == pytest.approx(0.05)  # the worst measured overhead
    assert fig.ray_chunk_ms == 0.2


def test_rows_are_the_documented_formulas() -> None:
    fig = figures_from_reports(referee_report(), RAY)
    rows = by_where(project(fig, node_cores=64, pool_processes=(16,), ray_nodes=(1, 4)))
    n = PAPER_STEP_DUELS
    here = rows["this box, 2 cores, the measured best rate"]
    assert here.referee_s == pytest.approx(n / 1000.0)
    assert here.authors_s == pytest.approx(n / 250.0)
    idle = rows["this box, 2 idle cores, from the CPU figures"]
    assert idle.referee_s == pytest.approx(n * (0.5 + 1.0 / 2) / 1000)
    assert idle.authors_s == pytest.approx(n * max(0.6, 6.6 / 2) / 1000)
    node = rows["one 64-core node, one referee"]
    assert node.referee_s == pytest.approx(n * (0.5 + 1.0 / 64) / 1000)
    # the authors' parent bounds them once the interpreters are spread over 64 cores
    assert node.authors_s == pytest.approx(n * max(0.6, 6.6 / 64) / 1000)
    pool = rows["one 64-core node, `RefereePool` of 16"]
    assert pool.referee_s == pytest.approx(n * (0.1 + 0.8 / 16 + 1.0 / 64) / 1000)
    ray4 = rows["Ray pool, 4 nodes of 64 cores, one referee"]
    jobs = n * 256 / 2048
    assert ray4.referee_s == pytest.approx((n * 0.5 + n * 1.0 * 1.05 / 256 + jobs * 0.2) / 1000)
    assert ray4.authors_s is None


def test_rows_follow_what_was_measured() -> None:
    report = referee_report()
    del report["referee_processes"], report["authors_layout"]
    rows = project(figures_from_reports(report))
    assert [row.where for row in rows] == [
        "this box, 2 cores, the measured best rate",
        "this box, 2 idle cores, from the CPU figures",
        "one 64-core node, one referee",
    ]
    assert all(row.authors_s is None for row in rows)
    assert "not measured" in markdown(rows)


def test_a_missing_or_bad_figure_names_the_source_and_key() -> None:
    report = referee_report()
    del report["ceilings"]["jobs_per_duel"]
    with pytest.raises(FiguresError, match=r"run\.json: no 'ceilings\.jobs_per_duel'"):
        figures_from_reports(report, referee_source="run.json")
    report = referee_report()
    report["referee"]["parent_cpu_ms_per_duel"] = "fast"
    with pytest.raises(FiguresError, match=r"'referee\.parent_cpu_ms_per_duel' must be a number"):
        figures_from_reports(report)
    with pytest.raises(FiguresError, match=r"ray\.json: no 'ray_chunk_ms\.pipelined_cost'"):
        figures_from_reports(
            referee_report(), {"overhead_pct_vs_local": {"a": 1.0}}, ray_source="ray.json"
        )
    with pytest.raises(FiguresError, match="must hold numbers"):
        figures_from_reports(referee_report(), {"overhead_pct_vs_local": {"a": "x"}})
    with pytest.raises(ValueError, match="positive"):
        project(StepFigures(2, 0.5, 1.0, 0.1, 1000.0), node_cores=0)
    with pytest.raises(ValueError, match="positive"):
        project(StepFigures(2, 0.5, 1.0, 0.1, 1000.0), pool_processes=(0,))


def test_json_block_rounds_and_keeps_its_inputs() -> None:
    fig = figures_from_reports(referee_report(), RAY)
    block = as_json(fig, project(fig))
    assert block["duels_per_step"] == PAPER_STEP_DUELS
    assert block["inputs_ms_per_duel"]["parent_ms"] == 0.5
    assert block["rows"][0] == {
        "where": "this box, 2 cores, the measured best rate",
        "referee_s": 16.4,
        "authors_s": 65.5,
        "formula": "16,384 / 1,000 duels/s",
    }
    json.dumps(block)  # a report block: plain JSON


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    referee, ray = tmp_path / "referee.json", tmp_path / "ray.json"
    referee.write_text(json.dumps(referee_report()))
    ray.write_text(json.dumps(RAY))
    assert main([str(referee), "--ray", str(ray)]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| where | referee, seconds per step of 16,384 duels |")
    assert "| Ray pool, 4 nodes of 64 cores, one referee |" in table
    assert main([str(referee), "--json", "--node-cores", "16"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[2]["where"] == "one 16-core node, one referee"
    own = ["--duels", "4096", "--pool", "8", "--ray", str(ray), "--ray-nodes", "2", "--json"]
    assert main([str(referee), *own]) == 0
    block = json.loads(capsys.readouterr().out)
    assert block["duels_per_step"] == 4096
    assert [row["where"] for row in block["rows"]][3:] == [
        "one 64-core node, `RefereePool` of 8",
        "Ray pool, 2 nodes of 64 cores, one referee",
    ]
    assert block["rows"][0]["referee_s"] == pytest.approx(4096 / 1000.0, abs=0.05)
    with pytest.raises(SystemExit):
        main([str(referee), "--pool", "0"])
    assert "at least 1" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"machine":\n  {"cpus": 2,}}')
    assert main([str(broken)]) == 2
    assert f"{broken}: line 2: not JSON" in capsys.readouterr().err
    assert main([str(tmp_path / "absent.json")]) == 2
    assert "absent.json: cannot read it" in capsys.readouterr().err


@pytest.mark.slow
def test_a_real_bench_referee_report_projects(tmp_path: Path) -> None:
    """The keys the projection reads are the ones ``bench_referee.py`` writes (a tiny run)."""
    out = tmp_path / "referee.json"
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_referee.py"
    args = ["--problems", "2", "--batch", "2", "--repeats", "1", "--processes", "0"]
    done = subprocess.run(
        [sys.executable, str(bench), *args, "--no-authors", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    block = report["projection"]
    assert [row["where"] for row in block["rows"]] == [
        f"this box, {report['machine']['cpus']} cores, the measured best rate",
        f"this box, {report['machine']['cpus']} idle cores, from the CPU figures",
        "one 64-core node, one referee",
    ]
    fig = figures_from_reports(report)
    assert block == as_json(fig, project(fig))
    assert fig.parent_ms > 0 and fig.workers_ms > 0 and 0 < fig.jobs_per_duel < 1
    assert main([str(out)]) == 0
