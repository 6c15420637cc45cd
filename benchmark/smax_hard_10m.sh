#!/usr/bin/env bash
# mappo_rnn.py on the hard SMAX maps at 10M env steps, 3 seeds, in two settings, each in its own results folder:
#   paper:  the MAPPO paper's Table 12 settings (mappo_rnn.py's SMAC_MAP_PRESETS: 10 epochs on 5m_vs_6m and
#           10m_vs_11m, 5 on 3s5z_vs_3s6z and 27m_vs_30m; 8 envs x 400 steps) -> benchmark/results/smax_hard_10m_paper;
#           27m_vs_30m only when MAPS names it (keep keeps its runs in any case): ~20 h a run here, two at once with
#           evaluation, so it goes on across many sessions
#   table2: Async MAPPO's Table 2 batch and sample reuse on its maps (5m_vs_6m, 3s5z_vs_3s6z: 7.5x the batch, i.e.
#           60 envs x 400 steps, and 10 epochs), trained serially: mappo_async_seed.py --recurrent at
#           --max-policy-lag 0 logs the same numbers as mappo_rnn.py with the same flags (tests/test_golden.py), so
#           this is its algorithm without the policy lag -> benchmark/results/smax_hard_10m_table2
#   ent0:   a named ablation (issue 50, item 4), run only when SETTINGS names it: the paper setting on the three maps
#           without the entropy bonus (--ent-coef 0, as JaxMARL's mappo_rnn_smax and Mava's SMAX runs have it; the MAPPO
#           paper: 0.01): our sampled evaluation sits below our greedy one on these maps (a policy kept more random),
#           and Mava's numbers are sampled evaluations. On 3s5z_vs_3s6z every side evaluates at 100 % greedy, and the
#           paper setting is short of JaxMARL's run only on the sampled metrics (sampled eval, training episodes).
#           27m_vs_30m where MAPS names it: there the paper setting's greedy evaluation sits below its sampled one and
#           below JaxMARL's greedy one -> benchmark/results/smax_hard_10m_ent0
#   clip005: a named ablation, run only when SETTINGS names it: the paper setting on 5m_vs_6m with the PPO clip at 0.05
#           (--clip-coef 0.05, ratio and value clip), as the MAPPO authors' own per-map script for that map runs it
#           (marlbenchmark/on-policy, train_smac_scripts/train_smac_5m_vs_6m.sh: --ppo_epoch 10 --clip_param 0.05; the
#           paper's Table 3: 0.2; its scripts for 10m_vs_11m and 3s5z_vs_3s6z keep 0.2) -> .../smax_hard_10m_clip005
#   epochs5: a named ablation, run only when SETTINGS names it, on 10m_vs_11m: the paper setting with 5 epochs
#           (--update-epochs 5), Table 12's value for the other hard maps (3s5z_vs_3s6z, 27m_vs_30m; 10 on 10m_vs_11m):
#           mavacfg, which ends far above the paper setting there, reuses each sample for 2 epochs of 2
#           mini-batches, jaxcfg, which ends below it, for 4 of 4; this asks whether less sample reuse alone lifts the
#           paper setting
#           -> .../smax_hard_10m_epochs5
#   jaxcfg: a named ablation, run only when SETTINGS names it, on 10m_vs_11m (the map where we stay below JaxMARL's GPU
#           run and Mava's number): the paper setting with the optimisation values of JaxMARL's mappo_rnn_smax config
#           (mappo_homogenous_rnn_smax.yaml, see benchmark/jaxmarl/jaxmarl_baseline.py), whose GPU run here is above
#           every run of ours on that map: 128 envs x 128 steps (16,384 env steps per update), 128-wide layers, learning rate
#           2e-3 annealed to 0, 4 epochs x 4 mini-batches, no entropy bonus, value loss weight 0.5, gradient norm 0.25.
#           The rest stays ours (PopArt, Huber loss, value clip, 10-step BPTT chunks, death masking). It evaluates
#           every update as the others do, i.e. every 16,384 env steps instead of 3,200. 27m_vs_30m too where MAPS
#           names it (JaxMARL's own run learns that map within 1-2M env steps, the paper setting's on 1 seed of 3)
#           -> .../smax_hard_10m_jaxcfg
#   mavacfg: a named ablation, run only when SETTINGS names it: the paper setting with the values of Mava's SMAX sweep
#           (rec_mappo.yaml at 82583ba, see benchmark/mava/mava_baseline.py; one config for every map; mappo_rnn.py's
#           MAVA_SWEEP), whose own code run here climbs past our paper setting's runs on 10m_vs_11m: 128 envs x 128
#           steps, 128-wide layers, learning rate 4e-3 constant, 2 epochs x 2 mini-batches, no entropy bonus, value loss
#           weight 0.5, gradient norm 0.5. The rest stays ours (PopArt, Huber loss, value clip, 10-step BPTT chunks,
#           death masking). First run on 10m_vs_11m (the runs of seeds 1-3 there name --setting tuned, which then
#           meant these values on every map). 27m_vs_30m too where MAPS names it: the other marines-only hard map, where
#           the paper setting and ent0 climb on 1 seed of 3 -> .../smax_hard_10m_mavacfg
#   tuned:  the named setting (mappo_rnn.py --setting tuned; README.md's hard-map table), run only when SETTINGS names
#           it: per hard map the values whose runs ended at or above every anchor, Table 12's elsewhere. On the hard maps it has
#           the flags of another setting (tests/test_mappo_rnn.py): mavacfg on 10m_vs_11m, ent0 on 3s5z_vs_3s6z and
#           27m_vs_30m, paper on 5m_vs_6m, whose runs are linked into its kept/ (tuned_links), not run twice. Its own runs:
#           the three 10M maps of smax_10m.sh (3s5z, 3s_vs_5z, 6h_vs_8z; Table 12's values) -> .../smax_hard_10m_tuned
#   mavalike: a named ablation, run only when SETTINGS names it, on 10m_vs_11m: tuned, plus each choice of Mava's
#           rec_mappo.py that a flag of ours can make: its critic sees SMAX's world state and the agent's one-hot id,
#           without death masking (--state-type ep --no-death-masking: rec_mappo's JaxMarlWrapper passes the env's
#           world_state, and its AgentIDWrapper(env, True) appends the ids to it); dead agents' steps stay in the
#           policy loss (--no-policy-active-masks); BPTT over the whole 128-step rollout (--data-chunk-length 128); no
#           PopArt, squared-error value loss (--no-use-popart --no-use-huber); no LayerNorm on the inputs, one layer
#           before the GRU (--no-use-feature-norm --num-layers 1). What stays ours: LayerNorm after each layer and
#           after the GRU, no layer after the GRU, bootstrapping at the time limit, advantages normalised over the live
#           agent-steps of the whole batch (Mava's: every step of each mini-batch), mini-batches of agents (Mava's: of
#           envs), the hidden states replayed as the rollout ran them (Mava's replay starts from the state after the
#           first step and resets one step early) -> .../smax_hard_10m_mavalike
#   mavalikecl: a named ablation, run only when SETTINGS names it, on 10m_vs_11m: mavalike with the critic on the
#           concatenated observations of all agents (--state-type cl), the global state of Mava's GlobalStateWrapper,
#           which its feed-forward systems add and rec_mappo.py does not: mavalike as first run here, on that misreading
#           -> .../smax_hard_10m_mavalikecl
# Every evaluation plays 32 greedy episodes, then 32 with sampled actions (--eval-sampled: Mava's metric).
# All runs share one queue, seed by seed (every map and setting of seed 1 first), two at a time with one torch thread
# each. Longer than a session: see KEEP in benchmark/mappo.sh.
#   bash benchmark/smax_hard_10m.sh        # start, or go on from OUT/runs or from the committed OUT/kept
#   bash benchmark/smax_hard_10m.sh keep   # before a session ends: stop the runs (Ctrl-C), then this, then commit kept/
#   bash benchmark/smax_hard_10m.sh plan   # the runs still to do, one command line each; runs nothing
# A finished run changes the scores a user of the paper and tuned settings can expect: the queue ends by rewriting
# benchmark/results/expected_scores.json (benchmark/report/expected.py, which also checks a run against them); after a
# keep that finished a run, run it (tests/test_benchmark.py fails on a stale file).
#   bash benchmark/smax_hard_10m.sh jaxmarl  # JaxMARL's recurrent MAPPO (mappo_rnn_smax, its own config: TOTAL_TIMESTEPS
#                                            # 1e7 is its 10M budget and schedule), same maps and seeds, one at a time
# jaxmarl: JAXMARL_DIR and JAXMARL_PYTHON name the checkout and its venv (see benchmark/jaxmarl/jaxmarl_baseline.py); MAPS picks
# maps. Each run saves its actor after every update, then benchmark/jaxmarl/jaxmarl_greedy_eval.py plays 32 greedy and 32
# sampled episodes with every 10th actor and each of the last 10 (our protocol, for both metrics). A run saves itself
# every 10 updates and when stopped (Ctrl-C; jaxmarl_baseline.py --checkpoint, in runs/ as <name>.npz): the same command
# goes on from there (27m_vs_30m: ~15 h or more here, 9 GB). Before a session ends, stop it (Ctrl-C), then
#   bash benchmark/smax_hard_10m.sh jaxmarl-keep   # evaluates its actors so far (they are not kept) and puts its state
# (checkpoint, rows, evaluations; 27m_vs_30m: ~7 MB) in kept/; commit kept/: the jaxmarl mode goes on from it on any
# machine (from runs/ where that is as far on) and removes it once the run is evaluated. Finished runs go to
# benchmark/results/smax_hard_10m_jaxmarl as <name>.json.gz (the run's rows), <name>_greedy.json and <name>_sampled.json
# (commit them) and are skipped; logs: <name>.log there, appended to. JAXMARL_VALUES=mava: the same runs with Mava's SMAX
# sweep values on JaxMARL's config (jaxmarl_baseline.py --values mava: LR 0.004 constant, 2 epochs x 2 mini-batches,
# gradient norm 0.5; otherwise the two configs agree), into benchmark/results/smax_hard_10m_mava_jaxmarl: Mava's
# published numbers were run on an earlier SMAX, so this reads its config on today's (issue 50, item 4). SMAX_WHEEL=DIR:
# the same runs stepping the SMAX of another jaxmarl release, DIR its wheel unzipped (jaxmarl_baseline.py --smax-wheel;
# 0.0.2 is the release Mava's SMAX runs installed), into a folder named by it: smax_hard_10m[_mava]_smax002_jaxmarl.
# Variables: SEEDS (default 1 2 3), SETTINGS (default "paper table2"; keep: every setting), MAPS (default: each setting's
# maps; else only those of them named), WORKERS (2), TOTAL_TIMESTEPS (10000000), PYTHON (default: python on PATH, which
# must be the repo's venv's; checked before any run); jaxmarl: MAPS, JAXMARL_VALUES (own), SMAX_WHEEL (none: the
# checkout's SMAX).
#   bash benchmark/smax_hard_10m.sh mava   # Mava's own recurrent MAPPO (benchmark/mava/mava_baseline.py: rec_mappo.py of
#                                          # its SMAX sweep, 82583ba, its config), same maps, seeds 0 1 2 (its sweep's)
# mava: MAVA_DIR and MAVA_PYTHON name the checkout and its venv (see benchmark/mava/mava_baseline.py), MAPS and SEEDS pick
# runs; one at a time, ~2.5-3 h each here beside another run. A run has no checkpoint: one cut short starts again.
# Finished runs go to benchmark/results/smax_hard_10m_mava_rec_mappo as rec_mappo_<map>_seed<seed>.json.gz (commit them).
# MAVA_ABLATION=noagentid: Mava's config without the one-hot agent ids (system.add_agent_id=False: neither its actor's
# observation nor its critic's world state has them), into smax_hard_10m_mava_noagentid_rec_mappo (issue 50, item 4).
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
set -euo pipefail
cd "$(dirname "$0")/.."
export SCRIPT=mappo_rnn.py TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-10000000} PYTHON=${PYTHON:-python}
WORKERS=${WORKERS:-2}
. benchmark/require_python.sh
[ "${1:-}" = plan ] || require_python matplotlib  # the figures come after hours of runs
ALL_SETTINGS="paper table2 ent0 clip005 epochs5 jaxcfg mavacfg tuned mavalike mavalikecl"  # the cases of setting()
HARD_MAPS="5m_vs_6m 3s5z_vs_3s6z 10m_vs_11m 27m_vs_30m"
RUN_MAPS="5m_vs_6m 3s5z_vs_3s6z 10m_vs_11m"  # by default; 27m_vs_30m: see paper above
CEILING_MAPS="3s5z 3s_vs_5z 6h_vs_8z"  # smax_10m.sh's maps, where the tuned setting runs too
for map in ${MAPS:-}; do  # a misspelt map would otherwise select nothing, silently
  [[ " $HARD_MAPS $CEILING_MAPS " == *" $map "* ]] ||
    { echo "MAPS: '$map' is not a hard map (one of: $HARD_MAPS) nor one of the tuned setting's ($CEILING_MAPS)" >&2 && exit 2; }
