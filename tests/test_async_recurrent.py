"""mappo_async_seed.py --recurrent: hidden states kept by the server per slot, chunks rebuilt by the learner (ratio == 1
at zero policy lag, and the test catches a hidden state stored one step late), Table 2 presets, eval-only."""

from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, eval_only_win_rate, read_scalars, run_dirs
from test_async_seed import client_pids, wait_no_clients

SCRIPT = "mappo_async_seed.py"
# 3m episodes last 20-60 steps: with 64-step segments, chunks of 10 cross episode ends and the last chunk is padded
RATIO_RUN = ["--env-id", "3m", "--recurrent", "--no-cuda", "--num-steps", "64", "--update-epochs", "2"]
RATIO_RUN += ["--eval-episodes", "4", "--total-timesteps", "1536", "--eval-interval", "0", "--save-model"]
STORE_LINE = "starts[i : i + k], h[i : i + k], new_h[i : i + k]"
RESET_EXPR = 'd["terminated"] | d["truncated"] if "reward" in d'


def recurrent_server(T: int):
    import mappo_async_seed as m

    torch.manual_seed(0)
    actor = m.Actor(in_dim=4 + 2, num_actions=3, hidden_dim=8, recurrent=True)
    server = m.InferenceServer(actor, torch.eye(2), T, 1, 0.0, 2, 2, torch.device("cpu"), {})  # room for 4 segments
    server.publish(actor)
    return m, actor, server


def step_data(t: int, k: int, rng, done=()):
    """Observation t of a slot with k envs (2 agents); from t = 1 on with the outcome of step t-1, envs in done ended"""
    data = dict(obs=rng.standard_normal((k, 2, 4)).astype(np.float32), env_state=np.zeros((k, 5), np.float32))
    data.update(avail=np.ones((k, 2, 3), bool), alive=np.ones((k, 2), bool))
    if t > 0:
        ended = np.isin(np.arange(k), done)
        data.update(reward=np.zeros(k, np.float32), terminated=ended, truncated=np.zeros(k, bool), won=ended)
        data.update(final_obs=data["obs"], final_state=data["env_state"], final_alive=data["alive"])
    return data


def test_server_keeps_hidden_states_per_slot():
    """Two slots in one batch, two segments each: the state stored with step t is the one entering it (zeros at the
    reset, the actor's own scan after), it resets where an episode ended, and it carries over into the next segment."""
    m, actor, server = recurrent_server(T=3)
    k, rng = 2, np.random.default_rng(0)
    slots = [(0, 0), (0, 1)]
    inputs = {slot: [] for slot in slots}  # slot -> observations in order
    ends = {(0, 1): {4: [1]}}  # slot (0, 1): env 1's episode ended with step 3, so step 4 begins a new one
    for t in range(2 * 3 + 1):
        batch = []
        for slot in slots:
            data = step_data(t, k, rng, ends.get(slot, {}).get(t, ()))
            server.record(slot, data)
            inputs[slot].append(data["obs"])
            batch.append((slot, data, None))
        if t < 2 * 3:
            server.infer(batch)
    segments = {(seg["slot"], seg["index"]): seg for seg in [server.ready.get_nowait() for _ in range(4)]}
    assert sorted(segments) == [(slot, i) for slot in slots for i in (0, 1)]
    for slot in slots:
        first, second = segments[slot, 0], segments[slot, 1]
        stored = np.concatenate([first["actor_h"], second["actor_h"]])  # (6,k,A,H)
        starts = np.concatenate([first["starts"], second["starts"]])  # (6,k)
        assert starts[0].all() and not starts[1:4].any() and (starts[4].tolist() == [False, slot == (0, 1)])
        assert not starts[5].any()
        assert np.all(stored[0] == 0)
        # the actor's own scan over the slot's 6 observations, with the same resets, from zeros
        x = m.actor_input(torch.from_numpy(np.stack(inputs[slot][:6])), torch.eye(2))  # (6,k,A,O+A)
        with torch.no_grad():
            _, out = actor(x, torch.zeros(k, 2, 8), torch.from_numpy(starts)[..., None].expand(6, k, 2))  # (6,k,A,H)
        torch.testing.assert_close(torch.from_numpy(stored[1:]), out[:-1], rtol=0, atol=1e-6)
        assert np.abs(stored[1:]).max() > 1e-3  # non-trivial states: a zero stored state could not pass above


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
@pytest.mark.parametrize("mode", ["serial", "async"])
def test_ratio_is_one_at_zero_policy_lag(run_script, tmp_path, mode):
    """--no-async never lags: every update's first mini-batch has ratio 1. Async: the first update (the clients acted
    with the first policy only) has ratio 1; later ones lag and need not."""
    run_script(SCRIPT, *RATIO_RUN, *(["--no-async"] if mode == "serial" else []), timeout=300)
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    [run] = run_dirs(tmp_path)
    scalars = read_scalars(run)
    assert sum(v for _, v in scalars["charts/episodic_length"]) > 0, "no episode ended: resets inside chunks untested"
    lag = [v for _, v in scalars["stats/policy_lag_max"]]
    ratio_devs = [v for _, v in scalars["losses/first_ratio_dev"]]
    value_devs = [v for _, v in scalars["losses/first_value_dev"]]
    assert len(ratio_devs) == 3 and lag[0] == 0, lag
    assert all(dev <= 1e-6 for dev, max_lag in zip(ratio_devs, lag) if max_lag == 0), (ratio_devs, lag)
    assert max(value_devs) <= 1e-4, value_devs  # the critic's chunks rebuild its hidden states (PopArt rounding)
    if mode == "serial":
        assert lag == [0, 0, 0]

    ckpt = torch.load(Path(run) / "mappo_async_seed.pt", weights_only=True)
    assert ckpt["args"]["recurrent"] and "gru.weight_hh" in ckpt["actor"] and "gru.weight_hh" in ckpt["critic"]
    proc = run_script(SCRIPT, "--eval-only", Path(run) / "mappo_async_seed.pt", "--eval-episodes", "4", timeout=300)
    eval_only_win_rate(proc.stdout, 4)
    if mode == "serial":  # a network flag against the checkpoint's: a message and status 2, no traceback
        bad = run_script(SCRIPT, "--eval-only", Path(run) / "mappo_async_seed.pt", "--no-recurrent", check=False)
        assert bad.returncode == 2 and "do not match these flags" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
