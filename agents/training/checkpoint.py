"""Atomic checkpoints: ``run_dir/checkpoints/step_N/`` plus a ``latest`` pointer file.

A checkpoint is written into a temporary directory next to its final place, every file is
fsynced, and the directory is renamed into place with :func:`os.replace`; only then is the
``latest`` pointer rewritten (temp file + fsync + rename). A process killed at any moment leaves
either the previous checkpoint or the new one, never a half-written one: a directory without the
``COMPLETE`` marker is ignored, and removed by the next write. The last ``keep`` checkpoints are
kept.

RNG states (Python, NumPy's global state, torch CPU and CUDA) are captured and restored here too,
and so is the trainer's own state (:func:`write_trainer_state`, :func:`read_trainer_state`: the
step, the problem sampler, the RNGs, the curriculum and the evaluation before RL), and the quality
filter's pass histories (``pass_history.json``, :func:`read_pass_history`).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codea1_env.atomic import fsync_dir, fsync_tree, make_temp_dir, write_text_atomic

__all__ = [
    "COMPLETE_MARKER",
    "PASS_HISTORY_FILE",
    "CheckpointError",
    "TrainerState",
    "capture_rng_state",
    "check_weights_fit",
    "checkpoint_step",
    "curriculum_state",
    "latest_checkpoint",
    "list_checkpoints",
    "load_checkpoint_file",
    "load_model_weights",
    "load_player_weights",
    "load_state_into",
    "read_pass_history",
    "read_run_checkpoint",
    "read_trainer_state",
    "restore_rng_state",
    "write_checkpoint",
    "write_run_checkpoint",
    "write_text_atomic",
    "write_trainer_state",
]

COMPLETE_MARKER = "COMPLETE"
"""File written last inside a checkpoint directory; its presence means the checkpoint is whole."""


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be read (damaged after it was written); names the file."""


def load_checkpoint_file(path: Path, **kwargs: Any) -> Any:
    """``torch.load(path, **kwargs)``, with a damaged or unreadable file named in the error.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CheckpointError: the file exists but does not load (truncated, corrupt, unreadable).

    """
    import pickle

    import torch

    if not path.is_file():
        raise FileNotFoundError(f"checkpoint file {path} is missing")
    try:
        return torch.load(path, **kwargs)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as exc:
        text = str(exc).strip()  # torch's own text can run to several lines: its first
        first = text.splitlines()[0].rstrip(".") if text else ""
        step = path.parent
        hint = (
            f"; remove {step.parent.name}/{step.name} to resume from the checkpoint before it"
            if step.name.startswith("step_")
            else ""
        )
        raise CheckpointError(
            f"checkpoint file {path} cannot be loaded (damaged after it was written?): "
            f"{type(exc).__name__}: {first}{hint}"
        ) from exc


