"""The self-play GRPO trainer: Code-A1, and the Golden Tests and Self-Play baselines.

Read :meth:`Trainer.train` top to bottom (CleanRL style): set up (seeding, players, referee,
logging, resume), supervised warm start, evaluation before RL, the RL loop, evaluation after RL,
the summary. One RL step (:meth:`Trainer.step`):

1. **Problems**: ``problems_per_step`` problems from the training source (after the env's
   ``hard_only`` filter): in shuffled epochs, as verl's loader draws them
   (:mod:`agents.training.problem_order`, ``problem_order="epochs"``), or one by one through
   the env's :class:`~codea1_env.game.host.ProblemPicker` with a seeded, checkpointed sampler
   (``"uniform"``, and always with the curriculum, fed with every code's GT pass rate).
2. **Coder rollouts**: ``n_codes`` codes per problem at ``temperature``, each one
   :class:`~codea1_env.game.duel.Duel` played as the env plays it (move checks, code extraction,
   ``anonymize_code``); every observation is :func:`codea1_env.game.spaces.observe`'s.
3. **Tester rollouts**: ``n_suites`` test suites per code, each written against that code
   (white-box: the duel's shown program), in ``code-a1`` and ``self-play`` modes.
4. **Judging**: the whole ``problems x codes x suites`` grid of duels in one
   :func:`codea1_env.game.duel.judge_grid` call (one batched referee and sandbox call), which also
   updates the mistake book. The trainer never computes a reward itself.
5. **Advantages** (:mod:`agents.training.groups`): GRPO, per group mean/std. The coder's group
   is a problem's codes; the tester's group follows ``tester_group``: ``update_n`` (the paper)
   takes, per problem, only the code whose suite rewards vary most and uses its suites as the
   group.
6. **Updates**: PPO-clip (0.20/0.28, token-mean) + 0.001 x low-variance KL to the frozen
   reference, for each player (``code-a1``: two models and optimizers; ``self-play``: one model
   updated on both roles' samples; ``golden``: the coder only).
7. **Metrics and checkpoints**: JSONL/TensorBoard/wandb, atomic checkpoints every
   ``checkpoint_every`` steps.

A run directory that holds a checkpoint is resumed: models, optimizers, schedulers, RNG states,
the problem sampler, the step, the mistake book and the quality filter's pass history come back
exactly as they were saved.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the trainer needs PyTorch: pip install 'codea1[train]'") from exc

from agents.training.checkpoint import (
    PASS_HISTORY_FILE,
    CheckpointError,
    checkpoint_step,
    curriculum_state,
    latest_checkpoint,
    load_player_weights,
    read_pass_history,
    read_run_checkpoint,
    write_run_checkpoint,
    write_text_atomic,
)
from agents.training.config import TrainConfig
from agents.training.distributed import (
    Distributed,
    NullMetricsLogger,
    check_replicas,
    from_environment,
    is_sharded,
)
from agents.training.environment import append_environment, environment_record
from agents.training.groups import GroupedSamples, collapsed, select_tester_codes, step_samples
from agents.training.heldout_eval import (
    Generate,
    coder_codes,
    cross_rows,
    evaluate,
    format_summary,
)
from agents.training.metrics import (
    MetricsLogger,
    ProgressBar,
    player_stats,
    rounded,
    step_line,
    timing_metrics,
)
from agents.training.play import play_codes, play_suites
from agents.training.player import Player, enable_tf32, resolve_device
from agents.training.problem_order import BUILT_IN_SOURCES, EpochOrder
from agents.training.roles import RolePolicies
from agents.training.rollout import Sample
from agents.training.run_setup import (
    build_players,
    build_referee,
    game_host,
    heldout_problems,
    merge_saved_config,
    resolve_run_dir,
    resolve_source,
    seed_everything,
    step_seed,
)
from agents.training.sft import warm_start_players
from codea1_env.game.duel import Duel, judge_grid
from codea1_env.problems.problem import Problem
from codea1_env.problems.sources import is_local_spec
from codea1_env.scoring.metrics import step_metrics

__all__ = [
    "TrainResult",
    "Trainer",
    "build_referee",
    "game_host",
    "resolve_run_dir",
    "resolve_source",
    "step_seed",
    "select_tester_codes",
    "collapsed",
]

_BEFORE_CODES = "eval_codes_before.json"
"""The coder's answers in the evaluation before RL, in the run directory (see
:meth:`Trainer._tester_on_start_codes`)."""


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
        self.checkpoint = latest_checkpoint(self.run_dir)
        saved = self.run_dir / "config.json"
        if self.checkpoint is not None:
            # the run's config, or the one the checkpoint carries when the run's was lost
            found = saved if saved.is_file() else self.checkpoint / "config.json"
            if found.is_file():
                if found != saved:
                    self.log(f"resume: {saved} is missing; using {found}")
                at_step = checkpoint_step(self.checkpoint)
                config = merge_saved_config(TrainConfig.load(found), config, self.log, at_step)
        # --- the input, checked before anything is written (the run directory, config.json) ---
        _check_device(config.device)
        _check_model_specs(config)
        if self.checkpoint is None and self.init_from is not None and not self.init_from.is_dir():
            raise FileNotFoundError(f"init_from: no checkpoint directory {self.init_from}")
        source = train_source if train_source is not None else resolve_source(config.problems)
        self.eval_problems: list[Problem] = list(eval_problems or [])
        if eval_problems is None and (
            config.eval_before_after or is_local_spec(config.eval_problems)
        ):
            # with evaluation off, a local file is still read: a bad one stops the run before it
            # writes (a built-in or Hugging Face source is left alone: nothing to check offline)
            held_out = heldout_problems(config)
            self.eval_problems = held_out if config.eval_before_after else []
        fresh = self.checkpoint is None and self.dist.is_main
        if fresh and self.run_dir.is_dir() and not saved.is_file():
            own = {path.name for path in _fresh_run_files(self.run_dir)}
            # the run's own files (a SQLite book opened for it before the Trainer) are not noted
            others = sorted(p.name for p in self.run_dir.iterdir() if p.name not in own)
            if others:  # not a codea1 run's directory (a run writes config.json first)
                self.log(
                    f"note: {self.run_dir} already holds {len(others)} "
                    f"{'file' if len(others) == 1 else 'files'} of something else "
                    f"({', '.join(others[:4])}{', ...' if len(others) > 4 else ''}); "
                    "the run writes its own beside them"
                )
        made_dir = not self.run_dir.exists()
        existed = {path: path.exists() for path in _fresh_run_files(self.run_dir)}
        # a resume that fails (a damaged checkpoint file) puts back the config.json it rewrote
        kept_config = saved.read_text(encoding="utf-8") if not fresh and saved.is_file() else None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start(config, source, referee)
        except BaseException:  # a model that does not load, a sandbox that cannot start, ...
            if fresh:  # a new run leaves nothing behind (a resumed one keeps its directory)
                self._undo_fresh_start(made_dir, existed)
            elif kept_config is not None and self.dist.is_main:
                self._close_started()
                write_text_atomic(saved, kept_config)
            raise

    def _start(self, config: TrainConfig, source: Any, referee: Any) -> None:
        """The rest of ``__init__``: config.json, seeding, players, referee, resume, metrics."""
        saved = self.run_dir / "config.json"
        self.config = config
        self.dist.barrier()  # every rank has read the saved config before rank 0 rewrites it
        if self.dist.is_main:
            config.save(saved)

        # --- seeding ---------------------------------------------------------------------------
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        seed_everything(config.seed)
        self.device = self.dist.device(resolve_device(config.device))
        if config.tf32:
            enable_tf32(self.device)
        self.sampler = np.random.default_rng(config.seed)
        self.step_count = 0
        self.before: dict[str, float] = {}

        # --- players ---------------------------------------------------------------------------
        self.coder, self.tester = build_players(config, self.device, self.dist, self.log)
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
        self.order = (
            EpochOrder(self.train_source.ids(), config.problems_per_step, config.seed)
            if config.problem_order == "epochs" and isinstance(self.train_source, BUILT_IN_SOURCES)
            else None
        )

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

    def _close_started(self) -> None:
        """Close what a start that failed had opened (referee, mistake book, metrics)."""
        with contextlib.suppress(Exception):
            if getattr(self, "_owns_referee", False) and getattr(self, "referee", None):
                self.referee.close()
        with contextlib.suppress(Exception):
            if getattr(self, "mistake_book", None) is not None:
                self.mistake_book.close()
        with contextlib.suppress(Exception):
            self.metrics.close()

    def _undo_fresh_start(self, made_dir: bool, existed: dict[Path, bool]) -> None:
        """Remove what a new run wrote before its start failed; close what it opened."""
        self._close_started()
        if made_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            return
        for path, was_there in existed.items():
            if not was_there:
                with contextlib.suppress(FileNotFoundError):
                    shutil.rmtree(path) if path.is_dir() else path.unlink()

    # ------------------------------------------------------------------------------------------
    # setup helpers

    def _build_referee(self) -> Any:
        if self.config.mistake_book:
            from codea1_env.mistake_book import SqliteMistakeBook

            self.mistake_book = SqliteMistakeBook(
                self.run_dir / "mistake_book.sqlite", tie_order=self.config.book_tie_order
            )
        return build_referee(self.config, self.mistake_book)

    # ------------------------------------------------------------------------------------------
    # checkpoints

    def _players(self) -> list[Player]:
        return [self.coder] + ([self.tester] if self.tester is not None else [])

    def save_checkpoint(self) -> Path:
        """Write an atomic checkpoint of everything needed to resume at ``step_count``."""
        # full states of sharded players, gathered by every rank before rank 0 writes
        states = [(player, player.checkpoint_state()) for player in self._players()]
        # every rank's pass history (each rank judges with its own referee), gathered on all
        histories = self._pass_history_states()
        written = ""
        if self.dist.is_main:  # written once; the other ranks wait for it
            written = str(
                write_run_checkpoint(
                    self.run_dir,
                    self.step_count,
                    states,
                    sampler=self.sampler,
                    curriculum=curriculum_state(self.train_source),
                    before=self.before,
                    config=self.config,
                    mistake_book=self.mistake_book,
                    keep=self.config.keep_checkpoints,
                    pass_history=histories,
                )
            )
            self.log(f"checkpoint: wrote {written}")
        return Path(self.dist.broadcast(written))

    def _load_checkpoint(self, path: Path) -> None:
        state = read_run_checkpoint(
            path,
            self.run_dir,
            self._players(),
            sampler=self.sampler,
            source=self.train_source,
            mistake_book=self.mistake_book if self.dist.is_main else None,
        )
        self.step_count = state.step
        self.before = state.before
        self._load_pass_history(path)
        self.dist.barrier()
        self.resumed_from = self.step_count
        self.roles.sync()
        self.log(f"resume: resuming from checkpoint {path.name} (step {self.step_count})")

    def _pass_history_states(self) -> list[dict[str, Any]] | None:
        """Each rank's referee's pass history, in rank order (``None``: a referee has none).

        A collective: every rank calls it.
        """
        save = getattr(self.referee, "pass_history_state", None)
        states = self.dist.gather([save() if callable(save) else None])
        found = [state for state in states if state is not None]
        return found if len(found) == len(states) else None

    def _load_pass_history(self, path: Path) -> None:
        """Restore this rank's pass history from checkpoint ``path`` (see read_pass_history)."""
        found = read_pass_history(path, rank=self.dist.rank, world_size=self.dist.world_size)
        load = getattr(self.referee, "load_pass_history_state", None)
        filtering = self.config.stability.quality_filter
        if found is None:
            if filtering:
                self.log(
                    f"resume: {path.name} holds no {PASS_HISTORY_FILE} (written before pass "
                    "histories were saved): the quality filter's pass history starts empty, so "
                    "always_passes differs from the uninterrupted run's until it refills"
                )
            return
        state, merged = found
        if not callable(load):
            if filtering:
                self.log(f"resume: the referee cannot load {PASS_HISTORY_FILE}; not restored")
            return
        try:
            load(state)
        except ValueError as exc:  # read_pass_history checked it; a referee may check more
            raise CheckpointError(f"checkpoint file {path / PASS_HISTORY_FILE}: {exc}") from exc
        if merged and filtering:
            self.log(
                f"resume: {PASS_HISTORY_FILE} was saved by another number of ranks than "
                f"{self.dist.world_size}: every rank starts from all of their pass histories "
                "merged"
            )

    # ------------------------------------------------------------------------------------------
    # supervised warm start

    def warm_start(self) -> dict[str, float]:
        """Supervised warm start, then the frozen KL references and fresh optimizers.

        The coder learns the GT solutions and the tester the GT assert lines (in self-play one
        model learns both, interleaved); see :func:`agents.training.sft.warm_start_players`.

        Returns:
            The first and last losses per run (``sft/coder_loss_first``,
            ``sft/tester_loss_last``, or ``sft/coder+tester_...`` in self-play).
        """
        out = warm_start_players(
            self.config, self.coder, self.tester, self.roles, self.train_source, self.log
        )
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
        step = load_player_weights(path, self._players())
        self._freeze_reference()
        self.log(f"init: started from the players' weights of {path}")
        return {"init/from_step": float(step)}

    def _freeze_reference(self) -> None:
        """Sync the rollout policies, snapshot the KL references, fresh optimizers."""
        self.roles.sync()
        for player in self._players():
            player.freeze_reference(
                self.run_dir / f"reference_{player.name}.pt", write=self.dist.is_main
            )

    # ------------------------------------------------------------------------------------------
    # evaluation

    def evaluate(self, codes: Sequence[str] | None = None) -> dict[str, float]:
        """Evaluate on the fixed held-out problems (see :mod:`agents.training.heldout_eval`).

        Args:
            codes: The coder's answers to play instead of asking the coder (``eval_samples``
                per problem, as :func:`~agents.training.heldout_eval.coder_codes` returns them).
        """
        cfg = self.config
        return evaluate(
            self.eval_problems,
            self._eval_sampler(),
            self.referee,
            samples=cfg.eval_samples,
            with_tester=cfg.has_tester,
            anonymize_code=self.host.stability.anonymize_code,
            codes=codes,
        )

    def _eval_sampler(self) -> Generate:
        return self.roles.texts_at(step_seed(self.config.seed, -1, "eval"))

    def _evaluate_on_main(
        self, codes: Sequence[str] | None = None, *, keep_codes: bool = False
    ) -> dict[str, float]:
        """Evaluate on rank 0 with full parameters (every rank calls it; the others get {}).

        Full parameters as sampling needs them (:meth:`RolePolicies.sampling_parameters`).

        ``keep_codes``: write the coder's answers to ``eval_codes_before.json`` first (the
        evaluation before RL, whose codes the trained tester is scored on after RL).
        """
        with contextlib.ExitStack() as stack:
            for player in self._players():
                stack.enter_context(self.roles.sampling_parameters(player))
            if not self.dist.is_main:
                return {}
            if keep_codes and self.config.has_tester:
                codes = coder_codes(
                    self.eval_problems, self._eval_sampler(), samples=self.config.eval_samples
                )
                write_text_atomic(self.run_dir / _BEFORE_CODES, json.dumps(codes))
            return self.evaluate(codes)

    def _tester_on_start_codes(self, after: dict[str, float]) -> None:
        """Add the :data:`~agents.training.heldout_eval.CROSS_ROWS` to ``before`` and ``after``.

        The trained tester writes suites against the codes the evaluation before RL played
        (``eval_codes_before.json``). Without that file (a run resumed from a checkpoint written
        before it existed) or with codes that no longer fit the held-out set, nothing is added.
        """
        path = self.run_dir / _BEFORE_CODES
        if not self.config.has_tester or not self.before or not path.is_file():
            return
        codes = json.loads(path.read_text())
        if len(codes) != len(self.eval_problems) * self.config.eval_samples:
            self.log(f"{path.name}: {len(codes)} codes do not fit the held-out set; skipped")
            return
        on_start = self._evaluate_on_main(codes)
        before_rows, after_rows = cross_rows(self.before, on_start)
        self.before.update(before_rows)
        after.update(after_rows)

    def _generate(self, role: str, *args: Any, **kwargs: Any) -> list[Any]:
        """:meth:`RolePolicies.generate` with the parameters sampling needs (FSDP: collective)."""
        with self.roles.sampling_parameters(self.roles.players[role]):
            return self.roles.generate(role, *args, **kwargs)

    # ------------------------------------------------------------------------------------------
    # one RL step

    def step(self) -> dict[str, float]:
        """Run one RL step and return its metrics (also logged).

        The steps of the module docstring, in order: problems, coder rollouts, tester rollouts,
        one judging call, the GRPO groups and their advantages (:mod:`agents.training.groups`),
        the updates, the metrics. Data-parallel: each rank plays its shard of the problems; the
        judgements are gathered right after judging (the curriculum and the metrics see all of
        them) and the step's counters are reduced in :meth:`_global_counts`.
        """
        cfg = self.config
        step = self.step_count + 1
        started = time.perf_counter()

        # 1. problems: shuffled epochs over the source (verl's order), or drawn one by one through
        # the env's picker (uniform, or the curriculum's choice); after the hard_only filter
        if self.order is not None:
            all_problems = [self.train_source[t] for t in self.order.ids_for_step(step)]
        else:
            all_problems = [
                self.host.picker.pick(self.sampler, None) for _ in range(cfg.problems_per_step)
            ]
        problems = self.dist.shard(all_problems)  # this rank's slice (all of them on one process)

        # 2-3. rollouts: n_codes per problem, then n_suites per code, played as the env plays them
        gen_started = time.perf_counter()
        duels, code_gens = play_codes(
            self.host,
            self._generate,
            problems,
            cfg.n_codes,
            seed=step_seed(cfg.seed, step, "coder"),
            offset=self.dist.offset,
        )
        grid_rows: list[list[Duel]] = [[duel] for duel in duels]  # golden: the tester never moves
        suite_gens: list[Any] = []
        if cfg.has_tester:
            grid_rows, suite_gens = play_suites(
                self._generate,
                duels,
                cfg.n_suites,
                seed=step_seed(cfg.seed, step, "tester"),
                offset=self.dist.offset,
            )
        gen_seconds = time.perf_counter() - gen_started
        gen_tokens = sum(len(g.completion_ids) for g in [*code_gens, *suite_gens])

        # 4. judging: the whole (problems, codes, suites) grid in one referee call
        judge_started = time.perf_counter()
        grid = [grid_rows[p * cfg.n_codes : (p + 1) * cfg.n_codes] for p in range(len(problems))]
        judgements = judge_grid(self.referee, grid, update_book=cfg.mistake_book)
        judge_seconds = time.perf_counter() - judge_started
        # every rank's verdicts, in global problem order; once gathered, all ranks' mistake-book
        # updates of this step are committed
        all_judgements = self.dist.gather(judgements)
        # the curriculum (if any) sees every code's GT pass rate, as the env feeds it per episode
        for problem, judgement in zip(all_problems, all_judgements, strict=True):
            for rate in judgement.gt_pass_rates:
                self.host.picker.observe(problem.task_id, rate)

        # 5. advantages over the rewards (problems, codes) and (problems, codes, suites)
        coder, tester = step_samples(
            judgements,
            code_gens,
            suite_gens,
            with_tester=cfg.has_tester,
            rule=cfg.tester_group,
            normalize_std=cfg.normalize_advantages,
            skip_collapsed=cfg.skip_collapsed_groups,
        )

        # 6. updates (charts/lr is the coder's rate this update uses, read before the scheduler
        # steps)
        lr = float(self.coder.scheduler.get_last_lr()[0])
        update_started = time.perf_counter()
        losses = self._update(coder.samples, tester.samples)
        update_seconds = time.perf_counter() - update_started

        # 7. metrics: the row describes the global batch (timings are rank 0's)
        self.step_count = step
        step_seconds = time.perf_counter() - started
        gen_tokens, collapsed_groups, chosen_std = self._global_counts(gen_tokens, coder, tester)
        row = step_metrics(all_judgements, cfg.has_tester)
        row.update(losses)
        row.update(timing_metrics(step_seconds, gen_seconds, gen_tokens, judge_seconds))
        row["charts/update_seconds"] = update_seconds
        row["charts/lr"] = lr
        if self.order is not None:
            row["charts/epoch"] = float(self.order.epoch_of(step))
        row["charts/problems"] = float(len(all_problems))
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

    def _update(self, coder: list[Sample], tester: list[Sample]) -> dict[str, float]:
        """Update each player on its samples, then sync the rollout policies.

        ``code-a1``: two models and optimizers; ``self-play``: one model updated on both roles'
        samples; ``golden``: the coder only.
        """
        losses: dict[str, float] = {}
        if self.config.mode == "code-a1":
            assert self.tester is not None
            losses.update(player_stats("coder", self.coder.update(coder)))
            losses.update(player_stats("tester", self.tester.update(tester)))
        elif self.config.mode == "self-play":
            losses.update(player_stats("shared", self.coder.update(coder + tester)))
        else:
            losses.update(player_stats("coder", self.coder.update(coder)))
        self.roles.sync()
        return losses

    def _global_counts(
        self, gen_tokens: int, coder: GroupedSamples, tester: GroupedSamples
    ) -> tuple[int, dict[str, int], list[float]]:
        """The step's counters over every rank: tokens, collapsed groups, chosen spreads."""
        totals = self.dist.sum([gen_tokens, coder.collapsed, tester.collapsed])
        chosen_std = self.dist.gather(tester.chosen_std)
        return int(totals[0]), {"coder": int(totals[1]), "tester": int(totals[2])}, chosen_std

    # ------------------------------------------------------------------------------------------
    # the whole run

    def train(self) -> TrainResult:
        """Warm start, evaluate, run RL to ``config.steps``, evaluate, print the summary."""
        cfg = self.config
        history: list[dict[str, Any]] = []
        try:
            if self.dist.is_main:  # what this (re)start runs on: Python, packages, the sandbox
                record = environment_record(self.step_count, str(self.device), self.referee)
                append_environment(self.run_dir, record)
            if self.checkpoint is None:
                if self.init_from is not None:
                    sft = self.start_from(self.init_from)
                else:  # replicated: every rank runs the same seeded steps
                    sft = self.warm_start()
                if sft and self.dist.is_main:
                    write_text_atomic(self.run_dir / "warm_start.json", json.dumps(sft, indent=2))
                if cfg.eval_before_after:  # on rank 0 (the others only unshard with it)
                    self.log(f"evaluating on {len(self.eval_problems)} held-out problems ...")
                    self.before = self._evaluate_on_main(keep_codes=True)
                    self.log("before RL: " + json.dumps(rounded(self.before)))
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
                        self.log(step_line(row))
                    if self.step_count % cfg.checkpoint_every == 0 or self.step_count == cfg.steps:
                        self.save_checkpoint()
            finally:
                bar.close()
            if self.dist.enabled:
                self.check_replicas()
            after: dict[str, float] = {}
            if cfg.eval_before_after:
                after = self._evaluate_on_main()
                self._tester_on_start_codes(after)
                self.log("after RL: " + json.dumps(rounded(after)))
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
        """Compare the trained parameters of every data-parallel rank (``run_dir/replicas.json``).

        See :func:`agents.training.distributed.check_replicas`.

        Raises:
            RuntimeError: the replicas differ (on every rank, after the file is written).

        """
        models = {p.name: p.model for p in self._players()}
        return check_replicas(self.dist, models, self.step_count, self.run_dir, self.log)

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


