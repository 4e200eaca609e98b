"""Token log-probabilities for a training step: the LM head on scored positions vs everywhere.

One forward and backward of :func:`agents.training.rollout.sequence_logprobs` (the head and the
softmax from the shortest prompt's last token on, ``logits_to_keep``) against the plain full
forward (the head over every position, then the same :func:`~agents.training.grpo.token_logprobs`)
on a batch of the ``tiny`` preset's warm-start examples (tester or coder prompts and targets),
alternating the two in one process. Prints JSON: median seconds of each, the ratio, the batch's
mean prompt and target lengths, and the largest difference of the two results (values and
gradients).

    PYTHONPATH=. python benchmarks/bench_logprobs.py [--role tester] [--batch 16] [--repeats 12]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

import numpy as np
import torch

from agents.training import rollout
from agents.training.config import from_preset
from agents.training.grpo import token_logprobs
from agents.training.rollout import Batch, Sample, pack
from agents.training.trainer import Trainer


def _full(model: Any, batch: Batch) -> torch.Tensor:
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    return token_logprobs(logits[:, :-1], batch.input_ids[:, 1:], batch.loss_mask)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--role", choices=["coder", "tester"], default="tester")
    parser.add_argument("--batch", type=int, default=16, help="sequences (the preset's 16)")
    parser.add_argument("--repeats", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the preset's 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as out:
        cfg = from_preset("tiny", output_dir=out, progress_bar=False, tensorboard=False, steps=0)
        trainer = Trainer(cfg, log=lambda _m: None)
        try:
            rng = np.random.default_rng(0)
            examples = [
                trainer.roles.supervised_example(args.role, trainer.train_source.sample(rng), rng)
                for _ in range(args.batch)
            ]
            model = trainer.roles.players[args.role].model
            pad = trainer.roles.players[args.role].pad_id
            batch = pack(
                [Sample(list(e.prompt_ids), list(e.target_ids), 1.0) for e in examples], pad
            )
            ways = {"full_head": _full, "scored_positions": rollout.sequence_logprobs}
            seconds: dict[str, list[float]] = {k: [] for k in ways}
            results: dict[str, tuple[torch.Tensor, list[torch.Tensor]]] = {}
            for _ in range(args.repeats):
                for name, way in ways.items():
                    started = time.perf_counter()
                    logp = way(model, batch)
                    (logp * batch.loss_mask).sum().backward()
                    seconds[name].append(time.perf_counter() - started)
                    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
                    results[name] = (logp.detach(), grads)
                    model.zero_grad(set_to_none=True)
        finally:
            trainer.close()
    median = {k: statistics.median(v[2:] or v) for k, v in seconds.items()}
    (full_lp, full_g), (ours_lp, ours_g) = results["full_head"], results["scored_positions"]
    print(
        json.dumps(
            {
                "role": args.role,
                "batch": args.batch,
                "prompt_tokens_mean": statistics.fmean(len(e.prompt_ids) for e in examples),
                "target_tokens_mean": statistics.fmean(len(e.target_ids) for e in examples),
                "full_head_s": round(median["full_head"], 4),
                "scored_positions_s": round(median["scored_positions"], 4),
                "ratio": round(median["full_head"] / median["scored_positions"], 3),
                "max_logprob_diff": float((full_lp - ours_lp).abs().max()),
                "max_grad_diff": max(float((a - b).abs().max()) for a, b in zip(full_g, ours_g)),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
