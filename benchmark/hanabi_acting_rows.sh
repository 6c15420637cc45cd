#!/usr/bin/env bash
# Issue 49's learning check: mappo.py on 2-player Hanabi (our preset) with --acting-rows-only (the waiting player's
# rows left out of the update), 3 seeds, 3M env steps, against the same preset's runs with every row
# (benchmark/results/hanabi_10m_mappo/kept, read up to the same step). Resumable as benchmark/mappo.sh is.
#   bash benchmark/hanabi_acting_rows.sh        # the runs, then benchmark/results/hanabi_acting_rows/compare.{md,json,png}
#   bash benchmark/hanabi_acting_rows.sh keep   # before a session ends: stop the runs (Ctrl-C), then this, then commit kept/
# Variables as benchmark/mappo.sh's (WORKERS, SEEDS, TOTAL_TIMESTEPS, ...).
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
set -euo pipefail
cd "$(dirname "$0")/.."
export ENV_IDS=hanabi SCRIPT=mappo.py OUT=benchmark/results/hanabi_acting_rows EXTRA="--acting-rows-only"
export TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-3000000}
bash benchmark/mappo.sh "$@"
if [ -z "${1:-}" ]; then
  ${PYTHON:-python} benchmark/report/compare_histories.py benchmark/results/hanabi_10m_mappo "$OUT" \
    --labels "all rows" "acting rows only" --out "$OUT/compare"
fi
exit  # before bash reads past the brace
}
