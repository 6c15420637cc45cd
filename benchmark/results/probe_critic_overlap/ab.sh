#!/usr/bin/env bash
# Three alternating runs of benchmark/throughput.py on 3m: mappo.py at 7d73732 (h) and the same with
# critic_overlap.patch applied (x), each writing its row to h_N.json / x_N.json here. Run from the repo root,
# alone on the machine; then `python table.py` in this folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in h x; do
  mkdir -p "$work/$t"
  git archive 7d73732 | tar -x -C "$work/$t"
done
(cd "$work/x" && patch -s -p1 < "$here/critic_overlap.patch")
for rep in 1 2 3; do
  for t in h x; do
    (cd "$work/$t" && python benchmark/throughput.py --env-ids 3m --iterations 10 --out "$here/${t}_$rep")
  done
done
