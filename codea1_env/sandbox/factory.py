"""Build a sandbox backend by name: ``make_sandbox("local" | "docker" | "ray")``."""

from __future__ import annotations

from typing import Any

from codea1_env.sandbox.base import Sandbox

__all__ = ["BACKENDS", "make_sandbox"]

BACKENDS = ("local", "docker", "ray")
"""Backend names :func:`make_sandbox` accepts."""


def make_sandbox(name: str = "local", **kwargs: Any) -> Sandbox:
    """Create the backend ``name`` with ``kwargs`` passed to its constructor.

    Args:
        name: ``"local"`` (:class:`~codea1_env.sandbox.local.LocalSandbox`) or ``"docker"``
            (:class:`~codea1_env.sandbox.docker_backend.DockerSandbox`) or ``"ray"``
            (:class:`~codea1_env.sandbox.ray_backend.RaySandbox`, a pool of actors).
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
    if name == "ray":
        from codea1_env.sandbox.ray_backend import RaySandbox

        return RaySandbox(**kwargs)
    raise ValueError(f"unknown sandbox backend {name!r}; choose from {BACKENDS}")
