"""mappo_async_seed.py beside mappo.py at the same number of envs: env steps trained per second (SPS), each run alone,
one after the other, on three kinds of env:

- a latency-bound env (simulated): SMAX 3m whose every env step also waits --delay seconds in time.sleep, using no
  CPU, as a slow simulator would (a split of k envs waits k x delay);
- SMAX 3m as it is (all envs of a process in one jitted call);
- SMAClite 2s3z, a CPU-bound simulator in pure Python (SMAClite has no 3m; 2s3z is its smallest map).

    python benchmark/measure/async_throughput.py                 # every row (about an hour on 2 cores)
    python benchmark/measure/async_throughput.py --envs sim-3m   # one kind

SPS is the steady state: env steps between the first and the last update over the wall time between them (start-up,
compilation and the first rollout left out; no evaluation). Each row also has where the time went, per update: the
learner's update and its wait for a rollout, the server's inference, and env stepping summed over the clients.
Writes benchmark/results/async_throughput.json, one row per run; benchmark/results/README.md's table is
generated from it.

The simulated env is run through this file (`--slowed DELAY SCRIPT ARGS...` wraps the script's make_env), so an
async run goes as a learner and separate client processes (--role learner / client) on loopback.
"""

import argparse
import glob
import importlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "benchmark", "results", "async_throughput.json")
ENVS = {  # name -> label, env flags, the async script's own (SMAClite: one env worker process per split, where mappo.py
    # has one per core), seconds of sleep per env step, updates per run
    "sim-3m": ("simulated: 2 ms sleep per env step, 3m's shapes", ["--env-id", "3m"], [], 0.002, 5),
    "3m": ("3m", ["--env-id", "3m"], [], 0.0, 8),
    "smaclite-2s3z": ("smaclite/2s3z", ["--env-id", "smaclite/2s3z"], ["--num-workers", "1"], 0.0, 4),
}
LAYOUTS = [(2, 1), (2, 2), (4, 1), (4, 2)]  # async clients x splits, beside mappo.py, at --num-envs envs


class SleepEnv:
    """The simulated latency-bound env: every env step is delay seconds of time.sleep (no CPU), and nothing else is
    computed: observations and states are fixed noise of the shapes of the env it stands in for, every action is
    available, every agent alive, an episode lasts 60 steps (3m's limit) and ends in a truncation."""

    continuous = False  # discrete actions, as 3m's

    def __init__(self, like, delay: float, seed: int):
        self.num_envs, self.num_agents, self.num_actions = like.num_envs, like.num_agents, like.num_actions
        self.obs_dim, self.state_dim, self.has_wins, self.delay = like.obs_dim, like.state_dim, like.has_wins, delay
        E, A, rng = self.num_envs, self.num_agents, np.random.default_rng(seed)
        self.out = dict(
            obs=rng.standard_normal((E, A, self.obs_dim), np.float32), avail=np.ones((E, A, self.num_actions), bool)
        )
        self.out.update(env_state=rng.standard_normal((E, self.state_dim), np.float32), alive=np.ones((E, A), bool))
        self.t = 0

    def reset(self) -> dict:
        return dict(self.out)

    def step(self, actions) -> dict:
        time.sleep(self.delay * self.num_envs)  # one env after another, as a simulator that steps them in turn
        self.t += 1
        ended = np.full(self.num_envs, self.t % 60 == 0)
        out = dict(self.out, reward=np.zeros(self.num_envs, np.float32), terminated=np.zeros_like(ended))
        out.update(truncated=ended, won=np.zeros_like(ended), final_obs=self.out["obs"], final_state=self.out["env_state"])
        return dict(out, final_alive=self.out["alive"])

    def close(self):
        pass


def simulated(delay: float, script: str, argv: list[str]):
    """Runs a script (mappo.py, or a role of mappo_async_seed.py) on SleepEnvs in place of its envs"""
    sys.path.insert(0, ROOT)
    module = importlib.import_module(os.path.basename(script)[: -len(".py")])
    make_env = module.make_env
    module.make_env = lambda env_id, num_envs, seed, *rest: SleepEnv(make_env(env_id, num_envs, seed), delay, seed)
    args, ckpt = module.parse_args(argv)
    module.client(args) if getattr(args, "role", "all") == "client" else module.train(args, ckpt)


