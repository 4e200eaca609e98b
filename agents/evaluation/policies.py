"""Policy specs made ready for the evaluation: scripted players, trainer checkpoints, LMs.

:func:`load_policy` turns one spec into a :class:`LoadedPolicy` (its coder and/or tester);
:class:`EvalSettings` says how policies are sampled and scored. Used by
:func:`agents.evaluation.evaluate.evaluate_policies` (which re-exports these names) and the run
report's example duels.

Policy specs (``NAME=SPEC`` sets the row name; the default name is the spec):

``scripted:gt``, ``scripted:mutant[:P]``
    Scripted coders (GT program; GT or, with probability P, a mutant of it).
``scripted:boundary``, ``scripted:random``, ``scripted:trivial``
    Scripted testers.
``checkpoint:RUN_DIR`` (or ``checkpoint:RUN_DIR/checkpoints/step_N``)
    A trainer run: its coder and (modes ``code-a1``/``self-play``) tester, from the latest
    complete checkpoint. Needs ``pip install 'codea1[train]'``.
``hf:PATH``
    A transformers causal LM directory (or hub name in the cache) playing both roles.
``http:BASE_URL#MODEL``
    An OpenAI-compatible server playing both roles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codea1_env.sandbox.base import Sandbox

__all__ = [
    "EvalSettings",
    "LoadedPolicy",
    "PolicyLike",
    "check_policy_spec",
    "load_policy",
    "policy_name",
]

PolicyLike = Any
"""Anything with ``act(observations, infos) -> list[str]``."""


@dataclass
class LoadedPolicy:
    """A policy spec made ready: its coder and/or tester.

    Attributes:
        name: Row name.
        spec: The spec it came from.
        coder: Plays the coder (None: this policy writes no code).
        tester: Plays the tester (None: this policy writes no tests).
        closer: Releases what the policy holds (models, connections).

    """

    name: str
    spec: str
    coder: PolicyLike | None = None
    tester: PolicyLike | None = None
    closer: Callable[[], None] | None = None

    def close(self) -> None:
        """Release the policy's resources. Idempotent."""
        if self.closer is not None:
            self.closer()
            self.closer = None


@dataclass(frozen=True)
class EvalSettings:
    """How policies are sampled and scored.

    Attributes:
        samples: Codes (and test suites) sampled per problem.
        ks: The k values of pass@k (each at most ``samples``).
        test_k: Tests considered by validity@k and mut@k (UnLeakedTestBench's k; the paper: 5).
        temperature: Sampling temperature of LM policies (paper: 0.7).
        top_p: Nucleus sampling of LM policies (paper: 0.95).
        seed: Seed of every sampler (LM sampling, scripted policies, the candidate pool).
        candidates: Spec of the coder that fills the shared candidate pool.
        n_candidates: Candidate codes per problem (best-of-N's N).
        max_mutants: Mutants per problem (None: all).
        max_new_tokens: Token budgets ``(code, tests)`` of LM policies that are not checkpoints
            (a checkpoint uses its run's budgets).
        http_timeout: Seconds an ``http:`` policy's server gets for one request, its whole reply
            included.
        http_retries: Extra attempts of an ``http:`` policy's request after a connection error,
            a timeout or HTTP 408/409/429/5xx.

    """

    samples: int = 4
    ks: tuple[int, ...] = (1,)
    test_k: int = 5
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int = 0
    candidates: str = "scripted:mutant:0.75"
    n_candidates: int = 8
    max_mutants: int | None = 64
    max_new_tokens: tuple[int, int] = (512, 384)
    http_timeout: float = 120.0
    http_retries: int = 2

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")
        bad = [k for k in self.ks if k < 1 or k > self.samples]
        if bad:
            raise ValueError(f"pass@k needs 1 <= k <= samples ({self.samples}); got k={bad}")
        if self.test_k < 1 or self.n_candidates < 0:
            raise ValueError("test_k must be >= 1 and n_candidates >= 0")
        if not self.temperature >= 0 or not 0 < self.top_p <= 1:  # also rejects nan
            raise ValueError(
                f"temperature must be >= 0 and top_p in (0, 1], got temperature="
                f"{self.temperature!r}, top_p={self.top_p!r}"
            )
        if not 0 < self.http_timeout < float("inf") or self.http_retries < 0:  # rejects nan
            raise ValueError(
                f"http_timeout must be a finite number > 0 and http_retries >= 0, got "
                f"http_timeout={self.http_timeout!r}, http_retries={self.http_retries!r}"
            )
        if self.n_candidates:
            try:
                check_policy_spec(self.candidates)
            except ValueError as exc:
                raise ValueError(f"candidates: {exc}") from None


