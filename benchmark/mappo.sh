#!/usr/bin/env bash
# Headline runs of mappo.py over several seeds, a few at a time; ends in a table, a plot and a JSON summary.
#   bash benchmark/mappo.sh                                    # full budgets below, 3 seeds, 1 run at a time
#   TOTAL_TIMESTEPS=6400 NUM_SEEDS=2 bash benchmark/mappo.sh   # a smoke run
# Variables: ENV_IDS, NUM_SEEDS (3; the paper uses 6+), WORKERS (runs at once), TOTAL_TIMESTEPS (overrides the
# per-env budget), BUDGETS (per-env budgets that override the defaults below, e.g. "5m_vs_6m=2000000 2s3z=2000000"),
# OUT (results folder), PYTHON, EXTRA (more flags, e.g. "--cuda"), SCRIPT (mappo.py; ippo.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_IDS=${ENV_IDS:-"3m 2s3z 5m_vs_6m simple_spread_v3"}
NUM_SEEDS=${NUM_SEEDS:-3}
WORKERS=${WORKERS:-1}
SCRIPT=${SCRIPT:-mappo.py}
OUT=${OUT:-benchmark/results/${SCRIPT%.py}}
PYTHON=${PYTHON:-python}
EXTRA=${EXTRA:-}

budget() {  # env steps per run: BUDGETS if it names the env, else the acceptance budgets of issue 2 and the paper's
  # 10M cap on the hard map
  for pair in ${BUDGETS:-}; do
    if [ "${pair%%=*}" = "$1" ]; then echo "${pair#*=}"; return; fi
  done
  case $1 in
    3m) echo 1500000 ;;
    2s3z) echo 3000000 ;;
    5m_vs_6m) echo 10000000 ;;
    simple_spread_v3) echo 1000000 ;;
    *) echo 2000000 ;;
  esac
}

mkdir -p "$OUT"
root=$(pwd)
for env in $ENV_IDS; do
  for seed in $(seq 1 "$NUM_SEEDS"); do
    steps=${TOTAL_TIMESTEPS:-$(budget "$env")}
    log="${env//\//-}_seed${seed}.log"
    echo "cd '$OUT' && '$PYTHON' '$root/$SCRIPT' --env-id $env --seed $seed --total-timesteps $steps $EXTRA > $log 2>&1"
  done
done | xargs -P "$WORKERS" -I{} bash -c "{} || echo 'failed: {}' >&2"
"$PYTHON" benchmark/summarize.py "$OUT"
