"""The self-play GRPO trainer: Code-A1, and the Golden Tests and Self-Play baselines.

Read :meth:`Trainer.train` top to bottom (CleanRL style): set up (seeding, players, referee,
logging, resume), supervised warm start, evaluation before RL, the RL loop, evaluation after RL,
the summary. One RL step (:meth:`Trainer.step`):

1. **Problems**: ``problems_per_step`` problems from the training source (a seeded sampler whose
   state is checkpointed), drawn through the env's :class:`~codea1_env.game.host.ProblemPicker`
   (the ``hard_only`` filter and the curriculum, fed with every code's GT pass rate).
2. **Coder rollouts**: ``n_codes`` codes per problem at ``temperature``, each one
   :class:`~codea1_env.game.duel.Duel` played as the env plays it (move checks, code extraction,
   ``anonymize_code``); every observation is :func:`codea1_env.game.spaces.observe`'s.
3. **Tester rollouts**: ``n_suites`` test suites per code, each written against that code
   (white-box: the duel's shown program), in ``code-a1`` and ``self-play`` modes.
4. **Judging**: the whole ``problems x codes x suites`` grid of duels in one
   :func:`codea1_env.game.duel.judge_grid` call (one batched referee and sandbox call), which also
   updates the mistake book. The trainer never computes a reward itself.
5. **Advantages**: GRPO, per group mean/std. The coder's group is a problem's codes; the tester's
   group follows ``tester_group``: ``update_n`` (the paper) takes, per problem, only the code
   whose suite rewards vary most and uses its suites as the group.
6. **Updates**: PPO-clip (0.20/0.28, token-mean) + 0.001 x low-variance KL to the frozen
   reference, for each player (``code-a1``: two models and optimizers; ``self-play``: one model
   updated on both roles' samples; ``golden``: the coder only).
7. **Metrics and checkpoints**: JSONL/TensorBoard/wandb, atomic checkpoints every
   ``checkpoint_every`` steps.

A run directory that holds a checkpoint is resumed: models, optimizers, schedulers, RNG states,
the problem sampler, the step and the mistake book come back exactly as they were saved.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the trainer needs PyTorch: pip install 'codea1[train]'") from exc

from agents.training.checkpoint import (
    capture_rng_state,
    latest_checkpoint,
    restore_rng_state,
    write_checkpoint,
    write_text_atomic,
)
from agents.training.config import TrainConfig
from agents.training.distributed import (
    Distributed,
    NullMetricsLogger,
    from_environment,
    is_sharded,
    parameter_digest,
    shard_sizes,
)
from agents.training.grpo import group_advantages
from agents.training.heldout_eval import evaluate, format_summary
from agents.training.metrics import MetricsLogger, ProgressBar
from agents.training.player import Player, build_player, resolve_device
from agents.training.roles import RolePolicies
from agents.training.rollout import Sample
from agents.training.sft import SupervisedExample, supervised_warm_start
from codea1_env.envs.duel_env import duel_info
from codea1_env.game.duel import MAX_ACTION_CHARS, Duel, judge_grid
from codea1_env.game.host import DuelHost
from codea1_env.game.spaces import observe
from codea1_env.problems.problem import Problem

__all__ = [
    "TrainResult",
    "Trainer",
    "build_referee",
    "game_host",
    "resolve_run_dir",
    "resolve_source",
    "step_seed",
    "select_tester_codes",
]


def step_seed(seed: int, step: int, role: str) -> int:
    """A 31-bit seed for one rollout, a pure function of (run seed, step, role).

    Rollouts therefore do not depend on how many random numbers earlier steps drew, which keeps a
    resumed run on the same trajectory as an uninterrupted one.
    """
    digest = hashlib.sha256(f"{seed}/{step}/{role}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def resolve_source(spec: str) -> Any:
    """Return the problem source for a spec.

    ``procedural:SEED:SPLIT:FAMILIES`` (``FAMILIES`` joined by ``+``, e.g.
    ``procedural:0:test:step+range``) restricts the procedural family; every other spec goes to
    :func:`codea1_env.problems.load_source` (``bank``, ``procedural:SEED[:train|test]``, ...).

    Raises:
        ValueError: a malformed spec (from the source, which names it).
    """
    from codea1_env import problems as problem_sources

    parts = spec.split(":")
    if parts[0] == "procedural" and len(parts) == 4:
        seed, split, families = parts[1], parts[2], parts[3].split("+")
        if split not in ("train", "test") or not seed.isdigit():
            raise ValueError(
                f"bad procedural spec {spec!r}; expected 'procedural:SEED:train|test:FAMILY+...'"
            )
        return problem_sources.ProceduralSource(
            seed=int(seed),
            split=split,  # type: ignore[arg-type]
            families=families,
        )
    return problem_sources.load_source(spec)


def resolve_run_dir(config: TrainConfig) -> Path:
    """``output_dir`` when set, else ``{runs_root}/{exp_name}__{mode}__{seed}__{unix time}``."""
    if config.output_dir:
        return Path(config.output_dir)
    name = f"{config.exp_name}__{config.mode}__{config.seed}__{int(time.time())}"
    return Path(config.runs_root) / name


def build_referee(config: TrainConfig, mistake_book: Any = None) -> Any:
    """The run's :class:`~codea1_env.scoring.referee.Referee`: rewards, limits, stability, sandbox.

    ``config.reward_config()`` (``alpha``, ``k``, ``mode``), ``config.limits()``,
    ``config.stability_options()`` (quality filter, mistake-book bounds and refresh) and the
    ``sandbox`` backend with ``sandbox_workers``; the local sandbox with its default workers is
    started lazily, on the first judgement. The referee owns (and closes) its sandbox.
    """
    from codea1_env.scoring.referee import Referee

    sandbox = None
    if config.sandbox != "local" or config.sandbox_workers is not None:
        from codea1_env.sandbox.factory import make_sandbox

        options = {} if config.sandbox_workers is None else {"workers": config.sandbox_workers}
        if config.sandbox == "ray" and config.sandbox_workers is not None:
            options = {"workers_per_actor": config.sandbox_workers}
        sandbox = make_sandbox(config.sandbox, **options)
    return Referee(
        sandbox=sandbox,
        reward_config=config.reward_config(),
        limits=config.limits(),
        mistake_book=mistake_book,
        owns_sandbox=True,
        stability=config.stability_options(),
    )


def game_host(config: TrainConfig, source: Any, referee: Any) -> DuelHost:
    """The env's game layer for a run: the views' :class:`~codea1_env.game.host.DuelHost`.

    Problems are drawn from ``source`` through its picker (``hard_only`` filter, curriculum),
    the coder's moves are played with the run's ``anonymize_code``, and ``referee`` scores.
    """
    return DuelHost(
        source, referee.reward_config, None, None, None, referee, config.stability_options()
    )


@dataclass
class TrainResult:
    """What a finished run returns.

    Attributes:
        run_dir: The run directory.
        steps: RL steps completed (the final step number).
        before: Evaluation before RL (empty when disabled).
        after: Evaluation after RL (empty when disabled).
        history: Metrics rows of the steps run by this process.
        resumed_from: The checkpoint step this process resumed from (``None``: fresh run).

    """

    run_dir: Path
    steps: int
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    resumed_from: int | None = None


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Trainer:
    """Code-A1 self-play GRPO trainer.

    Args:
        config: The run's config.
        run_dir: Override of the run directory (else :func:`resolve_run_dir`).
        referee: A ready :class:`codea1_env.scoring.referee.Referee` to use (the trainer then does
            not own or close it, and the mistake book is the referee's). By default the trainer
            builds one with the local sandbox and ``run_dir/mistake_book.sqlite``.
        train_source: A problem source to train on instead of ``config.problems`` (anything
            with ``sample(rng)``, such as ``ProceduralSource(families=["step"])``, or a list of
            problems). It is drawn from through the env's
            :class:`~codea1_env.game.host.ProblemPicker` (``hard_only``, curriculum), which
            :attr:`host` (the run's :class:`~codea1_env.game.host.DuelHost`) holds.
        eval_problems: Held-out problems instead of ``config.eval_problems``.
        log: Where progress lines go (default: stderr; ranks other than 0 log nothing).
        distributed: The data-parallel group (default:
            :func:`agents.training.distributed.from_environment`, which joins the group ``torchrun``
            describes, or runs alone without one). See :mod:`agents.training.distributed` for how a
            step is split over ranks.
        init_from: A checkpoint directory of another run (such as its ``checkpoints/step_0``)
            whose players' weights this run starts from instead of running its own warm start
            (see :meth:`start_from`); ignored when the run resumes from its own checkpoint.

    Example:
        >>> from agents.training.config import from_preset
        >>> result = Trainer(from_preset("nano", output_dir="runs/demo")).train()  # doctest: +SKIP

    """

    def __init__(
        self,
        config: TrainConfig,
        *,
        run_dir: Path | None = None,
        referee: Any = None,
        train_source: Any = None,
        eval_problems: Sequence[Problem] | None = None,
        log: Callable[[str], None] = _stderr,
        distributed: Distributed | None = None,
        init_from: str | os.PathLike[str] | None = None,
    ) -> None:
        self.init_from = Path(init_from) if init_from is not None else None
        self._owns_dist = distributed is None
        self.dist = distributed if distributed is not None else from_environment(config.device)
        self.log = log if self.dist.is_main else _silent
        if config.problems_per_step % self.dist.world_size:
            raise ValueError(
                f"problems_per_step={config.problems_per_step} must divide by the "
                f"{self.dist.world_size} data-parallel processes"
            )
        self.run_dir = Path(run_dir) if run_dir is not None else resolve_run_dir(config)
        self.run_dir = Path(self.dist.broadcast(str(self.run_dir)))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.checkpoint = latest_checkpoint(self.run_dir)
        saved = self.run_dir / "config.json"
        if self.checkpoint is not None and saved.is_file():
            config = self._merge_saved_config(TrainConfig.load(saved), config)
        self.config = config
        self.dist.barrier()  # every rank has read the saved config before rank 0 rewrites it
        if self.dist.is_main:
            config.save(saved)

        # --- seeding ---------------------------------------------------------------------------
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        _seed_everything(config.seed)
        self.device = self.dist.device(resolve_device(config.device))
        self.sampler = np.random.default_rng(config.seed)
        self.step_count = 0
        self.before: dict[str, float] = {}

        # --- problems --------------------------------------------------------------------------
        source = train_source if train_source is not None else resolve_source(config.problems)
        self.eval_problems: list[Problem] = list(eval_problems or [])
        if config.eval_before_after and eval_problems is None:
            eval_source = resolve_source(config.eval_problems)
            ids = list(eval_source.ids())[: config.eval_size]
            self.eval_problems = [eval_source[i] for i in ids]

        # --- players ---------------------------------------------------------------------------
        self.coder = build_player(
            "shared" if config.mode == "self-play" else "coder",
            config.coder_model,
            config,
            seed=config.seed,
            lr=config.lr,
            device=self.device,
        )
        self.tester: Player | None = None
        if config.separate_tester:
            self.tester = build_player(
                "tester",
                config.tester_model,
                config,
                seed=config.seed,
                lr=config.tester_lr or config.lr,
                device=self.device,
            )
        for player in self._players():
            player.dist = self.dist
            player.shard_parameters()  # FSDP2 under distributed_strategy="fsdp", else no-op
            if is_sharded(player.model):
                local, total = shard_sizes(player.model)
                self.log(f"fsdp: {player.name} holds {local}/{total} parameters on rank 0")
        tester_player = self.tester if self.tester is not None else self.coder
        self.roles = RolePolicies(
            self.coder,
            tester_player if config.has_tester else None,
            config,
            specs={
                "coder": config.coder_model,
                "tester": config.tester_model if config.separate_tester else config.coder_model,
            },
        )
        if self.roles.backend == "vllm" and any(is_sharded(p.model) for p in self._players()):
            raise ValueError(
                "distributed_strategy='fsdp' cannot feed vLLM rollouts (sharded weights): use "
                "--generation-backend transformers or distributed_strategy='ddp'"
            )

        # --- referee and mistake book ---------------------------------------------------------
        self._owns_referee = referee is None
        self.mistake_book: Any = None
        with self.dist.main_first():  # rank 0 creates the shared SQLite mistake book
            self.referee = referee if referee is not None else self._build_referee()
        if referee is not None:
            self.mistake_book = getattr(referee, "mistake_book", None)
        # the env's game layer: problem picking (hard_only, curriculum), moves, anonymization
        self.host = game_host(config, source, self.referee)
        self.train_source = self.host.picker.source

        # --- resume ----------------------------------------------------------------------------
        self.resumed_from: int | None = None
        if self.checkpoint is not None:
            self._load_checkpoint(self.checkpoint)
        self.metrics: MetricsLogger | NullMetricsLogger = NullMetricsLogger()
        if self.dist.is_main:
            self.metrics = MetricsLogger(
                self.run_dir,
                resume_step=self.resumed_from,
                tensorboard=config.tensorboard,
                wandb_project=config.wandb_project if config.wandb else None,
                run_name=self.run_dir.name,
                config=config.to_dict(),
            )

    # ------------------------------------------------------------------------------------------
    # setup helpers

    def _merge_saved_config(self, saved: TrainConfig, given: TrainConfig) -> TrainConfig:
        """On resume the saved config wins, except ``steps`` (so a run can be extended).

        ``distributed_strategy`` also follows the command line: checkpoints hold full states,
        so a run may resume under ``ddp``, ``fsdp`` or on one process.
        """
        kept = ("steps", "output_dir", "distributed_strategy")
        differences = {k: v for k, v in saved.diff(given).items() if k not in kept}
        if differences:
            names = ", ".join(sorted(differences))
            self.log(f"resume: keeping the saved config; ignoring changed fields: {names}")
        return replace(
            saved,
            steps=given.steps,
            output_dir=given.output_dir,
            distributed_strategy=given.distributed_strategy,
        )

    def _build_referee(self) -> Any:
        if self.config.mistake_book:
            from codea1_env.mistake_book import SqliteMistakeBook

            self.mistake_book = SqliteMistakeBook(self.run_dir / "mistake_book.sqlite")
        return build_referee(self.config, self.mistake_book)

    # ------------------------------------------------------------------------------------------
    # checkpoints

    def _players(self) -> list[Player]:
        return [self.coder] + ([self.tester] if self.tester is not None else [])

    def save_checkpoint(self) -> Path:
        """Write an atomic checkpoint of everything needed to resume at ``step_count``."""
        # full states of sharded players, gathered by every rank before rank 0 writes
        states = {player.name: player.checkpoint_state() for player in self._players()}

        def write(directory: Path) -> None:
            for player in self._players():
                player.save(directory, states[player.name])
            torch.save(
                {
                    "step": self.step_count,
                    "sampler": self.sampler.bit_generator.state,
                    "rng": capture_rng_state(),
                    "curriculum": _curriculum_state(self.train_source),
                },
                directory / "trainer_state.pt",
            )
            state = {"step": self.step_count, "before": self.before, "time": time.time()}
            (directory / "trainer_state.json").write_text(json.dumps(state, indent=2))
            self.config.save(directory / "config.json")
            if self.mistake_book is not None:
                self.mistake_book.export_json(directory / "mistake_book.json")

        written = ""
        if self.dist.is_main:  # written once; the other ranks wait for it
            written = str(
                write_checkpoint(
                    self.run_dir, self.step_count, write, keep=self.config.keep_checkpoints
                )
            )
            self.log(f"checkpoint: wrote {written}")
        return Path(self.dist.broadcast(written))

    def _load_checkpoint(self, path: Path) -> None:
        for player in self._players():
            player.load_reference(self.run_dir / f"reference_{player.name}.pt")
            player.load(path)
        state = torch.load(path / "trainer_state.pt", weights_only=False)
        self.step_count = int(state["step"])
        self.sampler.bit_generator.state = state["sampler"]
        restore_rng_state(state["rng"])
        if state.get("curriculum") is not None and hasattr(self.train_source, "load_state_dict"):
            self.train_source.load_state_dict(state["curriculum"])
        info = json.loads((path / "trainer_state.json").read_text())
        self.before = {k: float(v) for k, v in info.get("before", {}).items()}
        book_file = path / "mistake_book.json"
        if self.mistake_book is not None and book_file.is_file() and self.dist.is_main:
            self.mistake_book.clear()  # the shared SQLite book is restored once, by rank 0
            self.mistake_book.import_json(book_file)
        self.dist.barrier()
        self.resumed_from = self.step_count
        self.roles.sync()
        self.log(f"resume: resuming from checkpoint {path.name} (step {self.step_count})")

    # ------------------------------------------------------------------------------------------
    # supervised warm start

    def warm_start(self) -> dict[str, float]:
        """Supervised warm start of the coder (GT solutions) and the tester (GT assert lines).

        In self-play the one model learns both roles in a single run that interleaves them (each
        batch is a coder batch with probability ``sft_steps / (sft_steps + sft_tester_steps)``,
        else a tester batch; one role per batch keeps padding short): run one after the other,
        the tester phase erased the coding (pass@1 0 on the toy preset).

        Returns the first and last losses per run (``sft/coder_loss_first``,
        ``sft/tester_loss_last``, or ``sft/coder+tester_...`` in self-play).
        """
        cfg = self.config
        out: dict[str, float] = {}
        problems = self.train_source
        plans: list[tuple[Player, str, int]] = []
        tester_steps = cfg.tester_sft_steps if cfg.has_tester else 0
        if self.tester is None and cfg.sft_steps > 0 and tester_steps > 0:
            plans.append((self.coder, "coder+tester", cfg.sft_steps + tester_steps))
        else:
            if cfg.sft_steps > 0:
                plans.append((self.coder, "coder", cfg.sft_steps))
            if tester_steps > 0:
                player = self.tester if self.tester is not None else self.coder
                plans.append((player, "tester", tester_steps))
        coder_share = cfg.sft_steps / max(1, cfg.sft_steps + tester_steps)
        for index, (player, role, steps) in enumerate(plans):
            started = time.perf_counter()
            drawn = {"examples": 0, "role": role}

            def example(
                rng: np.random.Generator, role: str = role, drawn: dict[str, Any] = drawn
            ) -> SupervisedExample:
                if role == "coder+tester":  # a new role at the first example of each batch
                    if drawn["examples"] % cfg.sft_batch_size == 0:
                        drawn["role"] = "coder" if rng.random() < coder_share else "tester"
                    drawn["examples"] += 1
                    role = str(drawn["role"])
                return self.roles.supervised_example(role, problems.sample(rng), rng)

            def progress(step: int, loss: float, role: str = role, steps: int = steps) -> None:
                if step == 0 or (step + 1) % max(1, steps // 5) == 0:
                    self.log(f"warm start [{role}] step {step + 1}/{steps}: loss {loss:.4f}")

            losses = supervised_warm_start(
                player,
                example,
                steps=steps,
                batch_size=cfg.sft_batch_size,
                lr=cfg.sft_lr,
                seed=cfg.seed * 1000 + index,
                on_step=progress,
            )
            out[f"sft/{role}_loss_first"] = losses[0]
            out[f"sft/{role}_loss_last"] = losses[-1]
            out[f"sft/{role}_seconds"] = time.perf_counter() - started
        self._freeze_reference()
        return out

    def start_from(self, checkpoint: str | os.PathLike[str]) -> dict[str, float]:
        """Start RL from the players' weights in another run's checkpoint (no warm start).

        Each player loads ``{name}_model.pt`` from ``checkpoint`` (``coder``, ``tester`` or
        ``shared``, as the players of this run's mode are named): a ``golden`` run can start from
        the coder of a ``code-a1`` run's ``step_0``, the models that run's warm start produced.
        The weights become the frozen KL reference and the optimizers start fresh, as after
        :meth:`warm_start`.

        Args:
            checkpoint: A checkpoint directory (``run_dir/checkpoints/step_N``).

        Returns:
            ``{"init/from_step": N}``, the step of that checkpoint (what ``warm_start.json`` holds).

        Raises:
            FileNotFoundError: the checkpoint has no weights for one of this run's players.
            RuntimeError: the weights do not fit a player's model (a different model spec).

        """
        path = Path(checkpoint)
        for player in self._players():
            if not (path / f"{player.name}_model.pt").is_file():
                raise FileNotFoundError(f"init_from: {path} has no {player.name}_model.pt")
            player.load(path)
        self._freeze_reference()
        info = path / "trainer_state.json"
        step = json.loads(info.read_text()).get("step", 0) if info.is_file() else 0
        self.log(f"init: started from the players' weights of {path}")
        return {"init/from_step": float(step)}

    def _freeze_reference(self) -> None:
        """Sync the rollout policies, snapshot the KL references, fresh optimizers."""
        self.roles.sync()
        for player in self._players():
            player.snapshot_reference()
            player.reset_optimizer()
            path = self.run_dir / f"reference_{player.name}.pt"
            if player.reference is not None and self.dist.is_main:
                tmp = path.with_suffix(".tmp")
                player.save_reference(tmp)
                os.replace(tmp, path)

    # ------------------------------------------------------------------------------------------
    # evaluation

    def evaluate(self) -> dict[str, float]:
        """Evaluate on the fixed held-out problems (see :mod:`agents.training.heldout_eval`)."""
        cfg = self.config
        seed = step_seed(cfg.seed, -1, "eval")

        def generate(
            role: str,
            observations: Sequence[Mapping[str, Any]],
            infos: Sequence[Mapping[str, Any]],
        ) -> list[str]:
            gens = self.roles.generate(role, observations, infos, seed=seed, evaluation=True)
            return [g.text for g in gens]

        return evaluate(
            self.eval_problems,
            generate,
            self.referee,
            samples=cfg.eval_samples,
            with_tester=cfg.has_tester,
            anonymize_code=self.host.stability.anonymize_code,
        )

    def _evaluate_on_main(self) -> dict[str, float]:
        """Evaluate on rank 0 with full parameters (every rank calls it; the others get {})."""
        with contextlib.ExitStack() as stack:
            for player in self._players():
                stack.enter_context(player.full_parameters())
            return self.evaluate() if self.dist.is_main else {}

    def _generate(self, role: str, *args: Any, **kwargs: Any) -> list[Any]:
        """:meth:`RolePolicies.generate` with the role's full parameters (FSDP: collective)."""
        with self.roles.players[role].full_parameters():
            return self.roles.generate(role, *args, **kwargs)

    # ------------------------------------------------------------------------------------------
    # one RL step

    def step(self) -> dict[str, float]:
        """Run one RL step and return its metrics (also logged)."""
        cfg = self.config
        step = self.step_count + 1
        started = time.perf_counter()

        # 1. problems, drawn through the env's picker (hard_only filter, curriculum)
        all_problems = [
            self.host.picker.pick(self.sampler, None) for _ in range(cfg.problems_per_step)
        ]
        problems = self.dist.shard(all_problems)  # this rank's slice (all of them on one process)

        # 2. coder rollouts: n_codes per problem, one duel each, played as the env plays it
        gen_started = time.perf_counter()
        duels = [Duel(p) for p in problems for _ in range(cfg.n_codes)]
        coder_obs = [observe(d) for d in duels]
        code_gens = self._generate(
            "coder",
            coder_obs,
            [duel_info(d) for d in duels],
            seed=step_seed(cfg.seed, step, "coder"),
            seed_offset=self.dist.offset(len(coder_obs)),
        )
        codes = [g.text for g in code_gens]
        for duel, code in zip(duels, codes, strict=True):
            self.host.play_code(duel, code, MAX_ACTION_CHARS)

        # 3. tester rollouts: n_suites per code, each against that code (the env's tester view)
        suite_gens: list[Any] = []
        grid_rows: list[list[Duel]] = [[duel] for duel in duels]  # golden: the tester never moves
        if cfg.has_tester:
            grid_rows = [[duel.branch() for _ in range(cfg.n_suites)] for duel in duels]
            tester_duels = [d for row in grid_rows for d in row]
            tester_obs = [observe(d) for d in tester_duels]
            suite_gens = self._generate(
                "tester",
                tester_obs,
                [duel_info(d) for d in tester_duels],
                seed=step_seed(cfg.seed, step, "tester"),
                seed_offset=self.dist.offset(len(tester_obs)),
            )
            for duel, gen in zip(tester_duels, suite_gens, strict=True):
                duel.play_tests(gen.text, MAX_ACTION_CHARS)
        gen_seconds = time.perf_counter() - gen_started
        gen_tokens = sum(len(g.completion_ids) for g in code_gens) + sum(
            len(g.completion_ids) for g in suite_gens
        )

        # 4. judging: the whole grid in one referee call (one batched sandbox call)
        judge_started = time.perf_counter()
        grid = [
            grid_rows[p_index * cfg.n_codes : (p_index + 1) * cfg.n_codes]
            for p_index in range(len(problems))
        ]
        judgements = judge_grid(self.referee, grid, update_book=cfg.mistake_book)
        judge_seconds = time.perf_counter() - judge_started
        # every rank's verdicts, in global problem order; once gathered, all ranks' mistake-book
        # updates of this step are committed
        all_judgements = self.dist.gather(judgements)

        # the curriculum (if any) sees every code's GT pass rate, as the env feeds it per episode
        for problem, judgement in zip(all_problems, all_judgements, strict=True):
            for rate in judgement.gt_pass_rates:
                self.host.picker.observe(problem.task_id, rate)

        # 5. advantages (groups with identical texts or equal rewards are skipped and counted)
        coder_rewards = torch.tensor([list(j.coder_rewards) for j in judgements])
        coder_adv = group_advantages(coder_rewards, normalize_std=cfg.normalize_advantages)
        collapsed_groups = {"coder": 0, "tester": 0}
        for p_index in range(len(problems)):
            first = p_index * cfg.n_codes
            if collapsed(codes[first : first + cfg.n_codes], coder_rewards[p_index].tolist()):
                collapsed_groups["coder"] += 1
                if cfg.skip_collapsed_groups:
                    coder_adv[p_index] = 0.0
        coder_adv = coder_adv.flatten()
        coder_samples = [
            Sample(list(g.prompt_ids), list(g.completion_ids), float(a), "coder")
            for g, a in zip(code_gens, coder_adv.tolist(), strict=True)
        ]
        tester_samples: list[Sample] = []
        chosen_std: list[float] = []
        if cfg.has_tester:
            for p_index, judgement in enumerate(judgements):
                rewards = torch.tensor([list(r) for r in judgement.tester_rewards])
                spread = _suite_spread(rewards)
                for c_index in select_tester_codes(rewards, cfg.tester_group):
                    chosen_std.append(float(spread[c_index]))
                    adv = group_advantages(rewards[c_index], normalize_std=cfg.normalize_advantages)
                    base = (p_index * cfg.n_codes + c_index) * cfg.n_suites
                    group_texts = [g.text for g in suite_gens[base : base + cfg.n_suites]]
                    if collapsed(group_texts, rewards[c_index].tolist()):
                        collapsed_groups["tester"] += 1
                        if cfg.skip_collapsed_groups:
                            continue
                    for s_index, a in enumerate(adv.tolist()):
                        g = suite_gens[base + s_index]
                        tester_samples.append(
                            Sample(list(g.prompt_ids), list(g.completion_ids), float(a), "tester")
                        )

        # 6. updates
        update_started = time.perf_counter()
        losses: dict[str, float] = {}
        if cfg.mode == "code-a1":
            assert self.tester is not None
            losses.update(_prefixed("coder", self.coder.update(coder_samples)))
            losses.update(_prefixed("tester", self.tester.update(tester_samples)))
        elif cfg.mode == "self-play":
            losses.update(_prefixed("shared", self.coder.update(coder_samples + tester_samples)))
        else:
            losses.update(_prefixed("coder", self.coder.update(coder_samples)))
        self.roles.sync()
        update_seconds = time.perf_counter() - update_started

        # 7. metrics
        self.step_count = step
        step_seconds = time.perf_counter() - started
        # data-parallel: the row describes the global batch (timings are rank 0's)
        totals = self.dist.sum([gen_tokens, collapsed_groups["coder"], collapsed_groups["tester"]])
        gen_tokens = int(totals[0])
        collapsed_groups = {"coder": int(totals[1]), "tester": int(totals[2])}
        chosen_std = self.dist.gather(chosen_std)
        row = self._step_metrics(all_judgements, cfg)
        row.update(losses)
        row.update(
            {
                "charts/step_seconds": step_seconds,
                "charts/rollout_seconds": gen_seconds,
                "charts/rollout_tokens": float(gen_tokens),
                "charts/tokens_per_s": gen_tokens / max(gen_seconds, 1e-9),
                "charts/sandbox_seconds": judge_seconds,
                "charts/sandbox_share": judge_seconds / max(step_seconds, 1e-9),
                "charts/update_seconds": update_seconds,
                "charts/lr": float(self.coder.scheduler.get_last_lr()[0]),
                "charts/problems": float(len(all_problems)),
            }
        )
        if chosen_std:
            row["tester/update_n_std"] = statistics.fmean(chosen_std)
        row["coder/collapsed_groups"] = float(collapsed_groups["coder"])
        if cfg.has_tester:
            row["tester/collapsed_groups"] = float(collapsed_groups["tester"])
        state = getattr(self.train_source, "state", None)
        if callable(state):
            row.update(state())
        if self.mistake_book is not None:
            row["mistake_book/size"] = float(self.mistake_book.size())
        return self.metrics.log(step, row)

    def _step_metrics(self, judgements: Sequence[Any], cfg: TrainConfig) -> dict[str, float]:
        """Rewards and rates of one step, from the referee's judgements."""
        row: dict[str, float] = {}
        merged: dict[str, list[float]] = {}
        for judgement in judgements:
            for key, value in judgement.metrics.items():
                merged.setdefault(key, []).append(float(value))
        row.update(
            {
                k: statistics.fmean(v)
                for k, v in merged.items()
                if v and (cfg.has_tester or not k.startswith("tester/"))
            }
        )
        coder = [r for j in judgements for r in j.coder_rewards]
        row["coder/reward"] = statistics.fmean(coder)
        row["coder/reward_std"] = statistics.pstdev(coder)
        row["coder/gt_pass_rate"] = statistics.fmean(
            [r for j in judgements for r in j.gt_pass_rates]
        )
        row["coder/all_gt_pass"] = statistics.fmean(
            [1.0 if r >= 1.0 else 0.0 for j in judgements for r in j.gt_pass_rates]
        )
        if cfg.has_tester:
            details = [d for j in judgements for row_ in j.tester_details for d in row_]
            row["tester/reward"] = statistics.fmean([float(d.total) for d in details])
            row["tester/validity"] = statistics.fmean([float(d.r_val) for d in details])
            row["tester/adversarial"] = statistics.fmean([float(d.r_adv) for d in details])
        return row

    # ------------------------------------------------------------------------------------------
    # the whole run

    def train(self) -> TrainResult:
        """Warm start, evaluate, run RL to ``config.steps``, evaluate, print the summary."""
        cfg = self.config
        history: list[dict[str, Any]] = []
        try:
            if self.checkpoint is None:
                if self.init_from is not None:
                    sft = self.start_from(self.init_from)
                else:  # replicated: every rank runs the same seeded steps
                    sft = self.warm_start()
                if sft and self.dist.is_main:
                    write_text_atomic(self.run_dir / "warm_start.json", json.dumps(sft, indent=2))
                if cfg.eval_before_after:  # on rank 0 (the others only unshard with it)
                    self.log(f"evaluating on {len(self.eval_problems)} held-out problems ...")
                    self.before = self._evaluate_on_main()
                    self.log("before RL: " + json.dumps(_rounded(self.before)))
                self.save_checkpoint()
            bar = ProgressBar(
                cfg.steps, initial=self.step_count, enabled=cfg.progress_bar and self.dist.is_main
            )
            try:
                while self.step_count < cfg.steps:
                    row = self.step()
                    history.append(row)
                    bar.update(row)
                    if not cfg.progress_bar:
                        self.log(_step_line(row))
                    if self.step_count % cfg.checkpoint_every == 0 or self.step_count == cfg.steps:
                        self.save_checkpoint()
            finally:
                bar.close()
            if self.dist.enabled:
                self.check_replicas()
            after: dict[str, float] = {}
            if cfg.eval_before_after:
                after = self._evaluate_on_main()
                self.log("after RL: " + json.dumps(_rounded(after)))
                self.log("\n" + format_summary(self.before, after))
            summary = {"steps": self.step_count, "before": self.before, "after": after}
            if self.dist.is_main:
                write_text_atomic(self.run_dir / "summary.json", json.dumps(summary, indent=2))
            self.dist.barrier()
            return TrainResult(
                self.run_dir, self.step_count, self.before, after, history, self.resumed_from
            )
        finally:
            self.close()

    def check_replicas(self) -> dict[str, Any]:
        """Compare the trained parameters of every data-parallel rank.

        Each rank hashes its players' trainable parameters (SHA-256); rank 0 writes the digests to
        ``run_dir/replicas.json``.

        Returns:
            ``{"world_size", "digests": [{player: digest} per rank], "identical"}``.

        Raises:
            RuntimeError: the replicas differ (on every rank, after the file is written).

        """
        digests = self.dist.gather([{p.name: parameter_digest(p.model) for p in self._players()}])
        report = {
            "world_size": self.dist.world_size,
            "step": self.step_count,
            "digests": digests,
            "identical": all(d == digests[0] for d in digests),
        }
        if self.dist.is_main:
            write_text_atomic(self.run_dir / "replicas.json", json.dumps(report, indent=2))
        if not report["identical"]:
            raise RuntimeError(f"data-parallel replicas diverged: {digests}")
        self.log(f"replicas: {self.dist.world_size} ranks hold identical parameters")
        return report

    def close(self) -> None:
        """Close the metrics sinks and what the trainer owns.

        That is the referee and mistake book when it built them, and the process group when it
        joined it.
        """
        self.metrics.close()
        if self._owns_referee:
            self.referee.close()
            if self.mistake_book is not None:
                self.mistake_book.close()
        if self._owns_dist:
            self.dist.shutdown()


def _suite_spread(rewards: torch.Tensor) -> torch.Tensor:
    if rewards.shape[1] < 2:
        return torch.zeros(rewards.shape[0])
    return rewards.std(dim=1)


def select_tester_codes(rewards: torch.Tensor, rule: str = "update_n") -> list[int]:
    """Pick the codes whose suites form the tester's GRPO groups, for one problem.

    Args:
        rewards: ``(n_codes, n_suites)`` tester rewards (``rewards[i][j]``: suite ``j``
            written against code ``i``).
        rule: ``"update_n"`` (the paper): only the code whose suite rewards have the largest
            standard deviation (the first one on ties); ``"all"``: every code.

    Returns:
        Code indices, each giving one group of ``n_suites`` suites.

    Raises:
        ValueError: an unknown rule or a reward matrix that is not 2-D.
    """
    if rewards.dim() != 2:
        raise ValueError(f"tester rewards must be (n_codes, n_suites), got {tuple(rewards.shape)}")
    if rule == "all":
        return list(range(rewards.shape[0]))
    if rule != "update_n":
        raise ValueError(f"unknown tester_group rule {rule!r}; expected 'update_n' or 'all'")
    return [int(torch.argmax(_suite_spread(rewards)).item())]


def _curriculum_state(source: Any) -> dict[str, Any] | None:
    state_dict = getattr(source, "state_dict", None)
    return state_dict() if callable(state_dict) else None


def collapsed(texts: Sequence[str], rewards: Sequence[float]) -> bool:
    """True when a GRPO group carries no signal: identical texts or equal rewards."""
    return len(set(texts)) <= 1 or max(rewards) - min(rewards) < 1e-12


def _silent(message: str) -> None:
    """The log of ranks other than 0."""
    del message


def _seed_everything(seed: int) -> None:
    import random

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def _prefixed(player: str, stats: Mapping[str, float]) -> dict[str, float]:
    out = {}
    for key, value in stats.items():
        group = "charts" if key in ("lr", "tokens") else "losses"
        out[f"{group}/{player}_{key}"] = value
    return out


def _rounded(values: Mapping[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in values.items()}


def _step_line(row: Mapping[str, Any]) -> str:
    keys = (
        "coder/reward",
        "coder/gt_pass_rate",
        "tester/reward",
        "tester/validity",
        "tester/adversarial",
        "charts/step_seconds",
    )
    parts = [f"{k}={row[k]:.3f}" for k in keys if k in row]
    return f"step {row['step']}: " + " ".join(parts)
