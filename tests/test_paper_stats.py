"""The toy comparison's paired intervals: Student-t, exact quantiles, recomputed from results.json.

The percentile bootstrap the script used to give covers the mean about 83% of the time at n = 5
(the audit's simulation, ``/tmp/audit_metrics/ci_check.py``); the paired t interval is exact for
normal differences. The published intervals (README, docs/results/*/table.md) are recomputed from
the stored ``results.json`` files, and these tests check that what the documents show is that.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ("paper_table", "paper_table_self_play_lr5e-4")


@pytest.fixture(scope="module")
def table() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reproduce_paper_table_stats", ROOT / "examples" / "reproduce_paper_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_t_quantiles_agree_with_scipy(table: ModuleType) -> None:
    stats = pytest.importorskip("scipy.stats", reason="needs the dev extra (scipy)")
    for df in [*range(1, 61), 100, 1000]:
        for p in (0.5, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.025):
            want = float(stats.t.ppf(p, df))
            assert table.t_quantile(p, df) == pytest.approx(want, rel=1e-10, abs=1e-12), (df, p)
        for x in (-3.0, -0.5, 0.0, 0.7, 2.776, 40.0):
            assert table.student_t_cdf(x, df) == pytest.approx(float(stats.t.cdf(x, df)), abs=1e-13)


def test_t_quantiles_without_scipy(table: ModuleType) -> None:
    # published two-sided 95% critical values (any t table); df 4 is n = 5 seeds
    known = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305, 4: 2.776445105, 30: 2.042272456}
    for df, value in known.items():
        assert table.t_quantile(0.975, df) == pytest.approx(value, abs=1e-8)
    assert table.t_quantile(0.5, 3) == pytest.approx(0.0, abs=1e-12)
    for bad in ((0.0, 4), (1.0, 4), (0.975, 0)):
        with pytest.raises(ValueError):
            table.t_quantile(*bad)


def test_t_interval_of_five_values(table: ModuleType) -> None:
    ci = table.t_mean_ci([0.0, 1.0, 2.0, 3.0, 4.0])
    half = 2.776445105 * math.sqrt(2.5) / math.sqrt(5)  # t(0.975, 4) * sd / sqrt(n)
    assert ci["mean"] == 2.0 and ci["n"] == 5 and ci["df"] == 4
    assert (ci["low"], ci["high"]) == (pytest.approx(2 - half), pytest.approx(2 + half))
    assert ci["interval"] == "student-t"
    constant = table.t_mean_ci([0.25] * 5)
    assert constant["low"] == constant["high"] == pytest.approx(0.25)
    one = table.t_mean_ci([0.3])
    assert one["mean"] == 0.3 and one["low"] is None and one["high"] is None
    with pytest.raises(ValueError):
        table.t_mean_ci([])


def test_at_five_seeds_the_t_interval_covers_and_the_bootstrap_does_not(
    table: ModuleType,
) -> None:
    """The audit's simulation, smaller: normal differences, true mean 0, n = 5."""
    import numpy as np

    rng = np.random.default_rng(1)
    samples = rng.normal(0.0, 1.0, size=(2000, 5))
    means = samples.mean(axis=1)
    half = table.t_quantile(0.975, 4) * samples.std(axis=1, ddof=1) / math.sqrt(5)
    t_coverage = float(np.mean((means - half <= 0) & (0 <= means + half)))
    assert 0.93 <= t_coverage <= 0.97
    boot = samples[:, None, :][
        np.arange(2000)[:, None, None], 0, rng.integers(0, 5, size=(2000, 1000, 5))
    ].mean(axis=2)
    low, high = np.percentile(boot, [2.5, 97.5], axis=1)
    boot_coverage = float(np.mean((low <= 0) & (0 <= high)))
    assert boot_coverage < 0.88  # about 0.83


def test_paired_differences_use_t_intervals_and_state_n(table: ModuleType) -> None:
    def row(name: str, pass1: float) -> dict:
        return {"name": name, "code": {"pass@1": pass1}, "tests": None}

    per_seed = {
        seed: [row("code-a1", 0.1 + d), row("golden", 0.1)]
        for seed, d in enumerate([0.0, 0.01, 0.02, 0.03, 0.04])
    }
    per_seed[5] = [row("code-a1", 0.3)]  # no golden row: not paired
    (entry,) = [p for p in table.paired_differences(per_seed) if p["baseline"] == "golden"]
    half = 2.776445105 * math.sqrt(2.5) * 0.01 / math.sqrt(5)
    assert entry["n"] == 5 and entry["mean"] == pytest.approx(0.02)
    assert entry["low"] == pytest.approx(0.02 - half)
    assert entry["high"] == pytest.approx(0.02 + half)
    text = table.format_paired([entry])
    assert "| comparison | metric | difference [95% t interval] | n (seeds) |" in text
    assert f"| +0.020 [{0.02 - half:+.3f}, {0.02 + half:+.3f}] | 5 |" in text
    lone = {**table.t_mean_ci([0.5]), "row": "a", "baseline": "b", "metric": "m"}
    assert "+0.500 (one seed: no interval) | 1 |" in table.format_paired([lone])


