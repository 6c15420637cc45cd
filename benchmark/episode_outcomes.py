"""How a saved policy's greedy episodes end: won, lost (the allies wiped out), or cut by the time limit; episode lengths
and the allies left alive after a win. Reads checkpoints of mappo.py, ippo.py and mappo_async_seed.py without
--recurrent (the same MLP actor); the env is rebuilt from the checkpoint's args with mappo.py's adapters.
    python benchmark/episode_outcomes.py runs/3m__mappo__1__.../mappo.pt --episodes 512
"""

import argparse
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mappo  # noqa: E402  (it puts JAX on the CPU before importing it)
from popart import MaskedCategorical  # noqa: E402


def outcomes(actor, envs, num_episodes: int, sample: bool = False) -> np.ndarray:
    """(N, 4) rows: won, truncated, allies alive at the end, length. Each env plays its first ceil(N/E) episodes."""
    per_env = math.ceil(num_episodes / envs.num_envs)
    ids = torch.eye(envs.num_agents).expand(envs.num_envs, -1, -1)  # (E,A,A)
    rows, length = [[] for _ in range(envs.num_envs)], np.zeros(envs.num_envs, dtype=int)
    nxt = envs.reset()
    while min(len(r) for r in rows) < per_env:
        with torch.no_grad():
            logits = actor(mappo.actor_input(torch.from_numpy(nxt["obs"]), ids))  # (E,A,U)
            dist = MaskedCategorical(logits, torch.from_numpy(nxt["avail"]))
            action = dist.sample() if sample else dist.mode()  # (E,A)
        nxt = envs.step(action.numpy())
        length += 1
        for e in np.flatnonzero(nxt["terminated"] | nxt["truncated"]):
            if len(rows[e]) < per_env:
                rows[e].append((nxt["won"][e], nxt["truncated"][e], nxt["final_alive"][e].sum(), length[e]))
            length[e] = 0
    return np.array([rows[e][k] for k in range(per_env) for e in range(envs.num_envs)][:num_episodes], dtype=int)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--episodes", type=int, default=512)
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--seed", type=int, default=777, help="env seed (a different one from training's)")
    parser.add_argument("--sample", action="store_true", help="sample actions instead of the greedy ones")
    opts = parser.parse_args()
    ckpt = torch.load(opts.checkpoint, map_location="cpu", weights_only=True)
    a = ckpt["args"]
    if ckpt.get("script") not in ("mappo.py", "ippo.py", "mappo_async_seed.py") or a.get("recurrent"):
        sys.exit(f"{opts.checkpoint}: not an MLP actor of mappo.py, ippo.py or mappo_async_seed.py")
    if a["env_id"].startswith("simple_"):
        sys.exit(f"{a['env_id']}: MPE episodes have no win or loss, only the time limit")
    envs = mappo.make_env(a["env_id"], opts.num_envs, opts.seed, num_stacked_frames=a.get("num_stacked_frames", 1))
    A = envs.num_agents
    actor = mappo.Actor(
        envs.obs_dim + A, envs.num_actions, a["hidden_dim"], a["num_layers"], a["activation"], a["use_feature_norm"]
    )
    actor.load_state_dict(ckpt["actor"])
    rows = outcomes(actor, envs, opts.episodes, opts.sample)
    envs.close()
    won, truncated = rows[:, 0] == 1, rows[:, 1] == 1
    lost = ~won & ~truncated
    policy = "sampled" if opts.sample else "greedy"
    print(f"{opts.checkpoint}: {a['env_id']}, {len(rows)} {policy} episodes, step {ckpt['global_step']}")
    print(f"won {won.mean():.3f}  lost {lost.mean():.3f}  time limit {truncated.mean():.3f}")
    for name, sel in (("won", won), ("lost", lost), ("time limit", truncated)):
        if sel.any():
            print(
                f"  {name}: length median {np.median(rows[sel, 3]):.0f} (min {rows[sel, 3].min()}, max {rows[sel, 3].max()})"
            )
    print(f"  allies alive after a win (0..{A}): {np.bincount(rows[won, 2], minlength=A + 1).tolist()}")


if __name__ == "__main__":
    main()
