"""The job runner: executes one job inside a confined child and streams its result records.

Runs inside the sandbox (imported by the zygote as the top-level ``runner``; standard library
only). Function mode: the program runs once as module ``solution``, then each call expression is
evaluated in its namespace and the value is encoded as exact-type plain data
(:mod:`codea1_env.sandbox.worker.plain`), one record per call. Stdio mode: the program runs as
``__main__`` with the job's input on stdin; the parent keeps its stdout as the value.

Untrusted code may patch anything it can reach. The runner therefore holds its own references to
what it needs, resolves builtin names through a private copy of ``builtins`` (the worker loads
the trusted modules with their own ``__builtins__``, see :func:`trusted_builtins`; the program
patches or empties only the real module, which stays its view from call to call) and serializes
records with C-level helpers only, so a program cannot break the reporting of its own outcomes
by accident.
A program that deliberately forges records can only claim values it could have returned anyway:
the trusted parent validates the sequence and decodes values as plain data, nothing else.

Runtime telemetry (:class:`AuditTelemetry`): before any untrusted code runs, the child installs a
Python audit hook (:pep:`578`; hooks cannot be removed once added). It *counts*, never blocks,
what the program does while one of its calls runs (the hook is armed only then, so the runner's
own work and the zygote's start-up are not counted, nor are the reads the import system does to
load a module): signals (``os.kill``...), process spawning, file writes and reads outside the
scratch directory, network use, ``ctypes`` and audit-hook/trace tampering. The running totals go
to the parent in ``audit`` records (see :mod:`protocol`). This is best-effort monitoring data
reported by the untrusted process itself: a program can forge or suppress it (write its own
records, reach the counters through ``gc``, act through native code, which raises no Python
audit event), so it is used for monitoring only and never for a verdict. Enforcement stays with
seccomp, rlimits and namespaces.

Coverage jobs (header ``"coverage": true``): an :class:`tracer.ArcTracer` traces the program's own
code objects while its top level and each call run (not while the runner describes an exception
or encodes a value), and every status record then carries ``"cov"``: the arcs recorded since
the previous record, flattened (see :mod:`protocol`). The tracer is set before the audit hook is
armed and removed after it is disarmed, so it never counts as tampering; a trace function the
program leaves behind still does.

One module (over 600 lines) on purpose: the runner and the audit hook it arms around each
untrusted call share the references captured before any untrusted code runs and the one lock on
the result channel, and what a hostile program can reach is easier to check in one file.
"""

from __future__ import annotations

import _thread
import builtins
import io
import json
import os
import socket
import stat
import sys
import time
import types
from collections.abc import Callable
from typing import Any

from protocol import (
    AUDIT_KEYS,
    AUDIT_RECORD,
    EXIT_RUNNER_ERROR,
    FRAME,
    MAX_COVERAGE_ARCS,
    MAX_ERROR_CHARS,
    RESULT_FD,
    read_frame,
)
from tracer import ArcTracer, line_bound

# Captured before any untrusted code runs: a program may replace the module attributes.
real_exit = os._exit
_os_close = os.close
real_write = os.write
_real_compile = builtins.compile
_real_eval = builtins.eval
_real_exec = builtins.exec


def describe_exception(exc: BaseException) -> str:
    """``"Type: message"`` for an exception raised by untrusted code, never raising itself."""
    try:
        name = str(type.__dict__["__name__"].__get__(type(exc)))
    except BaseException:  # noqa: BLE001 - the class itself may be hostile
        name = "BaseException"
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = "<unprintable>"
    out = f"{name}: {text}" if text else name
    return out[:MAX_ERROR_CHARS]


_type = type
_getpid = os.getpid
_clock = time.perf_counter
_cpu_clock = time.process_time
_str = str
_BaseException = BaseException
_get_recursion_limit = sys.getrecursionlimit
_set_recursion_limit = sys.setrecursionlimit
_quote = json.encoder.encode_basestring_ascii
_decode_json = json.JSONDecoder().decode
_int_repr = int.__repr__
_float_repr = float.__repr__
_INFINITY = float("inf")


