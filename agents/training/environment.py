"""What a run ran on: one line of ``environment.jsonl`` in the run directory per (re)start.

A run's numbers depend on more than its config: the Python that runs the sandboxed programs
decides some of their values (``sum()`` of floats changed in Python 3.12, see the README's
Sandbox section), the library versions decide the models' arithmetic, and so does the CPU: torch
picks its kernels by the instruction sets the processor has (AVX2, AVX-512, ...) and by its thread
count, and other kernels round the same sums differently, so a CPU run repeats to the digit on one
machine and not across processors (the README's tiny table). The trainer appends one
record each time it starts, fresh or resumed, so a run resumed on another machine shows it;
``codea1 eval`` puts one record in ``eval.json`` (``"environment"``).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from codea1_env.atomic import write_text_atomic

FILE = "environment.jsonl"
PACKAGES = (
    "codea1",
    "torch",
    "transformers",
    "peft",
    "accelerate",
    "vllm",
    "gymnasium",
    "numpy",
)
"""The distributions whose installed versions a record lists (absent ones are left out)."""


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed version of each of ``names`` that is installed."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model name (Linux's ``/proc/cpuinfo``; else ``platform.processor()``)."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_record() -> dict[str, Any]:
    """The CPU the run computes on: model, cores and, once torch is loaded, its kernels' level.

    ``torch_capability`` (``torch.backends.cpu.get_cpu_capability()``: ``"AVX2"``,
    ``"AVX512"``, ...) and ``torch_threads`` decide which kernels the models' CPU arithmetic
    runs through; torch is not imported for them (absent when nothing loaded it).
    """
    record: dict[str, Any] = {"model": cpu_model(), "cores": os.cpu_count()}
    torch = sys.modules.get("torch")
    if torch is not None:
        capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
        if callable(capability):  # torch >= 2.1
            record["torch_capability"] = capability()
        record["torch_threads"] = torch.get_num_threads()
    return record


def environment_record(step: int | None, device: str | None, scorer: Any) -> dict[str, Any]:
    """What this process runs on, starting at ``step``.

    Args:
        step: The step a run starts from (0 for a fresh run, the checkpoint's on a resume);
            None leaves the key out (an evaluation).
        device: The torch device the players are on (None: not recorded).
        scorer: A referee or sandbox; its ``isolation()`` report, where it has one, gives the
            sandbox's backend, layers and Python (a stand-in without one records none).
    """
    report = scorer.isolation() if callable(getattr(scorer, "isolation", None)) else None
    sandbox = None
    if report is not None:
        sandbox = {
            "backend": report.backend,
            "python": report.python,
            "layers_off": sorted(name for name, on in report.layers.items() if not on),
        }
    record: dict[str, Any] = {} if step is None else {"step": step}
    record.update(
        time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        python=platform.python_version(),
        platform=platform.platform(),
        packages=package_versions(),
        cpu=cpu_record(),
        sandbox=sandbox,
    )
    if device is not None:
        record["device"] = device
    return record


def append_environment(run_dir: Path, record: dict[str, Any]) -> None:
    """Append ``record`` to ``run_dir/environment.jsonl``; the file is rewritten atomically."""
    path = run_dir / FILE
    before = path.read_text() if path.is_file() else ""  # whole lines: always written atomically
    write_text_atomic(path, before + json.dumps(record, sort_keys=True) + "\n")