_SCRIPTED = ("gt", "mutant", "boundary", "random", "trivial")


def check_policy_spec(spec: str) -> None:
    """Check a policy spec's form without loading anything (so a bad one fails before work).

    Raises:
        ValueError: the spec is malformed, or names a ``checkpoint:`` directory that does not
            exist, or an ``hf:`` path that is neither a model directory nor a hub id; the
            message names it and the accepted forms.

    """
    _, _, body = spec.partition("=") if "=" in spec.split(":", 1)[0] else ("", "", spec)
    kind, _, arg = body.partition(":")
    if kind == "scripted":
        which, _, param = arg.partition(":")
        if which not in _SCRIPTED:
            raise ValueError(
                f"policy {spec!r}: unknown scripted policy {which!r}; expected gt, mutant[:P], "
                "boundary, random, trivial"
            )
        if param and which != "mutant":
            raise ValueError(f"policy {spec!r}: scripted:{which} takes no parameter")
        if param:
            try:
                p = float(param)
            except ValueError:
                p = float("nan")
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"policy {spec!r}: P of scripted:mutant:P must be in [0, 1]")
        return
    if kind == "checkpoint":
        if not arg:
            raise ValueError(f"policy {spec!r}: expected checkpoint:RUN_DIR")
        if not Path(arg).is_dir():
            raise ValueError(f"policy {spec!r}: no directory {arg}")
        return
    if kind == "hf":
        if not arg:
            raise ValueError(f"policy {spec!r}: expected hf:PATH")
        from agents.lm.models import model_path_problem

        problem = model_path_problem(arg)
        if problem:
            raise ValueError(f"policy {spec!r}: {problem}")
        return
    if kind == "http":
        url, _, model = arg.partition("#")
        if not url.startswith(("http://", "https://")) or not model:
            raise ValueError(f"policy {spec!r}: expected http:BASE_URL#MODEL (http:// or https://)")
        return
    raise ValueError(
        f"unknown policy spec {spec!r}; expected scripted:gt|mutant[:P]|boundary|random|trivial, "
        "checkpoint:RUN_DIR, hf:PATH or http:URL#MODEL (optionally NAME=SPEC)"
    )


def policy_name(spec: str) -> str:
    """The name a policy's row gets: ``NAME`` of ``NAME=SPEC``, else the spec itself."""
    name, _, body = spec.partition("=") if "=" in spec.split(":", 1)[0] else ("", "", spec)
    return name or body


def load_policy(spec: str, sandbox: Sandbox, settings: EvalSettings) -> LoadedPolicy:
    """Build the policy described by ``spec`` (see the module docstring).

    Raises:
        ValueError: an unknown spec, with the accepted forms.

    """
    check_policy_spec(spec)
    name = policy_name(spec)
    _, _, body = spec.partition("=") if "=" in spec.split(":", 1)[0] else ("", "", spec)
    kind, _, arg = body.partition(":")
    if kind == "scripted":
        return _scripted(name, body, arg, sandbox, settings)
    if kind == "checkpoint":
        return _checkpoint(name, body, Path(arg), settings)
    if kind == "hf":
        return _lm_policy(name, body, _hf_lm(arg), settings)
    if kind == "http":
        url, _, model = arg.partition("#")
        if not url or not model:
            raise ValueError(f"policy {spec!r}: expected http:BASE_URL#MODEL")
        from agents.lm.http import OpenAICompatibleLM

        lm = OpenAICompatibleLM(
            url, model, timeout=settings.http_timeout, max_retries=settings.http_retries
        )
        return _lm_policy(name, body, lm, settings)
    raise ValueError(
        f"unknown policy spec {spec!r}; expected scripted:gt|mutant[:P]|boundary|random|trivial, "
        "checkpoint:RUN_DIR, hf:PATH or http:URL#MODEL (optionally NAME=SPEC)"
    )


