"""Run JaxMARL's own recurrent MAPPO baseline (baselines/MAPPO/mappo_rnn_smax.py) unchanged and record its learning
curve against wall-clock time, to compare wall time to a given win rate with mappo_rnn.py.

Nothing of JaxMARL is copied here: the baseline module is imported from a JaxMARL checkout (--jaxmarl-dir, default
$JAXMARL_DIR), its default hydra config (baselines/MAPPO/config/mappo_homogenous_rnn_smax.yaml, the one its
@hydra.main names) is composed with hydra's compose API plus MAP_NAME/TOTAL_TIMESTEPS/SEED overrides, and the
baseline's own `main` runs it (hydra.main passes a given config straight to the task function). wandb is replaced:
`wandb.init` becomes a no-op and `wandb.log`, which the baseline calls from a jax.experimental.io_callback once per
update, appends a row to --out.
With --snapshot-dir, the module's `optax` is also swapped for a view of optax that appends a pass-through transform
to the actor's optimiser chain, which saves the actor after every update (ActorSnapshots) for
benchmark/jaxmarl_greedy_eval.py; the training itself is unchanged (same returns with and without it).

Install (a separate venv, not the repo's; JAX on the CPU). JaxMARL commit c793d095618c6d3edfb5632802348f57b70a4b94
(master, 2026-07-21, "Merge pull request #191"; package version 0.2.0). Its robotarium git submodule is not needed:

    git clone https://github.com/FLAIROx/JaxMARL /work/jaxmarl-src
    git -C /work/jaxmarl-src checkout c793d095618c6d3edfb5632802348f57b70a4b94
    python3.11 -m venv /work/jaxmarl-venv
    /work/jaxmarl-venv/bin/pip install -e "/work/jaxmarl-src[algs]" jax==0.10.2 jaxlib==0.10.2 flax==0.12.8 \
        optax==0.2.8 chex==0.1.92 numpy==2.4.6 distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 hydra-core==1.3.8 \
        omegaconf==2.3.1 wandb==0.31.0 flashbax==0.1.3 gymnax==1.0.1 jaxtyping==0.3.11

(jax/jaxlib/flax/optax/chex/numpy/gymnax/jaxtyping are the versions of requirements.txt; distrax 0.1.9 pulls
tfp-nightly.)

Run (the baseline's default config, map 3m, stop 5 updates after the train win rate first reaches 0.8):

    JAXMARL_DIR=/work/jaxmarl-src JAX_PLATFORMS=cpu /work/jaxmarl-venv/bin/python benchmark/jaxmarl_mappo_rnn.py \
        --map 3m --seed 0 --stop-at-win-rate 0.8 --extra-updates 5 --out benchmark/results/jaxmarl_3m_s0.json

Smoke test: add --total-timesteps 65536 (4 updates of 128 envs x 128 steps).

Baseline defaults (mappo_homogenous_rnn_smax.yaml): LR 0.002 annealed linearly to 0, NUM_ENVS 128, NUM_STEPS 128,
TOTAL_TIMESTEPS 1e7 (610 updates), FC_DIM_SIZE 128, GRU_HIDDEN_DIM 128, UPDATE_EPOCHS 4, NUM_MINIBATCHES 4,
GAMMA 0.99, GAE_LAMBDA 0.95, CLIP_EPS 0.2, ENT_COEF 0, VF_COEF 0.5, MAX_GRAD_NORM 0.25, OBS_WITH_AGENT_ID True,
HeuristicEnemySMAX with see_enemy_actions/walls_cause_death/attack_mode "closest", MAP_NAME 2s3z (we pass 3m), SEED 0.

What is recorded, one row per update (the baseline logs once per update):
- win_rate: the baseline's "win_rate", a *training* win rate: over the update's rollout (NUM_STEPS x NUM_ENVS
  transitions of the stochastic policy), the mean of SMAXLogWrapper's returned_won_episode of agent 0 over the
  transitions where an episode ended (returned_episode). returned_won_episode is 1 when agent 0's reward on the
  episode's last step is >= 1.0, i.e. SMAX paid its won-battle bonus (all enemies dead, at least one ally alive).
  NaN when no episode ended in the rollout.
- episodic_return: the baseline's "returns", the same mean of returned_episode_returns (agent 0's undiscounted return).
- logged_env_step: the baseline's "env_step" = update_steps * NUM_ENVS * NUM_STEPS with update_steps counting from 0,
  i.e. the env steps collected *before* this update's rollout (0 on the first row). One env step is one step of one
  of the NUM_ENVS parallel environments (all agents act), not agent-steps.
- step: env steps collected once this row's update is done, logged_env_step + NUM_ENVS * NUM_STEPS; this is the count
  to compare with mappo_rnn.py's global_step. update: 0-based update index.
- wall_time: seconds since this runner process started (imports, JIT compilation and the first update are all in
  the first row's time), taken when the callback runs on the host, i.e. after that update's PPO epochs.
- the baseline's loss metrics (total_loss, actor_loss, value_loss, entropy, ratio, approx_kl, clip_frac, ratio_0).

--out: a .json path gets {"config", "meta", "rows"} (rows with the keys above, as in mappo.py's eval_summary.json
"evals"), rewritten after every row; any other path gets a CSV, one flushed line per row.
Note: XLA uses every core of the machine; run it alone when timing.
"""