@pytest.mark.parametrize("mutation", ["late", "no_reset"])
def test_ratio_test_catches_a_hidden_state_one_step_late(run_script, tmp_path, mutation):
    """The server storing the state after step t (instead of the one entering it), or never resetting the state
    where an episode ended (the learner takes those starts from the dones), must show in the first ratio"""
    source = (ROOT / SCRIPT).read_text()
    assert source.count(STORE_LINE) == 1 and source.count(RESET_EXPR) == 1, "the lines moved: update the test"
    path = tmp_path / "mappo_async_seed_mutant.py"
    if mutation == "late":
        path.write_text(source.replace(STORE_LINE, "starts[i : i + k], new_h[i : i + k], new_h[i : i + k]"))
    else:
        path.write_text(source.replace(RESET_EXPR, 'np.zeros(len(d["obs"]), bool) if "reward" in d'))
    run_script(str(path), *RATIO_RUN, "--no-async", env={"PYTHONPATH": str(ROOT)}, timeout=300)
    [run] = run_dirs(tmp_path)
    ratio_devs = [v for _, v in read_scalars(run)["losses/first_ratio_dev"]]
    assert min(ratio_devs) > 1e-3, ratio_devs


def test_table_2_presets_and_flags_win():
    import mappo_async_seed as m

    args, _ = m.parse_args(["--env-id", "5m_vs_6m", "--recurrent"])
    assert (args.num_envs, args.update_epochs, args.num_steps, args.data_chunk_length) == (60, 10, 400, 10)
    assert args.envs_per_split == 15 and args.batch_size == 7.5 * 8 * 400
    args, _ = m.parse_args(["--env-id", "27m_vs_30m", "--recurrent", "--num-envs", "8"])  # 2x, reuse 5; a flag wins
    assert (args.num_envs, args.update_epochs) == (8, 5) and m.env_presets("27m_vs_30m", True)["num_envs"] == 16
    assert m.ASYNC_TABLE_2["MMM2"] == dict(num_envs=48, update_epochs=5)  # SMAX has no MMM2: smaclite/MMM2 takes it
    args, _ = m.parse_args(["--env-id", "5m_vs_6m"])  # feed-forward: MAPPO's serial batch
    assert (args.recurrent, args.num_envs, args.update_epochs) == (False, 8, 10)
    args, _ = m.parse_args(["--env-id", "3m", "--recurrent"])  # not in Table 2: MAPPO's settings
    assert (args.num_envs, args.update_epochs) == (8, 15)
    args, _ = m.parse_args(["--env-id", "3s_vs_5z"])  # MAPPO's MLP there stacks 4 frames, the GRU none
    assert args.num_stacked_frames == 4 and m.parse_args(["--env-id", "3s_vs_5z", "--recurrent"])[0].num_stacked_frames == 1


