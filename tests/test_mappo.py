"""mappo.py's parts one at a time: GAE, the actor's and critic's inputs, presets, networks, the frame stack, the
progress line. The other scripts carry the same parts (tests/test_shared_blocks.py).
"""

import numpy as np
import pytest
import torch

import mappo


def reference_gae(rewards, values, next_value, terminated, truncated, final_values, gamma, lam):
    """Element by element, straight from the definitions: delta_t = r_t + gamma * V(s_{t+1}) - V(s_t), where
    V(s_{t+1}) is 0 after a termination and V(final obs) after a truncation; A_t = sum (gamma lam)^k delta_{t+k}
    within the episode."""
    T, E, A = values.shape
    adv = np.zeros((T, E, A))
    for e in range(E):
        for a in range(A):
            for t in range(T):
                total, discount = 0.0, 1.0
                for k in range(t, T):
                    if terminated[k, e]:
                        v_next = 0.0
                    elif truncated[k, e]:
                        v_next = final_values[k, e, a]
                    else:
                        v_next = next_value[e, a] if k == T - 1 else values[k + 1, e, a]
                    total += discount * (rewards[k, e] + gamma * v_next - values[k, e, a])
                    if terminated[k, e] or truncated[k, e]:
                        break
                    discount *= gamma * lam
                adv[t, e, a] = total
    return adv


@pytest.mark.parametrize("case", ["termination", "truncation", "both"])
def test_gae_matches_reference(case):
    rng = np.random.default_rng(0)
    T, E, A = 12, 3, 2
    rewards, values = rng.normal(size=(T, E)), rng.normal(size=(T, E, A))
    next_value, final_values = rng.normal(size=(E, A)), rng.normal(size=(T, E, A)) * 5
    terminated, truncated = np.zeros((T, E), bool), np.zeros((T, E), bool)
    if case in ("termination", "both"):
        terminated[4, 0] = terminated[9, 1] = True
    if case in ("truncation", "both"):
        truncated[6, 0] = truncated[2, 2] = truncated[T - 1, 1] = True
    t = lambda x: torch.as_tensor(x, dtype=torch.float32) if x.dtype != bool else torch.as_tensor(x)  # noqa: E731
    adv, ret = mappo.compute_gae(
        t(rewards), t(values), t(next_value), t(terminated), t(truncated), t(final_values), 0.99, 0.95
    )
    expected = reference_gae(rewards, values, next_value, terminated, truncated, final_values, 0.99, 0.95)
    np.testing.assert_allclose(adv.numpy(), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ret.numpy(), expected + values, rtol=1e-4, atol=1e-4)


def test_gae_truncation_bootstraps_and_termination_does_not():
    T, E, A = 1, 2, 1
    zeros = torch.zeros((T, E, A))
    rewards = torch.ones((T, E))
    final_values = torch.full((T, E, A), 10.0)
    terminated = torch.tensor([[True, False]])
    truncated = torch.tensor([[False, True]])
    adv, _ = mappo.compute_gae(rewards, zeros, torch.full((E, A), 99.0), terminated, truncated, final_values, 0.5, 0.9)
    assert adv[0, 0, 0].item() == 1.0  # r, no bootstrap
    assert adv[0, 1, 0].item() == 1.0 + 0.5 * 10.0  # r + gamma V(final obs), not V(next reset obs) = 99


def test_death_masking_critic_input_is_zeros_plus_id():
    E, A, O, S = 2, 3, 4, 5
    obs, env_state = torch.randn(E, A, O) + 3, torch.randn(E, S) + 3
    alive = torch.tensor([[True, False, True], [False, True, True]])
    ids = torch.eye(A)
    for state_type, width in [("as", S + O + A), ("ep", S + A)]:
        x = mappo.critic_input(obs, env_state, alive, ids, state_type, death_masking=True)
        assert x.shape == (E, A, width)
        for e, a in [(0, 1), (1, 0)]:
            expected = torch.cat([torch.zeros(width - A), ids[a]])
            assert torch.equal(x[e, a], expected)
        assert torch.equal(x[0, 0, :S], env_state[0])
        if state_type == "as":
            assert torch.equal(x[0, 0, S : S + O], obs[0, 0])
        assert torch.equal(x[0, 2, -A:], ids[2])
        unmasked = mappo.critic_input(obs, env_state, alive, ids, state_type, death_masking=False)
        assert torch.equal(unmasked[0, 1, :S], env_state[0])  # without death masking the dead agent sees the state


