#!/usr/bin/env bash
# Headline runs of ippo.py: the same maps, budgets, seeds and protocol as benchmark/mappo.sh (same variables).
#   bash benchmark/ippo.sh
#   ENV_IDS="3m 2s3z" NUM_SEEDS=1 bash benchmark/ippo.sh
SCRIPT=ippo.py exec bash "$(dirname "$0")/mappo.sh" "$@"
