"""Build a sandbox backend by name: ``make_sandbox("local")`` or ``make_sandbox("docker")``."""

from __future__ import annotations

from typing import Any

from codea1_env.sandbox.base import Sandbox

__all__ = ["BACKENDS", "make_sandbox"]

BACKENDS = ("local", "docker")
"""Backend names :func:`make_sandbox` accepts."""


def make_sandbox(name: str = "local", **kwargs: Any) -> Sandbox:
    """Create the backend ``name`` with ``kwargs`` passed to its constructor.

    Args:
        name: ``"local"`` (:class:`~codea1_env.sandbox.local.LocalSandbox`) or ``"docker"``
            (:class:`~codea1_env.sandbox.docker_backend.DockerSandbox`).
        **kwargs: Constructor arguments, for example ``workers=4`` or ``require=()``.

    Raises:
        ValueError: unknown backend name.
        SandboxUnavailable: the backend cannot start (see its constructor).
    """
    if name == "local":
        from codea1_env.sandbox.local import LocalSandbox

        return LocalSandbox(**kwargs)
    if name == "docker":
        from codea1_env.sandbox.docker_backend import DockerSandbox

        return DockerSandbox(**kwargs)
    raise ValueError(f"unknown sandbox backend {name!r}; choose from {BACKENDS}")
