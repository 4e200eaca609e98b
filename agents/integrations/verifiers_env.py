r"""The Code-A1 duel as a multi-agent environment of ``verifiers`` 0.4 (``vf-eval codea1-duel``).

verifiers resolves the taskset id ``codea1-duel`` by importing the top-level module
``codea1_duel`` (shipped by this package; it re-exports this module) and taking the one
:class:`vf.Taskset`, :class:`vf.Env` and :class:`vf.Harness` subclass in its ``__all__``:

* :class:`DuelTaskset`: one task per problem of ``--env.taskset.source`` (``bank``,
  ``humaneval``, ``procedural``, ``jsonl:PATH``), the coder's prompt as ``prompt``, the
  problem's JSONL record in the task data (so any worker can score it).
* :class:`DuelEnv` (config :class:`DuelEnvConfig`): two roles, ``coder`` and ``tester``, each a
  :class:`vf.AgentConfig` with its own model, endpoint, sampling and runtime
  (``--env.coder.model``, ``--env.coder.client.base-url``, ``--env.tester.model``...). ``run``
  lets the coder answer, then shows the tester the coder's code (white-box, codea1's tester
  prompt); ``finalize`` scores the pair through :class:`~agents.integrations.core.RewardCore`
  (the referee ``CodeTestDuel-v0`` uses, one ``judge_many`` call) and records each role's
  reward on its trace as ``codea1`` (the env's ``info["rewards"]``), with the referee's numbers
  as metrics and the env's end-of-episode ``info`` under ``trace.info["codea1"]``.
  ``--env.coder-trainable false`` / ``--env.tester-trainable false`` freeze a role.
* :class:`DuelChatHarness`: a one-turn chat program (verifiers' own ``null`` chat program,
  no tools). With the ``subprocess`` runtime it runs under the current interpreter (its
  dependencies are verifiers' own), so no ``uv`` environment is built; in any other runtime
  it prepares the program with ``uv`` exactly as the ``null`` harness does.

Example (both roles served locally, nothing pushed)::

    python -m agents.serve --model ./coder --port 8001 --served-model-name coder &
    python -m agents.serve --model ./tester --port 8002 --served-model-name tester &
    vf-eval codea1-duel --no-push --no-rich -n 4 -m coder \
        --client.base-url http://127.0.0.1:8001/v1 \
        --env.coder.model coder --env.coder.client.type eval \
        --env.coder.client.base-url http://127.0.0.1:8001/v1 \
        --env.tester.model tester --env.tester.client.type eval \
        --env.tester.client.base-url http://127.0.0.1:8002/v1

(``--env.<role>.client.type eval`` is needed: a role's client is a tagged union.)

The mistake book (rules 5 and 8) lives in the env process (``--env.mistake-book PATH`` for a
SQLite book shared by several processes); every finished episode updates it, as one env
episode of ``CodeTestDuel-v0`` does.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any, Literal

try:
    import verifiers.v1 as vf
except ImportError as exc:  # not an extra: verifiers pins its own stack (docs/integrations.md)
    raise ImportError(
        "the codea1-duel taskset needs verifiers 0.4: pip install verifiers==0.4.0 "
        "(see docs/integrations.md#verifiers-vf-eval-codea1-duel)"
    ) from exc
from pydantic import Field
from verifiers.v1.clients import ModelContext
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE, launch_chat_program
from verifiers.v1.runtimes import ProgramResult, Runtime
from verifiers.v1.runtimes.subprocess import SubprocessRuntime

from agents.integrations import core
from agents.integrations.core import PairResult, RewardCore, TesterRow
from codea1_env.problems import Problem, problem_from_dict, problem_to_dict

__all__ = [
    "DuelChatHarness",
    "DuelEnv",
    "DuelTaskset",
]

TASKSET_ID = "codea1-duel"
REWARD_NAME = "codea1"
_SCRIPT_PATH = ".codea1-duel-chat.py"


# ---------------------------------------------------------------------- tasks


class DuelTaskData(vf.TaskData):
    """One duel task: the problem and, for the tester's turn, the coder's answer."""

    task_id: str
    """The problem's id in its source."""
    problem: dict[str, Any]
    """The problem's record in codea1's JSONL schema."""
    role: Literal["coder", "tester"] = "coder"
    """Whose turn the task is."""
    code: str | None = None
    """The coder's whole answer (tester tasks only)."""


class DuelTask(vf.Task[DuelTaskData]):
    """A duel task. It has no rewards of its own: :meth:`DuelEnv.finalize` scores the pair."""

    @property
    def key(self) -> str:
        """Stable identity: the problem id (and the role)."""
        return f"{self.data.task_id}#{self.data.role}"


class DuelTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: which problems, and how many tests the tester is asked for."""

    source: str = "bank"
    """Problem source: ``bank``, ``humaneval``, ``procedural``, ``jsonl:PATH``."""
    num_tests: int = Field(8, ge=1)
    """How many ``assert`` lines the tester's prompt asks for (8 in Code-A1)."""


class DuelTaskset(vf.Taskset[DuelTask, DuelTasksetConfig]):
    """One coder task per problem of the source, in the source's order."""

    def load(self) -> Iterator[DuelTask]:
        """Yield the coder's task for every problem."""
        from codea1_env.problems import load_source

        for problem in load_source(self.config.source):
            yield DuelTask(
                DuelTaskData(
                    id=problem.task_id,
                    name=problem.task_id,
                    prompt=coder_prompt(problem),
                    task_id=problem.task_id,
                    problem=problem_to_dict(problem),
                ),
                self.config.task,
            )


def coder_prompt(problem: Problem) -> str:
    """The coder's prompt, as codea1's trainer and adapters render it."""
    return core.coder_prompt(problem)


def tester_prompt(problem: Problem, code_answer: str, num_tests: int = 8) -> str:
    """The tester's prompt: the problem and the code extracted from the coder's answer."""
    return core.tester_prompt(problem, code_answer, num_tests=num_tests)


# ---------------------------------------------------------------------- harness


class DuelChatHarnessConfig(vf.HarnessConfig):
    """The duel's chat harness (no knobs beyond verifiers' harness config)."""


class DuelChatHarness(vf.Harness[DuelChatHarnessConfig]):
    """verifiers' one-turn chat program, run by the current interpreter in a subprocess runtime."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    SUPPORTS_TOOL_INTERCEPTION = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def setup(self, runtime: Runtime) -> None:
        """Write the chat program (subprocess runtime) or prepare it with ``uv`` (others)."""
        if _local(runtime):
            await runtime.write(_SCRIPT_PATH, CHAT_PROGRAM_SOURCE.encode())
        else:
            await runtime.prepare_uv_script(CHAT_PROGRAM_SOURCE, self.config.resolved_env)

    async def launch(
        self,
        ctx: ModelContext,
        trace: vf.Trace,
        runtime: Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> ProgramResult:
        """Run one chat turn against the interception ``endpoint``."""
        system_prompt, prompt = self.resolve_prompt(data)
        extra = (
            [f"--tool-interception-url={tool_interception_url}"] if tool_interception_url else []
        )
        if not _local(runtime):
            return await launch_chat_program(
                CHAT_PROGRAM_SOURCE,
                self.config,
                ctx,
                trace,
                runtime,
                endpoint,
                secret,
                mcp_urls,
                system_prompt,
                prompt,
                extra_args=extra,
            )
        args = [f"--base-url={endpoint}", f"--api-key={secret}", f"--model={ctx.model}", *extra]
        if system_prompt:
            args.append(f"--system-prompt={system_prompt}")
        if mcp_urls:
            servers = {
                name: {"url": url, "timeout": self.config.tool_timeout}
                for name, url in mcp_urls.items()
            }
            args.append("--mcp-config=" + json.dumps({"mcpServers": servers}))
        if isinstance(prompt, str):
            args.append(f"--prompt={prompt}")
        elif prompt is not None:
            path = f".vf-initial-messages-{trace.id}.json"
            wire = [message_to_wire(message) for message in prompt]
            await runtime.write(path, json.dumps(wire).encode())
            args.append(f"--initial-messages-file={path}")
        return await runtime.run_program(
            [sys.executable, _SCRIPT_PATH, *args], {**self.config.resolved_env}
        )


def _local(runtime: Runtime) -> bool:
    return isinstance(runtime, SubprocessRuntime)


# ---------------------------------------------------------------------- env


def _chat_role() -> vf.AgentConfig:
    # The harness runs no model-written code (the referee's sandbox does): a local subprocess
    # is the natural default, not verifiers' hosted sandbox.
    return vf.AgentConfig(runtime=vf.SubprocessConfig(), max_turns=1)


class DuelEnvConfig(vf.EnvConfig):
    """``--env.*``: the two roles and the referee's settings (``CodeTestDuel-v0``'s defaults)."""

    coder: vf.AgentConfig = _chat_role()
    """The Code LLM's seat (``--env.coder.model``, ``--env.coder.client.base-url``, ...)."""
    tester: vf.AgentConfig = _chat_role()
    """The Test LLM's seat (``--env.tester.*``)."""
    coder_trainable: bool = True
    """False freezes the coder (its traces are not trained on)."""
    tester_trainable: bool = True
    """False freezes the tester."""
    mode: Literal["code-a1", "self-play"] = "code-a1"
    """The referee's reward mode."""
    alpha: float = Field(0.5, ge=0.0, le=1.0)
    """Weight of validity in the tester's reward."""
    k: int = Field(8, ge=1)
    """Code-A1's K."""
    mistake_book: str | None = None
    """SQLite path of the mistake book (None: in memory, for this process)."""
    update_book: bool = True
    """Apply the mistake-book updates of every scored episode (rule 8)."""
    workers: int | None = None
    """Sandbox workers (default: one per core)."""


