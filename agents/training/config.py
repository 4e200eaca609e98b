"""The trainer's configuration: one dataclass, every field documented, presets, JSON and CLI flags.

:class:`TrainConfig` follows CleanRL's ``Args`` and TRL's ``GRPOConfig``: a docstring under every
field. The defaults are the Code-A1 authors' GPU hyperparameters (GRPO, asymmetric PPO-clip
0.20/0.28 with dual clip 10 and token-mean, low-variance KL 0.001, lr 1e-6 cosine with 10
warm-up steps, weight decay 0.1, grad clip 1.0, 8 codes per question and 8 test suites per code,
rollouts at T=1.0).
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

The fields' introspection and the sections' flat names, merging and validation live in
:mod:`agents.training.config_sections`, the generated flags in :mod:`agents.training.config_flags`;
this module re-exports their public names.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agents.training.config_flags import add_config_arguments, config_from_args
from agents.training.config_sections import (
    NestedField,
    build_section,
    check_top_level_type,
    check_type,
    dotted_keys,
    field_docs,
    literal_choices,
    merge_config_dicts,
    nest_flat_keys,
    nested_fields,
    top_level_hints,
)
from agents.training.presets import PRESETS
from codea1_env.atomic import write_text_atomic
from codea1_env.sandbox.base import Limits
from codea1_env.sandbox.factory import BACKENDS as SANDBOX_BACKENDS
from codea1_env.stability import StabilityOptions

__all__ = [
    "DEVICE_TYPES",
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

DEVICE_TYPES: tuple[str, ...] = ("cpu", "cuda", "mps", "xpu", "hpu", "mtia", "xla", "privateuseone")
"""The ``torch.device`` types a model can train on; ``device`` is ``auto`` or ``TYPE[:INDEX]``."""

_DEVICE = re.compile(rf"auto|(?:{'|'.join(DEVICE_TYPES)})(?::\d+)?")
"""A device spec's form (``torch.device``'s); whether torch has the device here is checked when
the trainer starts (without importing torch into the config)."""

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
    """``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda[:N]``, ``mps`` or another
    ``torch.device`` type of :data:`DEVICE_TYPES`."""
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
    tf32: bool = False
    """On CUDA, let float32 matrix products run on TF32 tensor cores (process-wide, as
    ``transformers``' ``TrainingArguments(tf32=True)`` does). It speeds the rollouts' prefill and
    decode when they sample from the float32 master weights (``rollout_dtype='float32'``); the
    updates already run under bf16 autocast. ``False`` leaves torch's setting as it is (full
    float32 by default). No effect on CPU. The GPU presets turn it on (``docs/performance.md``, "On
    one GPU")."""
    rollout_dtype: Literal["float32", "bfloat16"] = "float32"
    """The weights the ``transformers`` rollouts sample from. ``float32``: the trained model itself.
    ``bfloat16``: a frozen bfloat16 copy of each player's model, refreshed from the trained
    weights after every update (a LoRA model's copy has its adapters merged in;
    :mod:`agents.training.rollout_weights`), for two bytes per parameter more per player. On one
    H200 at 1.5B it took a Code-A1 step from 11.2 to 9.7 s with full fine-tuning and from 16.1 to
    12.1 s with LoRA. Under ``distributed_strategy='fsdp'`` the copy is whole on every rank and
    sampling gathers no float32 parameters. The before/after evaluation samples from it too. No
    effect on vLLM rollouts (their dtype follows ``bf16``). A resumed run takes it from the command
    line. The GPU presets use ``bfloat16`` (``docs/performance.md``, "On one GPU")."""
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
    prompt_style: Literal["chat", "compact", "authors", "authors-sft"] = "chat"
    """``chat``: the paper-style instructions (wrapped in the chat template when the tokenizer has
    one); ``compact``: the short prompts of the tiny CPU models
    (``agents.players.prompts.*_COMPACT``); ``authors``: the Code-A1 authors' own system and user
    messages for both roles, word for word (``agents.players.prompts.*_AUTHORS``; in the chat
    template when the tokenizer has one); ``authors-sft``: the same with the shorter tester message
    they give a tester checkpoint whose path holds ``sft`` (``TESTER_AUTHORS_SFT``)."""
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
    problem_order: Literal["epochs", "uniform"] = "epochs"
    """How each step's problems are drawn from ``problems`` (after ``stability.hard_only``):
    ``epochs`` as verl's loader, which the authors train with: a fresh shuffle of the source each
    epoch cut into steps, the last incomplete step dropped, so no problem comes twice in a step
    (:mod:`agents.training.problem_order`; it is a function of ``seed`` and the step, so a
    resume continues it); ``uniform`` draws each problem independently, with replacement. A
    ``stability.curriculum``, and a source object of your own passed to the trainer, always draw
    through their ``sample``."""

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
    candidate_context: Literal["alone", "authors"] = "alone"
    """What a candidate code runs with: ``alone`` (codea1's: its program as written) or
    ``authors`` (as the authors' harness runs it: after the GT, both programs' imports hoisted
    and the GT's functions deleted, so an import the GT has or a GT constant works; deviation 12
    of docs/deviations.md)."""
    equality: Literal["python", "strict"] = "python"
    """How a returned value is compared with the GT's: ``python`` (the authors' ``==``) or
    ``strict`` (codea1's option: types must match at every level, floats within
    ``math.isclose``, NaN equals NaN; deviation 14 of docs/deviations.md)."""
    inline: Literal["arguments", "anywhere"] = "arguments"
    """Where the tester's remembered assignments are substituted: ``arguments`` (the authors'
    rule 1: a bare name passed as an argument) or ``anywhere`` (codea1's option: in the whole
    call and the expected side; deviation 15 of docs/deviations.md)."""
    book_tie_order: Literal["oldest", "authors"] = "oldest"
    """How the book ranks entries of equal frequency for the replay: ``oldest`` first (codea1's)
    or ``authors`` (the order the authors' in-place sort at each replay leaves; deviation 22 of
    docs/deviations.md)."""

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
    warmup_from_zero: bool = True
    """Warm up as verl does, which the authors' runs use: the lr of RL step ``s`` (from 0) is
    ``s / warmup_steps`` of ``lr``, so the first update runs at lr 0 and the full lr comes at
    step ``warmup_steps``. ``False``: ``(s + 1) / warmup_steps``, the first update at
    ``lr / warmup_steps`` and the full lr one step earlier (the ``tiny`` preset's published
    runs)."""
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
    clip_ratio_c: float = 10.0
    """Dual-clip PPO bound (verl's ``clip_ratio_c``; the authors use 10.0): where a token's
    advantage is negative, its clipped loss is capped at ``-A * clip_ratio_c``, so a ratio grown
    past ``clip_ratio_c`` stops pushing. Must be > 1."""
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
    micro_batch_max_tokens: int | None = None
    """Form micro-batches by a token budget instead of ``micro_batch_size`` (verl's
    ``use_dynamic_bsz`` with ``ppo_max_token_len_per_gpu``; the authors use 32768). Per role,
    a rank's samples of a mini-batch (and of the log-probability passes) make ``ceil(tokens /
    micro_batch_max_tokens)`` micro-batches (at least 1, at most one per sample), where a
    sample's tokens are its prompt plus its completion, balanced by token count with greedy
    longest-processing-time (:func:`agents.training.rollout.balanced_partition`; verl uses
    Karmarkar-Karp, so which samples share a micro-batch can differ from verl's). A sample longer
    than the budget forms its own micro-batch. A micro-batch runs in forward passes whose padded
    size (rows x longest row) stays within the budget (a longer sample alone;
    :func:`agents.training.rollout.padded_passes`): verl's forward drops the padding, codea1's
    pads, and the balanced micro-batches mix long and short samples. The passes do not change
    the loss (each counts for its share of its micro-batch). Data-parallel, every rank uses the
    largest count over ranks (verl syncs it the same way). With ``loss_weighting='global'`` the
    update does not depend on it (up to float rounding); with ``'authors'`` it does. ``None``:
    fixed ``micro_batch_size`` chunks. Not used by the supervised warm start."""
    loss_weighting: Literal["global", "authors"] = "global"
    """How the micro-batches' losses make a mini-batch's gradient. ``global`` (codea1's): the
    exact ``loss_aggregation`` of the whole global mini-batch (each micro-batch's loss weighted
    by its share of the global mini-batch's completion tokens, or of its sequences for the
    ``seq-mean-*`` modes; gradients summed over ranks), so micro-batching does not change the
    update. ``authors`` (verl's ``dp_actor`` as the authors run it; deviation 20 of
    docs/deviations.md): each micro-batch's own aggregate (for ``token-mean`` the token mean of
    its policy loss plus ``kl_coef`` x the token mean of its KL) times its share of this rank's
    samples of the mini-batch, gradients averaged over the ranks that hold samples of it; verl
    does the same for every ``loss_aggregation``, so do we (for the ``seq-mean-*`` modes it equals
    ``global`` unless ranks hold different numbers of samples). Under ``authors`` a micro-batch of
    short completions weighs more per token than one of long completions, so the update depends
    on ``micro_batch_size`` / ``micro_batch_max_tokens``. The logged ``pg_loss``, ``kl`` and
    the clip and ratio statistics are weighted the way the loss is."""

    # --- supervised warm start -----------------------------------------------------------------
    sft_steps: int = 0
    """Supervised steps on GT solutions of the training problems before RL (0: none)."""
    sft_tester_steps: int | None = None
    """Supervised steps of the tester on GT-valid assert lines (``None``: same as ``sft_steps``)."""
    sft_batch_size: int = 16
    """Sequences per supervised step."""
    sft_lr: float = 1e-3
    """Supervised learning rate (peak, after a linear warm-up over 5% of the steps)."""
    sft_lr_schedule: Literal["constant", "cosine", "linear"] = "constant"
    """The supervised learning rate after its warm-up: constant, or decayed to zero over the
    warm start (cosine or linear; each role's run has its own schedule)."""
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
    referee_processes: int = 1
    """Referee processes that score each step (``1``: one referee in the trainer's process; more:
    a :class:`codea1_env.scoring.pool.RefereePool`, each process with its own sandbox of
    ``sandbox_workers`` workers, the one mistake book kept in the trainer's process; the same
    rewards either way). For nodes with many cores, where one referee's own work bounds a step
    (``docs/performance.md``). With the ``local`` or ``docker`` sandbox."""
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
            candidate_context=self.candidate_context,
            equality=self.equality,
            inline=self.inline,
        )

    def __post_init__(self) -> None:
        """Build the nested sections given as dicts, coerce JSON lists back to tuples, validate.

        Raises:
            ValueError: an unknown field of a section, or a bad value (named).

        """
        for name in top_level_hints():
            check_top_level_type(name, getattr(self, name))
        self.limits = build_section(Limits, self.limits, "limits")
        self.stability = build_section(StabilityOptions, self.stability, "stability")
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
            check_type(leaf, self.value(leaf.path))
        checks: list[tuple[str, bool, str]] = [
            (name, getattr(self, name) in choices, f"one of {choices}")
            for name, choices in literal_choices().items()
        ]
        checks += [
            ("steps", self.steps >= 0, ">= 0"),
            (
                "exp_name",
                _PLAIN_NAME.fullmatch(self.exp_name) is not None,
                "letters, digits, '_', '-' and '.' (not first): it names a directory in runs_root",
            ),
            ("referee_processes", self.referee_processes >= 1, ">= 1"),
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
            ("lr", math.isfinite(self.lr) and self.lr > 0, "a finite number > 0"),
            (
                "tester_lr",
                self.tester_lr is None or (math.isfinite(self.tester_lr) and self.tester_lr > 0),
                "a finite number > 0 or null",
            ),
            ("warmup_steps", self.warmup_steps >= 0, ">= 0"),
            (
                "weight_decay",
                math.isfinite(self.weight_decay) and self.weight_decay >= 0,
                "finite, >= 0",
            ),
            (
                "max_grad_norm",
                math.isfinite(self.max_grad_norm) and self.max_grad_norm >= 0,
                "finite, >= 0",
            ),
            ("clip_low", 0 <= self.clip_low < 1, "in [0, 1)"),
            ("clip_high", math.isfinite(self.clip_high) and self.clip_high >= 0, "finite, >= 0"),
            (
                "clip_ratio_c",
                math.isfinite(self.clip_ratio_c) and self.clip_ratio_c > 1,
                "a finite number > 1",
            ),
            ("kl_coef", math.isfinite(self.kl_coef) and self.kl_coef >= 0, "a finite number >= 0"),
            ("ppo_epochs", self.ppo_epochs >= 1, ">= 1"),
            ("mini_batches", self.mini_batches >= 1, ">= 1"),
            ("micro_batch_size", self.micro_batch_size >= 1, ">= 1"),
            (
                "micro_batch_max_tokens",
                self.micro_batch_max_tokens is None or self.micro_batch_max_tokens >= 1,
                ">= 1 or null",
            ),
            ("sft_steps", self.sft_steps >= 0, ">= 0"),
            (
                "sft_tester_steps",
                self.sft_tester_steps is None or self.sft_tester_steps >= 0,
                ">= 0 or null",
            ),
            ("sft_batch_size", self.sft_batch_size >= 1, ">= 1"),
            ("sft_lr", math.isfinite(self.sft_lr) and self.sft_lr > 0, "a finite number > 0"),
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
            ("lora_alpha", self.lora_alpha >= 1, ">= 1"),
            ("lora_dropout", 0 <= self.lora_dropout < 1, "in [0, 1)"),
            ("adam_betas", all(0 <= b < 1 for b in self.adam_betas), "two numbers in [0, 1)"),
            (
                "num_threads",
                self.num_threads is None or 1 <= self.num_threads <= 1024,
                "in [1, 1024] or null",
            ),
            (
                "sandbox_workers",
                self.sandbox_workers is None or self.sandbox_workers >= 1,
                ">= 1 or null",
            ),
            ("sandbox", self.sandbox in SANDBOX_BACKENDS, f"one of {SANDBOX_BACKENDS}"),
            (
                "device",
                _DEVICE.fullmatch(self.device) is not None,
                "auto or TYPE[:N] with TYPE one of " + ", ".join(DEVICE_TYPES),
            ),
        ]
        for role in ("coder", "tester"):
            top_p, temperature = f"{role}_top_p", f"{role}_temperature"
            checks.append(
                (top_p, getattr(self, top_p) is None or 0 < getattr(self, top_p) <= 1, "in (0, 1]")
            )
            checks.append(
                (
                    temperature,
                    getattr(self, temperature) is None or getattr(self, temperature) > 0,
                    "> 0 or null",
                )
            )
        # the limits' ranges are checked by Limits itself (codea1_env.sandbox.base.LIMIT_RANGES)
        flags = {leaf.dotted: f" (flag {leaf.flag})" for leaf in nested_fields().values()}
        for name, ok, allowed in checks:
            if not ok:
                raise ValueError(
                    f"TrainConfig.{name} = {self.value(name)!r} is invalid: expected {allowed}"
                    + flags.get(name, "")
                )
        if self.mode == "code-a1" and self.n_suites < 2 and self.tester_group == "update_n":
            raise ValueError("TrainConfig.n_suites must be >= 2 for the tester's GRPO group")
        if self.referee_processes > 1 and self.sandbox == "ray":
            raise ValueError(
                "TrainConfig.referee_processes > 1 needs the local or docker sandbox: with "
                "sandbox = 'ray' each referee process would start its own set of actors"
            )

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
        """Write the config as JSON, atomically (:func:`codea1_env.atomic.write_text_atomic`)."""
        write_text_atomic(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrainConfig:
        """Read a config written by :meth:`save`.

        Raises:
            ValueError: the file is not valid JSON or has an unknown or bad field (the message
                names the file).

        """
        from codea1_env.problems.jsontext import decode_json

        try:
            data = decode_json(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:  # nested past the decoder's depth included
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
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
        mine, theirs = dotted_keys(self.to_dict()), dotted_keys(other.to_dict())
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


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}")
