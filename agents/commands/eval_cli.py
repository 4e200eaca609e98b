r"""``codea1 eval``: compare policies side by side on a problem source; writes JSON and Markdown.

Example::

    codea1 eval --policy gt=scripted:gt --policy mutant=scripted:mutant:0.5 \
        --policy scripted:boundary --source bank --problems 20 --samples 4 --k 1,4 --out results/

Writes ``OUT/eval.json`` (settings, one result per policy with per-problem rows) and
``OUT/eval.md`` (:func:`agents.evaluation.evaluate.markdown_table`: one row per policy, in the
order of the ``--policy`` flags and named as they name them, one column per metric that some
row has, whatever the policies are called), and prints the table.

Every tester given in one command is scored against the same mutants: a mutant is left out of
mut@k as likely equivalent only when it matches the GT on the GT tests' inputs and on every
tester's suites (docs/metrics.md). mut@k from separate commands is comparable only when the same
testers were evaluated together.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from agents.commands.argtypes import (
    check_output,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
    top_p,
)

__all__ = ["add_arguments", "run"]


def _ks(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--k expects comma-separated ints, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--k values must be >= 1, got {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``eval`` subcommand's arguments."""
    parser.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="[NAME=]SPEC",
        help="policy to evaluate (repeat): scripted:gt, scripted:mutant[:P], scripted:boundary, "
        "scripted:random, scripted:trivial, checkpoint:RUN_DIR, hf:PATH, http:URL#MODEL",
    )
    parser.add_argument(
        "--source",
        default="bank",
        help="problems: bank, humaneval, procedural[:SEED], procedural-test[:SEED], jsonl:PATH",
    )
    parser.add_argument(
        "--problems", type=positive_int, default=None, help="evaluate only N problems"
    )
    parser.add_argument(
        "--samples", type=positive_int, default=4, help="samples per problem (default 4)"
    )
    parser.add_argument("--k", type=_ks, default=(1,), help="pass@k values, e.g. 1,4 (<= samples)")
    parser.add_argument(
        "--test-k", type=positive_int, default=5, help="k of validity@k and mut@k (5)"
    )
    parser.add_argument(
        "--temperature",
        type=nonnegative_float,
        default=0.7,
        help="LM sampling temperature (0: greedy)",
    )
    parser.add_argument("--top-p", type=top_p, default=0.95, help="LM nucleus sampling, in (0, 1]")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="seed of every sampler")
    parser.add_argument(
        "--candidates",
        default="scripted:mutant:0.75",
        help="coder spec filling the shared candidate pool (discrimination, p01/p00, best-of-N)",
    )
    parser.add_argument(
        "--n-candidates", type=nonnegative_int, default=8, help="candidate codes per problem"
    )
    parser.add_argument(
        "--max-mutants",
        type=nonnegative_int,
        default=64,
        help="mutants per problem (0: all; default 64)",
    )
    parser.add_argument(
        "--http-timeout",
        type=positive_float,
        default=120.0,
        metavar="SECONDS",
        help="seconds an http: policy's server gets per request, whole reply included (120)",
    )
    parser.add_argument(
        "--http-retries",
        type=nonnegative_int,
        default=2,
        help="extra attempts of an http: request after a timeout, a dropped connection or "
        "HTTP 408/409/429/5xx (2)",
    )
    parser.add_argument("--out", default="results", help="output directory (default results/)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def run(args: argparse.Namespace) -> int:
    """Run ``codea1 eval``; returns 2 on a bad argument (with a message on stderr)."""
    from agents.evaluation.evaluate import (
        EvalSettings,
        evaluate_policies,
        markdown_table,
        select_problems,
    )
    from agents.training.environment import environment_record
    from codea1_env.atomic import write_text_atomic
    from codea1_env.problems import ProblemFormatError
    from codea1_env.sandbox.factory import make_sandbox

    try:
        out = check_output("--out", args.out, directory=True)
        settings = EvalSettings(
            samples=args.samples,
            ks=tuple(args.k),
            test_k=args.test_k,
            temperature=args.temperature,
            top_p=args.top_p,
            seed=args.seed,
            candidates=args.candidates,
            n_candidates=args.n_candidates,
            max_mutants=args.max_mutants or None,
            http_timeout=args.http_timeout,
            http_retries=args.http_retries,
        )
        problems = select_problems(_source(args.source), args.problems)
    except ProblemFormatError:
        raise  # a bad file: codea1's handler names the error, the file, the line and the field
    except (ValueError, KeyError, OSError) as exc:
        from agents.commands.cli import report_input_error

        return report_input_error("codea1 eval", exc)
    started = time.perf_counter()

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    with make_sandbox("local") as sandbox:
        rows = evaluate_policies(args.policy, problems, settings, sandbox=sandbox, progress=say)
        environment = environment_record(None, None, sandbox)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "source": args.source,
        "problems": len(problems),
        "settings": dataclasses.asdict(settings),
        "seconds": time.perf_counter() - started,
        "results": rows,
        "environment": environment,  # Python, packages, the sandbox's layers and Python
    }
    write_text_atomic(out / "eval.json", json.dumps(record, indent=1))
    table = markdown_table(rows)
    testers: list[str] = next(
        (row["mutants_judged_with"] for row in rows if "mutants_judged_with" in row), []
    )
    page = _markdown_page(args.source, len(problems), settings, table, testers)
    write_text_atomic(out / "eval.md", page)
    print(table)
    print(f"({record['seconds']:.1f} s; wrote {out / 'eval.json'} and {out / 'eval.md'})")
    return 0


def _source(spec: str) -> object:
    """A problem source; ``procedural-test[:SEED]`` is the procedural family's held-out split.

    Raises:
        ValueError: an unknown or malformed spec, naming ``--source``.
    """
    from codea1_env import problems

    name, _, arg = spec.partition(":")
    resolved = f"procedural:{arg or 0}:test" if name == "procedural-test" else spec
    try:
        return problems.load_source(resolved)
    except problems.ProblemFormatError:
        raise  # a bad file: its message names the file, the line and the field
    except ValueError as exc:
        raise ValueError(
            f"--source {spec!r}: {exc} (eval also takes procedural-test[:SEED])"
        ) from None


def _markdown_page(
    source: str,
    n_problems: int,
    settings: object,
    table: str,
    testers: list[str] | None = None,
) -> str:
    """eval.md: the settings in a sentence, the table, and which testers judged the mutants."""
    s = dataclasses.asdict(settings)  # type: ignore[call-overload]
    pooled = ""
    if testers:
        names = ", ".join(testers)
        pooled = (
            f" mut@{s['test_k']}'s likely-equivalent mutants were judged on the GT tests' inputs "
            f"and the suites of {names} together: compare mut@{s['test_k']} only with rows "
            "judged with the same testers."
        )
    return (
        f"# codea1 eval\n\nSource `{source}`, {n_problems} problems, {s['samples']} samples per "
        f"problem (T={s['temperature']}, top-p={s['top_p']}, seed {s['seed']}); test metrics at "
        f"k={s['test_k']}; candidate pool `{s['candidates']}` x {s['n_candidates']}.\n\n"
        f"{table}\n\nMetric definitions: `codea1_env/evaluation/metrics.py`, "
        f"docs/metrics.md.{pooled}\n"
    )