def test_cl_state_is_all_observations():
    obs = torch.randn(2, 3, 4)
    x = mappo.critic_input(obs, torch.zeros(2, 12), torch.ones(2, 3, dtype=torch.bool), torch.eye(3), "cl", True)
    assert x.shape == (2, 3, 12) and torch.equal(x[1, 2], obs[1].reshape(-1)) and torch.equal(x[1, 0], x[1, 2])


@pytest.mark.parametrize("state_type", ["as", "ep", "cl"])
def test_critic_input_of_a_rollout_equals_step_by_step(state_type):
    """The scripts build the critic's inputs once for the whole (T,E,A) rollout; each step must get what the per-step
    (E,A) call gives, so no step or env sees another's state or observations."""
    T, E, A, O, S = 3, 2, 3, 4, 5
    obs, env_state, alive = torch.randn(T, E, A, O), torch.randn(T, E, S), torch.rand(T, E, A) > 0.3
    x = mappo.critic_input(obs, env_state, alive, torch.eye(A), state_type, death_masking=True)
    for t in range(T):
        assert torch.equal(x[t], mappo.critic_input(obs[t], env_state[t], alive[t], torch.eye(A), state_type, True))


def test_actor_input_appends_one_hot_id():
    obs = torch.randn(4, 3, 5)
    x = mappo.actor_input(obs, torch.eye(3))
    assert x.shape == (4, 3, 8) and torch.equal(x[2, 1, 5:], torch.tensor([0.0, 1.0, 0.0]))


def test_presets_follow_the_paper_and_flags_win():
    args, _ = mappo.parse_args(["--env-id", "3m"])
    assert (args.num_envs, args.num_steps, args.learning_rate, args.update_epochs) == (8, 400, 5e-4, 15)
    assert (args.activation, args.state_type, args.gain, args.num_minibatches) == ("relu", "as", 0.01, 1)
    assert args.total_timesteps == 10_000_000  # the paper's SMAC budget
    args, _ = mappo.parse_args(["--env-id", "simple_spread_v3"])
    assert (args.num_envs, args.num_steps, args.learning_rate, args.update_epochs) == (128, 25, 7e-4, 10)
    assert (args.activation, args.state_type) == ("tanh", "cl")
    args, _ = mappo.parse_args(["--env-id", "5m_vs_6m"])
    assert (args.update_epochs, args.num_minibatches, args.gain) == (10, 1, 0.01)
    assert mappo.SMAC_MAP_PRESETS["MMM2"] == dict(update_epochs=5, num_minibatches=2, gain=1.0)  # SMAClite has MMM2
    args, _ = mappo.parse_args(["--env-id", "simple_spread_v3", "--update-epochs", "3", "--num-envs", "4"])
    assert (args.update_epochs, args.num_envs, args.num_steps) == (3, 4, 25)
    assert mappo.parse_args(["--env-id", "3s_vs_5z"])[0].num_stacked_frames == 4  # Table 12: MLP, 4 stacked frames
    assert mappo.parse_args(["--env-id", "3m"])[0].num_stacked_frames == 1