def _write_json(obj: Any, emit: Callable[[str], Any]) -> None:
    """Serialize a tagged-JSON structure with C-level helpers only (no patchable module code)."""
    kind = _type(obj)
    if obj is None:
        emit("null")
    elif obj is True:
        emit("true")
    elif obj is False:
        emit("false")
    elif kind is int:
        emit(_int_repr(obj))
    elif kind is float:
        if obj != obj:
            emit("NaN")
        elif obj == _INFINITY:
            emit("Infinity")
        elif obj == -_INFINITY:
            emit("-Infinity")
        else:
            emit(_float_repr(obj))
    elif kind is str:
        emit(_quote(obj))
    elif kind is list:
        emit("[")
        first = True
        for item in obj:
            if not first:
                emit(",")
            first = False
            _write_json(item, emit)
        emit("]")
    elif kind is dict:
        emit("{")
        first = True
        for key, item in obj.items():
            if not first:
                emit(",")
            first = False
            emit(_quote(key))
            emit(":")
            _write_json(item, emit)
        emit("}")
    else:
        raise TypeError(f"cannot serialize {kind.__name__}")


# --------------------------------------------------------------------------------------------
# Runtime telemetry: an audit hook that counts what untrusted code does
# --------------------------------------------------------------------------------------------

_KILL, _SPAWN, _WRITE, _READ, _NETWORK, _NATIVE, _TAMPER = range(7)
"""Indexes into :data:`protocol.AUDIT_KEYS`."""
_OPEN = "open"
_SOCKET_NEW = "socket.__new__"
_COUNTED: dict[str, int] = {
    "os.kill": _KILL,
    "os.killpg": _KILL,
    "signal.pthread_kill": _KILL,
    "subprocess.Popen": _SPAWN,
    "os.system": _SPAWN,
    "os.exec": _SPAWN,
    "os.posix_spawn": _SPAWN,
    "os.spawn": _SPAWN,
    "os.fork": _SPAWN,
    "os.forkpty": _SPAWN,
    "socket.connect": _NETWORK,
    "socket.bind": _NETWORK,
    "socket.sendto": _NETWORK,
    "socket.sendmsg": _NETWORK,
    "socket.getaddrinfo": _NETWORK,
    "socket.gethostbyname": _NETWORK,
    "socket.gethostbyname_ex": _NETWORK,
    "socket.gethostbyaddr": _NETWORK,
    "socket.getnameinfo": _NETWORK,
    "ctypes.dlopen": _NATIVE,
    "ctypes.dlsym": _NATIVE,
    "ctypes.dlsym/handle": _NATIVE,
    "ctypes.cdata": _NATIVE,
    "ctypes.cdata/buffer": _NATIVE,
    "ctypes.call_function": _NATIVE,
    "ctypes.string_at": _NATIVE,
    "ctypes.wstring_at": _NATIVE,
    "ctypes.PyObj_FromPtr": _NATIVE,
    "sys.addaudithook": _TAMPER,
    "sys.settrace": _TAMPER,
    "sys.setprofile": _TAMPER,
    "sys._settraceallthreads": _TAMPER,
    "sys._setprofileallthreads": _TAMPER,
    "sys._current_frames": _TAMPER,
    "gc.get_objects": _TAMPER,
    "gc.get_referrers": _TAMPER,
    "gc.get_referents": _TAMPER,
}
"""Audit events (CPython 3.10-3.12 table) counted whenever untrusted code raises them."""
_PATH_EVENTS: dict[str, tuple[tuple[int, int, bool], ...]] = {
    "os.remove": ((0, 1, True),),
    "os.rename": ((0, 2, True), (1, 3, True)),
    "os.rmdir": ((0, 1, True),),
    "os.mkdir": ((0, 2, True),),
    "os.chmod": ((0, 2, True),),
    "os.chown": ((0, 3, True),),
    "os.link": ((1, 3, True),),
    "os.symlink": ((1, 2, True),),
    "os.truncate": ((0, -1, True),),
    "os.utime": ((0, 3, True),),
    "os.setxattr": ((0, -1, True),),
    "os.removexattr": ((0, -1, True),),
    "os.getxattr": ((0, -1, False),),
    "os.listxattr": ((0, -1, False),),
    "os.listdir": ((0, -1, False),),
    "os.scandir": ((0, -1, False),),
    "os.chdir": ((0, -1, False),),
    "glob.glob/2": ((0, 3, False),),
    "shutil.rmtree": ((0, 1, True),),
    "shutil.copyfile": ((0, -1, False), (1, -1, True)),
    "shutil.copymode": ((1, -1, True),),
    "shutil.copystat": ((1, -1, True),),
    "shutil.copytree": ((0, -1, False), (1, -1, True)),
    "shutil.move": ((0, -1, True), (1, -1, True)),
    "shutil.chown": ((0, -1, True),),
    "shutil.make_archive": ((0, -1, True),),
    "shutil.unpack_archive": ((0, -1, False), (1, -1, True)),
    "tempfile.mkstemp": ((0, -1, True),),
    "tempfile.mkdtemp": ((0, -1, True),),
}
"""File-system events: per path argument ``(index, dir_fd index or -1, writes)``; counted as
``fs_write_outside``/``fs_read_outside`` when the path resolves outside the scratch directory."""
_TRACKED: dict[str, Any] = {**_COUNTED, **_PATH_EVENTS, _OPEN: _OPEN, _SOCKET_NEW: _SOCKET_NEW}
"""Every event the hook looks at; any other event returns at once."""
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_NEUTRAL_PATHS = frozenset(
    ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"]
    + ["/dev/stdin", "/dev/stdout", "/dev/stderr"]
)
"""Device files that are not "outside the scratch directory" in any useful sense."""
_NEUTRAL_PREFIXES = ("/dev/fd/", "/proc/self/fd/")
_IMPORT_SYSTEM = ("<frozen importlib.", "<frozen zipimport")
"""Code file names of the import machinery (frozen, as CPython ships it) ..."""
_IMPORT_SYSTEM_FILES = (
    "/importlib/_bootstrap.py",
    "/importlib/_bootstrap_external.py",
    "/zipimport.py",
)
"""... and as source files (``-X frozen_modules=off``, debug builds)."""
_AF_UNIX = int(socket.AF_UNIX)

