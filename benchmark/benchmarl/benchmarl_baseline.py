"""Run BenchMARL's MAPPO or IPPO on a VMAS task with BenchMARL's own configs, and record its learning curve and speed,
to compare with mappo.py and ippo.py (--env-id vmas/<task>) on the same machine.

Nothing of BenchMARL is copied here: its experiment, algorithm, model and task configs are loaded from the yaml files it
ships (`ExperimentConfig.get_from_yaml()`, `MappoConfig` / `IppoConfig`, `MlpConfig` for actor and critic,
`VmasTask.<TASK>`), and only these are changed: max_n_frames (--max-n-frames, the budget), the loggers (csv only: no
wandb), no rendering, none of its own checkpoints (--checkpoint below writes this runner's), the run folder (a temporary
one), and the evaluation interval if --evaluation-interval is given. Its defaults (BenchMARL 1.5.2,
conf/experiment/base_experiment.yaml): 6000 frames per batch from 10 envs per worker, 45 minibatch iterations of 400, lr
5e-5, gamma 0.99, max_n_frames 3M, evaluation every 120000 frames over 10 episodes with deterministic actions; MAPPO and
IPPO with their own yaml (clip 0.2, entropy 0, GAE lambda 0.9, squared-error critic loss, a tanh-squashed Gaussian
policy with a softplus-mapped scale); actor and critic MlpConfig (conf/model/layers/mlp.yaml): two 256-wide tanh layers.

A "minibatch iteration" of BenchMARL's is a pass over the batch: each of the on_policy_n_minibatch_iters iterations
samples ceil(frames per batch / minibatch size) mini-batches without replacement (Experiment._collection_loop), so its
default is 45 epochs of 15 mini-batches of 400 frames, 675 gradient steps per batch. For a run at another setting
(benchmark/measure/vmas_speed.py's equal-work timings) these options set the experiment's and the models' fields, each
left as BenchMARL's when not given:
  --n-envs-per-worker (on_policy_n_envs_per_worker), --frames-per-batch (on_policy_collected_frames_per_batch),
  --minibatch-iters (on_policy_n_minibatch_iters: epochs), --minibatch-size (on_policy_minibatch_size),
  --num-cells (MlpConfig.num_cells of actor and critic, e.g. 64 64), --no-evaluation (evaluation False: no evaluation,
  not even BenchMARL's first one at iteration 0).
e.g. mappo.py's VMAS_PRESET update, 10 epochs of one full batch of 6000: --minibatch-iters 10 --minibatch-size 6000.
--config fine_tuned takes BenchMARL's VMAS-tuned experiment values instead of base_experiment.yaml's (FINE_TUNED_VMAS
below: 600 envs, 60,000 frames per batch, 45 passes of mini-batches of 4096, gamma 0.9, 10M frames, 200 evaluation
episodes every 120,000 frames); the options above still win where given.

Install (a separate venv, not the repo's; torch's CPU wheel first, and the torchvision built for it, or pip replaces
them with CUDA builds):

    python3.11 -m venv /work/benchmarl-venv
    /work/benchmarl-venv/bin/pip install torch==2.13.0 torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cpu
    /work/benchmarl-venv/bin/pip install torch==2.13.0 torchvision==0.28.0 benchmarl==1.5.2 torchrl==0.11.1 \\
        tensordict==0.11.0 vmas==1.5.2

(benchmarl 1.5.2 needs torchrl < 0.12; vmas 1.5.2 is the version of requirements.txt.) Where download.pytorch.org
cannot be reached (as here on 2026-11-28), pip takes PyPI's torchvision, which fails to import beside the CPU torch:
`/work/benchmarl-venv/bin/pip uninstall -y torchvision` then; BenchMARL lists it but these runs never import it.

Run:

    /work/benchmarl-venv/bin/python benchmark/benchmarl/benchmarl_baseline.py --algorithm mappo --task navigation \\
        --seed 1 --max-n-frames 3000000 --out navigation_mappo_seed1.json

What is recorded (--out, JSON), one row per BenchMARL iteration (one batch of frames):
- step: total frames (env steps) so far;
- train_return: BenchMARL's collection/agents/reward/episode_reward_mean, the mean over the agents of their summed
  reward over the episodes that ended in the batch (ours: the team return, the agents' mean reward summed over the
  episode: the same quantity);
- eval_return, where BenchMARL evaluated (its deterministic policy, 10 episodes): eval/agents/reward/episode_reward_mean;
- wall_time: timers/total_time, seconds from the start.
And meta: the configs as run, the budget, sps: frames over the total time less the evaluations' time, and the
frames at which the run was resumed (resumed_at).

Resuming (--checkpoint FILE): every --checkpoint-interval frames (after an iteration) the run writes FILE, atomically:
BenchMARL's own state_dict (networks, counters, the collector's state; its replay buffer, refilled every on-policy
iteration, is left out), the Adam states that BenchMARL's checkpoints leave out, the random generators' states, and
the rows and wall time so far. Started with FILE present, the run goes on from it: the state loaded as BenchMARL's
restore does it (Experiment.load_state_dict), the Adam and generator states put back after run() has reseeded them.
What differs from a run never stopped: the VMAS episodes under way start again (a reset, like a truncation), and
iterations after the last checkpoint are run again. The rows' wall_time (BenchMARL's total_time, restored with its
state) sums the iterations that count, on whatever machine ran them; meta's wall, this runner's clock, adds each
part's set-up. A checkpoint of another algorithm, task, seed or budget is refused (exit 2).
"""

