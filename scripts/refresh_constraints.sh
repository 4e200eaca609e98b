#!/usr/bin/env bash
# Regenerate constraints.txt: every version that the README's install command resolves today.
#
#   scripts/refresh_constraints.sh [PYTHON]      (default: python3; TORCH=2.13.0 to change torch)
#
# Builds a fresh virtual environment from PYTHON in a temporary directory, runs the install there
# WITHOUT constraints (only torch pinned), and writes `pip freeze --exclude-editable` (the project
# itself left out) to constraints.txt. torch is written without its local build label (2.13.0, not
# 2.13.0+cpu) so that CPU and CUDA builds of that version both satisfy it. Every line carries the
# resolving interpreter's python_version marker: the pins were checked on that Python only, and
# other Pythons ignore them and resolve freely. Review the diff, run the tests, commit the file.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
TORCH=${TORCH:-2.13.0}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m venv "$work/venv"
VPY="$work/venv/bin/python"
version=$("$VPY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
platform=$("$VPY" -c 'import platform; print(platform.system(), platform.machine())')

echo "resolving with $("$VPY" -V) on $platform: pip install torch==$TORCH -e .[train,dev]" >&2
PIP_DISABLE_PIP_VERSION_CHECK=1 "$VPY" -m pip install -q "torch==$TORCH" -e ".[train,dev]"

{
  echo "# Versions resolved by: pip install \"torch==$TORCH\" -e \".[train,dev]\""
  echo "# in a fresh venv, Python $version, $platform, on $(date -u +%Y-%m-%d)."
  echo "# Regenerate with scripts/refresh_constraints.sh (see README). Used by the README's install"
  echo "# command and .ci/run: pip install -c constraints.txt \"torch==$TORCH\" -e \".[train,dev]\"."
  echo "# Lines apply on Python $version only (marker); other Pythons resolve freely."
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VPY" -m pip freeze --exclude-editable \
    | grep -Ev '^(#|-e )' \
    | sed -E 's/^(torch==[^+]+)\+.*$/\1/' \
    | LC_ALL=C sort -f \
    | sed "s/\$/ ; python_version == \"$version\"/"
} >constraints.txt.tmp
mv constraints.txt.tmp constraints.txt
echo "wrote constraints.txt ($(grep -vc '^#' constraints.txt) pins)" >&2