# Captured before any untrusted code runs; the hook runs while the program's (possibly patched or
# emptied) builtins are live, so it names nothing through them.
_len = len
_zip = zip
_OSError = OSError
_frame_pack = FRAME.pack
_getframe = sys._getframe
_getcwd = os.getcwd
_readlink = os.readlink
_fsdecode = os.fsdecode
_fspath = os.fspath
_normpath = os.path.normpath
_realpath = os.path.realpath
_lstat = os.lstat
_s_islnk = stat.S_ISLNK
_gettrace = sys.gettrace
_getprofile = sys.getprofile
_add_audit_hook = sys.addaudithook
_write_lock = _thread.allocate_lock()


def _write_frame(record: str, wait_s: float = -1.0) -> bool:
    """Write one record frame to the result channel; False when it could not be written.

    Uses no builtins (the audit hook calls it while the program's builtins are live) and holds
    a lock, so that a record written by the hook in a thread of the program never lands inside
    one the runner is writing.
    """
    payload = record.encode("utf-8", "surrogatepass")
    data = _frame_pack(_len(payload)) + payload
    if not _write_lock.acquire(True, wait_s):
        return False
    try:
        while data:
            written = real_write(RESULT_FD, data)
            data = data[written:]
    except _OSError:
        return False
    finally:
        _write_lock.release()
    return True


