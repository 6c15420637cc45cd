"""Training speed on VMAS (issue 48): mappo.py and ippo.py against BenchMARL's MAPPO and IPPO, each run alone on this
machine, one after the other, with its own VMAS config, on the CPU: env steps trained per second, evaluations left
out on both sides (ours: the SPS the script logs, its training time only; BenchMARL: frames over its total time less
its evaluations' time, benchmark/benchmarl/benchmarl_baseline.py). Start-up (imports, VMAS construction) counts on
neither side.

    python benchmark/measure/vmas_speed.py [--tasks navigation balance] [--frames 60000]

Writes benchmark/results/vmas_speed.json. BENCHMARL_PYTHON names BenchMARL's venv (default /work/benchmarl-venv).
Nothing else should run meanwhile: it measures the machine.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ours(script: str, task: str, frames: int) -> float:
    """The last SPS that SCRIPT prints while training on vmas/TASK, evaluation off"""
    cmd = [sys.executable, os.path.join(ROOT, script), "--env-id", f"vmas/{task}", "--total-timesteps", str(frames)]
    with tempfile.TemporaryDirectory() as folder:  # its runs/ folder goes here
        out = subprocess.run(cmd + ["--eval-interval", "0", "--no-cuda"], cwd=folder, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return float(re.findall(r"SPS (\d+)", out.stdout)[-1])


def benchmarl(python: str, algorithm: str, task: str, frames: int) -> float:
    """BenchMARL's frames per second, evaluations left out (one evaluation, at the end)"""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "run.json")
        cmd = [python, os.path.join(ROOT, "benchmark", "benchmarl", "benchmarl_baseline.py"), "--algorithm", algorithm]
        cmd += ["--task", task, "--seed", "1", "--max-n-frames", str(frames), "--evaluation-interval", str(frames)]
        out = subprocess.run(cmd + ["--out", path], cwd=folder, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"error: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
        with open(path) as f:
            return json.load(f)["meta"]["sps"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["navigation", "balance"])
    parser.add_argument("--frames", type=int, default=60000, help="env steps per run (BenchMARL: 10 batches of 6000)")
    parser.add_argument("--benchmarl-python", default=os.environ.get("BENCHMARL_PYTHON", "/work/benchmarl-venv/bin/python"))
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "vmas_speed.json"))
    opts = parser.parse_args(argv)
    rows = []
    for task in opts.tasks:
        for algorithm in ("mappo", "ippo"):
            row = dict(task=task, algorithm=algorithm, frames=opts.frames)
            row["ours_sps"] = ours(f"{algorithm}.py", task, opts.frames)
            row["benchmarl_sps"] = benchmarl(opts.benchmarl_python, algorithm, task, opts.frames)
            row["ratio"] = row["ours_sps"] / row["benchmarl_sps"]
            rows.append(row)
            print(f"vmas/{task} {algorithm}: ours {row['ours_sps']:.0f}, BenchMARL {row['benchmarl_sps']:.0f} env steps/s")
    machine = f"{os.cpu_count()}-core CPU ({platform.machine()}), no GPU used"
    with open(opts.out, "w") as f:
        json.dump(dict(machine=machine, command="python benchmark/measure/vmas_speed.py", rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