def test_resume_derives_the_split_layout_again(tmp_path):
    """--resume takes the checkpoint's args as defaults, but not the values derived from the client count: with
    --num-clients 4 the saved 8 envs are cut into 4 x 2 splits of 1, and the world size and server batch follow."""
    import dataclasses

    import mappo_async_seed as m

    saved, _ = m.parse_args(["--env-id", "3m"])  # 8 envs, 2 clients x 2 splits of 2
    assert (saved.envs_per_split, saved.world_size, saved.server_batch) == (2, 3, 2)
    path = tmp_path / "ckpt.pt"

    def save(**changed):  # a checkpoint holding only what parse_args reads
        args = {**dataclasses.asdict(saved), **changed}
        torch.save(dict(format="cleanmappo", script="mappo_async_seed.py", actor={}, args=args), path)

    save()
    args, _ = m.parse_args(["--resume", str(path), "--num-clients", "4"])
    assert (args.num_envs, args.envs_per_split, args.world_size, args.server_batch) == (8, 1, 5, 4)
    args, _ = m.parse_args(["--resume", str(path)])
    assert (args.num_envs, args.envs_per_split, args.world_size, args.server_batch) == (8, 2, 3, 2)
    save(server_batch=1)
    assert m.parse_args(["--resume", str(path), "--num-clients", "4"])[0].server_batch == 1  # chosen, so kept


def test_critic_carry_across_segments_and_batches():
    """A slot's segments scanned batch by batch (and two of them in one batch, as when a client runs ahead) give the
    values of one scan over the slot's whole stream; after a dropped segment the next one starts from zeros."""
    import mappo_async_seed as m

    torch.manual_seed(0)
    critic = m.Critic(in_dim=6, hidden_dim=8, recurrent=True)
    T, k, A, n = 5, 2, 2, 4  # segment length, envs per slot, agents, segments of slot (0, 0)
    state = torch.randn(n * T, k, A, 6)  # (nT,k,A,S) the slot's whole stream
    starts = torch.zeros(n * T, k, A, dtype=torch.bool)
    starts[0] = True
    starts[7, 1] = True  # env 1: an episode ends after step 6, inside segment 1
    with torch.no_grad():
        stream_values, _ = critic.value(state, torch.zeros(k, A, 8), starts)  # (nT,k,A)
    other = dict(slot=(1, 0), index=0, rewards=np.zeros((T, k)))
    other_state = torch.randn(T, k, A, 6)

    def run(batch: list, carry: dict) -> torch.Tensor:
        """batch: (slot (0, 0) segment index or None for the other slot) -> the values of each segment"""
        segs = [dict(slot=(0, 0), index=i, rewards=np.zeros((T, k))) if i is not None else other for i in batch]
        x = torch.cat([state[i * T : (i + 1) * T] if i is not None else other_state for i in batch], dim=1)
        st = torch.cat([starts[i * T : (i + 1) * T] if i is not None else starts[:T] for i in batch], dim=1)
        values, out, h0 = m.critic_over_segments(critic, x, st, segs, carry)
        assert values.shape == (T, k * len(batch), A) and out.shape == (T, k * len(batch), A, 8)
        return values

    carry = {}
    v0 = run([0, None], carry)  # segment 0 with another slot's
    v12 = run([2, None, 1], carry)  # segments 1 and 2 in one batch, out of order
    v3 = run([3], carry)  # from the carry of the batch before
    got = torch.cat([v0[:, :k], v12[:, 2 * k :], v12[:, :k], v3])  # (nT,k,A) in stream order
    torch.testing.assert_close(got, stream_values, rtol=0, atol=1e-5)
    assert carry[(0, 0)][0] == 3 and carry[(1, 0)][0] == 0

    carry = {}
    run([0], carry)
    v2 = run([2], carry)  # segment 1 was dropped: segment 2 starts from zeros, not from segment 0's end
    with torch.no_grad():
        fresh, _ = critic.value(state[2 * T : 3 * T], torch.zeros(k, A, 8), starts[2 * T : 3 * T])
    torch.testing.assert_close(v2, fresh, rtol=0, atol=1e-6)
    assert (v2 - stream_values[2 * T : 3 * T]).abs().max() > 1e-4  # the carried state would have made a difference


def test_chunk_longer_than_the_rollout_exits_2(capfd):
    """--recurrent only: a feed-forward run has no chunks (chunks of one step), so there the flag is left alone."""
    import mappo_async_seed as m

    flags = ["--env-id", "3m", "--no-cuda", "--num-steps", "32", "--data-chunk-length", "33"]
    with pytest.raises(SystemExit) as exit_info:
        m.parse_args([*flags, "--recurrent"])
    assert exit_info.value.code == 2
    assert "--data-chunk-length 33 exceeds the rollout's --num-steps 32" in capfd.readouterr().err
    assert m.parse_args(flags)[0].data_chunk_length == 33