done
. benchmark/jaxmarl/results_folder.sh  # jaxmarl_results_folder: the jaxmarl mode's folder
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / WORKERS > 0 ? $(nproc) / WORKERS : 1 ))}

jaxmarl() {  # OUT, WHAT (run or keep): the results folder, by the values and the SMAX release (jaxmarl_results_folder)
  local out=$1 what=$2 values=${JAXMARL_VALUES:-own} wheel=()
  [ -z "${SMAX_WHEEL:-}" ] || wheel=(--smax-wheel "$SMAX_WHEEL")
  local python=${JAXMARL_PYTHON:-/work/jaxmarl-venv/bin/python}
  local dir=${JAXMARL_DIR:-/work/jaxmarl-src} failed=0 name log mode seed map run kept status maps=${MAPS:-$RUN_MAPS} files
  [ "$what" = run ] || maps=${MAPS:-$HARD_MAPS}  # keep: 27m_vs_30m too, so that no sitting is left behind
  mkdir -p "$out/runs"
  for seed in ${SEEDS:-1 2 3}; do
    for map in $maps; do
      name=mappo_rnn_smax_${map}_seed$seed log=$out/$name.log run=$out/runs/$name kept=$out/kept/$name
      if [ "$what" = keep ] && [ ! -e "$out/$name.json.gz" ]; then  # in sittings: evaluated so far, its state kept
        [ -e "$run.npz" ] || continue
        jaxmarl_eval greedy && jaxmarl_eval sampled || { failed=1 && continue; }
        sitting "$run" && mkdir -p "$out/kept" && cp "${files[@]}" "$out/kept/"
        echo "kept: $name (commit $out/kept)" >&2 && continue
      fi  # keep: a finished run is evaluated below, if it is not yet (its snapshots are on this machine only)
      if [ ! -e "$out/$name.json.gz" ]; then  # train: one run, its actor saved after every update, the run every 10
        if [ -e "$kept.npz" ] && ! further "$run.npz" "$kept.npz"; then  # the committed sittings are ahead of runs/
          sitting "$kept" && cp "${files[@]}" "$out/runs/"
        fi
        [ -e "$run.npz" ] || rm -rf "$run" "${run}_greedy.json" "${run}_sampled.json"  # a run cut short: starts again
        status=0
        JAX_PLATFORMS=cpu "$python" benchmark/jaxmarl/jaxmarl_baseline.py --jaxmarl-dir "$dir" --baseline mappo_rnn_smax \
          --values "$values" ${wheel[@]+"${wheel[@]}"} --map "$map" --seed "$seed" --snapshot-dir "$run" \
          --checkpoint "$run.npz" --out "$run.json" >>"$log" 2>&1 || status=$?
        if [ $status = 0 ]; then
          gzip -9nc "$run.json" >"$out/$name.json.gz" && rm -f "$run.npz"
        elif [ $status = 3 ]; then  # Ctrl-C or SIGTERM: saved, nothing more runs
          echo "stopped: $name, saved in $run.npz; the same command goes on from it (jaxmarl-keep: from kept/)" >&2
          return 3
        else
          echo "failed: $name, see $log" >&2 && failed=1 && continue
        fi
      fi
      for mode in greedy sampled; do  # then evaluate its snapshots, where not done yet (into runs/, then beside the run)
        [ ! -e "$out/${name}_$mode.json" ] || continue
        gunzip -c "$out/$name.json.gz" >"$run.json"
        jaxmarl_eval "$mode" && mv "${run}_$mode.json" "$out/" || failed=1
      done
      [ ! -e "$out/${name}_greedy.json" ] || [ ! -e "$out/${name}_sampled.json" ] || { sitting "$kept" && rm -f "${files[@]}"; }
      [ "$what" = keep ] || echo "done: $name" >&2  # keep names only the runs it kept
    done
  done
  return $failed
}

