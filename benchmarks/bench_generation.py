"""Rollout sampling: our decode loop against a bare ``transformers`` loop and ``model.generate``.

The trainer's rollouts on the ``transformers`` backend run
:meth:`agents.lm.transformers_lm.TransformersLM.generate` (per-row random streams, stop strings,
finished rows leaving the batch, per-token log-probabilities). This benchmark times it, in one
process and alternating, against two anchors on the same prompt ids, the same model and the same
number of new tokens:

* ``bare``: the smallest eager decode loop ``transformers`` allows (prefill, then one forward per
  token with the KV cache and ``logits_to_keep=1``, ``torch.multinomial`` on the global stream, no
  bookkeeping). What our loop adds is the difference.
* ``hf_generate``: ``model.generate(do_sample=True, min_new_tokens=max_new_tokens)``, the library's
  own sampler.

The model is a Qwen2 built from config with random weights (no download): ``--dims tiny28`` (28
layers of width 64, the per-layer Python of a 1.5B model at no compute cost) or ``--dims 1.5b``
(Qwen2.5-Coder-1.5B's dimensions, for a GPU). ``--vocab qwen`` gives it the real 151,936 rows.
Prompts are the ``chat`` style's coder prompts (and tester prompts, with the GT as the code) of the
built-in bank, encoded once. Weights are float32, as the trainer's rollouts run with
``rollout_dtype='float32'``; ``--bf16`` adds the three ways on a bfloat16 copy of the model (the
GPU presets' rollouts). On CUDA our loop samples without cuDNN's attention
(:func:`agents.lm.transformers_lm.decode_attention`) while the anchors keep torch's choice, which
for bf16 on Hopper is cuDNN: its per-shape plans make a repeat's first pass slow, so read the
medians; ``--tf32`` lets the float32 products use TF32
tensor cores (CUDA), as ``TrainConfig.tf32`` does for the trainer. The per-step times include the
prompts' prefill, spread over the new tokens.

Prints one JSON object: per shape (role and batch), each way's milliseconds per decode step,
new tokens per second, and the ratios ``ours / bare`` and ``ours / hf_generate`` of the
per-step time (medians over ``--repeats``).

    PYTHONPATH=. python benchmarks/bench_generation.py                       # CPU, tiny28
    PYTHONPATH=. python benchmarks/bench_generation.py --device cuda --dims 1.5b --vocab qwen \
        --bf16 [--tf32]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import transformers

from agents.lm.interfaces import SamplingParams
from agents.lm.tokenizer import load_tiny_tokenizer
from agents.lm.transformers_lm import TransformersLM, cache_argument, left_padded
from agents.players.prompts import PromptTemplate, prompt_style
from agents.training.player import enable_tf32
from codea1_env.game.duel import Duel
from codea1_env.game.spaces import observe
from codea1_env.problems import load_source

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout, for scripts/
from scripts.gpu_check import QWEN25_CODER_1_5B, QWEN_VOCAB, SMOKE_DIMS  # noqa: E402

DIMS: dict[str, dict[str, Any]] = {
    "tiny28": {  # 28 layers, as the 1.5B, each as thin as the smoke check's
        **SMOKE_DIMS,
        "num_hidden_layers": QWEN25_CODER_1_5B["num_hidden_layers"],
    },
    "1.5b": QWEN25_CODER_1_5B,
}


def sync(device: torch.device) -> None:
    """Wait for queued GPU work so a timing covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bare_loop(
    model: Any, prompt_ids: list[list[int]], max_new_tokens: int, pad: int, seed: int
) -> int:
    """The smallest eager sampling loop: one forward per token, nothing else."""
    device = next(model.parameters()).device
    keyword = cache_argument()
    input_ids, mask = left_padded(prompt_ids, pad, device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    torch.manual_seed(seed)
    with torch.inference_mode():
        out = model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                    use_cache=True, logits_to_keep=1)  # fmt: skip
        for _ in range(max_new_tokens):
            probs = torch.softmax(out.logits[:, -1].float(), dim=-1)
            ids = torch.multinomial(probs, 1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
            positions = positions[:, -1:] + 1
            cache = out.get(keyword)
            out = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                        use_cache=True, logits_to_keep=1, **{keyword: cache})  # fmt: skip
    return max_new_tokens


def hf_generate(
    model: Any, prompt_ids: list[list[int]], max_new_tokens: int, pad: int, seed: int
) -> int:
    """``model.generate`` sampling exactly ``max_new_tokens`` tokens per row."""
    device = next(model.parameters()).device
    input_ids, mask = left_padded(prompt_ids, pad, device)
    torch.manual_seed(seed)
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=mask,
            do_sample=True,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens,
            pad_token_id=pad,
            use_cache=True,
        )
    return int(out.shape[1] - input_ids.shape[1])


def ours(lm: TransformersLM, texts: list[str], max_new_tokens: int, seed: int) -> int:
    """Our rollout call on the same prompt texts (per-row streams, as the trainer seeds it)."""
    params = SamplingParams(temperature=1.0, top_p=1.0, max_new_tokens=max_new_tokens, seed=seed)
    out = lm.generate_rendered(texts, params)
    return max(len(g.completion_ids) for g in out)


