#!/usr/bin/env bash
# Headline runs of mappo.py over several seeds, a few at a time; ends in a table, a plot and a JSON summary.
#   bash benchmark/mappo.sh                                    # full budgets below, 3 seeds, 1 run at a time
#   TOTAL_TIMESTEPS=6400 NUM_SEEDS=2 bash benchmark/mappo.sh   # a smoke run
# Variables: ENV_IDS, NUM_SEEDS (3; the paper uses 6+), SEEDS (the seeds themselves; default 1..NUM_SEEDS),
# WORKERS (runs at once; OMP_NUM_THREADS defaults to cores / WORKERS), TOTAL_TIMESTEPS (overrides the per-env
# budget), BUDGETS (per-env budgets that override the defaults below, e.g. "5m_vs_6m=2000000 2s3z=2000000"), OUT
# (results folder), PYTHON (python on PATH, which must be the repo's venv's: checked before anything runs), EXTRA
# (more flags, e.g. "--cuda"), SCRIPT (mappo.py; ippo.sh sets it), MALLOC_TOP_PAD_ (each run's, 4 GiB: see below), KEEP
# (default OUT/kept: see below).
# `bash benchmark/mappo.sh plan` prints the command line of each run still to do and runs nothing (launchers that pool
# the runs of several folders into one queue, like benchmark/smax_hard_10m.sh, use it).
# Runs longer than a session: `bash benchmark/mappo.sh keep` (same variables) copies into KEEP the last checkpoint of
# each unfinished run and the eval summary (gzipped) of each finished one, whose checkpoint it removes from KEEP (and,
# when that summary is new, writes OUT's summary as a queue's end does: a PYTHON without matplotlib leaves that run in
# runs/ and exits 2); commit KEEP. This script, run again on another machine from that commit, resumes the unfinished
# runs from KEEP and skips the finished ones, and summarize.py reads the finished runs' summaries from KEEP.
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_IDS=${ENV_IDS:-"3m 2s3z 5m_vs_6m simple_spread_v3"}
NUM_SEEDS=${NUM_SEEDS:-3}
WORKERS=${WORKERS:-1}
SCRIPT=${SCRIPT:-mappo.py}
OUT=${OUT:-benchmark/results/${SCRIPT%.py}}
PYTHON=${PYTHON:-python}
. benchmark/require_python.sh  # every mode reads the checkpoints with torch; a run's summary draws with matplotlib
if [ "${1:-}" = keep ] || [ "${1:-}" = plan ]; then modules=torch; else modules="torch, matplotlib"; fi
EXTRA=${EXTRA:-}
KEEP=${KEEP:-$OUT/kept}
# torch's threads shared out. On 2 cores (3s5z), two runs of 2 threads each did 0.29x the updates per second of one
# run alone, two runs of 1 thread 1.27x.
if [ -z "${OMP_NUM_THREADS:-}" ] && [ "$WORKERS" -gt 1 ]; then
  export OMP_NUM_THREADS=$(( $(nproc) / WORKERS > 0 ? $(nproc) / WORKERS : 1 ))
fi
# Each run's glibc keeps up to 4 GiB of freed heap for reuse, where by default the large tensors of each update would
# fault in fresh, kernel-zeroed pages: same numbers, a faster update on the big maps (benchmark/measure/allocator.py)
TOP_PAD=${MALLOC_TOP_PAD_:-4294967296}
exp=$(basename "$SCRIPT" .py)

budget() {  # env steps per run: BUDGETS if it names the env, else the budgets of the README's family tables
  for pair in ${BUDGETS:-}; do
    if [ "${pair%%=*}" = "$1" ]; then echo "${pair#*=}"; return; fi
  done
  case $1 in
    3m | 5m_vs_6m) echo 1500000 ;;
    2s3z | simple_spread_v3) echo 1000000 ;;
    *) echo 2000000 ;;
  esac
}

