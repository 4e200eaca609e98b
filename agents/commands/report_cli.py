"""``codea1 report RUN_DIR``: PNG plots and one self-contained HTML page for a training run.

Example::

    codea1 report runs/tiny__code-a1__0__1700000000 --duels 4 --smoothing 0.8

Writes ``RUN_DIR/report/*.png`` and ``RUN_DIR/report/report.html`` (or ``--out DIR``).
"""

from __future__ import annotations

import argparse
import sys

from agents.commands.argtypes import nonnegative_int
from agents.evaluation.report import DEFAULT_SMOOTHING


def _smoothing(text: str) -> float:
    """Parse ``--smoothing``: a number in ``[0, 1)``."""
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from exc
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``report`` subcommand's arguments."""
    parser.add_argument("run_dir", help="a run directory holding metrics.jsonl")
    parser.add_argument("--out", default=None, help="output directory (default RUN_DIR/report)")
    parser.add_argument(
        "--duels",
        type=nonnegative_int,
        default=4,
        help="example duels to play with the latest checkpoint when the run recorded none "
        "(0: none; default 4)",
    )
    parser.add_argument(
        "--smoothing",
        type=_smoothing,
        default=DEFAULT_SMOOTHING,
        help="EMA smoothing weight of the curves, in [0, 1), as TensorBoard's slider "
        f"(0: raw values; default {DEFAULT_SMOOTHING})",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``codea1 report``; returns 2 when the run directory is not usable."""
    from agents.commands.argtypes import check_output
    from agents.evaluation.plots import PLOTS, is_report_plot
    from agents.evaluation.report import load_run, monitor_flags, write_report

    try:
        if args.out is not None:
            check_output("--out", args.out, directory=True)
        data = load_run(args.run_dir)
        page = write_report(data, args.out, duels=args.duels, smoothing=args.smoothing)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        print(f"codea1 report: error: {exc}", file=sys.stderr)
        return 2
    flags = monitor_flags(data.rows)
    plots = [stem for stem, *_ in PLOTS if is_report_plot(page.parent / f"{stem}.png")]
    print(f"wrote {page} and {len(plots)} plots in {page.parent}")
    if flags:
        print("monitor flags: " + ", ".join(f"{k}={v:g}" for k, v in flags.items()))
    return 0
