"""Red team: hostile programs and hostile test inputs against the local sandbox.

Every case is a candidate program (or a tester's call expressions) that tries to cheat or to harm
the host. Each states the statuses it must get, and the verdict the trusted side reaches by
comparing returned values with ground-truth values (as the referee does, with
:func:`codea1_env.sandbox.worker.plain.values_equal`). After every case the ``host`` fixture checks that the host
is unaffected: the sandbox still answers, no process of the sandbox's uids is left, no file
owned by them appeared in the host's temp directories, a sentinel file is untouched, the parent
is alive and its secrets stay secret.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import codea1_env
from codea1_env.sandbox.base import CallStatus, Job, JobResult, Limits
from codea1_env.sandbox.confinement import usable_bwrap
from codea1_env.sandbox.local import LocalSandbox
from codea1_env.sandbox.worker.plain import values_equal

LIMITS = Limits(
    call_timeout_s=0.5, setup_timeout_s=1.0, cpu_time_s=2.0, memory_mb=256, max_output_bytes=4096
)
SECRET = "codea1-secret-" + uuid.uuid4().hex
SECRET_ENV = "CODEA1_REDTEAM_SECRET"
IS_ROOT = os.geteuid() == 0
needs_confinement = pytest.mark.skipif(
    not (IS_ROOT and usable_bwrap()), reason="host-protection cases need root and bubblewrap"
)

OK, EXC, TIMEOUT, MEMORY = (
    CallStatus.OK,
    CallStatus.EXCEPTION,
    CallStatus.TIMEOUT,
    CallStatus.MEMORY,
)
CRASH, EARLY, NOT_PLAIN = CallStatus.CRASH, CallStatus.EARLY_EXIT, CallStatus.NOT_PLAIN
SETUP = CallStatus.SETUP_FAILED

# A correct solution, and the ground truth every case is judged against.
GT = "def add(a, b):\n    return a + b\n"
CALLS = ("add(1, 2)", "add(-5, 5)", "add(10, 20)")
GT_VALUES = [3, 0, 30]


@dataclass
class Case:
    """One attack: the program, its calls, what must happen."""

    name: str
    program: str
    statuses: list[CallStatus | set[CallStatus]]
    calls: tuple[str, ...] = CALLS
    verdicts: list[bool] | None = None  # None: every call must fail
    expected: list[object] = field(default_factory=lambda: list(GT_VALUES))
    check: str = ""  # name of an extra host check in HOST_CHECKS
    limits: Limits = LIMITS


def verdicts(result: JobResult, expected: Sequence[object]) -> list[bool]:
    """The trusted side's verdict per call: returned normally and equal to the GT value."""
    return [c.ok and values_equal(c.value, e) for c, e in zip(result.calls, expected)]


def cheat(body: str, *, top: str = "") -> str:
    """A wrong solution (returns a - b) with some extra hostile code at top level or in add."""
    return f"{top}\ndef add(a, b):\n{body}\n    return a - b\n"


