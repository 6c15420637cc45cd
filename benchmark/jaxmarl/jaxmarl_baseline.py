"""Run one of JaxMARL's own baselines unchanged and record its learning curve against wall-clock time, to compare
with our scripts on the same machine:

- mappo_rnn_smax: baselines/MAPPO/mappo_rnn_smax.py, config mappo_homogenous_rnn_smax.yaml (recurrent MAPPO on SMAX,
  against mappo_rnn.py in benchmark/jaxmarl/compare_jaxmarl.py);
- ippo_ff_hanabi: baselines/IPPO/ippo_ff_hanabi.py, config ippo_ff_hanabi.yaml (against ippo.py --env-id hanabi);
- mappo_ff_hanabi: baselines/MAPPO/mappo_ff_hanabi.py, config mappo_homogenous_ff_hanabi.yaml (against mappo.py).

Nothing of JaxMARL is copied here: the baseline module is imported from a JaxMARL checkout (--jaxmarl-dir, default
$JAXMARL_DIR), its default hydra config (the one its @hydra.main names) is composed with hydra's compose API plus
the overrides given here, and the run is what the baseline's `main` does: `jax.jit(make_train(config))` called on
`jax.random.PRNGKey(seed)`. The seed is --seed, else the one its main uses (config SEED; ippo_ff_hanabi's main has a
fixed PRNGKey(50) and no SEED in its config). Several seeds (--seed 1 2 3) are that program vmapped over their keys,
one run per seed in one jitted program, as JaxMARL's multi-seed baselines run theirs (each seed computes what it
would alone, up to the order of floating-point sums in batched kernels; on a GPU the seeds share its kernels instead
of taking turns); --out and --snapshot-dir then name each seed's files with {seed}. This needs jax >= 0.11 (the lent
GPU image's 0.11.2): with jax 0.10.2 on the CPU the vmapped baseline hung whenever it held a host callback, so several
seeds exit 2 there. Tried on this CPU with jax 0.11.2 (3m, 4 updates of 16,384 env steps, seeds 1 and 2): 110 s for
both against 66 s for seed 2 alone; seed 2's first update gave its run alone's return (losses within 1e-6), the
later ones drift apart as such differences grow (return 0.342 vmapped, 0.341 alone, at the fourth).
wandb is replaced: `wandb.init` is not called and `wandb.log`, which the baseline calls from a
jax.experimental.io_callback once per update, appends a row to --out.
With --snapshot-dir (mappo_rnn_smax only), the module's `optax` is also swapped for a view of optax that appends a
pass-through transform to the actor's optimiser chain, which saves the actor after every update (ActorSnapshots) for
benchmark/jaxmarl/jaxmarl_greedy_eval.py; the training itself is unchanged (same returns with and without it).

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

Another release's SMAX (mappo_rnn_smax, --smax-wheel DIR): Mava's published SMAX runs installed jaxmarl 0.0.2 (see
benchmark/results/anchors.json). Its SMAX has the same units, heuristic enemy, reward and maps as 0.2.0's; dead units
still move and push (0.2.0 freezes them) and its observations differ: one last-action entry per unit where 0.2.0 has
movement and target, and other scaling (230 features on 10m_vs_11m, 270 in 0.2.0). The runner imports that package
from the release's wheel in place of the checkout's SMAX; the checkout's baseline, wrappers and env base class stay,
and meta records the release ("smax"):

    /work/jaxmarl-venv/bin/pip download jaxmarl==0.0.2 --no-deps -d /tmp/jaxmarl-0.0.2
    unzip -q /tmp/jaxmarl-0.0.2/jaxmarl-0.0.2-py3-none-any.whl -d /work/jaxmarl-0.0.2
    ... benchmark/jaxmarl/jaxmarl_baseline.py --baseline mappo_rnn_smax --smax-wheel /work/jaxmarl-0.0.2 ...

Run (recurrent MAPPO on 3m, stop 5 updates after the train win rate first reaches 0.8; Hanabi IPPO at 10M steps):

    JAXMARL_DIR=/work/jaxmarl-src JAX_PLATFORMS=cpu /work/jaxmarl-venv/bin/python benchmark/jaxmarl/jaxmarl_baseline.py \
        --baseline mappo_rnn_smax --map 3m --seed 0 --stop-at-win-rate 0.8 --extra-updates 5 --out 3m_s0.json
    ... benchmark/jaxmarl/jaxmarl_baseline.py --baseline mappo_ff_hanabi --stop-at-step 10000000 --seed 1 --out mappo_s1.json

A budget below the config's TOTAL_TIMESTEPS: mappo_ff_hanabi anneals its learning rate to 0 over TOTAL_TIMESTEPS (1e10),
so --total-timesteps 10000000 would be another schedule (its rate at 0 after 76 updates); --stop-at-step keeps the
config's schedule and stops the run at the budget. (mappo_rnn_smax's TOTAL_TIMESTEPS is 1e7: its own 10M budget.)

Smoke test: --total-timesteps 65536 for mappo_rnn_smax (4 updates of 128 envs x 128 steps), 262144 for the Hanabi
baselines (2 updates of 1024 envs x 128 steps).

Defaults of mappo_homogenous_rnn_smax.yaml: LR 0.002 annealed linearly to 0, NUM_ENVS 128, NUM_STEPS 128,
TOTAL_TIMESTEPS 1e7 (610 updates), FC_DIM_SIZE 128, GRU_HIDDEN_DIM 128, UPDATE_EPOCHS 4, NUM_MINIBATCHES 4,
GAMMA 0.99, GAE_LAMBDA 0.95, CLIP_EPS 0.2, ENT_COEF 0, VF_COEF 0.5, MAX_GRAD_NORM 0.25, OBS_WITH_AGENT_ID True,
HeuristicEnemySMAX with see_enemy_actions/walls_cause_death/attack_mode "closest", MAP_NAME 2s3z (we pass 3m), SEED 0.
Defaults of ippo_ff_hanabi.yaml and mappo_homogenous_ff_hanabi.yaml: LR 5e-4 (constant for IPPO, annealed linearly to
0 over TOTAL_TIMESTEPS for MAPPO), NUM_ENVS 1024, NUM_STEPS 128, TOTAL_TIMESTEPS 1e10, UPDATE_EPOCHS 4,
NUM_MINIBATCHES 4, GAMMA 0.99, GAE_LAMBDA 0.95, CLIP_EPS 0.2, ENT_COEF 0.01, VF_COEF 0.5, MAX_GRAD_NORM 0.5; IPPO: one
network, a 512-wide shared layer then 512-wide actor and critic heads; MAPPO: actor and critic of FC_DIM_SIZE 128,
the critic fed the baseline's world state (each agent's own observation), SEED 30.

What is recorded, one row per update (the baseline logs once per update):
- win_rate (SMAX only): the baseline's "win_rate", a *training* win rate: over the update's rollout (NUM_STEPS x
  NUM_ENVS transitions of the stochastic policy), the mean of SMAXLogWrapper's returned_won_episode of agent 0 over
  the transitions where an episode ended (returned_episode). returned_won_episode is 1 when agent 0's reward on the
  episode's last step is >= 1.0, i.e. SMAX paid its won-battle bonus (all enemies dead, at least one ally alive).
  NaN when no episode ended in the rollout.
- episodic_return: the baseline's "returns". SMAX: the mean of returned_episode_returns over the transitions where an
  episode ended (agent 0's undiscounted return). Hanabi: returned_episode_returns at the rollout's last step, mean over
  every agent of every env, i.e. the return of each env's last finished episode (0 for an env with none yet): the
  game's score (0-25, 0 when the third life is lost). Our scripts log the same score, averaged instead over the
  episodes that ended in a rollout (charts/episodic_return).
- logged_env_step: the baseline's "env_step" = update_steps * NUM_ENVS * NUM_STEPS with update_steps counting from 0,
  i.e. the env steps collected *before* this update's rollout (0 on the first row). One env step is one step of one
  of the NUM_ENVS parallel environments (all agents act), not agent-steps.
- step: env steps collected once this row's update is done, logged_env_step + NUM_ENVS * NUM_STEPS; this is the count
  to compare with our scripts' global_step. update: 0-based update index.
- wall_time: seconds since this runner process started (imports, JIT compilation and the first update are all in
  the first row's time), taken when the callback runs on the host, i.e. after that update's PPO epochs. A run resumed
  from --checkpoint counts on from its last kept row: that row's wall_time plus the new process's seconds (its imports
  and compilation included; the updates trained after the checkpoint and lost with the stop are not counted).
- the baseline's loss metrics where it logs them (total_loss, actor_loss, value_loss, entropy, ratio, approx_kl,
  clip_frac, ratio_0).

--out: a .json path gets {"config", "meta", "rows"} (rows with the keys above, as in mappo.py's eval_summary.json
"evals"), rewritten after every row; any other path gets a CSV, one flushed line per row.

--checkpoint PATH (mappo_rnn_smax, one seed, --out a .json): a run that stops and goes on, for a map whose 10M steps do
not fit one sitting (27m_vs_30m: hours on this CPU, past a lent GPU's 10-minute call). The baseline's loop is one
jitted lax.scan of its `_update_step` over NUM_UPDATES, which cannot stop midway; here its module gets a view of jax
whose lax.scan, called on `_update_step`, returns the loop's initial carry (computed by the jitted train, as the
unchanged run computes it) and hands the step over, and the runner calls that step, jitted, once per update, from
Python. Every --checkpoint-every updates, and on Ctrl-C or SIGTERM after the update under way, the carry (both train
states, the envs, hidden states, the PRNG key, the update count) goes to PATH (.npz); the same command later goes on
from it: the rows before it are kept from --out, the actor snapshots' index likewise. A stop exits with status 3. Same
algorithm, config and PRNG stream; XLA compiles the step alone instead of inside the scan, so sums could round
otherwise, but on this CPU they did not: 3m, seed 1, 4 updates, stopped after 3 and gone on, gave the rows and the
last actor snapshot of the run in one scan, byte for byte (tests/test_jaxmarl_baseline.py: the same on a toy baseline).
Note: XLA uses every core of the machine; run it alone when timing.
"""

