# mappo_async_seed.py: SEED-style asynchronous MAPPO (env clients, batching inference server, learner over torch RPC).
# Diff base: mappo.py. Details: README.md#mappo_async_seedpy
import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"  # SMAX steps on the CPU: torch owns the GPU
os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # and JAX never reserves GPU memory
# TensorPipe warns about every pipe closed at shutdown; a client also keeps c10d's C++ stack dumps (a learner that is
# not there yet, say) off its stderr: it reports its own errors in one line
os.environ.setdefault(
    "TORCH_CPP_LOG_LEVEL", "FATAL" if "--role client" in " ".join(sys.argv) or "--role=client" in sys.argv else "ERROR"
)

import argparse
import contextlib
import copy
import ctypes
import errno
import importlib.util
import json
import math
import multiprocessing as mp
import queue
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import timedelta
from typing import Annotated, Literal, Optional

import numpy as np
import torch
import torch.distributed as tdist
import torch.distributed.rpc as rpc
import torch.nn as nn
import tyro
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from torch.utils.tensorboard import SummaryWriter

from popart import MaskedCategorical, PopArt, masked_mean

warnings.filterwarnings("ignore", message="You are using a Backend")  # raised inside torch's own rpc.init_rpc


@dataclass
class Args:
    """Asynchronous MAPPO (Fu et al., SEED architecture) with the MAPPO paper's defaults (Yu et al. 2022), per env
    family; any flag you pass wins. --num-envs envs in total: --num-clients clients x --num-splits splits x k envs.

    | arg                  | SMAC/SMAX (paper)  | MPE (paper)            | source              |
    |----------------------|--------------------|------------------------|---------------------|
    | num-envs x num-steps | 8 x 400            | 128 x 25               | Tables 5, 6         |
    | learning-rate        | 5e-4               | 7e-4                   | Tables 11, 12       |
    | update-epochs        | 15 (map table)     | 10 spread, 15 others   | Tables 11, 12       |
    | activation           | relu               | tanh spread/speaker    | Tables 11, 12       |
    | state-type           | as                 | cl                     | Sections 4.2, 5     |
    | gamma / gae-lambda / clip / value clip / Huber delta / grad clip: 0.99 / 0.95 / 0.2 / 0.2 / 10 / 10 (Table 3) |
    """

    # experiment
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """name of this experiment, part of the run name"""
    seed: int = 1
    """seed of random, numpy, torch and the envs (env i gets seed + i; SMAX: one key, split every step)"""
    torch_deterministic: bool = True
    """sets `torch.backends.cudnn.deterministic`"""
    cuda: bool = True
    """train on the GPU when CUDA is available"""
    track: bool = False
    """log to Weights and Biases (tensorboard is always written to runs/)"""
    wandb_project_name: str = "cleanmappo"
    """the W&B project"""
    wandb_entity: Optional[str] = None
    """the W&B entity (team)"""
    save_model: bool = False
    """write a checkpoint to runs/{run_name}/{exp_name}.pt at the end (Ctrl-C or --resume always write one)"""
    save_interval: int = 0
    """also write that checkpoint every N updates, so that a run killed without Ctrl-C can --resume (0: off)"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint: its args are the defaults, flags you pass win"""
    eval_only: Optional[str] = None
    """evaluate the policy in this checkpoint (greedy, --eval-episodes) and exit"""

    # env
    env_id: str = "3m"
    """a SMAX map (3m, 2s3z, 5m_vs_6m, ...), smaclite/<map> (2s3z, MMM2, ...), or an MPE task (simple_spread_v3, ...)"""
    num_envs: int = 8
    """parallel environments [MAPPO: 8 SMAC (Table 6), 128 MPE (Table 5)]"""
    num_steps: int = 400
    """steps per env per rollout [MAPPO: buffer length 400 SMAC (Table 6), 25 MPE (Table 5)]"""
    total_timesteps: int = 10_000_000
    """env steps to train for [MAPPO: at most 10M on SMAC (Section 5)]"""
    eval_interval: int = 1
    """evaluate every this many updates, 0 never [MAPPO: after every iteration; ours: 5 on smaclite, slow]"""
    eval_episodes: int = 32
    """greedy episodes per evaluation [MAPPO: 32 test games]"""
    num_workers: int = 0
    """smaclite only: env worker processes, 0 = min(num envs, CPU cores)"""
    num_stacked_frames: int = 1
    """observations stacked per agent, 1 = none [MAPPO: 4 with its MLP on 3s_vs_4z, 3s_vs_5z (Table 12); 1 with a GRU]"""

    # algorithm
    learning_rate: float = 5e-4
    """actor learning rate [MAPPO: 5e-4 SMAC (Table 12), 7e-4 MPE (Table 11)]"""
    critic_learning_rate: float = 5e-4
    """critic learning rate [MAPPO: same as the actor's]"""
    anneal_lr: bool = False
    """linearly anneal both learning rates to 0 [MAPPO: off]"""
    gamma: float = 0.99
    """discount [MAPPO: 0.99 (Table 3)]"""
    gae_lambda: float = 0.95
    """GAE lambda [MAPPO: 0.95 (Table 3)]"""
    num_minibatches: int = 1
    """mini-batches per epoch [MAPPO: 1, Suggestion 3; 2 on MMM2 (Table 12)]"""
    update_epochs: int = 15
    """PPO epochs per rollout [MAPPO: 15 easy maps, 10 or 5 hard (Table 12); 10 spread (Table 11)]"""
    norm_adv: bool = True
    """normalise advantages over the active agent-steps of the batch [MAPPO: on]"""
    clip_coef: float = 0.2
    """PPO ratio clip [MAPPO: 0.2 (Table 3)]"""
    clip_vloss: bool = True
    """clip the value change around the rollout's value, by clip-coef [MAPPO: value clip 0.2 (Table 3)]"""
    ent_coef: float = 0.01
    """entropy bonus [MAPPO: 0.01]"""
    vf_coef: float = 1.0
    """value loss weight [MAPPO: 1, separate actor and critic optimisers]"""
    max_grad_norm: float = 10.0
    """gradient clip norm, actor and critic each [MAPPO: 10 (Table 3)]"""
    use_huber: bool = True
    """Huber value loss; off: squared error [MAPPO: Huber (Table 3)]"""
    huber_delta: float = 10.0
    """Huber delta [MAPPO: 10 (Table 3)]"""
    use_popart: bool = True
    """PopArt value normalisation (popart.py) [MAPPO: on, Suggestion 1]"""
    hidden_dim: int = 64
    """width of the hidden layers [MAPPO: 64 (Tables 5, 6)]"""
    num_layers: int = 2
    """hidden layers in actor and critic [MAPPO: 2 (Tables 5, 6)]"""
    activation: Literal["relu", "tanh"] = "relu"
    """hidden activation [MAPPO: ReLU SMAC (Table 12); Tanh spread and speaker-listener (Table 11)]"""
    use_feature_norm: bool = True
    """LayerNorm on the network inputs [MAPPO: feature normalisation on (Table 3)]"""
    gain: float = 0.01
    """orthogonal-init gain of the policy head [MAPPO: 0.01; 1 on MMM2 (Table 12)]"""
    state_type: Literal["as", "ep", "cl"] = "as"
    """critic input: as = env state + own obs + id, ep = env state + id, cl = all obs [MAPPO: as SMAC, cl MPE]"""
    death_masking: bool = True
    """a dead agent's critic input is zeros + its agent id (all zeros with cl, which has no id) [MAPPO: on, Suggestion 5]"""
    policy_active_masks: bool = True
    """leave dead agents' steps out of the policy loss and entropy [MAPPO: on]"""
    value_active_masks: bool = False
    """leave dead agents' steps out of the value loss [MAPPO: off, train_smac.sh passes the store_false flag]"""
    recurrent: bool = False
    """MLP -> GRU -> LayerNorm actor and critic as mappo_rnn.py: the server keeps a hidden state per (client, split,
    env, agent), the learner trains by chunks; on the maps of Async MAPPO Table 2 it also sets that table's batch
    magnification (num-envs = 8 x it) and sample reuse (update-epochs) [Async MAPPO: MLP + GRU (Table 2); off: mappo.py]"""
    data_chunk_length: int = 10
    """--recurrent: BPTT chunk length, steps [MAPPO: 10 (Table 3)]"""

    # async (SEED) architecture
    asynchronous: Annotated[bool, tyro.conf.arg(name="async")] = True
    """env clients, inference server and learner run concurrently; --no-async runs the same networks and update
    serially in one process (the speed-up baseline)"""
    num_clients: int = 2
    """env client processes"""
    num_splits: int = 2
    """env splits per client, stepped in turn while the other splits wait for actions [Async MAPPO: 2 is best]"""
    envs_per_split: int = 0
    """envs per split (k); 0 = num-envs / (num-clients * num-splits); when set, num-envs = clients * splits * k"""
    server_batch: int = 0
    """requests (one split each) per inference batch, 0 = num-clients; at most num-clients x num-splits"""
    flush_timeout: float = 0.002
    """seconds the server waits to fill a batch before it runs a partial one (never hangs on a partial batch)"""
    max_policy_lag: int = 4
    """a rollout segment with a step acted by a policy more than this many updates old is dropped (and counted)"""
    role: Literal["all", "learner", "client"] = "all"
    """all: learner + server here, --num-clients local client processes; learner / client: one role of a multi-machine
    run (README.md#multi-machine)"""
    rank: int = 0
    """client role: this client's RPC rank, 1 .. world-size - 1 (the learner is rank 0)"""
    world_size: int = 0
    """learner and client roles: learner + clients; 0 = num-clients + 1"""
    master_addr: str = "127.0.0.1"
    """the learner's address (an address of one of its interfaces): the rendezvous store binds to it (to all interfaces,
    with a warning, if it is not local), TensorPipe to the loopback interface when it is 127.0.0.1 or localhost"""
    master_port: int = 29500
    """the learner's rendezvous port (learner and client roles)"""
    rpc_timeout: float = 60.0
    """seconds before an RPC call or the rendezvous fails; a client waiting for its actions pings the learner this often"""
    client_timeout: float = 30.0
    """seconds without a request from a client before the learner gives up on it"""
    init_method: Optional[str] = None
    """rendezvous URL of --role learner/client; default tcp://master-addr:master-port (--role all: a file store)"""

    # computed, not flags
    batch_size: tyro.conf.Suppress[int] = field(default=0, init=False)
    """(computed) num_envs * num_steps env steps per rollout"""
    minibatch_size: tyro.conf.Suppress[int] = field(default=0, init=False)
    """(computed) chunks per mini-batch: ceil(ceil(num_steps / C) * num_envs * num_agents / num_minibatches), C = the
    chunk length with --recurrent, else 1 (a chunk is then one agent-step)"""
    num_iterations: tyro.conf.Suppress[int] = field(default=0, init=False)
    """(computed) total_timesteps // batch_size"""

    def __post_init__(self):
        self.batch_size = self.num_envs * self.num_steps
        self.num_iterations = self.total_timesteps // max(self.batch_size, 1)


