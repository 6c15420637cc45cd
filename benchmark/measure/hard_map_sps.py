"""mappo_rnn.py's training throughput on the hard SMAX maps with the paper's settings (its SMAC_MAP_PRESETS, the
setting `paper` of benchmark/smax_hard_10m.sh), evaluation off, alone on this machine: what a 10M run costs here. For a
map without runs of that setting (27m_vs_30m) the README's hard-map table reports it.

    python benchmark/measure/hard_map_sps.py [--env-ids 27m_vs_30m] [--iterations 6]

Writes benchmark/results/hard_map_sps.json; rows of maps not measured this time stay as they were.
"""

import argparse
import json
import os
import platform
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import ROOT, merge_rows, train_sps  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-ids", nargs="+", default=["27m_vs_30m"])
    parser.add_argument("--iterations", type=int, default=6, help="training iterations per map (the first is excluded)")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "hard_map_sps.json"))
    opts = parser.parse_args(argv)
    rows = []
    for env_id in opts.env_ids:
        train = train_sps(env_id, opts.iterations, ["--no-cuda"], script="mappo_rnn")
        row = dict(env_id=env_id, script="mappo_rnn.py", setting="paper (Table 12)", sps=train["sps"])
        row.update(batch=train["batch"], iterations=opts.iterations, hours_per_10m=1e7 / train["sps"] / 3600)
        row.update(machine=f"{os.cpu_count()}-core CPU ({platform.machine()})", torch_threads=torch.get_num_threads())
        rows.append(dict(row, date=time.strftime("%Y-%m-%d")))
        print(json.dumps(rows[-1]), flush=True)
    rows = merge_rows(opts.out, rows)
    with open(opts.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