import argparse
import copy
import csv
import email.parser
import glob
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import json
import math
import os
import runpy
import signal
import sys
import threading
import time

# benchmark/provenance.py, loaded by its path: benchmark/ on sys.path would shadow packages by its folders' names
provenance = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "provenance.py"))
provenance = provenance["provenance"]

T0 = time.time()  # before the heavy imports (jax, the baseline): wall_time counts from (about) process start

LOSS_KEYS = ("total_loss", "actor_loss", "value_loss", "entropy", "ratio", "approx_kl", "clip_frac", "ratio_0")
FIELDS = ("update", "step", "logged_env_step", "wall_time", "win_rate", "episodic_return") + LOSS_KEYS
SEED_AXIS = "seed"  # the vmapped axis of several seeds (jax.lax.axis_index names a seed's rows and snapshots)
# --baseline: (folder under baselines/, module, hydra config, the seed its main uses when --seed is not given)
BASELINES = {
    "mappo_rnn_smax": ("MAPPO", "mappo_rnn_smax", "mappo_homogenous_rnn_smax", "SEED"),
    "ippo_ff_hanabi": ("IPPO", "ippo_ff_hanabi", "ippo_ff_hanabi", 50),
    "mappo_ff_hanabi": ("MAPPO", "mappo_ff_hanabi", "mappo_homogenous_ff_hanabi", "SEED"),
}
# --values: named overrides of mappo_rnn_smax's config, each from its source ("own": the config as it is)
VALUES = {
    "own": [],
    # Mava's recurrent MAPPO sweep of its SMAX maps (instadeepai/Mava, branch exp/rec-sys-smax, commit 82583ba,
    # mava/configs/system/rec_mappo.yaml), where it differs from mappo_homogenous_rnn_smax.yaml: the rest agrees (16,384
    # env steps per update, ENT_COEF 0, FC 128 -> GRU 128 -> FC 128, world state + agent id critic, env kwargs). Its 2
    # update batches of 64 envs, gradients averaged, are one batch of 128 envs here in 2 mini-batches: each gradient step
    # sees as many steps, cut otherwise (Mava: by env, advantages normalised per 32 envs; JaxMARL: by agent and env).
    "mava": ["LR=0.004", "ANNEAL_LR=False", "UPDATE_EPOCHS=2", "NUM_MINIBATCHES=2", "MAX_GRAD_NORM=0.5"],
}


