"""Every TrainConfig field changes what a run does, or is listed in ``INERT_FIELDS`` with a reason.

Two checks. The static one walks every field (``dataclasses.fields``) and looks for a read of it
in the code of ``agents/`` and ``codea1_env/`` outside ``config.py``: ``cfg.x``, ``config.x`` or
``<obj>.config.x``, or a read inside a :class:`TrainConfig` method or property
(``reward_config``, ``rollout_temperature``, ...) that is itself read that way; the nested
sections (``stability``, ``limits``) are read whole and handed to the env. The behavioural one
changes a field, nested ones by their flat names (``quality_filter``, ``curriculum_start``), and
checks that an object the run builds from the config changes with it: the referee (rewards,
limits, stability), the env's game layer the trainer plays through (problem picking, the tester's
view), the sampling parameters, the optimizer and schedule, the tester's groups and the
advantages, the run directory.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.training.config import INERT_FIELDS, TrainConfig
from agents.training.grpo import group_advantages
from agents.training.player import _make_optimizer, _make_scheduler
from agents.training.roles import sampling_params
from agents.training.trainer import build_referee, game_host, resolve_run_dir, select_tester_codes
from codea1_env.game.duel import MAX_ACTION_CHARS, Duel
from codea1_env.game.spaces import observe
from codea1_env.problems import problem_from_dict

ROOT = Path(__file__).resolve().parent.parent
CONFIG_FILE = ROOT / "agents" / "training" / "config.py"
GENERIC_MEMBERS = frozenset(
    {"__post_init__", "validate", "to_dict", "from_dict", "save", "load", "diff"}
)
"""TrainConfig members that touch every field generically (validation, JSON): not a use."""
FIELDS = [f.name for f in dataclasses.fields(TrainConfig)]


def _config_reads(tree: ast.AST) -> set[str]:
    """Attribute names read on a config: ``cfg.x``, ``config.x``, ``<obj>.config.x``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id in ("cfg", "config")) or (
                isinstance(owner, ast.Attribute) and owner.attr == "config"
            ):
                names.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in ("cfg", "config")
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            names.add(node.args[1].value)
    return names


