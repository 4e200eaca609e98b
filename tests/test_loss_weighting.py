"""``loss_weighting`` and ``micro_batch_max_tokens``: codea1's exact global token mean, or verl's.

Deviation 20 of docs/deviations.md: the authors' verl computes each micro-batch's loss as its own
token mean and weights it by its share of the GPU's samples (``len(micro) / mini_per_gpu``),
gradients averaged over GPUs, with micro-batches formed by a token budget (``use_dynamic_bsz``).

* ``global`` gives the same gradient whatever the micro-batching (fixed sizes, token budgets);
* ``authors`` gives the gradient of ``sum_m token_mean_m(pg + kl_coef * kl) * |m| / |mini|``,
  computed here by hand (one forward per sample, no padding), differs from ``global`` when the
  micro-batches' completions differ in length and equals it when every completion is as long;
* the token-budget partition: every sample once, ``ceil(tokens / budget)`` groups (at most one
  per sample), an over-long sample alone, balanced, deterministic, one role per group; each
  group runs in forward passes padded within the budget, which do not change the gradient;
* bad values are refused; the flags reach the config;
* two gloo ranks: ``authors`` averages the ranks' gradients, ``global`` sums them to the
  single process's.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import random
import socket
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.commands.train_cli import add_arguments, build_config, main
from agents.training import player as player_module
from agents.training.config import TrainConfig, from_preset
from agents.training.player import Player, build_player
from agents.training.rollout import (
    Sample,
    balanced_partition,
    budget_groups,
    effective_length,
    micro_batches,
    pack,
    padded_passes,
)

ROOT = Path(__file__).resolve().parent.parent
KL_COEF = 0.5


# ---------------------------------------------------------------- helpers


def _player(**overrides: Any) -> Player:
    """A nano player whose weights have moved away from its frozen reference (so KL matters)."""
    cfg = from_preset(
        "nano", kl_coef=KL_COEF, warmup_steps=0, max_grad_norm=0.0, steps=4, **overrides
    )
    player = build_player(
        "coder", "builtin:nano", cfg, seed=0, lr=cfg.lr, device=torch.device("cpu")
    )
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in player.model.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * 0.02)
    return player


def _grads(player: Player, samples: list[Sample], **config: Any) -> dict[str, torch.Tensor]:
    """The gradient ``Player.update`` steps with (clipping off), under ``config`` changes."""
    player.config = dataclasses.replace(player.config, **config)
    captured: dict[str, torch.Tensor] = {}

    def record(*_args: Any, **_kwargs: Any) -> None:
        for name, p in player.model.named_parameters():
            if p.grad is not None:
                captured[name] = p.grad.detach().clone()

    player.optimizer.step = record  # type: ignore[method-assign, assignment]
    with warnings.catch_warnings():  # torch: "optimizer.step() has been overridden"
        warnings.simplefilter("ignore", UserWarning)
        player.update(copy.deepcopy(samples))  # the weights stay: the step only records
    return captured


def _distance(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """``|a - b| / |b|`` over all parameters."""
    assert a.keys() == b.keys()
    diff = sum(float((a[n] - b[n]).pow(2).sum()) for n in a)
    norm = sum(float(b[n].pow(2).sum()) for n in b)
    return math.sqrt(diff / norm)


def _samples(
    completion_lengths: list[int], prompt_lengths: list[int] | None = None, start: int = 0
) -> list[Sample]:
    """Samples of these lengths; the ``i``-th's tokens and advantage are a function of ``i``."""
    prompts = prompt_lengths or [3] * len(completion_lengths)
    advantages = [1.0, -0.5, 0.8, -1.2, 0.3, -0.7, 1.1, -0.2]
    return [
        Sample(
            [10 + (j + i) % 7 for j in range(p)],
            [40 + (5 * i + j) % 23 for j in range(c)],
            advantages[i % len(advantages)],
        )
        for i, (p, c) in enumerate(zip(prompts, completion_lengths, strict=True), start)
    ]


