"""Training throughput of the scripts as they were at a commit (--ref) against the working tree: the same runs of
throughput.py's train_sps (evaluation off, the first iteration left out), the two versions alternated --repeats times
per script and env, so a slow moment of the machine falls on both. For a change that must not slow training (issue
115's rewrite: "throughput unchanged"). Run it alone on the machine, or pinned to a core of its own (taskset -c N).

    python benchmark/measure/before_after.py --ref a842e88 [--scripts mappo ippo mappo_rnn] [--env-ids 3m]

Writes benchmark/results/before_after.json and prints a table: per script and env, each side's env steps per second
(median and range of its repeats) and after / before.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import ROOT, train_sps  # noqa: E402


def checkout(ref: str, folder: str, scripts: list[str]) -> None:
    """The scripts and popart.py as they were at ref, into folder"""
    for name in [f"{s}.py" for s in scripts] + ["popart.py"]:
        text = subprocess.run(["git", "show", f"{ref}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True)
        with open(os.path.join(folder, name), "w") as f:
            f.write(text.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", required=True, help="the commit to compare with (git rev)")
    parser.add_argument("--scripts", nargs="+", default=["mappo", "ippo", "mappo_rnn"])
    parser.add_argument("--env-ids", nargs="+", default=["3m"])
    parser.add_argument("--iterations", type=int, default=6, help="training iterations per run (the first is excluded)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side, alternated")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "before_after.json"))
    opts = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as before:
        checkout(opts.ref, before, opts.scripts)
        for script in opts.scripts:
            for env_id in opts.env_ids:
                sps = {"before": [], "after": []}
                for _ in range(opts.repeats):
                    for side, root in (("before", before), ("after", ROOT)):
                        run = train_sps(env_id, opts.iterations, ["--no-cuda"], script=script, root=root)
                        sps[side].append(run["sps"])
                row = dict(script=f"{script}.py", env_id=env_id, sps=sps)
                row["median"] = {side: float(np.median(v)) for side, v in sps.items()}
                row["ratio"] = row["median"]["after"] / row["median"]["before"]
                rows.append(row)
                print(json.dumps(row), flush=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--", *[f"{s}.py" for s in opts.scripts]], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    result = dict(
        ref=opts.ref,
        after=head.strip() + (" + uncommitted changes" if dirty else ""),
        date=time.strftime("%Y-%m-%d"),
        machine=f"{os.cpu_count()}-core CPU ({platform.machine()}), affinity {sorted(os.sched_getaffinity(0))}",
        command="python benchmark/measure/before_after.py " + " ".join(sys.argv[1:]),
        rows=rows,
    )
    with open(opts.out, "w") as f:
        json.dump(result, f, indent=1)
    for r in rows:
        spread = {side: f"{min(v):.0f}-{max(v):.0f}" for side, v in r["sps"].items()}
        print(f"{r['script']} {r['env_id']}: before {r['median']['before']:.0f} ({spread['before']}), after "
              f"{r['median']['after']:.0f} ({spread['after']}) env steps/s: {r['ratio']:.3f}x")  # fmt: skip


if __name__ == "__main__":
    main()
