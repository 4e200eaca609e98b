#!/usr/bin/env bash
# The same verdicts on every sandbox backend: one saved workload of HumanEval duels (64 problems,
# 8 codes x 8 suites each) judged on the local sandbox, then on the Docker backend (the programs
# run on its image's Python) and the Ray backend (a pool of actors on a local Ray), each compared
# with the local verdicts (scripts/compare_verdicts.py: any difference fails).
#
#   bash .ci/other_backends.sh     (run after .ci/run's install and .ci/docker_setup.sh)
#
# $CODEA1_CI_WORKLOAD: as in .ci/other_pythons.sh (the workload and its local verdicts, when
# made there, are reused). Docker is left out, with the reason, when no engine answers
# (docker_setup.sh then said why, and the Docker tests skip too); Ray must start. Measured on 2 shared cores: about 1 min.
set -euo pipefail
cd "$(dirname "$0")/.."
MAIN=.venv/bin/python  # .ci/run's venv: Python 3.11 with every extra
[ -x "$MAIN" ] || { echo "run .ci/run first (it builds .venv)" >&2; exit 2; }
. .ci/workload.sh

# exit 3: no engine or image (SandboxUnavailable, as the Docker tests skip); any other failure to
# start the backend is a bug and fails CI
probe="
import sys
from codea1_env.sandbox.base import SandboxUnavailable
from codea1_env.sandbox.factory import make_sandbox
try:
    make_sandbox('docker').close()
except SandboxUnavailable as exc:
    print(str(exc).splitlines()[0][:300], file=sys.stderr)
    sys.exit(3)
"
status=0
"$MAIN" -c "$probe" >/dev/null 2>"$work/docker.err" || status=$?
if [ "$status" -eq 0 ]; then
  echo "-- the Docker backend"
  "$MAIN" scripts/compare_verdicts.py judge "$work/workload.json" --sandbox docker \
    --out "$work/docker.json"
  "$MAIN" scripts/compare_verdicts.py compare "$work/local.json" "$work/docker.json"
elif [ "$status" -eq 3 ]; then
  echo "-- the Docker backend cannot start here; left out: $(tail -n 1 "$work/docker.err")"
else
  echo "-- the Docker backend failed to start (status $status):" >&2
  cat "$work/docker.err" >&2
  exit 1
fi

echo "-- the Ray backend"
"$MAIN" scripts/compare_verdicts.py judge "$work/workload.json" --sandbox ray --out "$work/ray.json"
"$MAIN" scripts/compare_verdicts.py compare "$work/local.json" "$work/ray.json"
