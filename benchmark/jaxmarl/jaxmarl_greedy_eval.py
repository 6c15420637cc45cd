"""Greedy evaluation of the actor snapshots that `benchmark/jaxmarl/jaxmarl_baseline.py --snapshot-dir DIR` saved from
JaxMARL's recurrent MAPPO baseline, by mappo_rnn.py's protocol: --episodes episodes (default 32) on separate envs,
each from a zero GRU state, every agent taking the most likely available action. A win is an episode that ends
with all enemies dead and at least one ally alive (the won flag of mappo.py's SMAX adapter).

This gives JaxMARL's run the same metric as mappo_rnn.py's eval/win_rate, so wall time to a greedy win rate can be
compared on equal terms (the baseline itself logs only the training win rate of its stochastic policy). The wall
time of a snapshot is when the training run had it; the evaluation runs afterwards and is not charged to the run.

Run in the JaxMARL venv (see benchmark/jaxmarl/jaxmarl_baseline.py); the network is the baseline's own ActorRNN:

    JAX_PLATFORMS=cpu /work/jaxmarl-venv/bin/python benchmark/jaxmarl/jaxmarl_greedy_eval.py --jaxmarl-dir /work/jaxmarl-src \\
        --snapshot-dir DIR --run-json RUN.json --out EVAL.json

--run-json is the runner's --out (its "config" gives the map, env kwargs and network sizes; its "meta" the SMAX
release, where the run stepped another than the checkout's: --smax-wheel, and its number of updates).

--every K and --last N pick snapshots by update: those whose update is a multiple of K, and the run's last N updates.
Where --out holds an evaluation already (same --episodes, --seed, --sample), only the picked snapshots it lacks are
evaluated and added: a run in sittings (jaxmarl_baseline.py --checkpoint) is evaluated as its snapshots come, so they
need not be kept. --out is rewritten after each snapshot; once the run has all its rows, a picked snapshot neither
here nor in --out is an error.
"""

import argparse
import json
import os
import sys


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jaxmarl-dir", default=os.environ.get("JAXMARL_DIR"), help="JaxMARL checkout (default $JAXMARL_DIR)")
    p.add_argument("--snapshot-dir", required=True, help="the runner's --snapshot-dir")
    p.add_argument("--run-json", required=True, help="the runner's --out (.json): the run's config")
    p.add_argument("--out", required=True, help="JSON: one row per snapshot (update, step, wall_time, win_rate)")
    p.add_argument("--episodes", type=int, default=32, help="greedy episodes per snapshot (mappo_rnn.py: 32)")
    p.add_argument("--seed", type=int, default=0, help="seed of the eval envs, folded with the update index")
    p.add_argument("--every", type=int, default=1, help="evaluate every k-th snapshot")
    p.add_argument("--last", type=int, default=0, help="and each of the last N (the paper's score: their median)")
    p.add_argument("--sample", action="store_true", help="sample actions instead (a check against the train win rate)")
    args = p.parse_args(argv)
    if not args.jaxmarl_dir:
        p.error("--jaxmarl-dir or $JAXMARL_DIR is required")
    if args.episodes < 1 or args.every < 1 or args.last < 0:
        p.error("--episodes and --every must be positive, --last at least 0")
    return args


def picked_updates(num_updates: int, every: int, last: int) -> set:
    """--every and --last: the updates whose snapshots are evaluated, multiples of `every` and the run's last `last`"""
    return {u for u in range(num_updates) if u % every == 0 or u >= num_updates - last}


