"""Training-run reports: PNG plots and one self-contained HTML page.

:func:`write_report` reads a run directory written by the trainer (``metrics.jsonl``, and when
present ``config.json``, ``summary.json``, ``duels.jsonl``) and writes into ``RUN_DIR/report/``
(or another directory):

* ``rewards.png``: both players' rewards over RL steps;
* ``pass_rate.png``: the coder's GT pass rate (and the share of codes passing every GT test);
* ``tester_rates.png``: the tester's validity (``R_val``) and adversarial (``R_adv``) rates;
* ``mistake_book.png``: mistake-book size;
* ``kl.png``: KL to the frozen reference (every ``losses/*kl*`` key);
* ``monitor.png``: reward-hacking monitor counts per step (``monitor/*``), when logged;
* ``report.html``: all of the above embedded as base64 (the page needs no other file), the
  before/after evaluation, the monitor's flags, and a table of example duels (problem, code,
  tests, verdicts).

Example duels come from ``RUN_DIR/duels.jsonl`` (one JSON object per line with ``task_id``,
``prompt``, ``code``, ``tests``, ``verdicts`` (list of ``{"test", "valid", "passed"}``),
``coder_reward``, ``tester_reward``) or, when that file is absent, are played by
:func:`play_example_duels` with the run's latest checkpoint (needs ``codea1[train]``).

Plotting needs matplotlib (``pip install 'codea1[train]'``).
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PLOTS", "RunData", "load_run", "play_example_duels", "plot_run", "write_report"]

PLOTS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("rewards", "Rewards", ("coder/reward", "tester/reward"), "reward"),
    (
        "pass_rate",
        "Coder pass rate on GT tests",
        ("coder/gt_pass_rate", "coder/all_gt_pass"),
        "rate",
    ),
    (
        "tester_rates",
        "Tester validity and adversarial rates",
        ("tester/validity", "tester/adversarial", "tester/valid_failure_rate"),
        "rate",
    ),
    ("mistake_book", "Mistake-book size", ("mistake_book/size",), "entries"),
    ("kl", "KL to the reference", ("losses/*kl*",), "KL"),
    ("monitor", "Reward-hacking monitor (counts per step)", ("monitor/*", "quality/*"), "count"),
)
"""``(file stem, title, metric keys (``*`` globs), y label)`` of each plot."""

_MONITOR_SKIP = {"monitor/programs", "monitor/tests", "monitor/flagged"}


@dataclass
class RunData:
    """What a run directory holds.

    Attributes:
        run_dir: The directory.
        rows: ``metrics.jsonl`` rows (``step`` plus scalars), sorted by step.
        config: ``config.json`` (empty when absent).
        summary: ``summary.json`` (empty when absent): ``before``/``after`` evaluations.
        duels: Example duels (see the module docstring).

    """

    run_dir: Path
    rows: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    duels: list[dict[str, Any]] = field(default_factory=list)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if not path.is_file():
        return rows
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line after a crash
        if isinstance(row, dict):
            rows.append(row)
    return rows


def load_run(run_dir: str | Path) -> RunData:
    """Read a run directory.

    Raises:
        FileNotFoundError: the directory or its ``metrics.jsonl`` does not exist.

    """
    root = Path(run_dir)
    path = root / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{root} holds no metrics.jsonl (is it a codea1 run directory?)")
    rows = [r for r in _read_jsonl(path) if isinstance(r.get("step"), (int, float))]
    rows.sort(key=lambda r: r["step"])
    return RunData(
        run_dir=root,
        rows=rows,
        config=_read_json(root / "config.json"),
        summary=_read_json(root / "summary.json"),
        duels=_read_jsonl(root / "duels.jsonl"),
    )


def _keys(rows: Sequence[Mapping[str, Any]], patterns: Sequence[str]) -> list[str]:
    from fnmatch import fnmatchcase

    present: list[str] = []
    for row in rows:
        present += [k for k in row if k != "step" and k not in present]
    keys: list[str] = []
    for pattern in patterns:
        for key in sorted(present) if "*" in pattern else [pattern]:
            if key in present and fnmatchcase(key, pattern) and key not in keys:
                if key not in _MONITOR_SKIP:
                    keys.append(key)
    return keys


def _series(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for row in rows:
        value = row.get(key)
        if isinstance(value, (int, float)) and math.isfinite(float(value)):
            xs.append(float(row["step"]))
            ys.append(float(value))
    return xs, ys


def plot_run(rows: Sequence[Mapping[str, Any]], out_dir: str | Path) -> dict[str, Path]:
    """Write one PNG per plot of :data:`PLOTS` that has data; returns ``{stem: path}``.

    Raises:
        ImportError: matplotlib is missing (the message names the extra).

    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("codea1 report needs matplotlib: pip install 'codea1[train]'") from exc
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for stem, title, patterns, ylabel in PLOTS:
        keys = _keys(rows, patterns)
        if not keys:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
        for key in keys:
            xs, ys = _series(rows, key)
            ax.plot(xs, ys, marker="o" if len(xs) <= 30 else None, markersize=3, label=key)
        ax.set_title(title)
        ax.set_xlabel("RL step")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        path = out / f"{stem}.png"
        fig.savefig(path)
        plt.close(fig)
        written[stem] = path
    return written