jaxmarl_eval() {  # greedy or sampled: the caller's run's picked snapshots (every 10th, the last 10) not yet in its evaluation
  JAX_PLATFORMS=cpu "$python" benchmark/jaxmarl/jaxmarl_greedy_eval.py --jaxmarl-dir "$dir" --snapshot-dir "$run" \
    --run-json "$run.json" --every 10 --last 10 $([ "$1" = greedy ] || echo --sample) --out "${run}_$1.json" >>"$log" 2>&1 ||
    { echo "failed: $1 evaluation of $name, see $log" >&2 && return 1; }
}

sitting() {  # PREFIX (runs/NAME or kept/NAME) -> files: what a run in sittings goes on from (checkpoint, rows, evaluations)
  files=("$1.npz" "$1.json" "$1_greedy.json" "$1_sampled.json")
}

further() {  # A.npz B.npz: checkpoint A exists and is at least as far on as B (jaxmarl_baseline.py --checkpoint)
  [ -e "$1" ] && "$python" -c "import sys, numpy
sys.exit(int(numpy.load(sys.argv[1])['update']) < int(numpy.load(sys.argv[2])['update']))" "$1" "$2"
}

setting() {  # name, mode -> mappo.sh run in that mode for that setting's maps, flags and folder
  local mava="--num-envs 128 --num-steps 128 --hidden-dim 128 --learning-rate 4e-3 --critic-learning-rate 4e-3
    --update-epochs 2 --num-minibatches 2 --ent-coef 0 --vf-coef 0.5 --max-grad-norm 0.5"  # mappo_rnn.py's MAVA_SWEEP
  local mava_choices="--no-death-masking --no-policy-active-masks --data-chunk-length 128 --no-use-popart --no-use-huber
    --no-use-feature-norm --num-layers 1"  # the choices of Mava's rec_mappo.py that flags of ours make, but its critic's
  local named_27m=""  # 27m_vs_30m (~20 h a run here) for paper, ent0, jaxcfg, mavacfg: where MAPS names it; keep: always
  [ -z "${MAPS:-}" ] && [ "$2" != keep ] || named_27m=" 27m_vs_30m"
  case $1 in
    paper) ENV_IDS="$RUN_MAPS$named_27m" EXTRA="--eval-sampled" ;;
    table2) ENV_IDS="5m_vs_6m 3s5z_vs_3s6z" EXTRA="--eval-sampled --num-envs 60 --update-epochs 10" ;;
    ent0) ENV_IDS="$RUN_MAPS$named_27m" EXTRA="--eval-sampled --ent-coef 0" ;;  # ablation: no entropy bonus
    clip005) ENV_IDS="5m_vs_6m" EXTRA="--eval-sampled --clip-coef 0.05" ;;  # ablation: the authors' 5m_vs_6m script
    epochs5) ENV_IDS="10m_vs_11m" EXTRA="--eval-sampled --update-epochs 5" ;;  # ablation: less sample reuse
    jaxcfg) ENV_IDS="10m_vs_11m$named_27m" EXTRA="--eval-sampled --num-envs 128 --num-steps 128 --hidden-dim 128 --learning-rate 2e-3
      --critic-learning-rate 2e-3 --anneal-lr --update-epochs 4 --num-minibatches 4 --ent-coef 0 --vf-coef 0.5
      --max-grad-norm 0.25" ;;  # ablation: JaxMARL's optimisation values
    mavacfg) ENV_IDS="$RUN_MAPS$named_27m" EXTRA="--eval-sampled $mava" ;;  # ablation: Mava's sweep values, on every map
    tuned) ENV_IDS=$CEILING_MAPS EXTRA="--eval-sampled --setting tuned" ;;  # the named setting's own runs
    mavalike) ENV_IDS="10m_vs_11m" EXTRA="--eval-sampled $mava --state-type ep $mava_choices" ;;  # and Mava's choices
    mavalikecl) ENV_IDS="10m_vs_11m" EXTRA="--eval-sampled $mava --state-type cl $mava_choices" ;;  # all obs to the critic
    *) echo "unknown setting $1 (one of: $ALL_SETTINGS)" >&2 && exit 2 ;;
  esac
  [ -z "${MAPS:-}" ] || ENV_IDS=$(for map in $ENV_IDS; do [[ " $MAPS " != *" $map "* ]] || echo "$map"; done)
  [ -n "$ENV_IDS" ] || return 0  # MAPS names none of this setting's maps
  ENV_IDS=$ENV_IDS EXTRA=$EXTRA OUT=benchmark/results/smax_hard_10m_$1 SEEDS=$3 bash benchmark/mappo.sh "$2"
}