CASES = [
    Case("control: the GT itself passes", GT, [OK] * 3, verdicts=[True] * 3),
    Case("infinite loop", cheat("    while True: pass"), [TIMEOUT] * 3),
    Case("sleep", cheat("    import time; time.sleep(30)"), [TIMEOUT] * 3),
    Case("memory bomb", cheat("    x = [0] * 10**9"), [MEMORY] * 3),
    Case(
        "memory bomb at import",
        "x = bytearray(10**10)\n" + GT,
        [SETUP] * 3,
    ),
    Case(
        "fork bomb",
        cheat("    import os\n    while True:\n        os.fork()"),
        [{EXC, CRASH, TIMEOUT, EARLY}] * 3,
    ),
    Case("deep recursion", cheat("    return add(a, b) + 1"), [EXC] * 3),
    Case(
        "deep recursion past the C stack",
        cheat("    import sys; sys.setrecursionlimit(10**8)\n    return add(a, b) + 1"),
        [{CRASH, MEMORY, TIMEOUT, EXC}] * 3,
    ),
    Case("huge output", cheat("    print('x' * 10**7)"), [OK] * 3, check="output_capped"),
    Case("os._exit(0) before tests", "import os\nos._exit(0)\n" + GT, [SETUP] * 3),
    Case("sys.exit(0) before tests", "import sys\nsys.exit(0)\n" + GT, [SETUP] * 3),
    Case("os._exit(0) during tests", cheat("    import os; os._exit(0)"), [EARLY] * 3),
    Case("sys.exit(0) during tests", cheat("    import sys; sys.exit(0)"), [EARLY] * 3),
    Case(
        "exit during one test, correct otherwise",
        "import os\ndef add(a, b):\n    if a == -5: os._exit(0)\n    return a + b\n",
        [OK, EARLY, OK],
        verdicts=[True, False, True],
    ),
    Case(
        "SystemExit from __del__ and atexit",
        cheat(
            "    global keep\n    keep = Bomb()",
            top="import atexit, os, sys\natexit.register(os._exit, 0)\n"
            "atexit.register(print, 'ALL TESTS PASSED')\n"
            "class Bomb:\n    def __del__(self):\n        raise SystemExit(0)\n",
        ),
        [OK] * 3,
    ),
    Case(
        "monkeypatching builtins and AssertionError",
        cheat(
            "",
            top="import builtins\nbuiltins.AssertionError = type('Never', (Exception,), {})\n"
            "builtins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: int\n"
            "builtins.eval = lambda *a, **k: 3\nimport json\njson.dumps = lambda *a, **k: '3'\n",
        ),
        [OK] * 3,
        check="own_values",
    ),
    Case(
        "always-equal result",
        cheat(
            "    class Eq:\n        __eq__ = lambda s, o: True\n        __hash__ = None\n"
            "    return Eq()"
        ),
        [NOT_PLAIN] * 3,
    ),
    Case(
        "int-subclass result",
        cheat("    class I(int):\n        __eq__ = lambda s, o: True\n    return I(a + b)"),
        [NOT_PLAIN] * 3,
    ),
    Case("bool for int", cheat("    return True if a + b == 1 else [a + b][0] * 1.0"), [OK] * 3),
    Case(
        "reading the test file, the GT and the package data",
        cheat(
            "    return READ",
            top="READ = []\nimport os\nfor p in PATHS:\n"
            "    try:\n        READ.append(open(p).read(100))\n"
            "    except Exception as e:\n        READ.append(type(e).__name__)\n",
        ),
        [OK] * 3,
        check="nothing_read",
    ),
    Case(
        "forging a result record at import",
        "import os, json\nrec = json.dumps({'k': 'call', 'i': 0, 's': 'ok', 'v': 3}).encode()\n"
        "os.write(3, len(rec).to_bytes(4, 'big') + rec)\n" + GT,
        [SETUP] * 3,
    ),
    Case(
        "forging records for calls not yet run",
        cheat(
            "    import os, json\n    for i in range(1, 3):\n"
            "        rec = json.dumps({'k': 'call', 'i': i + 5, 's': 'ok', 'v': 0}).encode()\n"
            "        os.write(3, len(rec).to_bytes(4, 'big') + rec)"
        ),
        [CRASH, {CRASH, OK}, {CRASH, OK}],
    ),
    Case(
        "forging garbage and a made-up status",
        cheat(
            "    import os\n    os.write(3, b'\\x00\\x00\\x00\\x05{bad}')\n"
            '    os.write(3, b\'\\x00\\x00\\x00\\x1c{"k":"call","i":0,"s":"pass"}\')'
        ),
        [CRASH] * 3,
    ),
    Case(
        "printing fake pass markers",
        cheat('    print(\'PASSED\\n{"k":"call","s":"ok"}\\nAll tests passed\', flush=True)'),
        [OK] * 3,
    ),
    Case(
        "killing the parent and other processes",
        cheat(
            "    import os, signal\n    for pid in PIDS + [1, os.getppid(), -1, 0]:\n"
            "        try: os.kill(pid, signal.SIGKILL) if pid else None\n"
            "        except OSError: pass",
            top="PIDS = []\n",
        ),
        [OK] * 3,
        check="victim_alive",
    ),
    Case(
        "writing and deleting files outside the scratch directory",
        cheat(
            "    import os, shutil\n    for p in TARGETS:\n"
            "        for act in (lambda: open(p, 'w').write('pwned'), lambda: os.remove(p),\n"
            "                    lambda: shutil.rmtree(os.path.dirname(p)),\n"
            "                    lambda: open(os.path.join(os.path.dirname(p), 'new'), 'w')):\n"
            "            try: act()\n            except OSError: pass",
            top="TARGETS = []\n",
        ),
        [OK] * 3,
        check="sentinel_intact",
    ),
    Case(
        "reading environment secrets",
        cheat(
            "    return SEEN",
            top="import os\nSEEN = [dict(os.environ)]\n"
            "for p in ('/proc/self/environ', '/proc/1/environ', f'/proc/{os.getppid()}/environ'):\n"
            "    try: SEEN.append(open(p, 'rb').read().decode('latin-1'))\n"
            "    except OSError as e: SEEN.append(str(e))\n",
        ),
        [OK] * 3,
        check="no_secret",
    ),
    Case(
        "network access",
        cheat(
            "    return TRIED",
            top="import socket\nTRIED = []\n"
            "for make in (lambda: socket.create_connection(('127.0.0.1', PORT), timeout=1),\n"
            "             lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM),\n"
            "             lambda: socket.socket(socket.AF_INET6),\n"
            "             lambda: socket.socket(socket.AF_UNIX),\n"
            "             lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)):\n"
            "    try: make(); TRIED.append('open')\n"
            "    except OSError as e: TRIED.append(type(e).__name__)\n",
        ),
        [OK] * 3,
        check="no_connection",
    ),
    Case(
        "detached subprocesses",
        cheat(
            "    import subprocess, sys, os\n"
            "    for kw in ({'start_new_session': True}, {}):\n"
            "        try: subprocess.Popen([sys.executable, '-c', SLEEPER], **kw)\n"
            "        except Exception: pass\n"
            "    if os.fork() == 0:\n"
            "        try: os.setsid()\n        except OSError: pass\n"
            "        if os.fork() == 0:\n            import time; time.sleep(60)\n"
            "        os._exit(0)"
        ),
        [OK] * 3,
        check="no_marker_process",
    ),
    Case(
        "ignoring signals",
        cheat(
            "    import signal\n    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU,"
            " signal.SIGHUP, signal.SIGALRM):\n        signal.signal(s, signal.SIG_IGN)\n"
            "    while True: pass"
        ),
        [TIMEOUT] * 3,
    ),
    Case(
        "threads that outlive the run",
        cheat(
            "",
            top="import threading, time, os\n"
            "def later():\n    time.sleep(1.5)\n    open(LATE_FILE, 'w').write('late')\n"
            "threading.Thread(target=later).start()\n"
            "threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()\n",
        ),
        [OK] * 3,
        check="late_file_absent",
    ),
    Case(
        "filling the disk",
        cheat(
            "    return FILLED",
            top="import os\nFILLED = []\n"
            "try:\n    with open('big', 'wb') as f:\n        f.write(b'x' * (64 << 20))\n"
            "except OSError as e: FILLED.append(e.errno)\n"
            "try:\n    for i in range(100000):\n        open(f'f{i}', 'wb').write(b'y' * 8192)\n"
            "except OSError as e: FILLED.append(e.errno)\n",
        ),
        [OK] * 3,
        check="disk_unchanged",
        limits=Limits(call_timeout_s=0.5, setup_timeout_s=10.0, cpu_time_s=8.0, memory_mb=256),
    ),
    Case(
        "raising rlimits",
        cheat(
            "    import resource\n    for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU,"
            " resource.RLIMIT_NPROC):\n        try: resource.setrlimit(r, (-1, -1))\n"
            "        except (ValueError, OSError): pass\n    x = bytearray(1 << 30)"
        ),
        [MEMORY] * 3,
    ),
]

