"""Data-parallel training over several processes with ``torch.distributed``.

The trainer runs unchanged on one process; launched by ``torchrun`` (or ``accelerate launch
--multi_gpu``, which sets the same variables) it becomes data-parallel:

* **Rollouts are split across ranks.** Every rank draws the same global list of problems from the
  shared seeded sampler and takes its contiguous slice (``problems_per_step`` must divide by the
  world size). Each prompt is sampled from its own random stream keyed by its index in the global
  batch (:attr:`agents.lm.interfaces.SamplingParams.seed_offset`), so the split batch samples
  exactly what one process would have sampled.
* **Each rank judges its slice** with its own local sandbox. The mistake book is the shared SQLite
  file in the run directory (WAL mode, safe for several writers): each rank updates the entries of
  its own problems, and a barrier at the end of each step makes every rank see all updates before
  the next step reads the book. Rank 0 alone restores it on resume and exports it to checkpoints.
  The quality filter's pass history is not shared: each rank's referee records the tests of the
  problems it judged, and a problem's items go to whichever rank its place in the global batch
  gives, so rank 0's history is not the others'. A checkpoint gathers every rank's
  (``pass_history.json``, one per rank); on resume rank ``r`` gets rank ``r``'s back, or, when the
  world size changed, every rank gets all of them merged
  (:func:`agents.training.checkpoint.read_pass_history`).
* **Gradients are summed across ranks** (one all-reduce of a flat buffer per optimizer step;
  both models are replicated, ``distributed_strategy="ddp"``). Each micro-batch's loss is
  weighted by its token count over the token count of the *global* mini-batch (all-reduced), so
  the summed gradient is the gradient of the single-process token-mean loss; gradient clipping
  and the optimizer step then run on identical gradients, and the replicas stay identical.
* **With ``distributed_strategy="fsdp"``** (PyTorch FSDP2, :func:`shard_model`) each decoder
  layer and the root of a trained model hold only this rank's shard of their parameters; the
  optimizer state is sharded with them. FSDP reduce-scatters (averages) the gradients itself, so
  the trainer scales each micro-batch's global token-mean weight by the world size instead of
  all-reducing: the gradient is the same sum as under ``ddp``. Every forward and backward is then
  collective, so every rank runs the same number of micro-batches (a rank short of samples runs
  zero-weight passes, :meth:`Distributed.max`). Generation, whose length differs per rank, runs
  inside :func:`full_parameters` (every layer all-gathered once, no collective per token).
  Checkpoints hold full state dicts (:func:`full_model_state`, :func:`full_optimizer_state`),
  so ``ddp``, ``fsdp`` and single-process runs resume each other's checkpoints; the frozen KL
  reference stays replicated.
* **Rank 0 alone writes** checkpoints, metrics (JSONL, TensorBoard, wandb), progress lines and the
  summary; the other ranks log nothing. Metrics are computed from all ranks' judgements (gathered),
  so a row equals the single-process row of the same global batch.

Use :func:`from_environment` to join the process group that ``torchrun`` describes (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``); without those variables (or with
``WORLD_SIZE=1``) it returns :data:`SINGLE`, whose collectives are no-ops.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("distributed training needs PyTorch: pip install 'codea1[train]'") from exc

from codea1_env.atomic import write_text_atomic

__all__ = [
    "SINGLE",
    "Distributed",
    "NullMetricsLogger",
    "Strategy",
    "from_environment",
    "full_model_state",
    "full_optimizer_state",
    "full_parameters",
    "check_replicas",
    "is_sharded",
    "load_full_model_state",
    "load_full_optimizer_state",
    "parameter_digest",
    "replica_report",
    "shard_model",
    "shard_sizes",
]

T = TypeVar("T")

Strategy = Literal["ddp", "fsdp"]
"""How the models are spread over ranks: replicated (``ddp``) or sharded with FSDP2 (``fsdp``)."""

_ENV_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class Distributed:
    """This process's place in a data-parallel run, and the collectives the trainer uses.

    Attributes:
        rank: Global rank (0 is the main process).
        world_size: Number of processes.
        local_rank: Rank on this node (selects the GPU).
        backend: ``"gloo"``, ``"nccl"`` or ``None`` for a single process.
        owns_group: Whether :meth:`shutdown` should destroy the process group.

    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None
    owns_group: bool = False

    @property
    def enabled(self) -> bool:
        """True with more than one process."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """True on rank 0, the process that writes files and logs."""
        return self.rank == 0

    # ------------------------------------------------------------------------------------------
    def device(self, device: torch.device) -> torch.device:
        """The device of this rank: ``cuda:LOCAL_RANK`` for a CUDA device, else ``device``."""
        if self.enabled and device.type == "cuda":
            return torch.device("cuda", self.local_rank)
        return device

    def barrier(self) -> None:
        """Wait for every rank."""
        if self.enabled:
            torch.distributed.barrier()

    @contextlib.contextmanager
    def main_first(self) -> Iterator[None]:
        """Run the block on rank 0 first, then on the others (shared files created once)."""
        if not self.is_main:
            self.barrier()
        yield
        if self.is_main:
            self.barrier()

    def shard(self, items: Sequence[T]) -> list[T]:
        """This rank's contiguous slice of ``items``.

        Raises:
            ValueError: ``len(items)`` does not divide by the world size.

        """
        if len(items) % self.world_size:
            raise ValueError(
                f"{len(items)} items cannot be split evenly over {self.world_size} processes"
            )
        size = len(items) // self.world_size
        return list(items[self.rank * size : (self.rank + 1) * size])

    def offset(self, local_count: int) -> int:
        """Global index of this rank's first item when every rank holds ``local_count``."""
        return self.rank * local_count

    def gather(self, items: Sequence[T]) -> list[T]:
        """Every rank's ``items`` concatenated in rank order, on every rank (picklable items)."""
        if not self.enabled:
            return list(items)
        parts: list[Any] = [None] * self.world_size
        torch.distributed.all_gather_object(parts, list(items))
        return [item for part in parts for item in part]

    def broadcast(self, value: T) -> T:
        """Rank 0's ``value`` on every rank (a picklable object)."""
        if not self.enabled:
            return value
        box = [value]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]  # type: ignore[no-any-return]

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sum of ``values`` over ranks (float64), on every rank."""
        if not self.enabled:
            return [float(v) for v in values]
        tensor = torch.tensor([float(v) for v in values], dtype=torch.float64)
        tensor = tensor.to(self._collective_device())
        torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.SUM)
        return [float(v) for v in tensor.cpu().tolist()]

    def max(self, value: int) -> int:
        """The largest ``value`` over ranks, on every rank."""
        if not self.enabled:
            return int(value)
        tensor = torch.tensor([int(value)], dtype=torch.int64, device=self._collective_device())
        torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
        return int(tensor.item())

    def sum_gradients(self, parameters: Iterable[torch.nn.Parameter]) -> None:
        """Sum the gradients of ``parameters`` over ranks in place (one flat all-reduce).

        A parameter without a gradient on this rank (it had no sample) contributes zeros and
        receives the sum.
        """
        if not self.enabled:
            return
        params = list(parameters)
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        by_dtype: dict[tuple[torch.dtype, torch.device], list[torch.nn.Parameter]] = {}
        for p in params:
            by_dtype.setdefault((p.grad.dtype, p.grad.device), []).append(p)  # type: ignore[union-attr]
        for group in by_dtype.values():
            grads = [p.grad for p in group]
            flat = torch.cat([g.reshape(-1) for g in grads])  # type: ignore[union-attr]
            torch.distributed.all_reduce(flat, op=torch.distributed.ReduceOp.SUM)
            start = 0
            for g in grads:
                assert g is not None
                g.copy_(flat[start : start + g.numel()].view_as(g))
                start += g.numel()

    def shutdown(self) -> None:
        """Destroy the process group when :func:`from_environment` created it."""
        if self.owns_group and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()

    def _collective_device(self) -> torch.device:
        if self.backend == "nccl":
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")


SINGLE = Distributed()
"""A single process: every collective is a no-op."""


def from_environment(device: str = "auto") -> Distributed:
    """Join the process group described by ``torchrun``'s environment variables.

    Args:
        device: The run's device spec (``TrainConfig.device``): ``nccl`` is used when it resolves
            to CUDA, ``gloo`` otherwise.

    Returns:
        :data:`SINGLE` without ``WORLD_SIZE`` or with ``WORLD_SIZE=1``; else this rank's
        :class:`Distributed` (the process group is initialized here unless it already was).

    Raises:
        RuntimeError: ``WORLD_SIZE > 1`` but a variable torchrun sets is missing, or the backend
            is not available.

    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return SINGLE
    missing = [name for name in _ENV_VARS if name not in os.environ]
    if missing:
        raise RuntimeError(
            f"WORLD_SIZE={world_size} but {', '.join(missing)} not set: launch with "
            "`torchrun --nproc_per_node N -m agents.cli train ...`"
        )
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available() and (device == "auto" or device.startswith("cuda"))
    backend = "nccl" if cuda else "gloo"
    if not torch.distributed.is_available():
        raise RuntimeError("this PyTorch build has no torch.distributed")
    owns = False
    if not torch.distributed.is_initialized():
        if cuda:
            torch.cuda.set_device(local_rank)
        torch.distributed.init_process_group(backend=backend, rank=rank, world_size=world_size)
        owns = True
    else:
        backend = str(torch.distributed.get_backend())
    return Distributed(rank, world_size, local_rank, backend, owns)


