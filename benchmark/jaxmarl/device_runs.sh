#!/usr/bin/env bash
# JaxMARL's recurrent MAPPO (mappo_rnn_smax, its own config, or Mava's values: JAXMARL_VALUES) on the hard SMAX maps,
# run on a lent GPU machine (issue 50: JAX on a GPU trains in minutes what takes this 2-core machine hours): one process
# per map of MAPS, its SEEDS vmapped in one program (jaxmarl_baseline.py --seed 2 3; by default one run alone, see
# below), then our greedy and sampled evaluations of their snapshots there; the results come back as one archive,
# unpacked here into benchmark/results/smax_hard_10m_jaxmarl (Mava's values: smax_hard_10m_mava_jaxmarl) as `bash
# benchmark/smax_hard_10m.sh jaxmarl` writes them (which then skips those runs). Each run's JSON names the device and
# JAX version it ran on, and how many runs shared the GPU.
#   bash benchmark/jaxmarl/device_runs.sh prepare    # here, once: .device/ (git-ignored): wheels for the GPU image's
#                                                    # Python 3.12 (what it lacks of JaxMARL's needs), the JaxMARL
#                                                    # checkout's jaxmarl/ and baselines/ (JAXMARL_DIR), a wandb stub
#   there, through the device tool, carrying .device:  bash benchmark/jaxmarl/device_runs.sh run
#   bash benchmark/jaxmarl/device_runs.sh unpack ARCHIVE   # here: the archive that came back
# Our side of issue 50 on the same call, on the machine's CPU cores while JaxMARL has its GPU:
#   there:  bash benchmark/jaxmarl/device_runs.sh both   # run and ours at once, BESIDE set
#   here:   bash benchmark/jaxmarl/device_runs.sh ours-unpack ARCHIVE...   (one archive per settings folder)
# `ours` runs benchmark/smax_hard_10m.sh's queue (every setting; WORKERS runs at once, default 14 of the 16 cores,
# one thread each, on the CPU) from the committed kept/ checkpoints for OURS_SECONDS (420), stops the runs (SIGTERM:
# each saves its checkpoint), keeps them (smax_hard_10m.sh keep) and sends back the kept/ folders, with each run's
# env steps done there added to its folder's kept/machines.json (the README's wall-time cell names that share), and
# the last lines of the runs' logs in ours.log. Do not run the same queue here meanwhile: unpacking replaces kept/.
# A second call on the still-warm machine goes on from the first's kept/ (kept in its /tmp), where the tree it was
# sent is not ahead: unpack the last call's archives (each holds all calls so far).
# BESIDE, for `run` on such a call (e.g. BESIDE="14 CPU runs"), goes into each JaxMARL run's JSON and the README's
# label: its GPU was its own, the machine's CPU was not.
# Variables: MAPS and SEEDS (unset: the first run of the hard maps, seeds 1-3, not yet in the results folder, alone);
# JAXMARL_VALUES (own: the config's; mava: jaxmarl_baseline.py --values mava, into smax_hard_10m_mava_jaxmarl),
# SMAX_WHEEL (another jaxmarl release's SMAX, its wheel unzipped: prepare copies it into the kit; run, with it set to
# anything, takes the kit's copy: names the results folder by its release, e.g. smax_hard_10m_smax002_jaxmarl, and runs
# jaxmarl_baseline.py --smax-wheel on it),
# TOTAL_TIMESTEPS (unset: the config's 1e7; set it only for a timing trial, it changes the schedule), OUT (where the
# archive goes; the device tool sets it), PYTHON (python3: the image's, with PyTorch and JAX), JAX_PLATFORMS (cuda,cpu:
# the snapshots' host callbacks need the CPU platform beside the GPU; cpu to try the kit on this machine), RUN_SECONDS
# (420) and EVAL_SECONDS (120): a run or evaluation still going then is stopped and does not come back, so that the
# archive is written within the call's 10 minutes. The image holds jax/jaxlib 0.11.2 with its CUDA plugin, flax, optax,
# chex, numpy (here: jax 0.10.2). A device call runs at most 10 minutes and a run here does not go on in a later call
# (smax_hard_10m.sh jaxmarl on this CPU does: jaxmarl-keep). On an H200 one run
# alone takes 284 s for 10M env steps on 5m_vs_6m (~40 s to its first update, then ~0.36 s per update), 296 s on
# 3s5z_vs_3s6z, 320 s on 10m_vs_11m, our evaluations within a minute more; separate processes take turns on the GPU
# (three at once: 0.87-1.07 s per update, past the call's limit); seeds vmapped in one program run, but are not yet
# timed alone. Two calls per lent session (15 minutes of device time: the two runs above took 718 s, the machine's
# start included; the second call must come within the 30 s it stays warm, and must name MAPS and SEEDS: its copy of
# the tree lacks the first call's results). The session-by-session timings are in git history. Tried here on the CPU
# with a Python 3.12 venv of the image's versions (JAX_PLATFORMS=cpu PYTHON=... TOTAL_TIMESTEPS=65536 MAPS=3m SEEDS="1 2";
# ours: PYTHON=... WORKERS=1 OURS_SECONDS=120, with torch 2.11.0, jax 0.11.2, jaxtyping, matplotlib, tensorboard).
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
set -euo pipefail
[ "${1:-}" != unpack ] || archive=$(realpath "${2:?usage: bash benchmark/jaxmarl/device_runs.sh unpack ARCHIVE}")
archives=() && for a in "${@:2}"; do archives+=("$(realpath "$a")"); done  # ours-unpack's, before the cd below
cd "$(dirname "$0")/../.."
kit=.device py=${PYTHON:-python3} maps=${MAPS:-} seeds=${SEEDS:-}
. benchmark/jaxmarl/results_folder.sh  # jaxmarl_results_folder: the folder smax_hard_10m.sh's jaxmarl mode would write
values=${JAXMARL_VALUES:-own} wheel=()
results=$(jaxmarl_results_folder "$values") || exit 2  # mava: Mava's values, a folder of their own
if [ -n "${SMAX_WHEEL:-}" ] && [ "${1:-}" != prepare ]; then  # the kit's copy of another release's SMAX: its own folder
  results=$(jaxmarl_results_folder "$values" "$kit/smax-wheel" 2>/dev/null) ||
    { echo "SMAX_WHEEL: prepare with it first (no $kit/smax-wheel with an SMAX package and its dist-info)" >&2 && exit 2; }
  wheel=(--smax-wheel "$PWD/$kit/smax-wheel")
