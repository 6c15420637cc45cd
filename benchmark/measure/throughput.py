"""mappo.py's training throughput next to raw env stepping (uniformly random available actions) at the same number
of envs, measured in one run of this script, and where an iteration's time goes.

    python benchmark/measure/throughput.py [--env-ids 3m smaclite/2s3z hanabi vmas/navigation] [--iterations 8]

Writes benchmark/results/throughput.md and .json; rows of envs not measured this time stay as they were. Both sides run
on the CPU here unless --cuda is passed.
"""

import argparse
import glob
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
import mappo  # noqa: E402


def raw_sps(env_id: str, num_envs: int, steps: int, seed: int = 0, windows: int = 5) -> float:
    """Env steps per second of the vectorised adapter that mappo.py trains on, random available actions: the fastest
    of `windows` equal windows, so a slow moment of the machine does not flatter the ratio."""
    envs = mappo.make_env(env_id, num_envs, seed)
    rng = np.random.default_rng(seed)

    def step(nxt: dict) -> dict:  # one step of every env with uniformly random available actions
        if envs.continuous:  # (E,A,U) uniform in [-1, 1]
            return envs.step(rng.uniform(-1.0, 1.0, nxt["avail"].shape).astype(np.float32))
        return envs.step((rng.random(nxt["avail"].shape) * nxt["avail"]).argmax(-1))

    nxt = envs.reset()
    for _ in range(20):  # warm-up (SMAX compiles on the first call)
        nxt = step(nxt)
    best = float("inf")
    for _ in range(windows):
        start = time.perf_counter()
        for _ in range(max(1, steps // windows)):
            nxt = step(nxt)
        best = min(best, time.perf_counter() - start)
    envs.close()
    return max(1, steps // windows) * num_envs / best


def train_sps(env_id: str, iterations: int, extra: list[str], script: str = "mappo", root: str = ROOT) -> dict:
    """Steady-state SPS of mappo.py, or another top-level script with its flags (first iteration, with JIT compilation,
    excluded), its time split and the first update's time. root: the folder the script is run from (another version
    of the scripts: benchmark/measure/before_after.py)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    args, _ = importlib.import_module(script).parse_args(["--env-id", env_id, *extra])  # its batch, presets included
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.join(root, f"{script}.py"), "--env-id", env_id, "--eval-interval", "0"]
        cmd += ["--total-timesteps", str(iterations * args.num_envs * args.num_steps), *extra]
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        acc = EventAccumulator(glob.glob(os.path.join(tmp, "runs", "*"))[0])
        acc.Reload()
        sps = acc.Scalars("charts/learning_rate")  # logged at every update
        steady = (sps[-1].step - sps[0].step) / (sps[-1].wall_time - sps[0].wall_time)
        mean = {tag: float(np.mean([e.value for e in acc.Scalars(tag)][1:])) for tag in ("time/env", "time/update")}
        first_update = acc.Scalars("time/update")[0].value  # compiling included with --compile
    iteration = args.num_envs * args.num_steps / steady
    return dict(
        num_envs=args.num_envs,
        batch=args.num_envs * args.num_steps,
        sps=steady,
        iteration_s=iteration,
        env_s=mean["time/env"],
        update_s=mean["time/update"],
        other_s=iteration - mean["time/env"] - mean["time/update"],
        first_update_s=first_update,
    )


def merge_rows(path: str, rows: list[dict]) -> list[dict]:
    """The rows of the file at path (if any) in their order, each env's replaced by its new row, then the new envs'
    rows: one env can be measured again on its own without losing the others."""
    old = []
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    return list({**{r["env_id"]: r for r in old}, **{r["env_id"]: r for r in rows}}.values())


def write_results(out: str, lines: list[str], rows: list[dict]) -> None:
    """The table as OUT.md, the rows as OUT.json (the benchmark/ tools' outputs), and the table on stdout."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(out + ".json", "w") as f:
        json.dump(rows, f, indent=1)
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-ids", nargs="+", default=["3m", "smaclite/2s3z", "hanabi"])  # the README's rows
    parser.add_argument("--iterations", type=int, default=8, help="training iterations per env (the first is excluded)")
    parser.add_argument("--raw-steps", type=int, default=0, help="raw steps per env (0: as many as the training run)")
    parser.add_argument("--cuda", action="store_true", help="train on the GPU (raw stepping is always on the CPU)")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "throughput"))
    opts = parser.parse_args()
    rows = []
    for env_id in opts.env_ids:
        if env_id.startswith("smaclite/"):
            try:
                import smaclite  # noqa: F401
            except Exception as e:
                print(f"skipping {env_id}: SMAClite is not installed ({e})")
                continue
        train = train_sps(env_id, opts.iterations, ["--cuda" if opts.cuda else "--no-cuda"])
        steps = opts.raw_steps or (opts.iterations - 1) * train["batch"] // train["num_envs"]
        raw = raw_sps(env_id, train["num_envs"], steps)
        # the ratio that a rollout costing only raw stepping would give, with this run's update: a serial trainer's ceiling
        raw_iteration = train["batch"] / raw
        ceiling = raw_iteration / (raw_iteration + train["update_s"])
        rows.append(dict(env_id=env_id, raw_sps=raw, ratio=train["sps"] / raw, ceiling=ceiling, **train))
        print(json.dumps(rows[-1]), flush=True)
    measured = ", ".join(r["env_id"] for r in rows)
    rows = merge_rows(opts.out + ".json", rows)
    lines = [
        f"{measured} measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores, torch on "
        f"{'cuda' if opts.cuda else 'cpu'}: `python benchmark/measure/throughput.py --env-ids {' '.join(opts.env_ids)} --iterations "
        f"{opts.iterations}`; any other row is from an earlier run of it.",
        "",
        "| env | envs | raw env SPS | mappo.py SPS | ratio | ceiling | s / iteration: env | update "
        "| rest (inference, storage, GAE) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['env_id']} | {r['num_envs']} | {r['raw_sps']:.0f} | {r['sps']:.0f} | {r['ratio']:.2f} | {r['ceiling']:.2f} "
            f"| {r['env_s']:.3f} | {r['update_s']:.3f} | {r['other_s']:.3f} |"
        )
    lines += [
        "",
        "ceiling: the ratio if the rollout cost only raw stepping, with the update as measured; batch / raw SPS over that "
        "plus the update's seconds. A serial loop (rollout, then update) stays below it unless its envs step faster than "
        "they did alone.",
    ]
    write_results(opts.out, lines, rows)


if __name__ == "__main__":
    main()
