"""The update's time eager and with --compile (torch.compile of the update's losses), in alternating runs of each
script on each env, steady state (throughput.py's train_sps: the first iteration, which compiles, excluded), and how
long the first, compiling update took. Writes benchmark/results/compile.json and .md.

    python benchmark/measure/compile_speed.py [--cases mappo:3m mappo_rnn:5m_vs_6m mappo:hanabi mappo:vmas/navigation]
        [--iterations 6] [--repeats 2] [--cuda]

Each run is a fresh process with one torch thread unless OMP_NUM_THREADS says otherwise; pin it to a free core
(taskset) when other runs share the machine.
"""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import ROOT, train_sps  # noqa: E402

CASES = ["mappo:3m", "mappo_rnn:5m_vs_6m", "mappo:hanabi", "mappo:vmas/navigation"]


def machine(cuda: bool) -> str:
    if cuda:
        import torch

        return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    threads = os.environ.get("OMP_NUM_THREADS", "all")
    return f"{os.cpu_count()}-core CPU ({model or platform.machine()}), torch threads: {threads}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=CASES, help="script:env_id")
    parser.add_argument("--iterations", type=int, default=6, help="iterations per run (the first is excluded)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each mode, alternating eager and compiled")
    parser.add_argument("--cuda", action="store_true", help="train on the GPU")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "compile"))
    opts = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    device = ["--cuda" if opts.cuda else "--no-cuda"]
    rows = []
    for case in opts.cases:
        script, env_id = case.split(":", 1)
        runs = {"eager": [], "compiled": []}
        for _ in range(opts.repeats):
            for mode, flag in (("eager", "--no-compile"), ("compiled", "--compile")):
                runs[mode].append(train_sps(env_id, opts.iterations, [*device, flag], script))
        row = dict(script=f"{script}.py", env_id=env_id, batch=runs["eager"][0]["batch"])
        for mode, rs in runs.items():
            row[f"{mode}_update_s"] = float(np.median([r["update_s"] for r in rs]))
            row[f"{mode}_sps"] = float(np.median([r["sps"] for r in rs]))
        row["compile_first_update_s"] = float(np.median([r["first_update_s"] for r in runs["compiled"]]))
        row["update_ratio"] = row["compiled_update_s"] / row["eager_update_s"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    command = f"python benchmark/measure/compile_speed.py --cases {' '.join(opts.cases)} --iterations {opts.iterations}"
    command += f" --repeats {opts.repeats}"
    head = f"measured {time.strftime('%Y-%m-%d')} on {machine(opts.cuda)}: `{command}`"
    lines = [
        head,
        "",
        "| script | env | env steps per update | update, eager (s) | update, compiled (s) | compiled / eager "
        "| first update, compiling (s) | SPS eager | SPS compiled |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['script']} | {r['env_id']} | {r['batch']} | {r['eager_update_s']:.3f} | {r['compiled_update_s']:.3f} "
            f"| {r['update_ratio']:.2f} | {r['compile_first_update_s']:.1f} | {r['eager_sps']:.0f} | {r['compiled_sps']:.0f} |"
        )
    with open(opts.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(opts.out + ".json", "w") as f:
        json.dump(dict(machine=machine(opts.cuda), command=command, rows=rows), f, indent=1)
        f.write("\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