def parameter_digest(model: Any) -> str:
    """SHA-256 of a model's trainable parameters (names, shapes and bytes), for replica checks."""
    digest = hashlib.sha256()
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        tensor = p.detach()
        full = getattr(tensor, "full_tensor", None)  # an FSDP2 DTensor shard
        if callable(full):
            tensor = full()
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def replica_report(dist: Distributed, models: dict[str, Any], step: int) -> dict[str, Any]:
    """Hash every rank's trainable parameters and compare them (a collective call).

    Args:
        dist: The data-parallel group.
        models: The players' models by player name.
        step: The step the parameters were trained to.

    Returns:
        ``{"world_size", "step", "digests": [{player: digest} per rank], "identical"}``.
    """
    digests = dist.gather([{name: parameter_digest(model) for name, model in models.items()}])
    return {
        "world_size": dist.world_size,
        "step": step,
        "digests": digests,
        "identical": all(d == digests[0] for d in digests),
    }


def check_replicas(
    dist: Distributed,
    models: dict[str, Any],
    step: int,
    run_dir: Path,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Compare the trained parameters of every data-parallel rank (a collective call).

    Each rank hashes its players' trainable parameters (SHA-256, :func:`replica_report`); rank 0
    writes the digests to ``run_dir/replicas.json``.

    Args:
        dist: The data-parallel group.
        models: The players' models by player name.
        step: The step the parameters were trained to.
        run_dir: The run directory.
        log: Where the confirmation line goes.

    Returns:
        ``{"world_size", "step", "digests": [{player: digest} per rank], "identical"}``.

    Raises:
        RuntimeError: the replicas differ (on every rank, after the file is written).

    """
    report = replica_report(dist, models, step)
    if dist.is_main:
        write_text_atomic(run_dir / "replicas.json", json.dumps(report, indent=2))
    if not report["identical"]:
        raise RuntimeError(f"data-parallel replicas diverged: {report['digests']}")
    log(f"replicas: {dist.world_size} ranks hold identical parameters")
    return report


def shard_model(model: Any) -> Any:
    """Shard ``model`` in place with FSDP2 over the default process group.

    Every decoder layer (a module whose class name ends in ``DecoderLayer``, as in every
    ``transformers`` causal LM) becomes its own FSDP unit, then the root (embeddings, final norm,
    head) is sharded; the parameters become ``DTensor`` shards. Build the optimizer afterwards.

    Returns:
        The same module (its class is now an FSDP subclass).

    Raises:
        ValueError: the model has no decoder layers to shard.

    """
    from torch.distributed.fsdp import fully_shard

    layers = [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]
    if not layers:
        raise ValueError(f"fsdp: {type(model).__name__} has no *DecoderLayer modules to shard")
    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def shard_sizes(model: Any) -> tuple[int, int]:
    """``(elements this rank holds, elements of the full model)`` of the trainable parameters."""
    local = total = 0
    for p in model.parameters():
        if p.requires_grad:
            to_local = getattr(p, "to_local", None)  # a DTensor shard
            local += (to_local() if callable(to_local) else p).numel()
            total += p.numel()
    return local, total


def is_sharded(model: Any) -> bool:
    """True when :func:`shard_model` sharded ``model``."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


@contextlib.contextmanager
def full_parameters(model: Any) -> Iterator[None]:
    """Hold every parameter of a sharded ``model`` unsharded for the block (no-op otherwise).

    On entry every FSDP unit is all-gathered once (collective: every rank enters) and told not
    to reshard after forward, so forwards inside the block run no collective; generation may
    then take a different number of forwards on each rank, or run on rank 0 alone. On exit the
    shards are restored and resharding after forward is switched back on (except for the root,
    which FSDP2 keeps unsharded between forward and backward by default).
    """
    if not is_sharded(model):
        yield
        return
    from torch.distributed.fsdp import FSDPModule

    units = [m for m in model.modules() if isinstance(m, FSDPModule)]
    for unit in units:
        unit.set_reshard_after_forward(False, recurse=False)
    for unit in units:
        unit.unshard()
    try:
        yield
    finally:
        for unit in units:
            unit.reshard()
            if unit is not model:
                unit.set_reshard_after_forward(True, recurse=False)


def _state_options(*, rank0_only: bool) -> Any:
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, cpu_offload=rank0_only, strict=False)


