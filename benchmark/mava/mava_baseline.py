"""Run Mava's recurrent MAPPO (instadeepai/Mava, mava/systems/rec_mappo.py) unchanged on one SMAX map and record its
evaluation curve: Mava's own code, run here, beside its published SMAX numbers (benchmark/results/anchors.json) and
our runs (issue 50).

The commit is the one of Mava's SMAX sweep (branch exp/rec-sys-smax, 82583ba, 2023-12-14; sweep_run.sh runs
rec_mappo.py with its default config on each map and seeds 0-9). That config, as hydra composes it: 620 updates of 64
envs x 128 steps x 2 update batches (gradients averaged), so 16,384 env steps per update and 10,158,080 in all; 2
epochs x 2 mini-batches; Adam, learning rate 4e-3 for actor and critic, constant; clip 0.2 (the value too), no
entropy bonus, value loss weight 0.5, gradient norm 0.5, gamma 0.99, GAE lambda 0.95; actor and critic each Dense 128
-> GRU 128 -> Dense 128, the actor on its observation and agent id, the critic on the world state and agent id;
HeuristicEnemySMAX (see_enemy_actions, walls_cause_death, attack_mode "closest"). Evaluation: 62 evaluations, one
after every 10 updates, of 32 episodes with sampled actions (evaluation_greedy: False): Mava's SMAX metric; at the
end, the "absolute metric": the parameters of the best evaluation return played for 320 episodes. That commit logs no
training win rate (its training env has no SMAX log wrapper).

What runs: `MAVA_PYTHON MAVA_DIR/mava/systems/rec_mappo.py env.scenario=MAP system.seed=SEED logger.base_exp_path=RUN
[--set ...]` with RUN as its working directory (hydra writes outputs/ there), JAX on the CPU without preallocation,
and NEPTUNE_MODE=debug: its Neptune logger stays on, sending and saving nothing (switched off, the run fails at its
last line, after every metric is written). Mava writes RUN/json/smax/metrics.json (marl-eval's format); this runner
turns it into --out. The child is stopped with this process (Ctrl-C, SIGTERM, SIGHUP; on Linux even SIGKILL). A run is
one process with no checkpoint: one cut short starts again.

Install (a venv of its own). Mava's requirements name jax, jaxmarl and the rest unpinned; benchmark/mava/
requirements-lock.txt pins every package to its newest PyPI release of 2023-12-14 or before (jax 0.4.23, flax 0.7.5,
optax 0.1.7, chex 0.1.85, jaxmarl 0.0.2: the release Mava's SMAX runs installed; a few older where the resolver asked),
with distrax 0.1.5 and jumanji 0.3.1 from PyPI in place of Mava's git pins, which cannot be reached from here:

    git clone https://github.com/instadeepai/Mava /work/mava-src && git -C /work/mava-src checkout 82583ba
    python3.11 -m venv /work/mava-venv
    /work/mava-venv/bin/pip install -r benchmark/mava/requirements-lock.txt
    /work/mava-venv/bin/pip install --no-deps -e /work/mava-src

Run (one seed of the sweep's config; ~15-16 s per update here, sharing the 2 cores with two other runs):

    /work/mava-venv/bin/python benchmark/mava/mava_baseline.py --mava-dir /work/mava-src --map 10m_vs_11m --seed 0 \\
        --run-dir /tmp/mava_10m_vs_11m_s0 --out rec_mappo_10m_vs_11m_seed0.json

--out: {"config": hydra's composed config, "meta", "rows"}; one row per evaluation: step (Mava's step_count, env
steps trained so far), mava_elapsed_time (Mava's clock: seconds since its first evaluation), win_rate (the
evaluation's win rate, as a fraction), episodic_return, episode_length (means over its episodes). meta: the Mava
commit (and mava_modified: its tracked files that differ from it), jaxmarl (the SMAX release) and jax versions,
evaluation_greedy, episodes per evaluation, the absolute metric's win rate, and wall_time: the run's, from this
runner's start to Mava's exit.
"""

import argparse
import json
import os
import runpy
import sys
import time

# benchmark/provenance.py, loaded by its path: benchmark/ on sys.path would shadow packages by its folders' names
provenance = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "provenance.py"))
provenance = provenance["provenance"]
run_child = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "child.py"))
run_child = run_child["run_child"]

