"""The trainer's pieces (packing, schedule, update_n rule, updates) and short real runs."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.training.checkpoint import latest_checkpoint
from agents.training.config import from_preset
from agents.training.heldout_eval import CROSS_ROWS
from agents.training.metrics import read_metrics
from agents.training.player import build_player, lr_lambda
from agents.training.rollout import Sample, pack
from agents.training.trainer import Trainer, select_tester_codes, step_seed
from codea1_env.mistake_book import SqliteMistakeBook


def test_pack_masks_exactly_the_completion_tokens() -> None:
    batch = pack(
        [Sample([5, 6, 7], [8, 9], 1.0), Sample([5], [6, 7, 8], -1.0, old_logprobs=[-1, -2, -3])],
        pad_id=0,
    )
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 6, 7, 8, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    # position t predicts token t + 1: row 0 predicts 8, 9 from positions 2, 3
    assert batch.loss_mask.tolist() == [[0, 0, 1, 1], [1, 1, 1, 0]]
    assert batch.old_logprobs[1].tolist() == [-1, -2, -3, 0]
    assert not batch.has_old and not batch.has_ref
    assert batch.advantages.tolist() == [1.0, -1.0]
    with pytest.raises(ValueError, match="no samples"):
        pack([], 0)


def test_lr_schedule_warmup_then_cosine() -> None:
    values = [lr_lambda(s, warmup=2, total=6, schedule="cosine") for s in range(7)]
    assert values[:2] == [0.5, 1.0]
    assert values[2] == pytest.approx(1.0) and values[6] == pytest.approx(0.0)
    assert values[4] == pytest.approx(0.5)
    assert lr_lambda(5, warmup=0, total=10, schedule="constant") == 1.0
    assert lr_lambda(5, warmup=0, total=10, schedule="linear") == pytest.approx(0.5)


def test_update_n_picks_the_code_whose_suites_vary_most() -> None:
    rewards = torch.tensor(
        [
            [0.5, 0.5, 0.5, 0.5],  # std 0
            [0.0, 1.0, 0.0, 1.0],  # the largest spread
            [0.2, 0.4, 0.2, 0.4],
        ]
    )
    assert select_tester_codes(rewards, "update_n") == [1]
    assert select_tester_codes(rewards, "all") == [0, 1, 2]
    assert select_tester_codes(torch.zeros(3, 4), "update_n") == [0]  # ties: the first code
    with pytest.raises(ValueError, match="unknown tester_group"):
        select_tester_codes(rewards, "best")
    with pytest.raises(ValueError, match="n_codes, n_suites"):
        select_tester_codes(torch.zeros(3), "all")


def test_step_seed_is_a_pure_function() -> None:
    assert step_seed(0, 3, "coder") == step_seed(0, 3, "coder")
    assert len({step_seed(0, 3, "coder"), step_seed(0, 4, "coder"), step_seed(0, 3, "tester")}) == 3


def test_player_update_moves_logprobs_in_the_advantage_direction() -> None:
    cfg = from_preset("nano", lr=1e-2, warmup_steps=0, kl_coef=0.001, max_grad_norm=0.0)
    player = build_player(
        "coder", "builtin:nano", cfg, seed=0, lr=cfg.lr, device=torch.device("cpu")
    )
    good = Sample([10, 11, 12], [20, 21, 22], advantage=1.0)
    bad = Sample([10, 11, 12], [30, 31, 32], advantage=-1.0)

    def logp(sample: Sample) -> float:
        from agents.training.rollout import sequence_logprobs

        batch = pack([sample], player.pad_id)
        with torch.no_grad():
            return float((sequence_logprobs(player.model, batch) * batch.loss_mask).sum())

    before = logp(good), logp(bad)
    stats = player.update([good, bad, Sample([1], [], 0.0)])  # the empty one is skipped
    after = logp(good), logp(bad)
    assert after[0] > before[0] and after[1] < before[1]
    assert stats["tokens"] == 6.0 and stats["grad_norm"] > 0
    assert player.reference is not None  # frozen KL reference kept apart
    ref_params = dict(player.reference.named_parameters())
    changed = [n for n, p in player.model.named_parameters() if not torch.equal(p, ref_params[n])]
    assert changed


def test_sequence_logprobs_trimmed_head_equals_the_full_forward() -> None:
    """The LM head on the scored positions only gives the full forward's values and gradients."""
    from agents.lm.transformers_lm import accepts_logits_to_keep
    from agents.training import rollout
    from agents.training.grpo import token_logprobs

    cfg = from_preset("nano")
    player = build_player(
        "coder", "builtin:nano", cfg, seed=0, lr=cfg.lr, device=torch.device("cpu")
    )
    assert accepts_logits_to_keep(player.model)
    # prompts of 7 and 4 tokens: the trimmed head starts at column 3 (the shorter prompt's end)
    batch = pack(
        [Sample(list(range(10, 17)), [20, 21, 22], 1.0), Sample([10, 11, 12, 13], [30, 31], 1.0)],
        player.pad_id,
    )
    trimmed = rollout.sequence_logprobs(player.model, batch)
    (trimmed * batch.loss_mask).sum().backward()
    grads = {n: p.grad.clone() for n, p in player.model.named_parameters() if p.grad is not None}
    player.model.zero_grad(set_to_none=True)
    logits = player.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    full = token_logprobs(logits[:, :-1], batch.input_ids[:, 1:], batch.loss_mask)
    (full * batch.loss_mask).sum().backward()
    assert trimmed.shape == full.shape == batch.loss_mask.shape
    assert torch.allclose(trimmed, full, atol=1e-5)
    assert (trimmed[:, :3] == 0).all() and (trimmed[0, 6:9] != 0).all()
    for name, param in player.model.named_parameters():
        if param.grad is not None:
            assert torch.allclose(grads[name], param.grad, atol=1e-5), name


