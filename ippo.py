# ippo.py: IPPO, MAPPO with a decentralised critic (local observation). Diff base: mappo.py. Details: README.md#ippopy
# Args, env adapters, networks, rollout, GAE, update, evaluation, training loop; then env backends and plumbing.
# ruff: noqa: E402 (imports come after the early stop handler and the settings JAX reads)
import os
import signal
import sys

# a stop before training starts (imports, envs, compiling): one line and exit 130, no traceback
if __name__ == "__main__":

    def stop_before_training(signum, frame):
        name = signal.Signals(signum).name
        print(f"stopped ({name}) before training started: nothing to save", file=sys.stderr)
        raise SystemExit(130)

    # also where a shell started us with SIGINT ignored (cmd &)
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, stop_before_training)

# JAX (SMAX, Hanabi) runs on the CPU, so torch has the GPU to itself; --env-on-device lets JAX
# use the GPU too ("": its default). Either way JAX never reserves GPU memory up front.
os.environ["JAX_PLATFORMS"] = "" if {"--env-on-device", "--env_on_device"} & set(sys.argv) else "cpu"
os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"

import argparse
import contextlib
import datetime
import importlib
import json
import math
import multiprocessing as mp
import random
import shutil
import zipfile
import time
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from typing import Literal, Optional

import numpy as np
import torch
import torch.nn as nn
import tyro
from torch.utils.tensorboard import SummaryWriter

from popart import MaskedCategorical, PopArt, masked_mean


@dataclass
class Args:
    """IPPO as in the MAPPO paper (Yu et al. 2022): everything as MAPPO but the critic sees the agent's local
    observation and id.
    The defaults are the paper's SMAC settings; --env-id brings the paper's settings for its env family and map
    (env_presets(): SMAC Table 12, MPE Tables 5 and 11, Hanabi Tables 7 and 13 given the paper-preset flag, else
    ours for 2 cores). Any flag you pass wins; each flag's help names its default's source.
    """

    # experiment
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """name of this experiment, part of the run name"""
    seed: int = 1
    """of random, numpy, torch, the envs (env i: seed + i; SMAX: one key)"""
    torch_deterministic: bool = True
    """sets `torch.backends.cudnn.deterministic`"""
    cuda: bool = True
    """train on the GPU when CUDA is available"""
    compile: bool = False
    """torch.compile the update's losses (GPU: CUDA graphs) [ours]"""
    track: bool = False
    """log to Weights and Biases (tensorboard is always written to runs/)"""
    wandb_project_name: str = "cleanmappo"
    """the W&B project"""
    wandb_entity: Optional[str] = None
    """the W&B entity (team)"""
    save_model: bool = False
    """checkpoint runs/{run_name}/{exp_name}.pt at the end"""
    save_interval: int = 0
    """also every N updates, so that a killed run can --resume (0: off)"""
    resume: Optional[str] = None
    """go on with this checkpoint's run: its args, then your flags"""
    eval_only: Optional[str] = None
    """evaluate this checkpoint's policy (greedy) and exit"""

    # env
    env_id: str = "3m"
    """SMAX map, smaclite/<map>, MPE task, hanabi, vmas/<task>, pz/<module>:<callable>, gym/<id> [ours]"""
    num_envs: int = 8
    """parallel environments [MAPPO: 8 SMAC (Table 6), 128 MPE (Table 5)]"""
    num_steps: int = 400
    """steps per env per rollout [MAPPO: 400 SMAC (Table 6), 25 MPE (Table 5)]"""
    total_timesteps: int = 10_000_000
    """env steps, in whole rollouts [MAPPO: 10M SMAC (Section 5)]"""
    eval_interval: int = 1
    """evaluate every N updates, 0 never [MAPPO: 1; ours: 5 on smaclite]"""
    eval_episodes: int = 32
    """greedy episodes per evaluation [MAPPO: 32 test games]"""
    eval_sampled: bool = False
    """then as many with sampled actions (Mava's SMAX metric) [ours]"""
    num_workers: int = 0
    """smaclite only: env worker processes, 0 = min(num envs, CPU cores) [ours]"""
    num_stacked_frames: int = 1
    """stacked observations [MAPPO: 4 on 3s_vs_4z, 3s_vs_5z (Table 12)]"""
    env_on_device: bool = False
    """SMAX, Hanabi, VMAS step on the training device (GPU) [ours]"""
    paper_preset: bool = False
    """hanabi: 1000 envs, 512 wide [MAPPO: Tables 7, 13; ours: 128 and 128]"""
    team_reward: Literal["sum", "mean"] = "sum"
    """pz/, gym/: of agents' rewards [ours: EPyMARL's]"""

    # algorithm
    learning_rate: float = 5e-4
    """actor's [MAPPO: 5e-4 SMAC (Table 12), 7e-4 MPE (Table 11)]"""
    critic_learning_rate: float = 5e-4
    """critic learning rate [MAPPO: same as the actor's]"""
    anneal_lr: bool = False
    """linearly anneal both learning rates to 0 [MAPPO: off]"""
    gamma: float = 0.99
    """discount [MAPPO: 0.99 (Table 3)]"""
    gae_lambda: float = 0.95
    """GAE lambda [MAPPO: 0.95 (Table 3)]"""
    num_minibatches: int = 1
    """mini-batches per epoch [MAPPO: 1 (Suggestion 3); 2 MMM2 (Table 12)]"""
    update_epochs: int = 15
    """PPO epochs per rollout [MAPPO: 15 easy, 10 or 5 hard maps (Table 12)]"""
    norm_adv: bool = True
    """normalise advantages over the batch's active agent-steps [MAPPO: on]"""
    clip_coef: float = 0.2
    """PPO ratio clip [MAPPO: 0.2 (Table 3)]"""
    clip_vloss: bool = True
    """clip the value's change by clip-coef [MAPPO: 0.2 (Table 3)]"""
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
    """[MAPPO: ReLU; Tanh spread, speaker (Table 11)]"""
    use_feature_norm: bool = True
    """LayerNorm on the network inputs [MAPPO: on (Table 3)]"""
    gain: float = 0.01
    """orthogonal-init gain of the policy head [MAPPO: 0.01; 1 MMM2 (Table 12)]"""
    death_masking: bool = True
    """a dead agent's critic input: zeros + its id [MAPPO: Suggestion 5]"""
    policy_active_masks: bool = True
    """dead agents' steps out of policy loss, entropy [MAPPO: on]"""
    value_active_masks: bool = False
    """dead agents' steps out of value loss [MAPPO: off, script]"""
    acting_rows_only: bool = False
    """hanabi: train on the mover's rows [MAPPO: its code]"""


# ========================================= ENV ADAPTERS ===========================================
# A backend (section ENV BACKENDS) is a class made as Backend(env_id, num_envs, seed, num_workers),
# with num_envs, num_agents, obs_dim, state_dim, num_actions and has_wins (whether its episodes are
# won or lost: SMAC win rates). It steps all its envs in one call and returns numpy arrays:
#   reset() -> obs (E,A,O), env_state (E,S_env), avail (E,A,U) bool, alive (E,A) bool;
#   step(actions (E,A)) -> the same after auto-reset, plus reward (E,) team reward, terminated (E,)
#   a side wiped out, truncated (E,) time limit, won (E,), and final_obs / final_state /
#   final_alive: what this step observed before any reset (after a truncation, GAE bootstraps
#   from its value).
# A backend with continuous = True (VMAS) takes actions (E,A,U) of U real numbers per agent
# instead, clips them to its bounds, and avail is all True. A backend made with a device
# (--env-on-device: SMAX, Hanabi, VMAS) gives torch tensors on it and takes them.
def on_host(x):
    """An env output as numpy: a device backend's outputs are torch tensors on the training device"""
    return x.cpu().numpy() if torch.is_tensor(x) else x


def stack(arrays: list):
    """T arrays (E,...) -> (T,E,...): numpy, or torch where a device backend gave tensors"""
    return torch.stack(arrays) if torch.is_tensor(arrays[0]) else np.stack(arrays)


class FrameStack:
    """Each agent's observation becomes its last k observations (E,A,k*O), oldest first; an
    episode starts from zeros. The env state is not stacked."""

    def __init__(self, envs, k: int):
        self.envs = envs
        self.k = k
        self.obs_dim = k * envs.obs_dim
        for name in ("num_envs", "num_agents", "num_actions", "state_dim", "has_wins", "continuous"):
            setattr(self, name, getattr(envs, name))  # the wrapped env's

    def _push(self, stack: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """stack (E,A,k,O), obs (E,A,O) -> (E,A,k,O)"""
        return np.concatenate([stack[:, :, 1:], obs[:, :, None]], axis=2)

    def reset(self) -> dict:
        out = self.envs.reset()
        E = self.num_envs
        A = self.num_agents
        empty = np.zeros((E, A, self.k, self.envs.obs_dim), np.float32)
        self.stack = self._push(empty, out["obs"])
        return dict(out, obs=self.stack.reshape(E, A, -1))

    def step(self, actions: np.ndarray) -> dict:
        out = self.envs.step(actions)
        final = self._push(self.stack, out["final_obs"])  # what this step observed, before any reset
        new_episode = (out["terminated"] | out["truncated"])[:, None, None, None]  # (E,1,1,1)
        self.stack = self._push(np.where(new_episode, np.float32(0.0), self.stack), out["obs"])
        per_agent = (self.num_envs, self.num_agents, -1)
        return dict(out, obs=self.stack.reshape(per_agent), final_obs=final.reshape(per_agent))

    def close(self):
        self.envs.close()


# ===================================== ALGO LOGIC: networks =======================================
def actor_input(obs: torch.Tensor, agent_ids: torch.Tensor) -> torch.Tensor:
    """obs (...,A,O), agent_ids (A,A) one-hot -> (...,A,O+A): parameter sharing with the agent id"""
    return torch.cat([obs, agent_ids.expand(*obs.shape[:-1], -1)], dim=-1)


def critic_input(obs, env_state, alive, agent_ids, death_masking: bool) -> torch.Tensor:
    """obs (...,A,O), env_state (...,S_env) unused, alive (...,A) bool, agent_ids (A,A)
    -> the local critic input (...,A,O+A): IPPO's critic sees what the actor sees"""
    if death_masking:
        # MAPPO Suggestion 5: a dead agent's critic input is zeros + its agent id
        obs = obs * alive.unsqueeze(-1).to(obs.dtype)
    return torch.cat([obs, agent_ids.expand(*obs.shape[:-1], -1)], dim=-1)


def layer_init(layer: nn.Linear, gain: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, gain)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


def mlp(in_dim: int, hidden_dim: int, num_layers: int, activation: str, use_feature_norm: bool) -> nn.Sequential:
    """[LayerNorm] -> (Linear -> act -> LayerNorm) x num_layers, as the MAPPO code's MLPBase"""
    # torch's calculate_gain for the activation
    act, gain = (nn.ReLU, np.sqrt(2)) if activation == "relu" else (nn.Tanh, 5.0 / 3.0)
    layers = [nn.LayerNorm(in_dim)] if use_feature_norm else []
    for i in range(num_layers):
        linear = layer_init(nn.Linear(in_dim if i == 0 else hidden_dim, hidden_dim), gain)
        layers += [linear, act(), nn.LayerNorm(hidden_dim)]
    return nn.Sequential(*layers)


class DiagGaussian:
    """Continuous actions: independent Gaussians over the U action dimensions, the mean from the
    policy head and a learned, state-independent log standard deviation (the MAPPO code's
    DiagGaussian). log_prob and entropy sum over the dimensions. Samples are not clipped: the env
    adapter clips what it sends, the log-probability is the sample's."""

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor):
        self.mean = mean  # (...,U)
        self.log_std = log_std.expand_as(mean)  # (...,U)

    def sample(self, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        like = dict(device=self.mean.device, dtype=self.mean.dtype)
        noise = torch.randn(self.mean.shape, generator=generator, **like)
        return self.mean + self.log_std.exp() * noise  # (...,U)

    def mode(self) -> torch.Tensor:
        return self.mean

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        z = (action - self.mean) / self.log_std.exp()
        return (-0.5 * z**2 - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)  # (...)

    def entropy(self) -> torch.Tensor:
        return (0.5 + 0.5 * math.log(2 * math.pi) + self.log_std).sum(-1)  # (...)


def policy(out: torch.Tensor, avail: torch.Tensor, log_std: Optional[torch.Tensor]):
    """The policy head's output (...,U) -> the action distribution: categorical over the available
    actions (discrete; MAPPO Suggestion 4), or a diagonal Gaussian with the actor's log std
    (continuous: the actor has one)"""
    return MaskedCategorical(out, avail) if log_std is None else DiagGaussian(out, log_std)


class Actor(nn.Module):
    """MLP -> policy head (MAPPO Appendix A)"""

    def __init__(self, in_dim, num_actions, hidden_dim=64, num_layers=2, activation="relu",
                 use_feature_norm=True, gain=0.01, continuous=False):  # fmt: skip
        super().__init__()
        # continuous actions: a learned log std, std 1 at the start as in the MAPPO code
        self.log_std = nn.Parameter(torch.zeros(num_actions)) if continuous else None
        self.body = mlp(in_dim, hidden_dim, num_layers, activation, use_feature_norm)
        self.head = layer_init(nn.Linear(hidden_dim, num_actions), gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))  # (..., U) logits