import argparse
import csv
import dataclasses
import json
import os
import runpy
import random
import sys
import tempfile
import time

# benchmark/provenance.py, loaded by its path: benchmark/ on sys.path would shadow packages by its folders' names
provenance = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "provenance.py"))
provenance = provenance["provenance"]

# --config fine_tuned: the experiment values of BenchMARL's VMAS-tuned config (fine_tuned/vmas/conf/config.yaml in its
# repository, not in its pip package; the same at tag 1.5.0 and on main at 179a956: gamma 0.9 since f1688561,
# 2025-04-25, the rest since 116ce095): 600 envs, 60,000 frames per batch, 45 passes of mini-batches of 4096, 10M
# frames, 200 evaluation episodes every 120,000 frames. Its algorithm, task and model are BenchMARL's defaults (as
# here); its devices (cuda) are not taken: runs here are on the CPU.
FINE_TUNED_VMAS = dict(
    gamma=0.9,
    max_n_frames=10_000_000,
    on_policy_collected_frames_per_batch=60_000,
    on_policy_n_envs_per_worker=600,
    on_policy_n_minibatch_iters=45,
    on_policy_minibatch_size=4096,
    evaluation_interval=120_000,
    evaluation_episodes=200,
)

TAGS = {  # BenchMARL's csv scalars -> our row keys
    "counters_total_frames": "step",
    "collection_agents_reward_episode_reward_mean": "train_return",
    "eval_agents_reward_episode_reward_mean": "eval_return",
    "timers_total_time": "wall_time",
    "timers_evaluation_time": "eval_time",
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithm", choices=["mappo", "ippo"], required=True)
    p.add_argument("--task", required=True, help="a VMAS task of BenchMARL's (navigation, balance, transport, sampling)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--config", choices=["base", "fine_tuned"], default="base",
                   help="base: base_experiment.yaml; fine_tuned: its VMAS-tuned values (FINE_TUNED_VMAS)")  # fmt: skip
    p.add_argument("--max-n-frames", type=int, default=None, help="the budget (default: BenchMARL's, 3M)")
    p.add_argument("--evaluation-interval", type=int, default=None, help="frames (default: BenchMARL's, 120000)")
    p.add_argument("--out", required=True, help="JSON: meta and one row per iteration")
    p.add_argument("--checkpoint", default=None, help="a file to resume from and to save to (see Resuming above)")
    p.add_argument("--checkpoint-interval", type=int, default=30000, help="frames between saves (a multiple of 6000)")
    # another setting than BenchMARL's (see above); each None: BenchMARL's
    p.add_argument("--n-envs-per-worker", type=int, default=None, help="on_policy_n_envs_per_worker (default 10)")
    p.add_argument("--frames-per-batch", type=int, default=None, help="on_policy_collected_frames_per_batch (6000)")
    p.add_argument("--minibatch-iters", type=int, default=None, help="on_policy_n_minibatch_iters: epochs (45)")
    p.add_argument("--minibatch-size", type=int, default=None, help="on_policy_minibatch_size (400)")
    p.add_argument("--num-cells", type=int, nargs="+", default=None, help="actor and critic widths (256 256)")
    p.add_argument("--no-evaluation", action="store_true", help="no evaluation at all")
    args = p.parse_args(argv)
    for name in ("n_envs_per_worker", "frames_per_batch", "minibatch_iters", "minibatch_size"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    if args.max_n_frames is not None and args.max_n_frames <= 0:
        p.error("--max-n-frames must be positive")
    if args.checkpoint_interval <= 0:
        p.error("--checkpoint-interval must be positive")
    return args


def experiment_fields(args) -> dict:
    """ExperimentConfig's fields this run sets: --config's values, then each option given (num_cells aside)"""
    fields = dict(FINE_TUNED_VMAS) if args.config == "fine_tuned" else {}
    if args.max_n_frames is not None:
        fields["max_n_frames"] = args.max_n_frames
    if args.evaluation_interval is not None:
        fields["evaluation_interval"] = args.evaluation_interval
    given = {key: value for key, value in setting(args).items() if value is not None and key != "num_cells"}
    return fields | given


def setting(args) -> dict:
    """The options that change BenchMARL's setting -> its fields (ExperimentConfig's; num_cells: MlpConfig's), None
    where not given"""
    return dict(
        on_policy_n_envs_per_worker=args.n_envs_per_worker,
        on_policy_collected_frames_per_batch=args.frames_per_batch,
        on_policy_n_minibatch_iters=args.minibatch_iters,
        on_policy_minibatch_size=args.minibatch_size,
        evaluation=False if args.no_evaluation else None,
        num_cells=args.num_cells,
    )


def read_rows(scalars_dir: str) -> list[dict]:
    """BenchMARL's csv logger folder (one file per scalar, rows "iteration,value") -> one row per iteration with the
    keys of TAGS (eval_return only where it evaluated)"""
    rows = {}
    for tag, key in TAGS.items():
        path = os.path.join(scalars_dir, f"{tag}.csv")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for iteration, value in csv.reader(f):
                rows.setdefault(int(iteration), {})[key] = float(value)
    out = [rows[i] for i in sorted(rows)]
    for row in out:
        row["step"] = int(row["step"])
    return out


def speed(rows: list[dict]) -> float:
    """Frames per second of the run, evaluations left out (ours are measured the same way)"""
    if not rows:
        return float("nan")
    seconds = rows[-1]["wall_time"] - sum(r.get("eval_time", 0.0) for r in rows)
    return rows[-1]["step"] / seconds


def merge_rows(before: list[dict], after: list[dict]) -> list[dict]:
    """The rows of a resumed run: those saved with its checkpoint, then this part's; an iteration run again after the
    checkpoint replaces the row it had"""
    rows = {r["step"]: r for r in before}
    rows.update((r["step"], r) for r in after)
    return [rows[step] for step in sorted(rows)]


def scalars_folder(folder: str) -> str:
    """The csv logger's scalars folder under BenchMARL's run folder"""
    [scalars] = [os.path.join(d, "scalars") for d, subdirs, _ in os.walk(folder) if "scalars" in subdirs]
    return scalars


def generator_states() -> dict:
    """torch's, numpy's and Python's random states, in types torch.load(weights_only=True) reads"""
    import numpy as np
    import torch

    name, keys, pos, has_gauss, cached = np.random.get_state()
    return dict(torch=torch.get_rng_state(), numpy=[name, torch.from_numpy(keys.astype("int64")), pos, has_gauss, cached],
                python=random.getstate())  # fmt: skip


def set_generator_states(states: dict) -> None:
    import numpy as np
    import torch

    torch.set_rng_state(states["torch"])
    name, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))