def _scripted(
    name: str, spec: str, arg: str, sandbox: Sandbox, settings: EvalSettings
) -> LoadedPolicy:
    from codea1_env.baselines import scripted

    which, _, param = arg.partition(":")
    seed = settings.seed
    if which == "gt":
        return LoadedPolicy(name, spec, coder=scripted.GroundTruthCoder())
    if which == "mutant":
        p = float(param) if param else 0.5
        return LoadedPolicy(name, spec, coder=scripted.MutantCoder(p_mutant=p, seed=seed))
    testers: dict[str, Callable[[], Any]] = {
        "boundary": lambda: scripted.BoundaryTester(seed=seed, sandbox=sandbox),
        "random": lambda: scripted.RandomTester(seed=seed, sandbox=sandbox),
        "trivial": lambda: scripted.TrivialTester(),
    }
    if which in testers:
        return LoadedPolicy(name, spec, tester=testers[which]())
    raise ValueError(
        f"unknown scripted policy {which!r}; expected gt, mutant[:P], boundary, random, trivial"
    )


def _hf_lm(path: str) -> Any:
    from agents.lm.transformers_lm import TransformersLM

    return TransformersLM(path)


def _lm_policy(name: str, spec: str, lm: Any, settings: EvalSettings) -> LoadedPolicy:
    from agents.players.policy import CODE_BLOCK_STOP, CoderPolicy, SamplingParams, TesterPolicy

    code_tokens, test_tokens = settings.max_new_tokens

    def params(budget: int) -> Any:
        return SamplingParams(
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_new_tokens=budget,
            stop=(CODE_BLOCK_STOP,),
            seed=settings.seed,
        )

    return LoadedPolicy(
        name,
        spec,
        coder=CoderPolicy(lm, params=params(code_tokens)),
        tester=TesterPolicy(lm, params=params(test_tokens), num_tests=settings.test_k),
    )


def _checkpoint(name: str, spec: str, path: Path, settings: EvalSettings) -> LoadedPolicy:
    try:
        from agents.lm.transformers_lm import TransformersLM
        from agents.players.policy import CoderPolicy, SamplingParams, TesterPolicy
        from agents.players.prompts import prompt_style, with_system_prompt
        from agents.training.saved_players import (
            load_saved_player,
            resolve_checkpoint,
            run_config,
        )
    except ImportError as exc:
        raise ImportError(
            f"policy {spec!r} needs the training stack: pip install 'codea1[train]'"
        ) from exc
    try:
        ckpt, run_dir = resolve_checkpoint(path)
    except ValueError as exc:
        raise ValueError(f"policy {spec!r}: {exc}") from None
    config = run_config(ckpt, run_dir)
    style = prompt_style(config.prompt_style)

    def load(role: str) -> Any:
        model, tokenizer = load_saved_player(ckpt, config, role)
        return TransformersLM(
            model, tokenizer, chat_template=style.chat_template, system_prompt=style.system(role)
        )

    def params(budget: int) -> Any:
        return SamplingParams(
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_new_tokens=budget,
            stop=style.stop,
            seed=settings.seed,
        )

    coder_lm = load("coder")
    coder = CoderPolicy(
        coder_lm,
        template=style.coder,
        params=params(config.max_code_tokens),
    )
    tester = None
    if config.mode != "golden":
        tester_lm = (
            with_system_prompt(coder_lm, style.system("tester"))
            if config.mode == "self-play"
            else load("tester")
        )
        tester = TesterPolicy(
            tester_lm,
            template=style.tester,
            params=params(config.max_test_tokens),
            num_tests=config.k,
        )
    return LoadedPolicy(name, spec, coder=coder, tester=tester)