class Critic(nn.Module):
    """MLP -> PopArt value head"""

    def __init__(self, in_dim, hidden_dim=64, num_layers=2, activation="relu", use_feature_norm=True):
        super().__init__()
        self.body = mlp(in_dim, hidden_dim, num_layers, activation, use_feature_norm)
        self.popart = PopArt(hidden_dim, 1)  # identity statistics unless --use-popart updates them

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.popart(self.body(x)).squeeze(-1)  # (...,) normalised value

    def value(self, x: torch.Tensor) -> torch.Tensor:
        """(...,) in return units"""
        return self.popart.denormalize(self.forward(x).unsqueeze(-1)).squeeze(-1)


# ===================================== ALGO LOGIC: rollout ========================================
@torch.no_grad()
def rollout(envs, actor, out: dict, num_steps: int, agent_ids, device, episodes: dict, stop: list):
    """num_steps steps of every env with the current policy, from `out`, the envs' last outputs.
    Returns (seen, out, env_time):
    - seen: what each step saw (obs, env_state, avail, alive) and gave (reward, terminated,
      truncated, final_*), stacked (T,E,...) where the envs gave them (the host; the device with
      --env-on-device), and the actions and logprobs (T,E,A) on the device; None after a stop
      (Ctrl-C or SIGTERM: `stop`, Run.stop's list, not empty), the partial rollout dropped;
    - out: the envs' last outputs; env_time: the seconds spent in the envs.
    `episodes`: each env's running return and length, and the (return, length, won) of every
    episode that ended, added at the rollout's end."""
    steps = []
    ends = []
    env_time = 0.0
    for step in range(num_steps):
        if stop:
            return None, out, env_time
        obs = torch.as_tensor(out["obs"], device=device)  # (E,A,O)
        avail = torch.as_tensor(out["avail"], device=device)  # (E,A,U)
        # all envs and agents in one forward
        dist = policy(actor(actor_input(obs, agent_ids)), avail, actor.log_std)
        action = dist.sample()  # (E,A), continuous: (E,A,U)
        steps.append({k: out[k] for k in ("obs", "env_state", "avail", "alive")})
        steps[-1].update(actions=action, logprobs=dist.log_prob(action))

        # TRY NOT TO MODIFY: execute the game and log data
        env_start = time.time()
        # a device env takes tensors
        out = envs.step(action if torch.is_tensor(out["obs"]) else action.cpu().numpy())
        env_time += time.time() - env_start
        gave = ("reward", "terminated", "truncated", "final_obs", "final_state", "final_alive")
        steps[-1].update({k: out[k] for k in gave})
        # (E,) where the envs gave it: no copy to the host per step
        done = out["terminated"] | out["truncated"]
        # new arrays, not in place: `ends` keeps each step's
        episodes["return"] = episodes["return"] + out["reward"]
        episodes["length"] = episodes["length"] + 1
        ends.append(dict(done=done, won=out["won"]))
        ends[-1].update(returns=episodes["return"], lengths=episodes["length"])
        episodes["return"] = episodes["return"] * ~done
        episodes["length"] = episodes["length"] * ~done
    # (T,E) each, one copy to the host per rollout
    ended = {k: on_host(stack([e[k] for e in ends])) for k in ends[0]}
    done = ended["done"]
    # in the order the episodes ended
    episodes["finished"] += zip(ended["returns"][done], ended["lengths"][done], ended["won"][done])
    seen = {k: stack([s[k] for s in steps]) for k in steps[0]}  # (T,E,...) each
    return seen, out, env_time


# ================================= ALGO LOGIC: advantages (GAE) ===================================
def compute_gae(rewards, values, next_value, terminated, truncated, final_values, gamma: float, gae_lambda: float):
    """rewards (T,E), values (T,E,A), next_value (E,A), terminated/truncated (T,E) bool,
    final_values (T,E,A) -> advantages, returns (T,E,A). After a truncation the target
    bootstraps from the value of the episode's final observation; after a termination it does
    not bootstrap at all."""
    T = rewards.shape[0]
    advantages = torch.zeros_like(values)
    lastgaelam = torch.zeros_like(next_value)
    for t in reversed(range(T)):
        # be careful: values[t+1] may start a new episode
        next_values = next_value if t == T - 1 else values[t + 1]
        next_values = torch.where(truncated[t].unsqueeze(-1), final_values[t], next_values)
        bootstrap = (~terminated[t]).unsqueeze(-1).to(values.dtype)
        episode_goes_on = (~(terminated[t] | truncated[t])).unsqueeze(-1).to(values.dtype)
        delta = rewards[t].unsqueeze(-1) + gamma * next_values * bootstrap - values[t]
        lastgaelam = delta + gamma * gae_lambda * episode_goes_on * lastgaelam
        advantages[t] = lastgaelam
    return advantages, advantages + values