T0 = time.time()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mava-dir", default=os.environ.get("MAVA_DIR"), help="Mava checkout (default $MAVA_DIR)")
    p.add_argument("--map", required=True, help="SMAX map (env.scenario)")
    p.add_argument("--seed", type=int, required=True, help="system.seed (the sweep's: 0-9)")
    p.add_argument("--run-dir", required=True, help="Mava's working and output folder (made; empty if there)")
    p.add_argument("--out", required=True, help="JSON: config, meta and one row per evaluation")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other hydra override")
    args = p.parse_args(argv)
    if not args.mava_dir:
        p.error("--mava-dir or $MAVA_DIR is required")
    if not os.path.isfile(os.path.join(args.mava_dir, "mava", "systems", "rec_mappo.py")):
        p.error(f"--mava-dir {args.mava_dir}: no mava/systems/rec_mappo.py there")
    if os.path.isdir(args.run_dir) and os.listdir(args.run_dir):
        p.error(f"--run-dir {args.run_dir} is not empty: Mava would add to what a run left there")
    return args


def rows_of(metrics: dict) -> tuple[list[dict], dict]:
    """marl-eval's metrics.json ({env: {map: {system: {seed_N: {step_K: ..., absolute_metrics: ...}}}}}, one run) ->
    its evaluation rows (win rate as a fraction) in step order, and its absolute metrics"""
    (run,) = [r for env in metrics.values() for m in env.values() for system in m.values() for r in system.values()]
    steps = sorted((k for k in run if k.startswith("step_")), key=lambda k: int(k.split("_")[1]))
    rows = []
    for k in steps:
        r = run[k]
        if "win_rate" not in r:  # an evaluation being written
            continue
        rows.append(
            dict(
                step=int(r["step_count"]),
                mava_elapsed_time=float(r["elapsed_time"]),
                win_rate=float(r["win_rate"][0]) / 100,
                episodic_return=float(r["mean_episode_returns"][0]),
                episode_length=float(r["mean_episode_length"][0]),
            )
        )
    return rows, run.get("absolute_metrics", {})


def main(argv=None):
    args = parse_args(argv)
    import importlib.metadata
    import importlib.util

    import yaml  # hydra's dependency, in Mava's venv

    package = importlib.util.find_spec("mava")  # what rec_mappo.py's `import mava` finds: this venv's install
    if package is not None and not os.path.abspath(package.origin).startswith(os.path.abspath(args.mava_dir) + os.sep):
        sys.exit(f"error: this venv's mava is {package.origin}, not --mava-dir's: install that checkout (pip install -e)")

    run_dir = os.path.abspath(args.run_dir)
    os.makedirs(run_dir, exist_ok=True)
    # the command, Mava's commit (and its tracked files edited since: []: the commit as it is), the versions, the machine
    origin = provenance(args.mava_dir, ("jax", "jaxlib", "flax", "optax", "chex", "distrax", "jumanji", "jaxmarl"))
    meta = dict(
        runner="benchmark/mava/mava_baseline.py",
        system="rec_mappo",
        mava_dir=os.path.abspath(args.mava_dir),
        mava_commit=origin["checkout"]["commit"],
        mava_modified=origin["checkout"]["modified"],
        provenance=origin,
        mava_package=package and package.origin,
        map=args.map,
        seed=args.seed,
        set=args.set,
        smax=f"jaxmarl {importlib.metadata.version('jaxmarl')}",
        jax_version=importlib.metadata.version("jax"),
        device="cpu",
        start_unix_time=T0,
    )
    cmd = [sys.executable, os.path.join(os.path.abspath(args.mava_dir), "mava", "systems", "rec_mappo.py")]
    cmd += [f"env.scenario={args.map}", f"system.seed={args.seed}", f"logger.base_exp_path={run_dir}", *args.set]
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_PYTHON_CLIENT_PREALLOCATE="false", NEPTUNE_MODE="debug")
    print(" ".join(cmd), flush=True)
    code = run_child(cmd, cwd=run_dir, env=env)  # stopped with this process (Ctrl-C, SIGTERM, SIGHUP)
    wall = time.time() - T0
    path = os.path.join(run_dir, "json", "smax", "metrics.json")
    if code != 0 or not os.path.exists(path):
        sys.exit(f"error: rec_mappo.py exited with {code}{'' if os.path.exists(path) else ', no metrics.json'}")
    with open(path) as f:
        rows, absolute = rows_of(json.load(f))
    (config_path,) = [os.path.join(d, "config.yaml") for d, _, files in os.walk(run_dir) if d.endswith(".hydra")]
    with open(config_path) as f:
        config = yaml.safe_load(f)
    meta.update(
        evaluation_greedy=config["arch"]["evaluation_greedy"],
        episodes_per_evaluation=config["arch"]["num_eval_episodes"],
        absolute_metric_win_rate=absolute["win_rate"][0] / 100 if "win_rate" in absolute else None,
        wall_time=round(wall, 3),
    )
    with open(args.out + ".tmp", "w") as f:
        json.dump(dict(config=config, meta=meta, rows=rows), f, indent=1)
    os.replace(args.out + ".tmp", args.out)
    print(f"done: {len(rows)} evaluations, last win rate {rows[-1]['win_rate']:.3f}, {wall:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