MPE_ENVS = ("simple_spread_v3", "simple_reference_v3", "simple_speaker_listener_v4")
SMAC_PRESET = dict(num_envs=8, num_steps=400, learning_rate=5e-4, critic_learning_rate=5e-4, update_epochs=15)
SMAC_PRESET.update(num_minibatches=1, gain=0.01, activation="relu", state_type="as", eval_interval=1)
MPE_PRESET = dict(SMAC_PRESET, num_envs=128, num_steps=25, learning_rate=7e-4, critic_learning_rate=7e-4, state_type="cl")
# MAPPO Table 12: per-map epochs, mini-batches and head gain (maps not listed: 15, 1, 0.01)
SMAC_MAP_PRESETS = {
    **{m: dict(update_epochs=10) for m in ("25m", "5m_vs_6m", "10m_vs_11m")},
    **{m: dict(update_epochs=5) for m in ("2c_vs_64zg", "3s5z", "3s5z_vs_3s6z", "27m_vs_30m", "6h_vs_8z", "corridor")},
    "MMM2": dict(update_epochs=5, num_minibatches=2, gain=1.0),
    **{m: dict(num_stacked_frames=4) for m in ("3s_vs_4z", "3s_vs_5z")},  # the paper's MLP maps: 4 stacked frames
}
# Async MAPPO Table 2 (--recurrent): batch magnification over the serial 8 envs x 400 steps -> num-envs, sample reuse
ASYNC_TABLE_2 = {m: dict(num_envs=60, update_epochs=10) for m in ("3s_vs_4z", "5m_vs_6m", "8m_vs_9m", "3s5z_vs_3s6z")}
ASYNC_TABLE_2.update({"3s_vs_5z": dict(num_envs=60, update_epochs=15), "27m_vs_30m": dict(num_envs=16, update_epochs=5)})
ASYNC_TABLE_2["MMM2"] = dict(num_envs=48, update_epochs=5)
MPE_TASK_PRESETS = {  # MAPPO Table 11
    "simple_spread_v3": dict(update_epochs=10, activation="tanh"),
    "simple_reference_v3": dict(update_epochs=15, activation="relu"),
    "simple_speaker_listener_v4": dict(update_epochs=15, activation="tanh"),
}
# SMAC's episode limits (smac_maps.py); SMAClite has none of its own, so the time limit is a truncation
SMAC_EPISODE_LIMITS = {"3m": 60, "8m": 120, "25m": 150, "5m_vs_6m": 70, "8m_vs_9m": 120, "10m_vs_11m": 150}
SMAC_EPISODE_LIMITS.update({"27m_vs_30m": 180, "MMM": 150, "MMM2": 180, "2s3z": 120, "3s5z": 150, "3s5z_vs_3s6z": 170})
SMAC_EPISODE_LIMITS.update({"3s_vs_5z": 250, "2c_vs_64zg": 400, "corridor": 400, "bane_vs_bane": 200, "2s_vs_1sc": 300})
SMACLITE_INSTALL = (
    "SMAClite is not installed. It is not on PyPI; install it from its git repository, after the system library\n"
    "that its Rtree dependency needs:\n"
    "  sudo apt-get install libspatialindex-dev\n"
    "  pip install Rtree==1.0.0 scikit-learn\n"
    "  pip install --no-deps git+https://github.com/uoe-agents/smaclite.git\n"
    "(--no-deps keeps SMAClite's pygame from overwriting mpe2's pygame-ce.)"
)


def fail(message: str):
    """Bad input: a message on stderr and exit status 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


@contextlib.contextmanager
def quiet():
    """Silences stdout down to file descriptor 1: importing jaxmarl swaps sys.stdout and prints about optional
    submodules; SMAClite prints which RVO2 port it uses."""
    sys.stdout.flush()
    saved_fd, saved_stdout = os.dup(1), sys.stdout
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout = saved_stdout
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def smax_maps() -> list[str]:
    with quiet():
        from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO
    return sorted(MAP_NAME_TO_SCENARIO)


def smaclite_maps() -> list[str]:
    try:
        import gymnasium as gym
        import smaclite  # noqa: F401  (registers smaclite/<map>-v0)
    except ImportError:
        fail(SMACLITE_INSTALL)
    return sorted(k[len("smaclite/") : -len("-v0")] for k in gym.registry if k.startswith("smaclite/") and "custom" not in k)


def env_presets(env_id: str, recurrent: bool = False) -> dict:
    """The paper's settings for env_id; exits 2 with the list of valid ids when env_id is unknown."""
    if recurrent:  # Table 2's batch and reuse on its maps (SMAX or SMAClite), MAPPO's settings elsewhere
        return {**env_presets(env_id), "num_stacked_frames": 1, **ASYNC_TABLE_2.get(env_id.removeprefix("smaclite/"), {})}
    if env_id in MPE_ENVS:
        return {**MPE_PRESET, **MPE_TASK_PRESETS[env_id]}
    if env_id.startswith("smaclite/"):
        map_name = env_id[len("smaclite/") :]
        if map_name not in smaclite_maps():
            fail(f"unknown SMAClite map {map_name!r}; valid: " + ", ".join(f"smaclite/{m}" for m in smaclite_maps()))
        return {**SMAC_PRESET, **SMAC_MAP_PRESETS.get(map_name, {}), "eval_interval": 5}
    if env_id not in smax_maps():
        fail(
            f"unknown --env-id {env_id!r}. Valid ids:\n  SMAX: {', '.join(smax_maps())}\n  MPE: {', '.join(MPE_ENVS)}\n"
            "  SMAClite: smaclite/<map> (2s3z, 3s5z, MMM2, ...; needs SMAClite installed)"
        )
    return {**SMAC_PRESET, **SMAC_MAP_PRESETS.get(env_id, {})}