def scalars(run_dir: str) -> dict:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(script: str, flags: list[str], delay: float, clients: int) -> dict:
    """One run, alone, in a temporary folder -> SPS and per-update times (means over the updates after the first)"""
    python = [sys.executable, *([os.path.abspath(__file__), "--simulated", str(delay)] if delay else [])]
    cmd = [*python, os.path.join(ROOT, script), *flags]
    with tempfile.TemporaryDirectory() as tmp:
        if delay and script == "mappo_async_seed.py":  # the clients through this file too
            net = ["--master-port", str(free_port())]
            procs = [subprocess.Popen([*cmd, "--role", "learner", *net], cwd=tmp)]
            client = [*python, os.path.join(ROOT, script), "--role", "client", *net, "--rank"]
            procs += [subprocess.Popen([*client, str(c + 1)], cwd=tmp) for c in range(clients)]
            assert [p.wait() for p in procs] == [0] * len(procs), cmd
        else:
            subprocess.run(cmd, cwd=tmp, check=True)
        s = scalars(glob.glob(os.path.join(tmp, "runs", "*"))[0])
    sps = s["charts/learning_rate"]  # logged at every update
    row = dict(sps=(sps[-1][0] - sps[0][0]) / (sps[-1][1] - sps[0][1]), updates=len(sps))
    for name, tag in dict(update_s="time/update", env_s="time/env", inference_s="time/inference").items():
        row[name] = float(np.mean([v for *_, v in s[tag][1:]])) if tag in s else None
    for name, tag in dict(wait_s="time/learner_wait", policy_lag="stats/policy_lag", batch="stats/server_batch").items():
        row[name] = float(np.mean([v for *_, v in s[tag][1:]])) if tag in s else None
    return row


def main():
    if sys.argv[1:2] == ["--simulated"]:
        return simulated(float(sys.argv[2]), sys.argv[3], sys.argv[4:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", choices=list(ENVS), default=list(ENVS))
    parser.add_argument("--num-envs", type=int, default=8, help="envs of every run (mappo.py's SMAC default)")
    parser.add_argument("--out", default=OUT)
    opts = parser.parse_args()
    rows = json.load(open(opts.out)) if os.path.exists(opts.out) else []
    for name in opts.envs:
        label, env_flags, async_flags, delay, updates = ENVS[name]
        if name.startswith("smaclite"):
            try:
                import smaclite  # noqa: F401
            except (ImportError, OSError) as e:
                print(f"skipping {label}: SMAClite is not installed ({e})")
                continue
        rows = [r for r in rows if r["env"] != label]  # this env's rows are measured again
        common = [*env_flags, "--no-cuda", "--num-envs", str(opts.num_envs), "--eval-interval", "0"]
        common += ["--total-timesteps", str(updates * opts.num_envs * 400)]  # 400 steps: the SMAC rollout
        runs = [("mappo.py", None, None)] + [("mappo_async_seed.py", c, m) for c, m in LAYOUTS]
        for script, clients, splits in runs:
            layout = ["--num-clients", str(clients), "--num-splits", str(splits), *async_flags] if clients else []
            row = dict(env=label, script=script, clients=clients, splits=splits, envs=opts.num_envs, simulated=delay > 0)
            row.update(measure(script, [*common, *layout], delay, clients))
            row["command"] = " ".join(["python", f"{script}", *common, *layout])
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(opts.out, "w") as f:  # after every run: an interrupted benchmark keeps what it measured
                json.dump(rows, f, indent=1)
    print(table(rows))


def table(rows: list[dict]) -> str:
    """The table of benchmark/results/README.md (update_readme.py calls this)"""
    out = [
        "| env | script | clients x splits | envs | SPS | vs mappo.py | vs 1 split | per update (s): update / learner "
        "wait / inference / env steps (all clients) | policy lag |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: r["env"].startswith("simulated")):  # real envs first, in their order
        base = next(b["sps"] for b in rows if b["env"] == r["env"] and b["script"] == "mappo.py")
        one = [b["sps"] for b in rows if b["env"] == r["env"] and b["clients"] == r["clients"] and b["splits"] == 1]
        layout = f"{r['clients']} x {r['splits']}" if r["script"] != "mappo.py" else "-"
        times = " / ".join("-" if r.get(k) is None else f"{r[k]:.2f}" for k in ("update_s", "wait_s", "inference_s", "env_s"))
        lag = "-" if r.get("policy_lag") is None else f"{r['policy_lag']:.2f}"
        vs_one = f"{r['sps'] / one[0]:.2f}" if one and r["script"] != "mappo.py" else "-"
        out.append(
            f"| {r['env']} | {r['script']} | {layout} | {r['envs']} | {r['sps']:.0f} | {r['sps'] / base:.2f} | {vs_one} "
            f"| {times} | {lag} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