class DuelEnv(vf.Env[DuelEnvConfig]):
    """Coder answers, tester attacks the code, the referee scores both."""

    def __init__(self, config: DuelEnvConfig) -> None:
        super().__init__(config)
        self._core: RewardCore | None = None
        self._core_lock = threading.Lock()

    @property
    def core(self) -> RewardCore:
        """The scoring core (built on first use; closed by :meth:`stop`)."""
        with self._core_lock:
            if self._core is None:
                cfg = self.config
                self._core = RewardCore(
                    getattr(self.taskset.config, "source", "bank"),
                    opponent="gt+mistake_book",  # unused: every row brings its tester's tests
                    mode=cfg.mode,
                    alpha=cfg.alpha,
                    k=cfg.k,
                    mistake_book=cfg.mistake_book,
                    workers=cfg.workers,
                    update_book=cfg.update_book,
                )
            return self._core

    async def setup(self, agents: vf.Agents) -> None:
        """Freeze the roles the config freezes."""
        agents.coder.trainable = self.config.coder_trainable
        agents.tester.trainable = self.config.tester_trainable

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        """The coder answers; then the tester, shown the coder's code, writes its tests."""
        data = _duel_data(task)
        coder = await agents.coder.run(task)
        if not coder.ok:
            return  # finalize reports the failed run; the tester is not asked
        problem = problem_from_dict(data.problem)
        answer = reply_text(coder)
        num_tests = int(getattr(self.taskset.config, "num_tests", 8))
        tester_task = DuelTask(
            data.model_copy(
                update={
                    "role": "tester",
                    "code": answer,
                    "prompt": tester_prompt(problem, answer, num_tests),
                }
            ),
            task.config,
        )
        await agents.tester.run(tester_task)

    async def finalize(self, task: vf.Task, episode: vf.Episode) -> None:
        """Score the (code, tests) pair with the referee; record both roles' rewards."""
        data = _duel_data(task)
        traces = {trace.agent.name: trace for trace in episode.traces}
        missing = [role for role in ("coder", "tester") if role not in traces]
        failed = [role for role, trace in traces.items() if not trace.ok]
        if missing or failed:
            raise ValueError(f"the duel is incomplete: missing {missing}, failed {failed}")
        coder, tester = traces["coder"], traces["tester"]
        row = TesterRow(problem_from_dict(data.problem), reply_text(coder), reply_text(tester))
        [result] = await asyncio.to_thread(self.core.score, [row])
        assert isinstance(result, PairResult)
        info = result.info
        coder.record_reward(REWARD_NAME, result.coder)
        tester.record_reward(REWARD_NAME, result.tester)
        metrics = result.metrics("tester")
        shared = {key: metrics[key] for key in ("gt_pass_rate", "n_tests", "n_failed")}
        for trace, role, other, opponent_reward in (
            (coder, "coder", "tester", result.tester),
            (tester, "tester", "coder", result.coder),
        ):
            for name, value in {**shared, "opponent_reward": opponent_reward}.items():
                trace.record_metric(f"{REWARD_NAME}/{name}", value)
            trace.info[REWARD_NAME] = {"role": role, "opponent": other, **info}

    async def stop(self) -> None:
        """Close the scoring core (its sandbox workers and mistake book)."""
        with self._core_lock:
            core, self._core = self._core, None
        if core is not None:
            await asyncio.to_thread(core.close)


def _duel_data(task: vf.Task) -> DuelTaskData:
    data = task.data
    if not isinstance(data, DuelTaskData):
        data = DuelTaskData.model_validate(data.model_dump())
    return data


def reply_text(trace: vf.Trace) -> str:
    """A role's whole answer: the content of its last assistant message, unstripped.

    The referee scores the raw text (the tester's non-printable penalty counts every
    character), so ``trace.last_reply``, which strips, is not used.
    """
    messages = trace.assistant_messages
    if not messages:
        return ""
    content = messages[-1].content
    if isinstance(content, str):
        return content
    return "".join(
        str(getattr(part, "text", "") or (part.get("text", "") if isinstance(part, dict) else ""))
        for part in content or []
    )
