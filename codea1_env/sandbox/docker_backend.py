"""The Docker backend: one container per worker, running the same zygote as the local backend.

Each worker is a long-lived container started with the docker SDK (``pip install
'codea1[docker]'``): ``--network none``, a read-only root file system, a size-capped tmpfs on
``/tmp`` for scratch directories, ``--memory``/``--pids-limit``, every capability dropped but the
few the zygote needs to drop job children to their own uid (SETUID, SETGID, KILL, CHOWN,
DAC_OVERRIDE, FOWNER), and ``no-new-privileges``. The worker files are bind-mounted read-only.

The zygote inside connects back over a Unix socket in a host directory mounted into the container,
so the trusted parent passes pipes to each job child exactly as in the local backend and reads its
records directly; jobs, limits, statuses and results are identical. Inside the container the job
children still get their own session, rlimits, seccomp filter, unprivileged uid and private
scratch directory, and the container adds its own namespaces, memory and pids cgroups. The same
runner installs the same audit hook, so ``JobResult.events`` carries the same best-effort
``audit_*`` telemetry as locally (see :mod:`.driver`).

No image is pulled: build one locally (``.ci/docker_setup.sh`` does it with ``docker import`` of
a minimal root file system holding a Python 3 and its standard library).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import weakref
from collections.abc import Sequence
from typing import Any

from codea1_env.sandbox.base import IsolationReport, Limits, SandboxUnavailable
from codea1_env.sandbox.child import WorkerBroken, limits_message
from codea1_env.sandbox.confinement import worker_files
from codea1_env.sandbox.driver import ZygoteClient, job_environment, zygote_config
from codea1_env.sandbox.layers import (
    REQUIRE_ENV,
    layers_from_probes,
    python_versions,
    resolve_required,
)
from codea1_env.sandbox.local import DEFAULT_PREIMPORT
from codea1_env.sandbox.pool import PooledSandbox, WorkerPool
from codea1_env.sandbox.seccomp_policy import compile_policy_or_none
from codea1_env.sandbox.uids import UidLease, lease_uids

__all__ = ["DEFAULT_IMAGE", "DockerSandbox", "docker_hosts"]

DEFAULT_IMAGE = "codea1-sandbox:latest"
"""Image built by ``.ci/docker_setup.sh``."""
FALLBACK_SOCKET = "unix:///run/codea1-docker/docker.sock"
"""Where ``.ci/docker_setup.sh`` starts its own engine when none runs."""
_CONTAINER_DIR = "/run/codea1"
_CAPABILITIES = ["SETUID", "SETGID", "KILL", "CHOWN", "DAC_OVERRIDE", "FOWNER"]


def docker_hosts(base_url: str | None = None) -> list[str]:
    """Engine addresses to try, in order.

    ``base_url``, ``$DOCKER_HOST``, the default socket, then the socket of
    ``.ci/docker_setup.sh``; Unix sockets that do not exist are left out.
    """
    found = [base_url] if base_url else []
    if os.environ.get("DOCKER_HOST"):
        found.append(os.environ["DOCKER_HOST"])
    found += ["unix:///var/run/docker.sock", FALLBACK_SOCKET]
    return [h for h in dict.fromkeys(found) if not h.startswith("unix://") or os.path.exists(h[7:])]


def _connect_engine(base_url: str | None) -> tuple[Any, str]:
    """A connected ``docker.DockerClient`` and the address it answered on."""
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable(
            "the Docker backend needs the docker SDK: pip install 'codea1[docker]'"
        ) from None
    errors = []
    for host in docker_hosts(base_url):
        try:
            client = docker.DockerClient(base_url=host, version="auto", timeout=60)
            client.ping()
            return client, host
        except Exception as exc:  # noqa: BLE001 - any SDK/transport error means "not this one"
            errors.append(f"{host}: {exc}")
    tried = "; ".join(errors) or "no socket found"
    raise SandboxUnavailable(
        f"no Docker engine answers ({tried}). Start one (for example with .ci/docker_setup.sh) "
        "or pass base_url=."
    )


class _DockerWorker:
    """One container running a zygote that connects back over a Unix socket."""

    def __init__(self, sandbox: DockerSandbox, index: int, config: dict[str, Any]) -> None:
        self.sandbox = sandbox
        self.index = index
        self.name = f"docker worker {index}"
        self.config = config
        self.container: Any = None
        self.facts: dict[str, Any] = {}
        self._client: ZygoteClient | None = None

    @property
    def client(self) -> ZygoteClient:
        if self._client is None:
            raise SandboxUnavailable(f"{self.name} is not running")
        return self._client

    def start(self) -> dict[str, Any]:
        """Start the container, accept its zygote's connection and handshake."""
        sandbox = self.sandbox
        path = os.path.join(sandbox.socket_dir, f"w{self.index}.sock")
        if os.path.exists(path):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listener.bind(path)
            os.chmod(path, 0o600)
            listener.listen(1)
            listener.settimeout(sandbox.start_timeout_s)
            self.container = sandbox.engine.containers.run(
                sandbox.image,
                command=[
                    sandbox.python,
                    "-S",
                    "-s",
                    "-B",
                    "/sandbox/entry.py",
                    "--connect",
                    f"{_CONTAINER_DIR}/w{self.index}.sock",
                ],
                detach=True,
                network_mode="none",
                ipc_mode="none",
                read_only=True,
                tmpfs={"/tmp": f"size={sandbox.tmp_mb}m,mode=0755"},
                mem_limit=f"{sandbox.memory_mb}m",
                memswap_limit=f"{sandbox.memory_mb}m",
                pids_limit=sandbox.pids_limit,
                cap_drop=["ALL"],
                cap_add=_CAPABILITIES,
                security_opt=["no-new-privileges"],
                environment=job_environment(),
                working_dir="/tmp",
                volumes={
                    **{
                        str(path): {"bind": f"/sandbox/{path.name}", "mode": "ro"}
                        for path in worker_files()
                    },
                    sandbox.socket_dir: {"bind": _CONTAINER_DIR, "mode": "rw"},
                },
                labels={"codea1.sandbox": "worker"},
            )
            try:
                connection, _ = listener.accept()
            except OSError as exc:
                raise SandboxUnavailable(f"{self.name}: {exc}; {self.logs()}") from None
        except SandboxUnavailable:
            self.stop()
            raise
        except Exception as exc:  # noqa: BLE001 - docker SDK errors (image missing, API errors)
            self.stop()
            raise SandboxUnavailable(f"{self.name} failed to start: {exc}") from None
        finally:
            listener.close()
            if os.path.exists(path):
                os.unlink(path)
        connection.settimeout(None)
        self._client = ZygoteClient(connection, self.name)
        try:
            self.facts = self._client.handshake(self.config, sandbox.start_timeout_s)
        except (WorkerBroken, OSError) as exc:
            detail = self.logs()
            self.stop()
            raise SandboxUnavailable(f"{self.name} failed to start: {exc}; {detail}") from None
        return self.facts

    def logs(self) -> str:
        if self.container is None:
            return "no container"
        try:
            text = self.container.logs().decode("utf-8", "replace").strip()
        except Exception:  # noqa: BLE001 - the container may already be gone
            return "container logs unavailable"
        return f"container log: {text[-2000:]}" if text else "container log empty"

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self._client is not None:
            self._client.quit()
            self._client = None
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except Exception:  # noqa: BLE001 - already removed
                pass
            self.container = None


