#!/usr/bin/env bash
# Headline runs of mappo.py over several seeds, a few at a time; ends in a table, a plot and a JSON summary.
#   bash benchmark/mappo.sh                                    # full budgets below, 3 seeds, 1 run at a time
#   TOTAL_TIMESTEPS=6400 NUM_SEEDS=2 bash benchmark/mappo.sh   # a smoke run
# Variables: ENV_IDS, NUM_SEEDS (3; the paper uses 6+), SEEDS (the seeds themselves; default 1..NUM_SEEDS),
# WORKERS (runs at once), TOTAL_TIMESTEPS (overrides the per-env budget), BUDGETS (per-env budgets that override the
# defaults below, e.g. "5m_vs_6m=2000000 2s3z=2000000"), OUT (results folder), PYTHON, EXTRA (more flags, e.g.
# "--cuda"), SCRIPT (mappo.py; ippo.sh sets it).
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

finished() {  # checkpoint, env steps -> exit 0 when that checkpoint has done every update of the budget
  "$PYTHON" -c "import sys, torch; c = torch.load(sys.argv[1], weights_only=True); a = c['args']
sys.exit(c['iteration'] < int(sys.argv[2]) // (a['num_envs'] * a['num_steps']))" "$1" "$2"
}

# Every run saves a checkpoint every 10 updates and at the end: run this script again (same variables) after it was
# stopped, even by a kill, and finished runs are skipped while unfinished ones go on with --resume.
mkdir -p "$OUT"
root=$(pwd)
exp=$(basename "$SCRIPT" .py)
for env in $ENV_IDS; do
  for seed in ${SEEDS:-$(seq 1 "$NUM_SEEDS")}; do
    steps=${TOTAL_TIMESTEPS:-$(budget "$env")}
    log="${env//\//-}_seed${seed}.log"
    ckpt=$(ls -t "$OUT"/runs/"${env//\//-}__${exp}__${seed}__"*/"$exp.pt" 2>/dev/null | head -n 1 || true)
    if [ -z "$ckpt" ]; then
      run="--env-id $env --seed $seed"
    elif finished "$ckpt" "$steps"; then
      echo "done already: $ckpt" >&2
      continue
    else
      run="--resume '$(realpath "$ckpt")'"
    fi
    echo "cd '$OUT' && '$PYTHON' '$root/$SCRIPT' $run --total-timesteps $steps --save-model --save-interval 10 $EXTRA >> $log 2>&1"
  done
done | xargs -P "$WORKERS" -I{} bash -c "{} || echo 'failed: {}' >&2"
"$PYTHON" benchmark/summarize.py "$OUT"