def to_move(x: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    """x (...,A,*F), alive (...,A) with one True per step, the player to move -> that player's row
    (...,1,*F). In a turn-based game (Hanabi) the others' rows are forced no-ops: --acting-rows-only
    trains on this row alone, and GAE runs over the turns (each turn bootstraps from the next
    player's value), where the MAPPO code runs it over each player's own turns."""
    # else the rows of different steps would mix without an error
    if not bool((alive.sum(-1) == 1).all()):
        raise ValueError("to_move: a step without exactly one player to move")
    return x[alive].view(*alive.shape[:-1], 1, *x.shape[alive.dim() :])


# ==================================== ALGO LOGIC: PPO update ======================================
def value_error(error: torch.Tensor, use_huber: bool, delta: float) -> torch.Tensor:
    """Elementwise Huber(delta) or 0.5 * error^2 [MAPPO: Huber, delta 10]"""
    if use_huber:
        return nn.functional.huber_loss(error, torch.zeros_like(error), reduction="none", delta=delta)
    return 0.5 * error**2


def ppo_losses(actor, critic, mb: dict, args: Args) -> dict:
    """One mini-batch's losses, on the agent-steps of live agents, and the statistics that come
    with them: the part of the update that --compile compiles (backward and optimiser steps stay
    eager)"""
    dist = policy(actor(mb["obs"]), mb["avail"], actor.log_std)  # Suggestion 4: action masks
    logratio = dist.log_prob(mb["actions"]) - mb["logprobs"]
    ratio = logratio.exp()

    # Policy loss, clipped
    pg_loss1 = -mb["advantages"] * ratio
    pg_loss2 = -mb["advantages"] * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
    pg_loss = masked_mean(torch.max(pg_loss1, pg_loss2), mb["policy_mask"])
    entropy_loss = masked_mean(dist.entropy(), mb["policy_mask"])

    # Value loss, on PopArt-normalised values, clipped around the rollout's value
    newvalue = critic(mb["state"])
    v_loss_unclipped = value_error(newvalue - mb["returns"], args.use_huber, args.huber_delta)
    if args.clip_vloss:
        v_change = torch.clamp(newvalue - mb["values"], -args.clip_coef, args.clip_coef)
        v_clipped = mb["values"] + v_change
        v_loss_clipped = value_error(v_clipped - mb["returns"], args.use_huber, args.huber_delta)
        v_loss_unclipped = torch.max(v_loss_unclipped, v_loss_clipped)
    v_loss = masked_mean(v_loss_unclipped, mb["value_mask"])

    with torch.no_grad():
        # calculate approx_kl http://joschu.net/blog/kl-approx.html
        old_approx_kl = masked_mean(-logratio, mb["policy_mask"])
        approx_kl = masked_mean((ratio - 1) - logratio, mb["policy_mask"])
        clipfrac = masked_mean(((ratio - 1.0).abs() > args.clip_coef).float(), mb["policy_mask"])
        ratio_dev = (ratio - 1.0).abs().max()
    losses = dict(policy_loss=pg_loss, entropy=entropy_loss, value_loss=v_loss)
    return dict(losses, old_approx_kl=old_approx_kl, approx_kl=approx_kl, clipfrac=clipfrac, ratio_dev=ratio_dev)


def ppo_update(actor, critic, actor_optimizer, critic_optimizer, b: dict, args: Args, losses_of=ppo_losses) -> dict:
    """PPO epochs over the flat batch of B = T*E*A agent-steps [MAPPO Suggestion 3: few epochs,
    one mini-batch]. b: obs (B,O+A), state (B,S), avail (B,U), alive (B,), actions, logprobs,
    advantages (B,), and the returns and old values (B,), PopArt-normalised. losses_of:
    ppo_losses, or its compiled version. Returns the statistics to log."""
    b = dict(b)
    if args.norm_adv:  # over the active agent-steps only
        active_adv = b["advantages"][b["alive"]] if b["alive"].any() else b["advantages"]
        b["advantages"] = (b["advantages"] - active_adv.mean()) / (active_adv.std() + 1e-8)
    b["policy_mask"] = b["alive"] if args.policy_active_masks else torch.ones_like(b["alive"])
    b["value_mask"] = b["alive"] if args.value_active_masks else torch.ones_like(b["alive"])
    del b["alive"]

    B = b["advantages"].shape[0]
    minibatch_size = math.ceil(B / args.num_minibatches)  # agent-steps
    clipfracs = []
    first_ratio_dev = 0.0
    for epoch in range(args.update_epochs):
        b_inds = torch.randperm(B, device=b["advantages"].device)
        for start in range(0, B, minibatch_size):
            mb_inds = b_inds[start : start + minibatch_size]
            losses = losses_of(actor, critic, {k: v[mb_inds] for k, v in b.items()}, args)
            clipfracs.append(losses["clipfrac"].item())
            if epoch == 0 and start == 0:  # must be exactly 0: the update sees what the rollout saw
                first_ratio_dev = losses["ratio_dev"].item()

            # actor and critic share no parameter: one backward gives each its own loss's gradient
            actor_optimizer.zero_grad()
            critic_optimizer.zero_grad()
            actor_loss = losses["policy_loss"] - args.ent_coef * losses["entropy"]
            (actor_loss + args.vf_coef * losses["value_loss"]).backward()
            grad_norm = nn.utils.clip_grad_norm_(actor.parameters(), args.max_grad_norm)
            critic_grad_norm = nn.utils.clip_grad_norm_(critic.parameters(), args.max_grad_norm)
            actor_optimizer.step()
            critic_optimizer.step()

    logged = ("value_loss", "policy_loss", "entropy", "old_approx_kl", "approx_kl")
    last = {k: losses[k] for k in logged}
    last.update(grad_norm=grad_norm, critic_grad_norm=critic_grad_norm)
    stats = {f"losses/{k}": v.item() for k, v in last.items()}
    stats.update({"losses/first_ratio_dev": first_ratio_dev, "losses/clipfrac": np.mean(clipfracs)})
    return stats


# ==================================== ALGO LOGIC: evaluation ======================================
@torch.no_grad()
def evaluate(actor, envs, num_episodes: int, agent_ids, device, stop=(), generator=None) -> Optional[tuple[float, float]]:
    """Greedy evaluation, or with actions sampled from `generator`: each env plays its first
    ceil(N/E) episodes (no bias to short ones), the first N count. Returns (win rate, mean team
    return); None on a stop (Ctrl-C)."""
    per_env = math.ceil(num_episodes / envs.num_envs)
    results = [[] for _ in range(envs.num_envs)]
    ep_return = np.zeros(envs.num_envs)
    nxt = envs.reset()
    while min(len(r) for r in results) < per_env:
        if stop:  # Ctrl-C or SIGTERM (Run.stop's list)
            return None
        obs = torch.as_tensor(nxt["obs"], device=device)  # (E,A,O)
        avail = torch.as_tensor(nxt["avail"], device=device)  # (E,A,U)
        dist = policy(actor(actor_input(obs, agent_ids)), avail, actor.log_std)
        action = dist.mode() if generator is None else dist.sample(generator)  # (E,A)
        nxt = envs.step(action if torch.is_tensor(nxt["obs"]) else action.cpu().numpy())
        done = nxt["terminated"] | nxt["truncated"]  # (E,) where the envs gave it
        ep_return += on_host(nxt["reward"])
        won = on_host(nxt["won"])
        for e in np.flatnonzero(on_host(done)):
            if len(results[e]) < per_env:
                results[e].append((float(won[e]), ep_return[e]))
            ep_return[e] = 0.0
    episodes = [results[e][k] for k in range(per_env) for e in range(envs.num_envs)][:num_episodes]
    wins, returns = zip(*episodes)
    return float(np.mean(wins)), float(np.mean(returns))


def evaluation(actor, eval_envs, args: Args, agent_ids, device, stop, generator) -> Optional[tuple[float, ...]]:
    """An evaluation: --eval-episodes greedy, then with --eval-sampled as many sampled from a
    generator of their own (so training draws the same numbers) -> (win rate, return[, sampled win
    rate, sampled return]); None after a stop"""
    result = evaluate(actor, eval_envs, args.eval_episodes, agent_ids, device, stop)
    if result is not None and args.eval_sampled:
        sampled = evaluate(actor, eval_envs, args.eval_episodes, agent_ids, device, stop, generator)
        result = None if sampled is None else result + sampled
    return result


# ================================== ALGO LOGIC: training loop =====================================
def train(args: Args, ckpt: Optional[dict] = None):
    # TRY NOT TO MODIFY: seeding
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")
    is_hanabi = env_backend(args.env_id) is HanabiVecEnv
    check(not args.acting_rows_only or is_hanabi, "--acting-rows-only is for Hanabi")

    # env setup: the eval envs come first and tell the sizes
    print(f"{args.env_id}: starting the envs (JAX envs compile their first steps, up to a minute)", flush=True)
    eval_seed = args.seed + 100_000
    env_device = device if args.env_on_device else None
    env_args = (args.num_workers, args.num_stacked_frames, env_device, args.team_reward)
    eval_envs = make_env(args.env_id, min(args.eval_episodes, 32), eval_seed, *env_args)
    A = eval_envs.num_agents
    U = eval_envs.num_actions
    O = eval_envs.obs_dim
    B = args.num_envs * args.num_steps * A  # agent-steps per rollout
    too_many = f"--num-minibatches {args.num_minibatches} exceeds the {B} agent-steps of a rollout"
    check(args.num_minibatches <= B, too_many)
    agent_ids = torch.eye(A, device=device)  # (A,A) one-hot ids
    S = O + A  # IPPO: the critic's input is the local observation + agent id
    critic_state = partial(critic_input, agent_ids=agent_ids, death_masking=args.death_masking)

    net = (args.hidden_dim, args.num_layers, args.activation, args.use_feature_norm)
    actor = Actor(O + A, U, *net, args.gain, continuous=eval_envs.continuous).to(device)
    critic = Critic(S, *net).to(device)
    # MAPPO: Adam with eps 1e-5
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=args.learning_rate, eps=1e-5)
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate, eps=1e-5)
    # checkpoints, logs, Ctrl-C
    run = Run(args, ckpt, actor, critic, actor_optimizer, critic_optimizer, eval_envs)
    losses_of = ppo_losses  # --compile: compiled at its first call, CUDA graphs on a GPU
    if args.compile:
        losses_of = torch.compile(ppo_losses, mode="reduce-overhead" if device.type == "cuda" else None)
    # for the sampled evaluation (--eval-sampled) only
    eval_generator = torch.Generator(device).manual_seed(eval_seed)
    evaluate_now = partial(evaluation, actor, eval_envs, args, agent_ids, device, generator=eval_generator)
    if args.eval_only:
        return report_eval_only(args, eval_envs, evaluate_now(stop=()))

    envs = make_env(args.env_id, args.num_envs, args.seed, *env_args)
    episodes = {"return": np.zeros(args.num_envs), "length": np.zeros(args.num_envs, dtype=np.int64)}
    episodes["finished"] = []
    if args.env_on_device:  # kept where the envs give their outputs
        episodes.update({k: torch.as_tensor(episodes[k], device=device) for k in ("return", "length")})
    out = run.start(envs)  # the first reset (SMAX compiles here)
    # a stop cut the last update's evaluation: made up first, so the history has no hole
    if run.missed_evaluation():
        run.make_up_evaluation(evaluate_now(stop=run.signals))
    first_iteration = run.iteration + 1  # of this sitting: with --compile, its update compiles
    for iteration in range(first_iteration, run.num_iterations + 1):
        iteration_start = time.time()
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / run.num_iterations
            actor_optimizer.param_groups[0]["lr"] = frac * args.learning_rate
            critic_optimizer.param_groups[0]["lr"] = frac * args.critic_learning_rate

        seen, out, env_time = rollout(envs, actor, out, args.num_steps, agent_ids, device, episodes, run.signals)
        if seen is None:
            break
        run.global_step += args.num_envs * args.num_steps

        # the rollout to the device, one copy per buffer; final_* only at the n steps where an
        # episode was truncated
        truncated = seen["truncated"]
        b = {k: torch.as_tensor(v[truncated] if k.startswith("final_") else v, device=device) for k, v in seen.items()}
        del seen  # and with it the full final_* buffers (T,E,...): b holds the truncated steps' only
        nxt = {k: torch.as_tensor(out[k], device=device) for k in ("obs", "env_state", "alive")}
        final_state = critic_state(b["final_obs"], b["final_state"], b["final_alive"])  # (n,A,S)
        next_state = critic_state(nxt["obs"], nxt["env_state"], nxt["alive"])  # (E,A,S)
        batch = dict(obs=actor_input(b["obs"], agent_ids), avail=b["avail"], alive=b["alive"])
        batch["state"] = critic_state(b["obs"], b["env_state"], b["alive"])  # (T,E,A,S)
        batch.update(actions=b["actions"], logprobs=b["logprobs"])  # (T,E,A,...) each
        del b["obs"]  # from here on in the batch only, as the actor's and the critic's inputs
        if args.acting_rows_only:  # the player to move's rows only: A becomes 1 from here on
            batch = {k: to_move(v, b["alive"]) for k, v in batch.items()}
            final_state = to_move(final_state, b["final_alive"])
            next_state = to_move(next_state, nxt["alive"])
        with torch.no_grad():
            # values of the whole rollout in one batched forward (the critic did not change during
            # it), then GAE
            values = critic.value(batch["state"])  # (T,E,A) V(s_t) in return units
            # (T,E,A), used only where an episode was truncated
            final_values = torch.zeros_like(values)
            final_values[b["truncated"]] = critic.value(final_state)
            next_value = critic.value(next_state)  # (E,A)
            advantages, returns = compute_gae(
                b["reward"], values, next_value, b["terminated"], b["truncated"], final_values,
                gamma=args.gamma, gae_lambda=args.gae_lambda,
            )  # fmt: skip
            # MAPPO Suggestion 1: normalise the value targets, the output layer rescaled
            if args.use_popart:
                critic.popart.update(returns)
            returns_n = critic.popart.normalize(returns.unsqueeze(-1)).squeeze(-1)  # (T,E,A)
            # the old values under the new statistics
            values_n = critic.popart.normalize(values.unsqueeze(-1)).squeeze(-1)
        batch.update(advantages=advantages, returns=returns_n, values=values_n)
        # (T,E,A,...) -> (B,...), B = T*E*A
        batch = {k: v.reshape(-1, *v.shape[3:]) for k, v in batch.items()}

        update_start = time.time()
        stats = ppo_update(actor, critic, actor_optimizer, critic_optimizer, batch, args, losses_of)
        stats.update({"time/update": time.time() - update_start, "time/env": env_time})
        if args.compile and iteration == first_iteration:
            print(f"--compile: the first update took {stats['time/update']:.1f} s, compiling included", flush=True)
        y_true = returns.cpu().numpy()
        y_pred = values.cpu().numpy()
        var_y = np.var(y_true)
        stats["losses/explained_variance"] = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        seconds = time.time() - iteration_start  # the time to train, evaluation not included

        result = None
        if args.eval_interval and (iteration % args.eval_interval == 0 or iteration == run.num_iterations):
            eval_start = time.time()
            result = evaluate_now(stop=run.signals)
            stats["time/eval"] = time.time() - eval_start
        run.end_iteration(iteration, seconds, stats, episodes, result)
    run.finish(envs)