# --------------------------------------------------------------------------------------------
# Example duels
# --------------------------------------------------------------------------------------------


def play_example_duels(run_dir: str | Path, n: int = 4, seed: int = 0) -> list[dict[str, Any]]:
    """Play ``n`` duels with the run's latest checkpoint on its held-out problems.

    The coder answers each problem, the tester writes one suite against that code, and the
    referee judges the pair (``update_book=False``).

    Raises:
        ImportError: the training stack is missing.
        ValueError: the run has no complete checkpoint.

    """
    from agents.evaluate import EvalSettings, load_policy
    from codea1_env.problems import ProceduralSource, load_source
    from codea1_env.referee import Referee

    root = Path(run_dir)
    config = _read_json(root / "config.json")
    spec = str(config.get("eval_problems") or config.get("problems") or "bank")
    name, _, arg = spec.partition(":")
    source: Any = (
        ProceduralSource(seed=int(arg or 0), split="test")
        if name == "procedural-test"
        else load_source(spec)
    )
    problems = [source[i] for i in list(source.ids())[:n]]
    with Referee() as referee:
        policy = load_policy(f"checkpoint:{root}", referee.sandbox, EvalSettings(seed=seed))
        obs = [
            {"role": 0, "prompt": p.prompt, "entry_point": p.entry_point, "code": ""}
            for p in problems
        ]
        infos = [{"task_id": p.task_id, "role": "coder", "problem": p} for p in problems]
        codes = policy.coder.act(obs, infos) if policy.coder is not None else []
        suites: list[list[str]] = [[] for _ in codes]
        if policy.tester is not None:
            from codea1_env.testcases import extract_code

            t_obs = [
                {
                    "role": 1,
                    "prompt": p.prompt,
                    "entry_point": p.entry_point,
                    "code": extract_code(c),
                }
                for p, c in zip(problems, codes)
            ]
            t_infos = [{**i, "role": "tester"} for i in infos]
            suites = [[t] for t in policy.tester.act(t_obs, t_infos)]
        judgements = referee.judge_many(
            [(p, [c], [s]) for p, c, s in zip(problems, codes, suites)], update_book=False
        )
    duels = []
    for problem, code, suite, judgement in zip(problems, codes, suites, judgements):
        verdicts = [
            {"test": v.test, "valid": v.valid, "passed": v.passed}
            for row in judgement.suites
            for s in row
            for v in s.verdicts
        ]
        duels.append(
            {
                "task_id": problem.task_id,
                "prompt": problem.prompt,
                "code": code,
                "tests": suite[0] if suite else "",
                "verdicts": verdicts,
                "gt_pass_rate": judgement.gt_pass_rates[0],
                "coder_reward": judgement.coder_rewards[0],
                "tester_reward": judgement.tester_rewards[0][0] if suite else None,
            }
        )
    return duels


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:4px 8px;
vertical-align:top}th{background:#f3f3f3}pre{margin:0;white-space:pre-wrap;font-size:.85em;
max-width:420px}.plots img{max-width:49%;margin:2px}.flag{color:#b00;font-weight:bold}
.ok{color:#070}.pass{color:#070}.fail{color:#b00}
"""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value == 0 or 1e-3 <= abs(value) < 1e4 else f"{value:.3g}"
    return html.escape(str(value))


def monitor_flags(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Total of each ``monitor/*`` and ``quality/*`` flag over the steps (flags seen only)."""
    totals: dict[str, float] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith(("monitor/", "quality/")) and key not in _MONITOR_SKIP:
                if isinstance(value, (int, float)) and value > 0:
                    totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def _summary_html(summary: Mapping[str, Any]) -> str:
    before = summary.get("before") or {}
    after = summary.get("after") or {}
    keys = sorted(set(before) | set(after))
    if not keys:
        return "<p>No before/after evaluation in summary.json.</p>"
    lines = ["<table><tr><th>metric</th><th>before RL</th><th>after RL</th></tr>"]
    for key in keys:
        lines.append(
            f"<tr><td>{html.escape(key)}</td><td>{_fmt(before.get(key, '-'))}</td>"
            f"<td>{_fmt(after.get(key, '-'))}</td></tr>"
        )
    lines.append("</table>")
    return "\n".join(lines)


def _duels_html(duels: Sequence[Mapping[str, Any]], note: str) -> str:
    if not duels:
        return f"<p>No example duels: {html.escape(note)}</p>"
    lines = [
        "<table><tr><th>problem</th><th>code</th><th>tests</th><th>verdicts</th>"
        "<th>rewards</th></tr>"
    ]
    for duel in duels:
        verdicts = "<br>".join(
            f"<span class='{'pass' if v.get('passed') else 'fail'}'>"
            f"{'pass' if v.get('passed') else 'FAIL'}</span>"
            f"{'' if v.get('valid') else ' (invalid, GT-corrected)'}: "
            f"<code>{html.escape(str(v.get('test', ''))[:160])}</code>"
            for v in duel.get("verdicts", [])
        )
        rewards = (
            f"coder {_fmt(duel.get('coder_reward'))}<br>tester {_fmt(duel.get('tester_reward'))}"
            f"<br>GT pass {_fmt(duel.get('gt_pass_rate'))}"
        )
        lines.append(
            f"<tr><td><b>{html.escape(str(duel.get('task_id', '')))}</b>"
            f"<pre>{html.escape(str(duel.get('prompt', ''))[:600])}</pre></td>"
            f"<td><pre>{html.escape(str(duel.get('code', ''))[:1500])}</pre></td>"
            f"<td><pre>{html.escape(str(duel.get('tests', ''))[:1500])}</pre></td>"
            f"<td>{verdicts or '-'}</td><td>{rewards}</td></tr>"
        )
    lines.append("</table>")
    return "\n".join(lines)


def render_html(data: RunData, plots: Mapping[str, Path], duels_note: str = "none recorded") -> str:
    """The self-contained page (plots embedded as base64 PNG data URIs)."""
    rows = data.rows
    last = rows[-1] if rows else {}
    title = f"codea1 run {data.run_dir.name}"
    cfg = data.config
    setup = ", ".join(
        f"{k}={cfg[k]}"
        for k in ("mode", "coder_model", "tester_model", "problems", "seed")
        if k in cfg
    )
    images = "".join(
        f"<img alt='{stem}' src='data:image/png;base64,"
        f"{base64.b64encode(path.read_bytes()).decode('ascii')}'>"
        for stem, path in plots.items()
    )
    flags = monitor_flags(rows)
    if flags:
        monitor = (
            "<p class='flag'>Reward-hacking monitor flagged behaviour:</p><ul>"
            + "".join(
                f"<li class='flag'>{html.escape(k)}: {v:g} in total</li>" for k, v in flags.items()
            )
            + "</ul>"
        )
    elif any(k.startswith(("monitor/", "quality/")) for r in rows for k in r):
        monitor = "<p class='ok'>Monitor on: nothing flagged.</p>"
    else:
        monitor = "<p>The run logged no <code>monitor/*</code> metrics.</p>"
    headline = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{_fmt(last[k])}</td></tr>"
        for k in sorted(last)
        if k != "step"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(setup)}; {len(rows)} logged steps (last: {last.get("step", "-")}).</p>
<h2>Plots</h2><div class="plots">{images or "<p>No metrics to plot.</p>"}</div>
<h2>Reward-hacking monitor</h2>{monitor}
<h2>Evaluation before and after RL</h2>{_summary_html(data.summary)}
<h2>Example duels</h2>{_duels_html(data.duels, duels_note)}
<h2>Last step</h2><table>{headline}</table>
</body></html>
"""


def write_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    duels: int = 4,
) -> Path:
    """Write the PNG plots and ``report.html`` for a run; returns the HTML path.

    Args:
        run_dir: The run directory.
        out_dir: Where to write (default ``RUN_DIR/report``).
        duels: Example duels to play with the latest checkpoint when the run recorded none
            (0: do not play).

    """
    data = load_run(run_dir)
    out = Path(out_dir) if out_dir is not None else data.run_dir / "report"
    plots = plot_run(data.rows, out)
    note = "the run recorded no duels.jsonl"
    if not data.duels and duels > 0:
        try:
            data.duels = play_example_duels(data.run_dir, duels)
        except (ImportError, ValueError, FileNotFoundError, KeyError) as exc:
            note = f"the run recorded no duels.jsonl and none could be played ({exc})"
    page = out / "report.html"
    page.write_text(render_html(data, plots, note), encoding="utf-8")
    return page
