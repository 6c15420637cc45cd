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
    for backend in mappo.ENV_BACKENDS:
        for env_id in backend.ids():
            assert env_id not in seen, f"{env_id} is claimed by {seen[env_id]} and {backend.__name__}"
            seen[env_id] = backend.__name__
            assert mappo.env_backend(env_id) is backend
            for paper_preset in (False, True):
                assert set(backend.presets(env_id, paper_preset)) <= fields, (env_id, backend.presets(env_id, paper_preset))
    assert {"3m", "hanabi", "simple_spread_v3", "simple_spread_v3_continuous", "vmas/navigation"} <= set(seen)
    assert mappo.SMAXVecEnv.presets("5m_vs_6m", False) == {"update_epochs": 10}  # MAPPO Table 12
    assert mappo.HanabiVecEnv.presets("hanabi", True)["num_envs"] == 1000  # Tables 7, 13 with --paper-preset


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
