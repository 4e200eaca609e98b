"""The trainer's configuration: one dataclass, every field documented, presets, JSON and CLI flags.

:class:`TrainConfig` follows CleanRL's ``Args`` and TRL's ``GRPOConfig``: a docstring under every
field. The defaults are the Code-A1 authors' GPU hyperparameters (GRPO, asymmetric PPO-clip
0.20/0.28 with token-mean, low-variance KL 0.001, lr 1e-6 cosine with 10 warm-up steps, weight
decay 0.1, grad clip 1.0, 8 codes per question and 8 test suites per code, rollouts at T=1.0).
:func:`from_preset` gives the CPU preset ``"tiny"`` that a new user runs first, the test preset
``"nano"``, and the GPU presets ``"1.5b"``, ``"3b"`` and ``"7b"`` (Qwen2.5-Coder-*-Instruct).

Model specs (``coder_model``, ``tester_model``) are either a local directory or hub name that
``transformers`` can load, or ``"builtin:<size>"`` for a small Qwen2-architecture model built from
config with the package's own tokenizer (``size`` is ``nano``, ``tiny`` or ``small``; no download).

The env's options are nested, not mirrored: ``stability`` is a
:class:`codea1_env.stability.StabilityOptions` and ``limits`` a :class:`codea1_env.sandbox.Limits`,
each field documented where it is defined. Their fields keep flat names wherever a user types
them: the flags (``--quality-filter``, ``--call-timeout-s``, ``--curriculum-start``), preset
overrides (``from_preset("tiny", quality_filter=True)``) and the flat keys of a ``config.json``
written before the nesting; :func:`nest_flat_keys` is the one mapping from those names to the
nested layout (:func:`nested_fields` lists them). ``config.json`` itself is nested::

    {"limits": {"call_timeout_s": 2.0, ...}, "lr": 1e-06, ...,
     "stability": {"curriculum": false, "curriculum_schedule": {"start": 0.3, ...}, ...}}

One module (over 600 lines) on purpose: most of it is :class:`TrainConfig` itself, whose every
field carries its docstring; what follows it (presets, JSON, CLI flags) only reads those fields
and their docstrings, so it stays next to them.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import json
import os
import tempfile
import textwrap
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

from agents.training.presets import PRESETS
from codea1_env.sandbox.base import Limits
from codea1_env.stability import StabilityOptions

__all__ = [
    "INERT_FIELDS",
    "MODES",
    "GenerationBackend",
    "Mode",
    "NestedField",
    "PRESETS",
    "TrainConfig",
    "add_config_arguments",
    "config_from_args",
    "field_docs",
    "from_preset",
    "literal_choices",
    "merge_config_dicts",
    "nest_flat_keys",
    "nested_fields",
]

Mode = Literal["code-a1", "golden", "self-play"]
"""Training modes: Code-A1 (two models), Golden Tests baseline, Self-Play baseline."""

MODES: tuple[str, ...] = typing.get_args(Mode)
"""The values of :data:`Mode`, in order."""

GenerationBackend = Literal["auto", "transformers", "vllm"]
"""Rollout engines: ``auto`` picks vLLM when it can."""


@dataclass
class TrainConfig:
    """Everything a training run needs. Saved as ``config.json`` in the run directory."""

    # --- run ---------------------------------------------------------------------------------
    exp_name: str = "codea1"
    """Experiment name, the first part of the run directory name."""
    mode: Mode = "code-a1"
    """``code-a1`` (two models trained against each other), ``golden`` (coder rewarded by the GT
    tests only, no tester) or ``self-play`` (one model and one optimizer play both roles)."""
    seed: int = 0
    """Seed for Python, NumPy and torch, the problem sampler and the rollouts."""
    steps: int = 200
    """Number of RL steps (each: sample problems, roll out both players, judge, update)."""
    output_dir: str | None = None
    """Run directory. A run whose directory already holds a checkpoint resumes from it. When
    unset: ``{runs_root}/{exp_name}__{mode}__{seed}__{unix time}`` (a fresh run every time)."""
    runs_root: str = "runs"
    """Parent of generated run directories (used only when ``output_dir`` is unset)."""
    device: str = "auto"
    """``auto`` (CUDA when available, else CPU), ``cpu`` or ``cuda[:N]``."""
    num_threads: int | None = None
    """torch CPU threads (``None``: torch's default)."""
    distributed_strategy: Literal["ddp", "fsdp"] = "ddp"
    """Under ``torchrun`` with several processes: ``ddp`` replicates both models on every rank
    and sums gradients (CPU/gloo or GPU/NCCL); ``fsdp`` shards each player's parameters and
    optimizer state over the ranks with FSDP2 (decoder layers and root; full parameters are
    gathered for generation; tested on CPU/gloo; not with LoRA or vLLM rollouts). Ignored by a
    single process. See ``docs/scale_out.md``."""

    # --- models --------------------------------------------------------------------------------
    coder_model: str = "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    """Code LLM: a local model directory, a hub name, or ``builtin:nano|tiny|small``."""
    tester_model: str = "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    """Test LLM (ignored in ``golden`` and ``self-play`` modes): same forms as ``coder_model``."""
    bf16: bool = True
    """Run forward passes under bfloat16 autocast (weights stay float32)."""
    gradient_checkpointing: bool = True
    """Recompute activations in the backward pass to save memory."""
    use_lora: bool = False
    """Train LoRA adapters through ``peft`` instead of all weights."""
    lora_r: int = 16
    """LoRA rank."""
    lora_alpha: int = 32
    """LoRA scaling numerator."""
    lora_dropout: float = 0.05
    """LoRA dropout."""
    lora_target_modules: tuple[str, ...] = (
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    )
    """Module names that receive LoRA adapters."""
    prompt_style: Literal["chat", "compact"] = "chat"
    """``chat``: the paper-style instructions (wrapped in the chat template when the tokenizer has
    one); ``compact``: the short prompts of the tiny CPU models
    (``agents.players.prompts.*_COMPACT``)."""
    generation_backend: GenerationBackend = "auto"
    """``auto`` (vLLM when installed and a GPU is present, else transformers), ``transformers``
    or ``vllm``."""

    # --- problems ------------------------------------------------------------------------------
    problems: str = "bank"
    """Training problems, a ``codea1_env.problems.load_source`` spec (``bank``, ``humaneval``,
    ``procedural:SEED``, ``kodcode:PATH``, ``jsonl:PATH`` ...), or
    ``procedural:SEED:train:FAMILY+FAMILY`` for some procedural families only. The paper trains
    on KodCode."""
    eval_problems: str = "humaneval"
    """Held-out problems for the before/after evaluation (a source spec, as ``problems``)."""
    eval_size: int = 64
    """Number of held-out problems evaluated (the first ``eval_size`` ids, fixed)."""
    problems_per_step: int = 8
    """Problems sampled per RL step."""

    # --- rollouts ------------------------------------------------------------------------------
    n_codes: int = 8
    """Codes sampled per problem (the coder's GRPO group; the paper uses 8)."""
    n_suites: int = 8
    """Test suites sampled per code (the tester's GRPO group, see ``tester_group``; the paper
    uses 8)."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts (the paper uses 1.0)."""
    top_p: float = 1.0
    """Nucleus sampling of the rollouts."""
    max_code_tokens: int = 1024
    """Token budget of one code."""
    max_test_tokens: int = 1024
    """Token budget of one test suite."""
    eval_temperature: float = 0.7
    """Sampling temperature of the evaluation (0 means greedy)."""
    eval_tester_temperature: float | None = None
    """Evaluation temperature of the tester (``None``: ``eval_temperature``). Greedy decoding
    makes small testers repeat one assert line, and duplicates count as invalid tests."""
    eval_top_p: float = 0.95
    """Nucleus sampling of the evaluation."""
    eval_samples: int = 1
    """Samples per held-out problem in the evaluation (the paper reports avg@32)."""

    # --- rewards -------------------------------------------------------------------------------
    alpha: float = 0.5
    """Tester reward weight: ``R = alpha * R_val + (1 - alpha) * R_adv``."""
    k: int = 8
    """K, the divisor of R_val and of the tester's fail rate (over the first K kept tests; the
    paper: 8). The coder's pass rate uses every kept test, and the mistake book replays its top 8
    entries whatever K is."""
    coverage_bonus: float = 0.0
    """Optional tester bonus weight (codea1's, off in the paper): ``+ w * LCov@K`` of the GT by
    the suite's first K kept tests, traced in the sandbox (docs/metrics.md: when it helps, cost)."""
    mutation_bonus: float = 0.0
    """Optional tester bonus weight (codea1's, off in the paper): ``+ w *`` the share of the GT's
    mutants (8 at most, cached per problem) killed by the suite's first K kept tests."""
    tester_group: Literal["update_n", "all"] = "update_n"
    """``update_n`` (the paper): per problem, only the code whose suite rewards vary most gives
    the tester's group (its ``n_suites`` suites); ``all``: every code's suites form a group."""
    mistake_book: bool = True
    """Keep a mistake book (``run_dir/mistake_book.sqlite``) and replay it against candidates."""

    # --- optimisation --------------------------------------------------------------------------
    lr: float = 1e-6
    """AdamW learning rate of both players (the paper uses 1e-6)."""
    tester_lr: float | None = None
    """Tester learning rate (``None``: same as ``lr``)."""
    lr_schedule: Literal["cosine", "constant", "linear"] = "cosine"
    """Schedule after warm-up (cosine to zero over ``steps``, or constant, or linear decay; the
    paper uses cosine)."""
    warmup_steps: int = 10
    """Linear warm-up steps (the paper uses 10)."""
    weight_decay: float = 0.1
    """AdamW weight decay (the paper uses 0.1)."""
    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm (0 disables; the paper uses 1.0)."""
    clip_low: float = 0.20
    """PPO-clip lower epsilon: ratio clipped at ``1 - clip_low`` (the paper uses 0.20)."""
    clip_high: float = 0.28
    """PPO-clip upper epsilon: ratio clipped at ``1 + clip_high`` (asymmetric, "clip-higher";
    the paper uses 0.28)."""
    loss_aggregation: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = (
        "token-mean"
    )
    """How per-token losses are averaged (the paper: token-mean)."""
    kl_coef: float = 0.001
    """Coefficient of the low-variance (k3) KL to the frozen reference policy (0 disables it
    and the reference model; the paper uses 0.001)."""
    normalize_advantages: bool = True
    """Divide group-centred rewards by the group standard deviation (GRPO)."""
    ppo_epochs: int = 1
    """Passes over each rollout batch."""
    mini_batches: int = 1
    """Optimizer steps per pass over the rollout batch."""
    micro_batch_size: int = 8
    """Sequences per forward/backward; gradients accumulate up to a mini-batch."""

    # --- supervised warm start -----------------------------------------------------------------
    sft_steps: int = 0
    """Supervised steps on GT solutions of the training problems before RL (0: none)."""
    sft_tester_steps: int | None = None
    """Supervised steps of the tester on GT-valid assert lines (``None``: same as ``sft_steps``)."""
    sft_batch_size: int = 16
    """Sequences per supervised step."""
    sft_lr: float = 1e-3
    """Supervised learning rate (constant after a short warm-up)."""
    sft_suite_size: tuple[int, int] | None = None
    """Tests in one warm-start suite of the tester, drawn uniformly from this inclusive range
    per example (that many of the problem's GT asserts, a random subset in their order);
    ``None``: the first ``k``. A range teaches the format over suites of several lengths, so
    that RL can learn from the reward how many distinct tests pay (up to K)."""
    sft_coder_mutant_share: float = 0.0
    """Share of the coder's warm-start targets that are an AST mutant of the GT program instead
    of the GT (a flipped comparison, a constant moved by one, ...): the warm-started coder then
    makes real boundary bugs that a tester can find and RL can remove."""

    # --- logging and checkpoints ---------------------------------------------------------------
    checkpoint_every: int = 10
    """Write a checkpoint every this many RL steps (and always at the end)."""
    keep_checkpoints: int = 2
    """Checkpoints kept on disk (older ones are deleted)."""
    eval_before_after: bool = True
    """Evaluate on the held-out problems before and after RL and print the summary table."""
    tensorboard: bool = True
    """Write TensorBoard scalars to ``run_dir/tb``."""
    wandb: bool = False
    """Also log to Weights & Biases (needs ``wandb`` and a login)."""
    wandb_project: str = "codea1"
    """Weights & Biases project."""
    progress_bar: bool = True
    """Show a tqdm progress bar with live rewards."""

    # --- sandbox (codea1_env.sandbox) ----------------------------------------------------------
    sandbox_workers: int | None = None
    """Worker processes of the local sandbox (``None``: the sandbox's default)."""
    sandbox: str = "local"
    """Sandbox backend: ``local`` (fork server per core), ``docker`` or ``ray`` (see
    ``docs/scale_out.md``)."""
    limits: Limits = field(default_factory=Limits)
    """Resource limits of every sandboxed job, a :class:`codea1_env.sandbox.Limits` (its
    defaults; in ``config.json`` the object ``"limits"``). Each of its fields is a flag of the
    same name (``--call-timeout-s``, ``--setup-timeout-s``, ``--memory-mb``, ...), documented in
    ``codea1_env/sandbox/base.py``."""

    # --- stability (codea1_env.stability's options, then the trainer's; all off by default) ---
    stability: StabilityOptions = field(default_factory=StabilityOptions)
    """The env-side stability options, a :class:`codea1_env.stability.StabilityOptions` (its
    defaults, all off; in ``config.json`` the object ``"stability"``). Each of its fields is a
    flag of the same name (``--quality-filter``, ``--book-capacity-total``, ...) and the
    curriculum schedule's are ``--curriculum-start``, ``--curriculum-step``,
    ``--curriculum-promote-at`` and ``--curriculum-window``; documented in
    ``codea1_env/stability.py``."""
    coder_temperature: float | None = None
    """Rollout temperature of the coder (``None``: ``temperature``)."""
    coder_top_p: float | None = None
    """Rollout nucleus sampling of the coder (``None``: ``top_p``)."""
    tester_temperature: float | None = None
    """Rollout temperature of the tester (``None``: ``temperature``)."""
    tester_top_p: float | None = None
    """Rollout nucleus sampling of the tester (``None``: ``top_p``)."""
    skip_collapsed_groups: bool = False
    """Skip GRPO groups whose generations are all identical texts or whose rewards have zero
    variance (they give no learning signal, only KL drift). Collapsed groups are counted in the
    metrics (``*/collapsed_groups``) either way; off by default, as in the paper's setting."""

    def rollout_temperature(self, role: str) -> float:
        """The rollout temperature of ``role`` (``"coder"`` or ``"tester"``)."""
        value = self.coder_temperature if role == "coder" else self.tester_temperature
        return self.temperature if value is None else value

    def rollout_top_p(self, role: str) -> float:
        """The rollout nucleus-sampling threshold of ``role``."""
        value = self.coder_top_p if role == "coder" else self.tester_top_p
        return self.top_p if value is None else value

    def reward_config(self) -> Any:
        """The referee's reward settings as :class:`codea1_env.scoring.rewards.RewardConfig`."""
        from codea1_env.scoring.rewards import RewardConfig

        return RewardConfig(
            alpha=self.alpha,
            k=self.k,
            mode=self.mode,
            coverage_bonus=self.coverage_bonus,
            mutation_bonus=self.mutation_bonus,
        )

    def __post_init__(self) -> None:
        """Build the nested sections given as dicts, coerce JSON lists back to tuples, validate.

        Raises:
            ValueError: an unknown field of a section, or a bad value (named).

        """
        self.limits = _build_section(Limits, self.limits, "limits")
        self.stability = _build_section(StabilityOptions, self.stability, "stability")
        self.lora_target_modules = tuple(self.lora_target_modules)
        self.adam_betas = (float(self.adam_betas[0]), float(self.adam_betas[1]))
        if self.sft_suite_size is not None:
            self.sft_suite_size = tuple(self.sft_suite_size)  # type: ignore[assignment]
        self.validate()

    # ------------------------------------------------------------------------------------------
    def validate(self) -> None:
        """Check every field's range; a ``Literal`` field's values come from its annotation.

        The nested sections' fields are checked against their annotations too (a type, or a
        ``Literal``'s values), and the limits' ranges are the sandbox's (positive, at least 1).
        ``StabilityOptions`` and its ``CurriculumSchedule`` check their own ranges when built.

        Raises:
            ValueError: naming the first bad field (``TrainConfig.limits.memory_mb``) and its
                allowed values.

        """
        for leaf in nested_fields().values():
            _check_type(leaf, self.value(leaf.path))
        checks: list[tuple[str, bool, str]] = [
            (name, getattr(self, name) in choices, f"one of {choices}")
            for name, choices in literal_choices().items()
        ]
        checks += [
            ("steps", self.steps >= 0, ">= 0"),
            ("problems_per_step", self.problems_per_step >= 1, ">= 1"),
            ("n_codes", self.n_codes >= 1, ">= 1"),
            ("n_suites", self.n_suites >= 1, ">= 1"),
            ("temperature", self.temperature > 0, "> 0"),
            ("top_p", 0 < self.top_p <= 1, "in (0, 1]"),
            ("eval_temperature", self.eval_temperature >= 0, ">= 0"),
            ("eval_top_p", 0 < self.eval_top_p <= 1, "in (0, 1]"),
            (
                "eval_tester_temperature",
                self.eval_tester_temperature is None or self.eval_tester_temperature >= 0,
                ">= 0 or null",
            ),
            ("eval_samples", self.eval_samples >= 1, ">= 1"),
            ("eval_size", self.eval_size >= 1, ">= 1"),
            ("max_code_tokens", self.max_code_tokens >= 1, ">= 1"),
            ("max_test_tokens", self.max_test_tokens >= 1, ">= 1"),
            ("alpha", 0 <= self.alpha <= 1, "in [0, 1]"),
            ("k", self.k >= 1, ">= 1"),
            ("lr", self.lr > 0, "> 0"),
            ("tester_lr", self.tester_lr is None or self.tester_lr > 0, "> 0 or null"),
            ("warmup_steps", self.warmup_steps >= 0, ">= 0"),
            ("weight_decay", self.weight_decay >= 0, ">= 0"),
            ("max_grad_norm", self.max_grad_norm >= 0, ">= 0"),
            ("clip_low", 0 <= self.clip_low < 1, "in [0, 1)"),
            ("clip_high", self.clip_high >= 0, ">= 0"),
            ("kl_coef", self.kl_coef >= 0, ">= 0"),
            ("ppo_epochs", self.ppo_epochs >= 1, ">= 1"),
            ("mini_batches", self.mini_batches >= 1, ">= 1"),
            ("micro_batch_size", self.micro_batch_size >= 1, ">= 1"),
            ("sft_steps", self.sft_steps >= 0, ">= 0"),
            (
                "sft_tester_steps",
                self.sft_tester_steps is None or self.sft_tester_steps >= 0,
                ">= 0 or null",
            ),
            ("sft_batch_size", self.sft_batch_size >= 1, ">= 1"),
            ("sft_lr", self.sft_lr > 0, "> 0"),
            (
                "sft_suite_size",
                self.sft_suite_size is None
                or (
                    len(self.sft_suite_size) == 2
                    and 1 <= self.sft_suite_size[0] <= self.sft_suite_size[1]
                ),
                "null or [low, high] with 1 <= low <= high",
            ),
            (
                "sft_coder_mutant_share",
                0.0 <= self.sft_coder_mutant_share <= 1.0,
                "in [0, 1]",
            ),
            ("checkpoint_every", self.checkpoint_every >= 1, ">= 1"),
            ("keep_checkpoints", self.keep_checkpoints >= 1, ">= 1"),
            ("lora_r", self.lora_r >= 1, ">= 1"),
        ]
        limits = self.limits
        checks += [
            (f"limits.{name}", getattr(limits, name) > 0, "> 0")
            for name in ("call_timeout_s", "setup_timeout_s", "cpu_time_s", "memory_mb")
        ]
        checks += [
            (f"limits.{name}", getattr(limits, name) >= 1, ">= 1")
            for name in ("max_processes", "max_file_size_mb", "max_open_files", "max_value_bytes")
        ]
        checks.append(("limits.max_output_bytes", limits.max_output_bytes >= 0, ">= 0"))
        flags = {leaf.dotted: f" (flag {leaf.flag})" for leaf in nested_fields().values()}
        for name, ok, allowed in checks:
            if not ok:
                raise ValueError(
                    f"TrainConfig.{name} = {self.value(name)!r} is invalid: expected {allowed}"
                    + flags.get(name, "")
                )
        if self.mode == "code-a1" and self.n_suites < 2 and self.tester_group == "update_n":
            raise ValueError("TrainConfig.n_suites must be >= 2 for the tester's GRPO group")

    # ------------------------------------------------------------------------------------------
    @property
    def has_tester(self) -> bool:
        """True when a test suite is sampled (``code-a1`` and ``self-play``)."""
        return self.mode != "golden"

    @property
    def separate_tester(self) -> bool:
        """True when the tester is a second model with its own optimizer (``code-a1``)."""
        return self.mode == "code-a1"

    @property
    def tester_sft_steps(self) -> int:
        """Resolved ``sft_tester_steps``."""
        return self.sft_steps if self.sft_tester_steps is None else self.sft_tester_steps

    def value(self, name: str | tuple[str, ...]) -> Any:
        """A field's value by name, nested fields included.

        ``name`` is a top-level field, a dotted path (``"limits.memory_mb"``), a path tuple, or
        the flat name of a nested field (``"curriculum_start"``).

        Raises:
            AttributeError: no such field.

        """
        leaf = nested_fields().get(name) if isinstance(name, str) else None
        path = leaf.path if leaf else tuple(name.split(".")) if isinstance(name, str) else name
        value: Any = self
        for part in path:
            value = getattr(value, part)
        return value

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of every field; the sections are nested dicts."""
        out = dataclasses.asdict(self)
        out["lora_target_modules"] = list(self.lora_target_modules)
        out["adam_betas"] = list(self.adam_betas)
        if self.sft_suite_size is not None:
            out["sft_suite_size"] = list(self.sft_suite_size)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build from a dict such as :meth:`to_dict` returns, or a flat one.

        Flat keys of nested fields (``quality_filter``, ``call_timeout_s``, ``curriculum_start``:
        a ``config.json`` written before the nesting, preset overrides, flags) go into their
        sections through :func:`nest_flat_keys`; a section's missing fields keep its defaults.

        Raises:
            ValueError: an unknown field (named, ``limits.x`` inside a section) or a bad value.

        """
        values = nest_flat_keys(data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s): {', '.join(unknown)}")
        return cls(**values)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the config as JSON, atomically (temp file + fsync + rename)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".config.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrainConfig:
        """Read a config written by :meth:`save`.

        Raises:
            ValueError: the file is not valid JSON or has an unknown or bad field (the message
                names the file).

        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object")
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from exc

    def diff(self, other: TrainConfig) -> dict[str, tuple[Any, Any]]:
        """Fields whose values differ: ``name -> (self's, other's)``.

        A nested field is named by its dotted path (``"stability.quality_filter"``).
        """
        mine, theirs = _dotted(self.to_dict()), _dotted(other.to_dict())
        return {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]}


INERT_FIELDS: dict[str, str] = {
    "exp_name": "names the generated run directory; nothing the run computes",
    "runs_root": "where generated run directories go; nothing the run computes",
    "wandb_project": "the Weights & Biases project the metrics go to (with wandb on)",
    "progress_bar": "display only: a tqdm bar instead of one log line per step",
}
"""Fields that change nothing a run computes (rollouts, rewards, updates, checkpoint contents),
each with what it does instead. Every other field changes what a run does;
``tests/test_config_fields.py`` fails on a field that is neither read by the trainer, its
evaluation or the env, nor listed here."""


def from_preset(name: str, **overrides: Any) -> TrainConfig:
    """Return the preset's config, with ``overrides`` applied.

    Raises:
        ValueError: unknown preset (the message lists the known ones) or bad override.

    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return TrainConfig.from_dict(merge_config_dicts(PRESETS[name], overrides))


# ------------------------------------------------------------------------------------------------
# the nested sections and the flat names of their fields

_Section = TypeVar("_Section")

_FLAT_PREFIXES: dict[tuple[str, ...], str] = {("stability", "curriculum_schedule"): "curriculum_"}
"""Flat-name prefix of the fields of a dataclass nested inside a section (``curriculum_start``);
a section's own fields keep their names, any other nested dataclass gets ``{its name}_``."""


class NestedField(NamedTuple):
    """One field of a nested section, under the flat name that its flag and old configs use."""

    flat: str
    """The flat name: the flag (``--curriculum-start``), the key of a pre-nesting config."""
    path: tuple[str, ...]
    """Where it lives: ``("stability", "curriculum_schedule", "start")``."""
    owner: type
    """The dataclass that defines it (``CurriculumSchedule``)."""
    hint: Any
    """Its annotation, resolved (``float``, ``int | None``)."""
    doc: str
    """The docstring written under it in ``owner``."""

    @property
    def dotted(self) -> str:
        """The path as written in messages and :meth:`TrainConfig.diff`: ``stability.hard_only``."""
        return ".".join(self.path)

    @property
    def flag(self) -> str:
        """Its ``codea1 train`` flag: ``--curriculum-start``."""
        return "--" + self.flat.replace("_", "-")


@functools.cache
def _sections() -> dict[str, type]:
    """The :class:`TrainConfig` fields that are dataclasses: ``{"limits": Limits, ...}``."""
    hints = typing.get_type_hints(TrainConfig)
    return {
        f.name: hints[f.name]
        for f in dataclasses.fields(TrainConfig)
        if isinstance(hints[f.name], type) and dataclasses.is_dataclass(hints[f.name])
    }


@functools.cache
def nested_fields() -> dict[str, NestedField]:
    """Every field of :class:`TrainConfig`'s sections, by flat name, in field order.

    Raises:
        RuntimeError: two fields would share a flat name (or one a top-level field's name).

    """
    found: dict[str, NestedField] = {}

    def walk(cls: type, path: tuple[str, ...], prefix: str) -> None:
        hints, docs = typing.get_type_hints(cls), field_docs(cls)
        for f in dataclasses.fields(cls):
            hint, where = hints[f.name], (*path, f.name)
            if isinstance(hint, type) and dataclasses.is_dataclass(hint):
                walk(hint, where, _FLAT_PREFIXES.get(where, f"{prefix}{f.name}_"))
                continue
            flat = prefix + f.name
            if flat in found:
                raise RuntimeError(f"{'.'.join(where)} and {found[flat].dotted} share {flat!r}")
            found[flat] = NestedField(flat, where, cls, hint, docs.get(f.name, ""))

    for name, cls in _sections().items():
        walk(cls, (name,), "")
    clash = sorted(set(found) & {f.name for f in dataclasses.fields(TrainConfig)})
    if clash:
        raise RuntimeError(f"nested fields named like top-level fields: {clash}")
    return found


def _plain(value: Any) -> Any:
    """A section's value as nested plain dicts (a dataclass or a mapping; anything else as is)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def nest_flat_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every flat key of a nested field moved into its section, as a new dict.

    The one mapping from the flat names (the flags, preset overrides, the top-level keys of a
    ``config.json`` written before the nesting) to the nested layout. Sections given as
    objects become dicts of their fields; a flat key wins over the same field given in a
    section of the same ``data``. Other keys are copied as they are (unknown ones included:
    :meth:`TrainConfig.from_dict` names them).

    Raises:
        ValueError: a flat key whose section is given as something other than an object.

    """
    flat = nested_fields()
    sections = _sections()
    out = {k: _plain(v) if k in sections else v for k, v in data.items() if k not in flat}
    for key, value in data.items():
        if key not in flat:
            continue
        *parents, leaf = flat[key].path
        node = out
        for depth, part in enumerate(parents, 1):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parents[:depth])
                raise ValueError(
                    f"TrainConfig.{where} = {child!r} is invalid: expected an object of its fields"
                )
            node = child
        node[leaf] = value
    return out


def merge_config_dicts(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Merge config values given in layers, a later layer winning field by field.

    Each layer may use flat or nested keys (it goes through :func:`nest_flat_keys`); sections
    merge field by field too, so ``quality_filter=True`` over a preset keeps its other options.
    """

    def update(into: dict[str, Any], layer: Mapping[str, Any]) -> None:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                update(into[key], value)
            else:
                into[key] = value

    merged: dict[str, Any] = {}
    for layer in layers:
        update(merged, nest_flat_keys(layer))
    return merged


def _build_section(cls: type[_Section], value: Any, path: str) -> _Section:
    """``value`` as a ``cls``: an instance as is, a dict of its fields (nested ones as dicts).

    Raises:
        ValueError: not an object, an unknown field, a value of the wrong type or out of range
            (the message names ``TrainConfig.<path>.<field>``).

    """
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(
            f"TrainConfig.{path} = {value!r} is invalid: expected an object of "
            f"{cls.__name__}'s fields"
        )
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})  # type: ignore[arg-type]
    if unknown:
        names = ", ".join(f"{path}.{n}" for n in unknown)
        raise ValueError(f"unknown TrainConfig field(s): {names}")
    leaves = {leaf.path: leaf for leaf in nested_fields().values()}
    values: dict[str, Any] = {}
    for name, item in value.items():
        hint = hints[name]
        where = f"{path}.{name}"
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            values[name] = _build_section(hint, item, where)
        else:
            _check_type(leaves[tuple(where.split("."))], item)
            values[name] = item
    try:
        return cls(**values)
    except ValueError as exc:
        raise ValueError(f"TrainConfig.{path}: {exc}") from exc


def _type_ok(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits the annotation ``hint`` (an int fits ``float``, a bool no number)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return value in args
    if type(None) in args:
        return value is None or _type_ok(value, _optional_base(args))
    if origin is tuple:
        return isinstance(value, (tuple, list))
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _describe(hint: Any) -> str:
    """``hint`` for a message: ``float``, ``int or null``, ``one of ('a', 'b')``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is Literal:
        return f"one of {args}"
    if type(None) in args:
        return f"{_describe(_optional_base(args))} or null"
    return getattr(hint, "__name__", str(hint))


def _check_type(leaf: NestedField, value: Any) -> None:
    """Reject a nested field's value that does not fit its annotation.

    Raises:
        ValueError: ``TrainConfig.<path> = <value> is invalid: expected <type>`` (and the flag).

    """
    if not _type_ok(value, leaf.hint):
        raise ValueError(
            f"TrainConfig.{leaf.dotted} = {value!r} is invalid: expected {_describe(leaf.hint)} "
            f"(flag {leaf.flag})"
        )


def _dotted(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict flattened to dotted keys (``{"limits.memory_mb": 1024, ...}``)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_dotted(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


# ------------------------------------------------------------------------------------------------
# CLI flags generated from the fields


def field_docs(cls: type = TrainConfig) -> dict[str, str]:
    """Read the docstring written under each field of a dataclass (CleanRL style)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


@functools.cache
def literal_choices() -> dict[str, tuple[Any, ...]]:
    """The allowed values of every ``Literal``-typed :class:`TrainConfig` field, in field order.

    Read from the annotations (``typing.get_args``), so validation, the CLI's ``choices`` and
    the documentation cannot drift apart.
    """
    hints = typing.get_type_hints(TrainConfig)
    return {
        f.name: typing.get_args(hints[f.name])
        for f in dataclasses.fields(TrainConfig)
        if typing.get_origin(hints[f.name]) is Literal
    }


def _none_or(kind: type) -> Any:
    def convert(text: str) -> Any:
        return None if text.lower() in ("none", "null") else kind(text)

    convert.__name__ = kind.__name__
    return convert


def _flag_fields() -> list[tuple[str, Any, str]]:
    """``(flat name, annotation, help)`` of every flag, in field order.

    A section's fields come in its place, their help saying where they live in ``config.json``.
    """
    hints = typing.get_type_hints(TrainConfig)
    docs = field_docs()
    sections = _sections()
    out: list[tuple[str, Any, str]] = []
    for f in dataclasses.fields(TrainConfig):
        if f.name not in sections:
            out.append((f.name, hints[f.name], docs.get(f.name, "")))
            continue
        out += [
            (leaf.flat, leaf.hint, f"{leaf.doc} [config.json: {leaf.dotted}]")
            for leaf in nested_fields().values()
            if leaf.path[0] == f.name
        ]
    return out


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one ``--flag`` per :class:`TrainConfig` field (underscores become dashes).

    A nested section's fields get flat flags (``--quality-filter``, ``--call-timeout-s``,
    ``--curriculum-start``; :func:`nested_fields`), with the help of their own docstrings.
    Every flag defaults to ``argparse.SUPPRESS`` so :func:`config_from_args` can tell which
    fields the user set; booleans get ``--x/--no-x``; tuples take several values.
    """
    group = parser.add_argument_group("training config (defaults: the preset, else the paper's)")
    for name, hint, help_text in _flag_fields():
        flag = "--" + name.replace("_", "-")
        kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": help_text, "dest": name}
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif origin is Literal:
            kwargs["choices"] = list(args)
        elif origin is tuple:
            kwargs["nargs"] = "+" if args[-1] is Ellipsis else len(args)
            kwargs["type"] = args[0]
            kwargs["metavar"] = args[0].__name__.upper()
        elif type(None) in args and typing.get_origin(_optional_base(args)) is tuple:
            items = typing.get_args(_optional_base(args))  # an optional fixed-length tuple
            kwargs["nargs"] = len(items)
            kwargs["type"] = items[0]
            kwargs["metavar"] = items[0].__name__.upper()
        elif type(None) in args:
            base = _optional_base(args)
            kwargs["type"] = _none_or(base)
            kwargs["metavar"] = base.__name__.upper()
        else:
            kwargs["type"] = hint
        group.add_argument(flag, **kwargs)


def _optional_base(args: tuple[Any, ...]) -> Any:
    """The non-``None`` member of an ``X | None`` annotation's arguments."""
    return next(a for a in args if a is not type(None))


def config_from_args(
    args: argparse.Namespace,
    preset: str | None = None,
    *,
    base: Mapping[str, Any] | None = None,
) -> TrainConfig:
    """Build the config: ``base`` or the preset (or the paper defaults), then the flags given.

    ``base`` is a saved config's dict (``--config FILE``), flat or nested.

    Raises:
        ValueError: unknown preset or a bad value (named).

    """
    if preset and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    start = base if base is not None else PRESETS[preset] if preset else {}
    given: dict[str, Any] = {}
    for name, _hint, _help in _flag_fields():
        if hasattr(args, name):
            value = getattr(args, name)
            given[name] = tuple(value) if isinstance(value, list) else value
    return TrainConfig.from_dict(merge_config_dicts(start, given))
