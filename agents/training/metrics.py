"""Training metrics: a JSONL file (one flushed line per step), TensorBoard, optional wandb.

Keys are ``group/name`` with the groups CleanRL and the issue use: ``coder/`` and ``tester/``
(rewards, pass rates, validity, adversarial rates), ``losses/`` (policy loss, ``{player}_kl`` the
KL to the frozen reference, ``{player}_approx_kl`` the PPO estimate of one update's policy
change, clip fraction), ``charts/`` (learning rate, tokens/s, sandbox seconds and share,
mistake-book size, step time), and ``monitor/``, ``quality/`` (counts per step, over all the
step's problems). How a step's row combines its problems' values (counts summed, pooled rates,
means) is :func:`codea1_env.scoring.metrics.step_metrics`'s.

Resuming from step ``N`` first drops every JSONL line whose step is greater than ``N`` (lines
written after the checkpoint by the killed run, which the resumed run writes again) and asks
TensorBoard to purge events after ``N``, so the merged log has each step exactly once.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.training.checkpoint import write_text_atomic

__all__ = [
    "MetricsLogger",
    "ProgressBar",
    "player_stats",
    "read_metrics",
    "rounded",
    "step_line",
    "timing_metrics",
]


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    r"""Read a JSONL log (``metrics.jsonl``, ``duels.jsonl``), tolerating a torn last line.

    Lines end at ``"\n"`` only. A last line that does not decode is a write cut short by a crash
    and is skipped silently; any other line that does not decode is skipped with a
    :class:`UserWarning` naming the file and line. A missing file reads as no rows.
    """
    rows: list[dict[str, Any]] = []
    target = Path(path)
    if not target.is_file():
        return rows
    lines = target.read_text(encoding="utf-8", errors="replace").split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            if index != last:
                warnings.warn(f"{target}:{index + 1}: not valid JSON, skipped", stacklevel=2)
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def player_stats(player: str, stats: Mapping[str, float]) -> dict[str, float]:
    """A player's update statistics as metric keys.

    ``lr`` and ``tokens`` go to ``charts/{player}_...``, every other statistic (the losses, KL,
    clip fraction) to ``losses/{player}_...``.
    """
    out = {}
    for key, value in stats.items():
        group = "charts" if key in ("lr", "tokens") else "losses"
        out[f"{group}/{player}_{key}"] = value
    return out


def timing_metrics(
    step_seconds: float, rollout_seconds: float, rollout_tokens: int, sandbox_seconds: float
) -> dict[str, float]:
    """A step's ``charts/`` timings: step, rollout (and its tokens per second), sandbox share."""
    return {
        "charts/step_seconds": step_seconds,
        "charts/rollout_seconds": rollout_seconds,
        "charts/rollout_tokens": float(rollout_tokens),
        "charts/tokens_per_s": rollout_tokens / max(rollout_seconds, 1e-9),
        "charts/sandbox_seconds": sandbox_seconds,
        "charts/sandbox_share": sandbox_seconds / max(step_seconds, 1e-9),
    }


def rounded(values: Mapping[str, float]) -> dict[str, float]:
    """``values`` rounded to 4 decimals (for log lines)."""
    return {k: round(v, 4) for k, v in values.items()}


STEP_LINE_KEYS: tuple[str, ...] = (
    "coder/reward",
    "coder/gt_pass_rate",
    "tester/reward",
    "tester/validity",
    "tester/adversarial",
    "charts/step_seconds",
)
"""The metrics a step's progress line shows (when the progress bar is off)."""


def step_line(row: Mapping[str, Any]) -> str:
    """One step's progress line: ``step N: coder/reward=... ...`` (keys the row has)."""
    parts = [f"{k}={row[k]:.3f}" for k in STEP_LINE_KEYS if k in row]
    return f"step {row['step']}: " + " ".join(parts)


