"""``codea1 serve-reward``: the HTTP reward service for RL engines (OpenRLHF and others).

One referee, one mistake book, concurrent requests batched into single sandbox calls; see
:mod:`agents.integrations.reward_service` for the endpoints and :mod:`agents.integrations.openrlhf`
for the labels.

Example::

    codea1 serve-reward --source bank --mistake-book /data/book.sqlite --port 8011
    # OpenRLHF: --reward.remote_url http://127.0.0.1:8011/get_reward
    # verl: reward.reward_manager.name=codea1 +reward.reward_kwargs.reward_url=http://127.0.0.1:8011
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from typing import Any

from agents.commands.argtypes import (
    nonnegative_float,
    nonnegative_int,
    port,
    positive_int,
    probability,
)

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve-reward`` subcommand's arguments."""
    from agents.integrations.options import DEFAULT_MAX_BODY_BYTES, MODES, OPPONENTS

    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=port, default=8011, help="port (0: any free port)")
    parser.add_argument(
        "--source",
        default="bank",
        help="problems that labels name by id: bank, humaneval, procedural, jsonl:PATH",
    )
    parser.add_argument(
        "--mistake-book",
        metavar="PATH",
        default=None,
        help="SQLite mistake book (WAL; may be shared with other processes); default in memory",
    )
    parser.add_argument(
        "--opponent",
        choices=OPPONENTS,
        default="boundary",
        help="frozen tester of coder rows (gt: golden mode, the GT pass rate)",
    )
    parser.add_argument("--opponent-url", default=None, help="API root for --opponent http")
    parser.add_argument("--opponent-model", default="tester", help="model for --opponent http")
    parser.add_argument("--mode", choices=MODES, default="code-a1", help="reward mode")
    parser.add_argument("--alpha", type=probability, default=0.5, help="tester validity weight")
    parser.add_argument("--k", type=positive_int, default=8, help="Code-A1's K")
    parser.add_argument(
        "--num-tests", type=positive_int, default=8, help="tests per frozen-tester suite"
    )
    parser.add_argument(
        "--seed", type=nonnegative_int, default=0, help="seed of the scripted testers"
    )
    parser.add_argument(
        "--sandbox", default="local", choices=("local", "docker", "ray"), help="sandbox backend"
    )
    parser.add_argument("--workers", type=positive_int, default=None, help="local sandbox workers")
    parser.add_argument(
        "--no-book-update", action="store_true", help="replay the mistake book, never update it"
    )
    parser.add_argument(
        "--max-batch", type=positive_int, default=256, help="most rows per sandbox call"
    )
    parser.add_argument(
        "--batch-window-ms",
        type=nonnegative_float,
        default=5.0,
        help="wait for more requests (ms, >= 0)",
    )
    parser.add_argument(
        "--max-queue", type=positive_int, default=1024, help="queued requests before 503"
    )
    parser.add_argument(
        "--max-request-bytes", type=positive_int, default=DEFAULT_MAX_BODY_BYTES, help="413 above"
    )
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")


def check_address(host: str, port_number: int) -> None:
    """Raise ``OSError`` naming ``--host``/``--port`` when the service could not listen there.

    Bound and released at once, as the server binds (``SO_REUSEADDR``), so that a taken port
    or a bad host is reported before anything is built or written.
    """
    from agents.integrations.reward_service import RewardServer

    probe = socket.socket(RewardServer.address_family, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port_number))
    except OSError as exc:
        raise OSError(
            f"--host {host} --port {port_number}: cannot listen there ({exc.strerror or exc})"
        ) from None
    finally:
        probe.close()


def run(args: argparse.Namespace) -> int:
    """Run ``codea1 serve-reward`` until SIGTERM or SIGINT."""
    from agents.integrations.core import RewardCore
    from agents.integrations.reward_service import RewardService, make_server, serve

    check_address(args.host, args.port)  # before the core opens (and creates) the book
    core = RewardCore(
        args.source,
        opponent=args.opponent,
        mode=args.mode,
        alpha=args.alpha,
        k=args.k,
        mistake_book=args.mistake_book,
        sandbox=args.sandbox,
        workers=args.workers,
        seed=args.seed,
        num_tests=args.num_tests,
        update_book=not args.no_book_update,
        opponent_url=args.opponent_url,
        opponent_model=args.opponent_model,
    )
    try:
        service = RewardService(
            core,
            max_batch=args.max_batch,
            batch_window_s=args.batch_window_ms / 1000.0,
            max_queue=args.max_queue,
        )
    except BaseException:
        core.close()
        raise
    try:
        server = make_server(
            service,
            args.host,
            args.port,
            max_body_bytes=args.max_request_bytes,
            verbose=args.verbose,
        )
    except OSError as exc:  # taken since the check
        service.close()
        raise OSError(
            f"--host {args.host} --port {args.port}: cannot listen there ({exc})"
        ) from None
    except BaseException:
        service.close()
        raise

    def ready(srv: Any) -> None:
        line = {"listening": srv.url, "opponent": core.opponent, "source": core.source_name}
        print(json.dumps(line), flush=True)

    serve(server, ready=ready)
    print(json.dumps({"stopped": True, **service.health()}), file=sys.stderr, flush=True)
    return 0
