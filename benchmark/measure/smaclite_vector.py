"""SMAClite's envs on gymnasium's AsyncVectorEnv against the scripts' own worker pool (issue 115, item 1: take from a
library what it does where it is not slower). The same map, number of envs, seeds and uniformly random available
actions on both sides:
- pool: mappo.py's SMACliteVecEnv, min(envs, CPU cores) worker processes, each stepping a slice of the envs, one pipe
  message per worker and step;
- gymnasium: AsyncVectorEnv, one process per env (spawned, as the pool's), observations through shared memory,
  same-step autoreset (the final observation in info, as the adapter needs it), each env wrapped to give the adapter's arrays (observations, state,
  available actions, alive agents).
Start-up: seconds from construction through the first reset; stepping: env steps per second over --steps steps.
The two alternate --repeats times. Run it alone on the machine.

    python benchmark/measure/smaclite_vector.py [--map 2s3z] [--num-envs 8] [--steps 300] [--repeats 3]

Writes benchmark/results/smaclite_vector.json and prints a line per side.
"""

import argparse
import json
import os
import platform
import sys
import time

import gymnasium as gym
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
import mappo  # noqa: E402


class AdapterArrays(gym.Wrapper):
    """One SMAClite env giving what mappo.py's adapter gives: obs (A,O), state (S,), avail (A,U), alive (A,); actions
    one array (A,)"""

    def __init__(self, env):
        super().__init__(env)
        u = env.unwrapped
        obs, _ = env.reset(seed=0)
        A = u.n_agents
        O = obs[0].shape[0]
        U = env.action_space[0].n
        S = len(u.get_state())
        self.observation_space = gym.spaces.Dict(
            obs=gym.spaces.Box(-np.inf, np.inf, (A, O), np.float32),
            state=gym.spaces.Box(-np.inf, np.inf, (S,), np.float32),
            avail=gym.spaces.MultiBinary((A, U)),
            alive=gym.spaces.MultiBinary(A),
        )
        self.action_space = gym.spaces.MultiDiscrete([U] * A)

    def arrays(self, obs) -> dict:
        u = self.env.unwrapped
        alive = np.isin(np.arange(u.n_agents), list(u.agents))
        avail = np.stack(u.get_avail_actions()) > 0
        return dict(obs=np.stack(obs), state=np.asarray(u.get_state(), np.float32), avail=avail, alive=alive)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return self.arrays(obs), info

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions.tolist())
        return self.arrays(obs), reward, terminated, truncated, info


def make_one(map_name: str):
    import smaclite  # noqa: F401  (registers smaclite/<map>-v0)

    limit = mappo.SMAC_EPISODE_LIMITS.get(map_name, 200)
    with mappo.quiet():
        return AdapterArrays(gym.make(f"smaclite/{map_name}-v0", max_episode_steps=limit))


def random_actions(rng, avail: np.ndarray) -> np.ndarray:
    """(E,A,U) available actions -> (E,A) one uniformly random available action each"""
    return (rng.random(avail.shape) * avail).argmax(-1)


def time_pool(map_name: str, num_envs: int, steps: int, seed: int) -> dict:
    start = time.time()
    envs = mappo.make_env(f"smaclite/{map_name}", num_envs, seed)
    out = envs.reset()
    started = time.time() - start
    rng = np.random.default_rng(seed)
    start = time.time()
    for _ in range(steps):
        out = envs.step(random_actions(rng, out["avail"]))
    sps = num_envs * steps / (time.time() - start)
    envs.close()
    return dict(startup_s=started, sps=sps, processes=len(envs.procs))


def time_gymnasium(map_name: str, num_envs: int, steps: int, seed: int) -> dict:
    start = time.time()
    fns = [lambda: make_one(map_name) for _ in range(num_envs)]
    # spawn, as the pool: no fork of a process that holds torch's and JAX's threads
    same_step = gym.vector.AutoresetMode.SAME_STEP
    envs = gym.vector.AsyncVectorEnv(fns, context="spawn", autoreset_mode=same_step)
    out, _ = envs.reset(seed=[seed + i for i in range(num_envs)])
    started = time.time() - start
    rng = np.random.default_rng(seed)
    start = time.time()
    for _ in range(steps):
        out, _, _, _, _ = envs.step(random_actions(rng, out["avail"]))
    sps = num_envs * steps / (time.time() - start)
    envs.close()
    return dict(startup_s=started, sps=sps, processes=num_envs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--map", default="2s3z")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "smaclite_vector.json"))
    opts = parser.parse_args(argv)
    runs = {"pool": [], "gymnasium AsyncVectorEnv": []}
    for _ in range(opts.repeats):
        runs["pool"].append(time_pool(opts.map, opts.num_envs, opts.steps, opts.seed))
        runs["gymnasium AsyncVectorEnv"].append(time_gymnasium(opts.map, opts.num_envs, opts.steps, opts.seed))
    median = {side: {k: float(np.median([r[k] for r in rows])) for k in ("startup_s", "sps")} for side, rows in runs.items()}
    result = dict(
        map=opts.map,
        num_envs=opts.num_envs,
        steps=opts.steps,
        date=time.strftime("%Y-%m-%d"),
        machine=f"{os.cpu_count()}-core CPU ({platform.machine()})",
        command="python benchmark/measure/smaclite_vector.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        runs=runs,
        median=median,
    )
    with open(opts.out, "w") as f:
        json.dump(result, f, indent=1)
    for side, m in median.items():
        sps = ", ".join(f"{r['sps']:.0f}" for r in runs[side])
        print(f"{side}: start-up {m['startup_s']:.1f} s, {m['sps']:.0f} env steps/s (runs: {sps})")


if __name__ == "__main__":
    main()