# Hostile test inputs: the tester's call expressions run against the correct GT program.
INPUT_CASES = [
    Case(
        "hostile inputs: exits, kills, syntax, floods, introspection",
        GT,
        [EARLY, CRASH, EXC, MEMORY, OK, EXC, EXC, NOT_PLAIN, OK, TIMEOUT, OK],
        calls=(
            "add(__import__('os')._exit(0), 1)",
            "add(__import__('os').kill(0, 9), 1)",
            "add(1,",
            "add(*[0] * 10**9)",
            "add(__import__('sys').setrecursionlimit(50) or 1, 1)",
            "add(open('/etc/shadow').read(), '')",
            "add((lambda: (yield))(), 1)",
            "(lambda: (yield))()",
            "add(len(__import__('os').listdir('/')), 0) and 0",
            "add(__import__('time').sleep(9), 1)",
            "add(2, 2)",
        ),
        expected=[1, 1, None, 0, 2, None, None, None, 0, 1, 4],
        verdicts=[False, False, False, False, True, False, False, False, True, False, True],
    ),
    Case(
        "hostile inputs: breaking the runner for later calls",
        GT,
        [OK, OK, OK],  # the runner keeps its own builtins: later calls still report exactly
        calls=(
            "add(1, 1)",
            "__import__('builtins').__dict__.clear()",
            "add(2, 2)",
        ),
        expected=[2, None, 4],
        verdicts=[True, True, True],
    ),
]