import argparse
import csv
import json
import math
import os
import sys
import threading
import time

T0 = time.time()  # before the heavy imports (jax, the baseline): wall_time counts from (about) process start

LOSS_KEYS = ("total_loss", "actor_loss", "value_loss", "entropy", "ratio", "approx_kl", "clip_frac", "ratio_0")
FIELDS = ("update", "step", "logged_env_step", "wall_time", "win_rate", "episodic_return") + LOSS_KEYS
CONFIG_NAME = "mappo_homogenous_rnn_smax"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jaxmarl-dir", default=os.environ.get("JAXMARL_DIR"), help="JaxMARL checkout (default $JAXMARL_DIR)")
    p.add_argument("--map", default="3m", help="SMAX map, the config's MAP_NAME (default 3m)")
    p.add_argument("--total-timesteps", type=int, default=None, help="override TOTAL_TIMESTEPS (default: the config's)")
    p.add_argument("--seed", type=int, default=None, help="override SEED (default: the config's, 0)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other hydra override")
    p.add_argument("--out", required=True, help="output file: .json, else CSV")
    p.add_argument("--stop-at-win-rate", type=float, default=None, help="exit once the logged win rate reaches this")
    p.add_argument("--extra-updates", type=int, default=0, help="rows still recorded after the threshold is reached")
    p.add_argument("--snapshot-dir", default=None, help="save the actor's parameters after every update here")
    args = p.parse_args(argv)
    if not args.jaxmarl_dir:
        p.error("--jaxmarl-dir or $JAXMARL_DIR is required")
    return args


def compose_config(baseline_dir, args):
    from hydra import compose, initialize_config_dir

    overrides = [f"MAP_NAME={args.map}"]
    if args.total_timesteps is not None:
        overrides.append(f"TOTAL_TIMESTEPS={args.total_timesteps}")
    if args.seed is not None:
        overrides.append(f"SEED={args.seed}")
    overrides += args.set
    with initialize_config_dir(config_dir=os.path.join(baseline_dir, "config"), version_base=None):
        return compose(config_name=CONFIG_NAME, overrides=overrides)