def test_hanabi_presets_ours_and_the_papers():
    args, _ = mappo.parse_args(["--env-id", "hanabi"])  # ours: the paper's settings at a scale for 2 CPU cores
    assert (args.num_envs, args.num_steps, args.hidden_dim, args.update_epochs) == (128, 100, 128, 15)
    assert (args.learning_rate, args.critic_learning_rate, args.ent_coef, args.death_masking) == (7e-4, 1e-3, 0.015, False)
    args, _ = mappo.parse_args(["--env-id", "hanabi", "--paper-preset"])  # Tables 7, 13
    assert (args.num_envs, args.num_steps, args.hidden_dim, args.num_layers, args.update_epochs) == (1000, 100, 512, 2, 15)
    assert (args.learning_rate, args.critic_learning_rate, args.ent_coef) == (7e-4, 1e-3, 0.015)
    assert (args.num_minibatches, args.gain, args.activation, args.paper_preset) == (1, 0.01, "relu", True)
    assert mappo.parse_args(["--env-id", "hanabi", "--paper-preset", "--num-envs", "16"])[0].num_envs == 16
    assert mappo.parse_args(["--env-id", "3m", "--paper-preset"])[0].num_envs == 8  # SMAC's defaults are the paper's


def test_hanabi_adapter_turns_and_legal_moves():
    """One player moves per env and turns alternate; the others' only legal move is the no-op (the last action);
    rewards are whole points and an episode's return (its score) lies in 0..25."""
    envs = mappo.make_env("hanabi", 4, seed=3)  # 4 envs: the size test_smoke_hanabi compiled already in this process
    nxt, rng = envs.reset(), np.random.default_rng(0)
    assert (envs.num_agents, envs.num_actions, envs.obs_dim) == (2, 21, 658)
    assert nxt["obs"].shape == (4, 2, 658) and nxt["env_state"].shape == (4, envs.state_dim) == (4, 2 * 5 * 25 + 2)
    ep_return, returns = np.zeros(4), []
    for _ in range(300):
        alive, avail = nxt["alive"], nxt["avail"]
        assert (alive.sum(1) == 1).all() and avail[alive].sum(-1).min() >= 1
        assert (avail[~alive] == np.eye(21, dtype=bool)[-1]).all()  # waiting: the no-op only
        nxt = envs.step((rng.random(avail.shape) * avail).argmax(-1))
        done = nxt["terminated"]
        assert not nxt["truncated"].any() and (nxt["reward"] == np.round(nxt["reward"])).all()
        assert (nxt["alive"][~done] == alive[~done][:, ::-1]).all()  # the turn passes to the other player
        assert (nxt["final_alive"][~done] == nxt["alive"][~done]).all()
        ep_return += nxt["reward"]
        returns += list(ep_return[done])
        ep_return[done] = 0
    assert len(returns) > 16 and all(0 <= r <= 25 for r in returns)


def test_a_jax_env_made_again_shares_its_jitted_calls():
    """One jitted call per env id and number of envs in a process, so it is compiled once (an async client's splits
    share it); each env keeps its own key and state."""
    a, b = mappo.HanabiVecEnv("hanabi", 4, seed=1), mappo.HanabiVecEnv("hanabi", 4, seed=2)
    assert a._reset is b._reset and a._step is b._step
    assert mappo.HanabiVecEnv("hanabi", 2, seed=1)._step is not a._step
    assert mappo.HanabiVecEnv("hanabi_3p", 4, seed=1)._step is not a._step
    assert mappo.SMAXVecEnv("3m", 4, seed=1)._step is not mappo.SMAXVecEnv("2s3z", 4, seed=1)._step  # nothing run
    assert not np.array_equal(a.reset()["obs"], b.reset()["obs"])  # other seeds, other deals


def test_computed_fields_are_not_flags(capsys):
    for flag in ("--batch-size", "--minibatch-size", "--num-iterations"):
        with pytest.raises(SystemExit) as exit_info:
            mappo.parse_args(["--env-id", "3m", flag, "5"])
        assert exit_info.value.code == 2 and flag in capsys.readouterr().err


def test_network_init_and_shapes():
    torch.manual_seed(0)
    actor, critic = mappo.Actor(10, 6, gain=0.01), mappo.Critic(20)
    x = torch.randn(7, 10)
    assert actor(x).shape == (7, 6) and critic(torch.randn(7, 20)).shape == (7,)
    assert actor(x).abs().max() < 0.2  # gain 0.01 head: near-uniform initial policy
    assert isinstance(actor.body[0], torch.nn.LayerNorm)  # feature normalisation on the input


