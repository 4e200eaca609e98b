"""The plots of a training run: one PNG per group of metrics, curves smoothed as TensorBoard does.

Every curve is drawn as TensorBoard draws it: an exponential moving average (debiased, smoothing
weight ``smoothing``, 0.6 by default; :func:`ema`) over the faint raw line; where ``summary.json``
holds a ``before``/``after`` evaluation of a plotted metric, it is marked at the first and last
step of that metric's curve (the evaluation runs on held-out problems, the curves are training
rollouts: the markers say where the run started and ended, not a point of the curve).
:data:`PLOTS` lists the files; :mod:`agents.evaluation.report` embeds them in the run's page.

Plotting needs matplotlib (``pip install 'codea1[train]'``).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_SMOOTHING",
    "LINE_STYLES",
    "MONITOR_TOTALS",
    "PLOTS",
    "PLOT_SOFTWARE",
    "ema",
    "is_report_plot",
    "plot_keys",
    "plot_run",
    "series_style",
]

DEFAULT_SMOOTHING = 0.6
"""TensorBoard's default smoothing weight."""

PLOT_SOFTWARE = "codea1 report"
"""The PNG ``Software`` text of every plot :func:`plot_run` writes (see :func:`is_report_plot`)."""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

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
        (
            "tester/validity",
            "tester/adversarial",
            "tester/valid_failure_rate",
            "tester/suites_with_failure",
        ),
        "rate",
    ),
    ("mistake_book", "Mistake-book size", ("mistake_book/size",), "entries"),
    (
        "kl",
        "KL to the reference",
        ("losses/coder_kl", "losses/tester_kl", "losses/shared_kl"),
        "KL",
    ),
    (
        "ppo_kl",
        "Policy change per update (PPO approx. KL, old to new)",
        ("losses/*_approx_kl",),
        "KL (k1 estimate)",
    ),
    (
        "monitor",
        "Reward-hacking monitor (counts per step, over all its problems)",
        ("monitor/*", "quality/*"),
        "count",
    ),
)
"""``(file stem, title, metric keys, y label)`` of each plot.

A key is a name or an ``fnmatch`` glob (``*``). ``kl`` names the KL to the frozen reference of
each player (``losses/{player}_kl``), which a glob ``losses/*_kl`` would mix with the PPO estimate
``losses/{player}_approx_kl`` of how far one update moved the policy, which ``ppo_kl`` plots. See
:func:`plot_keys`."""

MONITOR_TOTALS = {"monitor/programs", "monitor/tests", "monitor/flagged"}
"""Monitor keys that are totals (what the counts are out of): neither plotted nor flagged."""


LINE_STYLES: tuple[str, ...] = ("-", "--", ":", "-.")
"""The smoothed curves' line styles, one per round of the 10 colours (``C0`` ... ``C9``)."""


def series_style(index: int) -> tuple[str, str | tuple[float, tuple[float, ...]]]:
    """The ``(colour, line style)`` of a plot's ``index``-th curve (0-based).

    The colours cycle through matplotlib's ten ``C0``...``C9``; each round of ten takes the next
    line style of :data:`LINE_STYLES`, then, past them, a dash pattern of its own
    (``(0, (n, 1, 1, 1))``, ``n`` the round), so no two curves of a plot share both.
    """
    if index < 0:
        raise ValueError(f"series index must be >= 0, got {index}")
    rounds, colour = divmod(index, 10)
    style: str | tuple[float, tuple[float, ...]] = (
        LINE_STYLES[rounds] if rounds < len(LINE_STYLES) else (0.0, (float(rounds), 1.0, 1.0, 1.0))
    )
    return f"C{colour}", style


def plot_keys(rows: Sequence[Mapping[str, Any]], patterns: Sequence[str]) -> list[str]:
    """The keys of ``rows`` a plot with ``patterns`` draws, in pattern order (see :data:`PLOTS`).

    A glob's matches come sorted; the :data:`MONITOR_TOTALS` are never drawn.
    """
    from fnmatch import fnmatchcase

    present: list[str] = []
    for row in rows:
        present += [k for k in row if k != "step" and k not in present]
    keys: list[str] = []
    for pattern in patterns:
        for key in sorted(present) if "*" in pattern else [pattern]:
            if key in present and fnmatchcase(key, pattern) and key not in keys:
                if key not in MONITOR_TOTALS:
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


