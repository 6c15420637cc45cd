"""How a saved policy's greedy episodes end: won, lost (the allies wiped out), or cut by the time limit; episode lengths
and the allies left alive after a win; on SMAX also the enemies left after a loss, and draws (both sides wiped out in
the same step: SMAX does not count them as wins). Reads checkpoints of mappo.py, ippo.py and mappo_async_seed.py without
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


SMAX_UNIT_FEATURES = 10  # smax_env.get_world_state: per unit health fraction, x, y, cooldown, 6 unit-type bits


def enemy_side(final_state: np.ndarray) -> tuple[int, float]:
    """A SMAX world state (S,) -> (enemies alive, their health fractions summed). Its layout: N units x the features
    above (zeros for a dead unit), then the N units' teams (1: enemy), then their types."""
    F = SMAX_UNIT_FEATURES
    n = len(final_state) // (F + 2)
    health, enemy = final_state[: n * F : F], final_state[n * F : n * F + n] == 1  # (N,), (N,)
    return int((health[enemy] > 0).sum()), float(health[enemy].sum())


def outcomes(actor, envs, num_episodes: int, sample: bool = False) -> np.ndarray:
    """(N, 6) rows: won, truncated, allies alive at the end, length, enemies alive at the end and their health
    (fractions summed; -1 and -1 where the env is not SMAX). Each env plays its first ceil(N/E) episodes."""
    per_env = math.ceil(num_episodes / envs.num_envs)
    ids = torch.eye(envs.num_agents).expand(envs.num_envs, -1, -1)  # (E,A,A)
    rows, length = [[] for _ in range(envs.num_envs)], np.zeros(envs.num_envs, dtype=int)
    is_smax = isinstance(envs, mappo.SMAXVecEnv)  # the enemy side is read from SMAX's world state only
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
                enemies = enemy_side(nxt["final_state"][e]) if is_smax else (-1, -1.0)
                rows[e].append((nxt["won"][e], nxt["truncated"][e], nxt["final_alive"][e].sum(), length[e], *enemies))
            length[e] = 0
    return np.array([rows[e][k] for k in range(per_env) for e in range(envs.num_envs)][:num_episodes], dtype=float)


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
                f"  {name}: length median {np.median(rows[sel, 3]):.0f} (min {rows[sel, 3].min():.0f}, max {rows[sel, 3].max():.0f})"
            )
    print(f"  allies alive after a win (0..{A}): {np.bincount(rows[won, 2].astype(int), minlength=A + 1).tolist()}")
    if (rows[:, 4] >= 0).all():  # SMAX: how close the losses were
        draw = lost & (rows[:, 4] == 0)
        print(f"  draws (both sides wiped out in one step) {draw.mean():.3f} of all episodes")
        beaten = lost & ~draw
        if beaten.any():
            counts = np.bincount(rows[beaten, 4].astype(int)).tolist()
            print(
                f"  enemies alive after a loss (0..): {counts}, their health left (fraction of one unit's, summed): "
                f"median {np.median(rows[beaten, 5]):.2f}"
            )


if __name__ == "__main__":
    main()
