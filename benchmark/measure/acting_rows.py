"""Hanabi's update with and without --acting-rows-only (the waiting players' rows left out), measured in one run of
this script: mappo.py with the Hanabi preset, --repeats runs of each alternating (old, new, old, new, ...) so that
both sides see the same machine, the first iteration of every run excluded. With other work on the machine, set
OMP_NUM_THREADS=1: a run of one thread is less disturbed by it (the header names the setting).

    python benchmark/measure/acting_rows.py [--env-id hanabi] [--iterations 6] [--repeats 2]

Writes benchmark/results/acting_rows.md and .json: seconds per iteration and per update of each run, their medians,
and the new update's median over the old one's.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import ROOT, train_sps, write_results  # noqa: E402

SIDES = {"all rows": ["--no-acting-rows-only"], "acting rows only": ["--acting-rows-only"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="hanabi")
    parser.add_argument("--iterations", type=int, default=6, help="training iterations per run (the first is excluded)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side, alternating")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "acting_rows"))
    opts = parser.parse_args()
    runs = []
    for repeat in range(opts.repeats):
        for side, flags in SIDES.items():
            runs.append(dict(side=side, repeat=repeat, **train_sps(opts.env_id, opts.iterations, ["--no-cuda", *flags])))
            print(json.dumps(runs[-1]), flush=True)
    median = {
        s: {k: float(np.median([r[k] for r in runs if r["side"] == s])) for k in ("update_s", "iteration_s")} for s in SIDES
    }
    ratio = median["acting rows only"]["update_s"] / median["all rows"]["update_s"]
    threads = f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} " if "OMP_NUM_THREADS" in os.environ else ""
    command = f"{threads}python benchmark/measure/acting_rows.py --env-id {opts.env_id} --iterations {opts.iterations} --repeats {opts.repeats}"
    lines = [
        f"{opts.env_id}, mappo.py's preset, measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores, torch on cpu: "
        f"`{command}`; each row one run, means over its iterations after the first.",
        "",
        "| rows in the update | run | s / iteration | s / update |",
        "|---|---|---|---|",
        *(f"| {r['side']} | {r['repeat'] + 1} | {r['iteration_s']:.2f} | {r['update_s']:.2f} |" for r in runs),
        "",
        f"Median update: {median['acting rows only']['update_s']:.2f} s with acting rows only, "
        f"{median['all rows']['update_s']:.2f} s with all rows: {ratio:.2f}x.",
    ]
    write_results(opts.out, lines, dict(runs=runs, median=median, update_ratio=ratio))


if __name__ == "__main__":
    main()
