"""The env adapters' contract (the comment above FrameStack in each script), checked the same way for every backend in
mappo.py's registry: what reset() and step() return, their shapes and dtypes, auto-reset with the final observation
kept, wins only where a side was wiped out, seeding; and the registry itself (one backend per id, presets that are
Args fields). The other scripts carry the same backends (tests/test_shared_blocks.py)."""

import dataclasses

import numpy as np
import pytest

import mappo
from conftest import smaclite_missing

OBSERVED = {"obs": np.float32, "env_state": np.float32, "avail": np.bool_, "alive": np.bool_}
OUTCOME = {"reward": np.float32, "terminated": np.bool_, "truncated": np.bool_, "won": np.bool_}
FINAL = ("final_obs", "final_state", "final_alive")
# one id per backend; env counts that the rest of the suite compiles anyway (SMAX, Hanabi: 4 envs)
CASES = {"SMAXVecEnv": "3m", "HanabiVecEnv": "hanabi", "MPEVecEnv": "simple_spread_v3", "SMACliteVecEnv": "smaclite/2s3z"}
CASES["VMASVecEnv"] = "vmas/navigation"  # continuous actions


def random_actions(rng, avail: np.ndarray, continuous: bool = False) -> np.ndarray:
    if continuous:  # (E,A,U), half of them beyond the bounds [-1, 1]: the adapter clips what it sends
        return rng.uniform(-2.0, 2.0, avail.shape).astype(np.float32)
    return (rng.random(avail.shape) * avail).argmax(-1)  # (E,A) uniform over the available actions


def check_observed(out: dict, envs, E: int):
    A, O, S, U = envs.num_agents, envs.obs_dim, envs.state_dim, envs.num_actions
    shapes = {"obs": (E, A, O), "env_state": (E, S), "avail": (E, A, U), "alive": (E, A)}
    for key, dtype in OBSERVED.items():
        assert out[key].shape == shapes[key] and out[key].dtype == dtype, (key, out[key].shape, out[key].dtype)
    assert out["avail"].any(-1).all(), "every agent has an available action"
    assert np.isfinite(out["obs"]).all() and np.isfinite(out["env_state"]).all()


@pytest.mark.parametrize("backend, env_id", [*CASES.items(), ("MPEVecEnv", "simple_spread_v3_continuous")])
def test_env_contract(backend, env_id):
    if backend == "SMACliteVecEnv" and smaclite_missing():
        pytest.skip(smaclite_missing())
    E = 4
    envs = mappo.make_env(env_id, E, seed=7)
    assert type(envs).__name__ == backend and isinstance(envs.has_wins, bool) and isinstance(envs.continuous, bool)
    assert envs.continuous == (backend == "VMASVecEnv" or env_id.endswith("_continuous"))
    rng, out = np.random.default_rng(0), envs.reset()
    check_observed(out, envs, E)
    ended = 0
    for _ in range(150):
        before = out
        out = envs.step(random_actions(rng, before["avail"], envs.continuous))
        check_observed(out, envs, E)
        for key, dtype in OUTCOME.items():
            assert out[key].shape == (E,) and out[key].dtype == dtype, key
        for key, like in zip(FINAL, ("obs", "env_state", "alive")):
            assert out[key].shape == out[like].shape, key
        done = out["terminated"] | out["truncated"]
        assert not (out["terminated"] & out["truncated"]).any(), "a truncation is not a termination"
        assert not (out["won"] & ~out["terminated"]).any(), "a win ends the episode by wiping a side out"
        assert envs.has_wins or not out["won"].any()
        # where the episode goes on, the final observation is the observation; where it ended, the env was reset
        np.testing.assert_array_equal(out["final_obs"][~done], out["obs"][~done])
        ended += done.sum()
    assert ended > 0, "no episode ended in 150 random steps"
    envs.close()


