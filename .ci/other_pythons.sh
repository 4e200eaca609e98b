#!/usr/bin/env bash
# The core package on the oldest and newest Pythons it supports (requires-python >= 3.10), beside
# the 3.11 of .ci/run: the whole test suite on a core install (the tests that need an extra skip),
# then one saved workload of HumanEval duels judged on each interpreter and compared with 3.11's
# verdicts (scripts/compare_verdicts.py: any difference it does not list as a known change in
# Python's own semantics fails).
#
#   bash .ci/other_pythons.sh [VERSION...]     (default: 3.10 3.13; run after .ci/run's install)
#   bash .ci/other_pythons.sh --prepare [VERSION...]    (only build the venvs .venv-pyX.Y)
#
# .ci/run builds the venvs with --prepare in the background while its own tests run; a venv built
# from the same constraints-core.txt and pyproject.toml is reused, any other is built again.
# $CODEA1_CI_WORKLOAD, when set, is a folder that keeps the saved workload and its 3.11 verdicts
# for .ci/other_backends.sh (made once for both). An interpreter is looked up as pythonX.Y on
# PATH, then under pyenv's versions; a version found nowhere is reported and left out. Measured on
# 2 shared cores: about 2 min per version (its tests on every core, pytest-xdist).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
MAIN=.venv/bin/python  # .ci/run's venv: Python 3.11 with every extra
PREPARE=0
if [ "${1:-}" = "--prepare" ]; then
  PREPARE=1
  shift
fi
[ "$PREPARE" = 1 ] || [ -x "$MAIN" ] || { echo "run .ci/run first (it builds .venv)" >&2; exit 2; }
VERSIONS=("$@")
[ "${#VERSIONS[@]}" -gt 0 ] || VERSIONS=(3.10 3.13)
STAMP=$(cat constraints-core.txt pyproject.toml | sha256sum | cut -c1-16)

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

build_venv() {  # $1: version, $2: interpreter; reuses a venv built from the same files
  local venv=".venv-py$1"
  if [ "$(cat "$venv/.codea1-stamp" 2>/dev/null)" = "$STAMP" ]; then
    return 0
  fi
  "$2" -m venv --clear "$venv"
  "$venv/bin/pip" install -q --no-compile -c constraints-core.txt -e . pytest pytest-timeout \
    pytest-xdist pettingzoo coverage scipy
  echo "$STAMP" >"$venv/.codea1-stamp"
}

if [ "$PREPARE" = 1 ]; then
  for version in "${VERSIONS[@]}"; do
    if PY=$(find_python "$version"); then
      echo "-- Python $version ($PY): core install into .venv-py$version"
      build_venv "$version" "$PY"
    fi
  done
  exit 0
fi

. .ci/workload.sh

ran=0
for version in "${VERSIONS[@]}"; do
  if ! PY=$(find_python "$version"); then
    echo "-- Python $version: no interpreter found (PATH, pyenv); left out"
    continue
  fi
  echo "-- Python $version ($PY): core install, the test suite, the same verdicts"
  venv=".venv-py$version"
  build_venv "$version" "$PY"
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -n auto --dist worksteal
  "$venv/bin/python" scripts/compare_verdicts.py judge "$work/workload.json" \
    --out "$work/py$version.json"
  "$venv/bin/python" scripts/compare_verdicts.py compare "$work/local.json" "$work/py$version.json"
  ran=$((ran + 1))
done
echo "-- $ran of ${#VERSIONS[@]} Pythons checked"