declare -A checkpoint  # path -> "env steps done, updates done, env steps per update" of each checkpoint of SCRIPT
read_checkpoints() {  # in OUT/runs and KEEP, all by one python: each start of one imports torch, most of a plan's time
  local table path info
  table=$("$PYTHON" -c "import sys, $modules
for path in sys.argv[1:]:
    try:
        c = torch.load(path, weights_only=True, map_location='cpu')
        print(path, c['global_step'], c['iteration'], c['args']['num_envs'] * c['args']['num_steps'], sep='\t')
    except Exception as e:  # unreadable: left out of the table
        print(f'{path}: {e}', file=sys.stderr)" "$OUT"/runs/*__"$exp"__*/"$exp.pt" "$KEEP"/*__"$exp"__*.pt) ||
    require_python "$modules" failed  # this was the check of PYTHON: exits 2, saying what to do
  while IFS=$'\t' read -r path info; do [ -z "$path" ] || checkpoint[$path]=$info; done <<<"$table"
}

progress() {  # checkpoint, env steps -> prints its env steps done; exit 0: it has done every update of that budget,
  # 3: not yet, other: unreadable
  local at updates per_update
  [ -n "${checkpoint[$1]:-}" ] || return 1
  read -r at updates per_update <<<"${checkpoint[$1]}"
  echo "$at"
  [ "$updates" -ge $(($2 / per_update)) ] || return 3
}

summary_steps() {  # a kept eval summary (.json.gz) -> the env steps its run had done
  "$PYTHON" -c "import gzip, json, sys; print(json.load(gzip.open(sys.argv[1], 'rt'))['global_step'])" "$1"
}

# Every run saves a checkpoint every 10 updates and at the end: run this script again (same variables) after it was
# stopped, even by a kill, and finished runs are skipped while unfinished ones go on with --resume, from OUT/runs or
# from KEEP, whichever is further on (KEEP is ahead where it came from another machine). Runs are found by their run
# name <env>__<script name>__<seed>__<start time>, so keep --exp-name out of EXTRA.
plan() {  # one command line per run still to do; with "keep", no runs: what KEEP needs instead
  for env in $ENV_IDS; do
    for seed in ${SEEDS:-$(seq 1 "$NUM_SEEDS")}; do
      steps=${TOTAL_TIMESTEPS:-$(budget "$env")}
      safe=${env//\//-} && safe=${safe//:/-}  # the run folder's name: / and : of an env id become -, as the scripts do
      log="${safe}_${exp}_seed${seed}.log"  # one folder may hold the runs of several scripts
      name="${safe}__${exp}__${seed}__"
      ckpt=$(ls -t "$OUT"/runs/"$name"*/"$exp.pt" 2>/dev/null | head -n 1 || true)
      kept=$(ls -t "$KEEP/$name"*.pt 2>/dev/null | head -n 1 || true)
      summary=$(ls -t "$KEEP/$name"*.json.gz 2>/dev/null | head -n 1 || true)
      status=0 kept_status=0 at=-1 kept_at=-1
      [ -z "$ckpt" ] || at=$(progress "$ckpt" "$steps") || status=$?
      [ -z "$kept" ] || { [ -n "$ckpt" ] && [ "$status" = 0 ]; } || kept_at=$(progress "$kept" "$steps") || kept_status=$?
      [[ $at =~ ^[0-9]+$ ]] || at=-1  # (an unreadable checkpoint prints nothing)
      [[ $kept_at =~ ^[0-9]+$ ]] || kept_at=-1
      if [ -n "$ckpt" ] && [ "$status" = 0 ]; then  # finished here
        if [ "${1:-}" = keep ]; then  # its eval summary is all that is left to keep
          kept_summary=$KEEP/$(basename "$(dirname "$ckpt")").json.gz
          gzip -9nc "$(dirname "$ckpt")/eval_summary.json" >"$kept_summary.tmp"
          if cmp -s "$kept_summary.tmp" "$kept_summary"; then rm "$kept_summary.tmp"
          elif "$PYTHON" -c "import matplotlib" 2>/dev/null; then
            mv "$kept_summary.tmp" "$kept_summary" && newly_finished=1  # summary.json must count it
          else  # not kept until PYTHON can draw summary.json, so that the next keep finds it new again
            rm "$kept_summary.tmp" && undrawn=1 && continue
          fi
          rm -f "$KEEP/$name"*.pt
        else
          echo "done already: $ckpt" >&2
        fi
        continue
      elif [ -n "$summary" ] && { [ "$status" != 3 ] || [ "$at" -lt "$(summary_steps "$summary")" ]; }; then
        [ "${1:-}" = keep ] || echo "done already: $summary" >&2  # runs/ holds an older part of it, or nothing
        continue  # (the finished run itself, given a larger budget, goes on from runs/ below)
      elif [ -n "$ckpt" ] && [ "$status" = 3 ] && [ "$at" -ge "$kept_at" ]; then
        [ "${1:-}" != keep ] || cp "$ckpt" "$KEEP/$(basename "$(dirname "$ckpt")").pt"  # for git
      elif [ -n "$kept" ]; then  # KEEP is ahead of runs/, or runs/ has none
        [ "${1:-}" = keep ] || [ -z "$ckpt" ] || [ "$status" != 3 ] ||
          echo "$kept ($kept_at env steps) is ahead of $ckpt ($at): going on from it" >&2
        ckpt=$kept status=$kept_status
      fi
      [ "${1:-}" != keep ] || continue
      if [ -z "$ckpt" ]; then
        run=(--env-id "$env" --seed "$seed")
      elif [ "$status" = 0 ]; then
        echo "done already: $ckpt" >&2
        continue
      elif [ "$status" != 3 ]; then
        echo "skipped: cannot read $ckpt (move it away to start this seed again)" >&2
        continue
      else
        run=(--resume "$(realpath "$ckpt")")
      fi
      # one shell-quoted command per line (paths may hold spaces); $EXTRA is split into words on purpose
      # shellcheck disable=SC2086
      cmd=$(printf '%q ' cd "$OUT")"&& MALLOC_TOP_PAD_=$(printf '%q' "$TOP_PAD") "$(printf '%q ' "$PYTHON" "$root/$SCRIPT" "${run[@]}" --total-timesteps "$steps" \
        --save-model --save-interval 10 $EXTRA)
      echo "$cmd>> $(printf '%q' "$log") 2>&1 || echo $(printf '%q' "failed: $env seed $seed, see $OUT/$log") >&2"
    done
  done
}

shopt -s nullglob  # (for read_checkpoints: no checkpoint yet, no path)
read_checkpoints  # and PYTHON checked, before anything runs
shopt -u nullglob
mkdir -p "$OUT" "$KEEP"
root=$(pwd)
if [ "${1:-}" = keep ]; then
  newly_finished=0 undrawn=0
  plan keep
  ls -l "$KEEP"
  [ "$undrawn" = 0 ] || require_python "torch, matplotlib"  # exits 2: a finished run's summary left in runs/
  # a run finished since the last keep: OUT's summary.json and curves.png with it, as a queue's end writes them (runs
  # started from `plan` lines, as the long ones are, have no such end)
  [ "$newly_finished" = 0 ] || "$PYTHON" benchmark/report/summarize.py "$OUT"
  exit 0
elif [ "${1:-}" = plan ]; then
  plan
  exit 0
fi
plan | xargs -d '\n' -P "$WORKERS" -I{} bash -c {}
"$PYTHON" benchmark/report/summarize.py "$OUT"
exit  # before bash reads past the brace
}
