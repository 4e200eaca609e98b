"""Warnings that point at the user's line, past the frames of this package and the RL APIs.

A warning about what a caller passed (an unknown ``reset`` option) belongs on the caller's line.
A fixed ``stacklevel`` cannot find it: ``gym.make`` wraps an env in a varying number of
wrappers, each one more frame between the user's ``reset`` and ours. :func:`warn_at_caller`
walks the stack instead, past every frame of ``codea1_env`` and of the Gymnasium and PettingZoo
packages, as Python 3.12's ``skip_file_prefixes`` does (Python 3.10 and 3.11 have no such
argument).
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["library_prefixes", "warn_at_caller"]

_OWN = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
_WRAPPING_PACKAGES = ("gymnasium", "pettingzoo")


def library_prefixes() -> tuple[str, ...]:
    """Directories whose frames a caller warning skips: ``codea1_env`` and the loaded RL APIs."""
    prefixes = [_OWN]
    for name in _WRAPPING_PACKAGES:
        module = sys.modules.get(name)
        location = getattr(module, "__file__", None)
        if location:
            prefixes.append(os.path.dirname(os.path.realpath(location)) + os.sep)
    return tuple(prefixes)


def warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn with the first frame outside :func:`library_prefixes` as the warning's location.

    Where every frame is inside them (a call from this package's own command line), the
    outermost frame is the location.

    Args:
        message: The warning's text.
        category: Its class.
    """
    prefixes = library_prefixes()
    frame = sys._getframe(0)  # this function: stacklevel 1
    level = 1
    while frame.f_back is not None and os.path.realpath(frame.f_code.co_filename).startswith(
        prefixes
    ):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
