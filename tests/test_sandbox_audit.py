"""Runtime telemetry of the sandbox: the job child's audit hook and the ``audit_*`` events.

Each hostile program must be *counted* (``JobResult.events["audit_<kind>"]``) and still
*contained*: counting never blocks anything, the sandbox's layers keep doing the enforcing.
Benign programs, including ones that import modules and use files in their scratch directory,
must produce no audit event at all. The result channel must treat forged audit records as
untrusted telemetry: validated, clamped, limited in number, and unable to move a deadline.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from codea1_env.sandbox.base import CallStatus, Job, JobResult, Limits, Sandbox, SandboxUnavailable
from codea1_env.sandbox.child import MAX_AUDIT_RECORDS, audit_counts
from codea1_env.sandbox.worker.protocol import AUDIT_COUNT_CAP, AUDIT_KEYS

LIMITS = Limits(call_timeout_s=2.0, setup_timeout_s=3.0, cpu_time_s=5.0, memory_mb=512)
AUDIT_EVENT_KEYS = {f"audit_{key}" for key in AUDIT_KEYS}
OK, EXC, CRASH = CallStatus.OK, CallStatus.EXCEPTION, CallStatus.CRASH


def run_one(sandbox: Sandbox, program: str, calls: tuple[str, ...] = ("f()",), **kw) -> JobResult:
    [result] = sandbox.run([Job(program, calls=calls, limits=kw.pop("limits", LIMITS), **kw)])
    return result


def audit(result: JobResult) -> dict[str, int]:
    """The audit events of a result, without the ``audit_`` prefix."""
    return {k[6:]: v for k, v in result.events.items() if k in AUDIT_EVENT_KEYS}


def statuses(result: JobResult) -> list[CallStatus]:
    return [call.status for call in result.calls]


def still_answers(sandbox: Sandbox) -> None:
    result = run_one(sandbox, "def f():\n    return 41 + 1\n")
    assert result.calls[0].value == 42
    assert audit(result) == {}


# --------------------------------------------------------------------------- each kind is counted


def test_kill_of_pid_1_and_of_the_parent_is_counted_and_fails(sandbox: Sandbox) -> None:
    program = (
        "import os, signal\n"
        "def f():\n"
        "    os.kill(1, signal.SIGKILL)\n"
        "def g():\n"
        f"    os.kill({os.getpid()}, signal.SIGKILL)\n"
        "def h():\n"
        "    os.killpg(1, signal.SIGTERM)\n"
        "def i():\n"
        "    signal.pthread_kill(threading.main_thread().ident, 0)\n"
        "import threading\n"
    )
    result = run_one(sandbox, program, ("f()", "g()", "h()", "i()"))
    # f, g: denied (not our uid, not our pid namespace). h is kill(-1): Linux reports success
    # when every target refused, so it may "succeed" having signalled nothing.
    assert statuses(result)[:2] == [EXC, EXC]
    assert statuses(result)[2] in (OK, EXC) and statuses(result)[3] is OK
    assert audit(result) == {"kill": 4}
    still_answers(sandbox)


def test_a_program_that_kills_itself_is_still_counted(sandbox: Sandbox) -> None:
    program = "import os, signal\ndef f():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    result = run_one(sandbox, program, ("f()", "f()"))
    assert statuses(result) == [CRASH, CRASH]
    assert result.events["child_runs"] == 2
    assert audit(result) == {"kill": 2}  # one per child, summed over the job's children


def test_spawning_is_counted_and_the_spawned_process_is_confined(sandbox: Sandbox) -> None:
    marker = f"/tmp/codea1-audit-spawn-{uuid.uuid4().hex}"
    child_code = f"open({marker!r}, 'w').write('escaped')"
    program = (
        "import os, subprocess, sys\n"
        "def f():\n"
        f"    done = subprocess.run([sys.executable, '-c', {child_code!r}], capture_output=True)\n"
        "    return done.returncode\n"
        "def g():\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    return 1\n"
    )
    try:
        result = run_one(sandbox, program, ("f()", "g()"))
        assert statuses(result) == [OK, OK]
        if sandbox.isolation().layers.get("readonly_host"):
            assert result.calls[0].value != 0  # the child could not write outside its scratch
        assert audit(result)["spawn"] >= 2
        if sandbox.isolation().layers.get("filesystem_view"):
            assert not os.path.exists(marker)
    finally:
        if os.path.exists(marker):
            os.unlink(marker)
    still_answers(sandbox)


def test_writes_and_reads_outside_scratch_are_counted_apart(sandbox: Sandbox) -> None:
    target = f"/tmp/codea1-audit-{uuid.uuid4().hex}"
    other = f"/tmp/codea1-audit-{uuid.uuid4().hex}"
    program = (
        "import os\n"
        "def write():\n"
        f"    open({other!r}, 'w').write('a')\n"
        "def write_unique():\n"
        f"    open({target!r}, 'w').write('a')\n"
        "def remove():\n"
        "    os.remove('../../x')\n"
        "def read():\n"
        "    return open('/etc/hostname').read()\n"
        "def listing():\n"
        "    return sorted(os.listdir('/'))\n"
    )
    calls = ("write()", "write_unique()", "remove()", "read()", "listing()")
    try:
        result = run_one(sandbox, program, calls)
        if sandbox.isolation().layers.get("readonly_host"):
            assert statuses(result)[:3] == [EXC, EXC, EXC]
        else:  # without bubblewrap /tmp stays writable (a missing layer, in the report)
            assert statuses(result)[:3] == [OK, OK, EXC]
        assert audit(result) == {"fs_write_outside": 3, "fs_read_outside": 2}
        if sandbox.isolation().layers.get("filesystem_view"):
            assert not os.path.exists(target)
    finally:
        for path in (target, other):
            if os.path.exists(path):
                os.unlink(path)
    still_answers(sandbox)


def test_network_attempts_are_counted_and_get_nowhere(sandbox: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    program = (
        "import socket\n"
        "def f(port):\n"
        "    socket.create_connection(('127.0.0.1', port), timeout=0.5)\n"
    )
    try:
        result = run_one(sandbox, program, ("f(9)", f"f({port})"))
        assert statuses(result) == [EXC, EXC]
        assert audit(result)["network"] >= 2
        if sandbox.isolation().layers.get("no_network"):
            with pytest.raises(socket.timeout):
                server.accept()
    finally:
        server.close()


def test_ctypes_is_counted_and_native_calls_are_its_blind_spot(sandbox: Sandbox) -> None:
    program = (
        "import ctypes\n"
        "def f():\n"
        "    libc = ctypes.CDLL(None)\n"
        "    return libc.kill(1, 0)\n"  # a probe only: signal 0 delivers nothing
    )
    result = run_one(sandbox, program)
    assert statuses(result) == [OK]
    assert result.calls[0].value == -1  # EPERM: ctypes does not get around the uid/namespace
    counted = audit(result)
    assert counted["native"] >= 1
    assert "kill" not in counted  # documented: native code raises no Python audit event


def test_hook_tampering_is_counted_and_cannot_hide_later_events(sandbox: Sandbox) -> None:
    program = (
        "import os, sys\n"
        "def veto(event, args):\n"
        "    if event == 'os.kill':\n"
        "        raise RuntimeError('hidden')\n"
        "sys.addaudithook(veto)\n"
        "sys.settrace(lambda *a: None)\n"
        "def f():\n"
        "    os.kill(1, 0)\n"
    )
    result = run_one(sandbox, program)
    assert result.calls[0].status is EXC and "hidden" in result.calls[0].error
    counted = audit(result)
    assert counted["kill"] == 1  # the sandbox's hook runs first and is never removed
    assert counted["tamper"] >= 2


def test_stdio_jobs_carry_audit_events(sandbox: Sandbox) -> None:
    program = "import os\nprint(len(os.listdir('/')) > 0)\n"
    job = Job(program, stdin_inputs=("", ""), limits=LIMITS)
    [result] = sandbox.run([job])
    assert statuses(result) == [OK, OK]
    assert audit(result) == {"fs_read_outside": 2}  # one child per input


# --------------------------------------------------------------------------- benign programs


BENIGN = """
import bisect, collections, dataclasses, fractions, heapq, json, os, shutil, statistics, tempfile
from pathlib import Path