def make_evaluate(baseline, config, num_episodes, sample=False):
    """jitted (params, key) -> ended, won (num_episodes,) bool: one greedy (or sampled) episode per env, all envs in
    one vmapped scan"""
    import jax
    import jax.numpy as jnp
    from jaxmarl.environments.smax import HeuristicEnemySMAX, map_name_to_scenario

    env = HeuristicEnemySMAX(scenario=map_name_to_scenario(config["MAP_NAME"]), **config["ENV_KWARGS"])
    actor = baseline.ActorRNN(env.action_space(env.agents[0]).n, config=config)
    A, E = env.num_allies, num_episodes

    def agent_major(x):  # {agent: (E, ...)} -> (A*E, ...), the baseline's batchify order
        return jnp.stack([x[a] for a in env.agents]).reshape(A * E, -1)

    def evaluate(params, key):
        key, reset_key = jax.random.split(key)
        obs, state = jax.vmap(env.reset)(jax.random.split(reset_key, E))
        hidden = baseline.ScannedRNN.initialize_carry(A * E, config["GRU_HIDDEN_DIM"])  # (A*E, H) zeros

        def step(carry, step_key):
            obs, state, hidden, ended, won = carry
            step_key, action_key = jax.random.split(step_key)
            avail = agent_major(jax.vmap(env.get_avail_actions)(state))  # (A*E, U)
            no_reset = jnp.zeros((1, A * E), dtype=bool)  # every env plays one episode from the zero state
            hidden, pi = actor.apply(params, hidden, (agent_major(obs)[None], no_reset, avail))
            # greedy; unavailable actions sit at -1e10
            action = (pi.sample(seed=action_key) if sample else jnp.argmax(pi.logits, axis=-1))[0].reshape(A, E)
            actions = {a: action[i] for i, a in enumerate(env.agents)}
            obs, state, _, dones, _ = jax.vmap(env.step_env)(jax.random.split(step_key, E), state, actions)
            alive = state.state.unit_alive  # (E, allies + enemies), no auto-reset in step_env
            won_now = ~alive[:, A:].any(axis=1) & alive[:, :A].any(axis=1)
            first_end = dones["__all__"] & ~ended
            return (obs, state, hidden, ended | dones["__all__"], jnp.where(first_end, won_now, won)), None

        init = (obs, state, hidden, jnp.zeros(E, dtype=bool), jnp.zeros(E, dtype=bool))
        # SMAX ends an episode on the time limit one step late: is_terminal sees the step count before its increment
        (_, _, _, ended, won), _ = jax.lax.scan(step, init, jax.random.split(key, env.max_steps + 1))
        return ended, won

    return jax.jit(evaluate)


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jaxmarl_dir = os.path.abspath(args.jaxmarl_dir)
    sys.path[:0] = [os.path.join(jaxmarl_dir, "baselines", "MAPPO"), jaxmarl_dir]
    with open(args.run_json) as f:
        run = json.load(f)
    config, smax_wheel = run["config"], run.get("meta", {}).get("smax_wheel")
    if smax_wheel:  # the run stepped another release's SMAX (the runner's --smax-wheel): play that one too
        from jaxmarl_baseline import smax_from_wheel  # this script's folder

        smax_from_wheel(smax_wheel)
    import jax
    import mappo_rnn_smax as baseline
    from flax import serialization

    index_path = os.path.join(args.snapshot_dir, "index.json")
    snapshots = []  # none yet where a run went on from its checkpoint on another machine
    if os.path.exists(index_path):
        with open(index_path) as f:
            snapshots = json.load(f)
    wanted = picked_updates(run["meta"]["num_updates"], args.every, args.last)
    done = {}  # update -> row: an earlier evaluation of this run in --out (a run in sittings: what its snapshots were)
    if os.path.exists(args.out):
        with open(args.out) as f:
            before = json.load(f)
        if [before[k] for k in ("episodes", "seed", "sample")] != [args.episodes, args.seed, args.sample]:
            sys.exit(f"error: {args.out} holds an evaluation with other --episodes, --seed or --sample")
        done = {row["update"]: row for row in before["rows"]}
    index = [s for s in snapshots if s["update"] in wanted and s["update"] not in done]
    evaluate = make_evaluate(baseline, config, args.episodes, args.sample)
    rows = list(done.values())
    for snap in index:
        with open(os.path.join(args.snapshot_dir, snap["file"]), "rb") as f:
            params = serialization.msgpack_restore(f.read())
        # other episodes for every snapshot, as mappo_rnn.py's eval envs play on from one evaluation to the next
        ended, won = evaluate(params, jax.random.fold_in(jax.random.PRNGKey(args.seed), snap["update"]))
        if not bool(ended.all()):
            raise SystemExit(f"{snap['file']}: {int((~ended).sum())} episodes did not end within the time limit")
        rows.append(dict(snap, win_rate=float(won.mean())))
        print(
            f"update {snap['update']} step {snap['step']} wall {snap['wall_time']:.1f}s {'sampled' if args.sample else 'greedy'} win rate "
            f"{rows[-1]['win_rate']:.3f}",
            flush=True,
        )
        rows.sort(key=lambda row: row["update"])
        with open(args.out + ".tmp", "w") as f:  # after each snapshot: a stopped evaluation goes on from here
            json.dump(dict(episodes=args.episodes, seed=args.seed, sample=args.sample, rows=rows), f, indent=1)
        os.replace(args.out + ".tmp", args.out)
    missing = sorted(wanted - {row["update"] for row in rows})
    if len(run["rows"]) >= run["meta"]["num_updates"] and missing:  # the run is done: every snapshot wanted must be evaluated
        sys.exit(f"error: the snapshots of updates {missing} are neither in {index_path} nor evaluated in {args.out}")
    if not rows:  # nothing to evaluate yet: still an (empty) evaluation, to go on from
        with open(args.out, "w") as f:
            json.dump(dict(episodes=args.episodes, seed=args.seed, sample=args.sample, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