def _clean(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _spans(steps: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3, 7"``."""
    spans: list[list[int]] = []
    for step in steps:
        if spans and step == spans[-1][1] + 1:
            spans[-1][1] = step
        else:
            spans.append([step, step])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)


class MetricsLogger:
    """Write each step's scalars to ``run_dir/metrics.jsonl``, TensorBoard and wandb.

    Args:
        run_dir: The run directory.
        resume_step: The checkpoint step a resumed run restarts from (lines after it are
            dropped); ``None`` for a fresh run.
        tensorboard: Write TensorBoard event files to ``run_dir/tb``.
        wandb_project: Log to this wandb project too (``None``: no wandb).
        run_name: The run's name (wandb).
        config: The config dict (wandb).

    """

    def __init__(
        self,
        run_dir: Path,
        *,
        resume_step: int | None = None,
        tensorboard: bool = True,
        wandb_project: str | None = None,
        run_name: str = "",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = Path(run_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None:
            kept = [r for r in read_metrics(self.path) if int(r.get("step", -1)) <= resume_step]
            seen = {int(r.get("step", -1)) for r in kept}
            missing = [step for step in range(1, resume_step + 1) if step not in seen]
            if missing:  # cut outside a run (a kill cannot: each line is synced before its step's
                # checkpoint); a resume goes on from the checkpoint and does not re-run them
                warnings.warn(
                    f"{self.path}: no line for step(s) {_spans(missing)} up to the resumed "
                    f"checkpoint (step {resume_step}); the resumed run does not re-run them",
                    stacklevel=2,
                )
            write_text_atomic(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        elif self.path.exists():
            self.path.unlink()
        self._fh = self.path.open("a", encoding="utf-8")
        self._tb: Any = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:  # pragma: no cover - tensorboard is in [train]
                raise ImportError(
                    "TensorBoard logging needs tensorboard: pip install 'codea1[train]' "
                    "(or pass --no-tensorboard)"
                ) from exc
            purge = None if resume_step is None else resume_step + 1
            self._tb = SummaryWriter(log_dir=str(Path(run_dir) / "tb"), purge_step=purge)
        self._wandb: Any = None
        if wandb_project:
            try:
                import wandb
            except ImportError as exc:
                raise ImportError("--wandb needs wandb: pip install wandb") from exc
            self._wandb = wandb.init(
                project=wandb_project,
                name=run_name or None,
                config=dict(config or {}),
                resume="allow",
                id=run_name or None,
            )

    def log(self, step: int, scalars: Mapping[str, Any]) -> dict[str, Any]:
        """Log one step; returns the row written (non-finite or non-numeric values dropped)."""
        row: dict[str, Any] = {"step": int(step)}
        for key, value in scalars.items():
            number = _clean(value)
            if number is not None:
                row[key] = number
        self._fh.write(json.dumps(row) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        if self._tb is not None:
            for key, value in row.items():
                if key != "step":
                    self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log({k: v for k, v in row.items() if k != "step"}, step=step)
        return row

    def close(self) -> None:
        """Flush and close every sink. Idempotent."""
        if not self._fh.closed:
            self._fh.close()
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ProgressBar:
    """A tqdm bar over the RL steps showing the live rewards (a no-op when disabled)."""

    SHOWN = {
        "coder/reward": "R_code",
        "coder/gt_pass_rate": "gt",
        "tester/reward": "R_test",
        "tester/validity": "val",
        "tester/adversarial": "adv",
        "losses/coder_kl": "kl",
        "charts/step_seconds": "s/step",
    }

    def __init__(self, total: int, initial: int = 0, enabled: bool = True) -> None:
        self._bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=initial, desc="RL", dynamic_ncols=True)

    def update(self, row: Mapping[str, Any]) -> None:
        """Advance one step and show the row's headline numbers."""
        if self._bar is None:
            return
        post = {short: f"{row[key]:.3f}" for key, short in self.SHOWN.items() if key in row}
        self._bar.set_postfix(post, refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
