#!/usr/bin/env bash
# Headline runs of mappo_rnn.py: the same maps, budgets, seeds and protocol as benchmark/mappo.sh (same variables).
#   bash benchmark/mappo_rnn.sh
#   OUT=benchmark/results/rnn_acceptance ENV_IDS=3m NUM_SEEDS=1 TOTAL_TIMESTEPS=2000000 bash benchmark/mappo_rnn.sh
SCRIPT=mappo_rnn.py exec bash "$(dirname "$0")/mappo.sh" "$@"