def so_far(saved: dict | None) -> dict:
    """What the sessions before this one left: their rows, run time and where each resumed (nothing for a new run)"""
    return {key: saved[key] for key in ("rows", "wall", "resumed_at")} if saved else dict(rows=[], wall=0.0, resumed_at=[])


def resumable(experiment_class, path: str, saved: dict | None, session_start: float, run: dict):
    """BenchMARL's Experiment, saving to `path` (with `run`, what the run is) where BenchMARL would write its own
    checkpoint, and going on from `saved` (a checkpoint of this run, or None)"""
    import torch

    before = so_far(saved)

    class Resumable(experiment_class):
        def _collection_loop(self):  # run() has just reseeded every generator: a resumed run takes its own back
            if saved is not None:
                for group, optimizers in self.optimizers.items():
                    for name, optimizer in optimizers.items():
                        optimizer.load_state_dict(saved["optimizers"][group][name])
                set_generator_states(saved["generators"])
            super()._collection_loop()

        def _save_experiment(self):  # called every checkpoint_interval frames, after an iteration
            state = dict(
                experiment=self.state_dict(),
                optimizers={g: {n: o.state_dict() for n, o in opts.items()} for g, opts in self.optimizers.items()},
                generators=generator_states(),
                rows=merge_rows(before["rows"], read_rows(scalars_folder(str(self.folder_name)))),
                wall=before["wall"] + time.time() - session_start,
                resumed_at=before["resumed_at"],
                run=run,
            )
            torch.save(state, path + ".tmp")
            os.replace(path + ".tmp", path)  # a run stopped while saving keeps the previous checkpoint

    return Resumable


