"""``CodeTestDuel-v0``: the two-player Code-A1 duel as a Gymnasium environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.error import ResetNeeded

from codea1_env.game.duel import MAX_ACTION_CHARS, Duel, Role
from codea1_env.game.host import DuelHost
from codea1_env.game.spaces import action_space, observation_space, observe
from codea1_env.mistake_book import MistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Limits, Sandbox
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions

__all__ = ["CodeTestDuelEnv"]


class CodeTestDuelEnv(gym.Env[dict[str, Any], str]):
    r"""A Code LLM and a Test LLM duel over one programming problem (Code-A1).

    ## Description

    Each episode is one problem. The **coder** moves first and answers with a program (any text;
    the code is taken from its ```python block). The **tester** then sees the problem *and the
    coder's program* (white-box) and answers with unit tests, lines of the form
    ``assert entry_point(args) == expected``. Both moves are scored together by the referee, which
    runs everything in a hardened sandbox: the ground-truth (GT) solution supplies the true
    outputs for the tester's inputs, so the tester chooses inputs and is rewarded for valid tests
    that the code fails; the coder is rewarded for passing them and the replayed tests from the
    per-problem *mistake book*. Two separate policies should play the two roles: one model playing
    both learns to collude (the ``"self-play"`` reward mode exists as the paper's comparison row).

    ## Action Space

    ``Text`` over printable ASCII (``max_length`` = ``max_action_chars``). Any string is a legal
    move; a move that cannot score (empty, undecodable bytes, longer than ``max_action_chars``,
    no code, syntax errors, no parsable ``assert``) scores 0 and ``info["reasons"]`` says why,
    except that a tester's reward also loses the share of its text's characters outside
    ``string.printable``, whether or not it scored (the authors' rule 7, docs/deviations.md): a
    tester text of CJK characters only scores -1. The env never raises on a policy's text.

    ## Observation Space

    ``Dict``:

    | key           | space               | meaning                                              |
    |---------------|---------------------|------------------------------------------------------|
    | ``role``      | ``Discrete(2)``     | whose turn: 0 coder, 1 tester                         |
    | ``prompt``    | ``Text``            | the problem prompt (signature and docstring)          |
    | ``entry_point`` | ``Text``          | the function the tests must call                      |
    | ``code``      | ``Text``            | tester only: the coder's program; ``""`` for the coder |

    ## Rewards

    ``step`` returns the acting player's reward: 0.0 for the coder's move (its reward depends on
    the tests still to come) and the tester's reward for the tester's move. At the end,
    ``info["rewards"] == {"coder": float, "tester": float}``. With ``alpha`` and ``k`` (K):

    * coder: mean of the pass rate on every kept (GT-corrected) test and on the replayed
      mistake-book tests (whichever exist; 0 if none);
    * tester: ``alpha * R_val + (1 - alpha) * R_adv - penalty`` where
      ``R_val = clip(min(n_kept / K, 1 - n_invalid / K), 0, 1)``, ``R_adv`` is the code's
      failures among the first K kept tests over K (relative to the mistake book when it has
      entries: ``(gen_fail_rate - mb_fail_rate + 1) / 2``; 0 without kept tests), and the
      penalty is the share of the response's characters not in ``string.printable``; the
      ``alpha`` part is 0 when the code does not run. The authors' rules exactly, see
      docs/deviations.md.

    ``reward_mode="golden"``: no tester; the episode ends after the coder's move and the coder
    is rewarded by its GT-test pass rate (the paper's "Golden Tests" row).

    ## Starting State

    ``reset`` draws a problem from the source with ``self.np_random``;
    ``reset(options={"problem_id": "bank/clamp"})`` picks one by id and
    ``reset(options={"problem": {...}})`` plays a custom problem given as one record of the JSONL
    schema (``task_id``, ``prompt``, ``entry_point``, ``canonical_solution``, ``tests``; see
    :mod:`codea1_env.problems.schema`).

    The mistake book is the env's memory across episodes, as in Code-A1: every scored episode
    updates it, and later episodes of the same problem replay its top entries against the code,
    so ``reset(seed=s)`` fixes the problem drawn but not the book. Two fresh envs given the same
    seeds and actions score alike; ``mistake_book=False`` turns the book off (nothing replayed,
    nothing recorded), so every episode scores as if it were the first.

    ## Episode End

    Terminated after the tester's move (after the coder's in golden mode). Never truncated.
    ``step`` before ``reset`` or after the end raises :class:`gymnasium.error.ResetNeeded`.

    ## Info

    Every step: ``task_id``, ``role`` (whose turn is *next*, or ``"done"``), ``problem`` (the
    :class:`~codea1_env.problems.Problem`). At the end also: ``rewards``, ``reasons``, ``tests``
    (the kept tests as scored, with GT expectations), ``verdicts`` (per test: valid, passed,
    status, error), ``rejected`` (asserts that did not count, with reasons),
    ``mistake_book_verdicts``, ``gt_pass_rate`` and, when a suite was judged (every mode but
    golden, also when the tester's text held no test: then both counts are 0),
    ``tester_reward_parts``, ``n_kept`` and ``n_invalid`` (rule 3 of docs/deviations.md: the
    counts ``R_val`` comes from).

    ## Arguments

    ```python
    import gymnasium as gym
    import codea1_env  # registers the ids

    env = gym.make(
        "CodeTestDuel-v0",
        source="bank",            # "bank" | "humaneval" | "procedural" | "jsonl:PATH" | a source
        reward_mode="code-a1",    # "code-a1" | "golden" | "self-play"
        alpha=0.5, k=8,           # Code-A1's reward weights
        limits=None,              # codea1_env.sandbox.Limits or a dict of its fields
        mistake_book=None,        # None (in memory) | path to a SQLite file | a MistakeBook
                                  # | False (no mistake book)
        sandbox=None,             # None/"local" | "docker" | "ray" | a Sandbox instance
    )
    ```

    ``referee=`` shares one :class:`~codea1_env.scoring.referee.Referee` (sandbox, rewards, mistake
    book) between several envs and a trainer; it overrides the scoring arguments.
    ``stability=`` takes :class:`~codea1_env.stability.StabilityOptions` (or a dict of them):
    curriculum, hard-problems-only, code anonymization, a bounded and refreshed mistake book,
    and trivial-test filtering; all off by default, as in the paper.

    ## Vectorized environment

    ``gym.make_vec("CodeTestDuel-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    returns :class:`~codea1_env.envs.vector.CodeTestDuelVectorEnv`, whose step scores all sub-envs
    in one sandbox call (``group_size=8`` gives 8 sub-envs the same problem, as GRPO groups do).

    ## Version History

    * v0: initial version.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(
        self,
        source: Any = "bank",
        *,
        reward_mode: str = "code-a1",
        alpha: float = 0.5,
        k: int = 8,
        limits: Limits | Mapping[str, Any] | None = None,
        mistake_book: MistakeBook | str | os.PathLike[str] | bool | None = None,
        sandbox: Sandbox | str | None = None,
        referee: Referee | None = None,
        stability: StabilityOptions | Mapping[str, Any] | None = None,
        max_action_chars: int = MAX_ACTION_CHARS,
        render_mode: str | None = None,
    ) -> None:
        self.render_mode = check_render_mode(self, render_mode)
        self.max_action_chars = int(max_action_chars)
        self.observation_space = observation_space()
        self.action_space = action_space(self.max_action_chars)
        self.host = DuelHost(
            source,
            RewardConfig(alpha=alpha, k=k, mode=reward_mode),
            limits,
            mistake_book,
            sandbox,
            referee,
            stability,
        )
        self.referee = self.host.referee
        self._duel: Duel | None = None

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a duel on a problem drawn from the source (or given in ``options``)."""
        super().reset(seed=seed)
        self._duel = self.host.new_duel(self.np_random, options)
        print_if_human(self._duel, self.render_mode)
        return observe(self._duel), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """Play the current role's move (see the class docstring)."""
        duel = self._duel
        if duel is None:
            raise ResetNeeded("CodeTestDuelEnv: call reset() before step()")
        if duel.finished:
            raise ResetNeeded("CodeTestDuelEnv: the episode is over; call reset()")
        mover = "coder" if duel.role is Role.CODER else "tester"
        if mover == "coder":
            self.host.play_code(duel, action, self.max_action_chars)  # a fixed tester answers
        else:
            duel.play_tests(action, self.max_action_chars)
        reward = self.host.score([duel])[0].rewards[mover] if duel.finished else 0.0
        print_if_human(self._duel, self.render_mode)
        return observe(duel), reward, duel.finished, False, self._info()

    def render(self) -> str | None:
        """Return (``"ansi"``) or print (``"human"``) the duel as text.

        In ``"human"`` mode :meth:`reset` and :meth:`step` print it too, as Gymnasium's human
        mode has it (no ``render()`` call needed).
        """
        return show_duel(self._duel, self.render_mode)

    def close(self) -> None:
        """Stop the sandbox if this env started it."""
        self.host.close()

    # ------------------------------------------------------------------ helpers
    @property
    def problem(self) -> Problem | None:
        """The current problem (None before the first reset)."""
        return self._duel.problem if self._duel is not None else None

    @property
    def duel(self) -> Duel | None:
        """The current duel state."""
        return self._duel

    def _info(self) -> dict[str, Any]:
        info = duel_info(self._duel)
        if self._duel is not None and self._duel.finished:
            info.update(self.host.curriculum_state())
        return info


def duel_info(duel: Duel | None) -> dict[str, Any]:
    """The ``info`` dict for the current state of ``duel``."""
    if duel is None:
        return {}
    role = duel.role.label if duel.role is not None else "done"
    info: dict[str, Any] = {"task_id": duel.problem.task_id, "role": role, "problem": duel.problem}
    if duel.role is Role.TESTER and duel.reasons["coder"]:
        info["reasons"] = {"coder": duel.reasons["coder"], "tester": ""}
    if duel.outcome is not None:
        info.update(duel.outcome.info())
    return info


def check_render_mode(view: Any, render_mode: str | None) -> str | None:
    """``render_mode`` when ``view``'s ``metadata["render_modes"]`` has it (or it is None).

    Gymnasium's ``make`` checks this for registered ids; every view checks it itself, so that a
    view built directly (or through PettingZoo, or a vector env) refuses an unknown mode too.

    Raises:
        ValueError: naming the view and its modes.

    """
    modes = list(view.metadata.get("render_modes", ()))
    if render_mode is not None and render_mode not in modes:
        raise ValueError(
            f"{type(view).__name__}: render_mode must be None or one of {modes}, "
            f"got {render_mode!r}"
        )
    return render_mode


def print_if_human(duel: Duel | None, render_mode: str | None) -> None:
    """Print the duel in ``"human"`` mode: what every view's ``reset`` and ``step`` do then."""
    if render_mode == "human":
        show_duel(duel, render_mode)


def show_duel(duel: Duel | None, render_mode: str | None) -> str | None:
    """Render a duel for an env's ``render``: the text (``"ansi"``), or print it (``"human"``)."""
    text = render_duel(duel)
    if render_mode == "human":
        print(text)
        return None
    return text


def render_duel(duel: Duel | None) -> str:
    """A readable text picture of a duel."""
    if duel is None:
        return "(no duel: call reset())"
    turn = duel.role.label if duel.role is not None else "done"  # Role.CODER is 0
    lines = [f"=== {duel.problem.task_id}  (turn: {turn})"]
    lines.append(duel.problem.prompt.rstrip())
    if duel.role is not Role.CODER:
        lines += ["--- coder's program", duel.program.rstrip() or "(none)"]
    if duel.outcome is not None:
        info = duel.outcome.info()
        lines.append("--- tests (GT expectations)")
        for v in info["verdicts"]:
            mark = "PASS" if v["passed"] else "FAIL"
            valid = "valid" if v["valid"] else "invalid"
            lines.append(f"  [{mark}] ({valid}) {v['test']}")
        for r in info["rejected"]:
            lines.append(f"  [----] ({r['reason']}) {r['source']}")
        rewards = info["rewards"]
        lines.append(
            f"--- rewards: coder {rewards['coder']:.3f}  tester {rewards['tester']:.3f}  "
            f"(GT pass rate {info['gt_pass_rate']:.2f})"
        )
        for role, reason in info["reasons"].items():
            if reason:
                lines.append(f"  {role}: {reason}")
    return "\n".join(lines)