def test_a_step_without_a_kept_valid_test_keeps_its_trivial_rate(
    table: ModuleType, tmp_path: Path
) -> None:
    """Runs since the pooled tester/valid_failure_rate leave it out at such a step."""
    rows = [
        {"step": 1, "monitor/tests": 4.0, "monitor/trivial_constant": 1.0,
         "tester/validity": 0.5, "tester/valid_failure_rate": 0.25, "tester/valid_share": 0.5},
        {"step": 2, "monitor/tests": 4.0, "monitor/trivial_constant": 2.0,
         "tester/validity": 0.0, "tester/valid_share": 0.0},
        {"step": 3, "coder/reward": 1.0},
    ]  # fmt: skip
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rates = table.collusion_rates(path)
    assert rates["step"] == [1.0, 2.0]
    assert rates["trivial_rate"] == [0.25, 0.5]
    assert rates["always_pass_rate"][0] == 0.75 and math.isnan(rates["always_pass_rate"][1])


def _shown(text: str) -> list[tuple[str, str, str]]:
    """Every ``mean [low, high]`` of a text, minus signs as ASCII."""
    number = r"([+\-−]\d\.\d{3})"
    found = re.findall(rf"{number} \[{number}, {number}\]", text)
    return [tuple(v.replace("−", "-") for v in triple) for triple in found]


def _recomputed(table: ModuleType, name: str) -> list[tuple[str, str, str]]:
    results = json.loads((ROOT / "docs" / "results" / name / "results.json").read_text())
    per_seed = {int(s): rows for s, rows in results["per_seed"].items()}
    return [
        (f"{p['mean']:+.3f}", f"{p['low']:+.3f}", f"{p['high']:+.3f}")
        for p in table.paired_differences(per_seed)
    ]


@pytest.mark.parametrize("name", RESULTS)
def test_the_stored_tables_show_the_t_intervals_of_their_results(
    table: ModuleType, name: str
) -> None:
    results = json.loads((ROOT / "docs" / "results" / name / "results.json").read_text())
    recomputed = _recomputed(table, name)
    stored = [(f"{p['mean']:+.3f}", f"{p['low']:+.3f}", f"{p['high']:+.3f}") for p in
              results["paired_differences"]]  # fmt: skip
    assert stored == recomputed
    assert all(p["interval"] == "student-t" for p in results["paired_differences"])
    page = (ROOT / "docs" / "results" / name / "table.md").read_text()
    assert _shown(page) == recomputed
    assert results["always_pass_definition"] == "problem_mean"
    assert "counted as 0 failures" in page and "bootstrap" not in page


def test_every_interval_in_the_readme_paper_section_is_a_recomputed_one(
    table: ModuleType,
) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[
        readme.index("### The paper's comparison at toy scale") : readme.index(
            "A reward-hacking monitor runs"
        )
    ]
    shown = _shown(section)
    assert len(shown) >= 12
    known = {triple for name in RESULTS for triple in _recomputed(table, name)}
    assert set(shown) <= known, set(shown) - known
    assert "bootstrap CI" not in section


def test_rewriting_from_results_changes_only_the_intervals(
    table: ModuleType, tmp_path: Path
) -> None:
    source = ROOT / "docs" / "results" / "paper_table"
    target = tmp_path / "paper_table"
    target.mkdir()
    for file in ("results.json", "table.md"):
        shutil.copy(source / file, target / file)
    before = json.loads((target / "results.json").read_text())
    before["paired_differences"] = [
        {**p, "low": -1.0, "high": 1.0} for p in before["paired_differences"]
    ]  # as a bootstrap of another width would have left them
    del before["always_pass_definition"]  # a file from before 2026-12-06
    (target / "results.json").write_text(json.dumps(before))
    text = table.rewrite_from_results(target)
    after = json.loads((target / "results.json").read_text())
    assert after["per_seed"] == before["per_seed"]
    assert after["self_collusion"] == before["self_collusion"]
    assert after["always_pass_definition"] == "problem_mean"
    assert [p["low"] for p in after["paired_differences"]] != [-1.0] * 12
    assert (target / "table.md").read_text() == (source / "table.md").read_text()
    assert "| code-a1 − golden | pass@1 | -0.001 [-0.009, +0.007] | 5 |" in text


def test_the_mutation_sentence_says_whether_rows_counted_the_same_mutants(
    table: ModuleType,
) -> None:
    def row(name: str, equivalent: int, pooled: bool = False) -> dict:
        tests = {"mutants": 20, "crashing": 1, "equivalent": equivalent}
        out = {"name": name, "tests": tests}
        if pooled:
            out["mutants_judged_with"] = ["base", "code-a1"]
        return out

    pooled = {0: [row("base", 2, True), row("code-a1", 2, True)]}
    assert "evaluated together" in table.mutation_judgement(pooled)
    none_excluded = {0: [row("base", 0), row("code-a1", 0)], 1: [row("base", 0)]}
    text = table.mutation_judgement(none_excluded)
    assert "0 equivalent and 1 crashing of 20 mutants" in text
    assert "the same 19 mutants" in text
    differing = {0: [row("base", 3), row("code-a1", 0)]}
    assert "not on the same mutants" in table.mutation_judgement(differing)