class AuditTelemetry:
    """Counts audit events raised by untrusted code, by kind (:data:`protocol.AUDIT_KEYS`).

    Armed only while a call of the program runs (:attr:`armed`); never blocks anything and never
    raises into the program. The first event of each kind is reported at once (so that a program
    that then kills itself is still counted); otherwise the runner sends the totals before its
    next status record (:meth:`record`). Events raised by threads of the program are counted
    while one of its calls runs; events of processes it forks stay in those processes unless
    they report them themselves.

    Args:
        scratch: The job's scratch directory, resolved (the child's working directory at start,
            as ``os.getcwd()`` reports it: no symbolic links).
    """

    def __init__(self, scratch: str) -> None:
        self.scratch = scratch
        self.scratch_prefix = self.scratch.rstrip("/") + "/"
        self.counts = [0] * _len(AUDIT_KEYS)
        self.reported = [False] * _len(AUDIT_KEYS)
        self.armed = False
        self.busy = False
        self.dirty = False
        self.saw_tracer = False

    def install(self) -> None:
        """Add the hook to the interpreter (for good: audit hooks cannot be removed)."""
        tracked = _TRACKED.get

        def hook(event: str, args: tuple[Any, ...]) -> None:
            spec = tracked(event)
            if spec is None or not self.armed or self.busy:
                return
            self._handle(spec, args)

        _add_audit_hook(hook)

    def record(self) -> str:
        """The ``audit`` record of the totals so far (and mark them reported)."""
        self.dirty = False
        items = ",".join(
            f'"{key}":{count:d}' for key, count in _zip(AUDIT_KEYS, self.counts) if count
        )
        return f'{{"k":"{AUDIT_RECORD}","c":{{{items}}}}}'

    def check_tracer(self) -> None:
        """Count, once, a trace or profile function left behind by the program."""
        if not self.saw_tracer and (_gettrace() is not None or _getprofile() is not None):
            self.saw_tracer = True
            self._count(_TAMPER)

    def _handle(self, spec: Any, args: tuple[Any, ...]) -> None:
        self.busy = True
        try:
            if _type(spec) is int:
                self._count(spec)
            elif spec is _SOCKET_NEW:
                if _len(args) > 1 and _type(args[1]) is int and args[1] != _AF_UNIX:
                    self._count(_NETWORK)
            elif not self._from_import_system():
                if spec is _OPEN:
                    self._path_event(((0, -1, self._open_writes(args)),), args)
                else:
                    self._path_event(spec, args)
        except _BaseException:  # noqa: BLE001, S110 - telemetry never disturbs the program
            pass
        finally:
            self.busy = False

    def _count(self, kind: int) -> None:
        self.counts[kind] += 1
        self.dirty = True
        if not self.reported[kind]:
            self.reported[kind] = True
            _write_frame(self.record(), 1.0)

    @staticmethod
    def _from_import_system() -> bool:
        """The audited call came straight from the import machinery (loading a module)."""
        frame = _getframe(3)  # 0 this, 1 _handle, 2 the hook, 3 the caller of the audited call
        name = frame.f_code.co_filename
        return name.startswith(_IMPORT_SYSTEM) or name.endswith(_IMPORT_SYSTEM_FILES)

    @staticmethod
    def _open_writes(args: tuple[Any, ...]) -> bool:
        mode = args[1] if _len(args) > 1 else None
        flags = args[2] if _len(args) > 2 else 0
        if _type(flags) is int and flags & _WRITE_FLAGS:
            return True
        if _type(mode) is not str:
            return False
        return "w" in mode or "a" in mode or "x" in mode or "+" in mode

    def _path_event(self, spec: tuple[tuple[int, int, bool], ...], args: tuple[Any, ...]) -> None:
        wrote = read = False
        for index, fd_index, writes in spec:
            if index >= _len(args):
                continue
            dir_fd = args[fd_index] if 0 <= fd_index < _len(args) else None
            if self._outside(args[index], dir_fd):
                wrote = wrote or writes
                read = read or not writes
        if wrote:
            self._count(_WRITE)
        if read:
            self._count(_READ)

    @staticmethod
    def _is_link(path: str) -> bool:
        try:
            return _s_islnk(_lstat(path).st_mode)
        except _OSError:
            return False

    def _outside(self, path: Any, dir_fd: Any) -> bool:
        """True when ``path`` (relative to ``dir_fd`` or the cwd) resolves outside scratch."""
        if _type(path) is int:
            if path < 0:
                return False
            text = _readlink(f"/proc/self/fd/{path:d}")
        elif _type(path) is str:
            text = path
        else:
            text = _fsdecode(_fspath(path))
        if not text:
            return False
        simple = False
        if not text.startswith("/"):
            if _type(path) is int:
                return False  # a pipe, socket or anonymous descriptor
            if _type(dir_fd) is int and dir_fd >= 0:
                base = _readlink(f"/proc/self/fd/{dir_fd:d}")
            else:
                base = _getcwd()
            # One plain name in a resolved directory: resolving it is one lstat, not one per
            # component (a program nesting directories must not make each event cost O(depth)).
            simple = "/" not in text and text not in (".", "..")
            text = f"{base}/{text}"
        text = _normpath(text)
        if text in _NEUTRAL_PATHS or text.startswith(_NEUTRAL_PREFIXES):
            return False
        real = text if simple and not self._is_link(text) else _realpath(text)
        return real != self.scratch and not real.startswith(self.scratch_prefix)


