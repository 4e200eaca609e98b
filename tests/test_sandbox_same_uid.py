"""Jobs that run under the caller's own uid (no root, so no unprivileged uid to drop to).

A process may open the ``/proc/PID/mem`` of any dumpable process of its uid and rewrite it. A job
that could do so to its zygote would control every later job of that worker (GT jobs included),
and one that could do so to a job running beside it could forge that job's results. The zygote is
therefore not dumpable (nor is anything it forks), and under bubblewrap it is the pid namespace's
init itself (``--as-pid-1``), so no reaper of the job's uid sits in the job's namespace.

These tests run the sandbox as the ``nobody`` user, with Debian's ``/usr/bin/python3`` (the
project's interpreter may lie in a private home), and skip where that cannot be set up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from codea1_env.sandbox.confinement import usable_bwrap

REPO = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3"

# The job: wait until the other worker's job runs too, then try every process it can see.
JOB = """import os, time
def f():
    time.sleep(0.3)
    opened = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/mem" % entry, "r+b"):
                opened.append(int(entry))
        except OSError:
            pass
    return [os.getpid(), opened]
"""

DRIVER = """
import json, os, sys
from codea1_env.sandbox.base import Job
from codea1_env.sandbox.local import LocalSandbox
job = Job(sys.argv[2], calls=("f()",))
with LocalSandbox(workers=2, require=(), confinement=sys.argv[1]) as box:
    results = box.run([job] * 4)
    print(json.dumps({
        "backend": box.isolation().backend,
        "host": os.getpid(),
        "uid_dropped": bool(box.isolation().layers.get("unprivileged_uid")),
        "servers": box.worker_pids(),
        "values": [r.calls[0].value for r in results],
        "errors": [r.calls[0].error or r.setup_error for r in results],
    }))
"""


def _run_as_nobody(confinement: str) -> dict:
    if os.geteuid() != 0:
        pytest.skip("needs root to run a process as another user")
    if shutil.which("su") is None or not os.path.exists(SYSTEM_PYTHON):
        pytest.skip(f"needs su and {SYSTEM_PYTHON}")
    version = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if version != str(tuple(sys.version_info[:2])):
        pytest.skip(f"{SYSTEM_PYTHON} is Python {version}, the project's is {sys.version_info[:2]}")
    path = os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])
    command = [
        "su",
        "nobody",
        "-s",
        "/bin/sh",
        "-c",
        'cd /tmp && PYTHONPATH="$0" exec "$1" -c "$2" "$3" "$4"',
        path,
        SYSTEM_PYTHON,
        DRIVER,
        confinement,
        JOB,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        pytest.skip(f"the sandbox does not start as nobody here: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(usable_bwrap() is None, reason="needs a bubblewrap that runs here")
def test_under_bubblewrap_a_same_uid_job_can_rewrite_no_process() -> None:
    report = _run_as_nobody("bwrap")
    assert report["backend"] == "local/bwrap" and not report["uid_dropped"]
    for (pid, opened), error in zip(report["values"], report["errors"], strict=True):
        assert error == ""
        assert pid > 1  # the zygote is the namespace's pid 1
        assert opened == [], f"a job of the caller's uid could rewrite {opened}"


@pytest.mark.parametrize("confinement", ["unshare", "none"])
def test_without_bubblewrap_a_same_uid_job_reaches_neither_zygote_nor_other_job(
    confinement: str,
) -> None:
    """``unshare``: the zygote's user namespace also keeps the caller out of reach; ``none``
    cannot (documented in ISOLATION.md, with a note in the isolation report)."""
    report = _run_as_nobody(confinement)
    assert not report["uid_dropped"]
    jobs = {pid for pid, _ in report["values"]}
    protected = set(report["servers"]) | jobs
    if report["backend"] == "local/unshare":
        protected.add(report["host"])
    for (_, opened), error in zip(report["values"], report["errors"], strict=True):
        assert error == ""
        reached = protected & set(opened)
        assert not reached, (
            f"a job reached the zygote, another job or the caller: {sorted(reached)}"
        )
