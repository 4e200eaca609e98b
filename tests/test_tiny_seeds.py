"""examples/tiny_seeds.py: the per-seed before/after table of the first command and its criteria."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tiny_seeds", ROOT / "examples" / "tiny_seeds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _summary(coder: tuple[float, float], val: tuple[float, float], adv: tuple[float, float]):
    keys = ("coder/gt_pass_rate", "tester/validity", "tester/adversarial")
    pairs = dict(zip(keys, (coder, val, adv), strict=True))
    return {
        "steps": 150,
        "before": {k: b for k, (b, _) in pairs.items()},
        "after": {k: a for k, (_, a) in pairs.items()},
    }


def test_criteria_per_seed_and_counts() -> None:
    script = _script()
    met = script.seed_row(0, _summary((0.49, 0.53), (0.37, 0.49), (0.19, 0.26)))
    assert met["all"] and all(met["met"].values())
    assert met["change"]["tester/validity"] == pytest.approx(0.12)
    # validity +0.037 and the coder -0.004: two criteria fail, adversarial +0.101 holds
    short = script.seed_row(1, _summary((0.367, 0.363), (0.420, 0.457), (0.274, 0.375)))
    assert short["met"] == {
        "adversarial +0.05": True,
        "validity +0.05": False,
        "coder not falling": False,
    }
    assert not short["all"]
    flat = script.seed_row(2, _summary((0.2, 0.2), (0.3, 0.35), (0.3, 0.35)))
    assert flat["met"]["coder not falling"] and flat["met"]["adversarial +0.05"]
    table = script.seeds_table([met, short, flat])
    assert table.startswith("| seed |") and table.count("\n| ") == 3  # three seed rows
    assert "adversarial +0.05: 3 of 3" in table
    assert "validity +0.05: 2 of 3" in table
    assert "coder not falling: 2 of 3" in table
    assert "all three: 2 of 3" in table


def test_a_summary_without_an_evaluation_is_an_error_naming_the_seed() -> None:
    script = _script()
    with pytest.raises(ValueError, match="seed 4: summary.json has no 'before'/'after'"):
        script.seed_row(4, {"steps": 150})
    partial = _summary((0.1, 0.2), (0.1, 0.2), (0.1, 0.2))
    del partial["after"]["tester/validity"]
    with pytest.raises(ValueError, match=r"seed 5: summary.json lacks \['tester/validity'\]"):
        script.seed_row(5, partial)


def test_finished_runs_are_read_back_not_retrained(tmp_path: Path, capsys) -> None:
    script = _script()
    for seed, val in ((0, (0.42, 0.46)), (1, (0.37, 0.49))):
        run = tmp_path / f"seed_{seed}"
        run.mkdir()
        (run / "summary.json").write_text(json.dumps(_summary((0.3, 0.31), val, (0.2, 0.3))))
    assert script.main(["--seeds", "0", "1", "--out", str(tmp_path)]) == 0
    written = json.loads((tmp_path / "seeds.json").read_text())
    assert [row["seed"] for row in written["seeds"]] == [0, 1]
    assert [row["met"]["validity +0.05"] for row in written["seeds"]] == [False, True]
    assert (tmp_path / "seeds.md").read_text().strip() in capsys.readouterr().out
    assert not (tmp_path / "seed_0" / "train.log").exists()  # nothing was trained