def full_model_state(model: Any, *, rank0_only: bool = False) -> dict[str, torch.Tensor]:
    """The full trainable parameters of a sharded ``model`` on CPU (collective).

    Keys are the parameter names of the unsharded model, so the dict loads into a
    single-process model as is. With ``rank0_only`` the other ranks get an empty dict.
    """
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    names = set(_trainable_names(model))
    state: dict[str, Any] = get_model_state_dict(
        model, options=_state_options(rank0_only=rank0_only)
    )
    return {k: v.detach().cpu().clone() for k, v in state.items() if k in names}


def load_full_model_state(model: Any, state: dict[str, torch.Tensor]) -> None:
    """Load full tensors (every rank passes the same ``state``) into a sharded ``model``."""
    from torch.distributed.checkpoint.state_dict import set_model_state_dict

    full: Any = state
    set_model_state_dict(model, full, options=_state_options(rank0_only=False))


def full_optimizer_state(model: Any, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The full optimizer state of a sharded ``model`` in ``optimizer.state_dict()`` layout.

    Collective: every rank calls it; rank 0 gets the state (keyed by parameter index, as a
    single-process optimizer saves it), the other ranks an empty dict.
    """
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    state: Any = get_optimizer_state_dict(model, optimizer, options=_state_options(rank0_only=True))
    if not state:
        return {}
    index = {name: i for i, name in enumerate(_trainable_names(model))}
    return {
        "state": {index[name]: value for name, value in state["state"].items()},
        "param_groups": [
            {**group, "params": [index[name] for name in group["params"]]}
            for group in state["param_groups"]
        ],
    }


def load_full_optimizer_state(
    model: Any, optimizer: torch.optim.Optimizer, state: dict[str, Any]
) -> None:
    """Load a ``optimizer.state_dict()``-layout state (every rank passes it) into a sharded run.

    Raises:
        ValueError: the state names a parameter index the model does not have.

    """
    names = _trainable_names(model)
    if not state.get("state"):  # no step taken yet: only hyper-parameters, nothing to shard
        optimizer.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

    def name(i: int) -> str:
        if not 0 <= int(i) < len(names):
            raise ValueError(f"optimizer state names parameter {i}; the model has {len(names)}")
        return names[int(i)]

    by_name: Any = {
        "state": {name(i): value for i, value in state["state"].items()},
        "param_groups": [
            {**group, "params": [name(i) for i in group["params"]]}
            for group in state["param_groups"]
        ],
    }
    set_optimizer_state_dict(model, optimizer, by_name, options=_state_options(rank0_only=False))


def _trainable_names(model: Any) -> list[str]:
    """Trainable parameter names in optimizer order (the order :func:`Player` builds it in)."""
    return [n for n, p in model.named_parameters() if p.requires_grad]


class NullMetricsLogger:
    """The metrics sink of ranks other than 0: returns the row, writes nothing."""

    def log(self, step: int, scalars: dict[str, Any]) -> dict[str, Any]:
        """Return ``{"step": step, **numeric scalars}`` as :class:`MetricsLogger` would."""
        row: dict[str, Any] = {"step": int(step)}
        for key, value in scalars.items():
            if isinstance(value, (int, float)) and value == value and abs(value) != float("inf"):
                row[key] = float(value)
        return row

    def close(self) -> None:
        """Nothing to close."""