def _stop_all(workers: list[_DockerWorker], leases: list[UidLease], socket_dir: str) -> None:
    for worker in workers:
        worker.stop()
    for lease in leases:
        lease.release()
    shutil.rmtree(socket_dir, ignore_errors=True)


class DockerSandbox(PooledSandbox):
    """Run jobs in containers, one warm container (zygote) per worker.

    Args:
        image: A local image with a Python 3 (3.10+) at ``python``; see ``.ci/docker_setup.sh``.
        workers: Number of containers; default ``os.cpu_count()``.
        require: Required layers as for :class:`~codea1_env.sandbox.local.LocalSandbox`.
        python: Interpreter path inside the image.
        base_url: Docker engine address; default: ``$DOCKER_HOST``, ``/var/run/docker.sock``,
            then ``unix:///run/codea1-docker/docker.sock``.
        memory_mb: Memory cap of each container (cgroup), on top of each job's RLIMIT_AS.
        pids_limit: Processes cap of each container.
        tmp_mb: Size of each container's ``/tmp`` tmpfs.
        preimport: Modules each zygote imports once.
        start_timeout_s: How long a container may take to start.

    Attributes:
        base_url: The engine address in use.

    Raises:
        SandboxUnavailable: the SDK is missing (names the ``docker`` extra), no engine answers,
            the image is missing, or a required layer is not active.
    """

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        workers: int | None = None,
        require: Sequence[str] | None = None,
        *,
        python: str = "/usr/bin/python3",
        base_url: str | None = None,
        memory_mb: int = 2048,
        pids_limit: int = 256,
        tmp_mb: int = 256,
        preimport: Sequence[str] = DEFAULT_PREIMPORT,
        start_timeout_s: float = 60.0,
    ) -> None:
        count = (os.cpu_count() or 1) if workers is None else int(workers)
        if count < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.required = resolve_required(require)
        self.image = image
        self.python = python
        self.memory_mb = int(memory_mb)
        self.pids_limit = int(pids_limit)
        self.tmp_mb = int(tmp_mb)
        self.start_timeout_s = float(start_timeout_s)
        self.engine, self.base_url = _connect_engine(base_url)
        try:
            self.engine.images.get(image)
        except Exception as exc:  # noqa: BLE001 - docker.errors.ImageNotFound and API errors
            self.engine.close()
            raise SandboxUnavailable(
                f"Docker image {image!r} not available ({exc}); build it with .ci/docker_setup.sh"
            ) from None
        self.socket_dir = tempfile.mkdtemp(prefix="codea1-docker-")
        self._workers: list[_DockerWorker] = []
        self._leases: list[UidLease] = []
        self._closed = False
        self._finalizer = weakref.finalize(
            self, _stop_all, self._workers, self._leases, self.socket_dir
        )
        try:
            self._start(count, preimport)
        except BaseException:
            self.close()
            raise

    def _start(self, count: int, preimport: Sequence[str]) -> None:
        notes: list[str] = []
        programs = compile_policy_or_none(notes)
        try:  # container uids are host uids (no user-namespace remapping): keep them unique
            self._leases.extend(lease_uids(count))
        except OSError as exc:
            notes.append(f"unprivileged_uid: uid leases unavailable ({exc}); using 60000+i")
        probe_limits = limits_message(Limits())
        for i in range(count):
            uid = self._leases[i].uid if i < len(self._leases) else 60000 + i
            config = zygote_config(
                uid=uid,
                programs=programs,
                scratch_root="/tmp",
                plain_path="/sandbox/plain.py",
                preimport=preimport,
                probe_limits=probe_limits,
                canaries=["/etc/shadow", "/root", "/home", "/var/run/docker.sock"],
                writable_canaries=["/sandbox", "/run/codea1"],
            )
            self._workers.append(_DockerWorker(self, i, config))
        probes = [(worker.start(), worker.config["uid"]) for worker in self._workers]
        combined = layers_from_probes(probes, probe_limits, None, notes)
        self._report = IsolationReport(
            backend="docker",
            layers=combined,
            notes=tuple(notes),
            python=python_versions(facts.get("python") for facts, _ in probes),
        )
        missing = self._report.missing(self.required)
        if missing:
            raise SandboxUnavailable(
                f"the Docker sandbox cannot provide required isolation layer(s) {missing}: "
                + "; ".join(notes)
                + f". Opt out with require=() or {REQUIRE_ENV}=none."
            )
        self._pool = WorkerPool(self._workers)

    def _after_close(self) -> None:
        """Close the engine's HTTP session once the containers are gone."""
        try:
            self.engine.close()
        except Exception:  # noqa: BLE001 - closing an HTTP session
            return
