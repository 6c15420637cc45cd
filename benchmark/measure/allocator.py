"""The update's time with glibc's default malloc settings and with MALLOC_TOP_PAD_ (what benchmark/mappo.sh sets for the
runs it starts). PyTorch's CPU tensors come from malloc; on the hard SMAX maps the update makes tensors of tens of MB,
and by default glibc hands such memory back to the kernel when it is freed, so the next update's tensors fault in
fresh pages that the kernel zeroes first. A large top pad keeps the freed heap mapped for reuse. The numbers a run
logs do not change: only where its memory comes from.

mappo_rnn.py with the paper's settings (evaluation off), --repeats runs of each side alternating (default, padded,
default, ...) so that both see the same machine; the first iteration of every run excluded; minor page faults counted
over each whole run. With other work on the machine, set OMP_NUM_THREADS=1 (the header names the setting).

    python benchmark/measure/allocator.py [--env-ids 10m_vs_11m 5m_vs_6m] [--iterations 6] [--repeats 2]

Writes benchmark/results/allocator.md and .json: per run its seconds per update and per iteration and its page
faults; per map the medians and the padded update's over the default's.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import ROOT, train_sps, write_results  # noqa: E402

TOP_PAD = str(4 << 30)  # bytes, benchmark/mappo.sh's default: above the update's peak heap on every hard map
SIDES = {"glibc default": {}, f"MALLOC_TOP_PAD_={TOP_PAD}": {"MALLOC_TOP_PAD_": TOP_PAD}}


def run(env_id: str, iterations: int, env: dict) -> dict:
    """train_sps of mappo_rnn.py in a child with `env` added to this process's environment, and its minor page faults"""
    saved = dict(os.environ)
    os.environ.pop("MALLOC_TOP_PAD_", None)  # the default side runs without it, whatever this shell set
    os.environ.update(env)
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    try:
        row = train_sps(env_id, iterations, ["--no-cuda"], script="mappo_rnn")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return dict(row, minor_page_faults=resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - faults)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-ids", nargs="+", default=["10m_vs_11m", "5m_vs_6m"])
    parser.add_argument("--iterations", type=int, default=6, help="training iterations per run (the first is excluded)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side per map, alternating")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "allocator"))
    opts = parser.parse_args(argv)
    runs, maps = [], []
    for env_id in opts.env_ids:
        for repeat in range(opts.repeats):
            for side, env in SIDES.items():
                runs.append(dict(env_id=env_id, side=side, repeat=repeat, **run(env_id, opts.iterations, env)))
                print(json.dumps(runs[-1]), flush=True)
        mine = [r for r in runs if r["env_id"] == env_id]
        median = {s: {k: float(np.median([r[k] for r in mine if r["side"] == s])) for k in ("update_s", "sps")} for s in SIDES}
        default, padded = (median[s] for s in SIDES)
        maps.append(dict(env_id=env_id, median=median, update_ratio=padded["update_s"] / default["update_s"]))
    threads = f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} " if "OMP_NUM_THREADS" in os.environ else ""
    command = f"{threads}python benchmark/measure/allocator.py --env-ids {' '.join(opts.env_ids)} --iterations "
    command += f"{opts.iterations} --repeats {opts.repeats}"
    lines = [
        f"mappo_rnn.py, paper settings, evaluation off, measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores, "
        f"torch on cpu: `{command}`; each row one run, means over its iterations after the first.",
        "",
        "| map | malloc | run | s / update | s / iteration | SPS | minor page faults |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['env_id']} | {r['side']} | {r['repeat'] + 1} | {r['update_s']:.2f} | {r['iteration_s']:.2f} | "
            f"{r['sps']:.0f} | {r['minor_page_faults']:,} |"
            for r in runs
        ),
        "",
        *(
            f"{m['env_id']}: median update {m['median'][list(SIDES)[1]]['update_s']:.2f} s padded, "
            f"{m['median']['glibc default']['update_s']:.2f} s by default ({m['update_ratio']:.2f}x)."
            for m in maps
        ),
    ]
    write_results(opts.out, lines, dict(command=command, runs=runs, maps=maps, date=time.strftime("%Y-%m-%d")))


if __name__ == "__main__":
    main()
