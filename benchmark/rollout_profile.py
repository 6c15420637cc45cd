"""What one rollout step of mappo.py costs on SMAX, its two halves timed alone and alternating as in a rollout: the
actor's forward + sampling over all envs and agents (torch), and the vectorised env step (JAX). Each is slower when
they alternate than when it runs alone; a last line times the forward alternating with a sleep as long as an env step,
to tell the cost of sharing the process with JAX from the cost of any wait between two forwards.

    python benchmark/rollout_profile.py [--env-id 3m] [--num-envs 8] [--steps 1000]

Writes benchmark/results/rollout_profile.md.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import mappo  # noqa: E402
from popart import MaskedCategorical  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="3m")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "rollout_profile.md"))
    opts = parser.parse_args()
    torch.manual_seed(0)
    envs = mappo.make_env(opts.env_id, opts.num_envs, 0)
    out = envs.reset()
    A, U = envs.num_agents, envs.num_actions
    actor, agent_ids = mappo.Actor(envs.obs_dim + A, U), torch.eye(A)

    @torch.no_grad()
    def act(out: dict) -> np.ndarray:  # the rollout's per-step torch work, as in mappo.py
        obs, avail = torch.from_numpy(out["obs"]), torch.from_numpy(out["avail"])
        dist = MaskedCategorical(actor(mappo.actor_input(obs, agent_ids)), avail)
        action = dist.sample()
        dist.log_prob(action)
        return action.numpy()

    def timed(fn, n: int) -> float:  # ms per call after 50 warm-up calls
        for _ in range(50):
            fn()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - start) / n * 1e3

    def alternate(between) -> tuple[float, float]:
        """act() and between(actions) in turn, as in a rollout: ms per call of each after 50 warm-up rounds. between
        returns the next observation, or None to act on the same one again."""
        nxt, totals = out, np.zeros(2)
        for i in range(opts.steps + 50):
            t0 = time.perf_counter()
            actions = act(nxt)
            t1 = time.perf_counter()
            result = between(actions)
            nxt = nxt if result is None else result
            if i >= 50:
                totals += (t1 - t0, time.perf_counter() - t1)
        return totals[0] / opts.steps * 1e3, totals[1] / opts.steps * 1e3

    actions = act(out)
    fwd_alone = timed(lambda: act(out), opts.steps)
    env_alone = timed(lambda: envs.step(actions), opts.steps)
    fwd_mixed, env_mixed = alternate(envs.step)
    # the forward again, alternating with an idle wait as long as an env step instead of the env
    fwd_sleep, _ = alternate(lambda actions: time.sleep(env_mixed / 1e3))
    envs.close()
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores, {torch.get_num_threads()} torch threads: "
        f"`python benchmark/rollout_profile.py --env-id {opts.env_id} --num-envs {opts.num_envs} --steps {opts.steps}`",
        "",
        "| ms per rollout step | alone | alternating (as in a rollout) |",
        "|---|---|---|",
        f"| actor forward + sampling (torch) | {fwd_alone:.3f} | {fwd_mixed:.3f} |",
        f"| env step (JAX, {opts.num_envs} envs) | {env_alone:.3f} | {env_mixed:.3f} |",
        f"| sum | {fwd_alone + env_alone:.3f} | {fwd_mixed + env_mixed:.3f} |",
        "",
        f"The actor forward + sampling alternating with a {env_mixed:.3f} ms sleep instead of the env step: "
        f"{fwd_sleep:.3f} ms.",
    ]
    os.makedirs(os.path.dirname(opts.out), exist_ok=True)
    with open(opts.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