@pytest.mark.parametrize("backend", [b for b in CASES if b != "SMACliteVecEnv"])
def test_env_seeding(backend):
    """Same seed, same first observations and the same steps; another seed, other ones."""
    runs = []
    for seed in (3, 3, 4):
        envs = mappo.make_env(CASES[backend], 4, seed=seed)
        out, rng = envs.reset(), np.random.default_rng(0)
        trace = [out["obs"]]
        for _ in range(5):
            out = envs.step(random_actions(rng, out["avail"], envs.continuous))
            trace.append(out["obs"])
        runs.append(np.stack(trace))
        envs.close()
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_registry_one_backend_per_id_and_presets_are_args():
    fields = {f.name for f in dataclasses.fields(mappo.Args)}
    seen = {}
    for family, (backend, ids) in mappo.ENV_FAMILIES.items():
        for env_id in ids():
            assert env_id not in seen, f"{env_id} is claimed by {seen[env_id]} and {family}"
            seen[env_id] = family
            assert mappo.env_backend(env_id) is backend
            for paper_preset in (False, True):
                presets = mappo.env_presets(env_id, paper_preset)
                assert set(presets) <= fields, (env_id, presets)
    assert {"3m", "hanabi", "simple_spread_v3", "simple_spread_v3_continuous", "vmas/navigation"} <= set(seen)
    assert mappo.env_presets("5m_vs_6m", False) == {"update_epochs": 10}  # MAPPO Table 12
    assert mappo.env_presets("hanabi", True)["num_envs"] == 1000  # Tables 7, 13 with --paper-preset
    assert mappo.env_presets("simple_spread_v3", False)["activation"] == "tanh"  # Table 11
    assert mappo.env_presets("pz/example_env:parallel_env", False) == {}  # the generic backend: Args' defaults


@pytest.mark.parametrize("backend", ["SMAXVecEnv", "HanabiVecEnv", "VMASVecEnv"])
def test_env_on_device_gives_the_host_outputs_as_tensors(backend):
    """--env-on-device (here the device is the CPU): the same envs give torch tensors holding the same values as the
    host path's numpy arrays, and take the actions as tensors; JAX hands its arrays over by DLPack"""
    import torch

    host, device = (mappo.make_env(CASES[backend], 4, seed=3, device=d) for d in (None, "cpu"))
    rng = np.random.default_rng(0)
    out_host, out_device = host.reset(), device.reset()
    for _ in range(6):
        assert set(out_device) == set(out_host)
        for key, value in out_host.items():
            assert torch.is_tensor(out_device[key]) and out_device[key].device.type == "cpu", key
            np.testing.assert_array_equal(out_device[key].numpy(), value, err_msg=key)
        actions = random_actions(rng, out_host["avail"], host.continuous)
        out_host, out_device = host.step(actions), device.step(torch.as_tensor(actions))
    host.close(), device.close()


def test_env_on_device_refuses_host_only_envs(capsys):
    for env_id, frames in (("simple_spread_v3", 1), ("3m", 4)):
        with pytest.raises(SystemExit) as exit_info:
            mappo.make_env(env_id, 2, seed=0, num_stacked_frames=frames, device="cpu")
        assert exit_info.value.code == 2 and "--env-on-device" in capsys.readouterr().err


# ---------------------------------------------- the generic backend: any env by its id ----------------------------------
GENERIC = {
    "example": "pz/example_env:parallel_env",  # tests/example_env.py: masks, padding, state(), truncation
    "mpe": "pz/mpe2.simple_speaker_listener_v4:parallel_env",  # observation sizes 3 and 11, action sizes 3 and 5
    "lbf": "gym/lbforaging:Foraging-8x8-2p-2f-coop-v3",  # EPyMARL's gym convention, done at its time limit
    "rware": "gym/rware:rware-tiny-2ag-v2",
    "relay": "pz/test_envs:relay_env",  # below: Box actions, agents that die, termination, no state()
}


