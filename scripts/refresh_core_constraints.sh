#!/usr/bin/env bash
# Regenerate constraints-core.txt: what the core install and its test tools resolve today on the
# Pythons other than the one constraints.txt was made on (CI's cross-version step uses it).
#
#   scripts/refresh_core_constraints.sh PYTHON [PYTHON...]    (e.g. python3.10 python3.13)
#
# For each interpreter: a fresh venv in a temporary directory, `pip install -e . pytest
# pytest-timeout pytest-xdist pettingzoo coverage scipy` without constraints (no torch: the extras
# that need it are skipped by the tests), then `pip freeze --exclude-editable` with that
# interpreter's python_version marker on every line. Review the diff, run .ci/other_pythons.sh, commit the file.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$#" -ge 1 ] || { echo "usage: $0 PYTHON [PYTHON...]" >&2; exit 2; }
TOOLS=(pytest pytest-timeout pytest-xdist pettingzoo coverage scipy)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
versions=()
for PY in "$@"; do
  version=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  versions+=("$version")
  "$PY" -m venv "$work/$version"
  echo "resolving with $("$work/$version/bin/python" -V): pip install -e . ${TOOLS[*]}" >&2
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$work/$version/bin/pip" install -q -e . "${TOOLS[@]}"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$work/$version/bin/pip" freeze --exclude-editable \
    | grep -Ev '^(#|-e )' | LC_ALL=C sort -f \
    | sed "s/\$/ ; python_version == \"$version\"/" >"$work/$version.txt"
done
{
  echo "# Versions resolved by: pip install -e . ${TOOLS[*]}"
  echo "# in fresh venvs, Python ${versions[*]}, $(uname -sm), on $(date -u +%Y-%m-%d)."
  echo "# The core package and its test tools only (no torch). Regenerate with"
  echo "# scripts/refresh_core_constraints.sh PYTHON...; used by .ci/other_pythons.sh. Each line"
  echo "# applies on its own Python (marker); Python 3.11 is pinned by constraints.txt."
  for version in "${versions[@]}"; do cat "$work/$version.txt"; done
} >constraints-core.txt.tmp
mv constraints-core.txt.tmp constraints-core.txt
echo "wrote constraints-core.txt ($(grep -vc '^#' constraints-core.txt) pins)" >&2
