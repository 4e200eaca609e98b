"""Isolation layers: their names, what each means, and how a probe proves it is active.

A worker does not claim layers from its configuration: at start-up its zygote forks a probe child
confined exactly like a job child, and the probe reports what it can observe (its uid, its
namespaces, its rlimits, whether an ``AF_INET`` socket can be created, which host paths it can
see or write...). :func:`layers_from_facts` turns those observations into the
:class:`~codea1_env.sandbox.base.IsolationReport` layers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_REQUIRED_LAYERS",
    "LAYERS",
    "REQUIRE_ENV",
    "host_namespaces",
    "layers_from_facts",
    "layers_from_probes",
    "resolve_required",
]

LAYERS: dict[str, str] = {
    "process_group": "each job runs in its own session and process group; SIGKILL reaches all",
    "rlimits": "CPU time, address space, file size and open files are capped by rlimits",
    "process_limit": "RLIMIT_NPROC caps the job's processes and threads (needs its own uid)",
    "seccomp": "a seccomp filter denies sockets, namespaces, ptrace, mounts, raising rlimits...",
    "no_new_privs": "the job can never gain privileges (setuid binaries do not elevate)",
    "unprivileged_uid": "the job runs as a non-root uid of its own, distinct from the host user",
    "no_network": "the job cannot open network sockets",
    "net_namespace": "the job is in its own network namespace (only a downed loopback)",
    "pid_namespace": "the job cannot see or signal host processes",
    "ipc_namespace": "the job has its own System V IPC and POSIX message queues",
    "mount_namespace": "the job has its own mount table",
    "filesystem_view": "the package's files, /etc, home directories and the rest are invisible",
    "readonly_host": "the job can write nowhere but its scratch directory",
    "private_scratch": "the job's working directory is a fresh private directory, removed after",
    "scrubbed_env": "the job's environment holds only a few fixed variables",
    "closed_stdin": "in function mode the job's stdin is empty",
    "output_cap": "stdout/stderr beyond the limit are discarded by the trusted side",
    "wall_timeout": "the trusted side SIGKILLs the job's process group at its time limit",
}
"""Every layer name, with a one-line meaning."""

DEFAULT_REQUIRED_LAYERS: tuple[str, ...] = ("process_group", "rlimits", "seccomp")
"""Layers a sandbox refuses to start without, unless the caller opts out."""

REQUIRE_ENV = "CODEA1_SANDBOX_REQUIRE"
"""Environment variable that overrides the default required layers: ``none`` (or empty) for no
requirement, ``default`` for :data:`DEFAULT_REQUIRED_LAYERS`, or a comma-separated list."""

ALLOWED_ENV_KEYS = frozenset(
    {"PATH", "HOME", "TMPDIR", "PWD", "LANG", "PYTHONHASHSEED", "PYTHONIOENCODING"}
)
"""Variables a job may see; anything else in its environment means the scrub failed."""


def resolve_required(require: Sequence[str] | None) -> tuple[str, ...]:
    """The required layers: ``require`` if given, else from :data:`REQUIRE_ENV`, else default.

    Raises:
        ValueError: an unknown layer name.
    """
    if require is None:
        text = os.environ.get(REQUIRE_ENV)
        if text is None or text.strip().lower() == "default":
            names: tuple[str, ...] = DEFAULT_REQUIRED_LAYERS
        elif text.strip().lower() in ("", "none"):
            names = ()
        else:
            names = tuple(part.strip() for part in text.split(",") if part.strip())
    else:
        if isinstance(require, str):
            raise ValueError("require must be a sequence of layer names, not a string")
        names = tuple(require)
    unknown = [name for name in names if name not in LAYERS]
    if unknown:
        raise ValueError(f"unknown isolation layer(s) {unknown}; known: {sorted(LAYERS)}")
    return names


def host_namespaces() -> dict[str, int]:
    """Namespace inode numbers of the calling (trusted) process."""
    found = {}
    for name in ("net", "pid", "mnt", "ipc", "uts"):
        try:
            found[name] = os.stat(f"/proc/self/ns/{name}").st_ino
        except OSError:
            found[name] = 0
    return found


def layers_from_facts(
    facts: Mapping[str, Any], expected: Mapping[str, Any]
) -> tuple[dict[str, bool], list[str]]:
    """Decide which layers are active from a probe's observations.

    Args:
        facts: What the probe child reported (see ``worker._observe``).
        expected: ``host_ns`` (the parent's namespace inodes), ``limits`` (the probe's rlimit
            message), ``uid`` (the uid the child should run as, or None) and ``host_uid``.

    Returns:
        ``(layers, notes)``: every name of :data:`LAYERS` mapped to active or not, and a note for
        each inactive layer.
    """
    if "error" in facts:
        return {name: False for name in LAYERS}, [f"probe failed: {facts['error']}"]
    limits = expected.get("limits", {})
    rl = facts.get("rlimits", {})
    host_ns = expected.get("host_ns", {})
    ns = facts.get("namespaces", {})

    def own(name: str) -> bool:
        return bool(ns.get(name)) and bool(host_ns.get(name)) and ns[name] != host_ns[name]

    blocked = facts.get("inet_socket") in ("EACCES", "EPERM")
    only_loopback = facts.get("interfaces") in (["lo"], [])
    uid = facts.get("uid")
    want_uid = expected.get("uid")
    layers = {
        "process_group": bool(facts.get("own_session")),
        "rlimits": rl.get("RLIMIT_AS", [None])[0] == limits.get("memory_bytes")
        and rl.get("RLIMIT_FSIZE", [None])[0] == limits.get("file_size_bytes")
        and rl.get("RLIMIT_NOFILE", [None])[0] == limits.get("open_files")
        and (rl.get("RLIMIT_CPU", [0])[0] or 0) > 0,
        "process_limit": want_uid is not None
        and rl.get("RLIMIT_NPROC", [None])[0] == limits.get("processes"),
        "seccomp": facts.get("seccomp_mode") == "2" and blocked,
        "no_new_privs": facts.get("no_new_privs") == "1",
        "unprivileged_uid": uid not in (None, 0)
        and facts.get("euid") == uid
        and uid != expected.get("host_uid"),
        "no_network": blocked or (own("net") and only_loopback),
        "net_namespace": own("net"),
        "pid_namespace": own("pid"),
        "ipc_namespace": own("ipc"),
        "mount_namespace": own("mnt"),
        "filesystem_view": own("mnt") and not facts.get("visible"),
        "readonly_host": not facts.get("writable_outside_scratch"),
        "private_scratch": bool(facts.get("scratch_writable")),
        "scrubbed_env": set(facts.get("env_keys", ["?"])) <= ALLOWED_ENV_KEYS,
        "closed_stdin": bool(facts.get("stdin_empty")),
        "output_cap": True,
        "wall_timeout": True,
    }
    notes = []
    if not layers["unprivileged_uid"]:
        notes.append("unprivileged_uid: jobs run as the host user (start as root to get own uids)")
    if not layers["process_limit"]:
        notes.append("process_limit: RLIMIT_NPROC is only set when jobs have their own uid")
    if not layers["filesystem_view"]:
        shown = ", ".join(facts.get("visible", [])) or "host paths"
        notes.append(f"filesystem_view: jobs can see {shown} (needs a bubblewrap that can run)")
    if not layers["readonly_host"]:
        shown = ", ".join(facts.get("writable_outside_scratch", []))
        notes.append(f"readonly_host: jobs can write to {shown}")
    for name in ("net_namespace", "pid_namespace", "ipc_namespace", "mount_namespace"):
        if not layers[name]:
            notes.append(f"{name}: not available with this confinement")
    if not layers["seccomp"]:
        notes.append("seccomp: filter not loaded (pyseccomp/libseccomp missing?)")
    unreachable = list(facts.get("unreachable_paths", []))
    if not facts.get("stdlib_readable", True) or unreachable:
        shown = ", ".join(str(p) for p in unreachable) or "the standard library"
        notes.append(
            f"jobs cannot read {shown}: they can import only the modules the worker pre-imported "
            "(make those directories readable by other users)"
        )
    for extra in facts.get("zygote_notes", []):
        notes.append(str(extra))
    return layers, notes


def python_versions(versions: Iterable[Any]) -> str:
    """The Pythons that run the programs, as :attr:`IsolationReport.python` gives them.

    ``versions``: each worker's reported version (its probe's ``"python"``, or a backend's
    report); anything that is not a short version string is left out.
    """
    found = {v for v in versions if isinstance(v, str) and re.fullmatch(r"\d+\.\d+\.\d+\w*", v)}
    return ", ".join(sorted(found, key=lambda v: [int(x) for x in re.findall(r"\d+", v)]))


def layers_from_probes(
    probes: Iterable[tuple[Mapping[str, Any], int | None]],
    probe_limits: Mapping[str, Any],
    host_uid: int | None,
    notes: list[str],
) -> dict[str, bool]:
    """The layers active on every worker, from each worker's probe.

    Args:
        probes: ``(facts, uid)`` per worker: what its probe child reported and the uid its jobs
            should run as (None: the host user's). Consumed in order, one worker at a time.
        probe_limits: The rlimit message the probes ran under.
        host_uid: The uid jobs may share with the host (None when the parent runs as root).
        notes: Extended, without repeats, with a note for each layer inactive somewhere.

    Returns:
        Every name of :data:`LAYERS` mapped to whether it is active on all workers.
    """
    expected = {"host_ns": host_namespaces(), "limits": probe_limits, "host_uid": host_uid}
    combined: dict[str, bool] | None = None
    for facts, uid in probes:
        layers, layer_notes = layers_from_facts(facts, dict(expected, uid=uid))
        combined = (
            layers
            if combined is None
            else {k: v and layers.get(k, False) for k, v in combined.items()}
        )
        notes.extend(n for n in layer_notes if n not in notes)
    if combined is None:
        raise ValueError("no worker was probed")
    return combined