def _hand_authors_grads(
    player: Player, chunks: list[list[Sample]], mini_size: int
) -> dict[str, torch.Tensor]:
    """By hand: sum over micro-batches of (token mean of pg + kl_coef * kl) * |m| / |mini|."""
    temperature = player.config.rollout_temperature("coder")
    model, reference = player.model, player.reference
    assert reference is not None
    model.train()
    model.zero_grad(set_to_none=True)
    total = torch.zeros(())
    for chunk in chunks:
        pg_sum = torch.zeros(())
        kl_sum = torch.zeros(())
        tokens = 0
        for s in chunk:
            ids = torch.tensor([s.prompt_ids + s.completion_ids])
            p, c = len(s.prompt_ids), s.n_tokens
            target = torch.tensor(s.completion_ids)
            logits = model(input_ids=ids).logits[0, p - 1 : p - 1 + c].float() / temperature
            logp = torch.log_softmax(logits, -1).gather(-1, target[:, None])[:, 0]
            with torch.no_grad():
                ref_logits = reference(input_ids=ids).logits[0, p - 1 : p - 1 + c].float()
                ref = torch.log_softmax(ref_logits / temperature, -1).gather(-1, target[:, None])
            ratio = torch.exp(logp - logp.detach())  # one on-policy epoch: old = new
            pg_sum = pg_sum + (-s.advantage * ratio).sum()
            delta = ref[:, 0] - logp
            kl_sum = kl_sum + (torch.exp(delta) - delta - 1.0).sum()
            tokens += c
        total = total + (pg_sum / tokens + KL_COEF * kl_sum / tokens) * (len(chunk) / mini_size)
    total.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    model.eval()
    return grads


# ---------------------------------------------------------------- (a) global: packing-free


@pytest.mark.parametrize("aggregation", ["token-mean", "seq-mean-token-mean"])
def test_global_weighting_does_not_depend_on_the_micro_batching(aggregation: str) -> None:
    player = _player(loss_aggregation=aggregation)
    samples = _samples([1, 2, 7, 3, 5, 1], [3, 6, 2, 4, 3, 5])
    reference = _grads(player, samples, micro_batch_size=8)
    assert reference
    for size in (1, 2, 4):
        assert _distance(_grads(player, samples, micro_batch_size=size), reference) < 1e-5
    for budget in (1, 9, 14, 30, 10_000):
        got = _grads(player, samples, micro_batch_max_tokens=budget)
        assert _distance(got, reference) < 1e-5, budget


# ---------------------------------------------------------------- (b) authors: verl's weighting


def test_authors_weighting_is_the_sample_share_of_micro_batch_token_means() -> None:
    player = _player()
    # completions 1, 1, 6, 6 tokens (same prompts): size-2 chunks {0, 1} and {2, 3}
    samples = _samples([1, 6, 1, 6])
    got = _grads(player, samples, loss_weighting="authors", micro_batch_size=2)
    expected = _hand_authors_grads(player, [[samples[0], samples[2]], [samples[1], samples[3]]], 4)
    assert _distance(got, expected) < 1e-4
    # the global token mean weighs the long chunk's tokens as much as the short chunk's: differs
    global_ = _grads(player, samples, loss_weighting="global", micro_batch_size=2)
    assert _distance(global_, got) > 1e-2
    # one micro-batch holding the whole mini-batch: its token mean is the global one
    whole = _grads(player, samples, loss_weighting="authors", micro_batch_size=4)
    assert _distance(whole, global_) < 1e-5


def test_authors_weighting_under_a_token_budget() -> None:
    player = _player(loss_weighting="authors")
    samples = _samples([1, 2, 7, 3, 5, 1], [3, 6, 2, 4, 3, 5])
    budget = 12  # 42 tokens: 4 micro-batches
    chunks = list(micro_batches(samples, 8, max_tokens=budget))
    assert len(chunks) == 4
    # some micro-batch pads past the budget, so it runs in several passes: the weighting is
    # still the micro-batch's own
    padded = [len(c) * max(effective_length(s) for s in c) for c in chunks]
    assert max(padded) > budget, padded
    assert sum(len(padded_passes(c, budget)) for c in chunks) > len(chunks)
    got = _grads(player, samples, micro_batch_max_tokens=budget)
    assert _distance(got, _hand_authors_grads(player, chunks, len(samples))) < 1e-4
    assert _distance(_grads(player, samples, loss_weighting="global"), got) > 1e-2