# --------------------------------------------------------------------------- host fixtures


@pytest.fixture(scope="module")
def box():
    os.environ[SECRET_ENV] = SECRET
    try:
        with LocalSandbox(workers=2) as sandbox:
            yield sandbox
    finally:
        del os.environ[SECRET_ENV]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory):
    """Things on the host a hostile job would like to touch."""
    root = tmp_path_factory.mktemp("redteam")
    os.chmod(root, 0o777)
    sentinel = root / "sentinel.txt"
    sentinel.write_text(SECRET)
    os.chmod(sentinel, 0o666)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.05)
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    state = {
        "root": root,
        "sentinel": sentinel,
        "server": server,
        "victim": victim,
        "marker": "codea1-sleeper-" + uuid.uuid4().hex,
        "late_file": str(root / "late.txt"),
    }
    yield state
    victim.kill()
    victim.wait()
    server.close()


def _prepare(case: Case, host: dict) -> str:
    """Fill the host-specific names a case refers to (paths, pids, port)."""
    package = str(Path(codea1_env.__file__).resolve().parents[1])
    names = {
        "PATHS": [
            __file__,
            str(host["sentinel"]),
            os.path.join(package, "codea1_env", "plain.py"),
            "/etc/shadow",
            f"/proc/{os.getpid()}/environ",
            "/work/main/README.md",
        ],
        "PIDS": [os.getpid(), host["victim"].pid],
        "TARGETS": [
            str(host["sentinel"]),
            os.path.join(tempfile.gettempdir(), "codea1-pwned"),
            "/usr/lib/os-release",
            __file__,
        ],
        "PORT": host["server"].getsockname()[1],
        "SLEEPER": f"import time; time.sleep(60)  # {host['marker']}",
        "LATE_FILE": host["late_file"],
    }
    header = "".join(f"{key} = {value!r}\n" for key, value in names.items())
    return header + case.program


def _uid_files(uids: tuple[int, ...]) -> list[str]:
    found = []
    for directory in {tempfile.gettempdir(), "/var/tmp", "/dev/shm"}:
        try:
            entries = os.scandir(directory)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.stat(follow_symlinks=False).st_uid in uids:
                        found.append(entry.path)
                except OSError:
                    continue
    return found


