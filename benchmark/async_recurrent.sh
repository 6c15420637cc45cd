#!/usr/bin/env bash
# Async MAPPO's Table 2 claim on SMAX: mappo_async_seed.py --recurrent (its presets: the paper's batch magnification as
# envs and its sample reuse as epochs) against mappo_rnn.py with MAPPO's serial settings, same maps, seeds and budgets,
# in one folder, so that summarize.py puts them side by side (table, curves by env steps and by wall time).
#   bash benchmark/async_recurrent.sh
#   NUM_SEEDS=1 BUDGETS="5m_vs_6m=2000000" bash benchmark/async_recurrent.sh
# Variables as benchmark/mappo.sh; ENV_IDS defaults to the Table 2 maps here (SMAX has no MMM2: smaclite/MMM2 needs
# SMAClite and is about 10x slower per step). Seed by seed, one run at a time, the serial script first, so that the
# wall-time curves compare runs that had the machine to themselves. Stopped runs go on with --resume when run again.
set -euo pipefail
cd "$(dirname "$0")/.."
export ENV_IDS=${ENV_IDS:-"5m_vs_6m 3s5z_vs_3s6z"}
export OUT=${OUT:-benchmark/results/async_recurrent}
export BUDGETS=${BUDGETS:-"5m_vs_6m=10000000 3s5z_vs_3s6z=10000000 smaclite/MMM2=10000000"}
for seed in ${SEEDS:-$(seq 1 "${NUM_SEEDS:-3}")}; do
  SEEDS=$seed WORKERS=1 SCRIPT=mappo_rnn.py bash benchmark/mappo.sh
  SEEDS=$seed WORKERS=1 SCRIPT=mappo_async_seed.py EXTRA="--recurrent ${EXTRA:-}" bash benchmark/mappo.sh
done