def test_authors_equals_global_when_every_completion_is_as_long() -> None:
    player = _player()
    samples = _samples([4, 4, 4, 4, 4], [2, 7, 3, 5, 4])  # prompts differ, completions do not
    for micro in ({"micro_batch_size": 2}, {"micro_batch_max_tokens": 20}):
        authors = _grads(player, samples, loss_weighting="authors", **micro)
        global_ = _grads(player, samples, loss_weighting="global", **micro)
        assert all(torch.equal(authors[n], global_[n]) for n in global_), micro


def test_authors_logs_the_weighted_statistics() -> None:
    player = _player(loss_weighting="authors", micro_batch_size=2)
    stats = player.update(_samples([1, 6, 1, 6]))
    assert stats["skipped_updates"] == 0.0 and math.isfinite(stats["grad_norm"])
    assert stats["ratio_mean"] == pytest.approx(1.0)  # sample-share weights sum to one
    assert stats["kl"] > 0.0 and stats["tokens"] == 14.0


# ---------------------------------------------------------------- (c) the partition


def test_budget_groups_is_ceil_capped_by_the_samples() -> None:
    assert budget_groups([5, 5, 5], 10) == 2
    assert budget_groups([5, 5, 5], 15) == 1
    assert budget_groups([5, 5, 5], 1000) == 1
    assert budget_groups([5, 5, 5], 1) == 3  # 15 groups asked, 3 samples
    assert budget_groups([], 10) == 0
    with pytest.raises(ValueError, match="max_tokens"):
        budget_groups([1], 0)


def test_balanced_partition_properties() -> None:
    rng = random.Random(0)
    for case in range(300):
        n = rng.randint(1, 30)
        lengths = [rng.randint(1, 60) for _ in range(n)]
        budget = rng.randint(1, 150)
        k = budget_groups(lengths, budget)
        groups = balanced_partition(lengths, k)
        assert sorted(i for g in groups for i in g) == list(range(n)), case
        assert len(groups) == min(n, math.ceil(sum(lengths) / budget)), case
        assert groups == balanced_partition(lengths, k)  # deterministic
        loads = [sum(lengths[i] for i in g) for g in groups]
        assert max(loads) - min(loads) <= max(lengths), case  # greedy LPT's balance bound
        for i, length in enumerate(lengths):
            if length > budget:
                assert [i] in groups, (case, i)  # an over-long sample is alone


def test_balanced_partition_hand_case() -> None:
    # LPT: 8 -> g0, 7 -> g1, 6 -> g1 (7 < 8), 5 -> g0 (8 < 13), 4 -> g0 (13 = 13, lower group)
    assert balanced_partition([8, 7, 6, 5, 4], 2) == [[4, 3, 0], [2, 1]]
    assert balanced_partition([3, 3, 3], 5) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="groups"):
        balanced_partition([1], 0)


def test_token_budget_micro_batches_keep_roles_apart() -> None:
    samples = [
        Sample([1] * (i % 4 + 1), [3] * (2 * i % 5 + 1), 0.0, "coder" if i % 3 else "tester")
        for i in range(13)
    ]
    samples.append(Sample([1] * 40, [3] * 30, 0.0, "coder"))  # 70 tokens, over the budget
    chunks = list(micro_batches(samples, 2, max_tokens=16))
    assert all(len({s.role for s in chunk}) == 1 for chunk in chunks)
    assert sorted(id(s) for c in chunks for s in c) == sorted(id(s) for s in samples)
    assert [samples[-1]] in chunks
    for role in ("coder", "tester"):
        lengths = [effective_length(s) for s in samples if s.role == role]
        assert sum(1 for c in chunks if c[0].role == role) == math.ceil(sum(lengths) / 16)
    assert [c[0].role for c in chunks] == sorted(c[0].role for c in chunks)  # roles in order
    again = list(micro_batches(samples, 2, max_tokens=16))
    assert [[id(s) for s in c] for c in again] == [[id(s) for s in c] for c in chunks]
    # a data-parallel rank takes the largest count over ranks, capped by its own samples
    coder = budget_groups([effective_length(s) for s in samples if s.role == "coder"], 16)
    assert coder == 8
    synced = list(micro_batches(samples, 2, max_tokens=16, groups={"coder": 9, "tester": 99}))
    assert sum(1 for c in synced if c[0].role == "coder") == 9
    assert sum(1 for c in synced if c[0].role == "tester") == 5  # 5 tester samples
    assert [samples[-1]] in synced
    fewer = list(micro_batches(samples, 2, max_tokens=16, groups={"coder": 1}))
    assert sum(1 for c in fewer if c[0].role == "coder") == coder  # never below its own count
    # without a budget: fixed-size chunks, as before
    assert [len(c) for c in micro_batches(samples, 4)] == [4, 4, 1, 4, 1]