def _fresh_run_files(run_dir: Path) -> list[Path]:
    """What a trainer's start writes into its run directory (removed if the start fails)."""
    book = "mistake_book.sqlite"
    names = ["config.json", book, f"{book}-wal", f"{book}-shm", "metrics.jsonl", "tb"]
    return [run_dir / name for name in names]


def _check_device(spec: str) -> None:
    """Raise ``ValueError`` naming ``device`` when torch cannot parse or use the device spec."""
    try:
        device = resolve_device(spec)
    except RuntimeError as exc:
        raise ValueError(f"device: {spec!r} is not a torch device ({exc})") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {spec!r}, but torch sees no CUDA device here")


def _check_model_specs(config: TrainConfig) -> None:
    """Raise ``ValueError`` naming the field when a model spec cannot name a model.

    A spec is ``builtin:SIZE`` (a known size), an existing local directory, or a hub id
    (``NAMESPACE/NAME``; whether the hub or its cache holds it is known only when it loads).
    """
    from agents.lm.models import TINY_SIZES, model_path_problem
    from agents.training.player import BUILTIN_PREFIX

    fields = ["coder_model"] + (["tester_model"] if config.separate_tester else [])
    for name in fields:
        spec = getattr(config, name)
        if spec.startswith(BUILTIN_PREFIX):
            size = spec[len(BUILTIN_PREFIX) :]
            if size not in TINY_SIZES:
                raise ValueError(
                    f"{name}: {spec!r} is not a built-in model; expected "
                    + ", ".join(f"{BUILTIN_PREFIX}{s}" for s in sorted(TINY_SIZES))
                )
            continue
        problem = model_path_problem(spec)
        if problem:
            raise ValueError(f"{name}: {spec!r}: {problem}")


def _silent(message: str) -> None:
    """The log of ranks other than 0."""
    del message
