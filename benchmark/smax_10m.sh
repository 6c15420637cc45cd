#!/usr/bin/env bash
# mappo.py at the same-environment anchors' budget: SMAX 3s5z, 3s_vs_5z and 6h_vs_8z, 10M env steps, 3 seeds, with the
# MAPPO paper's per-map settings (mappo.py's SMAC_MAP_PRESETS). Two runs at a time, one torch thread each: on 2 cores
# that did 1.27x the updates per second of one run alone (3s5z). Longer than a session: see KEEP in benchmark/mappo.sh.
#   bash benchmark/smax_10m.sh        # start, or go on from OUT/runs or from the committed OUT/kept
#   bash benchmark/smax_10m.sh keep   # before a session ends: stop the runs (Ctrl-C), then this, then commit OUT/kept
export ENV_IDS=${ENV_IDS:-"3s5z 3s_vs_5z 6h_vs_8z"} TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-10000000} WORKERS=${WORKERS:-2}
export OUT=${OUT:-benchmark/results/smax_10m_mappo}
exec bash "$(dirname "$0")/mappo.sh" "$@"