Point = collections.namedtuple("Point", "x y")

@dataclasses.dataclass
class Box:
    width: int
    height: int

def f(values):
    Path("notes.txt").write_text(json.dumps(values))
    os.makedirs("work/deep", exist_ok=True)
    with open("work/deep/data.bin", "wb") as fh:
        fh.write(bytes(range(10)))
    os.rename("work/deep/data.bin", "work/data.bin")
    shutil.copyfile("work/data.bin", "copy.bin")
    listing = sorted(os.listdir("."))
    shutil.rmtree("work")
    fd, name = tempfile.mkstemp()
    os.close(fd)
    os.remove(name)
    with open(os.devnull, "w") as sink:
        sink.write("quiet")
    with open(os.path.join(os.getcwd(), "absolute.txt"), "w") as fh:
        fh.write(os.environ["TMPDIR"])
    os.remove(os.path.abspath("absolute.txt"))
    heap = list(values)
    heapq.heapify(heap)
    return [
        statistics.mean(values), json.loads(Path("notes.txt").read_text()), listing,
        Point(1, 2).x, Box(2, 3).width, str(fractions.Fraction(1, 3)), heap[0],
        bisect.bisect(sorted(values), 2), len(os.urandom(4)),
    ]
"""


def test_benign_programs_raise_no_audit_event(sandbox: Sandbox) -> None:
    from benchmarks.bench_sandbox import CALLS, EXPECTED, PROGRAM

    jobs = [
        Job(PROGRAM, calls=CALLS, limits=LIMITS),
        Job(BENIGN, calls=("f([3, 1, 2])", "f([5, 4])"), limits=LIMITS),
        Job("import sys\nprint(sum(map(int, sys.stdin.read().split())))\n", stdin_inputs=("1 2",)),
    ]
    bench, benign, stdio = sandbox.run(jobs)
    assert [c.value for c in bench.calls] == EXPECTED
    assert statuses(benign) == [OK, OK], benign.calls
    assert benign.calls[0].value[1:3] == [[3, 1, 2], ["copy.bin", "notes.txt", "work"]]
    assert stdio.calls[0].value == "3\n"
    for result in (bench, benign, stdio):
        assert audit(result) == {}, result.events


# --------------------------------------------------------------------------- the result channel


def forge(records: str) -> str:
    """A program whose call writes the given records (Python expressions) to the channel."""
    return (
        "import os, struct\n"
        "def send(text):\n"
        "    data = text.encode()\n"
        "    os.write(3, struct.pack('>I', len(data)) + data)\n"
        "def f():\n"
        f"    {records}\n"
        "    return 7\n"
        "def g():\n"
        "    return 8\n"
    )


def test_audit_counts_validation() -> None:
    assert audit_counts({"k": "audit", "c": {}}) == {}
    assert audit_counts({"k": "audit", "c": {"kill": 2, "native": 0}}) == {"kill": 2}
    assert audit_counts({"c": {"spawn": AUDIT_COUNT_CAP * 5}}) == {"spawn": AUDIT_COUNT_CAP}
    for bad in (
        {"k": "audit"},
        {"c": [1, 2]},
        {"c": {"kill": -1}},
        {"c": {"kill": 1.5}},
        {"c": {"kill": True}},
        {"c": {"kill": "3"}},
        {"c": {"reboot": 1}},
    ):
        with pytest.raises(ValueError):
            audit_counts(bad)


def test_forged_audit_counts_are_clamped_and_change_no_value(sandbox: Sandbox) -> None:
    program = forge("""send('{"k":"audit","c":{"network":%d}}' % (10 ** 12))""")
    result = run_one(sandbox, program)
    assert statuses(result) == [OK] and result.calls[0].value == 7
    assert audit(result) == {"network": AUDIT_COUNT_CAP}


@pytest.mark.parametrize(
    "record",
    [
        '{"k":"audit","c":{"kill":-1}}',
        '{"k":"audit","c":{"reboot":1}}',
        '{"k":"audit","c":"everything"}',
        '{"k":"audit"}',
    ],
)
def test_malformed_audit_records_break_the_channel(sandbox: Sandbox, record: str) -> None:
    result = run_one(sandbox, forge(f"send({record!r})"), ("f()", "g()"))
    assert result.calls[0].status is CRASH
    assert "malformed result channel" in result.calls[0].error
    assert result.calls[1].value == 8  # the next call runs in a fresh child
    assert result.events["protocol_violations"] == 1


def test_audit_records_beyond_the_allowance_are_ignored(sandbox: Sandbox) -> None:
    program = forge(
        """for i in range(1, 500):\n        send('{"k":"audit","c":{"tamper":%d}}' % i)"""
    )
    result = run_one(sandbox, program)
    assert statuses(result) == [OK]
    allowance = MAX_AUDIT_RECORDS + 1 + 1  # per child: the fixed allowance, setup, one call
    assert audit(result) == {"tamper": allowance}


def test_audit_records_do_not_extend_a_deadline(sandbox: Sandbox) -> None:
    program = forge(
        "import time\n"
        "    for i in range(1, 60):\n"
        """        send('{"k":"audit","c":{"kill":1}}')\n"""
        "        time.sleep(0.05)"
    )
    limits = Limits(call_timeout_s=0.5, setup_timeout_s=2.0, cpu_time_s=5.0, timeout_clock="wall")
    started = time.monotonic()
    result = run_one(sandbox, program, limits=limits)
    assert result.calls[0].status is CallStatus.TIMEOUT
    assert time.monotonic() - started < 2.5
    assert audit(result) == {"kill": 1}


def test_audit_records_do_not_extend_a_cpu_deadline(sandbox: Sandbox) -> None:
    # 59 rounds of 0.05 s of CPU each, an audit record after each: the call's 0.5 s of CPU ends
    # it, not the wall-clock backstop (50 x 0.5 s), whatever the machine's load.
    program = forge(
        "import time\n"
        "    for i in range(1, 60):\n"
        """        send('{"k":"audit","c":{"kill":1}}')\n"""
        "        t = time.process_time()\n"
        "        while time.process_time() - t < 0.05: pass"
    )
    limits = Limits(call_timeout_s=0.5, cpu_time_s=10.0, wall_backstop_factor=50.0)
    result = run_one(sandbox, program, limits=limits)
    assert result.calls[0].status is CallStatus.TIMEOUT
    assert "CPU time limit of the call (0.5s)" in result.calls[0].error
    assert audit(result) == {"kill": 1}


@pytest.mark.parametrize("claim", ["1e9", "-5.0", '"x"', "1e999"])
def test_a_forged_cpu_claim_gains_at_most_the_wall_clock_backstop(
    sandbox: Sandbox, claim: str
) -> None:
    # Call 0 forges its own record with a CPU time of its choosing, then computes forever
    # in what the trusted side takes for call 1, whose CPU budget counts from that claim. A
    # claim above the child's real CPU time is capped by the kernel's figure (so the call
    # gets up to the backstop); one that is no time counts from zero.
    program = forge(
        """send('{"k":"call","i":0,"s":"ok","v":7,"c":%s}' % CLAIM)\n"""
        "    while True: pass"
    ).replace("CLAIM", repr(claim))
    limits = Limits(call_timeout_s=0.3, cpu_time_s=10.0, wall_backstop_factor=4.0)
    started = time.monotonic()
    result = run_one(sandbox, program, ("f()", "g()", "g()"), limits=limits)
    elapsed = time.monotonic() - started
    assert result.calls[0].value == 7  # what it forged, for itself
    assert result.calls[1].status is CallStatus.TIMEOUT
    if claim == "1e9":
        assert "wall-clock backstop (1.2s)" in result.calls[1].error
        assert elapsed >= 1.2
    else:
        assert "CPU time limit of the call (0.3s)" in result.calls[1].error
    assert elapsed < 1.2 + 5.0
    assert result.calls[2].value == 8  # the next call runs in a fresh child


# --------------------------------------------------------------------------- docker


@pytest.fixture(scope="module")
def docker_box() -> Iterator[Sandbox]:
    try:
        from codea1_env.sandbox.docker_backend import DockerSandbox

        sandbox = DockerSandbox(workers=1)
    except SandboxUnavailable as exc:
        (sys.__stderr__ or sys.stderr).write(f"\ndocker audit test skipped: {exc}\n")
        pytest.skip(f"no Docker sandbox: {str(exc).splitlines()[0][:200]}")
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.mark.docker
def test_docker_backend_carries_audit_events(docker_box: Sandbox) -> None:
    program = (
        "import ctypes, os, signal\n"
        "def f():\n"
        "    open('/etc/hostname').read()\n"
        "    ctypes.CDLL(None)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "def g():\n"
        "    return 5\n"
    )
    hostile, benign = docker_box.run(
        [Job(program, calls=("f()",), limits=LIMITS), Job(program, calls=("g()",))]
    )
    assert statuses(hostile) == [CRASH]
    assert audit(hostile) == {"fs_read_outside": 1, "native": 1, "kill": 1}
    assert benign.calls[0].value == 5 and audit(benign) == {}