class _RecursionLimit:
    """Keeps the runner's recursion limit apart from the program's.

    The program may change the limit with ``sys.setrecursionlimit``; its own setting is kept from
    call to call, while the runner's code in between runs with the limit the child started with.
    (Builtins need no such swap: the trusted modules resolve names through a private copy, see
    :func:`trusted_builtins`.)
    """

    def __init__(self) -> None:
        self.runner = _get_recursion_limit()
        self.program = self.runner

    def enter_program(self) -> None:
        _set_recursion_limit(self.program)

    def leave_program(self) -> None:
        self.program = _get_recursion_limit()
        _set_recursion_limit(self.runner)


class JobRunner:
    """Runs one job inside a confined child and streams its result records.

    The zygote builds one before it forks (so that children inherit it instead of building it),
    for the scratch directory every job gets; :meth:`run` is called in the child only.

    Args:
        encode: The plain-data encoder.
        plain_error: The exception it raises for a value that is not plain data.
        scratch: The job's scratch directory, resolved (the child's working directory).
    """

    def __init__(
        self, encode: Callable[[Any], Any] | None, plain_error: type[Exception], scratch: str
    ) -> None:
        if encode is None:
            raise RuntimeError("plain-data codec not loaded")
        self.encode = encode
        self.plain_error = plain_error
        self.max_value_bytes = 1 << 20
        self.recursion: _RecursionLimit | None = None
        self.audit = AuditTelemetry(scratch)
        self.pid = -1
        self.tracer: ArcTracer | None = None

    def run(self) -> None:
        """Read the job from stdin, run it, stream the records, and exit the process."""
        self.pid = _getpid()
        self.audit.install()
        header = _decode_json(read_frame(0, 1 << 30).decode("utf-8", "surrogatepass"))
        self.max_value_bytes = int(header.get("max_value_bytes", self.max_value_bytes))
        stdio = header.get("mode") == "stdio"
        program = str(header["program"])
        start = int(header.get("start", 0))
        calls = [str(call) for call in header.get("calls", [])]
        if header.get("coverage") is True:
            self.tracer = ArcTracer(line_bound(program), MAX_COVERAGE_ARCS)
        del header  # stdin: at end of file now (the parent closes it after the header)
        # Python's random reseeds itself from the OS in every forked child; start each job from
        # the same state instead, so programs (and the GT) that use random are reproducible.
        seeded = sys.modules.get("random")
        if seeded is not None:
            seeded.seed(0)
        self.recursion = _RecursionLimit()
        if stdio:
            self._run_stdio(program, start)
        else:
            self._run_calls(program, calls, start)
        _flush_stdio()
        _hang_up()
        real_exit(0)

    def _untrusted(
        self, function: Callable[..., Any], *args: Any, traced: bool = False
    ) -> tuple[bool, Any]:
        """Call untrusted code; ``(raised, result_or_exception)``.

        ``traced``: a coverage job's tracer (if any) records the program's lines meanwhile.
        """
        assert self.recursion is not None
        audit = self.audit
        tracer = self.tracer if traced else None
        self.recursion.enter_program()
        if tracer is not None:
            tracer.start()
        audit.armed = True
        try:
            return False, function(*args)
        except _BaseException as exc:  # noqa: BLE001 - untrusted code may raise anything
            return True, exc
        finally:
            audit.armed = False
            if tracer is not None:
                tracer.stop()
            if _getpid() != self.pid:
                real_exit(0)  # a process the program forked must not go on running the job
            self.recursion.leave_program()
            audit.check_tracer()

    def _describe(self, exc: BaseException) -> str:
        """:func:`describe_exception` of an exception whose ``__str__`` may be untrusted code."""
        raised, text = self._untrusted(describe_exception, exc)
        return "BaseException" if raised else _str(text)

    def _send(self, record: str) -> None:
        """Send one status record, preceded by the audit totals when they changed.

        In a coverage job the record gets the arcs traced since the previous one (``"cov"``).
        Every status record ends with the process's CPU time so far (``"c"``, seconds, all its
        threads): where the next call's CPU time starts, for the trusted side's CPU timeout.
        """
        if self.tracer is not None:
            record = f'{record[:-1]},"cov":[{self.tracer.take()}],"c":{_cpu_clock():.6f}}}'
        else:
            record = f'{record[:-1]},"c":{_cpu_clock():.6f}}}'
        if self.audit.dirty and not _write_frame(self.audit.record()):
            real_exit(EXIT_RUNNER_ERROR)
        if not _write_frame(record):
            real_exit(EXIT_RUNNER_ERROR)

    def _send_status(
        self, kind: str, index: int, status: str, error: str = "", took: float = -1.0
    ) -> None:
        tail = f',"e":{_quote(error)}' if error else ""
        if took >= 0.0:
            tail += f',"d":{took:.6f}'
        self._send(f'{{"k":"{kind}","i":{index:d},"s":"{status}"{tail}}}')

    def _outcome(self, exc: BaseException, exit_zero_ok: bool = False) -> tuple[str, str] | None:
        """``(status, error)`` for an exception raised by untrusted code; None: a clean exit."""
        if isinstance(exc, SystemExit):
            raised, code = self._untrusted(getattr, exc, "code")
            clean = not raised and (code is None or (_type(code) is int and code == 0))
            if exit_zero_ok and clean:
                return None
            return "early_exit", self._describe(exc)
        if isinstance(exc, MemoryError):
            return "memory", "MemoryError"
        return "exception", self._describe(exc)

    def _setup(self, program: str, name: str) -> tuple[types.CodeType, types.ModuleType] | None:
        module = types.ModuleType(name)
        module.__dict__["__builtins__"] = builtins
        sys.modules[name] = module
        try:
            code = _real_compile(program, "<solution>", "exec")
        except MemoryError:
            self._send_status("setup", -1, "memory", "MemoryError")
            return None
        except BaseException as exc:  # noqa: BLE001 - SyntaxError, ValueError (NUL bytes), ...
            self._send_status("setup", -1, "exception", describe_exception(exc))
            return None
        if self.tracer is not None:
            self.tracer.watch(code)
        return code, module

    def _run_calls(self, program: str, calls: list[str], start: int) -> None:
        prepared = self._setup(program, "solution")
        if prepared is None:
            return
        code, module = prepared
        namespace = module.__dict__
        raised, exc = self._untrusted(_real_exec, code, namespace, traced=True)
        if raised:
            status, error = self._outcome(exc) or ("early_exit", "SystemExit")
            self._send_status("setup", -1, status, error)
            return
        self._send_status("setup", -1, "ok")
        for index in range(start, len(calls)):
            try:
                call = _real_compile(calls[index], f"<call {index}>", "eval")
            except MemoryError:
                self._send_status("call", index, "memory", "MemoryError")
                continue
            except BaseException as exc:  # noqa: BLE001 - SyntaxError and friends
                self._send_status("call", index, "exception", describe_exception(exc))
                continue
            began = _clock()
            raised, value = self._untrusted(_real_eval, call, namespace, traced=True)
            took = _clock() - began
            if raised:
                status, error = self._outcome(value) or ("early_exit", "SystemExit")
                self._send_status("call", index, status, error, took)
            else:
                self._send_value(index, value, took)
            del value
            _flush_stdio()

    def _send_value(self, index: int, value: Any, took: float) -> None:
        parts: list[str] = []
        try:
            _write_json(self.encode(value), parts.append)
        except MemoryError:
            error = "MemoryError while encoding the value"
            self._send_status("call", index, "memory", error, took)
            return
        except self.plain_error as exc:
            self._send_status("call", index, "not_plain", str(exc)[:MAX_ERROR_CHARS], took)
            return
        except BaseException as exc:  # noqa: BLE001 - RecursionError, a huge int, a bad __hash__
            self._send_status("call", index, "not_plain", self._describe(exc), took)
            return
        payload = "".join(parts)
        if len(payload) > self.max_value_bytes:
            error = f"value of {len(payload)} bytes exceeds the limit"
            self._send_status("call", index, "not_plain", error, took)
            return
        self._send(f'{{"k":"call","i":{index:d},"s":"ok","d":{took:.6f},"v":{payload}}}')

    def _run_stdio(self, program: str, index: int) -> None:
        prepared = self._setup(program, "__main__")
        if prepared is None:
            return
        code, module = prepared
        module.__dict__["__file__"] = "<solution>"
        sys.argv[:] = ["solution"]
        self._send_status("setup", -1, "ok")
        began = _clock()
        raised, exc = self._untrusted(_real_exec, code, module.__dict__, traced=True)
        _flush_stdio()
        took = _clock() - began
        outcome = self._outcome(exc, exit_zero_ok=True) if raised else None
        status, error = outcome or ("ok", "")
        self._send_status("call", index, status, error, took)


