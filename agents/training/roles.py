"""The two roles as the trainer samples them: prompts, sampling parameters, warm-start examples.

The trainer talks to its live models through :class:`agents.lm.transformers_lm.TransformersLM` and
renders the players' prompts with the editable templates of :mod:`agents.players.prompts` (the
paper's instructions for chat models, the compact ones for the tiny CPU models, or the authors'
own messages, with each role's system message). Every observation
comes from the env's game layer: a :class:`~codea1_env.game.duel.Duel` per (problem, code), the
coder's move played with :meth:`~codea1_env.game.duel.Duel.play_code` (move checks, code extraction,
the ``anonymize_code`` option) and observed with :func:`codea1_env.game.spaces.observe` (clipping),
so the tester reads exactly what ``CodeTestDuel-v0`` would show it for the same answer.

Warm-start examples use exactly the prompt token ids the rollouts use, and targets in the answer
format the rollouts produce: with compact prompts (which end in an opened ```` ```python ````
fence) the target is a newline, the code and a closing fence, and generation stops at that
fence; with chat prompts it is a whole fenced block followed by the end-of-sequence token.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from agents.lm.interfaces import Generation, SamplingParams
from agents.players.prompts import PromptTemplate, prompt_style, with_system_prompt
from agents.training.config import TrainConfig
from agents.training.player import Player
from agents.training.rollout_weights import RolloutWeights, rollout_dtype
from agents.training.sft import SupervisedExample
from codea1_env.game.anonymize import strip_docstrings as strip_tree_docstrings
from codea1_env.game.duel import Duel, answer_for
from codea1_env.game.spaces import observe
from codea1_env.problems.problem import Problem
from codea1_env.problems.pysource import parse_python
from codea1_env.scoring.mutation import MutantCache

__all__ = ["RolePolicies", "sampling_params", "strip_docstrings"]


def sampling_params(
    config: TrainConfig,
    role: str,
    *,
    seed: int,
    evaluation: bool = False,
    seed_offset: int = 0,
    stop: tuple[str, ...] = (),
) -> SamplingParams:
    """Sampling parameters of ``role`` for one rollout (or evaluation) call of a run.

    Rollouts use the role's temperature and top-p (``coder_*``/``tester_*``, else ``temperature``
    and ``top_p``); evaluation uses ``eval_temperature`` (the tester's
    ``eval_tester_temperature`` when set) and ``eval_top_p``. The budget is ``max_code_tokens``
    or ``max_test_tokens``. ``seed_offset``: index of the call's first prompt in the global batch
    (data-parallel rollouts), see :attr:`agents.lm.interfaces.SamplingParams.seed_offset`.
    """
    budget = config.max_code_tokens if role == "coder" else config.max_test_tokens
    temperature = config.rollout_temperature(role)
    if evaluation:
        temperature = config.eval_temperature
        if role == "tester" and config.eval_tester_temperature is not None:
            temperature = config.eval_tester_temperature
    top_p = config.eval_top_p if evaluation else config.rollout_top_p(role)
    return SamplingParams(
        temperature=temperature,
        top_p=top_p,
        max_new_tokens=budget,
        stop=stop,
        seed=seed,
        seed_offset=seed_offset,
    )


def strip_docstrings(program: str) -> str:
    """The program without its functions' docstrings (``ast.unparse``); unchanged if unparsable.

    The prompt already carries the docstring; warm-start targets without it are shorter and
    put the whole loss on the code. The program-text form of
    :func:`codea1_env.game.anonymize.strip_docstrings` with ``functions_only=True``.
    """
    try:
        tree = parse_python(program)
    except SyntaxError:  # nesting too deep to parse included
        return program
    return ast.unparse(strip_tree_docstrings(tree, functions_only=True))


class RolePolicies:
    """Samples both roles from the trainer's live models.

    Rollouts run on ``transformers`` (:class:`~agents.lm.transformers_lm.TransformersLM` over the
    live model, or over a bfloat16 copy of it when ``rollout_dtype`` asks:
    :class:`~agents.training.rollout_weights.RolloutWeights`), or on vLLM when
    ``generation_backend`` selects it (``auto``: vLLM installed and a CUDA GPU present; see
    :func:`agents.lm.vllm.select_generation_backend`). A vLLM engine loads the model spec once;
    the engines and the copies receive the trained weights after every update (:meth:`sync`).
    Prompts are always tokenized by the transformers side (warm-start examples).

    Args:
        coder: The coder's player.
        tester: The tester's player (the coder's own in self-play; ``None`` in golden mode).
        config: The run's config (templates, budgets, temperatures, ``k``, backend).
        specs: The model spec of each role (``{"coder": ..., "tester": ...}``), for vLLM.

    Raises:
        ValueError: vLLM rollouts asked for with LoRA or with a ``builtin:`` model (neither can
            be loaded into a vLLM engine).
        RuntimeError: ``generation_backend="vllm"`` where vLLM cannot run (the message says why).

    """

    def __init__(
        self,
        coder: Player,
        tester: Player | None,
        config: TrainConfig,
        specs: Mapping[str, str] | None = None,
    ) -> None:
        from agents.lm.transformers_lm import TransformersLM
        from agents.lm.vllm import select_generation_backend

        self.config = config
        style = prompt_style(config.prompt_style)
        self.templates = {
            "coder": PromptTemplate(style.coder),
            "tester": PromptTemplate(style.tester),
        }
        self.stop: tuple[str, ...] = style.stop
        chat = style.chat_template
        self.players: dict[str, Player] = {"coder": coder}
        self.encoders: dict[str, Any] = {
            "coder": TransformersLM(coder.model, coder.tokenizer, chat_template=chat)
        }
        if tester is not None:
            self.players["tester"] = tester
            self.encoders["tester"] = (
                self.encoders["coder"]
                if tester is coder
                else TransformersLM(tester.model, tester.tokenizer, chat_template=chat)
            )
        self.backend = select_generation_backend(config.generation_backend)
        if self.backend == "vllm" and config.use_lora and config.generation_backend == "auto":
            # vLLM rollouts cannot follow LoRA updates here: "auto" falls back, an explicit
            # "vllm" still raises (below) so a user who asked for it knows why.
            self.backend = "transformers"
        self.lms: dict[str, Any] = dict(self.encoders)
        self.rollout_weights: list[RolloutWeights] = []
        if self.backend == "vllm":
            self.lms = self._vllm_engines(dict(specs or {}), chat)
        elif config.rollout_dtype != "float32":
            self.lms = self._low_precision_samplers(chat)
        # each role's system message (the ``authors`` style): a per-role view of the shared LM
        self.encoders = {
            r: with_system_prompt(lm, style.system(r)) for r, lm in self.encoders.items()
        }
        self.lms = {r: with_system_prompt(lm, style.system(r)) for r, lm in self.lms.items()}
        self._mutants = MutantCache(max_entries=4096)  # warm-start mutants, per GT program

    def _one_per_player(self, make: Callable[[str, Player], Any]) -> dict[str, Any]:
        """``role -> make(role, player)``, made once per player (self-play's roles share one)."""
        made: dict[int, Any] = {}
        for role, player in self.players.items():
            if id(player) not in made:
                made[id(player)] = make(role, player)
        return {role: made[id(player)] for role, player in self.players.items()}

    def _low_precision_samplers(self, chat: bool | None) -> dict[str, Any]:
        """A sampler per role over a ``rollout_dtype`` copy of its player's model."""
        from agents.lm.transformers_lm import TransformersLM

        dtype = rollout_dtype(self.config.rollout_dtype)

        def sampler(role: str, player: Player) -> Any:
            weights = RolloutWeights(player.model, dtype)
            self.rollout_weights.append(weights)
            return TransformersLM(weights.model, player.tokenizer, chat_template=chat)

        return self._one_per_player(sampler)

    def _vllm_engines(self, specs: dict[str, str], chat: bool | None) -> dict[str, Any]:
        from agents.lm.vllm import VLLMLM

        if self.config.use_lora:
            raise ValueError(
                "vLLM rollouts with LoRA are not supported: use --generation-backend transformers"
            )
        for role in self.players:
            spec = specs.get(role, "")
            if not spec or spec.startswith("builtin:"):
                raise ValueError(
                    f"vLLM rollouts need a model directory or hub name for the {role}, got "
                    f"{spec!r}: use --generation-backend transformers"
                )
        share = 0.4 / len({id(p) for p in self.players.values()})

        def engine(role: str, player: Player) -> Any:
            return VLLMLM(
                specs[role],
                dtype="bfloat16" if self.config.bf16 else "auto",
                gpu_memory_utilization=share,
                seed=self.config.seed,
                chat_template=chat,
            )

        return self._one_per_player(engine)

    def sampling_parameters(self, player: Player) -> contextlib.AbstractContextManager[Any]:
        """Context: what sampling from ``player`` needs of its parameters (FSDP: collective).

        The full parameters of a sharded model (:meth:`Player.full_parameters`), unless the
        rollouts read a ``rollout_dtype`` copy of it, which is whole on every rank: then nothing.
        """
        if any(weights.source is player.model for weights in self.rollout_weights):
            return contextlib.nullcontext()
        return player.full_parameters()

    def sync(self) -> None:
        """Copy the trained weights into what the rollouts sample from.

        The vLLM engines, or the ``rollout_dtype`` copies; a no-op when the rollouts sample from
        the trained models themselves.
        """
        for weights in self.rollout_weights:
            weights.refresh()
        if self.backend != "vllm":
            return
        done: set[int] = set()  # one engine per player (the roles' views share it)
        for role, player in self.players.items():
            if id(player) not in done:
                self.lms[role].load_weights(player.model.named_parameters())
                done.add(id(player))

    # ------------------------------------------------------------------------------------------
    def prompt(self, role: str, obs: Mapping[str, Any]) -> str:
        """The role's prompt text for an observation."""
        return self.templates[role].render_observation(obs, num_tests=self.config.k)

    def params(
        self, role: str, *, seed: int, evaluation: bool = False, seed_offset: int = 0
    ) -> SamplingParams:
        """Sampling parameters for one call (see :func:`sampling_params`)."""
        return sampling_params(
            self.config,
            role,
            seed=seed,
            evaluation=evaluation,
            seed_offset=seed_offset,
            stop=self.stop,
        )

    def generate(
        self,
        role: str,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
        *,
        seed: int,
        evaluation: bool = False,
        seed_offset: int = 0,
    ) -> list[Generation]:
        """Sample one answer per observation (a single batched call, seeded).

        ``seed_offset`` is the index of the first observation in the global batch when a
        data-parallel rank samples its slice: each answer is then the one the whole batch
        would have given it.

        Raises:
            KeyError: a role this run does not play (the tester in golden mode).

        """
        if role not in self.lms:
            raise KeyError(f"this run has no {role} (mode {self.config.mode})")
        prompts = [self.prompt(role, obs) for obs in observations]
        params = self.params(role, seed=seed, evaluation=evaluation, seed_offset=seed_offset)
        return list(self.lms[role].generate(prompts, params))

    def texts_at(
        self, seed: int
    ) -> Callable[[str, Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]], list[str]]:
        """``generate(role, observations, infos) -> texts`` at evaluation settings and ``seed``.

        The sampler :func:`agents.training.heldout_eval.evaluate` takes.
        """

        def generate(
            role: str,
            observations: Sequence[Mapping[str, Any]],
            infos: Sequence[Mapping[str, Any]],
        ) -> list[str]:
            gens = self.generate(role, observations, infos, seed=seed, evaluation=True)
            return [g.text for g in gens]

        return generate

    # ------------------------------------------------------------------------------------------
    def answer_text(self, role: str, body: str) -> str:
        """The text a role should write for ``body`` (code or assert lines), as rollouts end."""
        body = body.strip("\n")
        if self.config.prompt_style == "compact":
            return "\n" + body + "\n```"
        eos = self.players[role].tokenizer.eos_token or ""
        return "```python\n" + body + "\n```" + eos

    def _candidate_code(self, problem: Problem, rng: np.random.Generator, share: float) -> str:
        """The GT code, or with probability ``share`` one of its AST mutants (no draw at 0)."""
        program = problem.gt_program.strip("\n")
        if share <= 0.0 or rng.random() < 1.0 - share:  # the GT (a draw below 1 - share)
            return program
        pool = self._mutants.get(program)
        return pool[int(rng.integers(len(pool)))].source if pool else program

    def _warm_start_tests(self, problem: Problem, rng: np.random.Generator) -> str:
        """The tester's warm-start target: GT asserts (see ``sft_suite_size``)."""
        tests = list(problem.tests)
        size = self.config.sft_suite_size
        if size is None:
            return "\n".join(tests[: self.config.k])
        count = min(len(tests), int(rng.integers(size[0], size[1] + 1)))
        keep = sorted(rng.choice(len(tests), size=count, replace=False).tolist())
        return "\n".join(tests[i] for i in keep)

    def supervised_example(
        self, role: str, problem: Problem, rng: np.random.Generator
    ) -> SupervisedExample:
        """A warm-start example: the GT program (coder) or the GT asserts (tester).

        The coder's target is the GT program, or with probability ``sft_coder_mutant_share`` an
        AST mutant of it (a bug to find). The tester's target is the first ``k`` of the
        problem's GT ``assert`` lines, or a random subset of ``sft_suite_size`` of them (valid by
        construction: the GT passes them), in their order (the procedural family lists its
        inputs in ascending order around the thresholds, a regular pattern a tiny model picks
        up), written against the GT code or (half the time) a mutant of it. The observations
        are the env's: the candidate is played as the coder's move, so the tester learns on the
        view it will be shown (anonymized when ``anonymize_code`` is on).
        """
        duel = Duel(problem)
        if role == "coder":
            obs = observe(duel)
            share = self.config.sft_coder_mutant_share
            body = strip_docstrings(self._candidate_code(problem, rng, share))
        else:
            candidate = answer_for(self._candidate_code(problem, rng, 0.5))
            duel.play_code(candidate, anonymize_code=self.config.stability.anonymize_code)
            obs = observe(duel)
            body = self._warm_start_tests(problem, rng)
        lm = self.encoders[role]
        tokenizer = self.players[role].tokenizer
        prompt_ids = lm.encode_prompt(self.prompt(role, obs))
        target_ids = tokenizer(self.answer_text(role, body), add_special_tokens=False)["input_ids"]
        return SupervisedExample(tuple(prompt_ids), tuple(target_ids))