class CountingEnv:
    """2 envs, 1 agent, obs = [t] at step t of each episode; env 1's episode ends after its second step."""

    num_envs, num_agents, num_actions, obs_dim, state_dim, has_wins, continuous = 2, 1, 2, 1, 1, False, False

    def reset(self):
        self.t = np.zeros(2)
        return self._out()

    def _out(self):
        obs = self.t.reshape(2, 1, 1).astype(np.float32)
        return dict(obs=obs, env_state=obs[:, 0], avail=np.ones((2, 1, 2), bool), alive=np.ones((2, 1), bool))

    def step(self, actions):
        self.t += 1
        done = np.array([False, self.t[1] == 2])
        final_obs = self.t.reshape(2, 1, 1).astype(np.float32)
        self.t[done] = 0
        out = self._out()
        out.update(reward=np.zeros(2, np.float32), terminated=done, truncated=np.zeros(2, bool), won=np.zeros(2, bool))
        return dict(out, final_obs=final_obs, final_state=final_obs[:, 0], final_alive=np.ones((2, 1), bool))


def test_frame_stack_order_and_episode_reset():
    envs = mappo.FrameStack(CountingEnv(), k=3)
    assert envs.obs_dim == 3
    out = envs.reset()
    np.testing.assert_array_equal(out["obs"][:, 0], [[0, 0, 0], [0, 0, 0]])
    out = envs.step(np.zeros((2, 1)))
    np.testing.assert_array_equal(out["obs"][:, 0], [[0, 0, 1], [0, 0, 1]])  # oldest first
    out = envs.step(np.zeros((2, 1)))
    np.testing.assert_array_equal(out["obs"][0, 0], [0, 1, 2])
    np.testing.assert_array_equal(out["obs"][1, 0], [0, 0, 0])  # env 1 started a new episode: zeros + its first obs
    np.testing.assert_array_equal(out["final_obs"][1, 0], [0, 1, 2])  # the stack that ended env 1's episode
    out = envs.step(np.zeros((2, 1)))
    np.testing.assert_array_equal(out["obs"][:, 0], [[1, 2, 3], [0, 0, 1]])


@pytest.mark.parametrize("script", ["mappo.py", "ippo.py", "mappo_rnn.py", "mappo_async_seed.py"])
def test_progress_line_piped_every_30_s_and_whole_at_80_columns(script, monkeypatch, capsys):
    """Piped (capsys is no terminal), a progress line comes at once, then none for 30 s, then the next; on an
    80-column terminal the status line keeps the step / total, SPS, both win rates and the ETA, whatever the env id. The
    ETA goes by the wall time since the warm-up (evaluations in), not by the SPS (training only); in the warm-up (the
    sitting's first iteration, JAX and torch compiling) there is neither SPS nor ETA, but the warm-up's time."""
    import importlib
    import os
    import shutil
    import sys
    from types import SimpleNamespace

    module = importlib.import_module(script[: -len(".py")])
    run = module.Run.__new__(module.Run)  # only what show_progress reads
    run.args, run.total, run.has_wins, run.printed = SimpleNamespace(env_id="smaclite/3s5z_vs_3s6z"), 10_000_000, True, 0.0
    run.latest = {"charts/SPS": 12345, "charts/win_rate": 0.5, "eval/win_rate": 0.25}
    run.warm = (0, 934.0)  # the warm-up's end: 9,600 steps in 96.1 s of wall time since, ~100 steps/s
    now = [1000.0]
    monkeypatch.setattr(module.time, "time", lambda: now[0])
    printed = []
    for step, seconds in ((3200, 0), (6400, 29.9), (9600, 0.2), (12800, 29.9)):
        now[0] += seconds
        run.show_progress(step)
        printed.append(capsys.readouterr().out)
    assert [bool(out) for out in printed] == [True, False, True, False]
    assert printed[2] == "step 9600/10000000 SPS 12345 ETA 1 day, 3:46:48 win 0.50 eval 0.25 | smaclite/3s5z_vs_3s6z\n"

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((80, 24)))
    now[0] = 934.0 + 128  # 12,800 steps in 128 s: 100 steps/s
    run.show_progress(12800, force=True)
    line = capsys.readouterr().out.removeprefix("\r\033[K")
    assert len(line) <= 79 and line.startswith("step 12800/10000000 SPS 12345 ETA 1 day, 3:44:32 win 0.50 eval 0.25"), line
    run.has_wins, run.latest = False, {"charts/SPS": 12345, "charts/episodic_return": -123.456, "eval/episodic_return": -99.0}
    run.show_progress(12800, force=True)
    assert capsys.readouterr().out.startswith(
        "\r\033[Kstep 12800/10000000 SPS 12345 ETA 1 day, 3:44:32 return -123.46 eval -99"
    )
    run.warm, run.latest = None, {"time/warmup": 48.3, "charts/episodic_return": -150.0}  # the first iteration
    run.show_progress(3200, force=True)
    assert capsys.readouterr().out.startswith("\r\033[Kstep 3200/10000000 SPS - ETA - (warm-up 48 s) return -150.00")


