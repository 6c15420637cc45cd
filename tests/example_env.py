"""A complete cooperative multi-agent env for the scripts' generic backend, in PettingZoo's parallel API: copy it next
to mappo.py and train on it with one command,

    python mappo.py --env-id pz/example_env:parallel_env --total-timesteps 20000

Every step shows a cue (one of 3); each agent scores 1 when its action matches the cue. Agent "b" sees more than "a"
(the step count too) and has a fourth action that is never allowed: the generic backend pads the smaller observation
and masks the action (PettingZoo's "action_mask" convention). state() gives the critic the cue and the step count.
An episode is 8 steps, then truncated (a time limit, not an end of the task: the value bootstraps).
"""

import numpy as np
from gymnasium.spaces import Box, Dict, Discrete
from pettingzoo import ParallelEnv

STEPS, CUES = 8, 3


class CueEnv(ParallelEnv):
    metadata = {"name": "cue_v0"}

    def __init__(self):
        self.possible_agents = ["a", "b"]
        self.observation_spaces = {
            "a": Box(0.0, 1.0, (CUES,), np.float32),
            "b": Dict(observation=Box(0.0, 1.0, (CUES + 1,), np.float32), action_mask=Box(0, 1, (CUES + 1,), np.int8)),
        }
        self.action_spaces = {"a": Discrete(CUES), "b": Discrete(CUES + 1)}
        self.rng = np.random.default_rng()

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def observe(self) -> dict:
        cue = np.eye(CUES, dtype=np.float32)[self.cue]
        mask = np.array([1] * CUES + [0], np.int8)  # b's fourth action: never allowed
        b = dict(observation=np.append(cue, np.float32(self.t / STEPS)), action_mask=mask)
        return {"a": cue, "b": b}

    def state(self) -> np.ndarray:
        return np.append(np.eye(CUES, dtype=np.float32)[self.cue], np.float32(self.t / STEPS))

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.t, self.cue = list(self.possible_agents), 0, self.rng.integers(CUES)
        return self.observe(), {agent: {} for agent in self.agents}

    def step(self, actions):
        rewards = {agent: float(actions[agent] == self.cue) for agent in self.agents}
        self.t, self.cue = self.t + 1, self.rng.integers(CUES)
        truncated = self.t >= STEPS
        terminations = {agent: False for agent in self.agents}
        truncations = {agent: truncated for agent in self.agents}
        observations, infos = self.observe(), {agent: {} for agent in self.agents}
        if truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos


def parallel_env():
    return CueEnv()
