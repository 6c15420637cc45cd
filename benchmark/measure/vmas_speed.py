"""Training speed on VMAS (issues 48, 113): mappo.py and ippo.py against BenchMARL's MAPPO and IPPO on the CPU, env
steps trained per second.

Two comparisons, per task and algorithm:
- at equal work: both sides at one shared setting, SHARED below (60 envs x 100 steps = 6,000 frames per batch, 10
  epochs of one 6,000-frame mini-batch, actor and critic of two 64-wide tanh layers): what the implementations cost;
- each with its own configuration: ours VMAS_PRESET (mappo.py's: the shared setting itself, so the same timings serve
  both), BenchMARL its base_experiment.yaml (10 envs per worker, 45 passes of 15 mini-batches of 400 frames: 675
  gradient steps per batch of 6,000; two 256-wide layers): a comparison of configurations, not of implementations.
Every run is its own process, pinned to one core (taskset -c CORE) with one thread (OMP_NUM_THREADS=1,
MKL_NUM_THREADS=1: torch's intra-op threads), evaluation off on both sides; the runs of a task and algorithm alternate
(ours, BenchMARL shared, BenchMARL own, then again) --repeats times; per side the median and the range.

The speed: env steps over the training time after the first batch, the first batch (torch's and VMAS's warm-up) and
the start-up (imports, VMAS construction) left out on both sides: ours, the SPS the script logs (its first iteration
is its warm-up, left out); BenchMARL, from benchmark/benchmarl/benchmarl_baseline.py's rows (its cumulative
timers/total_time: frames after the first batch over the time after it).

    python benchmark/measure/vmas_speed.py [--tasks navigation balance] [--frames 60000] [--own-frames 18000] \\
        [--repeats 3] [--core 1]

Writes benchmark/results/vmas_speed.json. BENCHMARL_PYTHON names BenchMARL's venv (default /work/benchmarl-venv). The
pinned core should be free of other work meanwhile.
"""

import argparse
import json
import os
import platform
import re
import runpy
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
provenance = runpy.run_path(os.path.join(ROOT, "benchmark", "provenance.py"))["provenance"]

# the shared setting: ours' flags (mappo.py's and ippo.py's) and the BenchMARL runner's, the same work per batch
SHARED = dict(
    name="60 envs x 100 steps, 6,000 frames per batch; 10 epochs of one 6,000-frame mini-batch; actor and critic of two "
    "64-wide tanh layers",
    ours=["--num-envs", "60", "--num-steps", "100", "--update-epochs", "10", "--num-minibatches", "1"]
    + ["--hidden-dim", "64", "--num-layers", "2", "--activation", "tanh"],
    benchmarl=["--n-envs-per-worker", "60", "--frames-per-batch", "6000", "--minibatch-iters", "10"]
    + ["--minibatch-size", "6000", "--num-cells", "64", "64"],
    # what no flag makes equal: the implementations' own
    unequal="ours add LayerNorms (on the input and after each hidden layer, as the MAPPO code's MLPBase; BenchMARL's "
    "MLP has none) and a one-hot agent id to the inputs, and ours' MAPPO critic runs once per agent on all agents' "
    "observations (BenchMARL's shared centralised critic once per env step); BenchMARL's policy is a tanh-squashed "
    "Gaussian with a state-dependent scale (ours: a Gaussian with a learned state-independent log std); learning rates, "
    "clipping, GAE lambda and entropy bonus stay each side's own (little or no work per batch)",
)
OWN = dict(
    ours="VMAS_PRESET: the shared setting",
    benchmarl="base_experiment.yaml: 6,000 frames per batch from 10 envs, 45 passes of 15 mini-batches of 400 frames "
    "(675 gradient steps per batch), two 256-wide tanh layers",
)


def pinned(cmd: list, core) -> list:
    return cmd if core is None else ["taskset", "-c", str(core), *cmd]


def one_thread(threads: int) -> dict:
    return dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))


def ours(script: str, task: str, frames: int, core, threads: int) -> float:
    """The last SPS that SCRIPT prints while training on vmas/TASK at the shared setting, evaluation off"""
    cmd = [sys.executable, os.path.join(ROOT, script), "--env-id", f"vmas/{task}", "--total-timesteps", str(frames)]
    cmd += ["--eval-interval", "0", "--no-cuda", *SHARED["ours"]]
    with tempfile.TemporaryDirectory() as folder:  # its runs/ folder goes here
        out = subprocess.run(pinned(cmd, core), cwd=folder, capture_output=True, text=True, env=one_thread(threads))
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return float(re.findall(r"SPS (\d+)", out.stdout)[-1])


