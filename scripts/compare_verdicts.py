"""Do two interpreters, machines or sandbox backends give the same verdicts? Judge one workload.

    python scripts/compare_verdicts.py workload --problems 64 --out work.json   # once, anywhere
    python scripts/compare_verdicts.py judge work.json --out a.json              # on each side
    python scripts/compare_verdicts.py judge work.json --sandbox docker --out b.json
    python scripts/compare_verdicts.py compare a.json b.json                     # exit 1 on news

The workload is ``benchmarks/bench_referee.py``'s: HumanEval problems whose duels finish without a
timeout, 8 codes each (the GT and AST mutants) x 8 scripted suites, saved as texts so that every
side judges the same duels. ``judge`` scores it with a fresh :class:`Referee` (default limits and
rewards, an empty mistake book, batches of 8 problems) on a sandbox backend (``--sandbox``: the
local sandbox of the interpreter that runs it by default; ``docker`` runs the programs on its
image's Python, ``ray`` through a pool of actors), and keeps, per problem: the coder, tester and
GT-pass rewards, which codes ran, and every verdict (its text, valid, passed, status, source,
agreement with the tester). Error messages are left out: they are worded differently from one
Python to the next and no reward reads them.

``compare`` lists every problem whose records differ. A difference listed in :data:`KNOWN` between
two Pythons (the ones that ran the programs) on either side of its version is expected (the
sandboxed program computes another value there, as it would in the authors' harness); any other
difference exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from codea1_env.atomic import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]

KNOWN: dict[str, tuple[tuple[int, int], str]] = {
    "HumanEval/4": (
        (3, 12),
        "sum() of floats is compensated (Neumaier) from Python 3.12 on, so the GT's "
        "mean_absolute_deviation differs in the last bits from what a tester computed on 3.11",
    ),
}
"""Task id -> (the first Python whose semantics differ, why): differences expected across it."""


def _workload(problems: int, out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_referee import make_workload
    from codea1_env.problems.schema import problem_to_dict
    from codea1_env.sandbox.local import LocalSandbox

    with LocalSandbox() as sandbox:
        duels, skipped, _ = make_workload(sandbox, problems)
    rows = [[problem_to_dict(p), codes, suites] for p, codes, suites in duels]
    record = {"python": list(sys.version_info[:3]), "skipped": skipped, "duels": rows}
    write_text_atomic(out, json.dumps(record))
    print(f"{out}: {len(rows)} problems, {sum(len(c) * len(s) for _, c, s in rows)} duels")


def _verdict(v: Any) -> list[Any]:
    return [v.test, v.valid, v.passed, v.status, v.source, v.agrees_with_tester]


def _judge(workload: Path, out: Path, backend: str = "local", batch: int = 8) -> None:
    from codea1_env.problems.schema import problem_from_dict
    from codea1_env.sandbox.factory import make_sandbox
    from codea1_env.scoring.referee import Referee

    data = json.loads(workload.read_text())
    duels = [(problem_from_dict(p), codes, suites) for p, codes, suites in data["duels"]]
    records: list[dict[str, Any]] = []
    with make_sandbox(backend) as sandbox:
        # the Python that runs the programs (a Docker image's may differ from this interpreter)
        ran_on = sandbox.isolation().python.split(", ")[0] or sys.version.split()[0]
        referee = Referee(sandbox=sandbox, owns_sandbox=False)
        for start in range(0, len(duels), batch):
            chunk = duels[start : start + batch]
            for (problem, _, _), j in zip(chunk, referee.judge_many(chunk)):
                records.append(
                    {
                        "task_id": problem.task_id,
                        "coder": [round(x, 9) for x in j.coder_rewards],
                        "tester": [[round(x, 9) for x in row] for row in j.tester_rewards],
                        "gt_pass": [round(x, 9) for x in j.gt_pass_rates],
                        "compiled": list(j.compiled),
                        "suites": [
                            [[_verdict(v) for v in suite.verdicts] for suite in row]
                            for row in j.suites
                        ],
                        "mistake_book": [[_verdict(v) for v in r] for r in j.mistake_book],
                        "gt_tests": [[_verdict(v) for v in r] for r in j.gt_tests],
                    }
                )
    version = [int(part) for part in ran_on.split(".")[:3]]
    record = {"python": version, "sandbox": backend, "records": records}
    write_text_atomic(out, json.dumps(record))
    print(f"{out}: {len(records)} problems judged on the {backend} sandbox, Python {ran_on}")


def differences(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[str]]:
    """Task id -> the record fields that differ between two ``judge`` outputs."""
    left = {r["task_id"]: r for r in a["records"]}
    right = {r["task_id"]: r for r in b["records"]}
    found: dict[str, list[str]] = {}
    for task_id in sorted(left.keys() | right.keys()):
        if task_id not in left or task_id not in right:
            found[task_id] = ["missing on one side"]
            continue
        fields = [k for k in left[task_id] if left[task_id][k] != right[task_id].get(k)]
        if fields:
            found[task_id] = fields
    return found


def expected(task_id: str, python_a: tuple[int, ...], python_b: tuple[int, ...]) -> str | None:
    """Why ``task_id`` may differ between these two Pythons, or None when it must not."""
    if task_id not in KNOWN:
        return None
    boundary, why = KNOWN[task_id]
    low, high = sorted((tuple(python_a[:2]), tuple(python_b[:2])))
    return why if low < boundary <= high else None


def _compare(first: Path, second: Path) -> int:
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    pa, pb = tuple(a["python"]), tuple(b["python"])
    sides = [
        f"Python {'.'.join(map(str, p))} ({r.get('sandbox', 'local')})"
        for p, r in ((pa, a), (pb, b))
    ]
    found = differences(a, b)
    news = 0
    for task_id, fields in found.items():
        why = expected(task_id, pa, pb)
        news += why is None
        print(f"{task_id}: {', '.join(fields)} differ ({'expected: ' + why if why else 'NEW'})")
    same = len(a["records"]) - len(found)
    print(
        f"{sides[0]} vs {sides[1]}: {same} of "
        f"{len(a['records'])} problems identical, {len(found) - news} expected differences, "
        f"{news} unexpected"
    )
    return 1 if news else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    work = commands.add_parser("workload", help="build and save the duels to judge")
    work.add_argument("--problems", type=int, default=64, help="HumanEval problems (<= 164)")
    work.add_argument("--out", type=Path, required=True)
    judge = commands.add_parser("judge", help="judge a saved workload on this interpreter")
    judge.add_argument("workload", type=Path)
    judge.add_argument("--out", type=Path, required=True)
    judge.add_argument(
        "--sandbox", choices=("local", "docker", "ray"), default="local", help="the backend"
    )
    compare = commands.add_parser("compare", help="diff two judge outputs; 1 on a new difference")
    compare.add_argument("first", type=Path)
    compare.add_argument("second", type=Path)
    args = parser.parse_args(argv)
    if args.command == "workload":
        if not 1 <= args.problems <= 164:
            parser.error(f"--problems must be 1-164, got {args.problems}")
        _workload(args.problems, args.out)
    elif args.command == "judge":
        _judge(args.workload, args.out, args.sandbox)
    else:
        return _compare(args.first, args.second)
    return 0


if __name__ == "__main__":
    sys.exit(main())
