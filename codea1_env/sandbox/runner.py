"""The job runner: executes one job inside a confined child and streams its result records.

Runs inside the sandbox (imported by the zygote as the top-level ``runner``; standard library
only). Function mode: the program runs once as module ``solution``, then each call expression is
evaluated in its namespace and the value is encoded as exact-type plain data
(:mod:`codea1_env.plain`), one record per call. Stdio mode: the program runs as ``__main__`` with
the job's input on stdin; the parent keeps its stdout as the value.

Untrusted code may patch anything it can reach. The runner therefore holds its own references to
what it needs, keeps its own copy of ``builtins`` (:class:`_Builtins`) and serializes records with
C-level helpers only, so a program cannot break the reporting of its own outcomes by accident.
A program that deliberately forges records can only claim values it could have returned anyway:
the trusted parent validates the sequence and decodes values as plain data, nothing else.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from protocol import EXIT_RUNNER_ERROR, MAX_ERROR_CHARS, RESULT_FD, pack_frame, read_frame

# Captured before any untrusted code runs: a program may replace the module attributes.
real_exit = os._exit
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
_dict = dict
_str = str
_BaseException = BaseException
_get_recursion_limit = sys.getrecursionlimit
_set_recursion_limit = sys.setrecursionlimit
_quote = json.encoder.encode_basestring_ascii
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


class _Builtins:
    """Keeps the runner's builtins apart from the program's.

    Untrusted code may patch or empty the ``builtins`` module and change the recursion limit; it
    runs with its own view (kept from call to call), while the runner's code in between runs
    with the pristine one, so the program cannot break how its outcomes are reported.
    """

    def __init__(self) -> None:
        live = builtins.__dict__
        self.pristine = _dict(live)
        self.program = _dict(live)
        self.limit = _get_recursion_limit()
        self.program_limit = self.limit

    def enter_program(self) -> None:
        live = builtins.__dict__
        live.clear()
        live.update(self.program)
        _set_recursion_limit(self.program_limit)

    def leave_program(self) -> None:
        live = builtins.__dict__
        self.program = _dict(live)
        live.clear()
        live.update(self.pristine)
        self.program_limit = _get_recursion_limit()
        _set_recursion_limit(self.limit)


class JobRunner:
    """Runs one job inside a confined child and streams its result records."""

    def __init__(self, encode: Callable[[Any], Any] | None, plain_error: type[Exception]) -> None:
        if encode is None:
            raise RuntimeError("plain-data codec not loaded")
        self.encode = encode
        self.plain_error = plain_error
        self.max_value_bytes = 1 << 20
        self.builtins: _Builtins | None = None
        self.pid = _getpid()

    def run(self) -> None:
        """Read the job from stdin, run it, stream the records, and exit the process."""
        header = json.loads(read_frame(0, 1 << 30))
        self.max_value_bytes = int(header.get("max_value_bytes", self.max_value_bytes))
        stdio = header.get("mode") == "stdio"
        program = str(header["program"])
        start = int(header.get("start", 0))
        calls = [str(call) for call in header.get("calls", [])]
        del header
        if not stdio:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
        self.builtins = _Builtins()
        if stdio:
            self._run_stdio(program, start)
        else:
            self._run_calls(program, calls, start)
        _flush_stdio()
        real_exit(0)

    def _untrusted(self, function: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """Call untrusted code with the program's builtins; ``(raised, result_or_exception)``."""
        assert self.builtins is not None
        self.builtins.enter_program()
        try:
            return False, function(*args)
        except _BaseException as exc:  # noqa: BLE001 - untrusted code may raise anything
            return True, exc
        finally:
            if _getpid() != self.pid:
                real_exit(0)  # a process the program forked must not go on running the job
            self.builtins.leave_program()

    def _describe(self, exc: BaseException) -> str:
        """:func:`describe_exception` of an exception whose ``__str__`` may be untrusted code."""
        raised, text = self._untrusted(describe_exception, exc)
        return "BaseException" if raised else _str(text)

    def _send(self, record: str) -> None:
        data = pack_frame(record.encode("utf-8", "surrogatepass"))
        try:
            while data:
                written = real_write(RESULT_FD, data)
                data = data[written:]
        except OSError:
            real_exit(EXIT_RUNNER_ERROR)

    def _send_status(self, kind: str, index: int, status: str, error: str = "") -> None:
        tail = f',"e":{_quote(error)}' if error else ""
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
        return code, module

    def _run_calls(self, program: str, calls: list[str], start: int) -> None:
        prepared = self._setup(program, "solution")
        if prepared is None:
            return
        code, module = prepared
        namespace = module.__dict__
        raised, exc = self._untrusted(_real_exec, code, namespace)
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
            raised, value = self._untrusted(_real_eval, call, namespace)
            if raised:
                status, error = self._outcome(value) or ("early_exit", "SystemExit")
                self._send_status("call", index, status, error)
            else:
                self._send_value(index, value)
            del value
            _flush_stdio()

    def _send_value(self, index: int, value: Any) -> None:
        parts: list[str] = []
        try:
            _write_json(self.encode(value), parts.append)
        except MemoryError:
            self._send_status("call", index, "memory", "MemoryError while encoding the value")
            return
        except self.plain_error as exc:
            self._send_status("call", index, "not_plain", str(exc)[:MAX_ERROR_CHARS])
            return
        except BaseException as exc:  # noqa: BLE001 - RecursionError, a huge int, a bad __hash__
            self._send_status("call", index, "not_plain", self._describe(exc))
            return
        payload = "".join(parts)
        if len(payload) > self.max_value_bytes:
            self._send_status(
                "call", index, "not_plain", f"value of {len(payload)} bytes exceeds the limit"
            )
            return
        self._send(f'{{"k":"call","i":{index:d},"s":"ok","v":{payload}}}')

    def _run_stdio(self, program: str, index: int) -> None:
        prepared = self._setup(program, "__main__")
        if prepared is None:
            return
        code, module = prepared
        module.__dict__["__file__"] = "<solution>"
        sys.argv[:] = ["solution"]
        self._send_status("setup", -1, "ok")
        raised, exc = self._untrusted(_real_exec, code, module.__dict__)
        _flush_stdio()
        outcome = self._outcome(exc, exit_zero_ok=True) if raised else None
        if outcome is None:
            self._send_status("call", index, "ok")
        else:
            self._send_status("call", index, *outcome)


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


def _install_exit_builtins() -> None:
    """``exit``/``quit`` as ``site`` would define them (the worker runs without ``site``)."""

    def _exit(code: Any = None) -> None:
        raise SystemExit(code)

    builtins.exit = _exit  # type: ignore[assignment]
    builtins.quit = _exit  # type: ignore[assignment]