# ========================================= ENV BACKENDS ===========================================
class JaxVecEnv:
    """A JaxMARL env: all envs in one jitted, vmapped call, one host copy per step.
    Subclasses jit reset_one(key) and step_one(key, state, actions (A,)) with batched(), once per
    env id and number of envs in a process: an env made again (an async client's splits, the eval
    env at the training size) is not traced and compiled again."""

    # (env id, function name, num_envs) -> jitted call; the id fixes what the functions close over
    jitted = {}

    def batched(self, env_id: str, one, num_envs: int):
        """All envs in one call: the key split once, a subkey per env"""
        import jax

        def call(key, *inputs):
            key, sub = jax.random.split(key)
            return key, *jax.vmap(one)(jax.random.split(sub, num_envs), *inputs)

        return JaxVecEnv.jitted.setdefault((env_id, one.__name__, num_envs), jax.jit(call))

    @staticmethod
    def auto_reset(reset_one, step_env):
        """step_one(key, state, actions) from step_env(key, state, actions), which returns (state,
        what it observed, outcome, done): where done, the env starts its next episode and gives its
        first observation; final_* keep what the step saw"""
        import jax

        def step_one(key, st, actions):
            step_key, reset_key = jax.random.split(key)
            st, final, outcome, done = step_env(step_key, st, actions)
            reset_st, reset_out = reset_one(reset_key)
            st = jax.tree.map(lambda r, s: jax.lax.select(done, r, s), reset_st, st)
            out = jax.tree.map(lambda r, s: jax.lax.select(done, r, s), reset_out, final)
            finals = dict(final_obs=final["obs"], final_state=final["env_state"])
            finals["final_alive"] = final["alive"]
            return st, dict(out, **outcome, **finals)

        return step_one

    def seed_and_place(self, seed: int, device):
        """The env key; with a device (--env-on-device) JAX must run on the same kind of device as
        torch (DLPack)"""
        import jax

        self._key = jax.random.PRNGKey(seed)
        self.device = device
        jax_on = jax.default_backend()
        same_kind = device is None or (jax_on == "cpu") == (torch.device(device).type == "cpu")
        flag = "pass --env-on-device on the command line (a resumed run too)"
        check(same_kind, f"--env-on-device: JAX runs on {jax_on}, torch on {device}: {flag}")

    def outputs(self, out: dict) -> dict:
        if self.device is None:
            return {k: np.array(v) for k, v in out.items()}  # writable host copies
        return {k: torch.from_dlpack(v) for k, v in out.items()}  # on the device, no copy

    def reset(self) -> dict:
        self._key, self._state, out = self._reset(self._key)
        return self.outputs(out)

    def step(self, actions) -> dict:  # (E,A) numpy, or torch on the device
        import jax

        if self.device is None:
            actions = actions.astype(np.int32)
        else:
            actions = jax.dlpack.from_dlpack(actions.to(torch.int32))
        self._key, self._state, out = self._step(self._key, self._state, actions)
        return self.outputs(out)

    def close(self):
        pass


class SMAXVecEnv(JaxVecEnv):
    """JaxMARL's SMAX against its heuristic enemy."""

    has_wins = True
    continuous = False

    def __init__(self, env_id: str, num_envs: int, seed: int, num_workers: int = 0, device=None):
        import jax.numpy as jnp

        with quiet():
            from jaxmarl.environments.smax import HeuristicEnemySMAX, map_name_to_scenario
        # the map's scenario, and the env kwargs of JaxMARL's SMAX baselines
        scenario = map_name_to_scenario(env_id)
        kwargs = dict(see_enemy_actions=True, walls_cause_death=True, attack_mode="closest")
        env = HeuristicEnemySMAX(scenario=scenario, **kwargs)
        A = env.num_allies
        self.num_envs = num_envs
        self.num_agents = A
        self.obs_dim = env.obs_size
        self.state_dim = env.state_size
        self.num_actions = env.num_ally_actions

        def observe(st):
            obs = env.get_obs(st)
            avail = env.get_avail_actions(st)
            return dict(
                obs=jnp.stack([obs[a] for a in env.agents]),  # (A,O)
                env_state=env.get_world_state(st),  # (S_env,)
                avail=jnp.stack([avail[a] for a in env.agents]).astype(bool),  # (A,U)
                alive=st.state.unit_alive[:A],  # (A,)
            )

        def reset_one(key):
            _, st = env.reset(key)
            return st, observe(st)

        def step_env(key, st, actions):
            by_agent = {a: actions[i] for i, a in enumerate(env.agents)}
            _, st, rewards, dones, _ = env.step_env(key, st, by_agent)
            allies_dead = ~st.state.unit_alive[:A].any()
            enemies_dead = ~st.state.unit_alive[A:].any()
            terminated = allies_dead | enemies_dead
            done = dones["__all__"]
            truncated = done & ~terminated
            reward = rewards[env.agents[0]]  # one team reward, every agent's
            outcome = dict(reward=reward, terminated=terminated, truncated=truncated)
            return st, observe(st), dict(outcome, won=enemies_dead & ~allies_dead), done

        step_one = self.auto_reset(reset_one, step_env)
        self._reset = self.batched(env_id, reset_one, num_envs)
        self._step = self.batched(env_id, step_one, num_envs)
        self.seed_and_place(seed, device)


class HanabiVecEnv(JaxVecEnv):
    """JaxMARL's Hanabi, 2 players (hanabi) or 3 to 5 (hanabi_3p, ...).
    Turn-based: the others' one legal move is the no-op, so `alive` marks the player to move (the
    policy loss leaves the others' no-ops out; the preset turns death masking off).
    env_state: every hand and whose turn it is, so with the agent's own observation the critic has
    the MAPPO code's agent-specific state (own hand + observation + turn).
    Reward: the score's change, minus the score when the last life is lost, so an episode's return
    is its score (0 to 25; 0 when the lives ran out). No time limit."""

    has_wins = False
    continuous = False

    def __init__(self, env_id: str, num_envs: int, seed: int, num_workers: int = 0, device=None):
        import jax
        import jax.numpy as jnp

        with quiet():
            import jaxmarl
        # seats in agent order: no shuffled seating
        env = jaxmarl.make("hanabi", num_agents=HANABI_PLAYERS[env_id])
        agents = env.agents

        def pack(obs, st):
            legal = env.get_legal_moves(st)
            hands = st.player_hands.reshape(-1)  # (A*H*25,) one-hot cards
            return dict(
                obs=jnp.stack([obs[a] for a in agents]),  # (A,O)
                env_state=jnp.concatenate([hands, st.cur_player_idx]),  # (A*H*25 + A,)
                avail=jnp.stack([legal[a] for a in agents]).astype(bool),  # (A,U)
                alive=st.cur_player_idx.astype(bool),  # (A,) the player to move
            )

        def reset_one(key):
            obs, st = env.reset(key)
            return st, pack(obs, st)

        def step_env(key, st, actions):
            by_agent = {a: actions[i] for i, a in enumerate(agents)}
            obs, st, rewards, dones, _ = env.step_env(key, st, by_agent)
            done = dones["__all__"]
            never = jnp.zeros_like(done)  # no time limit, no win
            outcome = dict(reward=rewards["__all__"], terminated=done, truncated=never, won=never)
            return st, pack(obs, st), outcome, done

        step_one = self.auto_reset(reset_one, step_env)
        self._reset = self.batched(env_id, reset_one, num_envs)
        self._step = self.batched(env_id, step_one, num_envs)
        self.seed_and_place(seed, device)
        shape = jax.eval_shape(reset_one, self._key)[1]  # the arrays' shapes, nothing computed
        self.num_envs = num_envs
        self.num_agents = len(agents)
        self.num_actions = shape["avail"].shape[-1]
        self.obs_dim = shape["obs"].shape[-1]
        self.state_dim = shape["env_state"].shape[-1]


# Generic ids whose envs end an episode at a step limit with done, not truncated: here a step at
# that limit is a truncation (it bootstraps). The limits are EPyMARL's time_limit of each.
GENERIC_TIME_LIMITS = {"gym/lbforaging:": 50, "gym/rware:": 500}


