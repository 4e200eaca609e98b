"""GRPO groups of one step: which completions form a group, and their advantages.

The referee's rewards of a step come as two tensors: the coder's ``(problems, codes)`` and the
tester's ``(problems, codes, suites)``. The coder's group is one problem's codes. The tester's
group is the suites written against one code, and :func:`select_tester_codes` picks which codes
give a group (``update_n``, the paper: only the code whose suite rewards vary most). A group
whose texts are identical or whose rewards are all equal carries no signal (:func:`collapsed`); it
is counted, and skipped when ``skip_collapsed_groups`` is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("agents.training.groups needs PyTorch: pip install 'codea1[train]'") from exc

from agents.training.grpo import group_advantages
from agents.training.rollout import Sample

__all__ = [
    "GroupedSamples",
    "coder_samples",
    "collapsed",
    "select_tester_codes",
    "step_samples",
    "suite_spread",
    "tester_samples",
]


@dataclass
class GroupedSamples:
    """One role's samples of a step, with what the group selection saw.

    Attributes:
        samples: The completions to learn from, each with its advantage.
        collapsed: Groups without signal (identical texts or equal rewards).
        chosen_std: For the tester, the suite-reward spread of each chosen code.

    """

    samples: list[Sample] = field(default_factory=list)
    collapsed: int = 0
    chosen_std: list[float] = field(default_factory=list)


def suite_spread(rewards: torch.Tensor) -> torch.Tensor:
    """The standard deviation of each code's suite rewards (``(codes, suites)`` -> ``(codes,)``).

    The biased (population) standard deviation, as the authors' trainer computes it to pick the
    tester's code (``torch.std(..., unbiased=False)`` in ``trainer_a1.py``), so the logged
    ``tester/update_n_std`` is their figure; the unbiased one would be ``sqrt(n / (n - 1))``
    times larger and pick the same code. Zero for every code when there is a single suite per
    code.
    """
    if rewards.shape[1] < 2:
        return torch.zeros(rewards.shape[0])
    return rewards.float().std(dim=1, correction=0)


def select_tester_codes(rewards: torch.Tensor, rule: str = "update_n") -> list[int]:
    """Pick the codes whose suites form the tester's GRPO groups, for one problem.

    Args:
        rewards: ``(n_codes, n_suites)`` tester rewards (``rewards[i][j]``: suite ``j``
            written against code ``i``).
        rule: ``"update_n"`` (the paper): only the code whose suite rewards have the largest
            standard deviation (:func:`suite_spread`); on ties the first such code (the lowest
            index), where the authors' ``torch.topk`` on CPU returns an implementation-defined
            one of the tied codes (``docs/deviations.md``); ``"all"``: every code.

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
    return [int(torch.argmax(suite_spread(rewards)).item())]


def collapsed(texts: Sequence[str], rewards: Sequence[float]) -> bool:
    """True when a GRPO group carries no signal: identical texts or equal rewards."""
    return len(set(texts)) <= 1 or max(rewards) - min(rewards) < 1e-12


def _sample(gen: Any, advantage: float, role: str) -> Sample:
    return Sample(list(gen.prompt_ids), list(gen.completion_ids), float(advantage), role)


def coder_samples(
    rewards: torch.Tensor,
    gens: Sequence[Any],
    *,
    normalize_std: bool = True,
    skip_collapsed: bool = False,
) -> GroupedSamples:
    """The coder's samples: one group per problem, its codes.

    Args:
        rewards: ``(problems, codes)`` coder rewards.
        gens: The coder's generations, problem-major (``problems * codes`` of them), each with
            ``text``, ``prompt_ids`` and ``completion_ids``.
        normalize_std: Divide advantages by the group's standard deviation.
        skip_collapsed: Zero the advantages of a collapsed group.

    Returns:
        Every code as a sample, and the number of collapsed groups.
    """
    n_codes = rewards.shape[1]
    advantages = group_advantages(rewards, normalize_std=normalize_std)
    out = GroupedSamples()
    for p_index in range(rewards.shape[0]):
        first = p_index * n_codes
        texts = [g.text for g in gens[first : first + n_codes]]
        if collapsed(texts, rewards[p_index].tolist()):
            out.collapsed += 1
            if skip_collapsed:
                advantages[p_index] = 0.0
    flat = advantages.flatten().tolist()
    out.samples = [_sample(g, a, "coder") for g, a in zip(gens, flat, strict=True)]
    return out


def tester_samples(
    rewards: torch.Tensor,
    gens: Sequence[Any],
    *,
    rule: str = "update_n",
    normalize_std: bool = True,
    skip_collapsed: bool = False,
) -> GroupedSamples:
    """The tester's samples: per problem, the suites of the codes :func:`select_tester_codes` picks.

    Args:
        rewards: ``(problems, codes, suites)`` tester rewards.
        gens: The tester's generations, in the same order (``problems * codes * suites``).
        rule: The ``tester_group`` rule.
        normalize_std: Divide advantages by the group's standard deviation.
        skip_collapsed: Leave out collapsed groups.

    Returns:
        The chosen groups' suites as samples, the collapsed groups, the chosen codes' spreads.
    """
    _, n_codes, n_suites = rewards.shape
    out = GroupedSamples()
    for p_index in range(rewards.shape[0]):
        problem = rewards[p_index]
        spread = suite_spread(problem)
        for c_index in select_tester_codes(problem, rule):
            out.chosen_std.append(float(spread[c_index]))
            advantages = group_advantages(problem[c_index], normalize_std=normalize_std)
            base = (p_index * n_codes + c_index) * n_suites
            group = gens[base : base + n_suites]
            if collapsed([g.text for g in group], problem[c_index].tolist()):
                out.collapsed += 1
                if skip_collapsed:
                    continue
            out.samples.extend(
                _sample(g, a, "tester") for g, a in zip(group, advantages.tolist(), strict=True)
            )
    return out


def step_samples(
    judgements: Sequence[Any],
    code_gens: Sequence[Any],
    suite_gens: Sequence[Any],
    *,
    with_tester: bool,
    rule: str = "update_n",
    normalize_std: bool = True,
    skip_collapsed: bool = False,
) -> tuple[GroupedSamples, GroupedSamples]:
    """Both roles' samples of a step, from its judgements (one per problem).

    Args:
        judgements: The step's judgements, each with ``coder_rewards`` (per code) and
            ``tester_rewards`` (per code, per suite).
        code_gens: The coder's generations (see :func:`coder_samples`).
        suite_gens: The tester's generations (see :func:`tester_samples`).
        with_tester: Whether the tester plays (``False``: its samples are empty).
        rule: The ``tester_group`` rule.
        normalize_std: Divide advantages by the group's standard deviation.
        skip_collapsed: Zero (coder) or leave out (tester) collapsed groups.

    Returns:
        ``(coder, tester)``: :func:`coder_samples` and :func:`tester_samples` of the rewards.
    """
    coder_rewards = torch.tensor([list(j.coder_rewards) for j in judgements])
    coder = coder_samples(
        coder_rewards, code_gens, normalize_std=normalize_std, skip_collapsed=skip_collapsed
    )
    tester = GroupedSamples()
    if with_tester:
        tester_rewards = torch.tensor([[list(r) for r in j.tester_rewards] for j in judgements])
        tester = tester_samples(
            tester_rewards,
            suite_gens,
            rule=rule,
            normalize_std=normalize_std,
            skip_collapsed=skip_collapsed,
        )
    return coder, tester