def test_padded_passes_keep_the_padded_size_within_the_budget() -> None:
    # the review's case: one long sample and many short ones share a balanced micro-batch
    long = Sample([1] * 4000, [3] * 4000, 0.5)
    short = [Sample([1] * 250, [3] * 250, 0.1) for _ in range(48)]
    micro = [short[0], long, *short[1:]]
    assert budget_groups([effective_length(s) for s in micro], 32768) == 1
    assert pack(micro, 0).input_ids.numel() == 49 * 8000  # one pass would pad to 392,000
    passes = padded_passes(micro, 32768)
    assert passes == [short, [long]]  # 48 x 500 = 24,000 tokens; the long one alone
    for part in passes:
        assert pack(part, 0).input_ids.numel() <= 32768 or len(part) == 1
    # every sample once, each pass in (length, position) order; a budget of 1 makes one each
    lengths = [5, 1, 9, 3, 3, 12, 2]
    samples = [Sample([1], [2] * (n - 1), 0.0) for n in lengths]
    for budget in (1, 6, 10, 18, 100):
        got = padded_passes(samples, budget)
        flat = [s for part in got for s in part]
        assert sorted(map(id, flat)) == sorted(map(id, samples))
        assert [effective_length(s) for s in flat] == sorted(lengths)
        for part in got:
            longest = max(effective_length(s) for s in part)
            assert len(part) * longest <= budget or len(part) == 1, (budget, part)
    assert len(padded_passes(samples, 1)) == len(samples)
    assert padded_passes([], 10) == []
    with pytest.raises(ValueError, match="max_tokens"):
        padded_passes(samples, 0)


@pytest.mark.parametrize("aggregation", ["token-mean", "seq-mean-token-mean"])
def test_authors_passes_do_not_change_the_gradient(
    aggregation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    player = _player(loss_weighting="authors", loss_aggregation=aggregation)
    samples = _samples([1, 2, 7, 3, 5, 1], [3, 6, 2, 4, 3, 5])
    budget = 12
    chunks = list(micro_batches(samples, 8, max_tokens=budget))
    assert sum(len(padded_passes(c, budget)) for c in chunks) > len(chunks)  # some are cut
    split = _grads(player, samples, micro_batch_max_tokens=budget)
    # the same micro-batches, each in one padded pass (what the budget's passes replace)
    monkeypatch.setattr(player_module, "padded_passes", lambda micro, _budget: [list(micro)])
    whole = _grads(player, samples, micro_batch_max_tokens=budget)
    assert _distance(split, whole) < 1e-5
    if aggregation == "token-mean":  # (a sequence mean weighted by sample share is the global)
        assert _distance(split, _grads(player, samples, loss_weighting="global")) > 1e-2


# ---------------------------------------------------------------- (d) validation


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("micro_batch_max_tokens", 0),
        ("micro_batch_max_tokens", -5),
        ("micro_batch_max_tokens", 2.5),
        ("micro_batch_max_tokens", True),
        ("micro_batch_max_tokens", "100"),
        ("loss_weighting", "verl"),
        ("loss_weighting", None),
    ],
)
def test_bad_values_are_refused(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"TrainConfig.{name}"):
        TrainConfig.from_dict({name: value})


def test_defaults_keep_codea1s_weighting() -> None:
    cfg = TrainConfig()
    assert (cfg.loss_weighting, cfg.micro_batch_max_tokens) == ("global", None)
    for name in ("1.5b", "nano"):
        assert from_preset(name).loss_weighting == "global"


# ---------------------------------------------------------------- (e) the flags


def _parse(argv: list[str]) -> TrainConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return build_config(parser.parse_args(argv))


def test_the_flags_reach_the_config(tmp_path: Path) -> None:
    cfg = _parse(
        ["--preset", "nano", "--loss-weighting", "authors", "--micro-batch-max-tokens", "32768"]
    )
    assert (cfg.loss_weighting, cfg.micro_batch_max_tokens) == ("authors", 32768)
    path = tmp_path / "config.json"
    cfg.save(path)
    assert json.loads(path.read_text())["loss_weighting"] == "authors"
    again = _parse(["--config", str(path), "--micro-batch-max-tokens", "none"])
    assert (again.loss_weighting, again.micro_batch_max_tokens) == ("authors", None)
    assert _parse(["--preset", "nano"]).micro_batch_max_tokens is None