def after_first_batch(rows: list[dict]) -> float:
    """Frames per second after the first batch, from the runner's rows (BenchMARL's cumulative total_time; the time of
    any evaluation after the first batch left out)"""
    if len(rows) < 2:
        raise ValueError("at least two batches are needed: the first is left out")
    seconds = rows[-1]["wall_time"] - rows[0]["wall_time"] - sum(r.get("eval_time", 0.0) for r in rows[1:])
    return (rows[-1]["step"] - rows[0]["step"]) / seconds


def benchmarl(python: str, algorithm: str, task: str, frames: int, core, threads: int, shared: bool) -> float:
    """BenchMARL's frames per second after its first batch, evaluation off; at the shared setting or its own"""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "run.json")
        cmd = [python, os.path.join(ROOT, "benchmark", "benchmarl", "benchmarl_baseline.py"), "--algorithm", algorithm]
        cmd += ["--task", task, "--seed", "1", "--max-n-frames", str(frames), "--no-evaluation"]
        cmd += SHARED["benchmarl"] if shared else []
        out = subprocess.run(pinned(cmd + ["--out", path], core), cwd=folder, capture_output=True, text=True,
                             env=one_thread(threads))  # fmt: skip
        if out.returncode != 0:
            sys.exit(f"error: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
        with open(path) as f:
            return after_first_batch(json.load(f)["rows"])


def summary(timings: list[float]) -> dict:
    """The timings of one side, in the order run, their median and range"""
    return dict(sps=timings, median=statistics.median(timings), range=[min(timings), max(timings)])


def machine() -> str:
    model = platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        model = names[0] if names else model
    return f"{os.cpu_count()}-core CPU ({model}), no GPU used"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["navigation", "balance"])
    parser.add_argument("--frames", type=int, default=60000, help="env steps per run at the shared setting (10 batches)")
    parser.add_argument(
        "--own-frames", type=int, default=18000, help="env steps per BenchMARL run at its own setting (3 batches)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timings per side, alternated")
    parser.add_argument("--core", type=int, default=1, help="the core every run is pinned to (-1: not pinned)")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS and MKL_NUM_THREADS of every run")
    parser.add_argument("--no-own", action="store_true", help="the equal-work timings only")
    parser.add_argument("--benchmarl-python", default=os.environ.get("BENCHMARL_PYTHON", "/work/benchmarl-venv/bin/python"))
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "vmas_speed.json"))
    opts = parser.parse_args(argv)
    core = None if opts.core < 0 else opts.core
    start, rows = time.time(), []
    for task in opts.tasks:
        for algorithm in ("mappo", "ippo"):
            timings = dict(ours=[], benchmarl=[], benchmarl_own=[])
            for _ in range(opts.repeats):  # alternated: a slow spell of the machine falls on both sides
                timings["ours"].append(ours(f"{algorithm}.py", task, opts.frames, core, opts.threads))
                timings["benchmarl"].append(
                    benchmarl(opts.benchmarl_python, algorithm, task, opts.frames, core, opts.threads, True)
                )
                if not opts.no_own:
                    timings["benchmarl_own"].append(
                        benchmarl(opts.benchmarl_python, algorithm, task, opts.own_frames, core, opts.threads, False)
                    )
                print(f"vmas/{task} {algorithm}: " + ", ".join(f"{k} {v[-1]:.0f}" for k, v in timings.items() if v))
            row = dict(task=task, algorithm=algorithm, ours=summary(timings["ours"]))
            row["benchmarl"] = summary(timings["benchmarl"])
            row["ratio"] = row["ours"]["median"] / row["benchmarl"]["median"]
            if not opts.no_own:
                row["benchmarl_own"] = summary(timings["benchmarl_own"])
                row["own_ratio"] = row["ours"]["median"] / row["benchmarl_own"]["median"]
            rows.append(row)
            print(f"vmas/{task} {algorithm}: ours/BenchMARL at equal work {row['ratio']:.2f}x")
    command = " ".join(["python benchmark/measure/vmas_speed.py", *(sys.argv[1:] if argv is None else argv)])
    result = dict(
        machine=machine(),
        command=command,
        pinning=f"taskset -c {core}" if core is not None else None,
        threads=opts.threads,
        setting=SHARED,
        own=None if opts.no_own else OWN,
        frames=opts.frames,
        own_frames=None if opts.no_own else opts.own_frames,
        repeats=opts.repeats,
        order="per task and algorithm: ours, BenchMARL shared, BenchMARL own, repeated",
        speed="env steps trained per second after the first batch, evaluation off, start-up left out",
        minutes=(time.time() - start) / 60,
        provenance=provenance(checkout=ROOT, packages=("torch", "vmas", "numpy")),
        rows=rows,
    )
    with open(opts.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
