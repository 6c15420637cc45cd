#!/usr/bin/env bash
# Headline runs of mappo_async_seed.py (2 env clients x 2 splits by default): the same maps, budgets, seeds and protocol
# as benchmark/mappo.sh (same variables). Each run is a learner plus its client processes: keep WORKERS at 1 on a
# small machine.
#   bash benchmark/mappo_async_seed.sh
#   ENV_IDS=3m NUM_SEEDS=1 TOTAL_TIMESTEPS=2000000 bash benchmark/mappo_async_seed.sh
SCRIPT=mappo_async_seed.py exec bash "$(dirname "$0")/mappo.sh" "$@"
