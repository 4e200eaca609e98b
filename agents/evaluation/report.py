"""Training-run reports: PNG plots and one self-contained HTML page.

:func:`write_report` reads a run directory written by the trainer (``metrics.jsonl``, and when
present ``config.json``, ``summary.json``, ``duels.jsonl``) and writes into ``RUN_DIR/report/``
(or another directory) the plots of :func:`~agents.evaluation.plots.plot_run` (each curve
smoothed as TensorBoard smooths it, over the faint raw line, with the ``before``/``after``
evaluation marked) and the page:

* ``rewards.png``: both players' rewards over RL steps;
* ``pass_rate.png``: the coder's GT pass rate (and the share of codes passing every GT test);
* ``tester_rates.png``: the tester's validity (``R_val``) and adversarial (``R_adv``) rates;
* ``mistake_book.png``: mistake-book size;
* ``kl.png``: KL to the frozen reference (``losses/{player}_kl``);
* ``ppo_kl.png``: how far each update moved the policy (``losses/{player}_approx_kl``, the PPO
  k1 estimate of the KL from the rollout policy to the updated one);
* ``monitor.png``: reward-hacking monitor counts per step (``monitor/*``, ``quality/*``; each a
  step's count over all its problems), when logged;
* ``report.html``: all of the above embedded as base64 (the page needs no other file), the
  before/after evaluation (each key with its label from the held-out summary table), the
  monitor's flags, and a table of example duels (problem, code, tests, verdicts).

Example duels come from the run's duel logs, ``RUN_DIR/duels*.jsonl`` (one JSON object per line
with ``task_id``, ``prompt``, ``code``, ``tests``, ``verdicts`` (list of ``{"test", "valid",
"passed"}``, one per kept test), ``coder_reward``, ``tester_reward``) or, when there are none
(the trainer itself logs only scalars: ``metrics.jsonl``, ``summary.json``, checkpoints), are
played by :func:`play_example_duels` with the run's latest checkpoint (needs ``codea1[train]``).
:func:`pick_duels` chooses the rows shown so that duels in which the tester broke the code (a
kept test the code failed) are among them whenever the logs hold one; when they hold none, the
table says so.

Everything read from the run directory is data (``json`` only, nothing is executed) and every
text put into the page is HTML-escaped: duel logs hold model-written code and tests.

Plotting needs matplotlib (``pip install 'codea1[train]'``).
"""

from __future__ import annotations

import base64
import html
import json
import os
import shutil
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.evaluation.plots import (
    DEFAULT_SMOOTHING,
    MONITOR_TOTALS,
    PLOTS,
    ema,
    is_report_plot,
    plot_run,
)
from agents.training.checkpoint import CheckpointError
from agents.training.heldout_eval import CROSS_ROWS, SUMMARY_ROWS
from agents.training.metrics import read_metrics
from codea1_env.atomic import make_temp_dir

__all__ = [
    "DEFAULT_SMOOTHING",
    "PLOTS",
    "RunData",
    "broke_the_code",
    "ema",
    "load_run",
    "pick_duels",
    "play_example_duels",
    "plot_run",
    "write_report",
]