def test_bad_flag_values_exit_with_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--preset", "nano", "--micro-batch-max-tokens", "0", "--print-config"]) == 2
    assert "TrainConfig.micro_batch_max_tokens" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--preset", "nano", "--loss-weighting", "sum"])
    assert "--loss-weighting" in capsys.readouterr().err


# ---------------------------------------------------------------- two gloo ranks

RANK_SCRIPT = """
import dataclasses, json, os, sys
import torch
import torch.distributed as dist
sys.path.insert(0, os.environ["TEST_DIR"])
from test_loss_weighting import _grads, _player, _samples
from agents.training.distributed import Distributed

rank = int(os.environ["RANK"])
dist.init_process_group("gloo", rank=rank, world_size=2)
spec = json.loads(os.environ["CASE"])
player = _player()
player.dist = Distributed(rank=rank, world_size=2, backend="gloo")
if spec["strategy"] == "fsdp":
    player.config = dataclasses.replace(player.config, distributed_strategy="fsdp")
    player.shard_parameters()
samples = _samples(*spec["parts"][rank], start=spec["starts"][rank])
grads = _grads(player, samples, **spec["config"])
grads = {n: getattr(g, "full_tensor", lambda g=g: g)() for n, g in grads.items()}
if rank == 0:
    torch.save({n: g.detach().cpu() for n, g in grads.items()}, os.environ["OUT"])
dist.barrier()
dist.destroy_process_group()
# skip the interpreter's teardown: gloo's threads can abort it ("terminate called without an
# active exception") after the work is done and saved
sys.stdout.flush()
os._exit(0)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _two_ranks(tmp_path: Path, case: dict[str, Any]) -> dict[str, torch.Tensor]:
    out = tmp_path / "grads.pt"
    env = {
        **os.environ,
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "TEST_DIR": str(Path(__file__).parent),
        "CASE": json.dumps(case),
        "OUT": str(out),
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RANK_SCRIPT],
            env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for r in range(2)
    ]
    for proc in procs:
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, output.decode(errors="replace")[-3000:]
    grads: dict[str, torch.Tensor] = torch.load(out)
    return grads


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_ranks_average_authors_and_sum_global(tmp_path: Path, strategy: str) -> None:
    # rank 0: 3 samples, 13 tokens (2 micro-batches of 9 alone); rank 1: 4 samples, 27 tokens (3)
    parts = [([1, 2, 2], [3, 3, 2]), ([4, 1, 1, 7], [2, 6, 3, 3])]
    starts = [0, 3]
    case = {"strategy": strategy, "parts": parts, "starts": starts}
    config = {"loss_weighting": "authors", "micro_batch_max_tokens": 9}
    got = _two_ranks(tmp_path, {**case, "config": config})
    player = _player()
    ranks = [_samples(*p, start=s) for p, s in zip(parts, starts, strict=True)]
    counts = [budget_groups([effective_length(s) for s in rank], 9) for rank in ranks]
    assert counts == [2, 3]
    # every rank makes the largest count of micro-batches (verl's sync), then averages
    per_rank = [
        _hand_authors_grads(
            player, list(micro_batches(r, 8, max_tokens=9, groups={"coder": 3})), len(r)
        )
        for r in ranks
    ]
    expected = {n: (per_rank[0][n] + per_rank[1][n]) / 2 for n in per_rank[0]}
    assert _distance(got, expected) < 1e-4
    unsynced = _hand_authors_grads(player, list(micro_batches(ranks[0], 8, max_tokens=9)), 3)
    assert _distance(got, {n: (unsynced[n] + per_rank[1][n]) / 2 for n in unsynced}) > 1e-3
    # global: the two ranks' gradient is the single process's on all seven samples
    config = {"loss_weighting": "global", "micro_batch_max_tokens": 9}
    got = _two_ranks(tmp_path, {**case, "config": config})
    everything = [s for rank in ranks for s in rank]
    assert _distance(got, _grads(player, everything, **config)) < 1e-4
