"""The ``codea1`` command line.

Subcommands:

* ``codea1 train``: the self-play GRPO trainer (``--preset tiny`` runs on a CPU in minutes).
* ``codea1 duel``: scripted players duel on the built-in problems; a table of rewards and verdicts.
* ``codea1 eval``: code metrics (pass@k, avg@k) and test metrics (validity, mut@k, ...) per policy.
* ``codea1 report RUN_DIR``: PNG plots and one self-contained HTML page for a training run.
* ``codea1 export RUN_DIR``: a trained player as a transformers model directory (``vllm serve``).
* ``codea1 serve-reward``: an HTTP reward service for RL engines (OpenRLHF's remote reward).

Each subcommand lives in its own module and is imported only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

__all__ = ["build_parser", "main", "report_input_error"]

_COMMANDS = {
    "train": ("agents.commands.train_cli", "train both models with Code-A1 self-play RL (GRPO)"),
    "duel": ("agents.commands.duel_cli", "play scripted duels and print rewards and verdicts"),
    "eval": (
        "agents.commands.eval_cli",
        "compare policies: code and test-generation metrics, JSON + Markdown",
    ),
    "report": ("agents.commands.report_cli", "PNG plots and a self-contained HTML report of a run"),
    "export": (
        "agents.commands.export_cli",
        "write a trained player as a transformers model directory (to serve or evaluate)",
    ),
    "serve-reward": (
        "agents.commands.serve_reward_cli",
        "HTTP reward service for RL engines (OpenRLHF remote reward, /v1/judge)",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per command."""
    parser = argparse.ArgumentParser(
        prog="codea1",
        description="Code-A1: a Code LLM and a Test LLM co-evolved with RL.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in _COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(command)
        command.set_defaults(_module=module, _parser=command)
    return parser


TRACEBACK_ENV = "CODEA1_TRACEBACK"
"""Set to 1 to get the full traceback of an error the command line reports in one line."""


_EXTRA_HINT = "pip install "
"""How every lazy import of an optional dependency says what to install (``'codea1[train]'``)."""


def _input_errors() -> tuple[type[BaseException], ...]:
    """What a user's files, flags and environment raise: reported in one line, not a traceback.

    Besides bad files and values, a service the user named that is not there (a sandbox
    backend that cannot start, ``--sandbox docker`` without an engine; an ``http:`` policy
    whose server does not answer) and a damaged checkpoint file (named in the message).
    """
    import sqlite3

    from agents.lm.http import HTTPPolicyError
    from agents.training.checkpoint import CheckpointError
    from codea1_env.sandbox.base import SandboxUnavailable

    return (
        OSError,
        ValueError,
        KeyError,
        sqlite3.DatabaseError,
        SandboxUnavailable,
        HTTPPolicyError,
        CheckpointError,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status.

    An error from the user's input (a missing or damaged file, a bad value: ``OSError``,
    ``ValueError`` and its kin such as ``ProblemFormatError``, ``KeyError``, SQLite errors; a
    sandbox backend or an ``http:`` policy server that is not there) is printed as
    ``codea1 COMMAND: error: MESSAGE`` with exit status 2; ``CODEA1_TRACEBACK=1`` prints the
    traceback too. A missing optional dependency is one line too, naming the extra to install.
    """
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:  # the command's own usage line, not the top-level one
        args._parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    module = importlib.import_module(args._module)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except ImportError as exc:
        if _EXTRA_HINT not in str(exc):  # not an optional dependency: a bug, with its traceback
            raise
        print(f"codea1 {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except _input_errors() as exc:
        return report_input_error(f"codea1 {args.command}", exc)


def report_input_error(prog: str, exc: BaseException) -> int:
    """Print ``PROG: error: TYPE: MESSAGE`` and where it was raised; return exit status 2.

    With ``CODEA1_TRACEBACK=1`` the traceback comes first. Called while handling ``exc``.
    """
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    line = f"{prog}: error: {type(exc).__name__}: {message}"
    if os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
        traceback.print_exc()
        print(line, file=sys.stderr)
    else:
        print(f"{line}\n({_where(exc)}set {TRACEBACK_ENV}=1 for the traceback)", file=sys.stderr)
    return 2


def _where(exc: BaseException) -> str:
    """``raised at PATH:LINE; ``: the innermost frame in codea1's own code, for a bug report."""
    roots = tuple(
        os.path.dirname(os.path.abspath(m.__file__ or "")) + os.sep
        for m in (sys.modules.get("agents"), sys.modules.get("codea1_env"))
        if m is not None
    )
    ours = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(roots)]
    if not ours:
        return ""
    top = os.path.dirname(roots[0].rstrip(os.sep))
    return f"raised at {os.path.relpath(ours[-1].filename, top)}:{ours[-1].lineno}; "


if __name__ == "__main__":
    sys.exit(main())
