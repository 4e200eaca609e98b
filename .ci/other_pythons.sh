#!/usr/bin/env bash
# The core package on the oldest and newest Pythons it supports (requires-python >= 3.10), beside
# the 3.11 of .ci/run: the whole test suite on a core install (the tests that need an extra skip),
# then one saved workload of HumanEval duels judged on each interpreter and compared with 3.11's
# verdicts (scripts/compare_verdicts.py: any difference it does not list as a known change in
# Python's own semantics fails).
#
#   bash .ci/other_pythons.sh [VERSION...]     (default: 3.10 3.13; run after .ci/run's install)
#
# An interpreter is looked up as pythonX.Y on PATH, then under pyenv's versions; a version found
# nowhere is reported and left out. Measured on 2 shared cores: about 2 min per version.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
MAIN=.venv/bin/python  # .ci/run's venv: Python 3.11 with every extra
[ -x "$MAIN" ] || { echo "run .ci/run first (it builds .venv)" >&2; exit 2; }
VERSIONS=("$@")
[ "${#VERSIONS[@]}" -gt 0 ] || VERSIONS=(3.10 3.13)

find_python() {  # the first candidate that runs and is that version (a pyenv shim may not be)
  local candidate
  for candidate in $(command -v "python$1" 2>/dev/null) \
    $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1" 2>/dev/null | sort -rV); do
    if [ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" \
      = "$1" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "-- the workload, and its verdicts on $("$MAIN" -V)"
"$MAIN" scripts/compare_verdicts.py workload --problems 64 --out "$work/workload.json"
"$MAIN" scripts/compare_verdicts.py judge "$work/workload.json" --out "$work/main.json"

ran=0
for version in "${VERSIONS[@]}"; do
  if ! PY=$(find_python "$version"); then
    echo "-- Python $version: no interpreter found (PATH, pyenv); left out"
    continue
  fi
  echo "-- Python $version ($PY): core install, the test suite, the same verdicts"
  venv=".venv-py$version"
  "$PY" -m venv --clear "$venv"
  "$venv/bin/pip" install -q -c constraints-core.txt -e . pytest pytest-timeout pettingzoo \
    coverage scipy
  "$venv/bin/python" -m pytest -q -p no:cacheprovider
  "$venv/bin/python" scripts/compare_verdicts.py judge "$work/workload.json" \
    --out "$work/py$version.json"
  "$venv/bin/python" scripts/compare_verdicts.py compare "$work/main.json" "$work/py$version.json"
  ran=$((ran + 1))
done
echo "-- $ran of ${#VERSIONS[@]} Pythons checked"