SHOWN_DUELS = 6
"""Most example duels shown in the page."""


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
    """A JSON object file; absent reads as ``{}``, damaged as ``{}`` with a warning naming it."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        warnings.warn(f"{path}: not valid JSON ({exc}), read as empty", stacklevel=2)
        return {}
    if not isinstance(data, dict):
        warnings.warn(f"{path}: not a JSON object, read as empty", stacklevel=2)
        return {}
    return data


def load_run(run_dir: str | Path) -> RunData:
    """Read a run directory.

    Raises:
        FileNotFoundError: the directory or its ``metrics.jsonl`` does not exist.

    """
    root = Path(run_dir)
    path = root / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{root} holds no metrics.jsonl (is it a codea1 run directory?)")
    rows = [r for r in read_metrics(path) if isinstance(r.get("step"), (int, float))]
    if not rows and path.read_bytes().strip():  # read_metrics skips a torn last line silently
        warnings.warn(
            f"{path}: no logged step could be read (not JSON lines with a step)", stacklevel=2
        )
    rows.sort(key=lambda r: r["step"])
    return RunData(
        run_dir=root,
        rows=rows,
        config=_read_json(root / "config.json"),
        summary=_read_json(root / "summary.json"),
        duels=[d for path in sorted(root.glob("duels*.jsonl")) for d in read_metrics(path)],
    )


# --------------------------------------------------------------------------------------------
# Example duels
# --------------------------------------------------------------------------------------------


def play_example_duels(run_dir: str | Path, n: int = 4, seed: int = 0) -> list[dict[str, Any]]:
    """Play ``n`` duels with the run's latest checkpoint on its held-out problems.

    The coder answers each problem, the tester writes one suite against that code, and the
    referee judges the pair (``update_book=False``) with the run's scoring settings (its
    ``config.json``'s rewards, limits and stability options).

    Raises:
        ImportError: the training stack is missing.
        ValueError: the run has no complete checkpoint, or its ``config.json`` is not a
            codea1 config (the message names the file).

    """
    from agents.evaluation.evaluate import EvalSettings, load_policy
    from agents.training.config import TrainConfig
    from codea1_env.envs.duel_env import duel_info
    from codea1_env.game.duel import Duel, Role, judge_grid
    from codea1_env.game.spaces import observe
    from codea1_env.problems import ProceduralSource, load_source
    from codea1_env.scoring.referee import Referee

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
    # the run's own scoring: rewards (mode, equality, inline, candidate context), limits and
    # stability options, as its training referee had them
    saved = TrainConfig.load(root / "config.json") if config else TrainConfig()
    anonymize_code = saved.stability.anonymize_code
    with Referee(
        reward_config=saved.reward_config(), limits=saved.limits, stability=saved.stability
    ) as referee:
        policy = load_policy(f"checkpoint:{root}", referee.sandbox, EvalSettings(seed=seed))
        # the env's game layer: the same observations, extraction and anonymization as training
        games = [Duel(p) for p in problems]
        codes = (
            policy.coder.act([observe(g, Role.CODER) for g in games], [duel_info(g) for g in games])
            if policy.coder is not None
            else ["" for _ in games]
        )
        for game, code in zip(games, codes):
            game.play_code(code, anonymize_code=anonymize_code)
        suites: list[list[str]] = [[] for _ in codes]
        if policy.tester is not None:
            texts = policy.tester.act(
                [observe(g, Role.TESTER) for g in games], [duel_info(g) for g in games]
            )
            for game, text in zip(games, texts):
                game.play_tests(text)
            suites = [[t] for t in texts]
        judgements = judge_grid(referee, [[[g]] for g in games], update_book=False)
    duels = []
    for problem, code, suite, judgement in zip(problems, codes, suites, judgements):
        verdicts = [
            {"test": v.test, "valid": v.valid, "passed": v.passed, "source": v.source}
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


def _verdicts(duel: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    verdicts = duel.get("verdicts")
    if not isinstance(verdicts, list):
        return []
    return [v for v in verdicts if isinstance(v, Mapping)]


def broke_the_code(duel: Mapping[str, Any]) -> int:
    """How many of the tester's kept tests the duel's code failed (0: the code survived).

    A verdict counts when its ``passed`` is ``False`` and it is not a replayed mistake-book test
    (``source`` ``"mistake_book"``): the tester's own test, with the GT's expectation, broke the
    code. Kept tests whose written expectation was wrong count too: they are scored against the GT.
    """
    return sum(
        1
        for v in _verdicts(duel)
        if v.get("passed") is False and v.get("source", "generated") != "mistake_book"
    )


def pick_duels(duels: Sequence[Mapping[str, Any]], n: int = SHOWN_DUELS) -> list[Mapping[str, Any]]:
    """Choose up to ``n`` duels to show, in log order, with broken-code duels among them.

    When the logs hold duels in which the tester broke the code (:func:`broke_the_code`), up to
    half of the rows (at least one) are the latest of them; the other rows are the latest of the
    remaining duels.
    """
    if n <= 0:
        return []
    indexed = list(enumerate(duels))
    broken = [(i, d) for i, d in indexed if broke_the_code(d)]
    chosen = broken[-max(1, n // 2) :] if broken else []
    taken = {i for i, _ in chosen}
    others = [(i, d) for i, d in indexed if i not in taken]
    remaining = n - len(chosen)
    if remaining > 0:
        chosen += others[-remaining:]
    return [d for _, d in sorted(chosen, key=lambda pair: pair[0])]


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:4px 8px;
vertical-align:top}th{background:#f3f3f3}pre{margin:0;white-space:pre-wrap;font-size:.85em;
max-width:420px}.plots img{max-width:49%;margin:2px}.flag{color:#b00;font-weight:bold}
.ok{color:#070}.pass{color:#070}.fail{color:#b00}.broke{color:#b00;font-size:.85em;margin:.3em 0}
.note{font-style:italic;color:#555}
"""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value == 0 or 1e-3 <= abs(value) < 1e4 else f"{value:.3g}"
    return html.escape(str(value))


