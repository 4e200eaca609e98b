"""The Docker backend: the core cases of the local backend, in containers.

Needs a Docker engine and the local image built by ``.ci/docker_setup.sh``; without them every
test is skipped and the reason is printed.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid

import pytest

from codea1_env.sandbox.base import CallStatus, Job, JobResult, Limits, Sandbox, SandboxUnavailable
from codea1_env.sandbox.layers import LAYERS
from codea1_env.sandbox.worker.plain import values_equal

pytestmark = pytest.mark.docker

FAST = Limits(call_timeout_s=0.5, setup_timeout_s=2.0, cpu_time_s=2.0, memory_mb=256)
SECRET = "codea1-docker-secret-" + uuid.uuid4().hex


def _skip(reason: str) -> None:
    stream = sys.__stderr__ or sys.stderr
    stream.write(f"\ntests/test_sandbox_docker.py skipped: {reason}\n")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def box():
    try:
        from codea1_env.sandbox.docker_backend import DockerSandbox
    except ImportError as exc:  # pragma: no cover - the module imports no third-party code
        _skip(f"docker backend not importable: {exc}")
    os.environ["CODEA1_DOCKER_SECRET"] = SECRET
    try:
        sandbox = DockerSandbox(workers=2)
    except SandboxUnavailable as exc:
        _skip(str(exc).splitlines()[0][:300])
    finally:
        del os.environ["CODEA1_DOCKER_SECRET"]
    with sandbox:
        yield sandbox


def run_one(box: Sandbox, program: str, *calls: str, limits: Limits = FAST) -> JobResult:
    [result] = box.run([Job(program, calls=tuple(calls), limits=limits)])
    return result


def test_protocol_and_values(box) -> None:
    assert isinstance(box, Sandbox)
    program = "def f(x):\n    return {'x': x, 't': (x, [x * 1.5]), 's': {x}, 'b': bytes([x])}\n"
    result = run_one(box, program, "f(3)")
    assert values_equal(result.calls[0].value, {"x": 3, "t": (3, [4.5]), "s": {3}, "b": b"\x03"})


@pytest.mark.parametrize(
    ("program", "status"),
    [
        ("def f(): return 1 // 0", CallStatus.EXCEPTION),
        ("def f():\n    while True: pass", CallStatus.TIMEOUT),
        ("def f(): return bytearray(10**9)", CallStatus.MEMORY),
        ("import os\ndef f(): os._exit(0)", CallStatus.EARLY_EXIT),
        ("import sys\ndef f(): sys.exit(0)", CallStatus.EARLY_EXIT),
        ("class I(int): pass\ndef f(): return I(1)", CallStatus.NOT_PLAIN),
        ("import os, signal\ndef f(): os.kill(os.getpid(), signal.SIGSEGV)", CallStatus.CRASH),
    ],
)
def test_statuses(box, program: str, status: CallStatus) -> None:
    result = run_one(box, program, "f()", "2 + 2")
    assert result.calls[0].status is status, result
    assert result.calls[1].status is CallStatus.OK and result.calls[1].value == 4


def test_setup_failure_and_stdio(box) -> None:
    [bad] = box.run([Job("def f(:", calls=("1",), limits=FAST)])
    assert bad.setup_status is CallStatus.EXCEPTION
    assert bad.calls[0].status is CallStatus.SETUP_FAILED
    program = "import sys\nprint(sum(int(t) for t in sys.stdin.read().split()))\n"
    [result] = box.run([Job(program, stdin_inputs=("1 2", "40 2"), limits=FAST)])
    assert [c.value for c in result.calls] == ["3\n", "42\n"]


def test_isolation_report(box) -> None:
    report = box.isolation()
    assert report.backend == "docker"
    assert set(report.layers) == set(LAYERS)
    assert report.missing(list(LAYERS)) == [], report.notes
    assert re.fullmatch(r"3\.\d+\.\d+\w*", report.python), report.python  # the image's Python


def test_hostile_programs_are_contained(box) -> None:
    program = (
        (
            "import os, socket\n"
            "def net():\n"
            "    try:\n        socket.create_connection(('127.0.0.1', 22), timeout=1)\n"
            "    except OSError as e:\n        return type(e).__name__\n"
            "def env(): return SECRET in repr(dict(os.environ))\n"
            "def host(): return [os.path.exists(p) for p in PATHS]\n"
            "def fork_bomb():\n    while True:\n        os.fork()\n"
        )
        .replace("SECRET", repr(SECRET))
        .replace("PATHS", repr([__file__, "/etc/shadow", "/root"]))
    )
    result = run_one(box, program, "net()", "env()", "host()", "fork_bomb()", "1")
    assert result.calls[0].value == "PermissionError"
    assert result.calls[1].value is False
    assert result.calls[2].value == [False, False, False]
    assert result.calls[3].status is not CallStatus.OK
    assert result.calls[4].value == 1


def test_parallel_batch(box) -> None:
    program = "import os, time\ndef f():\n    time.sleep(0.4)\n    return os.getuid()\n"
    started = time.monotonic()
    results = box.run([Job(program, calls=("f()",), limits=FAST)] * 4)
    assert time.monotonic() - started < 1.45
    assert len({r.calls[0].value for r in results}) == 2


def test_close_removes_the_containers() -> None:
    from codea1_env.sandbox.docker_backend import DockerSandbox

    try:
        sandbox = DockerSandbox(workers=1)
    except SandboxUnavailable as exc:
        _skip(str(exc).splitlines()[0][:300])
    ids = [worker.container.id for worker in sandbox._workers]
    engine = sandbox.engine
    listed = {c.id for c in engine.containers.list(all=True, filters={"label": "codea1.sandbox"})}
    assert set(ids) <= listed
    socket_dir = sandbox.socket_dir
    sandbox.close()
    sandbox.close()
    import docker

    client = docker.DockerClient(base_url=sandbox.base_url, version="auto")
    try:
        left = {c.id for c in client.containers.list(all=True)}
    finally:
        client.close()
    assert not set(ids) & left
    assert not os.path.exists(socket_dir)


def test_no_engine_is_reported_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    from codea1_env.sandbox import docker_backend

    monkeypatch.setattr(
        docker_backend, "docker_hosts", lambda base_url=None: ["unix:///nonexistent/docker.sock"]
    )
    with pytest.raises(SandboxUnavailable, match=r"no Docker engine answers|codea1\[docker\]"):
        docker_backend.DockerSandbox(workers=1)


def test_missing_image_is_reported_clearly(box) -> None:
    from codea1_env.sandbox.docker_backend import DockerSandbox

    with pytest.raises(SandboxUnavailable, match="docker_setup.sh"):
        DockerSandbox(image="codea1-sandbox:no-such-tag", workers=1)