def test_supervised_warm_start_follows_its_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.training.sft import SupervisedExample, supervised_warm_start

    cfg = from_preset("nano")
    seen: list[float] = []
    original = torch.optim.AdamW.step

    def step(self: torch.optim.AdamW, *args: Any, **kwargs: Any) -> Any:
        seen.append(float(self.param_groups[0]["lr"]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    lrs: dict[str, list[float]] = {}
    for schedule in ("constant", "cosine"):
        player = build_player(
            "coder", "builtin:nano", cfg, seed=0, lr=cfg.lr, device=torch.device("cpu")
        )
        seen.clear()
        supervised_warm_start(
            player,
            lambda _rng: SupervisedExample((10, 11, 12), (20, 21)),
            steps=40,
            batch_size=2,
            lr=1e-3,
            seed=0,
            schedule=schedule,
        )
        lrs[schedule] = list(seen)
    # 2 warm-up steps (5% of 40), then constant or cosine down to ~0 at the last step
    assert lrs["constant"][:2] == pytest.approx([5e-4, 1e-3]) and lrs["constant"][-1] == 1e-3
    assert lrs["cosine"][:3] == pytest.approx([5e-4, 1e-3, 1e-3])
    decay = lrs["cosine"][1:]
    assert decay[-1] < 1e-5 and all(a >= b for a, b in zip(decay, decay[1:], strict=False))


@pytest.mark.parametrize("mode", ["code-a1", "golden", "self-play"])
def test_short_run_in_each_mode(tmp_path: Path, mode: str) -> None:
    cfg = from_preset("nano", mode=mode, steps=2, output_dir=str(tmp_path / mode))
    result = Trainer(cfg, log=lambda _m: None).train()
    rows = read_metrics(tmp_path / mode / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2] and result.steps == 2
    for key in (
        "coder/reward",
        "coder/gt_pass_rate",
        "charts/tokens_per_s",
        "charts/sandbox_seconds",
        "charts/sandbox_share",
        "mistake_book/size",
    ):
        assert key in rows[0], key
    if mode == "golden":
        assert "tester/reward" not in rows[0]
        assert not any(k.startswith("losses/tester") for k in rows[0])
    else:
        assert {"tester/reward", "tester/validity", "tester/adversarial"} <= rows[0].keys()
    if mode == "self-play":
        assert "losses/shared_pg_loss" in rows[0] and "losses/tester_pg_loss" not in rows[0]
    if mode == "code-a1":
        assert "losses/coder_pg_loss" in rows[0] and "losses/tester_pg_loss" in rows[0]
    latest = latest_checkpoint(tmp_path / mode)
    assert latest is not None and latest.name == "step_2"
    names = {p.name for p in latest.iterdir()}
    assert {"trainer_state.pt", "config.json", "mistake_book.json", "COMPLETE"} <= names
    assert ("tester_model.pt" in names) == (mode == "code-a1")
    summary = json.loads((tmp_path / mode / "summary.json").read_text())
    assert summary["steps"] == 2


def test_eval_summary_and_warm_start(tmp_path: Path) -> None:
    cfg = from_preset(
        "nano",
        steps=1,
        sft_steps=3,
        sft_batch_size=4,
        eval_before_after=True,
        eval_size=3,
        output_dir=str(tmp_path),
    )
    lines: list[str] = []
    result = Trainer(cfg, log=lines.append).train()
    for key in ("coder/gt_pass_rate", "tester/validity", "tester/adversarial"):
        assert 0.0 <= result.before[key] <= 1.0 and key in result.after
    assert any("before RL" in line and "after RL" in line for line in lines)  # the table
    warm = json.loads((tmp_path / "warm_start.json").read_text())
    assert warm["sft/coder_loss_last"] < warm["sft/coder_loss_first"]
    assert "sft/tester_loss_first" in warm


def test_the_trained_tester_is_also_scored_on_the_codes_before_rl(tmp_path: Path) -> None:
    cfg = from_preset(
        "nano", steps=0, eval_before_after=True, eval_size=4, output_dir=str(tmp_path)
    )
    result = Trainer(cfg, log=lambda _m: None).train()
    codes = json.loads((tmp_path / "eval_codes_before.json").read_text())
    assert len(codes) == 4 * cfg.eval_samples and all(isinstance(c, str) for c in codes)
    summary = json.loads((tmp_path / "summary.json").read_text())
    for key, source, _label in CROSS_ROWS:
        # no RL step: the same tester on the same codes scores what it scored before RL
        assert result.before[key] == result.before[source] == result.after[key]
        assert summary["before"][key] == summary["after"][key]

    # scripted players make the rows non-trivial: a broken code before RL (the GT suites break
    # it), the GT programs in the file afterwards (nothing breaks them)
    trainer = Trainer(
        from_preset(
            "nano", steps=0, eval_before_after=True, eval_size=4, output_dir=str(tmp_path / "gt")
        ),
        log=lambda _m: None,
    )
    lines: list[str] = []
    trainer.log = lines.append
    by_prompt = {p.prompt.rstrip(): p for p in trainer.eval_problems}

    def scripted(role: str, observations: Any, infos: Any) -> list[str]:
        if role == "coder":
            body = [
                by_prompt[o["prompt"].rstrip()].gt_program.replace(
                    "    return", "    return 7 +", 1
                )
                for o in observations
            ]
        else:
            body = ["\n".join(by_prompt[o["prompt"].rstrip()].tests) for o in observations]
        return ["\n" + text + "\n" for text in body]  # completions stop before the fence

    trainer._eval_sampler = lambda: scripted  # type: ignore[method-assign]
    try:
        trainer.before = trainer._evaluate_on_main(keep_codes=True)
        assert trainer.before["tester/adversarial"] > 0.3  # the shifted codes fail GT asserts
        same = dict(trainer.before)
        trainer._tester_on_start_codes(same)
        assert same["tester/adversarial_on_start_codes"] == trainer.before["tester/adversarial"]
        gt = [p.gt_program for p in trainer.eval_problems for _ in range(cfg.eval_samples)]
        assert len(gt) == 4
        (trainer.run_dir / "eval_codes_before.json").write_text(
            json.dumps(["\n" + code + "\n" for code in gt])
        )
        after = trainer._evaluate_on_main()
        trainer._tester_on_start_codes(after)
        assert after["tester/adversarial"] > 0.3  # the coder's own (shifted) codes
        assert after["tester/adversarial_on_start_codes"] == 0.0  # the file's GT programs
        assert after["tester/validity_on_start_codes"] > 0.0
        (trainer.run_dir / "eval_codes_before.json").write_text(json.dumps(gt[:1]))
        later = trainer._evaluate_on_main()
        trainer._tester_on_start_codes(later)
        assert "tester/adversarial_on_start_codes" not in later
        assert any("do not fit the held-out set" in line for line in lines)
    finally:
        trainer.close()


def test_self_play_warm_start_mixes_both_roles_in_one_run(tmp_path: Path) -> None:
    cfg = from_preset(
        "nano",
        mode="self-play",
        steps=1,
        sft_steps=3,
        sft_tester_steps=2,
        sft_batch_size=4,
        output_dir=str(tmp_path),
    )
    lines: list[str] = []
    Trainer(cfg, log=lines.append).train()
    warm = json.loads((tmp_path / "warm_start.json").read_text())
    assert "sft/coder+tester_loss_first" in warm and "sft/coder_loss_first" not in warm
    assert any("warm start [coder+tester] step 5/5" in line for line in lines), lines


def test_lora_bf16_and_gradient_checkpointing_update(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    cfg = from_preset(
        "nano",
        use_lora=True,
        lora_r=4,
        bf16=True,
        gradient_checkpointing=True,
        lr=1e-2,
        warmup_steps=0,
        steps=1,
        output_dir=str(tmp_path),
    )
    player = build_player(
        "coder", "builtin:nano", cfg, seed=0, lr=cfg.lr, device=torch.device("cpu")
    )
    trainable = [n for n, p in player.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert player.reference is None  # the reference is the model with its adapters disabled
    frozen = {
        n: p.detach().clone() for n, p in player.model.named_parameters() if not p.requires_grad
    }
    lora_before = player.trainable_state()
    stats = player.update([Sample([10, 11], [20, 21, 22], 1.0), Sample([10, 11], [30, 31], -1.0)])
    assert stats["grad_norm"] > 0 and "kl" in stats
    lora_after = player.trainable_state()
    assert any(not torch.equal(lora_before[n], lora_after[n]) for n in lora_before)
    for name, param in player.model.named_parameters():
        if not param.requires_grad:
            assert torch.equal(param, frozen[name]), name
    # Checkpoints hold only the adapters, and load back.
    player.save(tmp_path)
    saved = torch.load(tmp_path / "coder_model.pt")
    assert set(saved) == set(trainable)
    player.load(tmp_path)
    # A whole step through the trainer (generation through the peft model) works too.
    result = Trainer(cfg, log=lambda _m: None).train()
    assert result.steps == 1


@pytest.mark.slow
def test_referee_processes_give_the_same_run(tmp_path: Path) -> None:
    """Two referee processes (a RefereePool) score a run exactly as the one referee does."""
    rows = {}
    for processes in (1, 2):
        out = tmp_path / f"p{processes}"
        cfg = from_preset(
            "nano",
            steps=2,
            referee_processes=processes,
            eval_before_after=False,
            output_dir=str(out),
        )
        Trainer(cfg, log=lambda _m: None).train()
        rows[processes] = read_metrics(out / "metrics.jsonl")
        checkpoint = latest_checkpoint(out)
        assert checkpoint is not None
        book = json.loads((checkpoint / "mistake_book.json").read_text())
        rows[processes].append({"book": book["problems"]})
    keys = ("coder/reward", "coder/gt_pass_rate", "tester/reward", "tester/validity")
    for one, pooled in zip(rows[1][:-1], rows[2][:-1], strict=True):
        assert {k: one[k] for k in keys} == {k: pooled[k] for k in keys}
        assert one["mistake_book/size"] == pooled["mistake_book/size"]
    assert rows[1][-1] == rows[2][-1]  # the same mistake book at the end
    with pytest.raises(ValueError, match="referee_processes"):
        from_preset("nano", referee_processes=0)


def test_referee_processes_refuse_the_ray_sandbox() -> None:
    with pytest.raises(ValueError, match="referee_processes > 1 needs the local or docker"):
        from_preset("nano", referee_processes=2, sandbox="ray")


def test_each_start_records_what_it_runs_on(tmp_path: Path) -> None:
    run = tmp_path / "run"
    Trainer(from_preset("nano", steps=1, output_dir=str(run)), log=lambda _m: None).train()
    Trainer(from_preset("nano", steps=2, output_dir=str(run)), log=lambda _m: None).train()
    records = [json.loads(line) for line in (run / "environment.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1]  # the fresh start, then the resume at step 1
    first = records[0]
    assert first["python"] == platform.python_version() and first["device"] == "cpu"
    assert first["packages"]["torch"] == torch.__version__
    assert {"codea1", "transformers", "gymnasium", "numpy"} <= first["packages"].keys()
    cpu = first["cpu"]  # the kernels a CPU run's arithmetic went through
    assert cpu["model"] and cpu["cores"] == os.cpu_count()
    assert cpu["torch_capability"] == torch.backends.cpu.get_cpu_capability()
    assert cpu["torch_threads"] == 1  # the nano preset's num_threads, set before the record
    sandbox = first["sandbox"]
    assert sandbox["backend"].startswith("local") and sandbox["python"] == platform.python_version()
    assert isinstance(sandbox["layers_off"], list)


def test_the_cpu_model_is_read_from_cpuinfo_or_platform(tmp_path: Path) -> None:
    from agents.training.environment import cpu_model

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\n\n")
    assert cpu_model(info) == "Some CPU @ 2.0GHz"
    info.write_text("processor\t: 0\nmodel name\t:\n")  # empty: the platform's answer
    assert cpu_model(info) == (platform.processor() or platform.machine())
    assert cpu_model(tmp_path / "missing") == (platform.processor() or platform.machine())


def test_a_run_directory_holding_other_files_is_said(tmp_path: Path) -> None:
    """A fresh run into a folder of something else's files says so (not into its own)."""
    lines: list[str] = []
    run_dir = tmp_path / "results"
    run_dir.mkdir()
    (run_dir / "eval.json").write_text("{}", encoding="utf-8")
    trainer = Trainer(from_preset("nano"), run_dir=run_dir, log=lines.append)
    trainer.close()
    said = [line for line in lines if "already holds 1 file of something else" in line]
    assert said and "eval.json" in said[0], lines
    lines.clear()
    Trainer(from_preset("nano"), run_dir=tmp_path / "new", log=lines.append).close()
    assert not [line for line in lines if "something else" in line]
    # the run's own SQLite book, opened before the Trainer (docs/scale_out.md), is not noted
    lines.clear()
    booked = tmp_path / "booked"
    book = SqliteMistakeBook(booked / "mistake_book.sqlite")
    try:
        Trainer(from_preset("nano"), run_dir=booked, log=lines.append).close()
    finally:
        book.close()
    assert not [line for line in lines if "something else" in line], lines