def prompts_for(role: str, batch: int) -> list[str]:
    """``batch`` texts of ``role``'s chat-style prompt over the bank's problems (GT as the code)."""
    style = prompt_style("chat")
    template = PromptTemplate(style.coder if role == "coder" else style.tester)
    source = load_source("bank")
    ids = list(source.ids())
    out = []
    for i in range(batch):
        problem = source[ids[i % len(ids)]]
        obs = dict(observe(Duel(problem)))
        obs["code"] = problem.gt_program
        out.append(template.render_observation(obs, num_tests=8))
    return out


def build_model(dims: str, vocab: int, tokenizer: Any, device: torch.device) -> Any:
    """A randomly initialised Qwen2 of ``dims`` on ``device`` (float32, eval mode)."""
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    config = transformers.Qwen2Config(
        vocab_size=vocab,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=pad,
        **DIMS[dims],
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = pad
    model.generation_config.eos_token_id = eos
    return model.eval()


def measure(
    model: Any,
    tokenizer: Any,
    texts: list[str],
    args: argparse.Namespace,
    device: torch.device,
) -> dict[str, Any]:
    """Each way's median ms per decode step and tokens/s on one shape, alternating ways."""
    pad = int(tokenizer.pad_token_id)
    lm = TransformersLM(model, tokenizer, chat_template=False)
    prompt_ids = [lm.encode_prompt(text) for text in texts]  # the same ids for every way
    ways: dict[str, Callable[[int, int], int]] = {
        "ours": lambda n, s: ours(lm, texts, n, s),
        "bare": lambda n, s: bare_loop(model, prompt_ids, n, pad, s),
        "hf_generate": lambda n, s: hf_generate(model, prompt_ids, n, pad, s),
    }
    for way in ways.values():  # warm-up: kernels, allocator, caches
        way(4, 0)
    per_step: dict[str, list[float]] = {k: [] for k in ways}
    rate: dict[str, list[float]] = {k: [] for k in ways}
    for repeat in range(args.repeats):
        for name, way in ways.items():
            sync(device)
            started = time.perf_counter()
            steps = way(args.max_new_tokens, repeat + 1)
            sync(device)
            seconds = time.perf_counter() - started
            per_step[name].append(seconds / max(steps, 1) * 1000.0)
            rate[name].append(len(prompt_ids) * steps / seconds)
    med = {k: round(statistics.median(v), 3) for k, v in per_step.items()}
    fields: dict[str, Any] = {
        "batch": len(prompt_ids),
        "prompt_tokens_mean": round(statistics.fmean(len(p) for p in prompt_ids), 1),
        "ms_per_step": med,
        "ms_per_step_runs": {k: [round(x, 2) for x in v] for k, v in per_step.items()},
        "tokens_per_s": {k: round(statistics.median(v), 1) for k, v in rate.items()},
        "ours_over_bare": round(med["ours"] / med["bare"], 3),
        "ours_over_hf_generate": round(med["ours"] / med["hf_generate"], 3),
    }
    return fields


def main() -> None:
    """Parse flags, build the model, time every shape, print the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--dims", choices=sorted(DIMS), default="tiny28")
    parser.add_argument("--vocab", choices=("tokenizer", "qwen"), default="tokenizer")
    parser.add_argument(
        "--shapes", default="coder:16,tester:128", help="role:batch pairs (the gpu_check step's)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bf16", action="store_true", help="also time a bfloat16 copy")
    parser.add_argument(
        "--tf32", action="store_true", help="TF32 float32 products, as TrainConfig.tf32 sets"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    plan: list[tuple[str, int]] = []
    for spec in args.shapes.split(","):
        role, _, batch = spec.partition(":")
        if role not in ("coder", "tester") or not batch.isdigit() or int(batch) < 1:
            parser.error(f"--shapes: {spec!r} is not role:batch (coder or tester, batch >= 1)")
        plan.append((role, int(batch)))
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tf32 = enable_tf32(device) if args.tf32 else False
    tokenizer = load_tiny_tokenizer()
    vocab = QWEN_VOCAB if args.vocab == "qwen" else len(tokenizer)
    started = time.perf_counter()
    model = build_model(args.dims, vocab, tokenizer, device)
    models = {"float32": model}
    if args.bf16:
        models["bfloat16"] = copy.deepcopy(model).to(torch.bfloat16)
    shapes = []
    for role, batch in plan:
        texts = prompts_for(role, batch)
        for dtype, m in models.items():
            shapes.append({"role": role, "dtype": dtype,
                           **measure(m, tokenizer, texts, args, device)})  # fmt: skip
    report = {
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tf32": tf32,
        "dims": args.dims,
        "layers": DIMS[args.dims]["num_hidden_layers"],
        "vocab_size": vocab,
        "parameters": sum(p.numel() for p in model.parameters()),
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "shapes": shapes,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