def test_quiet_puts_back_stdout_and_stderr():
    """Importing jaxmarl swaps sys.stdout and sys.stderr; quiet() puts both back, or the argument errors printed after
    the first SMAX import would miss a caller's capture (and tests/test_ippo.py's check of one failed when run alone)."""
    import io
    import sys

    out, err = sys.stdout, sys.stderr
    with mappo.quiet():
        sys.stdout, sys.stderr = io.StringIO(), io.StringIO()  # as the import does
    assert sys.stdout is out and sys.stderr is err


def test_eval_summary_medians_of_the_last_10_and_rows_without_nan():
    """The paper's metric: the median of the last 10 evaluations of each score; sampled scores only where evaluated;
    win rates None where the env has no wins"""
    nan = float("nan")
    rows = [[100 * i, i / 20, float(i), 2.0 * i, i / 40, nan, nan] for i in range(1, 13)]  # 12 evaluations, greedy only
    rows[-1][5:] = [0.5, 7.0]  # the last one also sampled (--eval-sampled switched on at a resume)
    summary = mappo.eval_summary(rows, has_wins=True)
    assert summary["median_win_rate"] == pytest.approx(np.median(np.arange(3, 13) / 20))  # rows 3..12
    assert summary["median_return"] == pytest.approx(7.5) and summary["wall_time"] == 24.0
    assert summary["median_train_win_rate"] == pytest.approx(np.median(np.arange(3, 13) / 40))
    assert summary["median_sampled_win_rate"] == 0.5 and summary["median_sampled_return"] == 7.0  # NaNs left out
    assert "sampled_win_rate" not in summary["evals"][0] and summary["evals"][-1]["sampled_return"] == 7.0
    assert summary["evals"][0] == dict(step=100, win_rate=0.05, episodic_return=1.0, wall_time=2.0, train_win_rate=0.025)
    no_wins = mappo.eval_summary([row[:5] + [nan, nan] for row in rows], has_wins=False)
    assert no_wins["median_win_rate"] is None and "median_sampled_return" not in no_wins
    assert set(no_wins["evals"][0]) == {"step", "episodic_return", "wall_time", "train_return"}
    no_training_episode = mappo.eval_summary([row[:4] + [nan, nan, nan] for row in rows], has_wins=True)
    assert "median_train_win_rate" not in no_training_episode and "train_win_rate" not in no_training_episode["evals"][0]


