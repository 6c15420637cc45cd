#!/usr/bin/env bash
# mappo.py and ippo.py on 2-player Hanabi (our Hanabi defaults), 10M env steps, 3 seeds: OUT is
# benchmark/results/hanabi_10m_{mappo,ippo}. Two runs at a time, one torch thread each. Longer than a session: see KEEP
# in benchmark/mappo.sh (`keep` goes through both scripts' folders).
#   bash benchmark/hanabi_10m.sh        # start, or go on from OUT/runs or from the committed OUT/kept
#   bash benchmark/hanabi_10m.sh keep   # before a session ends: stop the runs (Ctrl-C), then this, then commit OUT/kept
set -euo pipefail
export ENV_IDS=hanabi TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-10000000} WORKERS=${WORKERS:-2}
for script in mappo.py ippo.py; do
  SCRIPT=$script OUT=benchmark/results/hanabi_10m_${script%.py} bash "$(dirname "$0")/mappo.sh" "$@"
done