fi
if [ -z "$maps$seeds" ]; then  # the next run missing here, one per call
  for map in 5m_vs_6m 3s5z_vs_3s6z 10m_vs_11m; do  # smax_hard_10m.sh's maps
    for seed in 1 2 3; do
      [ -e "$results/mappo_rnn_smax_${map}_seed$seed.json.gz" ] || { maps=$map seeds=$seed && break 2; }
    done
  done
fi

install_kit() {  # the kit's wheels into folder $1 (run and ours each have their own: they install at once)
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$1" "$kit"/whl/*.whl
}

kept_steps() {  # every kept run of our hard-map folders: "<folder> <run name> <env steps>" (finished: the summary's)
  "$py" - <<'PY'
import glob, gzip, json, os, torch
for path in sorted(glob.glob("benchmark/results/smax_hard_10m_*/kept/*__*")):
    name = os.path.basename(path).removesuffix(".pt").removesuffix(".json.gz")
    if path.endswith(".pt"):
        step = torch.load(path, weights_only=True, map_location="cpu")["global_step"]
    else:
        step = json.load(gzip.open(path, "rt"))["global_step"]
    print(os.path.dirname(os.path.dirname(path)), name, step)
PY
}

# kept_steps' lines read back in Python: steps(file) -> {(folder, run name): env steps}
read_steps="steps = lambda path: {tuple(line.split()[:2]): int(line.split()[2]) for line in open(path)}"