class RelayEnv:
    """A PettingZoo-style parallel env for the contract: two agents push a value with Box actions in [-1, 1]; agent
    "first" leaves the env (dies) after 3 steps, the episode terminates after 5; no state(), masks in infos"""

    metadata = {"name": "relay_v0"}

    def __init__(self):
        from gymnasium.spaces import Box

        self.possible_agents = ["first", "second"]
        self.spaces = {a: Box(-1.0, 1.0, (2,), np.float32) for a in self.possible_agents}
        self.unwrapped = self

    def observation_space(self, agent):
        return self.spaces[agent]

    def action_space(self, agent):
        return self.spaces[agent]

    def obs(self):
        return {a: np.array([self.t / 5, self.value], np.float32) for a in self.agents}

    def reset(self, seed=None, options=None):
        self.agents, self.t, self.value = list(self.possible_agents), 0, 0.0
        return self.obs(), {a: {} for a in self.agents}

    def step(self, actions):
        self.value = float(np.clip(self.value + sum(float(np.sum(a)) for a in actions.values()), -5, 5))
        self.sent = actions
        self.t += 1
        rewards = {a: 1.0 for a in self.agents}
        terminations = {a: self.t >= 5 or (a == "first" and self.t >= 3) for a in self.agents}
        truncations = {a: False for a in self.agents}
        obs, infos = self.obs(), {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not terminations[a]]
        return obs, rewards, terminations, truncations, infos

    def close(self):
        pass


def relay_env():
    return RelayEnv()


@pytest.mark.parametrize("name", GENERIC)
def test_generic_env_contract(name):
    """The generic backend keeps the adapters' contract for envs it has never seen (the shapes, dtypes, auto-reset and
    final observations of test_env_contract)"""
    E = 3
    envs = mappo.make_env(GENERIC[name], E, seed=7)
    assert type(envs).__name__ == "GenericVecEnv" and not envs.has_wins and envs.continuous == (name == "relay")
    rng, out = np.random.default_rng(0), envs.reset()
    check_observed(out, envs, E)
    ended = 0
    for _ in range(120 if name != "rware" else 501):
        out = envs.step(random_actions(rng, out["avail"], envs.continuous))
        check_observed(out, envs, E)
        for key, dtype in OUTCOME.items():
            assert out[key].shape == (E,) and out[key].dtype == dtype, key
        done = out["terminated"] | out["truncated"]
        assert not (out["terminated"] & out["truncated"]).any() and not out["won"].any()
        np.testing.assert_array_equal(out["final_obs"][~done], out["obs"][~done])
        ended += done.sum()
    assert ended > 0
    envs.close()


def test_generic_pads_masks_states_and_truncates():
    """The example env: b's observation is one longer (a's is zero-padded), b's fourth action is masked by the env and
    a's by the padding; the critic's state is the env's state(); at its time limit an episode is truncated, and the final
    observation is the one before the reset"""
    envs = mappo.make_env(GENERIC["example"], 2, seed=3)
    out = envs.reset()
    assert (envs.num_agents, envs.obs_dim, envs.num_actions, envs.state_dim) == (2, 4, 4, 4)
    assert (out["obs"][:, 0, 3] == 0).all() and (out["obs"][:, 0, :3].sum(-1) == 1).all()
    np.testing.assert_array_equal(out["avail"][0], [[True, True, True, False], [True, True, True, False]])
    np.testing.assert_array_equal(out["env_state"], out["obs"][:, 1])  # state(): the cue and the step count, as b sees
    for t in range(1, 9):
        out = envs.step(out["obs"][:, :, :3].argmax(-1))  # each agent plays the cue it sees: both score
        np.testing.assert_array_equal(out["reward"], [2.0, 2.0])  # --team-reward sum (the default)
        assert (out["truncated"] == (t == 8)).all() and not out["terminated"].any()
    np.testing.assert_array_equal(out["final_obs"][:, 1, 3], [1.0, 1.0])  # step 8 of 8, before the reset
    np.testing.assert_array_equal(out["obs"][:, 1, 3], [0.0, 0.0])  # the new episode's first
    mean = mappo.make_env(GENERIC["example"], 2, seed=3, team_reward="mean")
    out = mean.reset()
    np.testing.assert_array_equal(mean.step(out["obs"][:, :, :3].argmax(-1))["reward"], [1.0, 1.0])