def validate(args: Args):
    positive = ("num_envs", "num_steps", "total_timesteps", "eval_episodes", "learning_rate", "critic_learning_rate")
    positive += ("num_stacked_frames", "num_clients", "num_splits", "envs_per_split", "server_batch", "rpc_timeout")
    positive += ("client_timeout", "data_chunk_length")
    positive += ("num_minibatches", "update_epochs", "hidden_dim", "num_layers", "clip_coef", "max_grad_norm", "huber_delta")
    for name in positive:
        if not getattr(args, name) > 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    for name in ("eval_interval", "save_interval", "num_workers", "ent_coef", "vf_coef", "flush_timeout"):
        if getattr(args, name) < 0:
            fail(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if args.role == "client" and not 1 <= args.rank < args.world_size:
        fail(f"--rank {args.rank} must be in 1 .. --world-size - 1 = {args.world_size - 1} for a client")
    if args.role != "client" and args.server_batch > args.num_clients * args.num_splits:  # it would never fill
        fail(
            f"--server-batch {args.server_batch} exceeds the {args.num_clients * args.num_splits} requests that can be "
            "outstanding (one per split: --num-clients x --num-splits)"
        )
    if args.max_policy_lag < 0:
        fail(f"--max-policy-lag must be >= 0, got {args.max_policy_lag}")
    if args.resume and args.eval_only:
        fail("--resume and --eval-only are exclusive: give one checkpoint")
    if args.track and importlib.util.find_spec("wandb") is None:
        fail("--track needs wandb: pip install wandb")
    if args.recurrent and args.data_chunk_length > args.num_steps:  # a chunk holds one env's steps of one rollout
        fail(f"--data-chunk-length {args.data_chunk_length} exceeds the rollout's --num-steps {args.num_steps}")
    if not 0 < args.gamma <= 1:  # a discount above 1 sends the returns (and PopArt) off to infinity
        fail(f"--gamma must be in (0, 1], got {args.gamma}")
    if not 0 <= args.gae_lambda <= 1:
        fail(f"--gae-lambda must be in [0, 1], got {args.gae_lambda}")
    if args.total_timesteps < args.batch_size and not args.eval_only:
        fail(f"--total-timesteps {args.total_timesteps} is less than one rollout (num-envs * num-steps = {args.batch_size})")


def load_checkpoint(path: str) -> dict:
    """Loads a checkpoint with weights_only=True; anything else exits 2 with a message."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        fail(f"checkpoint {path!r} does not exist")
    except Exception as e:
        fail(f"{path!r} is not a cleanmappo checkpoint ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
    if not isinstance(ckpt, dict) or ckpt.get("format") != "cleanmappo" or "actor" not in ckpt:
        fail(f"{path!r} is not a cleanmappo checkpoint (no 'format': 'cleanmappo' entry)")
    if ckpt.get("script") != os.path.basename(__file__):
        fail(f"{path!r} was written by {ckpt.get('script')}, not {os.path.basename(__file__)}")
    return ckpt


def parse_args(argv: Optional[list[str]] = None) -> tuple[Args, Optional[dict]]:
    """Defaults: the checkpoint's args with --resume / --eval-only, else the paper's preset for --env-id."""
    pre = argparse.ArgumentParser(add_help=False)
    for name, alias in (("--env-id", "--env_id"), ("--resume", "--resume"), ("--eval-only", "--eval_only")):
        pre.add_argument(name, alias)
    pre.add_argument("--recurrent", action="store_true")
    pre.add_argument("--no-recurrent", dest="recurrent", action="store_false")
    known, _ = pre.parse_known_args(argv)
    ckpt = load_checkpoint(known.resume or known.eval_only) if (known.resume or known.eval_only) else None
    init_names = [f.name for f in fields(Args) if f.init]
    if ckpt is not None:
        saved = {k: v for k, v in ckpt["args"].items() if k in init_names}
        # values derived below from the client count go back to auto, so that --num-clients on resume wins over them
        saved["envs_per_split"] = 0  # num_envs, saved, holds clients x splits x k
        saved["world_size"] = 0 if saved["world_size"] == saved["num_clients"] + 1 else saved["world_size"]
        saved["server_batch"] = 0 if saved["server_batch"] == saved["num_clients"] else saved["server_batch"]
        defaults = replace(Args(**saved), resume=None, eval_only=None, env_id=known.env_id or saved["env_id"])
    else:
        env_id = known.env_id or Args.env_id
        defaults = Args(env_id=env_id, **env_presets(env_id, known.recurrent))
    args = tyro.cli(Args, default=defaults, args=argv, description=Args.__doc__)
    if args.role == "learner" and args.world_size:
        args.num_clients = args.world_size - 1
    args.world_size = args.world_size or args.num_clients + 1
    if args.role == "all" and args.world_size != args.num_clients + 1:
        fail(f"--world-size {args.world_size} must be --num-clients + 1 = {args.num_clients + 1} when all roles run here")
    num_splits = max(args.num_clients, 1) * max(args.num_splits, 1)
    if args.envs_per_split > 0:
        args.num_envs = num_splits * args.envs_per_split
    elif args.num_envs % num_splits:
        fail(
            f"--num-envs {args.num_envs} (yours, or the preset of {args.env_id}) is not a multiple of --num-clients x "
            f"--num-splits = {num_splits}; pass --num-envs or --envs-per-split"
        )
    else:
        args.envs_per_split = args.num_envs // num_splits
    args.server_batch = args.server_batch or args.num_clients
    args.__post_init__()  # tyro copies the computed fields of `defaults`: compute them for these args
    if ckpt is not None:
        env_presets(args.env_id)  # exits 2 on an unknown id (the presets path checked it already)
    validate(args)
    return args, ckpt


# ENV ADAPTERS: every backend steps all its envs in one call and returns numpy arrays
# reset() -> obs (E,A,O), env_state (E,S), avail (E,A,U) bool, alive (E,A) bool
# step(actions (E,A)) -> the same for the next step (after auto-reset), plus reward (E,) team reward,
#   terminated (E,) side wiped out, truncated (E,) time limit, won (E,), and final_obs/final_state/final_alive:
#   the last observation of an episode that ended at this step, before the reset (bootstrapping on truncation)
class SMAXVecEnv:
    """JaxMARL SMAX vs its heuristic enemy: num_envs envs in one jitted, vmapped call, one host copy per step."""

    is_smac = True

    def __init__(self, map_name: str, num_envs: int, seed: int):
        import jax
        import jax.numpy as jnp

        with quiet():
            from jaxmarl.environments.smax import HeuristicEnemySMAX, map_name_to_scenario
        # the env kwargs of JaxMARL's SMAX baselines
        env = HeuristicEnemySMAX(
            scenario=map_name_to_scenario(map_name), see_enemy_actions=True, walls_cause_death=True, attack_mode="closest"
        )
        A = env.num_allies
        self.num_envs, self.num_agents, self.obs_dim = num_envs, A, env.obs_size
        self.state_dim, self.num_actions = env.state_size, env.num_ally_actions

        def observe(st):
            obs = env.get_obs(st)
            avail = env.get_avail_actions(st)
            return dict(
                obs=jnp.stack([obs[a] for a in env.agents]),  # (A,O)
                env_state=env.get_world_state(st),  # (S,)
                avail=jnp.stack([avail[a] for a in env.agents]).astype(bool),  # (A,U)
                alive=st.state.unit_alive[:A],  # (A,)
            )

        def reset_one(key):
            _, st = env.reset(key)
            return st, observe(st)

        def step_one(key, st, actions):
            step_key, reset_key = jax.random.split(key)
            _, st, rewards, dones, _ = env.step_env(step_key, st, {a: actions[i] for i, a in enumerate(env.agents)})
            final = observe(st)
            allies_dead = ~st.state.unit_alive[:A].any()
            enemies_dead = ~st.state.unit_alive[A:].any()
            terminated = allies_dead | enemies_dead
            reset_st, reset_obs = reset_one(reset_key)
            done = dones["__all__"]
            st = jax.tree.map(lambda r, s: jax.lax.select(done, r, s), reset_st, st)
            nxt = jax.tree.map(lambda r, s: jax.lax.select(done, r, s), reset_obs, final)
            out = dict(nxt, reward=rewards[env.agents[0]], terminated=terminated, truncated=done & ~terminated)
            out.update(won=enemies_dead & ~allies_dead, final_obs=final["obs"], final_state=final["env_state"])
            return st, dict(out, final_alive=final["alive"])

        def vreset(key):
            key, sub = jax.random.split(key)
            st, out = jax.vmap(reset_one)(jax.random.split(sub, num_envs))
            return key, st, out

        def vstep(key, st, actions):
            key, sub = jax.random.split(key)
            st, out = jax.vmap(step_one)(jax.random.split(sub, num_envs), st, actions)
            return key, st, out

        self._reset, self._step = jax.jit(vreset), jax.jit(vstep)
        self._key, self._state, self._jnp = jax.random.PRNGKey(seed), None, jnp

    def reset(self) -> dict:
        self._key, self._state, out = self._reset(self._key)
        return {k: np.array(v) for k, v in out.items()}  # writable host copies

    def step(self, actions: np.ndarray) -> dict:
        self._key, self._state, out = self._step(self._key, self._state, self._jnp.asarray(actions, dtype=np.int32))
        return {k: np.array(v) for k, v in out.items()}  # one host copy of everything

    def close(self):
        pass


class MPEVecEnv:
    """PettingZoo MPE (mpe2), parallel API, discrete actions. Agents are padded to the largest obs and action
    sizes (padded actions unavailable); the team reward is the mean of the agents' rewards; env state = all obs."""

    is_smac = False

    def __init__(self, env_id: str, num_envs: int, seed: int):
        module = importlib.import_module(f"mpe2.{env_id}")
        self.envs = [module.parallel_env(max_cycles=25, continuous_actions=False) for _ in range(num_envs)]
        self.agents = self.envs[0].possible_agents
        obs_dims = [self.envs[0].observation_space(a).shape[0] for a in self.agents]
        act_dims = [int(self.envs[0].action_space(a).n) for a in self.agents]
        E, A = num_envs, len(self.agents)
        self.num_envs, self.num_agents, self.obs_dim, self.num_actions = E, A, max(obs_dims), max(act_dims)
        self.state_dim, self.obs_dims, self.seed, self.seeded = A * self.obs_dim, obs_dims, seed, False
        avail = np.arange(self.num_actions)[None, None, :] < np.array(act_dims)[None, :, None]  # (1,A,U)
        self.avail = np.ascontiguousarray(np.broadcast_to(avail, (E, A, self.num_actions)))  # constant: made once

    def _write_obs(self, buf: np.ndarray, i: int, obs: dict):
        for j, a in enumerate(self.agents):
            buf[i, j, : self.obs_dims[j]] = obs[a]

    def _pack(self, obs: np.ndarray) -> dict:
        E, A = self.num_envs, self.num_agents
        return dict(obs=obs, env_state=obs.reshape(E, -1), avail=self.avail, alive=np.ones((E, A), dtype=bool))

    def reset(self) -> dict:
        obs = np.zeros((self.num_envs, self.num_agents, self.obs_dim), dtype=np.float32)
        for i, env in enumerate(self.envs):
            self._write_obs(obs, i, env.reset(seed=None if self.seeded else self.seed + i)[0])
        self.seeded = True
        return self._pack(obs)

    def step(self, actions: np.ndarray) -> dict:
        E, A = self.num_envs, self.num_agents
        obs = np.zeros((E, A, self.obs_dim), dtype=np.float32)
        final_obs = np.zeros_like(obs)
        reward, terminated, truncated = np.zeros(E, dtype=np.float32), np.zeros(E, dtype=bool), np.zeros(E, dtype=bool)
        for i, (env, acts) in enumerate(zip(self.envs, actions.tolist())):
            o, r, term, trunc, _ = env.step(dict(zip(self.agents, acts)))
            reward[i] = sum(r.values()) / A
            terminated[i], truncated[i] = all(term.values()), all(trunc.values()) and not all(term.values())
            if terminated[i] or truncated[i]:
                self._write_obs(final_obs, i, o)
                o = env.reset()[0]
            self._write_obs(obs, i, o)
        out = self._pack(obs)
        out.update(reward=reward, terminated=terminated, truncated=truncated, won=np.zeros(E, dtype=bool))
        out.update(final_obs=final_obs, final_state=final_obs.reshape(E, -1), final_alive=np.ones((E, A), dtype=bool))
        return out

    def close(self):
        for env in self.envs:
            env.close()


def smaclite_worker(remote, map_name: str, seeds: list[int], time_limit: int):
    """Steps a slice of SMAClite envs in a child process; answers 'reset', 'step' and 'close' on its pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes us
    import gymnasium as gym
    import smaclite  # noqa: F401

    with quiet():
        envs = [gym.make(f"smaclite/{map_name}-v0", max_episode_steps=time_limit) for _ in seeds]

    def observe(env, obs):
        u = env.unwrapped
        alive = np.zeros(u.n_agents, dtype=bool)
        alive[list(u.agents)] = True
        return np.stack(obs), u.get_state(), np.stack(u.get_avail_actions()) > 0, alive

    def pack(rows):
        return {k: np.stack(v) for k, v in zip(("obs", "env_state", "avail", "alive"), zip(*rows))}

    try:
        while True:
            cmd, data = remote.recv()
            if cmd == "reset":
                remote.send(pack([observe(env, env.reset(seed=s)[0]) for env, s in zip(envs, seeds)]))
            elif cmd == "step":
                rows, finals, extra = [], [], []
                for env, acts in zip(envs, data.tolist()):
                    obs, reward, term, trunc, info = env.step(acts)
                    row = observe(env, obs)
                    finals.append(row)
                    if term or trunc:
                        row = observe(env, env.reset()[0])
                    rows.append(row)
                    extra.append((reward, term, trunc and not term, info.get("battle_won", False)))
                out = pack(rows)
                final = pack(finals)
                out.update(final_obs=final["obs"], final_state=final["env_state"], final_alive=final["alive"])
                for k, v in zip(("reward", "terminated", "truncated", "won"), zip(*extra)):
                    out[k] = np.array(v, dtype=np.float32 if k == "reward" else bool)
                remote.send(out)
            elif cmd == "close":
                break
    except (EOFError, BrokenPipeError):  # the parent is gone
        pass
    finally:
        for env in envs:
            env.close()


class SMACliteVecEnv:
    """SMAClite (pure Python, slow): envs split over worker processes that step in parallel."""

    is_smac = True

    def __init__(self, map_name: str, num_envs: int, seed: int, num_workers: int = 0):
        import gymnasium as gym

        smaclite_maps()  # exits with the install line when SMAClite is missing
        with quiet():
            u = gym.make(f"smaclite/{map_name}-v0").unwrapped
        self.num_envs, self.num_agents, self.obs_dim = num_envs, u.n_agents, u.obs_size
        self.state_dim, self.num_actions = u.state_size, u.n_actions
        num_workers = min(num_envs, num_workers or os.cpu_count() or 1)
        ctx = mp.get_context("spawn")  # no fork of a process that holds torch threads
        slices = np.array_split(np.arange(num_envs), num_workers)
        self.slices, self.remotes, self.procs = slices, [], []
        for idx in slices:
            parent, child = ctx.Pipe()
            args = (child, map_name, [seed + int(i) for i in idx], SMAC_EPISODE_LIMITS.get(map_name, 200))
            proc = ctx.Process(target=smaclite_worker, args=args, daemon=True)  # daemon: dies with the run
            proc.start()
            child.close()
            self.remotes.append(parent)
            self.procs.append(proc)

    def _gather(self) -> dict:
        parts = [remote.recv() for remote in self.remotes]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def reset(self) -> dict:
        for remote in self.remotes:
            remote.send(("reset", None))
        return self._gather()

    def step(self, actions: np.ndarray) -> dict:
        for remote, idx in zip(self.remotes, self.slices):
            remote.send(("step", actions[idx]))
        return self._gather()

    def close(self):
        for remote in self.remotes:
            with contextlib.suppress(OSError):
                remote.send(("close", None))
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


class FrameStack:
    """Wraps a vec env: each agent's observation becomes its last k observations (E,A,k*O), oldest first; a new
    episode starts from zeros. The env state is not stacked."""

    def __init__(self, envs, k: int):
        self.envs, self.k, self.stack = envs, k, None
        self.num_envs, self.num_agents, self.num_actions = envs.num_envs, envs.num_agents, envs.num_actions
        self.obs_dim, self.state_dim, self.is_smac = k * envs.obs_dim, envs.state_dim, envs.is_smac

    def _push(self, stack: np.ndarray, obs: np.ndarray) -> np.ndarray:
        return np.concatenate([stack[:, :, 1:], obs[:, :, None]], axis=2)  # (E,A,k,O)

    def reset(self) -> dict:
        out = self.envs.reset()
        self.stack = self._push(np.zeros((*out["obs"].shape[:2], self.k, out["obs"].shape[-1]), np.float32), out["obs"])
        return dict(out, obs=self.stack.reshape(self.num_envs, self.num_agents, -1))

    def step(self, actions: np.ndarray) -> dict:
        out = self.envs.step(actions)
        final = self._push(self.stack, out["final_obs"])  # the stack that ends an episode, where one ended
        new_episode = (out["terminated"] | out["truncated"])[:, None, None, None]
        self.stack = self._push(np.where(new_episode, np.float32(0.0), self.stack), out["obs"])
        E, A = self.num_envs, self.num_agents
        return dict(out, obs=self.stack.reshape(E, A, -1), final_obs=final.reshape(E, A, -1))

    def close(self):
        self.envs.close()


def make_env(env_id: str, num_envs: int, seed: int, num_workers: int = 0, num_stacked_frames: int = 1):
    if env_id in MPE_ENVS:
        envs = MPEVecEnv(env_id, num_envs, seed)
    elif env_id.startswith("smaclite/"):
        envs = SMACliteVecEnv(env_id[len("smaclite/") :], num_envs, seed, num_workers)
    else:
        envs = SMAXVecEnv(env_id, num_envs, seed)
    return FrameStack(envs, num_stacked_frames) if num_stacked_frames > 1 else envs


# ALGO LOGIC: inputs of the actor and the critic
def actor_input(obs: torch.Tensor, agent_ids: torch.Tensor) -> torch.Tensor:
    """obs (...,A,O), agent_ids (A,A) one-hot -> (...,A,O+A): parameter sharing with the agent id"""
    return torch.cat([obs, agent_ids.expand(*obs.shape[:-1], -1)], dim=-1)


def critic_input(obs, env_state, alive, agent_ids, state_type: str, death_masking: bool) -> torch.Tensor:
    """obs (E,A,O), env_state (E,S_env), alive (E,A) bool, agent_ids (A,A) -> agent-specific global state (E,A,S)"""
    E, A, _ = obs.shape
    if state_type == "as":  # MAPPO Suggestion 2: env state + the agent's own features
        features = torch.cat([env_state.unsqueeze(1).expand(E, A, -1), obs], dim=-1)  # (E,A,S_env+O)
    elif state_type == "ep":
        features = env_state.unsqueeze(1).expand(E, A, -1)  # (E,A,S_env)
    else:  # cl: the concatenation of all local observations, the MPE global state of the paper
        features = obs.reshape(E, 1, -1).expand(E, A, -1)  # (E,A,A*O)
    if death_masking:  # MAPPO Suggestion 5: a dead agent's critic input is zeros + its agent id
        features = features * alive.unsqueeze(-1).to(features.dtype)
    if state_type == "cl":
        return features
    return torch.cat([features, agent_ids.expand(E, A, A)], dim=-1)


def layer_init(layer: nn.Linear, gain: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, gain)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


def mlp(in_dim: int, hidden_dim: int, num_layers: int, activation: str, use_feature_norm: bool) -> nn.Sequential:
    """[LayerNorm] -> (Linear -> act -> LayerNorm) x num_layers, as the MAPPO code's MLPBase"""
    act, gain = (nn.ReLU, np.sqrt(2)) if activation == "relu" else (nn.Tanh, 5.0 / 3.0)  # calculate_gain
    layers = [nn.LayerNorm(in_dim)] if use_feature_norm else []
    for i in range(num_layers):
        layers += [layer_init(nn.Linear(in_dim if i == 0 else hidden_dim, hidden_dim), gain), act(), nn.LayerNorm(hidden_dim)]
    return nn.Sequential(*layers)


def gru_cell(hidden_dim: int) -> nn.GRUCell:
    """The MAPPO code's RNNLayer init: orthogonal weights, zero biases"""
    cell = nn.GRUCell(hidden_dim, hidden_dim)
    for name, param in cell.named_parameters():
        nn.init.orthogonal_(param) if "weight" in name else nn.init.zeros_(param)
    return cell


def gru_scan(cell: nn.GRUCell, x: torch.Tensor, h: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """x (T,...,H) inputs, h (...,H) the hidden state before step 0, starts (T,...) bool: step t begins an episode,
    so the hidden state is zeroed before it -> (T,...,H) the hidden state after each step"""
    out = []
    for t in range(x.shape[0]):
        h = h.masked_fill(starts[t].unsqueeze(-1), 0.0)  # a new episode starts from zeros
        h = cell(x[t].reshape(-1, x.shape[-1]), h.reshape(-1, h.shape[-1])).view(h.shape)
        out.append(h)
    return torch.stack(out)


class Actor(nn.Module):
    """MLP -> policy head; with recurrent, MLP -> GRU -> LayerNorm -> policy head (MAPPO Appendix A)"""

    def __init__(
        self,
        in_dim,
        num_actions,
        hidden_dim=64,
        num_layers=2,
        activation="relu",
        use_feature_norm=True,
        gain=0.01,
        recurrent=False,
    ):
        super().__init__()
        self.body = mlp(in_dim, hidden_dim, num_layers, activation, use_feature_norm)
        self.gru = gru_cell(hidden_dim) if recurrent else None
        self.gru_norm = nn.LayerNorm(hidden_dim) if recurrent else None
        self.head = layer_init(nn.Linear(hidden_dim, num_actions), gain)

    def forward(self, x: torch.Tensor, h=None, starts=None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """feed-forward: x (...,in) -> logits (...,U), None. recurrent: x (T,...,in), h (...,H), starts (T,...)
        -> logits (T,...,U), hidden states after each step (T,...,H)"""
        if self.gru is None:
            return self.head(self.body(x)), None
        out = gru_scan(self.gru, self.body(x), h, starts)
        return self.head(self.gru_norm(out)), out


class Critic(nn.Module):
    """MLP -> PopArt value head; with recurrent, MLP -> GRU -> LayerNorm -> PopArt value head"""

    def __init__(self, in_dim, hidden_dim=64, num_layers=2, activation="relu", use_feature_norm=True, recurrent=False):
        super().__init__()
        self.body = mlp(in_dim, hidden_dim, num_layers, activation, use_feature_norm)
        self.gru = gru_cell(hidden_dim) if recurrent else None
        self.gru_norm = nn.LayerNorm(hidden_dim) if recurrent else None
        self.popart = PopArt(hidden_dim, 1)  # identity statistics unless --use-popart updates them

    def forward(self, x: torch.Tensor, h=None, starts=None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """as Actor.forward -> normalised values (...,), hidden states (T,...,H) or None"""
        if self.gru is None:
            return self.popart(self.body(x)).squeeze(-1), None
        out = gru_scan(self.gru, self.body(x), h, starts)
        return self.popart(self.gru_norm(out)).squeeze(-1), out

    def value(self, x, h=None, starts=None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """as forward, with the values in return units"""
        v, out = self.forward(x, h, starts)
        return self.popart.denormalize(v.unsqueeze(-1)).squeeze(-1), out


def to_chunks(x: torch.Tensor, chunk_length: int) -> torch.Tensor:
    """(T,E,A,...) -> (C, K*E*A, ...): each agent's rollout cut into K = ceil(T/C) chunks of C steps, the last one
    zero-padded at its end (padded steps are masked out of the losses). C = 1 is the flat batch of mappo.py."""
    T, C = x.shape[0], chunk_length
    K = math.ceil(T / C)
    x = torch.cat([x, x.new_zeros((K * C - T, *x.shape[1:]))]) if K * C > T else x
    return x.reshape(K, C, *x.shape[1:]).transpose(0, 1).reshape(C, -1, *x.shape[3:])  # chunk index = (k, e, a)


def compute_gae(rewards, values, next_value, terminated, truncated, final_values, gamma: float, gae_lambda: float):
    """rewards (T,E), values (T,E,A), next_value (E,A), terminated/truncated (T,E) bool, final_values (T,E,A)
    -> advantages, returns (T,E,A). After a truncation the target bootstraps from the value of the episode's
    final observation; after a termination it does not bootstrap at all."""
    T = rewards.shape[0]
    advantages = torch.zeros_like(values)
    lastgaelam = torch.zeros_like(next_value)
    for t in reversed(range(T)):
        next_values = next_value if t == T - 1 else values[t + 1]  # be careful: values[t+1] may start a new episode
        next_values = torch.where(truncated[t].unsqueeze(-1), final_values[t], next_values)
        bootstrap = (~terminated[t]).unsqueeze(-1).to(values.dtype)
        episode_goes_on = (~(terminated[t] | truncated[t])).unsqueeze(-1).to(values.dtype)
        delta = rewards[t].unsqueeze(-1) + gamma * next_values * bootstrap - values[t]
        lastgaelam = delta + gamma * gae_lambda * episode_goes_on * lastgaelam
        advantages[t] = lastgaelam
    return advantages, advantages + values


def value_error(error: torch.Tensor, use_huber: bool, delta: float) -> torch.Tensor:
    """Elementwise Huber(delta) or 0.5 * error^2 [MAPPO: Huber, delta 10]"""
    if use_huber:
        return nn.functional.huber_loss(error, torch.zeros_like(error), reduction="none", delta=delta)
    return 0.5 * error**2


@torch.no_grad()
def evaluate(actor, envs, num_episodes: int, agent_ids: torch.Tensor, device) -> tuple[float, float]:
    """Greedy evaluation (a recurrent actor starts every episode from a zero hidden state): each env plays its first
    ceil(N/E) episodes (no bias to short ones), the first N count. Returns (win rate, mean team return)."""
    per_env = math.ceil(num_episodes / envs.num_envs)
    results = [[] for _ in range(envs.num_envs)]
    ep_return = np.zeros(envs.num_envs)
    hidden = actor.head.in_features
    actor_h = torch.zeros((envs.num_envs, envs.num_agents, hidden), device=device)  # (E,A,H), unused without a GRU
    starts = torch.ones((1, envs.num_envs, envs.num_agents), dtype=torch.bool, device=device)  # (1,E,A)
    nxt = envs.reset()
    while min(len(r) for r in results) < per_env:
        x = actor_input(torch.from_numpy(nxt["obs"]).to(device), agent_ids)[None]  # (1,E,A,O+A)
        logits, actor_hs = actor(x, actor_h, starts)  # (1,E,A,U), (1,E,A,H) or None
        actor_h = actor_hs[0] if actor_hs is not None else actor_h
        action = MaskedCategorical(logits[0], torch.from_numpy(nxt["avail"]).to(device)).mode()  # (E,A)
        nxt = envs.step(action.cpu().numpy())
        ep_return += nxt["reward"]
        starts[0] = torch.from_numpy(nxt["terminated"] | nxt["truncated"]).to(device).unsqueeze(-1)  # (E,1) -> (E,A)
        for e in np.flatnonzero(nxt["terminated"] | nxt["truncated"]):
            if len(results[e]) < per_env:
                results[e].append((float(nxt["won"][e]), ep_return[e]))
            ep_return[e] = 0.0
    episodes = [results[e][k] for k in range(per_env) for e in range(envs.num_envs)][:num_episodes]
    wins, returns = zip(*episodes)
    return float(np.mean(wins)), float(np.mean(returns))


def save_checkpoint(path, actor, critic, actor_optimizer, critic_optimizer, args, global_step, iteration, run_name, evals):
    """Everything --resume needs, as plain tensors and Python values (loads with weights_only=True)."""
    ckpt = dict(format="cleanmappo", script=os.path.basename(__file__), actor=actor.state_dict(), critic=critic.state_dict())
    ckpt.update(actor_optimizer=actor_optimizer.state_dict(), critic_optimizer=critic_optimizer.state_dict())
    ckpt.update(args=asdict(args), global_step=global_step, iteration=iteration, run_name=run_name, evals=evals)
    tmp = f"{path}.tmp"
    torch.save(ckpt, tmp)
    os.replace(tmp, path)  # never leave half a checkpoint behind


def write_eval_summary(path: str, args: Args, global_step: int, evals: list, is_smac: bool) -> None:
    """The paper's protocol: the median of the last 10 evaluations, printed and written as JSON with every evaluation."""
    if not evals:
        return
    last = np.array(evals[-10:])  # rows: step, win rate, return, wall time
    summary = dict(env_id=args.env_id, seed=args.seed, global_step=global_step, wall_time=evals[-1][3])
    summary["budget"] = args.num_iterations * args.batch_size  # global_step < budget: stopped early (Ctrl-C)
    summary["median_win_rate"] = float(np.median(last[:, 1])) if is_smac else None  # MPE has no win
    summary["median_return"] = float(np.median(last[:, 2]))
    keys = ("step", "win_rate", "episodic_return", "wall_time")
    summary["evals"] = [{k: v for k, v in zip(keys, e) if is_smac or k != "win_rate"} for e in evals]
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
    win = f"win rate {summary['median_win_rate']:.3f}, " if is_smac else ""
    print(f"median of the last {len(last)} evaluations: {win}return {summary['median_return']:.3f} ({path})", flush=True)


# ASYNC ROLES. The inference server and its rollout buffer live in the learner's process (a thread), so the learner
# reads finished segments without copies between processes; env clients are processes that reach it over RPC.
# A rollout segment, one slot's T steps of its k envs, as the learner gets it (numpy arrays):
#   obs, env_state, avail, alive, actions, logprobs (T,k,...); rewards, terminated, truncated (T,k); final_obs,
#   final_state, final_alive (T,k,...): the last observation of an episode that ended at step t; next_obs,
#   next_env_state, next_alive (k,...): the bootstrap observation after step T-1; versions (T,): the policy that acted;
#   slot, index: the slot's index-th segment; --recurrent: starts (T,k) step t begins an episode, actor_h (T,k,A,H)
#   the actor's hidden state entering step t
_SERVER = None  # the learner process's InferenceServer; the RPC functions below run in that process


class InferenceServer:
    """Batches requests (one split of k envs each), runs the policy once per batch and answers every request with its
    actions. Each (client, split) slot fills a rollout segment of num_steps steps: a request first records the outcome
    of the slot's previous step (reward, ends, final observation), then the new step (observation, action, log-prob,
    policy version). A segment is complete when its last step's outcome arrives, with the bootstrap observation.
    A recurrent actor's hidden state lives here, one per (slot, env, agent), and is stored with every step."""

    def __init__(self, actor, agent_ids, num_steps, server_batch, flush_timeout, num_clients, num_splits, device, client_args):
        self.actor, self.agent_ids, self.T, self.device = actor, agent_ids, num_steps, device
        self.server_batch, self.flush_timeout, self.client_args = server_batch, flush_timeout, client_args
        self.num_splits = num_splits
        self.version, self.loaded_version, self.new_params, self.params_lock = 0, 0, None, threading.Lock()
        self.requests = queue.Queue(maxsize=4096)  # (slot, data, future); at most num_clients * num_splits in flight
        self.ready = queue.Queue(maxsize=num_clients * num_splits)  # complete segments: at most one batch ahead
        self.slots, self.episode = {}, {}  # slot -> segment being filled; slot -> running episode return and length
        self.stats_lock, self.episodes, self.env_steps = threading.Lock(), [], 0
        self.batch_sizes, self.infer_time, self.client_env_time = [], 0.0, {}
        self.last_seen = {c: time.time() for c in range(num_clients)}  # client -> time of its last request
        self.waiting = {c: 0 for c in range(num_clients)}  # client -> its requests not answered yet (it is alive)
        self.waiting_lock, self.error = threading.Lock(), None  # RPC threads and the batching thread both count
        self.stopping, self.stopped_clients, self.thread, self.closed = threading.Event(), set(), None, False
        self.hidden, self.segment_index = {}, {}  # slot -> (k,A,H) actor hidden state after its last step; segments made

    # learner side
    def publish(self, actor: nn.Module):
        """New parameters for the next batch, with the next version number"""
        with self.params_lock:
            self.new_params = {k: v.detach().clone() for k, v in actor.state_dict().items()}
            self.version += 1

    def take_stats(self) -> dict:
        with self.stats_lock:
            out = dict(episodes=self.episodes, batch_sizes=self.batch_sizes, infer_time=self.infer_time)
            self.episodes, self.batch_sizes, self.infer_time = [], [], 0.0
        return out

    # request side
    def submit(self, slot: tuple[int, int], data: dict, future: torch.futures.Future):
        self.last_seen[slot[0]] = time.time()
        if "env_time" in data:
            self.client_env_time[slot[0]] = data["env_time"]
        if self.stopping.is_set():
            self.stopped_clients.add(slot[0])
            future.set_result(None)  # the run is over: the client stops
        else:
            with self.waiting_lock:
                self.waiting[slot[0]] = self.waiting.get(slot[0], 0) + 1
            self.requests.put((slot, data, future), timeout=10)

    def run(self):
        """The batching thread: a batch is server_batch requests, or fewer once flush_timeout has passed since the first"""
        while not self.stopping.is_set():
            try:
                batch = [self.requests.get(timeout=0.1)]
            except queue.Empty:
                continue
            deadline = time.time() + self.flush_timeout
            while len(batch) < self.server_batch and (remaining := deadline - time.time()) > 0:
                try:
                    batch.append(self.requests.get(timeout=remaining))
                except queue.Empty:
                    break
            try:
                for slot, data, _ in batch:
                    self.record(slot, data)
                actions = self.infer(batch)
            except Exception as e:  # a malformed request, a failed forward: the learner and the clients fail, none hangs
                self.error = e
                for _, _, future in batch:
                    future.set_exception(e)
                self.stopping.set()
                break
            for (slot, data, future), action in zip(batch, actions):
                with self.waiting_lock:
                    self.waiting[slot[0]] -= 1
                self.last_seen[slot[0]] = time.time()
                future.set_result(action)
        self.drain()

    def drain(self):
        while True:
            try:
                slot, _, future = self.requests.get_nowait()
            except queue.Empty:
                return
            self.stopped_clients.add(slot[0])
            future.set_result(None)

    def record(self, slot: tuple[int, int], data: dict):
        """The outcome of the slot's previous step; completes its segment after num_steps steps. Idempotent."""
        seg = self.slots.get(slot)
        if seg is None or not seg["pending"] or "reward" not in data:
            return
        t, k = seg["t"] - 1, len(data["obs"])
        seg["rewards"][t], seg["terminated"][t], seg["truncated"][t] = data["reward"], data["terminated"], data["truncated"]
        seg["final_obs"][t], seg["final_state"][t], seg["final_alive"][t] = (
            data["final_obs"],
            data["final_state"],
            data["final_alive"],
        )
        seg["pending"] = False
        ep = self.episode[slot]
        ep["return"] += data["reward"]
        ep["length"] += 1
        done = data["terminated"] | data["truncated"]
        with self.stats_lock:
            self.env_steps += k
            for e in np.flatnonzero(done):
                self.episodes.append((ep["return"][e], ep["length"][e], bool(data["won"][e])))
        ep["return"][done], ep["length"][done] = 0.0, 0
        if seg["t"] == self.T:  # complete: this request's observation is the bootstrap one
            seg.update(next_obs=data["obs"], next_env_state=data["env_state"], next_alive=data["alive"])
            while not self.stopping.is_set():  # bounded queue: the server waits for the learner, never forever
                try:
                    self.ready.put({k: seg[k] for k in seg if k not in ("t", "pending")}, timeout=0.5)
                    break
                except queue.Full:
                    continue
            del self.slots[slot]

    def new_segment(self, slot, data: dict) -> dict:
        T, (k, A) = self.T, data["obs"].shape[:2]
        seg = dict(t=0, pending=False, versions=np.zeros(T, dtype=np.int64), slot=slot)
        seg["index"] = self.segment_index[slot] = self.segment_index.get(slot, -1) + 1  # the slot's n-th segment
        for key, src, dtype in (("obs", "obs", np.float32), ("env_state", "env_state", np.float32)):
            seg[key] = np.zeros((T, *data[src].shape), dtype=dtype)
        seg["final_obs"], seg["final_state"] = np.zeros_like(seg["obs"]), np.zeros_like(seg["env_state"])
        seg["avail"] = np.zeros((T, *data["avail"].shape), dtype=bool)
        seg["alive"], seg["final_alive"] = np.zeros((T, k, A), dtype=bool), np.zeros((T, k, A), dtype=bool)
        seg["actions"], seg["logprobs"] = np.zeros((T, k, A), dtype=np.int64), np.zeros((T, k, A), dtype=np.float32)
        seg["rewards"] = np.zeros((T, k), dtype=np.float32)
        seg["terminated"], seg["truncated"] = np.zeros((T, k), dtype=bool), np.zeros((T, k), dtype=bool)
        if self.actor.gru is not None:
            seg["starts"] = np.zeros((T, k), dtype=bool)
            seg["actor_h"] = np.zeros((T, k, A, self.actor.gru.hidden_size), dtype=np.float32)
        self.episode.setdefault(slot, dict(**{"return": np.zeros(k), "length": np.zeros(k, dtype=np.int64)}))
        return seg

    @torch.no_grad()
    def infer(self, batch: list) -> list[np.ndarray]:
        """One policy forward for the whole batch; stores each step in its slot's segment -> actions per request"""
        start = time.time()
        with self.params_lock:  # pick up the learner's newest parameters before this batch
            if self.new_params is not None:
                self.actor.load_state_dict(self.new_params)
                self.new_params, self.loaded_version = None, self.version
        obs = torch.from_numpy(np.concatenate([d["obs"] for _, d, _ in batch])).to(self.device)  # (sum k, A, O)
        avail = torch.from_numpy(np.concatenate([d["avail"] for _, d, _ in batch])).to(self.device)  # (sum k, A, U)
        n, A = obs.shape[:2]
        if self.actor.gru is not None:  # a request without an outcome is a reset: every env begins an episode
            starts = np.concatenate(
                [d["terminated"] | d["truncated"] if "reward" in d else np.ones(len(d["obs"]), bool) for _, d, _ in batch]
            )  # (sum k,)
            H = self.actor.gru.hidden_size
            h = np.concatenate([self.hidden.get(slot, np.zeros((len(d["obs"]), A, H), np.float32)) for slot, d, _ in batch])
            starts_t = torch.from_numpy(starts).to(self.device)[None, :, None].expand(1, n, A)  # (1, sum k, A)
            logits, new_h = self.actor(actor_input(obs, self.agent_ids)[None], torch.from_numpy(h).to(self.device), starts_t)
            logits, new_h = logits[0], new_h[0].cpu().numpy()  # (sum k, A, U), (sum k, A, H)
        else:
            logits, _ = self.actor(actor_input(obs, self.agent_ids))  # (sum k, A, U)
        dist = MaskedCategorical(logits, avail)
        action = dist.sample()  # (sum k, A)
        action, logprob = action.cpu().numpy(), dist.log_prob(action).cpu().numpy()
        actions, i = [], 0
        for slot, data, _ in batch:
            k = len(data["obs"])
            seg = self.slots.get(slot) or self.slots.setdefault(slot, self.new_segment(slot, data))
            t = seg["t"]
            if self.actor.gru is not None:  # the state entering step t, before its reset, as mappo_rnn.py stores it
                seg["starts"][t], seg["actor_h"][t], self.hidden[slot] = starts[i : i + k], h[i : i + k], new_h[i : i + k]
            seg["obs"][t], seg["env_state"][t], seg["avail"][t], seg["alive"][t] = (
                data["obs"],
                data["env_state"],
                data["avail"],
                data["alive"],
            )
            seg["actions"][t], seg["logprobs"][t], seg["versions"][t] = (
                action[i : i + k],
                logprob[i : i + k],
                self.loaded_version,
            )
            seg["t"], seg["pending"] = t + 1, True
            actions.append(action[i : i + k])
            i += k
        with self.stats_lock:
            self.batch_sizes.append(len(batch))
            self.infer_time += time.time() - start
        return actions


@rpc.functions.async_execution
def serve(client: int, split: int, data: dict) -> torch.futures.Future:
    """RPC: one split's step -> a future answered with its actions (E_split,A), or None when the run is over"""
    future = torch.futures.Future()
    _SERVER.submit((client, split), data, future)
    return future


def client_config() -> dict:
    """RPC: the run's Args, so that a client needs only its rank and the learner's address"""
    return _SERVER.client_args


def learner_alive() -> bool:
    """RPC: answered by the learner's RPC threads, also while its main thread updates or evaluates"""
    return True


def wait_actions(future: torch.futures.Future, rpc_timeout: float):
    """A serve request's answer. A learner that updates or evaluates holds the answers back (its ready queue is full)
    for as long as that takes, so the wait has no time limit of its own; instead the learner is pinged every
    rpc_timeout seconds, and one that does not answer the ping within rpc_timeout ends the wait with an error."""
    if future.done():  # the usual case with 2+ splits: the answer came while the other splits stepped
        return future.wait()
    answered = threading.Event()
    future.add_done_callback(lambda _: answered.set())
    while not answered.wait(rpc_timeout):
        rpc.rpc_sync("learner", learner_alive, timeout=rpc_timeout)
    return future.wait()


def init_rpc(name: str, rank: int, world_size: int, init_method: str, master_addr: str, timeout: float, procs=()):
    """Joins the RPC group. For tcp:// and file:// rendezvous we open the store ourselves and every process waits for
    the others at most `timeout` s (torch's own start-up waits for a missing rank about 25 days); a local client in
    `procs` that exits first ends the wait at once. Raises RuntimeError when the group is not complete in time."""
    if master_addr in ("127.0.0.1", "localhost"):
        os.environ.setdefault("TP_SOCKET_IFNAME", "lo")  # TensorPipe listens on the loopback interface only
    url = urllib.parse.urlparse(init_method)
    if url.scheme in ("tcp", "file"):
        if url.scheme == "file":
            store = tdist.FileStore(url.path, world_size)
            store.set_timeout(timedelta(seconds=timeout))
        elif rank == 0:  # torch's TCPStore would listen on every interface: hand it a socket bound to --master-addr only
            family = socket.AF_INET6 if ":" in master_addr else socket.AF_INET
            try:
                sock = socket.create_server((master_addr, url.port), family=family, backlog=128)
            except OSError as e:  # not an address of this host (behind NAT, say): every interface, as torch would
                if e.errno != errno.EADDRNOTAVAIL:  # the port in use, an unknown host name, ...
                    fail(f"cannot listen on {master_addr}:{url.port} for the rendezvous ({e})")
                print(
                    f"warning: cannot listen on {master_addr}:{url.port} ({e}); listening on every interface", file=sys.stderr
                )
                sock = socket.create_server(("", url.port), backlog=128)
            store = tdist.TCPStore(
                master_addr, url.port, world_size, True, timedelta(seconds=timeout), False, master_listen_fd=sock.detach()
            )
        else:  # a client waits --rpc-timeout for the learner's store, as the learner waits for the clients
            store = tdist.TCPStore(url.hostname, url.port, world_size, False, timedelta(seconds=timeout))
        keys = [f"cleanmappo_joined/{r}" for r in range(world_size)]  # one per rank: a restarted rank counts once
        store.set(keys[rank], "1")
        deadline = time.time() + timeout
        while True:
            for i, proc in enumerate(procs):
                if proc.poll() is not None:
                    raise RuntimeError(f"env client {i + 1} exited with status {proc.returncode} before joining")
            if store.check(keys):
                break
            if time.time() > deadline:
                joined = sum(store.check([key]) for key in keys)
                raise RuntimeError(f"{joined} of {world_size} processes joined within --rpc-timeout {timeout:g} s")
            time.sleep(0.05)
        tdist.register_rendezvous_handler("cleanmappo", lambda url, **kw: iter([(store, rank, world_size)]))
        init_method = "cleanmappo://"
    options = rpc.TensorPipeRpcBackendOptions(init_method=init_method, rpc_timeout=timeout, num_worker_threads=16)
    rpc.init_rpc(name, rank=rank, world_size=world_size, rpc_backend_options=options)


def env_client(rank: int, world_size: int, init_method: str, master_addr: str, rpc_timeout: float) -> int:
    """An env client (RPC rank >= 1): steps its splits in turn. After stepping split s it sends the step to the server
    without waiting and moves on to split s+1, whose actions have arrived meanwhile: its CPU does not idle on inference.
    -> exit status: 0 when the learner ended the run (or the local learner is gone), 1 after an error (the learner
    lost or failed, an RPC timeout, an env that failed)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the learner's to handle: it stops us
    learner = os.environ.get("CLEANMAPPO_LEARNER_PID")  # set by a local learner
    parent = int(learner) if learner else os.getppid()
    if learner:  # die with it even while blocked in the rendezvous (Linux)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # it died while we were importing
            return 0
    torch.set_num_threads(1)
    try:
        init_rpc(f"client{rank}", rank, world_size, init_method, master_addr, rpc_timeout)
    except (RuntimeError, OSError) as e:  # no learner there within --rpc-timeout, an unknown host name, ...
        fail(f"env client {rank}: no rendezvous with the learner at {init_method} ({str(e).splitlines()[0][:200]})")
    splits = []
    try:
        init_names = [f.name for f in fields(Args) if f.init]
        args = Args(
            **{k: v for k, v in rpc.rpc_sync("learner", client_config, timeout=rpc_timeout).items() if k in init_names}
        )
        client, m, k = rank - 1, args.num_splits, args.envs_per_split
        for s in range(m):  # env i of the whole run gets seed + i, as in mappo.py
            splits.append(
                make_env(args.env_id, k, args.seed + (client * m + s) * k, args.num_workers, args.num_stacked_frames)
            )
        # no timeout on a request (0): wait_actions bounds the wait by pinging the learner
        futures = [rpc.rpc_async("learner", serve, args=(client, s, envs.reset()), timeout=0) for s, envs in enumerate(splits)]
        env_time = 0.0
        while os.getppid() == parent:  # a client never outlives the process that started it
            for s, envs in enumerate(splits):
                actions = wait_actions(futures[s], rpc_timeout)
                if actions is None:
                    return 0
                start = time.time()
                out = envs.step(actions)
                env_time += time.time() - start
                futures[s] = rpc.rpc_async("learner", serve, args=(client, s, dict(out, env_time=env_time)), timeout=0)
        return 0  # the process that started us is gone
    except Exception as e:  # the learner is gone or failed: nothing to wait for
        print(
            f"env client {rank}: stopping ({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''})",
            file=sys.stderr,
        )
        return 1
    finally:
        for envs in splits:
            envs.close()
        rpc.shutdown(graceful=False)


class RunFailed(Exception):
    """A client or the inference server is gone: the learner stops the run with a checkpoint (exit 1)"""


def collect_segments(server, n, version, max_lag, procs, client_timeout) -> tuple[list[dict], int]:
    """Waits for n segments no older than max_lag updates; -> segments, env steps dropped as too old.
    Raises RunFailed when the server thread failed, a local client process has exited or any client has been silent
    for client_timeout s."""
    segments, dropped = [], 0
    while len(segments) < n:
        if server.error is not None:
            raise RunFailed(f"the inference server failed: {type(server.error).__name__}: {server.error}")
        for i, proc in enumerate(procs):  # checked for every segment: live clients keep the queue busy
            if proc.poll() is not None:
                raise RunFailed(f"env client {i + 1} exited with status {proc.returncode}")
        silent = {  # a client waiting for its actions is alive, however long the learner keeps the server busy
            c: time.time() - t
            for c, t in server.last_seen.items()
            if time.time() - t > client_timeout and not server.waiting[c]
        }
        if silent:
            c, s = max(silent.items(), key=lambda cs: cs[1])
            raise RunFailed(f"env client {c + 1} sent no request for {s:.0f} s (--client-timeout {client_timeout})")
        try:
            seg = server.ready.get(timeout=1.0)
        except queue.Empty:
            continue
        if version - seg["versions"].min() > max_lag:
            dropped += seg["rewards"].size
            continue
        segments.append(seg)
    return segments, dropped


def serial_collect(server, slot_envs: list, outs: list, n: int) -> list[dict]:
    """--no-async: every slot stepped in lockstep in this process, one forward for all, until n segments are complete.
    The pending observations in `outs` are acted on after the update, with the new parameters (as mappo.py does)."""
    slots = [(s // server.num_splits, s % server.num_splits) for s in range(len(slot_envs))]
    while True:
        for slot, out in zip(slots, outs):
            server.record(slot, out)  # idempotent: a step's outcome is recorded once
        if server.ready.qsize() >= n:
            return [server.ready.get() for _ in range(n)]
        actions = server.infer([(slot, out, None) for slot, out in zip(slots, outs)])
        for i, (envs, action) in enumerate(zip(slot_envs, actions)):
            start = time.time()
            outs[i] = envs.step(action)
            server.client_env_time[0] = server.client_env_time.get(0, 0.0) + time.time() - start


@torch.no_grad()
def critic_over_segments(critic, state, starts, segments: list, carry: dict):
    """--recurrent: the critic over a batch of segments, each scanned from the hidden state after its slot's previous
    segment: from `carry` (slot -> (index, (k,A,H) state), earlier batches), or from that segment itself when it is in
    this batch too (a client that ran ahead), or zeros when it was dropped for its lag. state (T,E,A,S), starts (T,E,A)
    -> values in return units (T,E,A), hidden states after each step (T,E,A,H), entering step 0 (E,A,H); the carry
    is updated with each slot's newest segment."""
    k = segments[0]["rewards"].shape[1]

    def cols(j: int) -> slice:  # segment j's envs on the env axis
        return slice(j * k, (j + 1) * k)

    h0 = torch.zeros((state.shape[1], state.shape[2], critic.gru.hidden_size), device=state.device)  # (E,A,H)
    position = {(seg["slot"], seg["index"]): j for j, seg in enumerate(segments)}
    chained = []  # (segment, its predecessor) both in this batch
    for j, seg in enumerate(segments):
        index, h = carry.get(seg["slot"], (None, None))
        if (seg["slot"], seg["index"] - 1) in position:
            chained.append((j, position[seg["slot"], seg["index"] - 1]))
        elif index == seg["index"] - 1:
            h0[cols(j)] = h
    values, out = critic.value(state, h0, starts)
    while chained:  # scan again until every chained segment starts where its predecessor ended (rarely needed)
        new_h0 = h0.clone()
        for j, p in chained:
            new_h0[cols(j)] = out[-1, cols(p)]
        if torch.equal(new_h0, h0):
            break
        h0 = new_h0
        values, out = critic.value(state, h0, starts)
    for j, seg in sorted(enumerate(segments), key=lambda js: js[1]["index"]):  # the slot's next segment starts here
        carry[seg["slot"]] = (seg["index"], out[-1, cols(j)].clone())
    return values, out, h0


@torch.no_grad()
def recurrent_bootstrap_values(critic, critic_out, final_state, next_state, terminated, truncated):
    """--recurrent: the critic one step past an episode's end or the rollout's end. critic_out (T,E,A,H) hidden states
    after each step; final_state (n,A,S) the final observations of the n truncated steps in (T,E) order, each continuing
    that episode (one more step from the state after t, no reset); next_state (E,A,S) the observation after step T-1,
    from a reset state if step T-1 ended an episode -> final values (T,E,A) (zero where not truncated), next value
    (E,A), both in return units."""
    T, E, A = truncated.shape[0], truncated.shape[1], critic_out.shape[2]
    final_values = critic_out.new_zeros((T, E, A))
    if truncated.any():
        final_x = final_state[None]  # (1,n,A,S)
        no_start = torch.zeros(final_x.shape[:3], dtype=torch.bool, device=final_x.device)  # (1,n,A)
        final_values[truncated] = critic.value(final_x, critic_out[truncated], no_start)[0][0]
    next_start = (terminated[-1] | truncated[-1]).unsqueeze(-1).expand(E, A)  # (E,A)
    next_value = critic.value(next_state[None], critic_out[-1], next_start[None])[0][0]  # (E,A)
    return final_values, next_value


def stop_clients(server, procs: list, world_size: int, store_dir: Optional[str], timeout: float = 10.0):
    """Answers every request with None, waits for local clients to exit (kills them after timeout), closes RPC and
    removes the local run's rendezvous folder. Once only: the `finally` after a failed Ctrl-C branch calls it again."""
    if server.closed:
        return
    server.closed = True
    deadline = time.time() + timeout
    server.stopping.set()
    if server.thread is not None:
        server.thread.join(timeout=timeout / 2)  # its waits are 0.1-0.5 s
    server.drain()
    while time.time() < deadline and (
        any(p.poll() is None for p in procs) or (not procs and len(server.stopped_clients) < world_size - 1)
    ):
        server.drain()
        time.sleep(0.05)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if world_size > 1 and not procs:  # remote clients: let the last answers leave before the pipes close
        time.sleep(max(0.0, min(0.5, deadline - time.time())))
    if world_size > 1:
        rpc.shutdown(graceful=False)
    if store_dir is not None:
        shutil.rmtree(store_dir, ignore_errors=True)


if __name__ == "__main__":
    args, ckpt = parse_args()
    if args.role == "client":
        init_method = args.init_method or f"tcp://{args.master_addr}:{args.master_port}"
        sys.exit(env_client(args.rank, args.world_size, init_method, args.master_addr, args.rpc_timeout))
    resuming = ckpt is not None and not args.eval_only
    run_name = (
        ckpt["run_name"] if resuming else f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}".replace("/", "-")
    )

    # TRY NOT TO MODIFY: seeding
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    # env setup
    eval_envs = make_env(
        args.env_id, min(args.eval_episodes, 32), args.seed + 100_000, args.num_workers, args.num_stacked_frames
    )
    A, U = eval_envs.num_agents, eval_envs.num_actions
    C = args.data_chunk_length if args.recurrent else 1  # a feed-forward batch is chunks of one step
    num_chunks = math.ceil(args.num_steps / C) * args.num_envs * A
    args.minibatch_size = math.ceil(num_chunks / args.num_minibatches)
    if args.num_minibatches > num_chunks:
        fail(f"--num-minibatches {args.num_minibatches} exceeds the {num_chunks} chunks of a rollout")
    agent_ids = torch.eye(A, device=device)  # (A,A) one-hot ids
    obs_dim, env_state_dim = eval_envs.obs_dim, eval_envs.state_dim
    state_dim = {"as": env_state_dim + obs_dim + A, "ep": env_state_dim + A, "cl": A * obs_dim}[args.state_type]

    net_args = (args.hidden_dim, args.num_layers, args.activation, args.use_feature_norm)
    actor = Actor(obs_dim + A, U, *net_args, gain=args.gain, recurrent=args.recurrent)
    critic = Critic(state_dim, *net_args, recurrent=args.recurrent)
    actor, critic = actor.to(device), critic.to(device)
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=args.learning_rate, eps=1e-5)  # MAPPO: Adam eps 1e-5
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate, eps=1e-5)
    global_step, start_iteration, evals = 0, 1, []
    if ckpt is not None:
        try:
            actor.load_state_dict(ckpt["actor"])
            critic.load_state_dict(ckpt["critic"])
        except RuntimeError as e:  # a network flag (--recurrent, --hidden-dim, ...) that differs from the checkpoint's
            fail(f"the checkpoint's networks do not match these flags: {' '.join(str(e).split())[:300]}")

    if args.eval_only:
        win_rate, ret = evaluate(actor, eval_envs, args.eval_episodes, agent_ids, device)
        eval_envs.close()
        print(f"eval-only {args.eval_only}: {args.env_id}, {args.eval_episodes} greedy episodes")
        win = f"win_rate={win_rate:.4f} " if eval_envs.is_smac else ""  # MPE has no win
        print(f"{win}episodic_return={ret:.4f}")
        sys.exit(0)
    if resuming:  # --resume: optimiser state, step counters and the eval history continue
        actor_optimizer.load_state_dict(ckpt["actor_optimizer"])
        critic_optimizer.load_state_dict(ckpt["critic_optimizer"])
        global_step, start_iteration, evals = ckpt["global_step"], ckpt["iteration"] + 1, [list(e) for e in ckpt["evals"]]

    # TRY NOT TO MODIFY: tracking
    if args.track:
        import wandb

        wandb.init(
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            sync_tensorboard=True,
            config=vars(args),
            name=run_name,
            save_code=True,
            resume="allow",
        )
    writer = SummaryWriter(f"runs/{run_name}")
    writer.add_text(
        "hyperparameters",
        "|param|value|\n|-|-|\n%s" % ("\n".join([f"|{key}|{value}|" for key, value in vars(args).items()])),
    )
    # ASYNC: the inference server (a thread here) and the env clients (local processes, or remote ones joining by rank)
    T, E, S, m, k = args.num_steps, args.num_envs, state_dim, args.num_splits, args.envs_per_split
    H = args.hidden_dim
    critic_carry = {}  # --recurrent: slot -> (segment index, (k,A,H) critic hidden state after that segment)
    server = InferenceServer(
        copy.deepcopy(actor), agent_ids, T, args.server_batch, args.flush_timeout, args.num_clients, m, device, asdict(args)
    )
    server.publish(actor)  # version 1: the policy that acts first
    _SERVER, procs, slot_envs, outs, store_dir = server, [], [], [], None
    # until the loop there is nothing to save and the RPC rendezvous blocks where no Python handler can run: Ctrl-C
    # and SIGTERM end the learner at once, and the local clients with it (PR_SET_PDEATHSIG, see env_client)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    if args.asynchronous:
        if args.role == "all":  # a file store for the rendezvous: no port is opened for it
            store_dir = tempfile.mkdtemp(prefix="cleanmappo_rpc_")
            init_method = f"file://{store_dir}/store"
        else:
            init_method = args.init_method or f"tcp://{args.master_addr}:{args.master_port}"
        for rank in range(1, args.world_size) if args.role == "all" else ():
            cmd = [sys.executable, os.path.abspath(__file__), "--role", "client", "--rank", str(rank)]
            cmd += ["--world-size", str(args.world_size), "--init-method", init_method, "--master-addr", args.master_addr]
            env = dict(os.environ, CLEANMAPPO_LEARNER_PID=str(os.getpid()))
            procs.append(subprocess.Popen(cmd + ["--rpc-timeout", str(args.rpc_timeout)], stdin=subprocess.DEVNULL, env=env))
        try:
            init_rpc("learner", 0, args.world_size, init_method, args.master_addr, args.rpc_timeout, procs)
        except RuntimeError as e:  # a client missing or dead
            for proc in procs:
                proc.kill()
            if store_dir is not None:
                shutil.rmtree(store_dir, ignore_errors=True)
            fail(f"no rendezvous with the env clients at {init_method} ({str(e).splitlines()[0][:200]})")
        server.last_seen = {c: time.time() for c in range(args.num_clients)}
        server.thread = threading.Thread(target=server.run, daemon=True)
        server.thread.start()
    else:  # --no-async: the same slots and seeds, stepped in lockstep here
        slot_envs = [
            make_env(args.env_id, k, args.seed + s * k, args.num_workers, args.num_stacked_frames)
            for s in range(args.num_clients * m)
        ]
        outs = [envs.reset() for envs in slot_envs]
    stop_signals = []  # received SIGINT/SIGTERM: one raised inside a gc callback is swallowed, the loop checks
    updating = False  # from the PopArt update to the end of the PPO epochs a signal waits for the update's end

    def stop(signum, frame):  # -> KeyboardInterrupt: checkpoint, flush, exit
        stop_signals.append(signum)
        if not updating:  # during the update: raised once it is done, so a checkpoint never holds half an update
            raise KeyboardInterrupt

    def quiet_swallowed_stop(unraisable):  # Python prints a swallowed KeyboardInterrupt as a traceback: it is ours
        if not (stop_signals and issubclass(unraisable.exc_type, KeyboardInterrupt)):
            sys.__unraisablehook__(unraisable)

    sys.unraisablehook = quiet_swallowed_stop

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)

    def to_device(out: dict) -> tuple[torch.Tensor, ...]:
        obs_, env_state_, avail_, alive_ = (
            torch.from_numpy(out[k]).to(device) for k in ("obs", "env_state", "avail", "alive")
        )
        return obs_, critic_input(obs_, env_state_, alive_, agent_ids, args.state_type, args.death_masking), avail_, alive_

    # TRY NOT TO MODIFY: start the game
    start_time = run_start = time.time()
    start_time -= evals[-1][3] if evals else 0.0  # a resumed run's evaluation clock goes on
    start_env_steps, env_time_logged = global_step, 0.0
    server.env_steps = global_step  # a resumed run counts on
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeRemainingColumn(),
        disable=not sys.stdout.isatty(),
    )
    total = args.num_iterations * args.batch_size  # env steps of the whole run
    if total != args.total_timesteps:
        print(f"--total-timesteps {args.total_timesteps} is rounded down to whole rollouts: {total}")
    task = progress.add_task(args.env_id, total=total, completed=global_step, info="")
    iteration = done_iteration = start_iteration - 1
    done_step = global_step  # the last full iteration and its step, for a Ctrl-C checkpoint
    printed = 0.0  # when the last piped progress line was printed
    try:
        progress.start()
        for iteration in range(start_iteration, args.num_iterations + 1):
            if stop_signals:  # a signal whose KeyboardInterrupt JAX's gc callback swallowed
                raise KeyboardInterrupt
            if args.anneal_lr:
                frac = 1.0 - (iteration - 1.0) / args.num_iterations
                actor_optimizer.param_groups[0]["lr"] = frac * args.learning_rate
                critic_optimizer.param_groups[0]["lr"] = frac * args.critic_learning_rate

            # ASYNC: wait for a batch of segments (E envs x T steps) from the clients, or step them here with --no-async
            wait_start = time.time()
            if args.asynchronous:
                segments, dropped = collect_segments(
                    server, args.num_clients * m, server.version, args.max_policy_lag, procs, args.client_timeout
                )
            else:
                segments, dropped = serial_collect(server, slot_envs, outs, args.num_clients * m), 0
            wait_time = time.time() - wait_start
            global_step = server.env_steps

            def stack(key: str, axis: int = 1, rows=None) -> torch.Tensor:
                """the segments' key joined along the env axis, to the device; rows (host bool mask) picks first"""
                x = np.concatenate([seg[key] for seg in segments], axis=axis)
                return torch.from_numpy(x if rows is None else x[rows]).to(device)

            obs, avail_actions, alive, actions, logprobs = (
                stack(key) for key in ("obs", "avail", "alive", "actions", "logprobs")
            )
            truncated_host = np.concatenate([seg["truncated"] for seg in segments], axis=1)  # (T,E), picks final_* below
            rewards, terminated = stack("rewards"), stack("terminated")  # (T,E)
            truncated = torch.from_numpy(truncated_host).to(device)  # (T,E)
            # (T,E,A,...) inputs, shapes as in mappo.py's storage
            state = critic_input(
                obs.flatten(0, 1),
                stack("env_state").flatten(0, 1),
                alive.flatten(0, 1),
                agent_ids,
                args.state_type,
                args.death_masking,
            ).view(T, E, A, S)
            final_state = critic_input(  # (n,A,S): the n truncated steps only, in (T,E) order
                stack("final_obs", rows=truncated_host),
                stack("final_state", rows=truncated_host),
                stack("final_alive", rows=truncated_host),
                agent_ids,
                args.state_type,
                args.death_masking,
            )
            next_obs, next_alive = stack("next_obs", 0), stack("next_alive", 0)  # (E,A,O), (E,A)
            next_state = critic_input(
                next_obs, stack("next_env_state", 0), next_alive, agent_ids, args.state_type, args.death_masking
            )
            policy_lag = server.version - np.stack([seg["versions"] for seg in segments], axis=1)  # (T, segments)

            if args.recurrent:  # the actor's hidden states as the server kept them
                # step t > 0 begins an episode where step t-1 ended one: from the dones, not the server's flags, so the
                # ratio test also checks the server's resets (as mappo_rnn.py); step 0's flag comes from the server
                starts = torch.cat([stack("starts")[:1], (terminated | truncated)[:-1]])  # (T,E)
                starts = starts.unsqueeze(-1).expand(T, E, A)  # (T,E,A)
                actor_hs = stack("actor_h")  # (T,E,A,H) the actor's hidden state entering step t, before its reset
            else:
                starts, actor_hs = torch.zeros((T, E, A), dtype=torch.bool, device=device), None

            updating = True
            # ALGO LOGIC: the critic over the whole rollout in one batched forward, or one scan per segment from its
            # slot's carried hidden state with --recurrent (it did not change during the rollout), then GAE
            with torch.no_grad():
                if args.recurrent:  # (T,E,A) V(s_t), (T,E,A,H) after each step, (E,A,H) entering step 0
                    values_dn, critic_out, initial_critic_h = critic_over_segments(
                        critic, state, starts, segments, critic_carry
                    )
                    critic_hs = torch.cat([initial_critic_h[None], critic_out[:-1]])  # (T,E,A,H) entering step t
                    final_values_dn, next_value = recurrent_bootstrap_values(
                        critic, critic_out, final_state, next_state, terminated, truncated
                    )
                else:
                    values_dn, _ = critic.value(state)  # (T,E,A) V(s_t)
                    final_values_dn = torch.zeros_like(values_dn)  # (T,E,A), needed only where an episode was truncated
                    final_values_dn[truncated] = critic.value(final_state)[0]
                    next_value = critic.value(next_state)[0]  # (E,A)
                advantages, returns = compute_gae(
                    rewards, values_dn, next_value, terminated, truncated, final_values_dn, args.gamma, args.gae_lambda
                )
                if args.use_popart:  # MAPPO Suggestion 1: normalise the value targets, output layer rescaled
                    critic.popart.update(returns)
            if args.norm_adv:  # over the active agent-steps only
                active_adv = advantages[alive] if alive.any() else advantages
                advantages = (advantages - active_adv.mean()) / (active_adv.std() + 1e-8)

            # ALGO LOGIC: cut the rollout into chunks of C steps (C = 1 without --recurrent: the flat batch of mappo.py);
            # each chunk starts from its stored hidden states
            c_obs = to_chunks(actor_input(obs, agent_ids), C)  # (C, N, O+A), N = ceil(T/C)*E*A chunks
            c_state = to_chunks(state, C)  # (C, N, S)
            c_avail = to_chunks(avail_actions, C)  # (C, N, U)
            c_starts = to_chunks(starts, C)  # (C, N)
            c_valid = to_chunks(torch.ones_like(alive), C)  # (C, N) False on the padding after step T
            c_alive = to_chunks(alive, C)  # (C, N) False on the padding too
            c_actions = to_chunks(actions, C)  # (C, N)
            c_logprobs = to_chunks(logprobs, C)  # (C, N)
            c_advantages = to_chunks(advantages, C)  # (C, N)
            with torch.no_grad():  # PopArt-normalised targets, and the old values under the new statistics
                c_returns_n = to_chunks(critic.popart.normalize(returns.unsqueeze(-1)).squeeze(-1), C)  # (C, N)
                c_values_n = to_chunks(critic.popart.normalize(values_dn.unsqueeze(-1)).squeeze(-1), C)  # (C, N)
            c_actor_h0 = actor_hs[::C].reshape(-1, H) if args.recurrent else None  # (N, H) entering each chunk
            c_critic_h0 = critic_hs[::C].reshape(-1, H) if args.recurrent else None  # (N, H)
            policy_mask = c_alive if args.policy_active_masks else c_valid
            value_mask = c_alive if args.value_active_masks else c_valid

            # Optimizing the policy and value network
            update_start = time.time()
            N, minibatch_size = c_actions.shape[1], args.minibatch_size
            clipfracs, first_ratio_dev, first_value_dev = [], 0.0, 0.0
            for epoch in range(args.update_epochs):
                b_inds = torch.randperm(N, device=device)
                for start in range(0, N, minibatch_size):
                    mb_inds = b_inds[start : start + minibatch_size]  # whole chunks
                    mb_policy_mask = policy_mask[:, mb_inds]  # (C, mb)
                    mb_actor_h0 = c_actor_h0[mb_inds] if args.recurrent else None
                    mb_critic_h0 = c_critic_h0[mb_inds] if args.recurrent else None

                    # BPTT through each chunk with --recurrent; the hidden state resets where an episode starts in it
                    logits, _ = actor(c_obs[:, mb_inds], mb_actor_h0, c_starts[:, mb_inds])  # (C, mb, U)
                    dist = MaskedCategorical(logits, c_avail[:, mb_inds])
                    newlogprob = dist.log_prob(c_actions[:, mb_inds])  # (C, mb)
                    entropy = dist.entropy()
                    logratio = newlogprob - c_logprobs[:, mb_inds]
                    ratio = logratio.exp()

                    with torch.no_grad():
                        # calculate approx_kl http://joschu.net/blog/kl-approx.html
                        old_approx_kl = masked_mean(-logratio, mb_policy_mask)
                        approx_kl = masked_mean((ratio - 1) - logratio, mb_policy_mask)
                        clipfracs += [masked_mean(((ratio - 1.0).abs() > args.clip_coef).float(), mb_policy_mask).item()]
                        if epoch == 0 and start == 0:  # 0 at zero policy lag: the update sees what the server saw
                            first_ratio_dev = (ratio - 1.0).abs()[c_valid[:, mb_inds]].max().item()

                    mb_advantages = c_advantages[:, mb_inds]
                    # Policy loss, over every active step of every chunk
                    pg_loss1 = -mb_advantages * ratio
                    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                    pg_loss = masked_mean(torch.max(pg_loss1, pg_loss2), mb_policy_mask)
                    entropy_loss = masked_mean(entropy, mb_policy_mask)
                    actor_loss = pg_loss - args.ent_coef * entropy_loss
                    actor_optimizer.zero_grad()
                    actor_loss.backward()
                    grad_norm = nn.utils.clip_grad_norm_(actor.parameters(), args.max_grad_norm)
                    actor_optimizer.step()

                    # Value loss, on PopArt-normalised values
                    newvalue, _ = critic(c_state[:, mb_inds], mb_critic_h0, c_starts[:, mb_inds])  # (C, mb)
                    mb_returns, mb_values = c_returns_n[:, mb_inds], c_values_n[:, mb_inds]
                    if epoch == 0 and start == 0:  # ~0: the chunks rebuild the critic's values (PopArt rounding)
                        first_value_dev = (newvalue - mb_values).detach().abs()[c_valid[:, mb_inds]].max().item()

                    v_loss_unclipped = value_error(newvalue - mb_returns, args.use_huber, args.huber_delta)
                    if args.clip_vloss:
                        v_clipped = mb_values + torch.clamp(newvalue - mb_values, -args.clip_coef, args.clip_coef)
                        v_loss_clipped = value_error(v_clipped - mb_returns, args.use_huber, args.huber_delta)
                        v_loss_unclipped = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = masked_mean(v_loss_unclipped, value_mask[:, mb_inds])
                    critic_optimizer.zero_grad()
                    (v_loss * args.vf_coef).backward()
                    critic_grad_norm = nn.utils.clip_grad_norm_(critic.parameters(), args.max_grad_norm)
                    critic_optimizer.step()
            update_time = time.time() - update_start
            server.publish(actor)  # the server picks the new parameters up before its next batch
            done_iteration, done_step = iteration, global_step
            updating = False
            if stop_signals:  # one that came during the update: the checkpoint holds this whole iteration
                raise KeyboardInterrupt

            y_pred, y_true = values_dn.reshape(-1).cpu().numpy(), returns.reshape(-1).cpu().numpy()
            var_y = np.var(y_true)
            explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

            # TRY NOT TO MODIFY: record rewards for plotting purposes
            # env steps per second of wall time since the start, evaluations included: the clients step on meanwhile
            sps = int((global_step - start_env_steps) / max(time.time() - run_start, 1e-9))
            stats = server.take_stats()
            writer.add_scalar("charts/learning_rate", actor_optimizer.param_groups[0]["lr"], global_step)
            writer.add_scalar("charts/SPS", sps, global_step)
            if stats["episodes"]:
                ep_returns, ep_lengths, ep_won = zip(*stats["episodes"])
                writer.add_scalar("charts/episodic_return", np.mean(ep_returns), global_step)
                writer.add_scalar("charts/episodic_length", np.mean(ep_lengths), global_step)
                if eval_envs.is_smac:
                    writer.add_scalar("charts/win_rate", np.mean(ep_won), global_step)
            writer.add_scalar("stats/policy_lag", policy_lag.mean(), global_step)
            writer.add_scalar("stats/policy_lag_max", policy_lag.max(), global_step)
            writer.add_scalar("stats/dropped_steps", dropped, global_step)
            writer.add_scalar("stats/server_batch_size", np.mean(stats["batch_sizes"] or [0]), global_step)
            writer.add_scalar("stats/request_queue", server.requests.qsize(), global_step)
            writer.add_scalar("stats/ready_queue", server.ready.qsize(), global_step)
            env_time_total = sum(server.client_env_time.values())  # client seconds in env steps since they started
            writer.add_scalar("stats/time_env", env_time_total - env_time_logged, global_step)  # since the last update
            env_time_logged = env_time_total
            writer.add_scalar("stats/time_inference", stats["infer_time"], global_step)
            writer.add_scalar("stats/time_learner_wait", wait_time, global_step)
            writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
            writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
            writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
            writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
            writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
            writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
            writer.add_scalar("losses/explained_variance", explained_var, global_step)
            writer.add_scalar("losses/grad_norm", grad_norm.item(), global_step)
            writer.add_scalar("losses/critic_grad_norm", critic_grad_norm.item(), global_step)
            writer.add_scalar("losses/first_ratio_dev", first_ratio_dev, global_step)
            writer.add_scalar("losses/first_value_dev", first_value_dev, global_step)
            if args.use_popart:
                mean, std = critic.popart.stats()
                writer.add_scalar("popart/mean", mean.item(), global_step)
                writer.add_scalar("popart/std", std.item(), global_step)
            writer.add_scalar("time/update", update_time, global_step)
            info = f"FPS {sps}  lag {policy_lag.mean():.1f}"
            if stats["episodes"]:
                info += f"  return {np.mean(ep_returns):.2f}"
                info += f"  win {np.mean(ep_won):.2f}" if eval_envs.is_smac else ""

            if args.eval_interval and (iteration % args.eval_interval == 0 or iteration == args.num_iterations):
                eval_start = time.time()
                win_rate, eval_return = evaluate(actor, eval_envs, args.eval_episodes, agent_ids, device)
                evals.append([global_step, win_rate, eval_return, time.time() - start_time])
                writer.add_scalar("eval/episodic_return", eval_return, global_step)
                if eval_envs.is_smac:
                    writer.add_scalar("eval/win_rate", win_rate, global_step)
                writer.add_scalar("time/eval", time.time() - eval_start, global_step)
                info += f"  eval return {eval_return:.2f}" + (f"  eval win {win_rate:.2f}" if eval_envs.is_smac else "")
            if args.save_interval and iteration % args.save_interval == 0:  # a killed run loses at most N updates
                path = f"runs/{run_name}/{args.exp_name}.pt"
                save_checkpoint(
                    path, actor, critic, actor_optimizer, critic_optimizer, args, global_step, iteration, run_name, evals
                )
            progress.update(task, completed=global_step, info=info)
            if progress.disable and (time.time() - printed >= 30 or iteration in (start_iteration, args.num_iterations)):
                printed = time.time()  # piped: a line every 30 s, or every iteration if one takes longer
                print(f"{args.env_id} step {global_step}/{total}  {info}", flush=True)
    except (KeyboardInterrupt, RunFailed) as e:
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not cut the checkpoint short
            signal.signal(sig, signal.SIG_IGN)
        progress.stop()
        stop_clients(server, procs, args.world_size if args.asynchronous else 1, store_dir)
        path = f"runs/{run_name}/{args.exp_name}.pt"
        save_checkpoint(
            path, actor, critic, actor_optimizer, critic_optimizer, args, done_step, done_iteration, run_name, evals
        )
        write_eval_summary(f"runs/{run_name}/eval_summary.json", args, done_step, evals, eval_envs.is_smac)
        writer.close()
        for envs in [*slot_envs, eval_envs]:
            envs.close()
        if isinstance(e, RunFailed):
            print(f"error: {e}; stopped the run, checkpoint at step {done_step} in {path}", file=sys.stderr, flush=True)
        else:
            print(f"interrupted at step {global_step}: checkpoint at step {done_step} in {path}, logs flushed", flush=True)
        if args.track:
            wandb.finish(exit_code=1 if isinstance(e, RunFailed) else 130)
        sys.stdout.flush()
        # not sys.exit: a JAX compile the signal cut short goes on in a thread, and the interpreter's
        # teardown under it aborts or segfaults; every file is written and every child stopped by now
        os._exit(1 if isinstance(e, RunFailed) else 130)
    finally:  # the run is complete, or a bug or device error raised (its traceback follows): stop the clients
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        progress.stop()
        stop_clients(server, procs, args.world_size if args.asynchronous else 1, store_dir)

    if args.save_model or args.resume:  # a resumed run keeps its checkpoint up to date
        path = f"runs/{run_name}/{args.exp_name}.pt"
        save_checkpoint(path, actor, critic, actor_optimizer, critic_optimizer, args, global_step, iteration, run_name, evals)
        print(f"model saved to {path}")
    write_eval_summary(f"runs/{run_name}/eval_summary.json", args, global_step, evals, eval_envs.is_smac)
    for envs in [*slot_envs, eval_envs]:
        envs.close()
    writer.close()
