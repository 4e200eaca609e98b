"""SkyRL-gym envs for the two roles: ``codea1_coder`` and ``codea1_tester`` (``BaseTextEnv``).

Importing this module registers both ids with ``skyrl_gym.register`` (SkyRL-gym 0.4.0; install
with ``pip install 'codea1[skyrl]'``). Each is a one-turn text env, as SkyRL's own ``gsm8k`` and
``lcb`` envs are, built the way SkyRL builds envs,
``skyrl_gym.make(env_class, env_config=..., extras=dataset_row)``:

``codea1_coder``
    The trained policy is the Code LLM; the tester is frozen (``env_config.opponent``: ``gt``,
    ``gt+mistake_book``, ``boundary`` (default), ``random``, ``trivial`` or ``http`` with
    ``opponent_url``/``opponent_model``; see :data:`agents.integrations.options.OPPONENTS`).
    ``step(answer)`` returns the coder's reward.
``codea1_tester``
    The trained policy is the Test LLM; the coder is frozen: its answer is in the row
    (``extra_info.code``). ``step(tests)`` returns the tester's reward.

Dataset rows (SkyRL's format; :func:`agents.integrations.verl.build_rows` writes them with
``env_class``)::

    {"prompt": [{"role": "user", "content": ...}], "env_class": "codea1_coder",
     "reward_spec": {"method": "rule", "ground_truth": "bank/clamp" | "<problem JSON>"},
     "extra_info": {"code": "<frozen coder answer>"}}          # codea1_tester only

``ground_truth`` is a problem id of ``env_config.source`` (default ``bank``) or a whole problem
record in the JSONL schema (as JSON text or a dict). An empty ``prompt`` is filled in by
:meth:`init` with codea1's paper-style prompt for the role.

Scoring goes through the one referee: every env of a process with the same ``env_config`` shares
one :class:`~agents.integrations.core.RewardCore` (referee, sandbox, mistake book);
``env_config.mistake_book`` (a SQLite path) shares the book across SkyRL's processes too.
``env_config.reward_url`` (``http://HOST:PORT`` of ``codea1 serve-reward``) sends each step to
that service instead (its ``POST /v1/rows``, through :mod:`agents.integrations.reward_client`),
so that all env workers share its batching, opponent and book: the worker then builds no core,
the service's flags choose the scoring (a scoring key next to ``reward_url`` is an error), and
``ground_truth`` is resolved by the service. ``reward_timeout_s`` and ``reward_retries`` are the
client's options, as in verl's ``reward_kwargs``. An unknown ``env_config`` key is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "agents.integrations.skyrl needs SkyRL-gym: pip install 'codea1[skyrl]' (skyrl-gym>=0.4)"
    ) from exc

from agents.integrations import reward_client
from agents.integrations.core import (
    CoderRow,
    PairResult,
    RequestError,
    RewardCore,
    SharedCores,
    TesterRow,
    coder_prompt,
    problem_of_record,
    problem_record,
    tester_prompt,
)
from agents.integrations.verl import SCORE_KEYS
from codea1_env.problems import Problem

__all__ = [
    "CODER_ENV_ID",
    "TESTER_ENV_ID",
    "CoderTextEnv",
    "TesterTextEnv",
    "close_shared_cores",
    "register_envs",
    "shared_core",
]

CODER_ENV_ID = "codea1_coder"
TESTER_ENV_ID = "codea1_tester"

_CORE_KEYS = (
    "source",
    "opponent",
    "mode",
    "alpha",
    "k",
    "mistake_book",
    "seed",
    "num_tests",
    "workers",
    "opponent_url",
    "opponent_model",
    "sandbox",
)
_KNOWN_KEYS = frozenset(_CORE_KEYS) | frozenset(reward_client.REMOTE_KWARGS)
_CORES = SharedCores()


def _plain_config(env_config: Any) -> dict[str, Any]:
    """``env_config`` (None, a dict or an OmegaConf DictConfig) as a plain dict."""
    if env_config is None:
        return {}
    if hasattr(env_config, "_metadata"):  # an OmegaConf container
        from omegaconf import OmegaConf

        container = OmegaConf.to_container(env_config, resolve=True)
        return {str(k): v for k, v in container.items()} if isinstance(container, dict) else {}
    if isinstance(env_config, Mapping):
        return dict(env_config)
    raise TypeError(f"env_config must be a mapping, got {type(env_config).__name__}")


def shared_core(env_config: Mapping[str, Any] | None = None) -> RewardCore:
    """The process's :class:`RewardCore` for ``env_config`` (built on first use, then shared).

    Keys (all optional): ``source`` (``"bank"``), ``opponent`` (``"boundary"``), ``mode``,
    ``alpha``, ``k``, ``mistake_book`` (SQLite path), ``seed``, ``num_tests``, ``workers``,
    ``opponent_url``, ``opponent_model``, ``sandbox`` (a backend name or a Sandbox).
    """
    return _CORES.get({k: v for k, v in (env_config or {}).items() if k in _CORE_KEYS})


def close_shared_cores() -> None:
    """Close every shared core of this process (their sandboxes and mistake books)."""
    _CORES.close()


class _DuelTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One role of the duel as a one-turn SkyRL text env."""

    role: ClassVar[str]

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.config = _plain_config(env_config)
        extras = dict(extras or {})
        reward_spec = dict(extras.get("reward_spec") or {})
        self.extra_info = dict(extras.get("extra_info") or {})
        if "ground_truth" not in reward_spec:
            raise ValueError(
                f"{type(self).__name__}: extras['reward_spec']['ground_truth'] is required "
                "(a problem id of env_config.source or a problem record)"
            )
        self.ground_truth = reward_spec["ground_truth"]
        unknown = sorted(set(self.config) - _KNOWN_KEYS)
        if unknown:
            raise ValueError(
                f"{type(self).__name__}: unknown env_config key(s) {unknown}; known: "
                f"{sorted(_KNOWN_KEYS)}"
            )
        self.remote = reward_client.remote_scoring(self.config, _CORE_KEYS)
        self.core: RewardCore | None = None
        self.problem: Problem | None
        if self.remote is None:
            self.core = shared_core(self.config)
            try:
                self.problem = self.core.problem(self.ground_truth, "reward_spec.ground_truth")
            except RequestError as exc:
                raise ValueError(f"{type(self).__name__}: {exc}") from None
        else:  # the service resolves the problem; a record is also read here, for init's prompt
            self.problem = self._record_problem(self.ground_truth)
        self.max_turns = 1
        self.frozen_code = ""
        self._metrics: dict[str, float] = {}

    def _record_problem(self, ground_truth: Any) -> Problem | None:
        """``ground_truth`` as a problem when it is a record (dict or JSON text), else None."""
        where = "reward_spec.ground_truth"
        try:
            record = problem_record(ground_truth, where)
            return None if record is None else problem_of_record(record, where)
        except RequestError as exc:
            raise ValueError(f"{type(self).__name__}: {exc}") from None

    def init(self, prompt: Any) -> tuple[Any, dict[str, Any]]:
        """The first prompt: the row's, or codea1's prompt for the role when the row has none.

        Raises:
            ValueError: no prompt in the row, with ``reward_url`` and a ``ground_truth`` that is
                a problem id (only the service knows that problem).

        """
        if prompt:
            return prompt, {}
        if self.problem is None:
            raise ValueError(
                f"{type(self).__name__}: the row has no prompt, and with env_config.reward_url "
                "its problem id is resolved by the service: give the row its prompt "
                "(agents.integrations.verl.build_rows writes it) or the problem record as "
                "ground_truth"
            )
        return [{"role": "user", "content": self._default_prompt(self.problem)}], {}

    def _default_prompt(self, problem: Problem) -> str:
        raise NotImplementedError

    def _row(self, problem: Problem, action: Any) -> CoderRow | TesterRow:
        raise NotImplementedError

    def step(self, action: str) -> Any:
        """Score the action through the referee; the episode ends."""
        self.turns += 1
        if self.remote is not None:
            result = self._remote(action)
        else:
            assert self.core is not None and self.problem is not None
            scored = self.core.score([self._row(self.problem, action)])[0]
            if not isinstance(scored, PairResult):
                raise TypeError("a role row scores as a pair")
            result = scored
        info = result.info
        metrics = result.metrics(self.role)
        reward = metrics.pop("score")
        del metrics["scored"]
        self._metrics = {"reward": reward, **metrics}
        metadata = {
            "rewards": info["rewards"],
            "reasons": info["reasons"],
            "verdicts": info.get("verdicts", []),
            "gt_pass_rate": info.get("gt_pass_rate", 0.0),
            "tests": result.tests_text,
        }
        return BaseTextEnvStepOutput(
            observations=[], reward=float(reward), done=True, metadata=metadata
        )

    def _remote(self, action: Any) -> PairResult:
        """Score through ``codea1 serve-reward`` (its ``POST /v1/rows``, with the details).

        Raises:
            agents.integrations.reward_client.RewardServiceError: the service could not be
                reached or answered an error (a reward never silently becomes 0).

        """
        assert self.remote is not None
        info = {"role": self.role, "code": self.frozen_code} if self.role == "tester" else {}
        row = reward_client.wire_row(self.ground_truth, info, action)
        scores, details = reward_client.post_rows_detailed(self.remote, [row], SCORE_KEYS)
        return PairResult(
            scores[0]["coder_reward"],
            scores[0]["tester_reward"],
            dict(details[0]["info"]),
            str(details[0].get("tests_text", "")),
        )

    def get_metrics(self) -> dict[str, Any]:
        """The last step's numbers (SkyRL averages them over episodes)."""
        return dict(self._metrics)