class GenericVecEnv:
    """Any cooperative multi-agent env by its id, num_envs copies stepped in a loop here:
      pz/<module>:<callable>  a PettingZoo ParallelEnv, made by calling <callable>
                              (pz/mpe2.simple_spread_v3:parallel_env)
      gym/<id>                a Gymnasium env of EPyMARL's convention: Tuple observation and
                              action spaces, a list of rewards (or one team reward), done and
                              truncated as one flag or a list; gym/<module>:<id> imports <module>
                              first, which registers <id> (gym/lbforaging:Foraging-8x8-2p-2f-v3)
    Observations: Box, or PettingZoo's {"observation": Box, "action_mask": ...}. Actions:
    Discrete for every agent, or Box for every agent. Agents are padded to the largest
    observation and action sizes (padded actions unavailable). Action masks: that
    "action_mask", else an info key "action_mask". A PettingZoo agent is alive while the env
    returns its observation. Env state: the env's state() where it has one, else all
    observations. Team reward: the sum or mean (--team-reward) of the agents' rewards.
    Terminated and truncated as the env says them, but a step at a time limit (the gym spec's,
    or GENERIC_TIME_LIMITS') is a truncation."""

    has_wins = False
    use_state = True  # the env's state() where it has one (MPE: not)

    def make_one(self, env_id: str):
        return make_generic(env_id)

    def __init__(self, env_id, num_envs, seed, num_workers=0, device=None, team_reward="sum"):
        from gymnasium.spaces import Box, Dict, Discrete

        self.kind = "gym" if env_id.startswith("gym/") else "pz"  # MPE's ids: PettingZoo's envs
        self.envs = [self.make_one(env_id) for _ in range(num_envs)]
        self.seeds = [seed + i for i in range(num_envs)]
        self.team_reward = team_reward
        env = self.envs[0]
        if self.kind == "pz":
            self.agents = list(env.possible_agents)
            obs_spaces = [env.observation_space(a) for a in self.agents]
            act_spaces = [env.action_space(a) for a in self.agents]
        else:
            obs_spaces = list(env.observation_space.spaces)
            act_spaces = list(env.action_space.spaces)
            self.agents = list(range(len(act_spaces)))

        # PettingZoo's action-mask convention: a dict of the observation and the mask
        masked = [isinstance(sp, Dict) and "action_mask" in sp.spaces for sp in obs_spaces]
        self.mask_in_obs = masked
        obs_spaces = [sp["observation"] if m else sp for sp, m in zip(obs_spaces, masked)]
        for sp in obs_spaces:
            check(isinstance(sp, Box), f"{env_id}: an observation space {sp} is not a Box")
        self.continuous = all(isinstance(sp, Box) for sp in act_spaces)
        discrete = all(isinstance(sp, Discrete) for sp in act_spaces)
        check(self.continuous or discrete, f"{env_id}: actions must be all Discrete or all Box")
        self.obs_dims = [int(np.prod(sp.shape)) for sp in obs_spaces]
        sizes = [int(np.prod(sp.shape)) if self.continuous else int(sp.n) for sp in act_spaces]
        self.act_dims = np.array(sizes)
        if self.continuous:
            check(len(set(sizes)) == 1, f"{env_id}: Box actions of different sizes are unsupported")
            self.low = np.stack([sp.low.reshape(-1) for sp in act_spaces])  # (A,U)
            self.high = np.stack([sp.high.reshape(-1) for sp in act_spaces])  # (A,U)

        A = len(self.agents)
        U = max(sizes)
        self.num_envs = num_envs
        self.num_agents = A
        self.obs_dim = max(self.obs_dims)
        self.num_actions = U
        self.avail = np.arange(U)[None] < self.act_dims[:, None]  # (A,U): padding unavailable
        # the critic's env state: all observations, unless the env has a state() of its own
        # (PettingZoo's ParallelEnv always has one, which raises where the env has none)
        self.state_dim = A * self.obs_dim
        self.has_state = False
        if self.use_state and callable(getattr(env.unwrapped, "state", None)):
            env.reset(seed=seed)
            with contextlib.suppress(NotImplementedError):
                self.state_dim = int(np.size(env.unwrapped.state()))
                self.has_state = True

        limits = [n for prefix, n in GENERIC_TIME_LIMITS.items() if env_id.startswith(prefix)]
        self.time_limit = limits[0] if limits else None
        if self.time_limit is None and self.kind == "gym":
            self.time_limit = env.spec.max_episode_steps  # None where its registration gives none
        self.steps = np.zeros(num_envs, dtype=np.int64)  # steps into each env's episode

    def batch(self) -> dict:
        """Empty outputs of all envs: obs (E,A,O), env_state (E,S_env), avail (E,A,U),
        alive (E,A)"""
        E = self.num_envs
        A = self.num_agents
        out = dict(obs=np.zeros((E, A, self.obs_dim), np.float32))
        out["env_state"] = np.zeros((E, self.state_dim), np.float32)
        out["avail"] = np.broadcast_to(self.avail, (E, *self.avail.shape)).copy()
        out["alive"] = np.ones((E, A), bool)
        return out

    def observe(self, out: dict, e: int, env, obs, infos, gone=()):
        """Writes env e's observations and infos into row e of out (batch()'s arrays). gone: the
        PettingZoo agents that this step ended (dead from here on, though the env gave their
        last observation). Without the env's state(), finish() writes env_state."""
        for j, agent in enumerate(self.agents):
            if self.kind == "pz" and (agent not in obs or agent in gone):
                out["alive"][e, j] = False  # dead: zeros
                continue
            agent_obs = obs[agent]
            info = infos.get(agent, {}) if self.kind == "pz" else infos
            if self.mask_in_obs[j]:
                mask = agent_obs["action_mask"]
                agent_obs = agent_obs["observation"]
            else:
                mask = info.get("action_mask")
                # gym: one info for all agents, a mask per agent
                mask = mask[j] if mask is not None and self.kind == "gym" else mask
            if mask is not None:
                out["avail"][e, j, : self.act_dims[j]] = mask
            out["obs"][e, j, : self.obs_dims[j]] = np.ravel(agent_obs)
        if self.has_state:
            out["env_state"][e] = np.ravel(env.unwrapped.state())

    def finish(self, out: dict) -> dict:
        """out with its env_state where the env has no state(): every observation (E,A*O)"""
        if not self.has_state:
            out["env_state"] = out["obs"].reshape(self.num_envs, -1)
        return out

    def step_one(self, e: int, actions) -> tuple:
        """Env e steps with actions (A,) or (A,U) -> what it gave, then its team reward,
        terminated and truncated"""
        env = self.envs[e]
        if self.kind == "pz":
            live = list(env.agents)
            sent = {a: act for a, act in zip(self.agents, actions) if a in live}
            obs, rewards, terms, truncs, infos = env.step(sent)
            rewards = [rewards.get(a, 0.0) for a in live]
            dead = [a for a in live if terms.get(a, False)]
            timed_out = [a for a in live if truncs.get(a, False) and a not in dead]
            ended = not env.agents or len(dead) + len(timed_out) == len(live)
            terminated = ended and not timed_out
            truncated = ended and bool(timed_out)
            # dead from here on; where the episode is truncated its agents stay alive in its
            # final observation (the value bootstraps from it)
            gone = dead if ended else dead + timed_out
        else:
            obs, rewards, done, truncs, infos = env.step(tuple(actions))
            terminated = bool(np.all(done))
            truncated = bool(np.all(truncs))
            rewards = np.ravel(rewards).tolist()  # a list per agent, or one team reward
            gone = ()
        self.steps[e] += 1
        if self.time_limit is not None and self.steps[e] >= self.time_limit:
            terminated = False
            truncated = True
        reward = sum(rewards) if self.team_reward == "sum" else sum(rewards) / len(rewards)
        return (obs, infos, gone), reward, terminated, truncated

    def reset(self) -> dict:
        seeds = self.seeds
        self.seeds = [None] * self.num_envs  # the seeds are for the first reset only
        self.steps[:] = 0
        out = self.batch()
        for e, (env, seed) in enumerate(zip(self.envs, seeds)):
            self.observe(out, e, env, *env.reset(seed=seed))
        return self.finish(out)

    def step(self, actions: np.ndarray) -> dict:
        """actions (E,A), continuous (E,A,U): clipped to the bounds here"""
        actions = np.clip(actions, self.low, self.high) if self.continuous else actions.tolist()
        E = self.num_envs
        final = self.batch()
        outcome = dict(reward=np.zeros(E, np.float32), terminated=np.zeros(E, bool))
        outcome.update(truncated=np.zeros(E, bool), won=np.zeros(E, bool))
        for e, env_actions in enumerate(actions):
            given, outcome["reward"][e], terminated, truncated = self.step_one(e, env_actions)
            self.observe(final, e, self.envs[e], *given)
            outcome["terminated"][e] = terminated
            outcome["truncated"][e] = truncated and not terminated
        final = self.finish(final)
        # where an episode ended, its env starts the next one: out holds that one's first
        out = {key: value.copy() for key, value in final.items()}
        for e in np.flatnonzero(outcome["terminated"] | outcome["truncated"]):
            self.steps[e] = 0
            out["obs"][e] = 0.0
            out["avail"][e] = self.avail
            out["alive"][e] = True
            self.observe(out, e, self.envs[e], *self.envs[e].reset())
        finals = dict(final_obs=final["obs"], final_state=final["env_state"])
        finals["final_alive"] = final["alive"]
        return dict(self.finish(out), **outcome, **finals)

    def close(self):
        for env in self.envs:
            env.close()


def make_generic(env_id: str):
    """One env of a generic id; an id that does not import or make exits 2 with one line"""
    import gymnasium as gym

    kind, _, name = env_id.partition("/")
    usage = f"{env_id!r}: a generic id is pz/<module>:<callable> (PettingZoo) or gym/<id>"
    check(kind in ("pz", "gym") and bool(name) and (kind == "gym" or ":" in name), usage)
    try:
        if kind == "pz":
            module, attr = name.split(":", 1)
            env = getattr(importlib.import_module(module), attr)()
        else:
            env = gym.make(name, disable_env_checker=True)
    except (ImportError, AttributeError, gym.error.Error) as e:
        check(False, f"{env_id}: cannot make it ({type(e).__name__}: {e})")
    if kind == "pz":
        from pettingzoo import AECEnv

        check(not isinstance(env, AECEnv), f"{env_id}: a PettingZoo AEC env: give its parallel_env")
        parallel = hasattr(env, "possible_agents") and hasattr(env, "action_space")
        check(parallel, f"{env_id}: not a PettingZoo ParallelEnv")
    else:
        spaces = (env.observation_space, env.action_space)
        multi_agent = all(isinstance(sp, gym.spaces.Tuple) for sp in spaces)
        convention = "EPyMARL's convention (Tuple observation and action spaces)"
        check(multi_agent, f"{env_id}: not a multi-agent env of {convention}")
    return env


class MPEVecEnv(GenericVecEnv):
    """PettingZoo MPE (mpe2) on the generic backend: discrete actions, or continuous ones
    (<task>_continuous: forces in [0, 1], where the agents' action sizes agree). Agents padded to
    the largest obs and action sizes (padded actions unavailable); team reward: the agents'
    mean; env state: all observations, padded (not mpe2's state(), which is unpadded)."""

    use_state = False

    def make_one(self, env_id: str):
        task = env_id.removesuffix("_continuous")
        module = importlib.import_module(f"mpe2.{task}")
        return module.parallel_env(max_cycles=25, continuous_actions=task != env_id)

    def __init__(self, env_id: str, num_envs: int, seed: int, num_workers: int = 0, device=None):
        super().__init__(env_id, num_envs, seed, team_reward="mean")