class Recorder:
    """Takes the baseline's wandb.log dicts (called from its io_callback, in update order) and writes rows."""

    def __init__(self, args, config, num_updates, batch_steps):
        self.args, self.config, self.num_updates, self.batch_steps = args, config, num_updates, batch_steps
        self.rows, self.reached, self.done = [], None, threading.Event()
        self.meta = dict(
            runner="benchmark/jaxmarl_mappo_rnn.py",
            jaxmarl_dir=os.path.abspath(args.jaxmarl_dir),
            map=args.map,
            num_updates=num_updates,
            steps_per_update=batch_steps,
            stop_at_win_rate=args.stop_at_win_rate,
            extra_updates=args.extra_updates,
            reached=None,
            start_unix_time=T0,
        )
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        self.is_json = args.out.endswith(".json")
        if not self.is_json:
            self.csv_file = open(args.out, "w", newline="")
            self.csv = csv.DictWriter(self.csv_file, fieldnames=FIELDS)
            self.csv.writeheader()
            self.csv_file.flush()

    def log(self, data, *unused_args, **unused_kwargs):
        wall = time.time() - T0
        logged = int(data["env_step"])
        row = dict(
            update=logged // self.batch_steps,
            step=logged + self.batch_steps,
            logged_env_step=logged,
            wall_time=round(wall, 3),
            win_rate=float(data["win_rate"]),
            episodic_return=float(data["returns"]),
        )
        row.update({k: float(data[k]) for k in LOSS_KEYS if k in data})
        self.rows.append(row)
        print(
            f"update {row['update'] + 1}/{self.num_updates} step {row['step']} wall {wall:.1f}s "
            f"win_rate {row['win_rate']:.3f} return {row['episodic_return']:.3f}",
            flush=True,
        )
        thr = self.args.stop_at_win_rate
        if thr is not None and self.reached is None and not math.isnan(row["win_rate"]) and row["win_rate"] >= thr:
            self.reached = row
            self.meta["reached"] = dict(
                threshold=thr, **{k: row[k] for k in ("update", "step", "logged_env_step", "wall_time", "win_rate")}
            )
        self.write(row)
        if self.reached is not None and row["update"] >= self.reached["update"] + self.args.extra_updates:
            self.finish()
            # The training loop is one jitted lax.scan over all updates: it cannot be interrupted from Python, and
            # this callback runs inside it. Everything is written and flushed, so leave the process right here.
            os._exit(0)
        if row["update"] + 1 >= self.num_updates:
            self.done.set()

    def write(self, row):
        if self.is_json:
            tmp = self.args.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(dict(config=self.config, meta=self.meta, rows=self.rows), f, indent=1)
            os.replace(tmp, self.args.out)
        else:
            self.csv.writerow(row)
            self.csv_file.flush()

    def finish(self):
        if not self.is_json:
            self.csv_file.close()
        thr, r = self.args.stop_at_win_rate, self.reached
        if thr is None:
            print(f"done: {len(self.rows)} rows in {time.time() - T0:.1f}s", flush=True)
        elif r is None:
            print(f"win rate never reached {thr} ({len(self.rows)} updates, {time.time() - T0:.1f}s)", flush=True)
        else:
            print(
                f"win rate >= {thr} first at wall {r['wall_time']:.1f}s, env step {r['step']} "
                f"(baseline's env_step {r['logged_env_step']}, update {r['update'] + 1}, win rate {r['win_rate']:.3f})",
                flush=True,
            )
        sys.stdout.flush()
        sys.stderr.flush()