def jax_version() -> str:
    """the installed jax's version, read without importing it"""
    return importlib.metadata.version("jax")


def smax_from_wheel(wheel_dir: str) -> str:
    """Step the SMAX of another jaxmarl release: its package jaxmarl/environments/smax, from WHEEL_DIR (that release's
    wheel from PyPI, unzipped), is imported in place of the checkout's; the rest of jaxmarl (the multi-agent env
    base, the wrappers) and the baselines stay the checkout's. Call before jaxmarl is imported. Returns the release,
    "jaxmarl VERSION", from the wheel's METADATA."""
    smax_dir = os.path.join(os.path.abspath(wheel_dir), "jaxmarl", "environments", "smax")
    infos = glob.glob(os.path.join(wheel_dir, "jaxmarl-*.dist-info", "METADATA"))
    if len(infos) != 1 or not os.path.isfile(os.path.join(smax_dir, "__init__.py")):
        raise SystemExit(
            f"error: {wheel_dir} is not an unzipped jaxmarl wheel (jaxmarl-*.dist-info, jaxmarl/environments/smax)"
        )
    if "jaxmarl.environments.smax" in sys.modules:  # imported already: the finder would come too late
        raise SystemExit("error: jaxmarl's SMAX is imported already; take another release's before jaxmarl is imported")
    with open(infos[0]) as f:
        version = email.parser.Parser().parse(f)["Version"]

    class WheelSmax(importlib.abc.MetaPathFinder):  # ahead of the path finders: the package; its modules follow it
        def find_spec(self, name, path=None, target=None):
            if name != "jaxmarl.environments.smax":
                return None
            return importlib.util.spec_from_file_location(
                name, os.path.join(smax_dir, "__init__.py"), submodule_search_locations=[smax_dir]
            )

    sys.meta_path.insert(0, WheelSmax())
    import jax

    if not hasattr(jax, "tree_map"):  # releases before 0.0.3 call jax.tree_map, gone since jax 0.6: the same function
        jax.tree_map = jax.tree.map
    return f"jaxmarl {version}"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jaxmarl-dir", default=os.environ.get("JAXMARL_DIR"), help="JaxMARL checkout (default $JAXMARL_DIR)")
    p.add_argument("--baseline", choices=sorted(BASELINES), default="mappo_rnn_smax", help="which baseline to run")
    p.add_argument("--map", default="3m", help="SMAX map, the config's MAP_NAME (default 3m; SMAX baselines only)")
    p.add_argument("--total-timesteps", type=int, default=None, help="override TOTAL_TIMESTEPS (default: the config's)")
    p.add_argument(
        "--stop-at-step",
        type=int,
        default=None,
        help="exit after the last update that ends at or before this many env steps; TOTAL_TIMESTEPS, and so the\n"
        "learning-rate schedule, stays the config's (a budget cut short, not a shorter run)",
    )
    p.add_argument(
        "--seed",
        type=int,
        nargs="+",
        default=None,
        help="the PRNG seed (default: the one the baseline's main uses); several: one run per seed, vmapped in one\n"
        "jitted program, --out and --snapshot-dir holding {seed}",
    )
    p.add_argument(
        "--values",
        choices=sorted(VALUES),
        default="own",
        help="mappo_rnn_smax only: 'mava' sets Mava's SMAX sweep values (LR 0.004 constant, 2 epochs x 2 mini-batches,\n"
        "MAX_GRAD_NORM 0.5; see VALUES); 'own' (default) keeps the baseline's config",
    )
    p.add_argument(
        "--smax-wheel",
        default=None,
        metavar="DIR",
        help="mappo_rnn_smax only: step the SMAX of another jaxmarl release, DIR its wheel unzipped (e.g. 0.0.2, which\n"
        "Mava's SMAX runs installed): `pip download jaxmarl==0.0.2 --no-deps -d W && unzip -q W/*.whl -d DIR`",
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other hydra override")
    p.add_argument("--out", required=True, help="output file: .json, else CSV")
    p.add_argument("--stop-at-win-rate", type=float, default=None, help="exit once the logged win rate reaches this")
    p.add_argument("--extra-updates", type=int, default=0, help="rows still recorded after the threshold is reached")
    p.add_argument("--snapshot-dir", default=None, help="save the actor's parameters after every update here")
    p.add_argument(
        "--checkpoint",
        default=None,
        metavar="PATH",
        help="mappo_rnn_smax, one seed, --out .json: run the updates one at a time, save the run to PATH (.npz) every\n"
        "--checkpoint-every updates and on Ctrl-C/SIGTERM (exit status 3), and go on from PATH where it exists",
    )
    p.add_argument("--checkpoint-every", type=int, default=10, help="updates between two saves of --checkpoint (10)")
    args = p.parse_args(argv)
    if not args.jaxmarl_dir:
        p.error("--jaxmarl-dir or $JAXMARL_DIR is required")
    if args.seed and len(args.seed) > 1:
        if len(set(args.seed)) < len(args.seed):
            p.error(f"--seed {' '.join(map(str, args.seed))}: a seed given twice")
        if "{seed}" not in args.out or (args.snapshot_dir and "{seed}" not in args.snapshot_dir):
            p.error("several seeds: --out and --snapshot-dir must hold {seed} (one file, one folder per seed)")
        if args.stop_at_win_rate is not None or args.stop_at_step is not None:
            p.error("--stop-at-win-rate and --stop-at-step end the process: one seed at a time")
        if tuple(int(x) for x in jax_version().split(".")[:2]) < (0, 11):
            why = "with jax 0.10.2 the vmapped baseline hung on its host callbacks"
            p.error(f"several seeds in one program need jax >= 0.11 (this is {jax_version()}: {why}): one seed per process")
    if args.checkpoint:
        if args.baseline != "mappo_rnn_smax" or (args.seed and len(args.seed) > 1) or not args.out.endswith(".json"):
            p.error("--checkpoint: mappo_rnn_smax, one seed, --out a .json (its rows are kept when the run goes on)")
        if args.stop_at_win_rate is not None:
            p.error("--checkpoint and --stop-at-win-rate: a threshold run is short, run it in one go")
        if args.checkpoint_every < 1:
            p.error(f"--checkpoint-every {args.checkpoint_every}: at least 1")
    if not args.baseline.endswith("_smax"):
        if args.values != "own":
            p.error(f"--values {args.values}: values for mappo_rnn_smax's config, not {args.baseline}'s")
        if args.smax_wheel:
            p.error(f"--smax-wheel: an SMAX release for mappo_rnn_smax, not for {args.baseline}")
        if args.snapshot_dir or args.stop_at_win_rate is not None:
            p.error("--snapshot-dir and --stop-at-win-rate are for the SMAX baseline (Hanabi has no win rate)")
        args.map = None
    return args


def compose_config(baseline_dir, config_name, args):
    from hydra import compose, initialize_config_dir

    overrides = [] if args.map is None else [f"MAP_NAME={args.map}"]
    if args.total_timesteps is not None:
        overrides.append(f"TOTAL_TIMESTEPS={args.total_timesteps}")
    overrides += VALUES[args.values] + args.set  # --set last: it wins
    with initialize_config_dir(config_dir=os.path.join(baseline_dir, "config"), version_base=None):
        return compose(config_name=config_name, overrides=overrides)


class Recorder:
    """Takes the baseline's wandb.log dicts (called from its io_callback, in update order) and writes rows."""

    def __init__(self, args, config, seed, num_updates, batch_steps, out=None):
        self.args, self.config, self.num_updates, self.batch_steps = args, config, num_updates, batch_steps
        self.out = out or args.out
        self.rows, self.reached, self.done = [], None, threading.Event()
        self.meta = dict(
            runner="benchmark/jaxmarl/jaxmarl_baseline.py",
            baseline=args.baseline,
            values=args.values,
            jaxmarl_dir=os.path.abspath(args.jaxmarl_dir),
            smax_wheel=args.smax_wheel and os.path.abspath(args.smax_wheel),  # None: the checkout's SMAX
            map=args.map,
            seed=seed,
            num_updates=num_updates,
            steps_per_update=batch_steps,
            stop_at_win_rate=args.stop_at_win_rate,
            stop_at_step=args.stop_at_step,
            extra_updates=args.extra_updates,
            reached=None,
            start_unix_time=T0,
        )
        # the command, JaxMARL's commit (and its edited files), the versions that decide the numbers, the machine
        self.meta["provenance"] = provenance(args.jaxmarl_dir, ("jax", "jaxlib", "flax", "optax", "distrax", "numpy"))
        self.wall_offset = 0.0  # a resumed run's seconds before this process (resume)
        os.makedirs(os.path.dirname(os.path.abspath(self.out)), exist_ok=True)
        self.is_json = self.out.endswith(".json")
        if not self.is_json:
            self.csv_file = open(self.out, "w", newline="")
            self.csv = csv.DictWriter(self.csv_file, fieldnames=FIELDS)
            self.csv.writeheader()
            self.csv_file.flush()

    def resume(self, update: int):
        """--checkpoint: the run goes on from `update`. The rows before it come back from --out (those after it are
        trained again), its wall time counts on from the last of them, and meta["sittings"] records where each
        process began."""
        if not os.path.exists(self.out):
            sys.exit(f"error: {self.out} is gone, with the rows of the {update} updates before the checkpoint: start over")
        with open(self.out) as f:
            before = json.load(f)
        self.rows = [row for row in before["rows"] if row["update"] < update]
        if [row["update"] for row in self.rows] != list(range(update)):
            sys.exit(f"error: {self.out} lacks rows of the {update} updates before the checkpoint: start the run over")
        self.wall_offset = self.rows[-1]["wall_time"] if self.rows else 0.0
        sittings = before["meta"].get("sittings", [dict(from_update=0, start_unix_time=before["meta"]["start_unix_time"])])
        self.meta.update(start_unix_time=before["meta"]["start_unix_time"], sittings=sittings)
        self.meta["sittings"].append(dict(from_update=update, start_unix_time=T0))
        if update >= self.num_updates:  # done before this process: no row is coming
            self.done.set()

    def log(self, data, *unused_args, **unused_kwargs):
        wall = self.wall_offset + time.time() - T0
        logged = int(data["env_step"])
        row = dict(
            update=logged // self.batch_steps,
            step=logged + self.batch_steps,
            logged_env_step=logged,
            wall_time=round(wall, 3),
            win_rate=float(data.get("win_rate", math.nan)),  # Hanabi: no win rate
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
        past_threshold = self.reached is not None and row["update"] >= self.reached["update"] + self.args.extra_updates
        budget_spent = self.args.stop_at_step is not None and row["step"] + self.batch_steps > self.args.stop_at_step
        if past_threshold or budget_spent:
            self.finish()
            # The training loop is one jitted lax.scan over all updates: it cannot be interrupted from Python, and
            # this callback runs inside it. Everything is written and flushed, so leave the process right here.
            os._exit(0)
        if row["update"] + 1 >= self.num_updates:
            self.done.set()

    def write(self, row):
        if self.is_json:
            tmp = self.out + ".tmp"
            # One row a line: the file is rewritten after every update, and a committed run's diff stays a line an update.
            head = json.dumps(dict(config=self.config, meta=self.meta), indent=1)[: -len("\n}")]
            rows = ",\n".join(json.dumps(r) for r in self.rows)
            with open(tmp, "w") as f:
                f.write(f'{head},\n "rows": [\n{rows}\n ]\n}}\n')
            os.replace(tmp, self.out)
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


class SeedRows:
    """wandb.log and io_callback for seeds vmapped in one program. Its io_callback stands in for the baseline's
    `jax.experimental.io_callback(callback, None, metric)`: an ordered jax.debug.callback (vmap unrolls it into one
    call per seed) that also hands over the seed's index on the vmapped axis, so the row the baseline's callback then
    logs goes to that seed's Recorder, as ActorSnapshots' parameters go to that seed's folder."""

    def __init__(self, recorders):
        self.recorders, self.seed_index = recorders, None

    def io_callback(self, callback, result_shape, *args, **unused_kwargs):
        import jax

        import numpy as np

        assert result_shape is None, "only callbacks that return nothing"

        def on_host(index, *host):
            self.seed_index = int(index)
            try:
                callback(*jax.tree.map(np.asarray, host))
            finally:
                self.seed_index = None

        jax.debug.callback(on_host, jax.lax.axis_index(SEED_AXIS), *args, ordered=True)

    def log(self, data, *unused_args, **unused_kwargs):
        assert self.seed_index is not None, "a row logged outside SeedRows.io_callback: whose seed is it?"
        self.recorders[self.seed_index].log(data)


class ActorSnapshots:
    """Writes the actor's parameters after each update to --snapshot-dir (actor_UUUU.msgpack, and index.json with the
    update, env step and wall time of each), for benchmark/jaxmarl/jaxmarl_greedy_eval.py to evaluate afterwards.

    The parameters live inside the baseline's one jitted scan. A pass-through optax transform appended to the actor's
    optimiser chain sees them at every optimiser step: it hands params + updates (the parameters that step leaves)
    to the host with the step's number, and the host keeps those of every update's last step."""

    def __init__(self, out_dir, steps_per_update, batch_steps, num_actions):
        self.dir, self.steps_per_update, self.batch_steps = out_dir, steps_per_update, batch_steps
        self.num_actions, self.calls, self.index, self.wall_offset = num_actions, 0, [], 0.0
        os.makedirs(out_dir, exist_ok=True)

    def transform(self):
        return snapshot_transform([self])

    def resume(self, update: int, wall_offset: float):
        """--checkpoint: keep the index of the snapshots before `update`; the later ones are saved again"""
        path = os.path.join(self.dir, "index.json")
        if os.path.exists(path):
            with open(path) as f:
                self.index = [row for row in json.load(f) if row["update"] < update]
        self.wall_offset = wall_offset

    def on_step(self, step, params):
        """the parameters optimiser step `step` (0, 1, ...) left; the steps may arrive in any order (see below)"""
        from flax import serialization

        wall = self.wall_offset + time.time() - T0
        self.calls += 1
        if self.calls == 1:  # the chain this is appended to must be the actor's: its head has one output per action
            head = params["params"][max((k for k in params["params"] if k.startswith("Dense_")), key=lambda k: int(k[6:]))]
            assert head["bias"].shape == (self.num_actions,), f"not the actor's parameters: head {head['bias'].shape}"
        if (step + 1) % self.steps_per_update:
            return
        update = (step + 1) // self.steps_per_update - 1
        name = f"actor_{update:04d}.msgpack"
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(serialization.msgpack_serialize(params))
        self.index.append(dict(update=update, step=(update + 1) * self.batch_steps, wall_time=round(wall, 3), file=name))
        self.index.sort(key=lambda row: row["update"])
        with open(os.path.join(self.dir, "index.json.tmp"), "w") as f:
            json.dump(self.index, f, indent=1)
        os.replace(os.path.join(self.dir, "index.json.tmp"), os.path.join(self.dir, "index.json"))


def snapshot_transform(snapshots, seed_axis=None):
    """The pass-through optax transform of ActorSnapshots: a jax.debug.callback hands each optimiser step's number
    (counted in the transform's state) and parameters to snapshots[i], i the seed's index along the vmapped axis
    `seed_axis` (0 with one seed). Under vmap the callback runs once per seed, each with its own index and parameters.
    The callback is unordered, the step's number saying where its parameters belong: with several seeds vmapped, an
    ordered one made XLA's GPU compiler abort (jax 0.11.2 on an H200, session 58: "Check failed: shape.IsArray() ||
    shape.IsTuple()" in its fusion pass), where the unordered one compiled and ran."""
    import jax
    import jax.numpy as jnp
    import optax

    def update(updates, step, params=None):
        index = jax.lax.axis_index(seed_axis) if seed_axis else 0
        jax.debug.callback(
            lambda i, n, p: snapshots[int(i)].on_step(int(n), p), index, step, optax.apply_updates(params, updates)
        )
        return updates, step + 1

    return optax.GradientTransformation(lambda params: jnp.zeros((), jnp.int32), update)


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


def capture_update_loop(baseline) -> dict:
    """Replaces the baseline module's `jax` with a view of jax whose lax.scan, called on the baseline's `_update_step`
    (its training loop), does not run the loop: it returns the loop's initial carry and puts the step function and the
    loop's length in the dict returned. Every other scan (inside the step) is jax's own."""
    import jax

    captured = {}

    class LaxView:
        def __getattr__(self, name):
            return getattr(jax.lax, name)

        def scan(self, f, init, xs=None, length=None, **kwargs):
            if getattr(f, "__name__", None) != "_update_step":
                return jax.lax.scan(f, init, xs, length, **kwargs)
            if xs is not None or kwargs:
                raise RuntimeError("the baseline's update loop is not the scan of _update_step over a length: changed?")
            captured.update(step=f, length=length)
            return init, None

    class JaxView:
        lax = LaxView()

        def __getattr__(self, name):
            return getattr(jax, name)

    baseline.jax = JaxView()
    return captured


def checkpoint_meta(carry, run: dict) -> str:
    """What a checkpoint must match to go on: the run (config with its seed, baseline, SMAX release) and each leaf of
    the carry: its path in the tree, shape and dtype"""
    import jax
    import numpy as np

    paths = jax.tree_util.tree_flatten_with_path(carry)[0]  # the paths, not the treedef's text (it shows addresses)
    leaves = [f"{jax.tree_util.keystr(path)} {np.shape(x)} {x.dtype}" for path, x in paths]
    return json.dumps(dict(run=run, leaves=leaves), sort_keys=True)


def save_checkpoint(path: str, carry, update: int, run: dict):
    """The carry after `update` updates, its leaves as arrays of a compressed .npz (27m_vs_30m: 7 MB, 29 MB
    uncompressed, mostly the observations), written whole or not at all"""
    import jax
    import numpy as np

    leaves = {f"leaf_{i:05d}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(carry))}
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.savez_compressed(f, meta=np.array(checkpoint_meta(carry, run)), update=np.array(update), **leaves)
    os.replace(tmp, path)


def load_checkpoint(path: str, fresh, run: dict):
    """(carry, update) from `path`; `fresh`, the run's initial carry, gives the tree: a checkpoint of another run or
    of another tree is refused"""
    import jax
    import numpy as np

    with np.load(path) as f:
        if str(f["meta"]) != checkpoint_meta(fresh, run):
            sys.exit(f"error: {path} is not a checkpoint of this run (config, seed, SMAX release or the baseline's state)")
        leaves = [f[f"leaf_{i:05d}"] for i in range(len(jax.tree.leaves(fresh)))]
        return jax.tree.unflatten(jax.tree.structure(fresh), leaves), int(f["update"])


def run_in_sittings(args, baseline, config, seed, smax, on_resume) -> int:
    """--checkpoint: the baseline's training loop, one jitted update at a time, saved every --checkpoint-every updates
    and on Ctrl-C or SIGTERM (checked after each update). Goes on from --checkpoint where it exists, calling
    on_resume(update) first. smax: the SMAX release stepped (None: the checkout's). Returns the updates done: the
    loop's length, or fewer after a stop (saved)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    captured = capture_update_loop(baseline)
    train = baseline.make_train(copy.deepcopy(config))
    carry = jax.jit(train)(jax.random.PRNGKey(seed))["runner_state"]  # (runner state, 0): the loop's initial carry
    length = int(captured["length"])  # NUM_UPDATES: a float where TOTAL_TIMESTEPS is (1e7)
    run = dict(config=config, baseline=args.baseline, smax=smax)
    update = 0
    if os.path.exists(args.checkpoint):
        carry, update = load_checkpoint(args.checkpoint, carry, run)
        print(f"going on from {args.checkpoint}: {update} of {length} updates done", flush=True)
        on_resume(update)
    # one type per leaf from here on (the initial update count is weakly typed): the step compiles once
    carry = jax.tree.map(lambda x: jnp.asarray(np.asarray(x)), carry)
    step = jax.jit(lambda c: captured["step"](c, None)[0])
    stops = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stops.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while update < length and not stops:
            carry = jax.block_until_ready(step(carry))  # one update (a stop waits for it)
            update += 1
            if update % args.checkpoint_every == 0 and not stops:
                jax.effects_barrier()  # its row and snapshot are written first
                save_checkpoint(args.checkpoint, carry, update, run)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    jax.effects_barrier()
    if update < length:  # stopped
        save_checkpoint(args.checkpoint, carry, update, run)
        print(f"stopped after {update} of {length} updates, saved to {args.checkpoint}: the same command goes on")
    return update


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["WANDB_MODE"] = "disabled"
    folder, module, config_name, main_seed = BASELINES[args.baseline]
    jaxmarl_dir = os.path.abspath(args.jaxmarl_dir)
    baseline_dir = os.path.join(jaxmarl_dir, "baselines", folder)
    sys.path[:0] = [baseline_dir, jaxmarl_dir]  # the checkout's jaxmarl package wins over an installed one
    smax = smax_from_wheel(args.smax_wheel) if args.smax_wheel else None  # None: the checkout's

    cfg = compose_config(baseline_dir, config_name, args)
    import jax
    import wandb
    from omegaconf import OmegaConf

    baseline = importlib.import_module(module)
    config = OmegaConf.to_container(cfg)
    seeds = args.seed or [config["SEED"] if main_seed == "SEED" else main_seed]
    batch_steps = int(config["NUM_ENVS"]) * int(config["NUM_STEPS"])
    num_updates = int(config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"])  # as make_train does
    if args.stop_at_step is not None and not batch_steps <= args.stop_at_step <= num_updates * batch_steps:
        sys.exit(f"error: --stop-at-step {args.stop_at_step} is not within one update ({batch_steps}) and the run's end")
    print(f"JaxMARL baseline {baseline.__file__}, jax {jax.__version__} on {jax.devices()}, seeds {seeds}", flush=True)
    print(f"config: {json.dumps(config)}", flush=True)
    recs = []
    for seed in seeds:  # make_train does not read SEED: the recorded config names the seed used
        seed_config = dict(config, SEED=seed) if "SEED" in config else config
        recs.append(Recorder(args, seed_config, seed, num_updates, batch_steps, args.out.format(seed=seed)))
        recs[-1].meta.update(device=jax.devices()[0].device_kind, jax_version=jax.__version__)  # "cpu" or the GPU
        recs[-1].meta["smax"] = smax
        if len(seeds) > 1:
            recs[-1].meta["seeds_in_program"] = seeds
    if len(seeds) == 1:
        wandb.log = recs[0].log  # the baseline looks both up at call time
    else:  # vmap would make the baseline's io_callback a lax.map over the seeds (which hung on the CPU, jax 0.10.2)
        rows = SeedRows(recs)
        wandb.log, jax.experimental.io_callback = rows.log, rows.io_callback
    if args.snapshot_dir:
        from jaxmarl.environments.smax import HeuristicEnemySMAX, map_name_to_scenario

        num_actions = HeuristicEnemySMAX(scenario=map_name_to_scenario(args.map), **config["ENV_KWARGS"]).num_ally_actions
        steps_per_update = int(config["UPDATE_EPOCHS"]) * int(config["NUM_MINIBATCHES"])
        snapshots = [
            ActorSnapshots(args.snapshot_dir.format(seed=s), steps_per_update, batch_steps, num_actions) for s in seeds
        ]
        append_to_actor_chain(baseline, snapshot_transform(snapshots, SEED_AXIS if len(seeds) > 1 else None))

    main_start = round(time.time() - T0, 3)
    for rec in recs:
        rec.meta["main_start_wall_time"] = main_start
    print(f"imports and setup done at wall {main_start:.1f}s; tracing, compiling, training")
    if args.checkpoint:  # one seed, its updates one at a time from Python: a run that can stop and go on

        def on_resume(update):
            recs[0].resume(update)
            if args.snapshot_dir:
                snapshots[0].resume(update, recs[0].wall_offset)

        if run_in_sittings(args, baseline, recs[0].config, seeds[0], smax, on_resume) < num_updates:
            sys.exit(3)
        recs[0].done.wait(timeout=600)
        recs[0].finish()
        return
    train = baseline.make_train(copy.deepcopy(config))
    if len(seeds) == 1:  # the baseline's main, less wandb
        jax.jit(train)(jax.random.PRNGKey(seeds[0]))
    else:  # one run per seed: the same program vmapped over the seeds' keys
        jax.jit(jax.vmap(train, axis_name=SEED_AXIS))(jax.numpy.stack([jax.random.PRNGKey(s) for s in seeds]))
    # Dispatch is asynchronous: wait for the scan (and its callbacks) to finish.
    jax.effects_barrier()
    logged_all = all([rec.done.wait(timeout=600) for rec in recs])
    for rec in recs:
        rec.finish()
    if not logged_all:
        counts = ", ".join(f"seed {rec.meta['seed']}: {len(rec.rows)}" for rec in recs)
        sys.exit(f"error: not all {num_updates} updates were logged ({counts})")


if __name__ == "__main__":
    main()