def load_model_weights(model: Any, path: Path, what: str, **kwargs: Any) -> None:
    """Load a state dict written for ``model`` into it, refusing one that does not fit.

    ``model.load_state_dict(..., strict=False)``: a LoRA checkpoint holds only what trains. A
    file that holds something else (an optimizer's state, a bare tensor), lacks one of the
    model's trainable parameters, or holds a tensor of another shape is refused, so a damaged or
    swapped file is never silently played with the initial weights.

    Args:
        model: The model to fill.
        path: The ``*_model.pt`` (or ``reference_*.pt``) file.
        what: The model, for the message (``"coder"``).
        **kwargs: Passed to ``torch.load`` (``map_location``).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CheckpointError: it does not load or does not fit (names the file and why).

    """
    weights = load_checkpoint_file(path, **kwargs)
    import torch

    if not isinstance(weights, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise CheckpointError(
            f"checkpoint file {path} does not fit the {what} model: it holds "
            f"{type(weights).__name__}, not a state dict of tensors"
        )
    check_weights_fit(model, weights, path, what)
    try:
        model.load_state_dict(weights, strict=False)
    except RuntimeError as exc:  # a tensor of another shape
        detail = " ".join(str(exc).split())[:300]
        raise CheckpointError(
            f"checkpoint file {path} does not fit the {what} model: {detail}"
        ) from exc


def check_weights_fit(model: Any, weights: Mapping[str, Any], path: Path, what: str) -> None:
    """Refuse ``weights`` (read from ``path``) that lack one of ``model``'s trainable parameters.

    Raises:
        CheckpointError: names the file, the model and the first missing parameters.

    """
    missing = [n for n, p in model.named_parameters() if p.requires_grad and n not in weights]
    if missing:
        raise CheckpointError(
            f"checkpoint file {path} does not fit the {what} model: missing {missing[:3]}"
        )


def load_state_into(target: Any, path: Path, what: str, **kwargs: Any) -> None:
    """``target.load_state_dict(torch.load(path))`` for an optimizer or a scheduler, checked.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CheckpointError: it does not load, or is not the state ``target`` takes (named).

    """
    state = load_checkpoint_file(path, **kwargs)
    try:
        if not isinstance(state, Mapping):
            raise TypeError(f"it holds {type(state).__name__}, not a state dict")
        target.load_state_dict(state)
    except (KeyError, ValueError, TypeError, IndexError, RuntimeError) as exc:
        raise CheckpointError(
            f"checkpoint file {path} is not the {what}'s state: {type(exc).__name__}: {exc}"
        ) from exc


_STEP_DIR = re.compile(r"^step_(\d+)$")


def checkpoint_step(path: Path) -> int:
    """The step of checkpoint directory ``path`` (``step_N`` -> N).

    Raises:
        ValueError: ``path`` is not named ``step_N``.
    """
    match = _STEP_DIR.match(Path(path).name)
    if match is None:
        raise ValueError(f"{path}: not a checkpoint directory (step_N)")
    return int(match.group(1))


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints under ``run_dir/checkpoints``, as ``(step, path)`` sorted by step."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        match = _STEP_DIR.match(child.name)
        if match and child.is_dir() and (child / COMPLETE_MARKER).is_file():
            found.append((int(match.group(1)), child))
    return sorted(found)


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint to resume from, or None when the run has none.

    Follows the ``latest`` pointer when it names a complete checkpoint; otherwise (a pointer
    lost or stale after a crash) falls back to the highest complete ``step_N``.
    """
    root = Path(run_dir) / "checkpoints"
    pointer = root / "latest"
    if pointer.is_file():
        name = pointer.read_text(encoding="utf-8", errors="replace").strip()  # damaged: no match
        candidate = root / name
        if _STEP_DIR.match(name) and (candidate / COMPLETE_MARKER).is_file():
            return candidate
    found = list_checkpoints(Path(run_dir))
    return found[-1][1] if found else None


def write_checkpoint(
    run_dir: Path, step: int, write: Callable[[Path], None], *, keep: int = 2
) -> Path:
    """Write checkpoint ``step`` atomically and prune old ones.

    Args:
        run_dir: The run directory.
        step: Step number (names the directory ``step_{step}``).
        write: Called with an empty temporary directory; writes every file of the checkpoint.
        keep: Complete checkpoints to keep (the newest ones).

    Returns:
        The final checkpoint directory.

    """
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(".tmp_step_*"):  # leftovers of a write killed midway
        shutil.rmtree(stale, ignore_errors=True)
    for child in root.glob("step_*"):  # a step_N without its marker is no checkpoint
        if _STEP_DIR.match(child.name) and not (child / COMPLETE_MARKER).is_file():
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
    tmp = make_temp_dir(root, f".tmp_step_{step}_")
    try:
        write(tmp)
        (tmp / COMPLETE_MARKER).write_text(f"{step}\n", encoding="utf-8")
        fsync_tree(tmp)
        final = root / f"step_{step}"
        if final.exists():
            trash = root / f".tmp_step_{step}_old"
            shutil.rmtree(trash, ignore_errors=True)
            os.replace(final, trash)
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(tmp, final)
        fsync_dir(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_text_atomic(root / "latest", f"step_{step}\n")
    for _old_step, old in list_checkpoints(Path(run_dir))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def capture_rng_state() -> dict[str, Any]:
    """Python, NumPy (global) and torch (CPU and every CUDA device) RNG states."""
    state: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state()}
    try:
        import torch
    except ImportError:  # pragma: no cover - the trainer always has torch
        return state
    state["torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`capture_rng_state` captured (missing parts are left alone)."""
    if "python" in state:
        random.setstate(state["python"])
    if "numpy" in state:
        np.random.set_state(state["numpy"])
    if "torch" in state or "cuda" in state:
        import torch

        if "torch" in state:
            torch.set_rng_state(state["torch"])
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])


@dataclass
class TrainerState:
    """The trainer's own part of a checkpoint (the players save theirs).

    Attributes:
        step: The RL step the checkpoint was written at.
        sampler: The problem sampler's bit-generator state.
        rng: What :func:`capture_rng_state` captured.
        curriculum: The training source's ``state_dict()``, or ``None`` without one.
        before: The evaluation before RL.

    """

    step: int
    sampler: Any
    rng: dict[str, Any]
    curriculum: dict[str, Any] | None = None
    before: dict[str, float] = field(default_factory=dict)