def _member_reads() -> dict[str, set[str]]:
    """Per TrainConfig method/property (not the generic ones): the ``self.x`` it reads."""
    tree = ast.parse(CONFIG_FILE.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TrainConfig")
    members: dict[str, set[str]] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name not in GENERIC_MEMBERS:
            members[node.name] = {
                a.attr
                for a in ast.walk(node)
                if isinstance(a, ast.Attribute)
                and isinstance(a.value, ast.Name)
                and a.value.id == "self"
            }
    return members


def reached_fields(reads: set[str], members: dict[str, set[str]]) -> set[str]:
    """Fields read directly, or through a member that is read (members may use members)."""
    reached = set(reads)
    changed = True
    while changed:
        changed = False
        for member, fields in members.items():
            if member in reached and not fields <= reached:
                reached |= fields
                changed = True
    return reached & set(FIELDS)


def _code_reads() -> set[str]:
    reads: set[str] = set()
    for package in ("agents", "codea1_env"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path != CONFIG_FILE:
                reads |= _config_reads(ast.parse(path.read_text(encoding="utf-8")))
    return reads


def test_every_field_is_read_or_documented_inert() -> None:
    reached = reached_fields(_code_reads(), _member_reads())
    unread = [name for name in FIELDS if name not in reached and name not in INERT_FIELDS]
    assert not unread, (
        f"TrainConfig fields that nothing outside config.py reads: {unread}; wire them into "
        "the run, remove them, or list them in agents.training.config.INERT_FIELDS with a reason"
    )


def test_inert_fields_are_fields_with_reasons() -> None:
    for name, reason in INERT_FIELDS.items():
        assert name in FIELDS, name
        assert isinstance(reason, str) and len(reason.split()) >= 3, name


def test_the_static_check_sees_reads_and_misses() -> None:
    tree = ast.parse(
        "def f(cfg, trainer):\n"
        "    a = cfg.lr + trainer.config.k\n"
        "    b = getattr(cfg, 'seed', 0)\n"
        "    return other.alpha\n"
    )
    reads = _config_reads(tree)
    assert reads == {"lr", "k", "seed"}
    members = {"reward_config": {"alpha"}, "unused": {"weight_decay"}}
    assert reached_fields(reads | {"reward_config"}, members) == {"lr", "k", "seed", "alpha"}


# ------------------------------------------------------------------------------------------------
# behavioural checks: changing the field changes an object the run builds from the config

PROBLEMS = [
    problem_from_dict(
        {
            "task_id": f"custom/inc{level}",
            "prompt": f"def inc{level}(x: int) -> int:\n",
            "entry_point": f"inc{level}",
            "canonical_solution": "    return x + 1\n",
            "tests": [f"assert inc{level}(1) == 2"],
            "difficulty": level / 10,
        }
    )
    for level in (2, 9)
]
ANSWER = (
    "```python\ndef _step(v):\n    # one more\n    return v + 1\n\n\n"
    "def inc2(x):\n    return _step(x)\n```"
)


def _referee(cfg: TrainConfig) -> tuple[Any, ...]:
    referee = build_referee(cfg)  # the local sandbox starts lazily: nothing is started here
    try:
        return (referee.reward_config, referee.limits, referee.stability)
    finally:
        referee.close()


def _game(cfg: TrainConfig) -> tuple[Any, ...]:
    referee = build_referee(cfg)
    try:
        host = game_host(cfg, list(PROBLEMS), referee)
        source = host.picker.source
        duel = Duel(PROBLEMS[0])
        host.play_code(duel, ANSWER, MAX_ACTION_CHARS)
        schedule = getattr(source, "schedule", None)
        return (type(source).__name__, tuple(source.ids()), schedule, observe(duel)["code"])
    finally:
        referee.close()


def _sampling(cfg: TrainConfig) -> tuple[Any, ...]:
    return tuple(
        sampling_params(cfg, role, seed=0, evaluation=evaluation)
        for role in ("coder", "tester")
        for evaluation in (False, True)
    )


def _optimizer(cfg: TrainConfig) -> tuple[Any, ...]:
    model = torch.nn.Linear(2, 2)
    optimizer = _make_optimizer(model, cfg, cfg.lr)
    scheduler = _make_scheduler(optimizer, cfg)
    group = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
    factors = tuple(round(scheduler.lr_lambdas[0](s), 9) for s in range(0, 40, 3))  # type: ignore[attr-defined]
    return (sorted(group.items(), key=str), factors)


REWARDS = torch.tensor([[0.0, 1.0, 0.5, 0.5], [0.2, 0.3, 0.4, 0.5], [1.0, 1.0, 0.0, 0.0]])


def _groups(cfg: TrainConfig) -> tuple[Any, ...]:
    advantages = group_advantages(REWARDS, normalize_std=cfg.normalize_advantages)
    return (select_tester_codes(REWARDS, cfg.tester_group), advantages.tolist())


def _run_dir(cfg: TrainConfig) -> str:
    return str(resolve_run_dir(cfg)).rsplit("__", 1)[0]  # without the unix time


Derive = Callable[[TrainConfig], Any]
PROBES: list[tuple[str, Any, dict[str, Any], Derive]] = [
    ("alpha", 0.3, {}, _referee),
    ("k", 5, {}, _referee),
    ("mode", "golden", {}, _referee),
    ("call_timeout_s", 1.5, {}, _referee),
    ("setup_timeout_s", 3.0, {}, _referee),
    ("memory_mb", 512, {}, _referee),
    ("quality_filter", True, {}, _referee),
    ("always_pass_after", 4, {}, _referee),
    ("book_capacity_per_problem", 8, {}, _referee),
    ("book_capacity_total", 1000, {}, _referee),
    ("book_refresh_every", 5, {}, _referee),
    ("curriculum", True, {}, _game),
    ("curriculum_start", 0.5, {"curriculum": True}, _game),
    ("curriculum_step", 0.2, {"curriculum": True}, _game),
    ("curriculum_promote_at", 0.5, {"curriculum": True}, _game),
    ("curriculum_window", 8, {"curriculum": True}, _game),
    ("hard_only", 0.5, {}, _game),
    ("anonymize_code", True, {}, _game),
    ("temperature", 0.5, {}, _sampling),
    ("top_p", 0.9, {}, _sampling),
    ("coder_temperature", 0.5, {}, _sampling),
    ("coder_top_p", 0.9, {}, _sampling),
    ("tester_temperature", 0.5, {}, _sampling),
    ("tester_top_p", 0.9, {}, _sampling),
    ("eval_temperature", 0.2, {}, _sampling),
    ("eval_tester_temperature", 0.3, {}, _sampling),
    ("eval_top_p", 0.8, {}, _sampling),
    ("max_code_tokens", 64, {}, _sampling),
    ("max_test_tokens", 64, {}, _sampling),
    ("lr", 1e-4, {}, _optimizer),
    ("weight_decay", 0.0, {}, _optimizer),
    ("adam_betas", (0.8, 0.99), {}, _optimizer),
    ("warmup_steps", 2, {}, _optimizer),
    ("lr_schedule", "linear", {}, _optimizer),
    ("steps", 30, {}, _optimizer),
    ("tester_group", "all", {}, _groups),
    ("normalize_advantages", False, {}, _groups),
    ("exp_name", "other", {}, _run_dir),
    ("runs_root", "elsewhere", {}, _run_dir),
    ("seed", 7, {}, _run_dir),
    ("output_dir", "runs/fixed", {}, _run_dir),
]


@pytest.mark.parametrize(("name", "value", "base", "derive"), PROBES, ids=[p[0] for p in PROBES])
def test_changing_the_field_changes_what_the_run_builds(
    name: str, value: Any, base: dict[str, Any], derive: Derive
) -> None:
    before = TrainConfig.from_dict(base)
    after = TrainConfig.from_dict({**base, name: value})
    assert before.value(name) != value and after.value(name) == value
    assert derive(before) != derive(after), f"changing {name} changed nothing {derive.__name__}"


def test_the_run_builds_the_same_objects_when_an_inert_field_changes() -> None:
    derives: list[Derive] = [_referee, _game, _sampling, _optimizer, _groups]
    values: dict[str, Any] = {
        "exp_name": "x",
        "runs_root": "y",
        "wandb_project": "z",
        "progress_bar": False,
    }
    assert set(values) == set(INERT_FIELDS)
    base = TrainConfig()
    for name, value in values.items():
        changed = dataclasses.replace(base, **{name: value})
        for derive in derives:
            assert derive(base) == derive(changed), (name, derive.__name__)
