"""GPU check of the Code-A1 trainer at Qwen2.5-Coder-1.5B size (random weights, no download).

Run through ``scripts/gpu_check.sh`` (it installs the missing small wheels offline and puts a time
limit on this driver); the header of that script says what to run on a GPU box and which numbers
to expect. Never part of the test suite.

What it does, printing one JSON object per line on stdout (``"check"`` names the line):

* ``env``: interpreter, torch/transformers/peft versions, the GPU, whether bubblewrap exists.
* ``sandbox``: starts the local sandbox (on this machine's CPU). When it refuses to start because
  an isolation layer is missing, the refusal is printed (``sandbox_refused``) and the check goes
  on with ``CODEA1_SANDBOX_REQUIRE=none``. The isolation report (active and inactive layers, the
  notes saying why) and a timed batch of GT programs judged against their own GT tests (the coder
  reward must be 1.0) follow.
* ``model``: a Qwen2 model with Qwen2.5-Coder-1.5B's dimensions (hidden 1536, 28 layers, 12
  heads, 2 KV heads, intermediate 8960, tied embeddings) and the real vocabulary size 151936, built
  from config with random weights and written with the package's own tokenizer (4096 tokens; ids
  above it decode to nothing) to a local directory, which both players load as a model directory
  (the ``1.5b`` preset's path: float32 master weights, bf16 autocast for the updates, rollouts
  from a bf16 copy).
* For each mode (``full``: all weights trained; ``lora``: ``use_lora=True``, the preset's LoRA
  options): the trainer is built from the ``1.5b`` preset in ``code-a1`` mode (two models, two
  optimizers, frozen references), then ``Trainer.step()`` runs ``--steps`` times (no warm start,
  no evaluation, no checkpoint: two 1.5B optimizers would write ~37 GB per checkpoint). Lines:
  ``load`` (seconds, parameters, GPU memory after loading), ``step`` (step, rollout, sandbox and
  update seconds, generation tokens/s overall and per role, peak GPU memory of the step from
  ``torch.cuda.max_memory_allocated``, rewards and losses), ``rollout_sync`` (after the steps:
  how far the rollouts' sampler is from the trained model, on one prompt's logits and, in full
  fine-tuning, in tensors not equal to the trained ones cast), ``gen_bench`` (the coder's
  sampling on the same prompts from the rollouts' sampler, a bf16 copy of the weights under the
  preset's ``rollout_dtype``, and from the float32 model itself), ``mode`` (the mode's totals), or
  ``error`` (the mode failed; the next one still runs).
* ``summary``: every mode's steady-state numbers (its last step) and the total time.

``--smoke`` runs the same code path on CPU with tiny dimensions and one step per mode.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
if os.environ.get("CODEA1_GPU_CHECK_SITE"):  # gpu_check.sh's fallback install folder
    sys.path.append(os.environ["CODEA1_GPU_CHECK_SITE"])

QWEN25_CODER_1_5B: dict[str, Any] = {
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_hidden_layers": 28,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
"""Qwen2.5-Coder-1.5B(-Instruct)'s architecture (its config.json), vocabulary aside."""
QWEN_VOCAB = 151936
"""Qwen2.5's vocabulary size (the embedding and output layer rows)."""

SMOKE_DIMS: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
"""Tiny dimensions of ``--smoke`` (CPU)."""

REQUIRE_ENV = "CODEA1_SANDBOX_REQUIRE"
GIB = float(1 << 30)


def emit(check: str, **fields: Any) -> None:
    """Print one JSON line (``{"check": ..., ...}``) on stdout."""
    print(json.dumps({"check": check, **fields}, default=str), flush=True)