def prepare_interpreter() -> None:
    """Once, in the zygote: what every job child needs, so that children do not redo it.

    ``sys.std*`` become fresh UTF-8 streams on descriptors 0-2 (a child puts its pipes there; the
    zygote itself never writes to them, so their buffers start empty), and ``exit``/``quit`` are
    defined as ``site`` would (workers run without ``site``).
    """
    _reopen_stdio()
    _install_exit_builtins()


def _reopen_stdio() -> None:
    sys.stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8", errors="replace"
    )
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8", errors="replace"
    )
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    for name in ("stdin", "stdout", "stderr"):
        setattr(sys, f"__{name}__", getattr(sys, name))


def _flush_stdio() -> None:
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # noqa: BLE001 - broken or replaced by untrusted code
            pass


def _hang_up() -> None:
    """Close the job's pipes before exiting, so the parent sees the job end at once.

    The kernel closes a dying process's descriptors only after it has unmapped its memory
    (``exit_mm`` runs before ``exit_files``); closing them first takes that teardown off
    the parent's path.
    """
    for fd in (RESULT_FD, 1, 2, 0):
        try:
            _os_close(fd)
        except OSError:
            pass


def _install_exit_builtins() -> None:
    """``exit``/``quit`` as ``site`` would define them (the worker runs without ``site``)."""

    def _exit(code: Any = None) -> None:
        raise SystemExit(code)

    builtins.exit = _exit  # type: ignore[assignment]
    builtins.quit = _exit  # type: ignore[assignment]