tuned_links() {  # the runs of the setting whose flags --setting tuned has on a map, linked into the tuned folder's kept/
  local out=benchmark/results/smax_hard_10m_tuned/kept from map file
  mkdir -p "$out"
  find "$out" -maxdepth 1 -type l -delete  # a kept .pt becomes a .json.gz when its run finishes: linked afresh
  for from in mavacfg:10m_vs_11m paper:5m_vs_6m ent0:3s5z_vs_3s6z ent0:27m_vs_30m; do
    map=${from#*:} from=${from%%:*}
    for file in "benchmark/results/smax_hard_10m_$from/kept/${map}__"*; do
      [ ! -f "$file" ] || ln -s "../../smax_hard_10m_$from/kept/${file##*/}" "$out/"
    done
  done
}

queue() {  # the command line of every run still to do, seed by seed
  for seed in ${SEEDS:-1 2 3}; do
    for s in ${SETTINGS:-paper table2}; do setting "$s" plan "$seed"; done
  done
}

mava() {
  local out=benchmark/results/smax_hard_10m_mava_rec_mappo python=${MAVA_PYTHON:-/work/mava-venv/bin/python}
  local dir=${MAVA_DIR:-/work/mava-src} failed=0 name seed map set=()
  case ${MAVA_ABLATION:-} in  # a named change to Mava's config: a folder of its own
    "") ;;
    noagentid) set=(--set system.add_agent_id=False) out=benchmark/results/smax_hard_10m_mava_noagentid_rec_mappo ;;
    *) echo "MAVA_ABLATION: noagentid or unset, not '$MAVA_ABLATION'" >&2 && return 2 ;;
  esac
  mkdir -p "$out/runs"
  for seed in ${SEEDS:-0 1 2}; do
    for map in ${MAPS:-$RUN_MAPS}; do
      name=rec_mappo_${map}_seed$seed
      [ ! -e "$out/$name.json.gz" ] || { echo "done already: $name" >&2 && continue; }
      rm -rf "${out:?}/runs/$name"  # a run cut short starts again
      if "$python" benchmark/mava/mava_baseline.py --mava-dir "$dir" --map "$map" --seed "$seed" --run-dir "$out/runs/$name" \
        ${set[@]+"${set[@]}"} --out "$out/runs/$name.json" >>"$out/$name.log" 2>&1; then
        { gzip -9n "$out/runs/$name.json" && mv "$out/runs/$name.json.gz" "$out/" && echo "done: $name" >&2; } ||
          { echo "failed: keeping $name, see $out/runs" >&2 && failed=1; }
      else
        echo "failed: $name, see $out/$name.log" >&2 && failed=1
      fi
    done
  done
  return $failed
}