class CoderTextEnv(_DuelTextEnv):
    """``codea1_coder``: the Code LLM against a frozen tester (``env_config.opponent``)."""

    role = "coder"

    def _default_prompt(self, problem: Problem) -> str:
        return coder_prompt(problem)

    def _row(self, problem: Problem, action: Any) -> CoderRow:
        return CoderRow(problem, action)


class TesterTextEnv(_DuelTextEnv):
    """``codea1_tester``: the Test LLM against a frozen coder's answer (``extra_info.code``)."""

    role = "tester"

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__(env_config, extras)
        code = self.extra_info.get("code")
        if not isinstance(code, str) or not code.strip():
            raise ValueError(
                "TesterTextEnv: extras['extra_info']['code'] is required (the frozen coder's "
                "answer)"
            )
        self.frozen_code = code

    def _default_prompt(self, problem: Problem) -> str:
        return tester_prompt(problem, self.frozen_code, num_tests=self.core_num_tests)

    @property
    def core_num_tests(self) -> int:
        """How many asserts the prompt asks for (``env_config.num_tests``, default 8)."""
        return int(self.config.get("num_tests", 8))

    def _row(self, problem: Problem, action: Any) -> TesterRow:
        return TesterRow(problem, self.frozen_code, action)


def register_envs() -> None:
    """Register ``codea1_coder`` and ``codea1_tester`` with SkyRL-gym (idempotent)."""
    for env_id, cls in ((CODER_ENV_ID, CoderTextEnv), (TESTER_ENV_ID, TesterTextEnv)):
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(id=env_id, entry_point=f"{__name__}:{cls.__name__}")


register_envs()