case ${1:-} in
  prepare)
    src=${JAXMARL_DIR:-/work/jaxmarl-src}
    rm -rf "$kit" && mkdir -p "$kit/whl" "$kit/jaxmarl-src" "$kit/stub"
    cp -r "$src/jaxmarl" "$src/baselines" "$kit/jaxmarl-src/"
    git -C "$src" rev-parse HEAD >"$kit/jaxmarl-src/COMMIT"
    if [ -n "${SMAX_WHEEL:-}" ]; then  # another release's SMAX, its wheel unzipped (run: SMAX_WHEEL set uses it)
      jaxmarl_results_folder "$values" "$SMAX_WHEEL" >/dev/null || exit 2  # an unzipped wheel with its SMAX, or why not
      cp -r "$SMAX_WHEEL" "$kit/smax-wheel"
    fi
    # the baseline imports wandb; jaxmarl_baseline.py replaces its log and never calls init: a stub stands in for it
    printf 'def init(*args, **kwargs):\n    pass\n\n\ndef log(*args, **kwargs):\n    pass\n' >"$kit/stub/wandb.py"
    platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
    # shellcheck disable=SC2086
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $platforms \
      -d "$kit/whl" distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 hydra-core==1.3.8 omegaconf==2.3.1 gymnax==1.0.1 \
      gymnasium==1.3.0 Farama-Notifications==0.0.6 decorator==5.3.1 gast==0.7.0 dm-tree==0.1.10 \
      tyro==1.0.17 docstring_parser==0.18.0 typeguard==4.6.0  # the last three: our scripts' (ours)
    python3 -m pip wheel -q --no-deps -w "$kit/whl" antlr4-python3-runtime==4.9.3  # a source release only
    du -sh "$kit" ;;
  run)
    : "${OUT:?OUT: the folder whose files come back}" && mkdir -p "$OUT"
    [ -n "$maps" ] && [ -n "$seeds" ] || { echo "nothing to run: MAPS='$maps' SEEDS='$seeds'" >&2 && exit 2; }
    echo "running $maps, seeds $seeds"
    install_kit /tmp/site
    export PYTHONPATH=/tmp/site:$PWD/$kit/stub JAX_PLATFORMS=${JAX_PLATFORMS:-cuda,cpu} XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
    work=/tmp/jaxmarl_runs && rm -rf "$work" && mkdir -p "$work/$results"  # a warm machine keeps /tmp between calls
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || echo "no nvidia-smi: JAX_PLATFORMS=$JAX_PLATFORMS"
    extra=${TOTAL_TIMESTEPS:+--total-timesteps $TOTAL_TIMESTEPS}
    declare -A pids=() evals=()
    for map in $maps; do  # one process per map, its seeds vmapped in one program (see above)
      runs=mappo_rnn_smax_${map}_seed{seed}  # jaxmarl_baseline.py names each seed's files
      # shellcheck disable=SC2086
      timeout "${RUN_SECONDS:-420}" "$py" benchmark/jaxmarl/jaxmarl_baseline.py --jaxmarl-dir "$kit/jaxmarl-src" \
        --baseline mappo_rnn_smax --values "$values" ${wheel[@]+"${wheel[@]}"} --map "$map" --seed $seeds --snapshot-dir "$work/snapshots/$runs" \
        --out "$work/$runs.json" $extra >"$work/mappo_rnn_smax_$map.log" 2>&1 &
      pids[$map]=$!
    done
    finished=()  # a run cut short wrote its rows so far: only those of a program that exits 0 count
    for map in "${!pids[@]}"; do
      status=0 && wait "${pids[$map]}" || status=$?
      for seed in $seeds; do
        name=mappo_rnn_smax_${map}_seed$seed
        cp "$work/mappo_rnn_smax_$map.log" "$work/$results/$name.log"  # the program's log (it names its seeds)
        [ "$status" = 0 ] && finished+=("$name") || echo "failed or cut short: $name" | tee -a "$work/$results/$name.log"
      done
    done
    for name in "${finished[@]}"; do  # how many shared the GPU, for the wall time's label; then our evaluations
      "$py" -c "import json, sys; d = json.load(open(sys.argv[1])); d['meta']['runs_at_once'] = int(sys.argv[2])