case ${1:-} in
  keep) for s in ${SETTINGS:-$ALL_SETTINGS}; do setting "$s" keep "${SEEDS:-1 2 3}"; done; tuned_links; exit 0 ;;
  plan) queue; exit 0 ;;
  jaxmarl)
    out=$(jaxmarl_results_folder "${JAXMARL_VALUES:-own}" "${SMAX_WHEEL:-}") || exit 2
    status=0 && jaxmarl "$out" run || status=$?; "$PYTHON" benchmark/report/hard_maps_curves.py || [ $status != 0 ] || status=1
    exit $status ;;  # 3: a run stopped (saved)
  jaxmarl-keep)
    out=$(jaxmarl_results_folder "${JAXMARL_VALUES:-own}" "${SMAX_WHEEL:-}") || exit 2
    jaxmarl "$out" keep; exit ;;
  mava) status=0 && mava || status=$?  # 2: a bad MAVA_ABLATION, nothing ran and nothing is drawn
    [ $status = 2 ] || "$PYTHON" benchmark/report/hard_maps_curves.py || status=1; exit $status ;;
  "") ;;
  *) echo "usage: bash benchmark/smax_hard_10m.sh [keep|plan|jaxmarl|jaxmarl-keep|mava]" >&2 && exit 2 ;;
esac
queue | xargs -d '\n' -P "$WORKERS" -I{} bash -c {}
tuned_links
for s in ${SETTINGS:-paper table2} tuned; do "$PYTHON" benchmark/report/summarize.py "benchmark/results/smax_hard_10m_$s"; done
"$PYTHON" benchmark/report/expected.py  # benchmark/results/expected_scores.json, from the summaries
"$PYTHON" benchmark/report/hard_maps_curves.py  # every implementation on one figure: results/smax_hard_10m_compare
exit  # before bash reads past the brace
}
