"""mappo_async_seed.py's throughput with 1, 2 and 3 env splits per client, next to its --no-async mode and mappo.py,
all at the same env and total number of envs, each run alone, one after the other.

    python benchmark/async_throughput.py [--env-ids 3m smaclite/2s3z] [--num-envs 12] [--iterations 6] [--cuda]

FPS is the steady state: env steps between the first and the last update over the wall time between them (the first
update, with JIT compilation and process start-up, is left out); no evaluation runs. --num-envs must divide by
num_clients x splits for every split count (12 = 2 clients x 1, 2 or 3 splits x 6, 3 or 2 envs). Where the time goes
is read from the runs' own timers: per update, the learner's wait for a batch, its update, and the server's inference;
the clients' env time summed over clients. Writes benchmark/results/async_throughput.md and .json.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from throughput import write_results  # benchmark/ is on the path of a script run from it

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scalars(run_dir: str) -> dict:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def measure(label: str, cmd: list[str], log_path: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp, open(log_path, "w") as log:
        start = time.time()
        subprocess.run(cmd, cwd=tmp, check=True, stdout=log, stderr=subprocess.STDOUT)
        wall = time.time() - start
        s = scalars(glob.glob(os.path.join(tmp, "runs", "*"))[0])
    sps = s["charts/SPS"]
    row = dict(config=label, fps=(sps[-1][0] - sps[0][0]) / (sps[-1][1] - sps[0][1]), updates=len(sps), wall_s=wall)
    per_update = (sps[-1][1] - sps[0][1]) / (len(sps) - 1)
    row["update_interval_s"] = per_update

    def mean_after_first(tag):
        return float(np.mean([v for _, _, v in s[tag][1:]])) if tag in s else float("nan")

    row["learner_update_s"] = mean_after_first("time/update")
    if "stats/time_learner_wait" in s:  # mappo_async_seed.py
        row["learner_wait_s"] = mean_after_first("stats/time_learner_wait")
        row["inference_s"] = mean_after_first("stats/time_inference")
        row["client_env_s"] = mean_after_first("stats/time_env")  # client seconds in env steps per update
        row["policy_lag"] = mean_after_first("stats/policy_lag")
        row["server_batch"] = mean_after_first("stats/server_batch_size")
    else:  # mappo.py
        row["env_s"] = mean_after_first("time/env")
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-ids", nargs="+", default=["3m", "smaclite/2s3z"])
    parser.add_argument("--num-envs", type=int, default=12)
    parser.add_argument("--num-clients", type=int, default=2)
    parser.add_argument("--splits", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--iterations", type=int, default=6, help="updates per run (the first is left out)")
    parser.add_argument(
        "--smaclite-iterations", type=int, default=3, help="updates per SMAClite run (its envs step ~200 SPS here)"
    )
    parser.add_argument("--cuda", action="store_true", help="networks and updates on the GPU (envs stay on the CPU)")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "async_throughput"))
    opts = parser.parse_args()
    if min(opts.iterations, opts.smaclite_iterations) < 2:
        parser.error("--iterations and --smaclite-iterations must be >= 2 (the first update is left out)")
    os.makedirs(opts.out, exist_ok=True)
    rows = []
    for env_id in opts.env_ids:
        if env_id.startswith("smaclite/"):
            try:
                import smaclite  # noqa: F401
            except Exception as e:
                print(f"skipping {env_id}: SMAClite is not installed ({e})")
                continue
        iterations = opts.smaclite_iterations if env_id.startswith("smaclite/") else opts.iterations
        common = ["--env-id", env_id, "--num-envs", str(opts.num_envs), "--eval-interval", "0"]
        common += ["--cuda" if opts.cuda else "--no-cuda"]
        common += ["--total-timesteps", str(iterations * opts.num_envs * 400)]  # 400 steps: the SMAC rollout length
        # one env worker per split: a client steps one split at a time, so that is one busy core per client
        workers = ["--num-workers", "1"] if env_id.startswith("smaclite/") else []
        runs = [("mappo.py", [os.path.join(ROOT, "mappo.py"), *common])]
        async_cmd = [os.path.join(ROOT, "mappo_async_seed.py"), *common, *workers]
        runs.append(("async --no-async (1 split)", [*async_cmd, "--no-async", "--num-splits", "1"]))
        clients = ["--num-clients", str(opts.num_clients)]
        for m in opts.splits:
            runs.append((f"async, {m} split{'s' * (m > 1)}", [*async_cmd, *clients, "--num-splits", str(m)]))
        for label, cmd in runs:
            name = label.replace(" ", "_").translate(str.maketrans("", "", ",()"))  # a plain file name
            log = os.path.join(opts.out, f"{env_id.replace('/', '-')}__{name}.log")
            row = dict(env_id=env_id, num_envs=opts.num_envs, **measure(label, [sys.executable, *cmd], log))
            rows.append(row)
            print(json.dumps(row), flush=True)
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores, torch on {'cuda' if opts.cuda else 'cpu'}, "
        f"{opts.num_clients} clients: "
        f"`python benchmark/async_throughput.py --env-ids {' '.join(opts.env_ids)} --num-envs {opts.num_envs} "
        f"--num-clients {opts.num_clients} --splits {' '.join(map(str, opts.splits))} --iterations {opts.iterations} "
        f"--smaclite-iterations {opts.smaclite_iterations}{' --cuda' if opts.cuda else ''}`",
        "",
        "Per update (seconds): the learner's wait for a batch and its update; the server's inference; env stepping summed "
        "over the clients (mappo.py: its env time).",
        "",
        "| env | envs | config | FPS | vs 1 split | vs mappo.py | s between updates | learner wait | update | inference "
        "| env (all clients) | policy lag |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        base = next(b["fps"] for b in rows if b["env_id"] == r["env_id"] and b["config"] == "mappo.py")
        one = next((b["fps"] for b in rows if b["env_id"] == r["env_id"] and b["config"] == "async, 1 split"), np.nan)
        lines.append(
            f"| {r['env_id']} | {r['num_envs']} | {r['config']} | {r['fps']:.0f} | {r['fps'] / one:.2f} "
            f"| {r['fps'] / base:.2f} | {r['update_interval_s']:.2f} | {r.get('learner_wait_s', float('nan')):.2f} "
            f"| {r['learner_update_s']:.2f} | {r.get('inference_s', float('nan')):.2f} "
            f"| {r.get('client_env_s', r.get('env_s', float('nan'))):.2f} | {r.get('policy_lag', 0.0):.2f} |"
        )
    write_results(opts.out, lines, rows)


if __name__ == "__main__":
    main()
