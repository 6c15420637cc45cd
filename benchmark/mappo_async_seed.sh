#!/usr/bin/env bash
# Learning per env step of mappo_async_seed.py (2 env clients x 2 splits, policy lag up to 1) against mappo.py: SMAX 3m,
# 1M env steps, the same 3 seeds, both into one folder, where summarize.py puts the two scripts side by side. Same
# variables as benchmark/mappo.sh (a run of the async script is a learner and its clients: WORKERS 2 runs two of them).
#   bash benchmark/mappo_async_seed.sh
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
export ENV_IDS=${ENV_IDS:-3m} TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-1000000} OUT=${OUT:-benchmark/results/mappo_async_seed}
SCRIPT=mappo.py bash "$(dirname "$0")/mappo.sh" "$@"
SCRIPT=mappo_async_seed.py exec bash "$(dirname "$0")/mappo.sh" "$@"
exit  # before bash reads past the brace
}