def main(argv=None):
    args = parse_args(argv)
    from benchmarl.algorithms import IppoConfig, MappoConfig
    from benchmarl.environments import VmasTask
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    config = ExperimentConfig.get_from_yaml()
    for key, value in experiment_fields(args).items():
        setattr(config, key, value)
    config.loggers, config.render, config.checkpoint_at_end, config.checkpoint_interval = ["csv"], False, False, 0
    overrides = {key: value for key, value in setting(args).items() if value is not None}
    saved, run = None, dict(algorithm=args.algorithm, task=args.task, seed=args.seed, budget=config.max_n_frames)
    if overrides:  # a run at BenchMARL's own setting keeps the run of checkpoints written before these options
        run["setting"] = overrides
    if args.config != "base":  # the same for the config
        run["config"] = args.config
    if args.checkpoint is not None:
        config.checkpoint_interval, config.exclude_buffer_from_checkpoint = args.checkpoint_interval, True
        if os.path.exists(args.checkpoint):
            import torch

            saved = torch.load(args.checkpoint, weights_only=True)
            if saved.get("run", run) != run:  # (checkpoints before this check hold no "run")
                print(f"{args.checkpoint} is another run's ({saved['run']}), not {run}: move it away", file=sys.stderr)
                sys.exit(2)
            saved["resumed_at"].append(saved["experiment"]["state"]["total_frames"])
            print(f"resuming from {args.checkpoint} at {saved['resumed_at'][-1]} frames", file=sys.stderr)
    algorithm = (MappoConfig if args.algorithm == "mappo" else IppoConfig).get_from_yaml()
    task = getattr(VmasTask, args.task.upper()).get_from_yaml()
    model, critic_model = MlpConfig.get_from_yaml(), MlpConfig.get_from_yaml()
    if "num_cells" in overrides:
        model.num_cells, critic_model.num_cells = list(overrides["num_cells"]), list(overrides["num_cells"])
    before, start = so_far(saved), time.time()
    with tempfile.TemporaryDirectory() as folder:
        config.save_folder = folder
        experiment_class = Experiment if args.checkpoint is None else resumable(Experiment, args.checkpoint, saved, start, run)
        experiment = experiment_class(
            task=task, algorithm_config=algorithm, model_config=model, critic_model_config=critic_model, seed=args.seed,
            config=config,
        )  # fmt: skip
        if saved is not None:
            experiment.load_state_dict(saved["experiment"])  # what BenchMARL's restore_file does
        experiment.run()
        rows = merge_rows(before["rows"], read_rows(scalars_folder(folder)))
    wall = before["wall"] + time.time() - start
    meta = dict(algorithm=args.algorithm, task=args.task, seed=args.seed, budget=config.max_n_frames, wall=wall)
    meta["resumed_at"] = before["resumed_at"]
    meta.update(sps=speed(rows), experiment=dataclasses.asdict(config), algorithm_config=dataclasses.asdict(algorithm))
    meta["task_config"] = dict(task.config)
    meta["model_config"], meta["critic_model_config"] = dataclasses.asdict(model), dataclasses.asdict(critic_model)
    # the command, the versions that decide the numbers (BenchMARL from PyPI: no checkout), the machine and device
    meta["provenance"] = provenance(packages=("benchmarl", "torchrl", "tensordict", "vmas", "torch", "numpy"))
    meta["device"] = str(config.train_device)
    with open(args.out, "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1, default=str)
    print(
        f"done: {len(rows)} iterations, {rows[-1]['step'] if rows else 0} frames, {meta['sps']:.0f} frames/s", file=sys.stderr
    )


if __name__ == "__main__":
    main()