def test_generic_dead_agents_termination_box_actions_and_time_limits():
    """relay: a PettingZoo agent gone from the env is dead (alive False, zeros), its action not sent; the episode
    terminates when the last agent does; Box actions are clipped to the bounds; without state() the critic's state is
    every observation. LBF ends its episodes at step 50 with done: a truncation here, as EPyMARL's time limit"""
    envs = mappo.make_env(GENERIC["relay"], 1, seed=0)
    out = envs.reset()
    assert envs.continuous and envs.state_dim == envs.num_agents * envs.obs_dim
    np.testing.assert_array_equal(out["env_state"], out["obs"].reshape(1, -1))
    for t in range(1, 6):
        out = envs.step(np.full((1, 2, 2), 3.0, np.float32))  # beyond the bound 1: clipped
        live = envs.envs[0].sent
        assert all(np.array_equal(a, [1.0, 1.0]) for a in live.values()), live
        assert list(live) == (["first", "second"] if t <= 3 else ["second"])
        if t < 5:
            np.testing.assert_array_equal(out["alive"], [[t < 3, True]])
            assert (out["obs"][0, 0] == 0).all() == (t >= 3)
        assert out["terminated"].tolist() == [t == 5] and not out["truncated"].any()
    np.testing.assert_array_equal(out["final_alive"], [[False, False]])
    lbf = mappo.make_env(GENERIC["lbf"], 2, seed=1)
    out, rng = lbf.reset(), np.random.default_rng(0)
    for t in range(1, 51):
        out = lbf.step(random_actions(rng, out["avail"]))
        if not (out["terminated"] | out["truncated"]).any():
            continue
        assert t == 50 or out["terminated"].any()  # before 50, only all food eaten ends an LBF episode
    assert lbf.time_limit == 50


@pytest.mark.parametrize(
    "env_id, says",
    [
        ("pz/no_such_module:parallel_env", "cannot make it (ModuleNotFoundError"),
        ("pz/mpe2.simple_spread_v3", "a generic id is pz/<module>:<callable>"),
        ("pz/mpe2.simple_spread_v3:env", "a PettingZoo AEC env: give its parallel_env"),
        ("gym/NoSuchEnv-v0", "cannot make it (NameNotFound"),
        ("gym/CartPole-v1", "not a multi-agent env of EPyMARL's convention"),
        ("oops/3m", "unknown --env-id 'oops/3m'"),
    ],
)
def test_generic_ids_that_cannot_run_exit_2_with_one_line(env_id, says, capsys):
    with pytest.raises(SystemExit) as exit_info:
        mappo.make_env(env_id, 1, seed=0)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("error: ") and says in err, err
    assert err.count("\n") == 1 or env_id == "oops/3m", "one line, but for the list of valid ids"


@pytest.mark.parametrize("script", ["mappo.py", "ippo.py", "mappo_rnn.py"])
def test_the_example_env_learns_by_its_id(script, train, tmp_path):
    """tests/example_env.py, which no script knows, trained by its id alone: in 1,536 env steps every script's greedy
    evaluation scores at least 14 of 16 (random play: 16/3 on average)"""
    import json

    flags = ["--env-id", GENERIC["example"], "--no-cuda", "--num-envs", "4", "--num-steps", "32", "--seed", "1"]
    assert train(script, *flags, "--total-timesteps", "1536", "--update-epochs", "5", "--eval-episodes", "8") == 0
    [summary] = (tmp_path / "runs").glob("pz-example_env-parallel_env__*__1__*/eval_summary.json")
    evals = json.loads(summary.read_text())["evals"]
    assert len(evals) == 12 and evals[-1]["episodic_return"] >= 14, evals[-1]
    assert evals[0]["train_return"] < 8  # the first rollout's episodes, played before any update: near random