d['meta'].update(beside=sys.argv[3]) if sys.argv[3] else None
json.dump(d, open(sys.argv[1], 'w'), indent=1)" "$work/$name.json" $(( ${#pids[@]} * $(wc -w <<<"$seeds") )) "${BESIDE:-}"
      for mode in greedy sampled; do
        timeout "${EVAL_SECONDS:-120}" "$py" benchmark/jaxmarl/jaxmarl_greedy_eval.py --jaxmarl-dir "$kit/jaxmarl-src" \
          --snapshot-dir "$work/snapshots/$name" --run-json "$work/$name.json" --every 10 --last 10 \
          $([ "$mode" = greedy ] || echo --sample) --out "$work/${name}_$mode.json" >>"$work/$results/$name.log" 2>&1 &
        evals[$name.$mode]=$!
      done
    done
    for name in "${finished[@]}"; do  # a run comes back with both evaluations, or not at all (its log says why)
      if wait "${evals[$name.greedy]}" && wait "${evals[$name.sampled]}"; then
        mv "$work/${name}_greedy.json" "$work/${name}_sampled.json" "$work/$results/"
        gzip -9nc "$work/$name.json" >"$work/$results/$name.json.gz"
      else
        echo "failed: an evaluation of $name" | tee -a "$work/$results/$name.log"
      fi
    done
    wait
    tar -czf "$OUT/smax_hard_jaxmarl_gpu.tar.gz" -C "$work" "$results"
    ls -la "$work/$results" ;;
  ours)
    : "${OUT:?OUT: the folder whose files come back}" && mkdir -p "$OUT"
    install_kit /tmp/site_ours
    # our scripts with the image's torch and JAX on the CPU (CUDA hidden: the GPU is JaxMARL's), one torch thread each;
    # the 10M budget of smax_hard_10m.sh whatever TOTAL_TIMESTEPS says (a smaller one would count runs as finished)
    export PYTHONPATH=/tmp/site_ours:$PWD/$kit/jaxmarl-src CUDA_VISIBLE_DEVICES= PYTHON=$py OMP_NUM_THREADS=1 \
      SETTINGS="paper table2 ent0 clip005 epochs5 jaxcfg mavacfg tuned mavalike mavalikecl" TOTAL_TIMESTEPS=10000000 WORKERS=${WORKERS:-14}
    log=$OUT/ours.log
    if ! "$py" -c "import tyro, torch.utils.tensorboard, jaxmarl" >>"$log" 2>&1; then
      echo "ours: our scripts' imports fail here (see $log)" | tee -a "$log" && exit 1
    fi
    state=/tmp/ours_state  # a warm machine keeps /tmp: the kept/ folders that this session's last call sent back
    if [ -d "$state" ]; then  # the tree came from here before that call: go on from the state where it is ahead
      kept_steps >/tmp/kept_tree && (cd "$state" && kept_steps) >/tmp/kept_state
      if "$py" -c "import sys; $read_steps