class VMASVecEnv:
    """VMAS (vmas/<scenario>): PyTorch-vectorised 2D robotics, continuous actions, all envs in
    one call, on the CPU or with --env-on-device on the training device (outputs stay torch
    tensors there). Team reward: the agents' mean. Env state: all observations (zero-padded to the
    largest). The time limit of the scenario's preset is a truncation. Finished envs are reset one
    by one (all at once at a common time limit).
    VMAS keeps one random state for all its envs in a process; each adapter swaps its own in, so
    that evaluation envs do not change the training envs' draws (on a GPU, VMAS also draws from
    torch's CUDA generator, which the policy shares)."""

    has_wins = False
    continuous = True

    def __init__(self, env_id: str, num_envs: int, seed: int, num_workers: int = 0, device=None):
        import vmas

        name = env_id.removeprefix("vmas/")
        self.device = device  # None: VMAS on the CPU, outputs as numpy
        kwargs = dict(seed=seed, terminated_truncated=True, **VMAS_SCENARIOS[name])
        self.env = vmas.make_env(name, num_envs, device or "cpu", **kwargs)
        # VMAS's random state is a class attribute, one list for all its envs; this adapter's own
        # (torch, numpy, random) states start as make_env seeded them
        self.shared_state = self.env.vmas_random_state
        self.random_state = list(self.shared_state)
        spaces = self.env.action_space.spaces  # per agent: Box(low, high, (U,))
        same_size = len({sp.shape for sp in spaces}) == 1
        check(same_size, f"{env_id}: agents with different action sizes are not supported")
        self.obs_dims = [sp.shape[0] for sp in self.env.observation_space.spaces]
        E = num_envs
        A = self.env.n_agents
        U = spaces[0].shape[0]
        self.num_envs = E
        self.num_agents = A
        self.obs_dim = max(self.obs_dims)
        self.state_dim = A * self.obs_dim
        self.num_actions = U
        # the action bounds (A,U), where VMAS runs
        on = self.env.device
        self.low = torch.tensor(np.stack([sp.low for sp in spaces]), device=on)
        self.high = torch.tensor(np.stack([sp.high for sp in spaces]), device=on)
        self.avail = torch.ones((E, A, U), dtype=torch.bool, device=on)  # every action
        self.alive = torch.ones((E, A), dtype=torch.bool, device=on)  # every agent, always

    def outputs(self, obs_list: list, **outcome) -> dict:
        """One (E,O_a) tensor per agent -> the adapter's arrays"""
        E = self.num_envs
        obs = torch.zeros((E, self.num_agents, self.obs_dim), device=obs_list[0].device)  # (E,A,O)
        for j, agent_obs in enumerate(obs_list):
            obs[:, j, : self.obs_dims[j]] = agent_obs  # zero-padded
        out = dict(obs=obs, env_state=obs.reshape(E, -1), avail=self.avail, alive=self.alive)
        out.update(outcome)
        return out if self.device is not None else {k: v.cpu().numpy() for k, v in out.items()}

    def own_stream(self, call, *args):
        """A VMAS call, drawing from this adapter's random state"""
        self.shared_state[:] = self.random_state
        result = call(*args)
        self.random_state = list(self.shared_state)
        return result

    def reset(self) -> dict:
        return self.outputs(self.own_stream(self.env.reset))

    def step(self, actions) -> dict:
        """actions (E,A,U): numpy, or torch on the device; clipped to the bounds here"""
        actions = torch.as_tensor(actions, device=self.env.device)
        sent = actions.clamp(self.low, self.high)
        per_agent = list(sent.unbind(1))  # (E,U) each
        obs, rewards, terminated, truncated, _ = self.own_stream(self.env.step, per_agent)
        truncated = truncated & ~terminated
        final = self.outputs(obs)
        done = (terminated | truncated).nonzero().flatten().tolist()
        if len(done) == self.num_envs:
            obs = self.own_stream(self.env.reset)
        for e in done if len(done) < self.num_envs else ():
            # every env's observations, env e's after its reset
            obs = self.own_stream(self.env.reset_at, e)
        reward = torch.stack(rewards).mean(0)  # (E,) the agents' mean
        outcome = dict(reward=reward, terminated=terminated, truncated=truncated)
        out = self.outputs(obs, **outcome, won=torch.zeros_like(terminated))
        finals = dict(final_obs=final["obs"], final_state=final["env_state"])
        return dict(out, **finals, final_alive=final["alive"])

    def close(self):
        pass


# SMAC's episode limits (smac_maps.py); SMAClite has none of its own, so the time limit is a
# truncation
SMAC_EPISODE_LIMITS = {
    **{"3m": 60, "8m": 120, "25m": 150, "5m_vs_6m": 70, "8m_vs_9m": 120, "10m_vs_11m": 150},
    **{"27m_vs_30m": 180, "MMM": 150, "MMM2": 180, "2s3z": 120, "3s5z": 150, "3s5z_vs_3s6z": 170},
    **{"3s_vs_5z": 250, "2c_vs_64zg": 400, "corridor": 400, "bane_vs_bane": 200, "2s_vs_1sc": 300},
}


def smaclite_worker(pipe, map_name: str, seeds: list[int]):
    """A child process stepping a slice of SMAClite envs: actions (k,A), or None to reset -> the
    adapter's arrays (k,...)"""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it closes us
    import gymnasium as gym
    import smaclite  # noqa: F401  (registers smaclite/<map>-v0)

    limit = SMAC_EPISODE_LIMITS.get(map_name, 200)
    with quiet():
        envs = [gym.make(f"smaclite/{map_name}-v0", max_episode_steps=limit) for _ in seeds]

    def observe(env, obs) -> dict:
        u = env.unwrapped
        alive = np.isin(np.arange(u.n_agents), list(u.agents))  # (A,) the keys of u.agents live
        avail = np.stack(u.get_avail_actions()) > 0
        return dict(obs=np.stack(obs), env_state=u.get_state(), avail=avail, alive=alive)

    def step(env, actions) -> dict:
        obs, reward, terminated, truncated, info = env.step(actions)
        final = observe(env, obs)
        out = observe(env, env.reset()[0]) if terminated or truncated else final
        out.update(reward=np.float32(reward), terminated=terminated)
        out.update(truncated=truncated and not terminated, won=info.get("battle_won", False))
        out.update(final_obs=final["obs"], final_state=final["env_state"])
        return dict(out, final_alive=final["alive"])

    with contextlib.suppress(EOFError, BrokenPipeError):  # the parent closed its end, or is gone
        while True:
            actions = pipe.recv()  # None: reset
            if actions is None:
                rows = [observe(env, env.reset(seed=s)[0]) for env, s in zip(envs, seeds)]
            else:
                rows = [step(env, env_actions) for env, env_actions in zip(envs, actions.tolist())]
            pipe.send({k: np.stack([row[k] for row in rows]) for k in rows[0]})


class SMACliteVecEnv:
    """SMAClite (pure Python, slow): the envs split over worker processes that step their slices
    in parallel."""

    has_wins = True
    continuous = False

    def __init__(self, env_id: str, num_envs: int, seed: int, num_workers: int = 0, device=None):
        import gymnasium as gym

        map_name = env_id.removeprefix("smaclite/")
        with quiet():
            u = gym.make(f"smaclite/{map_name}-v0").unwrapped
        self.num_envs = num_envs
        self.num_agents = u.n_agents
        self.obs_dim = u.obs_size
        self.state_dim = u.state_size
        self.num_actions = u.n_actions
        workers = min(num_envs, num_workers or os.cpu_count() or 1)
        self.slices = np.array_split(np.arange(num_envs), workers)
        ctx = mp.get_context("spawn")  # no fork of a process that holds torch threads
        self.pipes = []
        self.procs = []
        for idx in self.slices:
            parent, child = ctx.Pipe()
            seeds = [seed + int(i) for i in idx]
            proc = ctx.Process(target=smaclite_worker, args=(child, map_name, seeds), daemon=True)
            proc.start()
            child.close()
            self.pipes.append(parent)
            self.procs.append(proc)

    def _call(self, actions: Optional[np.ndarray]) -> dict:
        for pipe, idx in zip(self.pipes, self.slices):
            pipe.send(None if actions is None else actions[idx])
        parts = [pipe.recv() for pipe in self.pipes]
        return {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}

    def reset(self) -> dict:
        return self._call(None)

    def step(self, actions: np.ndarray) -> dict:
        return self._call(actions)

    def close(self):
        for pipe, proc in zip(self.pipes, self.procs):
            pipe.close()  # the worker's recv() ends with EOFError
            proc.join(timeout=5)
            proc.kill()


def smax_maps() -> list[str]:
    with quiet():
        from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO
    return sorted(MAP_NAME_TO_SCENARIO)


def smaclite_maps() -> list[str]:
    """smaclite/<map> for each map SMAClite registers; none where it is not installed"""
    try:
        import gymnasium as gym
        import smaclite  # noqa: F401  (registers smaclite/<map>-v0)
    except ImportError:
        return []
    maps = [k for k in gym.registry if k.startswith("smaclite/") and "custom" not in k]
    return sorted(k.removesuffix("-v0") for k in maps)


# The envs known by name: family -> (backend, its ids). SMAX and SMAClite import to list their
# maps, so they come last; pz/ and gym/ ids go to the generic backend.
MPE_CONTINUOUS = ["simple_spread_v3_continuous", "simple_reference_v3_continuous"]
ENV_FAMILIES = {
    "MPE": (MPEVecEnv, lambda: [*MPE_TASK_PRESETS, *MPE_CONTINUOUS]),
    "Hanabi": (HanabiVecEnv, lambda: list(HANABI_PLAYERS)),
    "VMAS": (VMASVecEnv, lambda: [f"vmas/{name}" for name in VMAS_SCENARIOS]),
    "SMAX": (SMAXVecEnv, smax_maps),
    "SMAClite": (SMACliteVecEnv, smaclite_maps),
}


def env_backend(env_id: str):
    """The backend of env_id; exits 2 with every valid id when there is none."""
    if env_id.startswith(("pz/", "gym/")):
        return GenericVecEnv
    for backend, ids in ENV_FAMILIES.values():
        if env_id in ids():
            return backend
    install = "README.md#environments has its install line"
    check(not env_id.startswith("smaclite/"), f"SMAClite is not installed: {install}")
    families = ENV_FAMILIES.items()
    valid = "".join(f"\n  {name}: {', '.join(ids()) or 'not installed'}" for name, (_, ids) in families)
    generic = "pz/<module>:<callable> (PettingZoo), gym/<id> (Gymnasium, EPyMARL's convention)"
    check(False, f"unknown --env-id {env_id!r}. Valid ids:{valid}\n  any other env: {generic}")


def env_presets(env_id: str, paper_preset: bool) -> dict:
    """The settings env_id brings: the paper's for its family and map (MAPPO Tables 5, 7, 11, 12,
    13), else ours"""
    backend = env_backend(env_id)  # exits 2 on an unknown id
    smac_map = SMAC_MAP_PRESETS.get(env_id.removeprefix("smaclite/"), {})
    if backend is MPEVecEnv:
        return MPE_PRESET | MPE_TASK_PRESETS[env_id.removesuffix("_continuous")]
    if backend is HanabiVecEnv:
        return HANABI_PAPER_PRESET if paper_preset else HANABI_PRESET
    if backend is VMASVecEnv:
        return VMAS_PRESET
    if backend is SMACliteVecEnv:
        return smac_map | {"eval_interval": 5}  # ours: its evaluations are slow
    return smac_map if backend is SMAXVecEnv else {}


def make_env(env_id, num_envs, seed, num_workers=0, num_stacked_frames=1, device=None, team_reward="sum"):
    """The envs of env_id; with a device (--env-on-device) they step there and give torch tensors
    (SMAX, Hanabi, VMAS)"""
    backend = env_backend(env_id)
    if device is not None:
        on_device = backend in (SMAXVecEnv, HanabiVecEnv, VMASVecEnv)
        check(on_device, f"--env-on-device: {env_id} steps on the host only")
        check(num_stacked_frames == 1, "--env-on-device: stacked frames (--num-stacked-frames) are host-only")
    # the generic backend's envs give a reward per agent; the others have one team reward
    options = dict(team_reward=team_reward) if backend is GenericVecEnv else {}
    envs = backend(env_id, num_envs, seed, num_workers, device, **options)
    return FrameStack(envs, num_stacked_frames) if num_stacked_frames > 1 else envs