def write_trainer_state(
    directory: Path,
    *,
    step: int,
    sampler: np.random.Generator,
    curriculum: dict[str, Any] | None,
    before: Mapping[str, float],
) -> None:
    """Write ``trainer_state.pt`` (step, sampler, RNGs, curriculum) and ``trainer_state.json``.

    The RNG states are captured here, at the moment of writing.
    """
    import torch

    torch.save(
        {
            "step": step,
            "sampler": sampler.bit_generator.state,
            "rng": capture_rng_state(),
            "curriculum": curriculum,
        },
        directory / "trainer_state.pt",
    )
    state = {"step": step, "before": dict(before), "time": time.time()}
    (directory / "trainer_state.json").write_text(json.dumps(state, indent=2))


def read_trainer_state(directory: Path) -> TrainerState:
    """Read back what :func:`write_trainer_state` wrote (the RNGs are not restored here)."""
    state = load_checkpoint_file(directory / "trainer_state.pt", weights_only=False)
    info_file = directory / "trainer_state.json"
    try:
        info = json.loads(info_file.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint file {info_file} is not valid JSON: {exc}") from exc
    try:
        if not isinstance(state, dict):
            raise TypeError(f"it holds {type(state).__name__}, not a dict")
        step, sampler, rng = int(state["step"]), state["sampler"], state["rng"]
        curriculum = state.get("curriculum")
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"checkpoint file {directory / 'trainer_state.pt'} is not a trainer state: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    try:
        if not isinstance(info, dict) or not isinstance(info.get("before", {}), dict):
            raise TypeError("expected an object with an object 'before'")
        before = {str(k): float(v) for k, v in info.get("before", {}).items()}
    except (TypeError, ValueError) as exc:
        raise CheckpointError(
            f"checkpoint file {info_file}: field 'before' is damaged: {exc}"
        ) from exc
    return TrainerState(step=step, sampler=sampler, rng=rng, curriculum=curriculum, before=before)


def curriculum_state(source: Any) -> dict[str, Any] | None:
    """A training source's checkpointable state (its ``state_dict()``), or ``None`` without one."""
    state_dict = getattr(source, "state_dict", None)
    return state_dict() if callable(state_dict) else None


def write_run_checkpoint(
    run_dir: Path,
    step: int,
    players: Sequence[tuple[Any, Any]],
    *,
    sampler: np.random.Generator,
    curriculum: dict[str, Any] | None,
    before: Mapping[str, float],
    config: Any,
    mistake_book: Any,
    keep: int,
    pass_history: Sequence[Mapping[str, Any]] | None = None,
) -> Path:
    """Write one run checkpoint atomically (see :func:`write_checkpoint`) and return its path.

    It holds each player's files, the trainer state (:func:`write_trainer_state`), the config
    (``config.json``), the mistake book (``mistake_book.json``, when there is one) and the
    quality filter's pass histories (``pass_history.json``, when given; see
    :func:`read_pass_history`).

    Args:
        run_dir: The run directory.
        step: The step the checkpoint is written at.
        players: ``(player, state)`` pairs: each player (with ``save(directory, state)``) and
            its gathered full state.
        sampler: The problem sampler.
        curriculum: The training source's state, or ``None``.
        before: The evaluation before RL.
        config: The run's :class:`~agents.training.config.TrainConfig`.
        mistake_book: The run's mistake book, or ``None``.
        keep: How many checkpoints to keep.
        pass_history: Each rank's referee's pass history
            (:meth:`~codea1_env.scoring.referee.Judge.pass_history_state`), in rank order, or
            ``None`` to write none.
    """

    def write(directory: Path) -> None:
        for player, state in players:
            player.save(directory, state)
        write_trainer_state(
            directory, step=step, sampler=sampler, curriculum=curriculum, before=before
        )
        config.save(directory / "config.json")
        if mistake_book is not None:
            mistake_book.export_json(directory / "mistake_book.json")
        if pass_history is not None:
            data = {"version": PASS_HISTORY_VERSION, "ranks": [dict(s) for s in pass_history]}
            (directory / PASS_HISTORY_FILE).write_text(
                json.dumps(data, separators=(",", ":"), ensure_ascii=True), encoding="utf-8"
            )

    return write_checkpoint(run_dir, step, write, keep=keep)


PASS_HISTORY_FILE = "pass_history.json"
"""A checkpoint's pass histories: ``{"version": 1, "ranks": [state, ...]}``, one per rank."""

PASS_HISTORY_VERSION = 1


def read_pass_history(
    directory: Path, *, rank: int = 0, world_size: int = 1
) -> tuple[dict[str, Any], bool] | None:
    """This rank's pass history in checkpoint ``directory`` (``None``: the checkpoint has none).

    Each rank of a data-parallel run judges problems with its own referee, so each has its own
    history: saved by as many ranks as resume, rank ``r`` gets rank ``r``'s. Saved by another
    number of ranks, no rank's history is the one this rank would have had; every rank then gets
    all of them merged (:func:`~codea1_env.scoring.quality.merge_states`), what one process
    judging every problem would have seen. Every rank checks every rank's history, so a damaged
    file stops every rank alike.

    Returns:
        ``(state, merged)``: the state to load
        (:meth:`~codea1_env.scoring.referee.Judge.load_pass_history_state`) and whether it is the
        merge of several ranks'; ``None`` when the file is missing (a checkpoint written before
        pass histories were saved, or with a referee that has none).

    Raises:
        CheckpointError: the file is damaged; the message names the file and the field.
    """
    from codea1_env.scoring.quality import PassHistory, merge_states

    path = directory / PASS_HISTORY_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise CheckpointError(f"checkpoint file {path} is not valid JSON: {exc}") from exc
    try:
        if not isinstance(data, dict):
            raise ValueError(f"field '(top level)' must be an object, not {type(data).__name__}")
        version = data.get("version")
        if isinstance(version, bool) or version != PASS_HISTORY_VERSION:
            raise ValueError(f"field 'version' must be {PASS_HISTORY_VERSION}, not {version!r}")
        ranks = data.get("ranks")
        if not isinstance(ranks, list) or not ranks:
            raise ValueError("field 'ranks' must be a non-empty list of pass history states")
        for index, state in enumerate(ranks):
            try:
                PassHistory(max_size=2**62).load_state_dict(state)  # checked, not cut
            except ValueError as exc:
                raise ValueError(f"ranks[{index}]: {exc}") from exc
        if len(ranks) == world_size:
            return ranks[rank], False
        return merge_states(ranks), True
    except ValueError as exc:
        raise CheckpointError(f"checkpoint file {path} is damaged: {exc}") from exc


def read_run_checkpoint(
    directory: Path,
    run_dir: Path,
    players: Sequence[Any],
    *,
    sampler: np.random.Generator,
    source: Any,
    mistake_book: Any,
) -> TrainerState:
    """Restore what :func:`write_run_checkpoint` wrote, for a run that resumes from it.

    Each player loads its frozen reference (``run_dir/reference_{name}.pt``) and its files; the
    problem sampler, the RNG states and the source's curriculum (when it has
    ``load_state_dict``) come back; the mistake book (when given, and saved) is replaced by the
    saved one.

    Args:
        directory: The checkpoint directory (``run_dir/checkpoints/step_N``).
        run_dir: The run directory.
        players: The run's players (with ``load_reference(path)`` and ``load(directory)``).
        sampler: The problem sampler, restored in place.
        source: The training source.
        mistake_book: The mistake book to restore, or ``None`` to leave it (ranks other than 0
            share rank 0's SQLite book).

    Returns:
        The trainer state read (its ``step`` and ``before`` are the caller's to use).
    """
    for player in players:
        player.load_reference(run_dir / f"reference_{player.name}.pt")
        player.load(directory)
    state = read_trainer_state(directory)
    try:
        sampler.bit_generator.state = state.sampler
        restore_rng_state(state.rng)
        if state.curriculum is not None and hasattr(source, "load_state_dict"):
            source.load_state_dict(state.curriculum)
    except (KeyError, TypeError, ValueError, IndexError, RuntimeError, AttributeError) as exc:
        raise CheckpointError(
            f"checkpoint file {directory / 'trainer_state.pt'} holds a damaged sampler, RNG or "
            f"curriculum state: {type(exc).__name__}: {exc}"
        ) from exc
    book_file = directory / "mistake_book.json"
    if mistake_book is not None and book_file.is_file():
        mistake_book.import_json(book_file, replace=True)  # validated before anything changes
    return state


def load_player_weights(directory: Path, players: Sequence[Any]) -> int:
    """Load each player's ``{name}_model.pt`` from a checkpoint directory (``init_from``).

    Returns:
        The checkpoint's step (0 when it has no ``trainer_state.json``).

    Raises:
        FileNotFoundError: the checkpoint has no weights for one of the players.
    """
    for player in players:
        if not (directory / f"{player.name}_model.pt").is_file():
            raise FileNotFoundError(f"init_from: {directory} has no {player.name}_model.pt")
        player.load(directory)
    info = directory / "trainer_state.json"
    return int(json.loads(info.read_text()).get("step", 0)) if info.is_file() else 0