def _processes(uids: tuple[int, ...], marker: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                status = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().decode("latin-1")
        except OSError:
            continue
        uid = int(status.split("Uid:")[1].split()[0])
        state = status.split("State:")[1].split()[0]
        if state != "Z" and (uid in uids or marker in cmdline):
            found.append(f"{entry}: {cmdline[:80]}")
    return found


def _free_bytes() -> int:
    stat = os.statvfs(tempfile.gettempdir())
    return stat.f_bavail * stat.f_frsize


# --------------------------------------------------------------------------- extra checks


def _check_output_capped(result: JobResult, host: dict) -> None:
    assert len(result.stdout) <= LIMITS.max_output_bytes
    assert result.events.get("stdout_truncated")


def _check_own_values(result: JobResult, host: dict) -> None:
    assert [c.value for c in result.calls] == [-1, -10, -10]  # the patches changed nothing


def _check_nothing_read(result: JobResult, host: dict) -> None:
    seen = result.calls[0].value
    assert isinstance(seen, list) and seen, seen
    assert all(item in ("FileNotFoundError", "PermissionError") for item in seen), seen


def _check_victim_alive(result: JobResult, host: dict) -> None:
    assert host["victim"].poll() is None
    os.kill(os.getpid(), 0)


def _check_sentinel_intact(result: JobResult, host: dict) -> None:
    assert host["sentinel"].read_text() == SECRET
    assert sorted(p.name for p in host["root"].iterdir()) == ["sentinel.txt"]
    assert not os.path.exists(os.path.join(tempfile.gettempdir(), "codea1-pwned"))
    assert os.path.exists(__file__)


def _check_no_secret(result: JobResult, host: dict) -> None:
    text = repr(result.calls[0].value)
    assert SECRET not in text and SECRET_ENV not in text
    assert "PATH" in text  # the probe did read its own (scrubbed) environment


def _check_no_connection(result: JobResult, host: dict) -> None:
    tried = result.calls[0].value
    assert tried[:3] == ["PermissionError"] * 3, tried
    assert "open" not in tried, tried
    with pytest.raises(OSError):
        host["server"].accept()


def _check_no_marker_process(result: JobResult, host: dict) -> None:
    assert _processes((), host["marker"]) == []


def _check_late_file_absent(result: JobResult, host: dict) -> None:
    time.sleep(1.7)  # the thread would have written by now
    assert not os.path.exists(host["late_file"])


def _check_disk_unchanged(result: JobResult, host: dict) -> None:
    errors = result.calls[0].value
    assert 27 in errors  # EFBIG: the single file was cut at RLIMIT_FSIZE
    assert 28 in errors or len(errors) == 1  # ENOSPC on the sandbox's own tmpfs


HOST_CHECKS = {
    "output_capped": _check_output_capped,
    "nothing_read": _check_nothing_read,
    "own_values": _check_own_values,
    "victim_alive": _check_victim_alive,
    "sentinel_intact": _check_sentinel_intact,
    "no_secret": _check_no_secret,
    "no_connection": _check_no_connection,
    "no_marker_process": _check_no_marker_process,
    "late_file_absent": _check_late_file_absent,
    "disk_unchanged": _check_disk_unchanged,
}


# --------------------------------------------------------------------------- the suite


@needs_confinement
@pytest.mark.parametrize("case", CASES + INPUT_CASES, ids=lambda c: c.name)
def test_attack(case: Case, box: LocalSandbox, host: dict) -> None:
    free_before = _free_bytes()
    [result] = box.run([Job(_prepare(case, host), calls=case.calls, limits=case.limits)])
    for call, want in zip(result.calls, case.statuses):
        allowed = want if isinstance(want, set) else {want}
        assert call.status in allowed, (case.name, result)
    assert len(result.calls) == len(case.calls)
    judged = verdicts(result, case.expected)
    want_verdicts = case.verdicts if case.verdicts is not None else [False] * len(case.calls)
    for got, want_verdict in zip(judged, want_verdicts):
        if want_verdict is not None:
            assert got is want_verdict, (case.name, judged, result)
    if case.check:
        HOST_CHECKS[case.check](result, host)
    # The host is unaffected.
    _check_victim_alive(result, host)
    assert _processes(box.uids, host["marker"]) == []
    assert _uid_files(box.uids) == []
    assert host["sentinel"].read_text() == SECRET
    assert abs(_free_bytes() - free_before) < 256 << 20
    [after] = box.run([Job(GT, calls=CALLS, limits=LIMITS)])
    assert verdicts(after, GT_VALUES) == [True] * 3


@needs_confinement
def test_hostile_jobs_do_not_disturb_a_concurrent_batch(box: LocalSandbox, host: dict) -> None:
    hostile = [Job(_prepare(case, host), case.calls, limits=case.limits) for case in CASES[1:8]]
    honest = [Job(GT, CALLS, limits=LIMITS, tag="gt")] * 6
    results = box.run([job for pair in zip(hostile, honest) for job in pair])
    for result in results:
        if result.tag == "gt":
            assert verdicts(result, GT_VALUES) == [True] * 3


# --------------------------------------------------------------------------- the zygote rule

SCANNER = """
import ctypes
def scan(hex_needle):
    needle = bytes.fromhex(hex_needle)
    found = 0
    with open('/proc/self/maps') as maps:
        regions = [line.split() for line in maps]
    for region in regions:
        # anonymous memory and the heap: where a leaked program or value would sit
        if 'r' not in region[1] or (len(region) > 5 and region[5] not in ('[heap]', '[stack]')):
            continue
        start, end = (int(x, 16) for x in region[0].split('-'))
        step = 1 << 20
        for offset in range(start, end, step):
            size = min(step + len(needle), end - offset)
            try:
                found += ctypes.string_at(offset, size).count(needle)
            except Exception:
                pass
    return found
"""


@needs_confinement
def test_a_child_cannot_find_other_jobs_data_in_its_memory() -> None:
    marker = ("GT-OUTPUT-" + uuid.uuid4().hex).encode()
    needle = f"scan({marker.hex()!r})"
    gt_program = f"SECRET = {marker.decode()!r}\ndef add(a, b):\n    return SECRET\n"
    with LocalSandbox(workers=1) as sandbox:
        [baseline] = sandbox.run([Job(SCANNER, (needle,))])
        assert baseline.calls[0].ok, baseline
        [gt] = sandbox.run([Job(gt_program, ("add(1, 2)",) * 4, tag="gt")])
        assert gt.calls[0].value == marker.decode()
        [after] = sandbox.run([Job(SCANNER, (needle,))])
        assert after.calls[0].value == baseline.calls[0].value
        # positive control: the scanner does find the marker when its own job holds it
        [own] = sandbox.run([Job(SCANNER + f"HELD = {marker.decode()!r}\n", (needle,))])
        assert own.calls[0].value > baseline.calls[0].value


def test_expected_outputs_never_enter_a_job() -> None:
    """The Job type has no field for expected outputs: nothing to leak by construction."""
    fields = {"program", "calls", "stdin_inputs", "limits", "tag", "coverage"}
    assert set(Job.__dataclass_fields__) == fields  # coverage: a flag, see test_coverage.py


@needs_confinement
def test_parent_survives_a_signal_storm(box: LocalSandbox, host: dict) -> None:
    stop = threading.Event()
    program = cheat(
        "    import os, signal\n    for s in range(1, 32):\n"
        "        for pid in (1, 2, os.getppid()):\n"
        "            try: os.kill(pid, s)\n            except OSError: pass"
    )
    results = box.run([Job(program, CALLS, limits=LIMITS)] * 4)
    stop.set()
    assert all(r.calls[0].status is OK for r in results)
    [after] = box.run([Job(GT, CALLS, limits=LIMITS)])
    assert verdicts(after, GT_VALUES) == [True] * 3
    assert signal.getsignal(signal.SIGTERM) is not None