class ActorSnapshots:
    """Writes the actor's parameters after each update to --snapshot-dir (actor_UUUU.msgpack, and index.json with the
    update, env step and wall time of each), for benchmark/jaxmarl_greedy_eval.py to evaluate afterwards.

    The parameters live inside the baseline's one jitted scan. A pass-through optax transform appended to the actor's
    optimiser chain sees them at every optimiser step: it hands params + updates (the parameters that step leaves)
    to the host through an ordered jax.debug.callback, and the host keeps those of every update's last step."""

    def __init__(self, out_dir, steps_per_update, batch_steps, num_actions):
        self.dir, self.steps_per_update, self.batch_steps = out_dir, steps_per_update, batch_steps
        self.num_actions, self.calls, self.index = num_actions, 0, []
        os.makedirs(out_dir, exist_ok=True)

    def transform(self):
        import jax
        import optax

        def update(updates, state, params=None):
            jax.debug.callback(self.on_step, optax.apply_updates(params, updates), ordered=True)
            return updates, state

        return optax.GradientTransformation(lambda params: optax.EmptyState(), update)

    def on_step(self, params):
        from flax import serialization

        wall = time.time() - T0
        self.calls += 1
        if self.calls == 1:  # the chain this is appended to must be the actor's: its head has one output per action
            head = params["params"][max((k for k in params["params"] if k.startswith("Dense_")), key=lambda k: int(k[6:]))]
            assert head["bias"].shape == (self.num_actions,), f"not the actor's parameters: head {head['bias'].shape}"
        if self.calls % self.steps_per_update:
            return
        update = self.calls // self.steps_per_update - 1
        name = f"actor_{update:04d}.msgpack"
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(serialization.msgpack_serialize(params))
        self.index.append(dict(update=update, step=(update + 1) * self.batch_steps, wall_time=round(wall, 3), file=name))
        with open(os.path.join(self.dir, "index.json.tmp"), "w") as f:
            json.dump(self.index, f, indent=1)
        os.replace(os.path.join(self.dir, "index.json.tmp"), os.path.join(self.dir, "index.json"))


def append_to_actor_chain(baseline, transform):
    """Replaces the baseline module's `optax` with a view of optax whose chain() appends `transform` to the first chain
    built (make_train builds the actor's optimiser, then the critic's; ActorSnapshots checks which one it got)."""
    import optax

    class OptaxView:
        built = 0

        def __getattr__(self, name):
            return getattr(optax, name)

        def chain(self, *transforms):
            self.built += 1
            return optax.chain(*transforms, transform) if self.built == 1 else optax.chain(*transforms)

    baseline.optax = OptaxView()


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["WANDB_MODE"] = "disabled"
    jaxmarl_dir = os.path.abspath(args.jaxmarl_dir)
    baseline_dir = os.path.join(jaxmarl_dir, "baselines", "MAPPO")
    sys.path[:0] = [baseline_dir, jaxmarl_dir]  # the checkout's jaxmarl package wins over an installed one

    cfg = compose_config(baseline_dir, args)
    import jax
    import mappo_rnn_smax as baseline
    import wandb
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(cfg)
    batch_steps = int(config["NUM_ENVS"]) * int(config["NUM_STEPS"])
    num_updates = int(config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"])  # as make_train does
    print(f"JaxMARL baseline {baseline.__file__}, jax {jax.__version__} on {jax.devices()}", flush=True)
    print(f"config: {json.dumps(config)}", flush=True)
    rec = Recorder(args, config, num_updates, batch_steps)
    wandb.init = lambda *a, **k: None
    wandb.log = rec.log  # the baseline's callback looks up wandb.log at call time
    if args.snapshot_dir:
        from jaxmarl.environments.smax import HeuristicEnemySMAX, map_name_to_scenario

        num_actions = HeuristicEnemySMAX(scenario=map_name_to_scenario(args.map), **config["ENV_KWARGS"]).num_ally_actions
        steps_per_update = int(config["UPDATE_EPOCHS"]) * int(config["NUM_MINIBATCHES"])
        snapshots = ActorSnapshots(args.snapshot_dir, steps_per_update, batch_steps, num_actions)
        append_to_actor_chain(baseline, snapshots.transform())

    rec.meta["main_start_wall_time"] = round(time.time() - T0, 3)
    print(f"imports and setup done at wall {rec.meta['main_start_wall_time']:.1f}s; tracing, compiling, training")
    baseline.main(cfg)  # hydra.main's decorated_main(cfg_passthrough) runs the baseline's main body on cfg
    # Dispatch is asynchronous: wait for the scan (and its callbacks) to finish.
    jax.effects_barrier()
    if not rec.done.wait(timeout=600):
        print(f"warning: only {len(rec.rows)} of {num_updates} updates were logged", flush=True)
    rec.finish()


if __name__ == "__main__":
    main()
