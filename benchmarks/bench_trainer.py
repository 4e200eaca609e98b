"""Seconds per training step: our trainer (golden mode) vs TRL's GRPOTrainer with our reward.

Both run in this one process, one after the other, on the same model file (a tiny Qwen2 built from
config and saved once), the same prompts (the compact coder prompts of the procedural family),
the same group size, the same number of completions per step, the same token budget and the same
loss settings (PPO-clip 0.20/0.28, token-mean, KL 0.001 to a frozen reference, one update per
batch). Both score with the same referee code path (ours calls it directly, TRL through
:func:`agents.trl_reward.make_trl_reward`). Our trainer's stop at the closing code fence is turned
off here so that both generate until EOS or the budget, the same work.

Prints one JSON object: seconds/step of each, the ratio (ours / TRL; <= 1 means ours is no
slower), our rollout tokens/s and the share of our step time spent in the sandbox (and TRL's).

    python benchmarks/bench_trainer.py --steps 4 --warmup 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def ours(
    model_dir: str, args: argparse.Namespace, work: Path, problems: list[Any]
) -> dict[str, Any]:
    from agents.config import from_preset
    from agents.trainer import Trainer

    cfg = from_preset(
        "nano",
        mode="golden",
        coder_model=model_dir,
        steps=args.warmup + args.steps,
        problems_per_step=args.problems_per_step,
        n_codes=args.group_size,
        max_code_tokens=args.max_tokens,
        lr=args.lr,
        warmup_steps=0,
        kl_coef=0.001,
        num_threads=args.threads,
        micro_batch_size=args.problems_per_step * args.group_size,
        checkpoint_every=10_000,
        eval_before_after=False,
        output_dir=str(work / "ours"),
    )

    class Source:
        def sample(self, rng: Any) -> Any:
            return problems[int(rng.integers(len(problems)))]

    trainer = Trainer(cfg, train_source=Source(), log=lambda _m: None)
    trainer.roles.stop = ()  # same work as TRL: generate to EOS or the budget
    result = trainer.train()
    rows = result.history[args.warmup :]
    return {
        "seconds_per_step": statistics.fmean(r["charts/step_seconds"] for r in rows),
        "rollout_tokens_per_s": statistics.fmean(r["charts/tokens_per_s"] for r in rows),
        "completion_tokens_per_step": statistics.fmean(r["charts/rollout_tokens"] for r in rows),
        "sandbox_share": statistics.fmean(r["charts/sandbox_share"] for r in rows),
        "mean_reward": statistics.fmean(r["coder/reward"] for r in rows),
    }


def trl(
    model_dir: str, args: argparse.Namespace, work: Path, problems: list[Any]
) -> dict[str, Any]:
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from agents.models import load_tokenizer
    from agents.trl_reward import make_trl_reward
    from examples.trl_grpo import build_dataset

    times: list[float] = []

    class Timer(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            times.append(time.perf_counter() - self.start)

    batch = args.problems_per_step * args.group_size
    reward = make_trl_reward(problems, answer_prefix="```python")
    config = GRPOConfig(
        output_dir=str(work / "trl"),
        use_cpu=True,
        report_to="none",
        gradient_checkpointing=False,
        max_steps=args.warmup + args.steps,
        per_device_train_batch_size=batch,
        num_generations=args.group_size,
        max_completion_length=args.max_tokens,
        learning_rate=args.lr,
        lr_scheduler_type="cosine",
        weight_decay=0.0,
        logging_steps=1,
        save_strategy="no",
        bf16=False,
        beta=0.001,
        epsilon=0.20,
        epsilon_high=0.28,
        loss_type="dapo",
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        seed=0,
    )
    dataset = build_dataset(problems * 8, compact=True)
    trainer = GRPOTrainer(
        model=model_dir,
        reward_funcs=reward,
        args=config,
        train_dataset=dataset,
        processing_class=load_tokenizer(model_dir),
        callbacks=[Timer()],
    )
    trainer.train()
    reward.close()
    timed = times[args.warmup :]
    logs = [r for r in trainer.state.log_history if "reward" in r][args.warmup :]
    per_step = statistics.fmean(timed)
    tokens = [r.get("completions/mean_length", 0.0) * batch for r in logs]
    return {
        "seconds_per_step": per_step,
        "completion_tokens_per_step": statistics.fmean(tokens) if tokens else None,
        "sandbox_share": reward.sandbox_seconds / max(sum(times), 1e-9),
        "mean_reward": statistics.fmean(r["reward"] for r in logs) if logs else None,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-size", default="nano", choices=["nano", "tiny", "small"])
    parser.add_argument("--steps", type=int, default=4, help="timed steps")
    parser.add_argument("--warmup", type=int, default=1, help="untimed first steps")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--problems-per-step", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)

    import torch

    from agents.models import build_tiny_model
    from agents.tokenizer import load_tiny_tokenizer
    from codea1_env.problems import ProceduralSource

    torch.set_num_threads(args.threads)
    source = ProceduralSource(seed=0, n=64)
    problems = [source[i] for i in source.ids()]
    with tempfile.TemporaryDirectory(prefix="codea1_bench_") as tmp:
        work = Path(tmp)
        tokenizer = load_tiny_tokenizer()
        model_dir = str(work / "model")
        build_tiny_model(args.model_size, tokenizer, seed=0).save_pretrained(model_dir)
        tokenizer.save_pretrained(model_dir)
        ours_result = ours(model_dir, args, work, problems)
        trl_result = trl(model_dir, args, work, problems)
    result = {
        "model": f"builtin:{args.model_size}",
        "completions_per_step": args.problems_per_step * args.group_size,
        "group_size": args.group_size,
        "max_new_tokens": args.max_tokens,
        "timed_steps": args.steps,
        "torch_threads": args.threads,
        "ours": ours_result,
        "trl": trl_result,
        "ratio_ours_over_trl": ours_result["seconds_per_step"] / trl_result["seconds_per_step"],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
