#!/usr/bin/env bash
# mappo.py and ippo.py on 2-player Hanabi (our Hanabi defaults), 10M env steps, 3 seeds: OUT is
# benchmark/results/hanabi_10m_{mappo,ippo}. Two runs at a time, one torch thread each. Longer than a session: see KEEP
# in benchmark/mappo.sh (`keep` goes through both scripts' folders).
#   bash benchmark/hanabi_10m.sh          # start, or go on from OUT/runs or from the committed OUT/kept
#   bash benchmark/hanabi_10m.sh keep     # before a session ends: stop the runs (Ctrl-C), then this, then commit OUT/kept
#   bash benchmark/hanabi_10m.sh jaxmarl  # JaxMARL's own IPPO and MAPPO (ippo_ff_hanabi, mappo_ff_hanabi: their
#                                         # configs, schedules included, stopped at the budget), same seeds, one run at
#                                         # a time
# (BASELINES picks some of them, SEEDS the seeds: default 1 2 3)
#   bash benchmark/hanabi_10m.sh speed    # JaxMARL's mappo_ff_hanabi alone for 10 updates (its config, seed 1): its
#                                         # steady-state SPS here, for the equal-wall-time table of
#                                         # benchmark/results/README.md. Run it with nothing else running.
# jaxmarl: JAXMARL_DIR and JAXMARL_PYTHON name the checkout and its venv (see benchmark/jaxmarl/jaxmarl_baseline.py). Each run
# is one jitted scan and cannot resume: a run cut short or failed leaves only OUT/runs/<name>.json (git-ignored; it is
# moved to OUT when the run ends) and starts again; finished ones, in OUT (JAXMARL_OUT, default
# benchmark/results/hanabi_10m_jaxmarl), are skipped (commit them); after a failure the others still run, and the
# exit status is 1. Logs: OUT/<name>.log, appended to.
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
set -euo pipefail
export ENV_IDS=hanabi TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-10000000} WORKERS=${WORKERS:-2}
if [ "${1:-}" = speed ]; then
  cd "$(dirname "$0")/.."
  JAX_PLATFORMS=cpu "${JAXMARL_PYTHON:-/work/jaxmarl-venv/bin/python}" benchmark/jaxmarl/jaxmarl_baseline.py \
    --jaxmarl-dir "${JAXMARL_DIR:-/work/jaxmarl-src}" --baseline mappo_ff_hanabi --seed 1 --stop-at-step 1310720 \
    --out benchmark/results/hanabi_10m_jaxmarl/speed_mappo_ff_hanabi.json
  exit $?
fi
if [ "${1:-}" = jaxmarl ]; then
  cd "$(dirname "$0")/.."
  out=${JAXMARL_OUT:-benchmark/results/hanabi_10m_jaxmarl} python=${JAXMARL_PYTHON:-/work/jaxmarl-venv/bin/python} failed=0
  mkdir -p "$out/runs"
  for baseline in ${BASELINES:-ippo_ff_hanabi mappo_ff_hanabi}; do
    for seed in ${SEEDS:-1 2 3}; do
      json=$out/${baseline}_seed$seed.json log=$out/${baseline}_seed$seed.log
      if [ -e "$json" ]; then  # done, if at this budget (a smoke run's file is not a 10M run)
        # its rows reach the budget, on the config's own schedule: stopped there (--stop-at-step), or a constant rate
        if "$python" -c "import json, sys; r = json.load(open(sys.argv[1])); m, c = r['meta'], r['config']
budget = int(sys.argv[2]); own = m.get('stop_at_step') == budget or not c['ANNEAL_LR']
sys.exit(not (own and len(r['rows']) == budget // m['steps_per_update']))" "$json" "$TOTAL_TIMESTEPS"; then
          echo "done already: $json" >&2
        else
          echo "failed: $json is a run of another budget or schedule; move it away" >&2 && failed=1
        fi
        continue
      fi
      if JAX_PLATFORMS=cpu "$python" benchmark/jaxmarl/jaxmarl_baseline.py --jaxmarl-dir "${JAXMARL_DIR:-/work/jaxmarl-src}" \
        --baseline "$baseline" --seed "$seed" --stop-at-step "$TOTAL_TIMESTEPS" --out "$out/runs/${json##*/}" \
        >>"$log" 2>&1; then
        mv "$out/runs/${json##*/}" "$json"
      else
        echo "failed: $baseline seed $seed, see $log" >&2 && failed=1
      fi
    done
  done
  exit $failed
fi
for script in mappo.py ippo.py; do  # every row in the update, as these runs had it (before the presets left them out)
  EXTRA="${EXTRA:-} --no-acting-rows-only" SCRIPT=$script OUT=benchmark/results/hanabi_10m_${script%.py} \
    bash "$(dirname "$0")/mappo.sh" "$@"
done
exit  # before bash reads past the brace
}
