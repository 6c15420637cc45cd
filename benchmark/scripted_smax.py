"""Hand-written ally policies against SMAX's heuristic enemy: reference win rates that a learned policy can be read
against (what the map gives without learning). Same env kwargs as mappo.py's SMAX adapter; greedy, no training.
    python benchmark/scripted_smax.py --maps 3m 2s3z --episodes 2048
Policies (allies that are dead take the no-op; every chosen action is checked against the available ones):
- mirror: about the enemy's own rule (which also keeps its last target while in range and walks toward a random
  visible enemy): the closest enemy in range, else walk toward the closest living enemy
- focus: all allies on the weakest living enemy (lowest health fraction) when it is in range, else the weakest one in
  range, else walk toward the weakest living enemy
Writes benchmark/results/scripted_smax.md and .json.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mappo  # noqa: E402, F401  (it puts JAX on the CPU before anything imports it)
from throughput import write_results  # noqa: E402

POLICIES = ("mirror", "focus")
MOVES = ((0.0, 1.0), (1.0, 0.0), (0.0, -1.0), (-1.0, 0.0))  # SMAX's discrete moves 0-3: north, east, south, west
STOP, FIRST_ATTACK = 4, 5  # SMAX: action 4 is the no-op, 5 + j attacks enemy j


def win_rates(map_name: str, policy: str, num_episodes: int, seed: int = 0, max_steps: int = 120) -> dict:
    """Plays num_episodes episodes (one per vmapped env) to their end; returns the win rate, the share of episodes that
    ended within max_steps and whether every action taken was available."""
    import jax
    import jax.numpy as jnp
    from jaxmarl.environments.smax import HeuristicEnemySMAX, map_name_to_scenario

    env = HeuristicEnemySMAX(
        scenario=map_name_to_scenario(map_name), see_enemy_actions=True, walls_cause_death=True, attack_mode="closest"
    )
    A, smax = env.num_allies, env._env
    moves = jnp.array(MOVES)  # (4,2)

    def act(st):  # -> (A,) ally actions
        s = st.state
        pos, alive = s.unit_positions, s.unit_alive  # (A+N,2), (A+N,)
        health = s.unit_health / smax.unit_type_health[s.unit_types]  # (A+N,) fraction left
        avail = jnp.stack([a for a in smax.get_avail_actions(s).values()][:A])  # (A,U) allies come first
        enemy_health = jnp.where(alive[A:], health[A:], jnp.inf)  # (N,)
        weakest = jnp.argmin(enemy_health)

        def one(i):
            in_range = avail[i, FIRST_ATTACK:] > 0  # (N,)
            dist = jnp.linalg.norm(pos[A:] - pos[i], axis=-1)  # (N,)
            closest = jnp.argmin(jnp.where(alive[A:], dist, jnp.inf))
            if policy == "mirror":
                target = jnp.argmin(jnp.where(in_range, dist, jnp.inf))
                action = jnp.where(in_range.any(), FIRST_ATTACK + target, jnp.argmax(moves @ (pos[A + closest] - pos[i])))
            else:
                target = jnp.where(in_range[weakest], weakest, jnp.argmin(jnp.where(in_range, enemy_health, jnp.inf)))
                action = jnp.where(in_range.any(), FIRST_ATTACK + target, jnp.argmax(moves @ (pos[A + weakest] - pos[i])))
            return jnp.where(alive[i], action, STOP)

        actions = jax.vmap(one)(jnp.arange(A))
        return actions, avail[jnp.arange(A), actions].all()

    def episode(key):
        key, reset_key = jax.random.split(key)
        _, st = env.reset(reset_key)

        def step(carry, _):
            key, st, done, won, valid = carry
            key, step_key = jax.random.split(key)
            actions, ok = act(st)
            _, nxt, _, dones, _ = env.step_env(step_key, st, {a: actions[i] for i, a in enumerate(env.agents)})
            ended = dones["__all__"]
            win = ~nxt.state.unit_alive[A:].any() & nxt.state.unit_alive[:A].any()
            won = jnp.where(done, won, ended & win)
            valid = valid & (done | ok)
            st = jax.tree.map(lambda old, new: jnp.where(done, old, new), st, nxt)  # freeze after the end
            return (key, st, done | ended, won, valid), None

        carry = (key, st, jnp.bool_(False), jnp.bool_(False), jnp.bool_(True))
        (_, _, done, won, valid), _ = jax.lax.scan(step, carry, None, length=max_steps)
        return won, done, valid

    keys = jax.random.split(jax.random.PRNGKey(seed), num_episodes)
    won, done, valid = jax.jit(jax.vmap(episode))(keys)
    return dict(win_rate=float(won.mean()), ended=float(done.mean()), all_actions_available=bool(valid.all()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maps", nargs="+", default=["3m", "2s3z", "5m_vs_6m"])
    parser.add_argument("--episodes", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "scripted_smax"))
    opts = parser.parse_args()
    rows = []
    for map_name in opts.maps:
        for policy in POLICIES:
            rows.append(dict(map=map_name, policy=policy, **win_rates(map_name, policy, opts.episodes, opts.seed)))
            print(json.dumps(rows[-1]), flush=True)
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')}: `python benchmark/scripted_smax.py --maps {' '.join(opts.maps)} "
        f"--episodes {opts.episodes} --seed {opts.seed}` (SMAX, heuristic enemy, mappo.py's env kwargs)",
        "",
        "| map | policy | win rate | 95% interval | episodes ended | all actions available |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        half = 1.96 * (r["win_rate"] * (1 - r["win_rate"]) / opts.episodes) ** 0.5
        lines.append(
            f"| {r['map']} | {r['policy']} | {r['win_rate']:.3f} | [{r['win_rate'] - half:.3f}, {r['win_rate'] + half:.3f}] "
            f"| {r['ended']:.3f} | {r['all_actions_available']} |"
        )
    write_results(opts.out, lines, rows)


if __name__ == "__main__":
    main()