def monitor_flags(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Total of each ``monitor/*`` and ``quality/*`` flag over the logged steps (flags seen only).

    Each row holds a step's count over all its problems (``step_metrics`` sums the counts), so
    the total is what the run's logged steps flagged. Runs logged before the counts were summed
    hold per-problem means there, and their totals are that much smaller.
    """
    totals: dict[str, float] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith(("monitor/", "quality/")) and key not in MONITOR_TOTALS:
                if isinstance(value, (int, float)) and value > 0:
                    totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def _summary_html(summary: Mapping[str, Any]) -> str:
    before = summary.get("before") or {}
    after = summary.get("after") or {}
    keys = sorted(set(before) | set(after))
    if not keys:
        return "<p>No before/after evaluation in summary.json.</p>"
    labels = {key: label for key, label in SUMMARY_ROWS}
    labels.update((key, label) for key, _, label in CROSS_ROWS)
    lines = ["<table><tr><th>metric</th><th>meaning</th><th>before RL</th><th>after RL</th></tr>"]
    for key in keys:
        lines.append(
            f"<tr><td>{html.escape(key)}</td><td>{html.escape(labels.get(key, ''))}</td>"
            f"<td>{_fmt(before.get(key, '-'))}</td><td>{_fmt(after.get(key, '-'))}</td></tr>"
        )
    lines.append("</table>")
    return "\n".join(lines)


def _duels_html(
    duels: Sequence[Mapping[str, Any]],
    note: str,
    n: int = SHOWN_DUELS,
    origin: str = "logged duels",
) -> str:
    if not duels:
        return (
            f"<p>No example duels: {html.escape(note)}; so no duel in which a kept test "
            "failed the code either.</p>"
        )
    shown = pick_duels(duels, n)
    n_broken = sum(1 for d in duels if broke_the_code(d))
    lines = [
        f"<p>{len(shown)} of {len(duels)} {html.escape(origin)}; the tester broke the code "
        "(a kept test "
        f"failed) in {n_broken}.</p>",
        "<table><tr><th>problem</th><th>code</th><th>tests</th><th>verdicts</th>"
        "<th>rewards</th></tr>",
    ]
    for duel in shown:
        verdicts = "<br>".join(
            f"<span class='{'pass' if v.get('passed') else 'fail'}'>"
            f"{'pass' if v.get('passed') else 'FAIL'}</span>"
            f"{'' if v.get('valid') else ' (invalid, GT-corrected)'}"
            f"{' (mistake book)' if v.get('source') == 'mistake_book' else ''}: "
            f"<code>{html.escape(str(v.get('test', ''))[:160])}</code>"
            for v in _verdicts(duel)
        )
        failed = broke_the_code(duel)
        badge = (
            f"<p class='broke'>tester broke the code: {failed} kept test"
            f"{'s' if failed != 1 else ''} failed</p>"
            if failed
            else ""
        )
        rewards = (
            f"coder {_fmt(duel.get('coder_reward'))}<br>tester {_fmt(duel.get('tester_reward'))}"
            f"<br>GT pass {_fmt(duel.get('gt_pass_rate'))}"
        )
        lines.append(
            f"<tr><td><b>{html.escape(str(duel.get('task_id', '')))}</b>{badge}"
            f"<pre>{html.escape(str(duel.get('prompt', ''))[:600])}</pre></td>"
            f"<td><pre>{html.escape(str(duel.get('code', ''))[:1500])}</pre></td>"
            f"<td><pre>{html.escape(str(duel.get('tests', ''))[:1500])}</pre></td>"
            f"<td>{verdicts or '-'}</td><td>{rewards}</td></tr>"
        )
    if not n_broken:
        lines.append(
            "<tr><td colspan='5' class='note'>No logged duel in which a kept test failed the "
            f"code: in all {len(duels)} duels the code passed every kept test of the tester "
            "(or the suite kept none).</td></tr>"
        )
    lines.append("</table>")
    return "\n".join(lines)


def render_html(
    data: RunData,
    plots: Mapping[str, Path],
    duels_note: str = "none recorded",
    *,
    shown_duels: int = SHOWN_DUELS,
    smoothing: float = DEFAULT_SMOOTHING,
    duels_origin: str = "logged duels",
) -> str:
    """The self-contained page (plots embedded as base64 PNG data URIs).

    Args:
        data: The run.
        plots: ``{stem: PNG path}`` from :func:`plot_run`.
        duels_note: Why there are no example duels, when there are none.
        shown_duels: Most example duels in the table (see :func:`pick_duels`).
        smoothing: The EMA weight the plots were drawn with (named in the page).
        duels_origin: Where the example duels came from, as the page names them.

    """
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
            "<p class='flag'>Reward-hacking monitor flagged behaviour (programs or tests "
            f"flagged, summed over the {len(rows)} logged steps and all their problems):</p><ul>"
            + "".join(
                f"<li class='flag'>{html.escape(k)}: {v:g} in total over the logged steps</li>"
                for k, v in flags.items()
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
<h2>Plots</h2>
<p>Curves: exponential moving average (TensorBoard's debiased EMA, smoothing {smoothing:g}) over
the faint raw values. Markers: the held-out evaluation before RL (open circle, first step) and
after RL (star, last step) from summary.json.</p>
<div class="plots">{images or "<p>No metrics to plot.</p>"}</div>
<h2>Reward-hacking monitor</h2>{monitor}
<h2>Evaluation before and after RL</h2>{_summary_html(data.summary)}
<h2>Example duels</h2>{_duels_html(data.duels, duels_note, shown_duels, duels_origin)}
<h2>Last step</h2><table>{headline}</table>
</body></html>
"""


def write_report(
    run_dir: str | Path | RunData,
    out_dir: str | Path | None = None,
    *,
    duels: int = 4,
    smoothing: float = DEFAULT_SMOOTHING,
    shown_duels: int = SHOWN_DUELS,
) -> Path:
    """Write the PNG plots and ``report.html`` for a run; returns the HTML path.

    An earlier report's plot in ``out_dir`` that this run has no data for is removed; any other
    file is left alone, one of the user's that bears a plot's name included
    (:func:`~agents.evaluation.plots.is_report_plot`).

    Args:
        run_dir: The run directory, or a run :func:`load_run` has read already (it is not read
            again; example duels played for the report are stored in its ``duels``).
        out_dir: Where to write (default ``RUN_DIR/report``).
        duels: Example duels to show when the run logged none: twice as many are played with
            the latest checkpoint, and :func:`pick_duels` keeps ``duels`` of them, broken-code
            duels first (0: do not play).
        smoothing: EMA weight of the curves, in ``[0, 1)`` (see :func:`ema`).
        shown_duels: Most logged duels shown in the table.

    Raises:
        FileNotFoundError: not a run directory.
        ValueError: ``smoothing`` is outside ``[0, 1)``.

    """
    data = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    out = Path(out_dir) if out_dir is not None else data.run_dir / "report"
    note = "the run logged no duels (no duels*.jsonl)"
    origin = "logged duels"
    if not data.duels and duels > 0:
        try:
            data.duels = play_example_duels(data.run_dir, 2 * duels)
            shown_duels = duels
            origin = "duels played with the latest checkpoint on held-out problems"
        except (ImportError, ValueError, OSError, KeyError, CheckpointError) as exc:
            note = f"the run logged no duels (no duels*.jsonl) and none could be played ({exc})"
    # every file is made in a directory beside OUT and moved in at the end, the page last: an
    # interrupted or failed report leaves OUT as it was, never plots without their page
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = make_temp_dir(out.parent, f".{out.name}.")
    try:
        plots = plot_run(data.rows, staging, smoothing=smoothing, summary=data.summary)
        html_text = render_html(
            data, plots, note, shown_duels=shown_duels, smoothing=smoothing, duels_origin=origin
        )
        (staging / "report.html").write_text(html_text, encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        for made in sorted(staging.iterdir(), key=lambda path: path.name == "report.html"):
            os.replace(made, out / made.name)
        for stem, *_ in PLOTS:  # an earlier report's plot this run has no data for
            stale = out / f"{stem}.png"
            if stem not in plots and is_report_plot(stale):  # a user's file of that name stays
                stale.unlink(missing_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out / "report.html"