def ema(values: Sequence[float], weight: float = DEFAULT_SMOOTHING) -> list[float]:
    """TensorBoard's smoothing: a debiased exponential moving average of ``values``.

    ``last = weight * last + (1 - weight) * value`` starting from ``last = 0``, and the ``i``-th
    point (1-based) divided by ``1 - weight ** i`` so that the start is not pulled towards 0. A
    constant series is returned unchanged (as TensorBoard does, free of rounding drift).

    Args:
        values: The raw points, in step order (finite numbers).
        weight: Smoothing weight in ``[0, 1)``; 0 returns the raw values.

    Raises:
        ValueError: ``weight`` is outside ``[0, 1)``.

    """
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    if all(v == values[0] for v in values):
        return [float(v) for v in values]
    smoothed: list[float] = []
    last = 0.0
    for i, value in enumerate(values, start=1):
        last = last * weight + (1.0 - weight) * float(value)
        smoothed.append(last / (1.0 - weight**i))
    return smoothed


def _evaluation(summary: Mapping[str, Any] | None, when: str, key: str) -> float | None:
    table = (summary or {}).get(when)
    value = table.get(key) if isinstance(table, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


def plot_run(
    rows: Sequence[Mapping[str, Any]],
    out_dir: str | Path,
    *,
    smoothing: float = DEFAULT_SMOOTHING,
    summary: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write one PNG per plot of :data:`PLOTS` that has data; returns ``{stem: path}``.

    Args:
        rows: ``metrics.jsonl`` rows, sorted by step.
        out_dir: Where the PNGs go (created).
        smoothing: The EMA weight of the drawn curves (see :func:`ema`); the raw values are the
            faint line under each curve.
        summary: ``summary.json``: each ``before``/``after`` value of a plotted metric is marked
            at the first/last step of its curve.

    Raises:
        ImportError: matplotlib is missing (the message names the extra).
        ValueError: ``smoothing`` is outside ``[0, 1)``.

    """
    ema([0.0, 1.0], smoothing)  # validates the weight before anything is drawn
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
    except ImportError as exc:
        raise ImportError("codea1 report needs matplotlib: pip install 'codea1[train]'") from exc
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for stem, title, patterns, ylabel in PLOTS:
        keys = plot_keys(rows, patterns)
        if not keys:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
        marked = {"before": False, "after": False}
        for index, key in enumerate(keys):
            xs, ys = _series(rows, key)
            if not xs:
                continue
            color, style = series_style(index)
            ax.plot(xs, ys, color=color, alpha=0.25, linewidth=1.0)
            ax.plot(xs, ema(ys, smoothing), color=color, linestyle=style, linewidth=1.8, label=key)
            for when, x, marker, face in (
                ("before", xs[0], "o", "white"),
                ("after", xs[-1], "*", color),
            ):
                value = _evaluation(summary, when, key)
                if value is not None:
                    ax.plot(
                        [x],
                        [value],
                        linestyle="none",
                        color=color,
                        marker=marker,
                        markerfacecolor=face,
                        markersize=10,
                        markeredgewidth=1.5,
                        zorder=5,
                    )
                    marked[when] = True
        handles, labels = ax.get_legend_handles_labels()
        for when, marker, face in (("before", "o", "white"), ("after", "*", "0.4")):
            if marked[when]:
                proxy = Line2D([], [], color="0.4", marker=marker, markerfacecolor=face)
                proxy.set_linestyle("none")
                handles.append(proxy)
                labels.append(f"eval {when} RL")
        ax.set_title(title)
        ax.set_xlabel("RL step")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        legend = ax.legend(handles, labels, fontsize=7, loc="best")
        legend.set_title(f"smoothing {smoothing:g} (raw: faint)")
        legend.get_title().set_fontsize(7)
        fig.tight_layout()
        path = out / f"{stem}.png"
        fig.savefig(path, metadata={"Software": PLOT_SOFTWARE})
        plt.close(fig)
        written[stem] = path
    return written


def is_report_plot(path: str | Path) -> bool:
    """Whether ``path`` is a PNG that :func:`plot_run` wrote (its ``Software`` text chunk).

    A report removes an earlier report's plot that the new run has no data for; a file of the
    user's that only bears a plot's name (``rewards.png``) is not one and is kept, and so are
    plots of codea1 versions before this check (matplotlib's own ``Software`` text). The chunks
    before the image data are read, nothing else; an unreadable file, or one that is not a
    regular file, is not a plot.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO of that name would block the read
            return False
        with open(path, "rb") as file:
            if file.read(8) != _PNG_SIGNATURE:
                return False
            while True:
                header = file.read(8)
                if len(header) < 8:
                    return False
                length, kind = int.from_bytes(header[:4], "big"), header[4:]
                if kind == b"IDAT" or length > 1 << 20:
                    return False
                data = file.read(length)
                file.read(4)  # the chunk's CRC
                if kind == b"tEXt" and data.partition(b"\0")[::2] == (
                    b"Software",
                    PLOT_SOFTWARE.encode("latin-1"),
                ):
                    return True
    except OSError:
        return False