# =========================================== PLUMBING =============================================
# The paper's settings per env: Args' defaults are its SMAC settings; MPE (Tables 5, 11) and some
# maps differ
MPE_PRESET = dict(num_envs=128, num_steps=25, learning_rate=7e-4, critic_learning_rate=7e-4)
# MAPPO Table 12: per-map epochs, mini-batches, head gain and stacked frames (others: 15, 1, 0.01, 1)
SMAC_MAP_PRESETS = {
    **{m: dict(update_epochs=10) for m in ("25m", "5m_vs_6m", "10m_vs_11m")},
    **{m: dict(update_epochs=5) for m in ("2c_vs_64zg", "3s5z", "3s5z_vs_3s6z", "27m_vs_30m")},
    **{m: dict(update_epochs=5) for m in ("6h_vs_8z", "corridor")},
    "MMM2": dict(update_epochs=5, num_minibatches=2, gain=1.0),
    # the paper's MLP maps: 4 stacked frames
    **{m: dict(num_stacked_frames=4) for m in ("3s_vs_4z", "3s_vs_5z")},
}
MPE_TASK_PRESETS = {  # MAPPO Table 11
    "simple_spread_v3": dict(update_epochs=10, activation="tanh"),
    "simple_reference_v3": dict(update_epochs=15, activation="relu"),
    "simple_speaker_listener_v4": dict(update_epochs=15, activation="tanh"),
}
# scenario -> its make_env kwargs: BenchMARL's VMAS task configs (benchmarl/conf/task/vmas)
VMAS_SCENARIOS = {
    "navigation": dict(max_steps=100, n_agents=3, collisions=True, agents_with_same_goal=1)
    | dict(split_goals=False, observe_all_goals=False, shared_rew=False)
    | dict(lidar_range=0.35, agent_radius=0.1),
    "balance": dict(max_steps=100, n_agents=4, random_package_pos_on_line=True, package_mass=5),
    "transport": dict(max_steps=100, n_agents=4, n_packages=1, package_mass=50)
    | dict(package_width=0.15, package_length=0.15),
    "sampling": dict(max_steps=100, n_agents=3, shared_rew=False, n_gaussians=3)
    | dict(lidar_range=0.2, cov=0.05, collisions=True, spawn_same_pos=False),
}
# ours, as MPE's
VMAS_PRESET = dict(MPE_PRESET, num_envs=60, num_steps=100, activation="tanh", update_epochs=10)
HANABI_PLAYERS = {"hanabi": 2, "hanabi_3p": 3, "hanabi_4p": 4, "hanabi_5p": 5}
# MAPPO Tables 7, 13 (`alive`: the player to move)
HANABI_PAPER_PRESET = dict(num_envs=1000, num_steps=100, hidden_dim=512, learning_rate=7e-4)
HANABI_PAPER_PRESET.update(critic_learning_rate=1e-3, update_epochs=15, ent_coef=0.015, death_masking=False)
# the MAPPO code stores the acting player's steps only (GAE over turns: ours)
HANABI_PAPER_PRESET["acting_rows_only"] = True
# ours, for 2 CPU cores: 1/8 the envs, 1/4 the width
HANABI_PRESET = dict(HANABI_PAPER_PRESET, num_envs=128, hidden_dim=128)


def check(condition: bool, message: str):
    """Bad input: one message on stderr and exit status 2, no traceback."""
    if not condition:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


@contextlib.contextmanager
def quiet():
    """Silences stdout down to file descriptor 1: importing jaxmarl prints about optional
    submodules (and swaps sys.stdout and sys.stderr: both are put back, or later error messages
    would miss a caller's capture), SMAClite about its RVO2 port."""
    sys.stdout.flush()
    saved_fd = os.dup(1)
    saved_stdout, saved_stderr = sys.stdout, sys.stderr
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved_stdout, saved_stderr
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def parse_args(argv: Optional[list[str]] = None) -> tuple[Args, Optional[dict]]:
    """Defaults: the checkpoint's args with --resume / --eval-only, else the paper's preset for
    --env-id. Every argument check is here: bad input exits 2 with one message."""
    pre = argparse.ArgumentParser(add_help=False)
    for name in ("env-id", "resume", "eval-only"):
        pre.add_argument(f"--{name}", f"--{name.replace('-', '_')}")
    pre.add_argument("--paper-preset", "--paper_preset", action="store_true")
    known, _ = pre.parse_known_args(argv)
    path = known.resume or known.eval_only
    ckpt = load_checkpoint(path) if path else None
    if ckpt is not None:
        init = [f.name for f in fields(Args) if f.init]
        defaults = Args(**{k: v for k, v in ckpt["args"].items() if k in init})
        env_id = known.env_id or defaults.env_id
        defaults = replace(defaults, resume=None, eval_only=None, env_id=env_id)
    else:
        env_id = known.env_id or Args.env_id
        presets = env_presets(env_id, known.paper_preset)  # exits 2 on an unknown id
        defaults = Args(env_id=env_id, **presets, paper_preset=known.paper_preset)
    args = tyro.cli(Args, default=defaults, args=argv, description=Args.__doc__)
    env_backend(args.env_id)  # exits 2 on an unknown id
    for name in ("num_envs", "num_steps", "total_timesteps", "eval_episodes", "learning_rate", "critic_learning_rate",
                 "num_stacked_frames", "num_minibatches", "update_epochs", "hidden_dim", "num_layers", "clip_coef",
                 "max_grad_norm", "huber_delta"):  # fmt: skip
        value = getattr(args, name)
        check(value > 0, f"--{name.replace('_', '-')} must be positive, got {value}")
    for name in ("eval_interval", "save_interval", "num_workers", "ent_coef", "vf_coef"):
        value = getattr(args, name)
        check(value >= 0, f"--{name.replace('_', '-')} must be >= 0, got {value}")
    check(not (args.resume and args.eval_only), "--resume and --eval-only are exclusive: give one checkpoint")
    has_wandb = importlib.util.find_spec("wandb") is not None
    check(not args.track or has_wandb, "--track needs wandb: pip install wandb")
    # above 1 the returns run off to infinity
    check(0 < args.gamma <= 1, f"--gamma must be in (0, 1], got {args.gamma}")
    check(0 <= args.gae_lambda <= 1, f"--gae-lambda must be in [0, 1], got {args.gae_lambda}")
    rollout = args.num_envs * args.num_steps  # env steps: num-envs * num-steps
    enough = args.total_timesteps >= rollout or args.eval_only
    check(enough, f"--total-timesteps {args.total_timesteps} is less than one rollout ({rollout} env steps)")
    return args, ckpt


def load_checkpoint(path: str) -> dict:
    """A checkpoint of this script (a file, or the run folder it is in), its archive's checksums
    checked, loaded with weights_only=True; anything else exits 2 with one line naming the file."""
    # a run folder: runs/<run name>/<exp name>.pt, the exp name by default the script's
    if os.path.isdir(path):
        inside = [os.path.join(path, name) for name in os.listdir(path) if name.endswith(".pt")]
        found = f"{path!r} is a folder with {len(inside)} checkpoints (*.pt) in it"
        check(len(inside) == 1, f"{found}: name the file")
        path = inside[0]
    check(os.path.isfile(path), f"checkpoint {path!r} does not exist")
    # torch writes a zip archive, with a CRC-32 of every member
    with contextlib.suppress(zipfile.BadZipFile):
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()  # the first member whose bytes do not match their checksum
        check(damaged is None, f"{path!r} is corrupted: its part {damaged} fails its checksum")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # not a torch file, or one that holds more than tensors and plain values
        ckpt = None
    ours = isinstance(ckpt, dict) and ckpt.get("format") == "cleanmappo"
    check(ours, f"{path!r} is not a cleanmappo checkpoint")
    script = os.path.basename(__file__)
    check(ckpt["script"] == script, f"{path!r} was written by {ckpt['script']}, not by this script")
    return ckpt


def save_checkpoint(path: str, parts: dict, **values):
    """Everything --resume needs, as tensors and plain values (weights_only=True loads it), never
    half written."""
    ckpt = {name: part.state_dict() for name, part in parts.items()}
    ckpt.update(format="cleanmappo", script=os.path.basename(__file__), **values)
    torch.save(ckpt, f"{path}.tmp")
    os.replace(f"{path}.tmp", path)


def restore(parts: dict, ckpt: dict, resume: bool, env_id: str):
    """The checkpoint's networks into parts (actor, critic), and with --resume its optimisers too.
    A network or env flag (--hidden-dim, --env-id, ...) that differs from the checkpoint's exits 2
    naming the first part that differs."""
    for name in list(parts)[: 4 if resume else 2]:
        try:
            parts[name].load_state_dict(ckpt[name])
        except (RuntimeError, ValueError) as e:
            # torch's message: a header line, then one line per mismatch
            lines = [line.strip() for line in str(e).splitlines()[1:] if line.strip()]
            first = lines[0] if lines else str(e).strip()
            envs = f"the checkpoint's --env-id {ckpt['args']['env_id']}, these flags' {env_id}"
            check(False, f"the checkpoint's networks do not match these flags: {name}: {first} ({envs})")


def eval_summary(evals: list[list[float]], has_wins: bool) -> dict:
    """The paper's metric, the median of the last 10 evaluations, of each score, and every
    evaluation. evals: one row per evaluation: step, win rate, return, wall time, training score
    (of the rollout before it), then the sampled win rate and return (NaN without --eval-sampled).
    Without wins (MPE, Hanabi) the win rates are None."""
    last = np.array(evals[-10:])
    summary = dict(wall_time=evals[-1][3], median_return=float(np.median(last[:, 2])))
    summary["median_win_rate"] = float(np.median(last[:, 1])) if has_wins else None
    train = "train_win_rate" if has_wins else "train_return"
    if not np.isnan(last[:, 4]).all():  # no training episode ended before any of them: none
        summary[f"median_{train}"] = float(np.nanmedian(last[:, 4]))
    if not np.isnan(last[:, 6]).all():  # --eval-sampled
        summary["median_sampled_return"] = float(np.nanmedian(last[:, 6]))
        summary["median_sampled_win_rate"] = float(np.nanmedian(last[:, 5])) if has_wins else None
    win = ("win_rate", "sampled_win_rate") if has_wins else (None, None)
    keys = ("step", win[0], "episodic_return", "wall_time", train, win[1], "sampled_return")
    # a NaN (v != v) is left out
    summary["evals"] = [{k: v for k, v in zip(keys, e) if k and v == v} for e in evals]
    return summary


def open_logs(args: Args, run_name: str) -> SummaryWriter:
    """TensorBoard's writer in runs/<run name>, its first text the flags; with --track, W&B syncs
    it."""
    if args.track:
        import wandb

        names = dict(project=args.wandb_project_name, entity=args.wandb_entity, name=run_name)
        options = dict(sync_tensorboard=True, save_code=True, resume="allow")
        wandb.init(**names, **options, config=vars(args))
    writer = SummaryWriter(f"runs/{run_name}")
    table = "\n".join(f"|{key}|{value}|" for key, value in vars(args).items())
    writer.add_text("hyperparameters", f"|param|value|\n|-|-|\n{table}")
    return writer