def note(message: str) -> None:
    """A progress line on stderr (stdout carries only JSON)."""
    print(f"[gpu_check] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# measurements


def _cuda(device: str) -> bool:
    return device.startswith("cuda")


def sync(device: str) -> None:
    """Wait for queued GPU work (no-op on CPU) so timings cover it."""
    if _cuda(device):
        import torch

        torch.cuda.synchronize()


def reset_peak(device: str) -> None:
    """Start a new peak-memory window."""
    if _cuda(device):
        import torch

        torch.cuda.reset_peak_memory_stats()


def peak_gb(device: str) -> float | None:
    """``torch.cuda.max_memory_allocated`` since the last reset, GiB (``None`` on CPU)."""
    if not _cuda(device):
        return None
    import torch

    return round(torch.cuda.max_memory_allocated() / GIB, 3)


def allocated_gb(device: str) -> float | None:
    """``torch.cuda.memory_allocated`` now, GiB (``None`` on CPU)."""
    if not _cuda(device):
        return None
    import torch

    return round(torch.cuda.memory_allocated() / GIB, 3)


def host_peak_rss_gb() -> float:
    """This process's peak resident memory, GiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20), 3)


def free_memory(device: str) -> None:
    """Collect garbage and return cached GPU blocks."""
    gc.collect()
    if _cuda(device):
        import torch

        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------------------
# environment and sandbox


def report_env(device: str) -> None:
    """The ``env`` line."""
    import torch

    fields: dict[str, Any] = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "device": device,
        "cpu_count": os.cpu_count(),
        "bwrap": shutil.which("bwrap"),
        "sandbox_require_env": os.environ.get(REQUIRE_ENV),
    }
    for name in ("transformers", "peft", "accelerate", "gymnasium", "numpy"):
        try:
            fields[name] = __import__(name).__version__
        except ImportError:
            fields[name] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        fields.update(
            {
                "gpu": props.name,
                "gpu_memory_gb": round(props.total_memory / GIB, 1),
                "capability": f"{props.major}.{props.minor}",
                "bf16_supported": torch.cuda.is_bf16_supported(),
                "gpu_count": torch.cuda.device_count(),
            }
        )
    emit("env", **fields)


def start_sandbox() -> tuple[Any, bool]:
    """Start the local sandbox; on a refusal for missing layers, print it and relax the minimum.

    Returns ``(sandbox, relaxed)``. ``relaxed``: ``CODEA1_SANDBOX_REQUIRE=none`` was set here (it
    stays set, so the trainer's own sandboxes start too).
    """
    from codea1_env.sandbox.base import SandboxUnavailable
    from codea1_env.sandbox.factory import make_sandbox

    try:
        return make_sandbox("local"), False
    except SandboxUnavailable as exc:
        if os.environ.get(REQUIRE_ENV, "default").strip().lower() in ("", "none"):
            raise  # nothing left to relax: the sandbox cannot start at all
        emit("sandbox_refused", error=str(exc), retry_with=f"{REQUIRE_ENV}=none")
        os.environ[REQUIRE_ENV] = "none"
        return make_sandbox("local"), True


def sandbox_check(n_problems: int) -> dict[str, Any]:
    """The ``sandbox`` line: isolation report and GT programs judged against their GT tests."""
    from codea1_env.problems import load_source
    from codea1_env.scoring.referee import Referee

    started = time.perf_counter()
    sandbox, relaxed = start_sandbox()
    start_seconds = time.perf_counter() - started
    report = sandbox.isolation()
    source = load_source("bank")
    ids = list(source.ids())[:n_problems]
    problems = [source[i] for i in ids]
    batch = []
    for problem in problems:
        suite = "```python\n" + "\n".join(problem.tests[:8]) + "\n```"
        code = "```python\n" + problem.gt_program + "\n```"
        batch.append((problem, [code, code], [[suite, suite], [suite, suite]]))
    with Referee(sandbox=sandbox, owns_sandbox=True) as referee:
        judged_started = time.perf_counter()
        judgements = referee.judge_many(batch, update_book=False)
        seconds = time.perf_counter() - judged_started
        stats = dict(referee.stats)
    rewards = [r for j in judgements for r in j.coder_rewards]
    fields = {
        "backend": report.backend,
        "active": sorted(k for k, v in report.layers.items() if v),
        "inactive": sorted(k for k, v in report.layers.items() if not v),
        "notes": list(report.notes),
        "required": list(getattr(sandbox, "required", ()) or ()),
        "relaxed_to_none": relaxed,
        "workers": len(getattr(sandbox, "cpus", ())),
        "start_seconds": round(start_seconds, 3),
        "problems": len(problems),
        "jobs": int(stats.get("jobs", 0)),
        "calls": int(stats.get("calls", 0)),
        "judge_seconds": round(seconds, 3),
        "jobs_per_s": round(stats.get("jobs", 0) / max(seconds, 1e-9), 1),
        "gt_code_reward_mean": round(statistics.fmean(rewards), 4) if rewards else None,
        "ok": bool(rewards) and min(rewards) == 1.0,
    }
    emit("sandbox", **fields)
    return fields


# ------------------------------------------------------------------------------------------------
# the model directory


def write_model_dir(
    directory: Path, dims: dict[str, Any], vocab: int | None, device: str, seed: int
) -> dict[str, Any]:
    """Build a randomly initialised Qwen2 from config and save it (bf16) with our tokenizer."""
    import torch
    import transformers

    from agents.lm.models import count_parameters
    from agents.lm.tokenizer import load_tiny_tokenizer

    started = time.perf_counter()
    tokenizer = load_tiny_tokenizer()
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    config = transformers.Qwen2Config(
        vocab_size=vocab or len(tokenizer),
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=pad,
        **dims,
    )
    built_on = device
    torch.manual_seed(seed)
    try:
        with torch.device(device):
            model = transformers.Qwen2ForCausalLM(config)
    except (RuntimeError, NotImplementedError) as exc:  # building on the GPU is only faster
        note(f"building on {device} failed ({exc}); building on the CPU")
        built_on = "cpu"
        model = transformers.Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = pad
    model.generation_config.eos_token_id = eos
    params = count_parameters(model)
    model.to(torch.bfloat16).save_pretrained(directory)  # type: ignore[arg-type]
    tokenizer.save_pretrained(directory)
    del model
    free_memory(device)
    size = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())
    fields = {
        "dir": str(directory),
        "architecture": "Qwen2ForCausalLM",
        **{k: v for k, v in dims.items() if k != "rms_norm_eps"},
        "vocab_size": config.vocab_size,
        "tokenizer_vocab": len(tokenizer),
        "parameters": params,
        "parameters_b": round(params / 1e9, 4),
        "saved_dtype": "bfloat16",
        "saved_gb": round(size / GIB, 3),
        "built_on": built_on,
        "seconds": round(time.perf_counter() - started, 2),
    }
    emit("model", **fields)
    return fields


# ------------------------------------------------------------------------------------------------
# one mode


def mode_config(args: argparse.Namespace, name: str, model_dir: Path, run_dir: Path) -> Any:
    """The ``1.5b`` preset with this check's overrides."""
    from agents.training.config import from_preset

    overrides: dict[str, Any] = {
        "exp_name": f"gpu_check_{name}",
        "output_dir": str(run_dir),
        "mode": "code-a1",
        "coder_model": str(model_dir),
        "tester_model": str(model_dir),
        "device": args.device,
        "use_lora": name == "lora",
        "rollout_dtype": args.rollout_dtype,
        "generation_backend": "transformers",
        "steps": args.steps,
        "problems": "bank",
        "problems_per_step": args.problems_per_step,
        "n_codes": args.n_codes,
        "n_suites": args.n_suites,
        "max_code_tokens": args.max_new_tokens,
        "max_test_tokens": args.max_new_tokens,
        "micro_batch_size": args.micro_batch_size,
        "eval_before_after": False,
        "tensorboard": False,
        "progress_bar": False,
        "checkpoint_every": 10_000,
        "seed": args.seed,
    }
    if args.threads:
        overrides["num_threads"] = args.threads
    return from_preset("1.5b", **overrides)


class PhaseTimer:
    """Wraps a trainer's generation and update calls to time them and record peak memory."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.phases: list[dict[str, Any]] = []

    def wrap_generate(self, generate: Callable[..., Any]) -> Callable[..., Any]:
        """Time ``RolePolicies.generate`` (one call per role per step)."""

        def timed(role: str, *args: Any, **kwargs: Any) -> Any:
            sync(self.device)
            reset_peak(self.device)
            started = time.perf_counter()
            out = generate(role, *args, **kwargs)
            sync(self.device)
            seconds = time.perf_counter() - started
            tokens = sum(len(g.completion_ids) for g in out)
            prompt_tokens = [len(g.prompt_ids) for g in out]
            self.phases.append(
                {
                    "phase": f"generate_{role}",
                    "sequences": len(out),
                    "prompt_tokens_mean": round(statistics.fmean(prompt_tokens), 1)
                    if prompt_tokens
                    else 0,
                    "new_tokens": tokens,
                    "seconds": round(seconds, 3),
                    "tokens_per_s": round(tokens / max(seconds, 1e-9), 1),
                    "peak_gpu_mem_gb": peak_gb(self.device),
                }
            )
            return out

        return timed

    def wrap_update(self, name: str, update: Callable[..., Any]) -> Callable[..., Any]:
        """Time ``Player.update`` (one call per player per step)."""

        def timed(samples: Any) -> Any:
            sync(self.device)
            reset_peak(self.device)
            started = time.perf_counter()
            out = update(samples)
            sync(self.device)
            self.phases.append(
                {
                    "phase": f"update_{name}",
                    "samples": len(samples),
                    "tokens": int(sum(len(s.completion_ids) for s in samples)),
                    "seconds": round(time.perf_counter() - started, 3),
                    "peak_gpu_mem_gb": peak_gb(self.device),
                }
            )
            return out

        return timed

    def take(self) -> list[dict[str, Any]]:
        """The phases recorded since the last call."""
        out, self.phases = self.phases, []
        return out


def gen_bench(trainer: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The coder's sampling on the same prompts: the rollouts' sampler vs the float32 model.

    ``rollout``: what the trainer samples from (with ``rollout_dtype="bfloat16"`` the bf16 copy);
    ``fp32``: the trained float32 model itself (TF32 products when ``tf32`` is on).
    """
    from agents.lm.interfaces import SamplingParams
    from agents.lm.transformers_lm import TransformersLM
    from codea1_env.game.duel import Duel
    from codea1_env.game.spaces import observe
    from codea1_env.problems import load_source

    source = load_source("bank")
    ids = list(source.ids())
    prompts = [
        trainer.roles.prompt("coder", observe(Duel(source[ids[i % len(ids)]])))
        for i in range(args.bench_batch)
    ]
    rollout = trainer.roles.lms["coder"]
    live = TransformersLM(
        trainer.coder.model, trainer.coder.tokenizer, chat_template=rollout.uses_chat_template
    )
    device = args.device
    params = SamplingParams(temperature=1.0, top_p=1.0, max_new_tokens=args.bench_tokens, seed=0)
    fields: dict[str, Any] = {
        "sequences": len(prompts),
        "max_new_tokens": args.bench_tokens,
        "rollout_dtype": trainer.config.rollout_dtype,
    }
    for label, lm in (("rollout", rollout), ("fp32", live)):
        sync(device)
        reset_peak(device)
        started = time.perf_counter()
        out = lm.generate(prompts, params)
        sync(device)
        seconds = time.perf_counter() - started
        tokens = sum(len(g.completion_ids) for g in out)
        fields[f"{label}_tokens_per_s"] = round(tokens / max(seconds, 1e-9), 1)
        fields[f"{label}_seconds"] = round(seconds, 3)
        fields[f"{label}_peak_gpu_mem_gb"] = peak_gb(device)
    fields["rollout_speedup"] = round(
        fields["rollout_tokens_per_s"] / max(fields["fp32_tokens_per_s"], 1e-9), 2
    )
    return fields


def rollout_sync(trainer: Any) -> dict[str, Any]:
    """How far each player's rollout sampler is from its trained model, after the updates.

    ``logits_rel_gap``: the largest gap between the two models' logits on one prompt over the
    largest logit (float32 sampling: 0; a bf16 copy: its rounding). ``stale_tensors``: in full
    fine-tuning, the copy's tensors that differ from the trained ones cast to the copy's dtype
    (must be 0: the copy is refreshed after every update).
    """
    import torch

    fields: dict[str, Any] = {}
    for name, player in (("coder", trainer.coder), ("tester", trainer.tester)):
        sampler = trainer.roles.lms[name].model
        ids = torch.tensor([list(range(10, 74))], device=next(sampler.parameters()).device)
        with torch.no_grad():
            live = player.model(input_ids=ids).logits.float()
            mine = sampler(input_ids=ids).logits.float()
        gap = (mine - live).abs().max().item() / max(live.abs().max().item(), 1e-12)
        stale = None
        if sampler is not player.model and not player.config.use_lora:
            trained = dict(player.model.named_parameters())
            stale = sum(
                not torch.equal(p, trained[n].detach().to(p.dtype))
                for n, p in sampler.named_parameters()
            )
        fields[name] = {
            "sampler": "trained model" if sampler is player.model else "rollout copy",
            "dtype": str(next(sampler.parameters()).dtype),
            "logits_rel_gap": round(gap, 6),
            "stale_tensors": stale,
        }
    return fields


def _trainable(model: Any) -> tuple[int, int]:
    seen: set[int] = set()
    total = trainable = 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        if p.requires_grad:
            trainable += p.numel()
    return trainable, total


STEP_KEYS = {
    "charts/step_seconds": "step_seconds",
    "charts/rollout_seconds": "rollout_seconds",
    "charts/rollout_tokens": "rollout_tokens",
    "charts/tokens_per_s": "gen_tokens_per_s",
    "charts/sandbox_seconds": "sandbox_seconds",
    "charts/update_seconds": "update_seconds",
    "coder/reward": "coder_reward",
    "coder/gt_pass_rate": "coder_gt_pass_rate",
    "tester/reward": "tester_reward",
    "tester/validity": "tester_validity",
    "losses/coder_pg_loss": "coder_pg_loss",
    "losses/coder_kl": "coder_kl",
    "losses/coder_grad_norm": "coder_grad_norm",
    "losses/tester_pg_loss": "tester_pg_loss",
    "losses/tester_kl": "tester_kl",
    "losses/tester_grad_norm": "tester_grad_norm",
}


def run_mode(
    name: str, args: argparse.Namespace, model_dir: Path, work: Path, first: bool
) -> dict[str, Any]:
    """Build the trainer for one mode, run its steps, print its lines, free the GPU."""
    from agents.training.trainer import Trainer

    device = args.device
    run_dir = work / f"run_{name}"
    config = mode_config(args, name, model_dir, run_dir)
    free_memory(device)
    reset_peak(device)
    started = time.perf_counter()
    trainer = Trainer(config, run_dir=run_dir, log=note)
    try:
        sync(device)
        load_seconds = time.perf_counter() - started
        coder_trainable, coder_total = _trainable(trainer.coder.model)
        assert trainer.tester is not None
        emit(
            "load",
            mode=name,
            seconds=round(load_seconds, 2),
            players=2,
            parameters_per_player=coder_total,
            trainable_per_player=coder_trainable,
            kl_reference=(
                "adapters disabled"
                if config.use_lora
                else ("frozen copy" if trainer.coder.reference is not None else None)
            ),
            bf16_autocast=config.bf16,
            tf32=config.tf32,
            rollout_dtype=config.rollout_dtype,
            rollout_weights=[repr(w) for w in trainer.roles.rollout_weights],
            gradient_checkpointing=config.gradient_checkpointing,
            lora={"r": config.lora_r, "alpha": config.lora_alpha} if config.use_lora else None,
            model_device=str(next(trainer.coder.model.parameters()).device),
            model_dtype=str(next(trainer.coder.model.parameters()).dtype),
            gpu_allocated_gb=allocated_gb(device),
            gpu_peak_gb=peak_gb(device),
        )
        if first:
            report = trainer.referee.sandbox.isolation()  # starts the trainer's own sandbox
            emit("trainer_sandbox", report=str(report), notes=list(report.notes))
        timer = PhaseTimer(device)
        trainer.roles.generate = timer.wrap_generate(trainer.roles.generate)  # type: ignore[method-assign]
        for player in (trainer.coder, trainer.tester):
            player.update = timer.wrap_update(player.name, player.update)  # type: ignore[method-assign]
        rows = []
        mode_peak = 0.0
        for _ in range(config.steps):
            sync(device)
            reset_peak(device)
            step_started = time.perf_counter()
            row = trainer.step()
            sync(device)
            wall = time.perf_counter() - step_started
            phases = timer.take()
            peaks = [p["peak_gpu_mem_gb"] for p in phases if p["peak_gpu_mem_gb"] is not None]
            step_peak = max(peaks) if peaks else peak_gb(device)
            mode_peak = max(mode_peak, step_peak or 0.0)
            fields: dict[str, Any] = {
                new: row.get(old) for old, new in STEP_KEYS.items() if old in row
            }
            for key, value in fields.items():
                if isinstance(value, float):
                    fields[key] = round(value, 4)
            fields.update(
                {
                    "mode": name,
                    "step": row["step"],
                    "wall_seconds": round(wall, 3),
                    "peak_gpu_mem_gb": step_peak,
                    "host_peak_rss_gb": host_peak_rss_gb(),
                    "phases": phases,
                }
            )
            emit("step", **fields)
            rows.append(fields)
        emit("rollout_sync", mode=name, **rollout_sync(trainer))
        if args.bench_batch > 0:
            emit("gen_bench", mode=name, **gen_bench(trainer, args))
        last = rows[-1]
        summary = {
            "mode": name,
            "ok": True,
            "steps": len(rows),
            "load_seconds": round(load_seconds, 2),
            "last_step_seconds": last["wall_seconds"],
            "last_gen_tokens_per_s": last.get("gen_tokens_per_s"),
            "last_update_seconds": last.get("update_seconds"),
            "peak_gpu_mem_gb": mode_peak if _cuda(device) else None,
            "seconds": round(time.perf_counter() - started, 2),
        }
        emit("mode", **summary)
        return summary
    finally:
        trainer.close()
        del trainer
        free_memory(device)
        shutil.rmtree(run_dir, ignore_errors=True)


# ------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Flags; ``--smoke`` changes the defaults to the tiny CPU run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny dims, CPU, 1 step per mode")
    parser.add_argument("--modes", default="full,lora", help="comma-separated: full, lora")
    parser.add_argument("--device", default=None, help="default: cuda (smoke: cpu)")
    parser.add_argument("--steps", type=int, default=None, help="RL steps per mode (2; smoke 1)")
    parser.add_argument("--problems-per-step", type=int, default=None)
    parser.add_argument("--n-codes", type=int, default=None)
    parser.add_argument("--n-suites", type=int, default=None)
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--micro-batch-size", type=int, default=None)
    parser.add_argument(
        "--vocab",
        choices=("qwen", "tokenizer"),
        default=None,
        help="qwen: 151936 rows (the real size, default); tokenizer: the shipped 4096 (smoke)",
    )
    parser.add_argument("--bench-batch", type=int, default=None, help="gen_bench prompts (0: off)")
    parser.add_argument("--bench-tokens", type=int, default=None, help="gen_bench new tokens")
    parser.add_argument("--sandbox-problems", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--budget-s", type=float, default=450.0, help="skip a mode past this")
    parser.add_argument("--work-dir", default=None, help="default: a temporary directory")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rollout-dtype",
        choices=("float32", "bfloat16"),
        default="bfloat16",
        help="what the rollouts sample from (the 1.5b preset's bfloat16 copy by default)",
    )
    args = parser.parse_args(argv)
    gpu = {
        "device": "cuda",
        "steps": 2,
        "problems_per_step": 2,
        "n_codes": 8,
        "n_suites": 8,
        "max_new_tokens": 128,
        "micro_batch_size": 8,
        "vocab": "qwen",
        "bench_batch": 64,
        "bench_tokens": 64,
        "sandbox_problems": 32,
    }
    smoke = {
        "device": "cpu",
        "steps": 1,
        "problems_per_step": 1,
        "n_codes": 2,
        "n_suites": 2,
        "max_new_tokens": 16,
        "micro_batch_size": 4,
        "vocab": "tokenizer",
        "bench_batch": 4,
        "bench_tokens": 8,
        "sandbox_problems": 4,
        "threads": 1,
    }
    for key, value in (smoke if args.smoke else gpu).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def _on_sigterm(signum: int, frame: Any) -> None:
    """``timeout`` sends SIGTERM: say so, then unwind (sandbox stopped, work directory removed)."""
    del frame
    emit("error", stage="timeout", message=f"signal {signum}: the time limit was reached")
    raise SystemExit(124)


def main(argv: list[str] | None = None) -> int:
    """Run the check; exit status 0 when every mode and the sandbox check passed."""
    args = parse_args(argv)
    started = time.perf_counter()
    signal.signal(signal.SIGTERM, _on_sigterm)
    import torch

    if _cuda(args.device) and not torch.cuda.is_available():
        emit("error", stage="env", message="CUDA is not available (use --smoke for the CPU run)")
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    report_env(args.device)
    try:
        sandbox = sandbox_check(args.sandbox_problems)
    except Exception as exc:  # without a sandbox nothing can be judged
        emit("error", stage="sandbox", type=type(exc).__name__, message=str(exc)[:2000])
        return 1
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in ("full", "lora")]
    if unknown:
        emit("error", stage="args", message=f"unknown modes {unknown}")
        return 2
    dims = SMOKE_DIMS if args.smoke else QWEN25_CODER_1_5B
    vocab = QWEN_VOCAB if args.vocab == "qwen" else None
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="codea1_gpu_check_"))
    work.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    try:
        try:
            model = write_model_dir(work / "model", dims, vocab, args.device, args.seed)
        except Exception as exc:
            emit("error", stage="model", type=type(exc).__name__, message=str(exc)[:2000])
            return 1
        last_seconds = 0.0
        for index, name in enumerate(modes):
            elapsed = time.perf_counter() - started
            if index and elapsed + last_seconds > args.budget_s:
                emit("skipped", mode=name, elapsed_s=round(elapsed, 1), budget_s=args.budget_s)
                results.append({"mode": name, "ok": False, "skipped": True})
                continue
            mode_started = time.perf_counter()
            try:
                results.append(run_mode(name, args, work / "model", work, first=index == 0))
            except Exception as exc:  # report and go on with the next mode
                emit(
                    "error",
                    mode=name,
                    type=type(exc).__name__,
                    message=str(exc)[:2000],
                    traceback=traceback.format_exc()[-4000:],
                    peak_gpu_mem_gb=peak_gb(args.device),
                )
                results.append({"mode": name, "ok": False})
                free_memory(args.device)
            last_seconds = time.perf_counter() - mode_started
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ok = bool(sandbox["ok"]) and bool(results) and all(r.get("ok") for r in results)
    emit(
        "summary",
        ok=ok,
        smoke=args.smoke,
        device=args.device,
        model_parameters_b=model["parameters_b"],
        vocab_size=model["vocab_size"],
        workload={
            "problems_per_step": args.problems_per_step,
            "n_codes": args.n_codes,
            "n_suites": args.n_suites,
            "max_new_tokens": args.max_new_tokens,
            "steps": args.steps,
        },
        sandbox_relaxed_to_none=sandbox["relaxed_to_none"],
        modes=results,
        total_seconds=round(time.perf_counter() - started, 1),
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
