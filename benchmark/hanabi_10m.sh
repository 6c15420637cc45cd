#!/usr/bin/env bash
# mappo.py and ippo.py on 2-player Hanabi (our Hanabi defaults), 10M env steps, 3 seeds: OUT is
# benchmark/results/hanabi_10m_{mappo,ippo}. Two runs at a time, one torch thread each. Longer than a session: see KEEP
# in benchmark/mappo.sh (`keep` goes through both scripts' folders).
#   bash benchmark/hanabi_10m.sh          # start, or go on from OUT/runs or from the committed OUT/kept
#   bash benchmark/hanabi_10m.sh keep     # before a session ends: stop the runs (Ctrl-C), then this, then commit OUT/kept
#   bash benchmark/hanabi_10m.sh jaxmarl  # JaxMARL's own IPPO and MAPPO (ippo_ff_hanabi, mappo_ff_hanabi: their
#                                         # configs at TOTAL_TIMESTEPS 1e7), same seeds, one run at a time
# (BASELINES picks some of them, SEEDS the seeds: default 1 2 3)
# jaxmarl: JAXMARL_DIR and JAXMARL_PYTHON name the checkout and its venv (see benchmark/jaxmarl_baseline.py). Each run
# is one jitted scan and cannot resume: a run cut short leaves only OUT/runs/<name>.json (git-ignored; it is moved to
# OUT when the run ends) and starts again; finished ones, in OUT = benchmark/results/hanabi_10m_jaxmarl, are skipped.
# Commit them.
set -euo pipefail
export ENV_IDS=hanabi TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-10000000} WORKERS=${WORKERS:-2}
if [ "${1:-}" = jaxmarl ]; then
  cd "$(dirname "$0")/.."
  out=benchmark/results/hanabi_10m_jaxmarl
  mkdir -p "$out/runs"
  for baseline in ${BASELINES:-ippo_ff_hanabi mappo_ff_hanabi}; do
    for seed in ${SEEDS:-1 2 3}; do
      json=$out/${baseline}_seed$seed.json
      if [ -e "$json" ]; then echo "done already: $json" >&2; continue; fi
      JAX_PLATFORMS=cpu "${JAXMARL_PYTHON:-/work/jaxmarl-venv/bin/python}" benchmark/jaxmarl_baseline.py \
        --jaxmarl-dir "${JAXMARL_DIR:-/work/jaxmarl-src}" --baseline "$baseline" --seed "$seed" \
        --total-timesteps "$TOTAL_TIMESTEPS" --out "$out/runs/${baseline}_seed$seed.json" >"${json%.json}.log" 2>&1
      mv "$out/runs/${baseline}_seed$seed.json" "$json"
    done
  done
  exit 0
fi
for script in mappo.py ippo.py; do
  SCRIPT=$script OUT=benchmark/results/hanabi_10m_${script%.py} bash "$(dirname "$0")/mappo.sh" "$@"
done
