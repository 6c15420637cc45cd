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

progress() {  # checkpoint, env steps -> exit 0: it has done every update of that budget, 3: not yet, other: unreadable
  "$PYTHON" -c "import sys, torch; c = torch.load(sys.argv[1], weights_only=True, map_location='cpu'); a = c['args']
sys.exit(0 if c['iteration'] >= int(sys.argv[2]) // (a['num_envs'] * a['num_steps']) else 3)" "$1" "$2"
}

# Every run saves a checkpoint every 10 updates and at the end: run this script again (same variables) after it was
# stopped, even by a kill, and finished runs are skipped while unfinished ones go on with --resume. Runs are found by
# their run directory runs/<env>__<script name>__<seed>__*, so keep --exp-name out of EXTRA.
mkdir -p "$OUT"
root=$(pwd)
exp=$(basename "$SCRIPT" .py)
for env in $ENV_IDS; do
  for seed in ${SEEDS:-$(seq 1 "$NUM_SEEDS")}; do
    steps=${TOTAL_TIMESTEPS:-$(budget "$env")}
    log="${env//\//-}_${exp}_seed${seed}.log"  # one folder may hold the runs of several scripts
    ckpt=$(ls -t "$OUT"/runs/"${env//\//-}__${exp}__${seed}__"*/"$exp.pt" 2>/dev/null | head -n 1 || true)
    if [ -z "$ckpt" ]; then
      run=(--env-id "$env" --seed "$seed")
    else
      status=0
      progress "$ckpt" "$steps" || status=$?
      if [ "$status" = 0 ]; then
        echo "done already: $ckpt" >&2
        continue
      elif [ "$status" != 3 ]; then
        echo "skipped: cannot read $ckpt (move it away to start this seed again)" >&2
        continue
      fi
      run=(--resume "$(realpath "$ckpt")")
    fi
    # one shell-quoted command per line (paths may hold spaces); $EXTRA is split into words on purpose
    # shellcheck disable=SC2086
    cmd=$(printf '%q ' cd "$OUT")"&& "$(printf '%q ' "$PYTHON" "$root/$SCRIPT" "${run[@]}" --total-timesteps "$steps" \
      --save-model --save-interval 10 $EXTRA)
    echo "$cmd>> $(printf '%q' "$log") 2>&1 || echo $(printf '%q' "failed: $env seed $seed, see $OUT/$log") >&2"
  done
done | xargs -d '\n' -P "$WORKERS" -I{} bash -c {}
"$PYTHON" benchmark/summarize.py "$OUT"
