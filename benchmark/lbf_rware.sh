#!/usr/bin/env bash
# Level-Based Foraging and the Multi-Robot Warehouse by their Gymnasium ids (issue 119), at the budgets and with the
# evaluation of EPyMARL's benchmark (Papoudakis et al. 2021): 20M env steps on LBF, 40M on RWARE, counted over all
# parallel envs; evaluations of 100 episodes with sampled actions (EPyMARL's MAPPO samples), here after as many greedy
# ones, every 50,000 env steps as EPyMARL's on LBF, every 500,000 on RWARE (at 50,000 its 500-step episodes would
# make the evaluations more than twice the training's env steps, greedy ones included). mappo.py on every task, ippo.py on the LBF
# ones, 3 seeds; resumable and kept as benchmark/mappo.sh's runs are (all in one queue, WORKERS at once).
#   bash benchmark/lbf_rware.sh          # start, or go on from OUT/runs or the committed OUT/kept
#   bash benchmark/lbf_rware.sh keep     # before a session ends: stop the runs (Ctrl-C), then this, then commit kept/
#   bash benchmark/lbf_rware.sh plan     # the command line of each run still to do
#   bash benchmark/lbf_rware.sh epymarl  # EPyMARL's MAPPO, run here (below); epymarl-keep, epymarl-plan likewise
# Variables: SCRIPTS (mappo ippo), LBF_TASKS, RWARE_TASKS (set empty: none), SEEDS, WORKERS, TOTAL_TIMESTEPS, EXTRA.
# The setting: the MAPPO paper's defaults (Args), with EPyMARL's 10 parallel envs and 500 steps per env per rollout,
# so that an evaluation every 10 updates falls every 50,000 env steps; LBF's time limit of 50 steps and RWARE's of 500
# (EPyMARL's gymma.yaml; the scripts' GENERIC_TIME_LIMITS) end its episodes as truncations.
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
set -euo pipefail
cd "$(dirname "$0")/.."
LBF_TASKS=${LBF_TASKS-"Foraging-8x8-2p-2f-coop-v3 Foraging-2s-8x8-2p-2f-coop-v3 Foraging-10x10-3p-3f-v3"}
RWARE_TASKS=${RWARE_TASKS-"rware-tiny-4ag-v2"}
WORKERS=${WORKERS:-2} PYTHON=${PYTHON:-python}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(($(nproc) / WORKERS > 0 ? $(nproc) / WORKERS : 1))}  # as mappo.sh's
setting="--num-envs 10 --num-steps 500 --eval-episodes 100 --eval-sampled"
each() {  # mode -> mappo.sh in that mode for every script and task, each task with its budget and evaluation interval
  for script in ${SCRIPTS:-mappo ippo}; do
    for task in $LBF_TASKS; do
      ENV_IDS=gym/lbforaging:$task BUDGETS="gym/lbforaging:$task=${TOTAL_TIMESTEPS:-20000000}" SCRIPT=$script.py \
        EXTRA="$setting --eval-interval 10 ${EXTRA:-}" OUT=benchmark/results/lbf_rware_$script bash benchmark/mappo.sh "$1"
    done
    [ "$script" = mappo ] || continue  # IPPO on LBF only
    for task in $RWARE_TASKS; do
      ENV_IDS=gym/rware:$task BUDGETS="gym/rware:$task=${TOTAL_TIMESTEPS:-40000000}" SCRIPT=$script.py \
        EXTRA="$setting --eval-interval 100 ${EXTRA:-}" OUT=benchmark/results/lbf_rware_$script bash benchmark/mappo.sh "$1"
    done
  done
}
# EPyMARL's own MAPPO (benchmark/epymarl/epymarl_baseline.py: its install lines; EPYMARL_PYTHON, EPYMARL_DIR) on the
# tasks whose rules are unchanged since its paper, the anchor where its tables cannot be read here: a run's folder is
# OUT/runs/<task>_seed<N> (its checkpoints), OUT/<task>_seed<N>.json.gz its curve once finished; `epymarl-keep` copies
# each unfinished run's newest checkpoint and its sittings to OUT/kept/<task>_seed<N> (commit it), from which a run
# started on another machine goes on. EPYMARL_TASKS: key:time limit:t_max (EPyMARL's t_max: 50,000 past the budget).
epymarl() {  # mode: plan (one command per run still to do) or keep
  local out=benchmark/results/lbf_rware_epymarl python=${EPYMARL_PYTHON:-/work/epymarl-venv/bin/python}
  local spec key limit t_max name run
  mkdir -p "$out/kept"
  for spec in ${EPYMARL_TASKS:-lbforaging:Foraging-8x8-2p-2f-coop-v3:50:20050000 \
    lbforaging:Foraging-2s-8x8-2p-2f-coop-v3:50:20050000 rware:rware-tiny-4ag-v2:500:40050000}; do
    key=${spec%:*:*} limit=${spec#"$key":} limit=${limit%%:*} t_max=${spec##*:}
    for seed in ${SEEDS:-1 2 3}; do
      name=${key#*:}_seed$seed run=$out/runs/$name
      [ ! -e "$out/$name.json.gz" ] || { [ "$1" = keep ] || echo "done already: $out/$name.json.gz" >&2; continue; }
      if [ "$1" = keep ]; then  # the newest checkpoint and the sittings: what a run needs to go on elsewhere
        newest=$(ls -d "$run"/results/models/*/* 2>/dev/null | awk -F/ '{print $NF "\t" $0}' | sort -n | tail -n 1 | cut -f2)
        [ -n "$newest" ] || continue
        rm -rf "$out/kept/$name" && mkdir -p "$out/kept/$name/results/models/kept"
        cp -r "$newest" "$out/kept/$name/results/models/kept/" && cp -r "$run/sittings" "$out/kept/$name/"
        continue
      fi
      [ -d "$run" ] || [ ! -d "$out/kept/$name" ] || { mkdir -p "$out/runs" && cp -r "$out/kept/$name" "$run"; }
      printf '%q ' "$python" benchmark/epymarl/epymarl_baseline.py --epymarl-dir "${EPYMARL_DIR:-/work/epymarl-src}" \
        --key "$key" --time-limit "$limit" --t-max "$t_max" --seed "$seed" --run-dir "$run" --out "$out/$name.json"
      printf '>> %q 2>&1 && gzip -9nf %q && rm -rf %q\n' "$out/$name.log" "$out/$name.json" "$out/kept/$name"
    done
  done
}
case ${1:-} in
  keep | plan) each "$1" && exit 0 ;;
  epymarl-keep) epymarl keep; ls -l benchmark/results/lbf_rware_epymarl/kept; exit 0 ;;
  epymarl-plan) epymarl plan; exit 0 ;;
  epymarl) epymarl plan | xargs -d '\n' -P "$WORKERS" -I{} bash -c {}; exit $? ;;
  "") ;;
  *) echo "usage: bash benchmark/lbf_rware.sh [keep|plan|epymarl|epymarl-keep|epymarl-plan]" >&2 && exit 2 ;;
esac
each plan | xargs -d '\n' -P "$WORKERS" -I{} bash -c {}  # one queue: every script's and task's runs, WORKERS at once
for script in ${SCRIPTS:-mappo ippo}; do "$PYTHON" benchmark/report/summarize.py "benchmark/results/lbf_rware_$script"; done
exit  # before bash reads past the brace
}
