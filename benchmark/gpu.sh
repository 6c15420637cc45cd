#!/usr/bin/env bash
# The GPU checks and timings, on a machine with an NVIDIA GPU (after the README's install): the --cuda tests of every
# script, a 200k-step mappo.py run on SMAX 3m with --cuda, mappo.py's throughput against raw env stepping with --cuda
# and without it (the same machine's CPU), and mappo_async_seed.py against mappo.py with --cuda at 4 and 12 clients.
#   bash benchmark/gpu.sh [OUT]        # OUT: results folder, default benchmark/results/gpu
# Variables: PYTHON. SMAClite rows are skipped where SMAClite is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-benchmark/results/gpu}
PYTHON=${PYTHON:-python}
mkdir -p "$OUT/run_3m_200k"
OUT=$(cd "$OUT" && pwd)
nvidia-smi -L | tee "$OUT/device.txt"
"$PYTHON" -c "import torch, jax; print('torch', torch.__version__, 'jax', jax.__version__)" | tee -a "$OUT/device.txt"
"$PYTHON" -m pytest tests/test_cuda.py -v -rs 2>&1 | tee "$OUT/pytest_cuda.log"
(cd "$OUT/run_3m_200k" && "$PYTHON" "$ROOT/mappo.py" --env-id 3m --seed 1 --cuda --total-timesteps 200000 \
  2>&1 | tee "$OUT/mappo_3m_cuda_200k.log")
"$PYTHON" benchmark/throughput.py --env-ids 3m simple_spread_v3 --iterations 8 --cuda --out "$OUT/throughput_cuda"
"$PYTHON" benchmark/throughput.py --env-ids 3m simple_spread_v3 --iterations 8 --out "$OUT/throughput_cpu"  # same CPU, no GPU
"$PYTHON" benchmark/async_throughput.py --env-ids 3m smaclite/2s3z --num-envs 24 --num-clients 4 --iterations 5 \
  --smaclite-iterations 3 --cuda --out "$OUT/async_c4"
"$PYTHON" benchmark/async_throughput.py --env-ids 3m smaclite/2s3z --num-envs 48 --num-clients 12 --splits 1 2 \
  --iterations 4 --smaclite-iterations 2 --cuda --out "$OUT/async_c12"
