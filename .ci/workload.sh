# Sourced by .ci/other_pythons.sh and .ci/other_backends.sh (after MAIN is set): the saved workload
# of HumanEval duels (64 problems, 8 codes x 8 suites) and its verdicts on the main venv's local
# sandbox, as $work/workload.json and $work/local.json. $work is $CODEA1_CI_WORKLOAD when set
# (.ci/run sets it, so both scripts share one workload), else a temporary folder removed on exit.
if [ -n "${CODEA1_CI_WORKLOAD:-}" ]; then
  work=$CODEA1_CI_WORKLOAD
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
if [ -s "$work/workload.json" ] && [ -s "$work/local.json" ]; then
  echo "-- the workload and its verdicts on $("$MAIN" -V), local sandbox: made before, in $work"
else
  echo "-- the workload, and its verdicts on $("$MAIN" -V), local sandbox"
  "$MAIN" scripts/compare_verdicts.py workload --problems 64 --out "$work/workload.json"
  "$MAIN" scripts/compare_verdicts.py judge "$work/workload.json" --out "$work/local.json"
fi
