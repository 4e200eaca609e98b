"""Seconds per training step: our trainer (golden mode) vs TRL's GRPOTrainer with our reward.

Both run in this one process, one after the other, on the same model file, the same prompts (the
compact coder prompts of the procedural ``step`` family), the same group size, the same number of
completions per step, the same token budget and the same loss settings (PPO-clip 0.20/0.28,
token-mean, KL 0.001 to a frozen reference, one update per batch). Both score with the same
referee code path (ours calls it directly, TRL through
:func:`agents.integrations.trl.make_trl_reward`). Our trainer's stop at the closing code fence is
turned off here so that both generate until EOS or the budget, the same work; both then score the
completion up to its closing fence (what that stop would keep, :func:`up_to_fence`) behind the
opening fence the compact prompt wrote, the same text.

The model is a tiny Qwen2 built from config and warm-started first (``--sft-steps`` supervised
steps on the GT solutions of the same ``--n-problems`` problems, our trainer's
:meth:`Trainer.warm_start`; not timed), so that its sampled completions earn a mix of rewards:
with all rewards zero every GRPO advantage is zero and neither update path is exercised. A few
problems and a short warm start leave the model half right, which is the mix wanted. The JSON
reports, per run, the share of the timed steps' completions with a nonzero reward (and with
reward 1) and the share of GRPO groups whose rewards differ (the groups that move the model), so
a reader can check that both runs updated on a mix.

Prints one JSON object on stdout and nothing else (TRL's, transformers' and our logs go to
stderr): seconds/step of each, the ratio (ours / TRL; <= 1 means ours is no slower), our rollout
tokens/s, the share of step time spent judging, and the reward mix of each run.

    python benchmarks/bench_trainer.py --steps 4 --warmup 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ANSWER_PREFIX = "```python"
"""What the compact prompt already wrote: the opening fence of the answer."""


def up_to_fence(completion: str) -> str:
    """The completion up to its closing code fence: what our trainer's stop at the fence keeps.

    Both runs generate to the token budget (the same work); both then score this text, behind
    the opening fence. Without the cut a tiny model's tail after the fence (more fences and
    stray tokens on the same line) would run into the code and make it unparsable.
    """
    return completion.split("```", 1)[0]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (Python's and file descriptor 1's) to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


class RewardLog:
    """Every reward a run scored, in order (one list per scoring call)."""

    def __init__(self) -> None:
        self.calls: list[list[float]] = []

    def summary(self, skip_calls: int = 0) -> dict[str, Any]:
        """Reward mix over the calls after the first ``skip_calls`` (the warm-up steps)."""
        rewards = [r for call in self.calls[skip_calls:] for r in call]
        n = max(len(rewards), 1)
        return {
            "completions_scored": len(rewards),
            "nonzero_reward_share": round(sum(r != 0 for r in rewards) / n, 4),
            "full_reward_share": round(sum(r >= 1.0 for r in rewards) / n, 4),
            "mean_reward": round(sum(rewards) / n, 4),
        }


class Source:
    """A train source over a fixed list of problems (what the trainer draws from)."""

    def __init__(self, problems: Sequence[Any]) -> None:
        self.problems = list(problems)

    def sample(self, rng: Any) -> Any:
        return self.problems[int(rng.integers(len(self.problems)))]


def warm_start(model_dir: str, args: argparse.Namespace, work: Path, problems: list[Any]) -> str:
    """Supervised warm start of the model on the problems' GT solutions; returns its new path."""
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer

    cfg = from_preset(
        "nano",
        mode="golden",
        coder_model=model_dir,
        n_codes=args.group_size,
        max_code_tokens=args.max_tokens,
        sft_steps=args.sft_steps,
        sft_tester_steps=0,
        sft_batch_size=16,
        sft_lr=args.sft_lr,
        num_threads=args.threads,
        eval_before_after=False,
        output_dir=str(work / "sft"),
    )
    trainer = Trainer(cfg, train_source=Source(problems), log=_log)
    try:
        losses = trainer.warm_start()
        _log(f"warm start: {json.dumps(losses)}")
        path = work / "warm_model"
        trainer.coder.model.save_pretrained(path)
        trainer.coder.tokenizer.save_pretrained(path)
    finally:
        trainer.close()
    return str(path)