def test_to_move_picks_the_player_to_move():
    """--acting-rows-only: each step's row of the player to move, in step order, A becomes 1"""
    T, E, A = 5, 3, 2
    alive = torch.zeros(T, E, A, dtype=torch.bool)
    players = torch.randint(0, A, (T, E))
    alive[torch.arange(T)[:, None], torch.arange(E), players] = True
    x = torch.randn(T, E, A, 4)
    picked = mappo.to_move(x, alive)  # (T,E,1,4)
    assert picked.shape == (T, E, 1, 4)
    for t in range(T):
        for e in range(E):
            assert torch.equal(picked[t, e, 0], x[t, e, players[t, e]])
    assert mappo.to_move(torch.arange(T * E * A).view(T, E, A), alive).shape == (T, E, 1)
    two_then_none = torch.zeros(2, 1, 2, dtype=torch.bool)
    two_then_none[0] = True  # step 0: both players, step 1: none; as many rows as steps, still an error, not a mix-up
    for bad in (torch.ones(T, E, A, dtype=torch.bool), two_then_none):
        with pytest.raises(ValueError):
            mappo.to_move(torch.randn(*bad.shape, 4), bad)


def test_diag_gaussian_matches_torch_distributions():
    """Continuous actions: log-probability and entropy summed over the action dimensions, as torch's Normal gives them;
    the mode is the mean; sampling from a generator repeats; the log std learns (it has a gradient)"""
    mean, log_std = torch.randn(5, 3, 2), torch.tensor([0.3, -0.7], requires_grad=True)
    dist, reference = mappo.DiagGaussian(mean, log_std), torch.distributions.Normal(mean, log_std.exp())
    action = 2 * torch.randn(5, 3, 2)
    torch.testing.assert_close(dist.log_prob(action), reference.log_prob(action).sum(-1))
    torch.testing.assert_close(dist.entropy(), reference.entropy().sum(-1))
    assert dist.log_prob(action).shape == (5, 3) and torch.equal(dist.mode(), mean)
    draws = [dist.sample(torch.Generator().manual_seed(0)) for _ in range(2)]
    assert torch.equal(*draws) and draws[0].shape == (5, 3, 2)
    many = mappo.DiagGaussian(torch.zeros(100_000, 2), log_std.detach()).sample()
    torch.testing.assert_close(many.std(0), log_std.detach().exp(), rtol=0.02, atol=0.0)
    dist.log_prob(action).sum().backward()
    assert log_std.grad is not None and log_std.grad.abs().min() > 0
    assert isinstance(mappo.policy(mean, torch.ones(5, 3, 2, dtype=torch.bool), None), mappo.MaskedCategorical)


def test_continuous_rollout_clips_what_it_sends_not_what_it_scores(monkeypatch):
    """VMAS: the env receives the actions clipped to its bounds [-1, 1]; the rollout keeps the unclipped samples and
    their log-probabilities, so the update's ratio is of the distribution's own samples"""
    E, T = 4, 10
    envs = mappo.make_env("vmas/navigation", E, seed=0)
    A, O, U = envs.num_agents, envs.obs_dim, envs.num_actions
    actor, agent_ids = mappo.Actor(O + A, U, continuous=True), torch.eye(A)
    with torch.no_grad():
        actor.log_std.fill_(1.5)  # std 4.5: most samples fall outside the bounds
    sent, env_step = [], envs.env.step
    monkeypatch.setattr(envs.env, "step", lambda acts: sent.append(torch.stack(acts, 1).clone()) or env_step(acts))
    episodes = {"return": np.zeros(E), "length": np.zeros(E, dtype=np.int64), "finished": []}
    seen, _, _ = mappo.rollout(envs, actor, envs.reset(), T, agent_ids, "cpu", episodes, [])
    actions, logprobs = seen["actions"], seen["logprobs"]
    assert actions.shape == (T, E, A, U) and logprobs.shape == (T, E, A) and actions.abs().max() > 2
    with torch.no_grad():
        mean = actor(mappo.actor_input(torch.from_numpy(seen["obs"]), agent_ids))  # (T,E,A,U)
    torch.testing.assert_close(logprobs, mappo.DiagGaussian(mean, actor.log_std).log_prob(actions))
    sent = torch.stack(sent)  # (T,E,A,U)
    assert sent.abs().max() <= 1.0 and torch.equal(sent, actions.clamp(-1.0, 1.0))