tree, state = steps('/tmp/kept_tree'), steps('/tmp/kept_state')
sys.exit(0 if all(state.get(run, -1) >= step for run, step in tree.items()) else 1)"; then
        for folder in "$state"/benchmark/results/*/kept; do  # each folder whole (a run finished there has no .pt)
          rm -rf "${folder#"$state"/}" && cp -r "$folder" "${folder#"$state"/}"
        done
        echo "ours: going on from this machine's last call" | tee -a "$log"
      else
        echo "ours: the tree is ahead of this machine's last call: going on from the tree" | tee -a "$log"
      fi
    fi
    kept_steps >/tmp/kept_before
    queued=$(bash benchmark/smax_hard_10m.sh plan 2>/dev/null | grep -c . || true)
    label="$(nproc --all)-core CPU of a lent GPU machine, $(( queued < WORKERS ? queued : WORKERS )) runs at once"
    ( exec setsid bash benchmark/smax_hard_10m.sh ) >>"$log" 2>&1 &
    group=$!  # setsid did not fork (this shell has no job control): the queue and its runs are one process group
    sleep 1 && [ "$(ps -o pgid= -p "$group" | tr -d ' ')" = "$group" ] || echo "ours: not a process group: $group" >>"$log"
    alive() {  # a member of the group that is not a zombie (kill -0 counts those; without ps it is all there is)
      if command -v ps >/dev/null; then ps -eo pgid=,stat= | awk -v g="$group" '$1 == g && $2 !~ /^Z/ {n++} END {exit n == 0}'
      else kill -0 -- "-$group" 2>/dev/null; fi
    }
    trap 'kill -TERM -- "-$group" 2>/dev/null || true' EXIT  # the runs never outlive this call
    deadline=$(( SECONDS + ${OURS_SECONDS:-420} ))
    while alive && [ $SECONDS -lt $deadline ]; do sleep 5; done
    kill -TERM -- "-$group" 2>/dev/null || true  # each run saves its checkpoint at its next step, then exits
    deadline=$(( SECONDS + 60 ))
    while alive && [ $SECONDS -lt $deadline ]; do sleep 1; done
    ! alive || { kill -KILL -- "-$group" && echo "ours: killed after 60 s, unsaved since its last checkpoint" | tee -a "$log"; }
    for run_log in benchmark/results/smax_hard_10m_*/*.log; do  # the runs' logs stay there: their last lines come back
      [ -e "$run_log" ] && { echo "== $run_log" && tail -n 3 "$run_log"; } >>"$log"
    done
    {  # bookkeeping that may fail without keeping the archives from coming back
      bash benchmark/smax_hard_10m.sh keep >/dev/null && kept_steps >/tmp/kept_after && "$py" -c "import json, sys; $read_steps
before = steps('/tmp/kept_before')
for (folder, name), step in steps('/tmp/kept_after').items():  # each run that went on here: [machine, from, to]
    start = before.get((folder, name), 0)  # into its folder's kept/machines.json
    if step > start:
        path = f'{folder}/kept/machines.json'
        try:
            seen = json.load(open(path))
        except FileNotFoundError:
            seen = {}
        seen.setdefault(name, []).append([sys.argv[1], start, step])
        json.dump(seen, open(path, 'w'), indent=1)
        print(f'{folder} {name}: {start} -> {step}')
" "$label"
    } 2>&1 | tee -a "$log" || echo "ours: keeping failed (see $log)" | tee -a "$log"
    rm -rf "$state"
    for setting in $SETTINGS; do  # one archive per folder: a file that comes back holds 16 MiB at most
      folder=benchmark/results/smax_hard_10m_$setting/kept
      [ -d "$folder" ] || continue
      tar -czf "$OUT/smax_hard_ours_$setting.tar.gz" "$folder"
      mkdir -p "$state/$folder" && cp -r "$folder"/. "$state/$folder"/  # for this session's next call
    done ;;
  both)  # JaxMARL's run on the GPU and ours on the CPU cores, at once
    BESIDE="${WORKERS:-14} CPU runs" bash benchmark/jaxmarl/device_runs.sh run & jaxmarl=$!
    status=0 && bash benchmark/jaxmarl/device_runs.sh ours || status=$?
    wait "$jaxmarl" || status=$?
    exit $status ;;
  ours-unpack)  # each archive's kept/ folder replaces ours; this machine's runs/ of its runs move aside (to
    # runs_before_unpack/): they are behind (mappo.sh would go on from kept/ anyway), and their logs would pass for today's
    [ ${#archives[@]} -gt 0 ] || { echo "usage: bash benchmark/jaxmarl/device_runs.sh ours-unpack ARCHIVE..." >&2 && exit 2; }
    for a in "${archives[@]}"; do
      kept=$(tar -tzf "$a" | sed -n 1p) && kept=${kept%%/kept*}/kept && [[ $kept == benchmark/results/smax_hard_10m_*/kept ]] \
        || { echo "not an archive of ours: $a" >&2 && exit 2; }
      rm -rf "$kept" && tar -xzf "$a" && echo "unpacked $kept"
      for run in "$kept"/*__*; do
        name=$(basename "$run") && name=${name%.pt} && name=${name%.json.gz} && results=$(dirname "$kept")
        if [ -d "$results/runs/$name" ]; then
          mkdir -p "$results/runs_before_unpack" && rm -rf "$results/runs_before_unpack/$name"
          mv "$results/runs/$name" "$results/runs_before_unpack/" && echo "moved aside: $results/runs/$name"
        fi
      done
    done ;;
  unpack)  # the runs of the archive, each whole, except those this folder has already
    tmp=$(mktemp -d) && tar -xzf "$archive" -C "$tmp"
    results=$(cd "$tmp" && echo benchmark/results/*_jaxmarl)  # the archive's folder, whatever JAXMARL_VALUES says
    [ -d "$tmp/$results" ] || { echo "not an archive of device_runs.sh run: $archive" >&2 && rm -rf "$tmp" && exit 2; }
    mkdir -p "$results"
    for gz in "$tmp/$results"/*.json.gz; do
      [ -e "$gz" ] || continue
      name=$(basename "$gz" .json.gz)
      if [ -e "$results/$name.json.gz" ]; then echo "kept this machine's $name" && continue; fi
      mv "$gz" "$tmp/$results/${name}_greedy.json" "$tmp/$results/${name}_sampled.json" "$results/" && echo "unpacked $name"
    done
    for log in "$tmp/$results"/*.log; do  # every run's log, failed ones too, after any of this machine's
      [ -e "$log" ] && cat "$log" >>"$results/$(basename "$log")"
    done
    rm -rf "$tmp" ;;
  *) echo "usage: bash benchmark/jaxmarl/device_runs.sh prepare|run|unpack ARCHIVE|ours|both|ours-unpack ARCHIVE..." >&2 && exit 2 ;;
esac
exit  # before bash reads past the brace
}