def _recording(judge_many: Callable[..., Any], log: RewardLog) -> Callable[..., Any]:
    def judge(*a: Any, **k: Any) -> Any:
        judgements = judge_many(*a, **k)
        log.calls.append([float(r) for j in judgements for r in j.coder_rewards])
        return judgements

    return judge


def ours(
    model_dir: str, args: argparse.Namespace, work: Path, problems: list[Any]
) -> dict[str, Any]:
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer, build_referee

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

    rewards = RewardLog()
    referee = build_referee(cfg)
    referee.judge_many = _recording(referee.judge_many, rewards)  # type: ignore[method-assign]
    trainer = Trainer(cfg, train_source=Source(problems), referee=referee, log=_log)
    trainer.roles.stop = ()  # same work as TRL: generate to EOS or the budget
    play_code = trainer.host.play_code

    def play_scored_text(duel: Any, action: Any, max_chars: int) -> None:
        play_code(duel, ANSWER_PREFIX + up_to_fence(str(action)), max_chars)

    trainer.host.play_code = play_scored_text  # type: ignore[method-assign]
    try:
        result = trainer.train()
    finally:
        referee.close()
    rows = result.history[args.warmup :]
    return {
        "rewards": rewards.summary(skip_calls=args.warmup),
        "groups_with_reward_spread": 1.0
        - statistics.fmean(r["coder/collapsed_groups"] for r in rows) / args.problems_per_step,
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

    from agents.integrations.trl import make_trl_reward
    from agents.lm.models import load_tokenizer
    from examples.trl_grpo import build_dataset, checkpointing_off

    times: list[float] = []

    class Timer(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            times.append(time.perf_counter() - self.start)

    batch = args.problems_per_step * args.group_size
    reward = make_trl_reward(problems, answer_prefix=ANSWER_PREFIX)
    rewards = RewardLog()

    def codea1_golden(
        prompts: Any = None, completions: Sequence[str] = (), **k: Any
    ) -> list[float | None]:
        values = reward(prompts, [up_to_fence(c) for c in completions], **k)
        rewards.calls.append([float(v) for v in values if v is not None])
        return values

    config = GRPOConfig(
        output_dir=str(work / "trl"),
        use_cpu=True,
        report_to="none",
        **checkpointing_off(GRPOConfig),
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
        reward_funcs=codea1_golden,
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
        "rewards": rewards.summary(skip_calls=len(rewards.calls) - len(timed)),
        "groups_with_reward_spread": (
            1.0 - statistics.fmean(r["frac_reward_zero_std"] for r in logs) if logs else None
        ),
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
    parser.add_argument(
        "--sft-steps", type=int, default=150, help="warm-start steps before both runs (0: none)"
    )
    parser.add_argument(
        "--n-problems", type=int, default=8, help="distinct problems (few: the warm start is quick)"
    )
    parser.add_argument("--sft-lr", type=float, default=5e-3)
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)

    import torch

    from agents.lm.models import build_tiny_model
    from agents.lm.tokenizer import load_tiny_tokenizer
    from codea1_env.problems import ProceduralSource

    torch.set_num_threads(args.threads)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    source = ProceduralSource(seed=0, n=args.n_problems, families=["step"])
    problems = [source[i] for i in source.ids()]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="codea1_bench_") as tmp, stdout_to_stderr():
        work = Path(tmp)
        tokenizer = load_tiny_tokenizer()
        model_dir = str(work / "model")
        build_tiny_model(args.model_size, tokenizer, seed=0).save_pretrained(model_dir)
        tokenizer.save_pretrained(model_dir)
        started = time.perf_counter()
        if args.sft_steps > 0:
            model_dir = warm_start(model_dir, args, work, problems)
        sft_seconds = time.perf_counter() - started
        ours_result = ours(model_dir, args, work, problems)
        trl_result = trl(model_dir, args, work, problems)
    result = {
        "model": f"builtin:{args.model_size}",
        "problems": f"procedural:0 step family, {args.n_problems} problems",
        "warm_start": {"sft_steps": args.sft_steps, "seconds": round(sft_seconds, 1)},
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
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