def episode_stats(episodes: dict, has_wins: bool) -> dict:
    """The mean return, length and win rate of the episodes that ended in the rollout (none: {});
    the list emptied."""
    if not episodes["finished"]:
        return {}
    # one row per episode finished in this rollout
    finished = np.array(episodes["finished"])  # (n,3): return, length, won
    episodes["finished"] = []
    stats = {"charts/episodic_return": finished[:, 0].mean()}
    stats["charts/episodic_length"] = finished[:, 1].mean()
    if has_wins:  # MPE has no win
        stats["charts/win_rate"] = finished[:, 2].mean()
    return stats


def write_eval_summary(path: str, head: dict, evals: list[list[float]], has_wins: bool):
    """The run's eval_summary.json: head (env id, seed, step, budget), then eval_summary's; its
    medians printed."""
    summary = dict(head, **eval_summary(evals, has_wins))
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
    scores = f"win rate {summary['median_win_rate']:.3f}, " if has_wins else ""
    scores += f"return {summary['median_return']:.3f}"
    print(f"median of the last {min(len(evals), 10)} evaluations: {scores} ({path})")


def status_line(step: int, total: int, wall_sps: float, latest: dict, has_wins: bool, env_id: str) -> str:
    """Progress: step / total, SPS (of training: evaluations and the warm-up left out), ETA (at
    wall_sps, the env steps per second of wall time since the warm-up, evaluations in), the score
    of the last rollout's episodes and of the last evaluation, env id. 80 columns show all but the
    id."""
    # no SPS yet in a sitting's first iteration
    sps = int(latest["charts/SPS"]) if "charts/SPS" in latest else "-"
    eta = datetime.timedelta(seconds=int((total - step) / wall_sps)) if wall_sps else "-"
    tag = "win_rate" if has_wins else "episodic_return"
    names = {f"charts/{tag}": "win" if has_wins else "return", f"eval/{tag}": "eval"}
    scores = "".join(f" {name} {latest[t]:.2f}" for t, name in names.items() if t in latest)
    warming_up = sps == "-" and "time/warmup" in latest
    warm_up = f" (warm-up {latest['time/warmup']:.0f} s)" if warming_up else ""
    return f"step {step}/{total} SPS {sps} ETA {eta}{warm_up}{scores} | {env_id}"


def report_eval_only(args: Args, eval_envs, result: tuple[float, ...]):
    """--eval-only's output: greedy, then sampled with --eval-sampled."""
    eval_envs.close()
    modes = "greedy, then as many sampled" if args.eval_sampled else "greedy"
    print(f"eval-only {args.eval_only}: {args.env_id}, {args.eval_episodes} episodes {modes}")
    for mode, win, ret in zip(("greedy", "sampled"), result[::2], result[1::2]):
        win_rate = f"win_rate={win:.4f} " if eval_envs.has_wins else ""
        print(f"{mode}: {win_rate}episodic_return={ret:.4f}")


class Run:
    """What a run does besides learning: restores and writes checkpoints, logs to TensorBoard
    (W&B with --track), shows progress (a status line on a terminal, a line every 30 s when
    piped), and makes Ctrl-C or SIGTERM a stop at the next env step or after the update under way,
    with a checkpoint of the last whole update."""

    def __init__(self, args: Args, ckpt: Optional[dict], actor, critic, actor_optimizer, critic_optimizer, eval_envs):
        self.args = args
        self.eval_envs = eval_envs
        self.has_wins = eval_envs.has_wins
        self.signals = []
        self.parts = dict(actor=actor, critic=critic)
        self.parts.update(actor_optimizer=actor_optimizer, critic_optimizer=critic_optimizer)
        if ckpt:
            restore(self.parts, ckpt, args.resume, args.env_id)
        self.run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
        # a folder name: no / nor : of an env id
        self.run_name = self.run_name.replace("/", "-").replace(":", "-")
        self.global_step = 0
        self.iteration = 0
        self.evals = []
        if args.resume:  # the step counters, the eval history and the run directory go on
            self.global_step = ckpt["global_step"]
            self.iteration = ckpt["iteration"]
            self.run_name = ckpt["run_name"]
            # older runs have no sampled columns
            self.evals = [list(e) + [math.nan] * (7 - len(e)) for e in ckpt["evals"]]
        rollout = args.num_envs * args.num_steps
        self.num_iterations = args.total_timesteps // rollout  # whole rollouts
        self.total = self.num_iterations * rollout  # env steps trained
        self.path = f"runs/{self.run_name}/{args.exp_name}.pt"
        self.train_time = 0.0
        self.latest = {}
        self.printed = 0.0
        # a resumed run's clock goes on
        self.start_time = time.time() - (self.evals[-1][3] if self.evals else 0.0)
        # (env step, time) at the end of this sitting's first iteration, which compiles (JAX,
        # torch) and fills caches: SPS and the ETA count from there, and its time is logged apart
        # (time/warmup)
        self.warm = None

    def start(self, envs) -> dict:
        """Tracking, the stop signals caught, the first reset of the envs."""
        self.writer = open_logs(self.args, self.run_name)
        # the handlers before ours, put back at the end
        self.handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in self.handlers:  # also where a shell started us with SIGINT ignored (cmd &)
            signal.signal(sig, self.stop)
        args = self.args
        if self.total != args.total_timesteps:
            print(f"--total-timesteps {args.total_timesteps} is rounded down to whole rollouts: {self.total}")
        if args.resume:
            print(f"{args.env_id}: resumed at step {self.global_step}, training to step {self.total}", flush=True)
        else:
            print(f"{args.env_id}: training to step {self.total}, logs in runs/{self.run_name}", flush=True)
        return envs.reset()

    def stop(self, signum, frame):
        """Only a flag that the loops read: nothing is raised inside an update, a compile, a gc"""
        self.signals.append(signum)

    def show_progress(self, step: int, force: bool = False):
        """A status line, at most every 0.5 s on a terminal (cut to its width), every 30 s when piped."""
        tty = sys.stdout.isatty()
        if not force and time.time() - self.printed < (0.5 if tty else 30):
            return
        self.printed = time.time()
        wall_sps = 0.0
        if self.warm:
            wall_sps = (step - self.warm[0]) / max(self.printed - self.warm[1], 1e-6)
        line = status_line(step, self.total, wall_sps, self.latest, self.has_wins, self.args.env_id)
        if tty:  # the line rewritten in place, cut to the terminal's width
            print(f"\r\033[K{line[: shutil.get_terminal_size().columns - 1]}", end="", flush=True)
        else:
            print(line, flush=True)

    def end_iteration(self, iteration: int, seconds: float, stats: dict, episodes: dict, result: Optional[tuple]):
        """Logs an iteration's statistics, its training episodes and its evaluation (win rate,
        return) if any."""
        self.iteration = iteration
        warming_up = self.warm is None
        if warming_up:
            self.warm = (self.global_step, time.time())
            stats["time/warmup"] = seconds
        else:
            self.train_time += seconds
            stats["charts/SPS"] = int((self.global_step - self.warm[0]) / self.train_time)
        stats["charts/learning_rate"] = self.parts["actor_optimizer"].param_groups[0]["lr"]
        if self.args.use_popart:
            mean, std = self.parts["critic"].popart.stats()
            stats.update({"popart/mean": mean.item(), "popart/std": std.item()})
        stats.update(episode_stats(episodes, self.has_wins))
        if result is not None:
            # with the training score of this rollout's episodes (JaxMARL plots it), NaN if none
            score = "charts/win_rate" if self.has_wins else "charts/episodic_return"
            stats.update(self.record_evaluation(result, float(stats.get(score, np.nan))))
        for tag, value in stats.items():
            self.writer.add_scalar(tag, value, self.global_step)
        self.latest.update(stats)
        # a killed run loses at most --save-interval updates
        if self.args.save_interval and iteration % self.args.save_interval == 0:
            self.save()
        rollout = self.total // self.num_iterations
        first_with_sps = "charts/SPS" in stats and self.global_step - self.warm[0] == rollout
        last = self.global_step == self.total
        self.show_progress(self.global_step, force=warming_up or first_with_sps or last)

    def record_evaluation(self, result: tuple, train_score: float) -> dict:
        """An evaluation at this step into the history (train_score: the rollout's before it) ->
        its tags for the logs"""
        sampled = result[2:] or (math.nan, math.nan)  # (win rate, return) of --eval-sampled
        wall_time = time.time() - self.start_time
        self.evals.append([self.global_step, *result[:2], wall_time, train_score, *sampled])
        tags = ("eval/win_rate", "eval/episodic_return")
        tags += ("eval/sampled_win_rate", "eval/sampled_episodic_return")
        return {tag: v for tag, v in zip(tags, result) if self.has_wins or "win_rate" not in tag}

    def missed_evaluation(self) -> bool:
        """A resumed run whose last update was due an evaluation that a stop cut short: it is made
        up first"""
        every = self.args.eval_interval
        due = every and self.iteration and self.iteration % every == 0
        none_at_this_step = not self.evals or self.evals[-1][0] < self.global_step
        return bool(self.args.resume and due and none_at_this_step)

    def make_up_evaluation(self, result: Optional[tuple]):
        """The cut evaluation (missed_evaluation), at the step it was due, logged; None: stopped again"""
        if result is not None:
            for tag, value in self.record_evaluation(result, math.nan).items():
                self.writer.add_scalar(tag, value, self.global_step)

    def save(self):
        """A checkpoint of the run as it stands (save_checkpoint)."""
        counters = dict(global_step=self.global_step, iteration=self.iteration, evals=self.evals)
        run = dict(args=asdict(self.args), run_name=self.run_name)
        save_checkpoint(self.path, self.parts, **run, **counters)

    def finish(self, envs):
        """The checkpoint (always after a stop or with --resume), the paper's eval summary (median of
        the last 10 evaluations, printed and written as JSON), every file flushed, every child
        process closed."""
        print("\n" if sys.stdout.isatty() else "", end="", flush=True)
        if self.signals or self.args.save_model or self.args.resume:
            self.save()
            print(f"checkpoint at step {self.global_step}: {self.path}")
            if self.global_step < self.total:
                print(f"to go on: python {os.path.basename(__file__)} --resume {self.path}")
        if self.evals:
            head = dict(env_id=self.args.env_id, seed=self.args.seed)
            head.update(global_step=self.global_step, budget=self.total)
            write_eval_summary(f"runs/{self.run_name}/eval_summary.json", head, self.evals, self.has_wins)
        self.writer.close()
        envs.close()
        self.eval_envs.close()
        for sig, handler in self.handlers.items():
            signal.signal(sig, handler)
        if self.args.track:
            import wandb

            wandb.finish(exit_code=130 if self.signals else 0)
        if self.signals:
            print(f"interrupted at step {self.global_step}, logs flushed", flush=True)
            sys.exit(130)


if __name__ == "__main__":
    try:
        train(*parse_args())
    except SystemError as error:  # a stop that lands inside a C extension (numpy, JAX) comes back wrapped in this
        if not isinstance(error.__cause__, SystemExit):
            raise
        sys.exit(error.__cause__.code)
