"""mappo_async_seed.py: the request messages, the policy-lag bound, recurrent hidden states kept by the server, presets
and input checks, checkpoints, shutdown (Ctrl-C, SIGTERM in the rendezvous, a killed client), multi-machine roles and
what listens on the network. That it acts exactly as mappo.py / mappo_rnn.py at zero lag: tests/test_golden.py."""

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, eval_only_win_rate, network_namespaces, read_scalars, run_dirs, smaclite_missing, wait_for_line

SCRIPT = "mappo_async_seed.py"
SMALL = ["--env-id", "3m", "--no-cuda", "--num-steps", "32", "--update-epochs", "2", "--eval-episodes", "4"]
# 3m episodes last 20-60 steps: with 64-step rollouts, chunks of 10 cross episode ends and the last chunk is padded
RECURRENT = ["--env-id", "3m", "--recurrent", "--no-cuda", "--num-steps", "64", "--update-epochs", "2"]
RECURRENT += ["--eval-episodes", "4", "--total-timesteps", "1536", "--eval-interval", "0"]
STORE_LINE = 'buf["actor_hs"][t, e] = h[i : i + k]'


def client_pids(cwd) -> list[int]:
    """Live env clients started in cwd (a test's tmp_path): clients of other runs on this machine are not this test's
    to count or kill, so no pgrep by pattern"""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            is_client = cmd[1].endswith(SCRIPT.encode()) and cmd[cmd.index(b"--role") + 1] == b"client"
            if is_client and os.readlink(proc / "cwd") == os.path.realpath(cwd):  # a zombie has no cwd
                pids.append(int(proc.name))
        except (OSError, ValueError, IndexError):  # not a process, gone meanwhile, or not a client
            continue
    return pids


def wait_no_clients(cwd, timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not client_pids(cwd):
            return True
        time.sleep(0.2)
    return False


def test_messages_round_trip():
    """A split's step survives the float32 message: observations, masks and outcomes; a reset sends zero outcomes."""
    import mappo_async_seed as m

    k, A, O, S, U = 3, 2, 5, 7, 4
    layout, rng = m.message_layout(k, A, O, S, U), np.random.default_rng(0)
    out = dict(obs=rng.standard_normal((k, A, O)).astype(np.float32), env_state=rng.standard_normal((k, S)).astype(np.float32))
    out.update(avail=rng.random((k, A, U)) > 0.5, alive=rng.random((k, A)) > 0.5, reward=np.float32([0.5, -1, 2]))
    out.update(
        terminated=np.array([True, False, False]), truncated=np.array([False, True, False]), won=np.array([1, 0, 0]) > 0
    )
    out.update(final_obs=out["obs"] + 1, final_state=out["env_state"] - 1, final_alive=~out["alive"])
    message = m.pack(out, layout, (1, 1, 2.5)).numpy()
    assert message.dtype == np.float32 and message.shape == (m.HEADER + sum(np.prod(s) for s in layout.values()),)
    assert message[: m.HEADER].tolist() == [1, 1, 2.5]
    back = m.unpack(message, layout)
    for key, value in out.items():
        assert back[key].dtype == value.dtype and np.array_equal(back[key], value), key
    reset = m.unpack(m.pack({k: out[k] for k in ("obs", "env_state", "avail", "alive")}, layout, (0, 0, 0.0)).numpy(), layout)
    assert not reset["terminated"].any() and not reset["reward"].any() and np.array_equal(reset["obs"], out["obs"])


def test_presets_and_flags():
    """--recurrent takes Async MAPPO's Table 2 batch and reuse on its maps (a flag wins), MAPPO's settings elsewhere;
    the split layout follows the client count."""
    import mappo_async_seed as m

    args, _ = m.parse_args(["--env-id", "5m_vs_6m", "--recurrent"])
    assert (args.num_envs, args.update_epochs, args.num_steps, args.data_chunk_length) == (60, 10, 400, 10)
    assert args.num_envs * args.num_steps == 7.5 * 8 * 400 and args.num_envs // (args.num_clients * args.num_splits) == 15
    args, _ = m.parse_args(["--env-id", "27m_vs_30m", "--recurrent", "--num-envs", "8"])  # 2x, reuse 5; a flag wins
    assert (args.num_envs, args.update_epochs) == (8, 5) and m.parse_args(["--env-id", "27m_vs_30m", "--recurrent"])[
        0
    ].num_envs == 16
    assert m.ASYNC_TABLE_2["MMM2"] == dict(num_envs=48, update_epochs=5)  # SMAX has no MMM2: smaclite/MMM2 takes it
    args, _ = m.parse_args(["--env-id", "5m_vs_6m"])  # feed-forward: MAPPO's serial batch
    assert (args.recurrent, args.num_envs, args.update_epochs) == (False, 8, 10)
    args, _ = m.parse_args(["--env-id", "3s_vs_5z"])  # MAPPO's MLP there stacks 4 frames, the GRU none
    assert args.num_stacked_frames == 4 and m.parse_args(["--env-id", "3s_vs_5z", "--recurrent"])[0].num_stacked_frames == 1
    args, _ = m.parse_args(["--env-id", "3m", "--num-clients", "4"])
    assert (args.num_envs, args.num_clients, args.num_splits, args.max_policy_lag) == (8, 4, 2, 1)  # 1 env per split


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--num-clients", "3"], "--num-envs 8 is not a multiple of 6 splits"),
        (["--num-clients", "1", "--server-batch", "3"], "--server-batch 3 exceeds the 2 requests that can wait"),
        (["--max-policy-lag", "-1"], "--max-policy-lag must be >= 0"),
        (["--num-splits", "0"], "--num-splits must be positive"),
        (["--recurrent", "--num-steps", "32", "--data-chunk-length", "33"], "--data-chunk-length 33 exceeds the rollout's"),
        (["--role", "client"], "--rank 0 must be 1 .. --num-clients"),
    ],
)
def test_bad_layout_exits_2(capfd, flags, message):
    import mappo_async_seed as m

    with pytest.raises(SystemExit) as exit_info:
        m.parse_args(["--env-id", "3m", *flags])
    assert exit_info.value.code == 2 and message in capfd.readouterr().err


def test_a_feed_forward_chunk_length_is_left_alone():
    import mappo_async_seed as m

    assert m.parse_args(["--env-id", "3m", "--num-steps", "32", "--data-chunk-length", "33"])[0].data_chunk_length == 33


def test_resume_derives_the_split_layout_again(tmp_path):
    """--resume takes the checkpoint's args as defaults; the split layout is computed again from the client count."""
    import dataclasses

    import mappo_async_seed as m

    saved, _ = m.parse_args(["--env-id", "3m"])  # 8 envs, 2 clients x 2 splits of 2
    path = tmp_path / "ckpt.pt"
    torch.save(dict(format="cleanmappo", script=SCRIPT, args=dataclasses.asdict(saved)), path)
    args, _ = m.parse_args(["--resume", str(path), "--num-clients", "4"])
    assert (args.num_envs, args.num_clients, args.num_splits) == (8, 4, 2)  # 1 env per split
    assert m.parse_args(["--resume", str(path)])[0].num_clients == 2  # 2 envs per split


def lag_and_ratio(run) -> tuple[list, list]:
    scalars = read_scalars(run)
    return [v for _, v in scalars["stats/policy_lag_max"]], [v for _, v in scalars["losses/first_ratio_dev"]]


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
@pytest.mark.parametrize("lag", [0, 1, 2])
def test_policy_lag_is_bounded(run_script, tmp_path, lag):
    """2 clients x 2 splits: no step is acted by a policy more than --max-policy-lag updates old; at 0 acting waits for
    every update, so the first ratio is exactly 1 in every update, as in mappo.py. An update (200 epochs) takes longer
    than a rollout here, so acting does run ahead, up to the bound."""
    flags = [*SMALL, "--max-policy-lag", lag, "--total-timesteps", "1280", "--eval-interval", "0", "--save-model"]
    run_script(SCRIPT, *flags, "--update-epochs", "200", timeout=600)
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    [run] = run_dirs(tmp_path)
    lags, ratio_devs = lag_and_ratio(run)
    assert len(lags) == 5 and lags[0] == 0 and max(lags) <= lag, lags
    assert all(dev <= 1e-6 for dev, max_lag in zip(ratio_devs, lags) if max_lag == 0), (ratio_devs, lags)
    if lag > 0:  # the learner is slower than acting here: the lag reaches its bound
        assert max(lags) == lag and max(ratio_devs) > 1e-6, (lags, ratio_devs)
    ckpt = torch.load(Path(run) / "mappo_async_seed.pt", weights_only=True)
    assert ckpt["iteration"] == 5 and ckpt["global_step"] == 1280 and ckpt["script"] == SCRIPT


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
def test_recurrent_hidden_states_rebuild_at_zero_lag(run_script, tmp_path):
    """--recurrent, 2 clients x 2 splits, synchronous: the learner's chunks, started from the hidden states the server
    stored, give back the server's log-probs (ratio 1) and the critic's values, with episodes ending inside chunks"""
    run_script(SCRIPT, *RECURRENT, "--max-policy-lag", "0", "--save-model", timeout=600)
    [run] = run_dirs(tmp_path)
    scalars = read_scalars(run)
    assert sum(v for _, v in scalars["charts/episodic_length"]) > 0, "no episode ended: resets inside chunks untested"
    lags, ratio_devs = lag_and_ratio(run)
    assert lags == [0, 0, 0] and max(ratio_devs) <= 1e-6, ratio_devs
    assert max(v for _, v in scalars["losses/first_value_dev"]) <= 1e-4
    ckpt = torch.load(Path(run) / "mappo_async_seed.pt", weights_only=True)
    assert ckpt["args"]["recurrent"] and "gru.weight_hh" in ckpt["actor"] and "gru.weight_hh" in ckpt["critic"]
    proc = run_script(SCRIPT, "--eval-only", Path(run) / "mappo_async_seed.pt", "--eval-episodes", "4")
    eval_only_win_rate(proc.stdout, 4)
    bad = run_script(SCRIPT, "--eval-only", Path(run) / "mappo_async_seed.pt", "--no-recurrent", check=False)
    assert bad.returncode == 2 and "do not match these flags" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
def test_ratio_test_catches_a_hidden_state_stored_one_step_late(run_script, tmp_path):
    """The server storing the state after step t instead of the one entering it must show in the first ratio."""
    source = (ROOT / SCRIPT).read_text()
    assert source.count(STORE_LINE) == 1, "the line moved: update the test"
    path = tmp_path / "mappo_async_seed_mutant.py"
    path.write_text(source.replace(STORE_LINE, 'buf["actor_hs"][t, e] = next_h[0, i : i + k].cpu().numpy()'))
    run_script(str(path), *RECURRENT, "--max-policy-lag", "0", env={"PYTHONPATH": str(ROOT)}, timeout=600)
    [run] = run_dirs(tmp_path)
    assert min(lag_and_ratio(run)[1]) > 1e-3


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
@pytest.mark.parametrize("env_id", ["simple_speaker_listener_v4", "smaclite/2s3z", "hanabi"])
def test_other_backends(run_script, tmp_path, env_id):
    """The MPE, SMAClite and Hanabi adapters in the clients: 4 envs = 2 clients x 2 splits x 1 env, two updates"""
    if env_id.startswith("smaclite/") and smaclite_missing():
        pytest.skip(smaclite_missing())
    flags = ["--env-id", env_id, "--no-cuda", "--num-envs", "4", "--num-steps", "32", "--update-epochs", "2"]
    run_script(SCRIPT, *flags, "--eval-episodes", "2", "--total-timesteps", "256", "--num-workers", "1", timeout=600)
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    [run] = run_dirs(tmp_path)
    scalars = read_scalars(run)
    assert [s for s, _ in scalars["charts/learning_rate"]] == [128, 256]
    for tag in ("losses/value_loss", "losses/policy_loss", "losses/entropy", "popart/std"):
        assert len(scalars[tag]) == 2 and all(v == v for _, v in scalars[tag]), tag  # no NaN
    assert "eval/episodic_return" in scalars and ("eval/win_rate" in scalars) == env_id.startswith("smaclite/")


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
def test_checkpoint_save_resume_eval_only(run_script, tmp_path):
    run_script(SCRIPT, *SMALL, "--total-timesteps", "512", "--save-model", "--seed", "3", timeout=600)
    [run] = run_dirs(tmp_path)
    path = Path(run) / "mappo_async_seed.pt"
    ckpt = torch.load(path, weights_only=True)
    assert ckpt["iteration"] == 2 and ckpt["global_step"] == 512 and ckpt["args"]["seed"] == 3  # steps trained on
    assert "popart.running_mean" in ckpt["critic"] and ckpt["actor_optimizer"]["state"]

    # resume: the checkpoint's args are the defaults; iterations, step counter and run directory go on
    run_script(SCRIPT, "--resume", path, "--total-timesteps", "1024", timeout=600)  # saves without --save-model
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    assert run_dirs(tmp_path) == [run]
    assert [s for s, _ in read_scalars(run)["charts/learning_rate"]] == [256, 512, 768, 1024]
    resumed = torch.load(path, weights_only=True)
    assert resumed["iteration"] == 4 and resumed["global_step"] == 1024 and len(resumed["evals"]) == 4
    assert not torch.equal(resumed["actor"]["head.weight"], ckpt["actor"]["head.weight"])  # it trained on

    proc = run_script(SCRIPT, "--eval-only", path, "--eval-episodes", "8", timeout=300)
    eval_only_win_rate(proc.stdout, 8)


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
def test_a_learner_busy_longer_than_the_client_timeout_keeps_its_clients(run_script, tmp_path):
    """While the learner updates, the server holds the requests of clients that ran --max-policy-lag rollouts ahead: a
    client waiting on us is not silent, however long the update takes."""
    flags = [*SMALL, "--update-epochs", "4000", "--total-timesteps", "512", "--client-timeout", "20"]
    run_script(SCRIPT, *flags, "--eval-interval", "100", timeout=900)
    [run] = run_dirs(tmp_path)
    updates = [v for _, v in read_scalars(run)["time/update"]]
    assert len(updates) == 2 and max(updates) > 20, updates  # the learner was busy longer than the timeout


def start_long_run(tmp_path, jax_cache, *flags) -> subprocess.Popen:
    """A 10M-step run, returned once its first update is logged (its progress line), with its clients alive. No
    evaluation: its env's compilation, beside the clients' on 2 cores, made the start 19 s longer with a cold cache.
    16 envs: 4 per split, the size the other tests compile (a size of its own took 20 s more with a cold cache)."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache)
    cmd = [sys.executable, str(ROOT / SCRIPT), *SMALL, "--num-envs", "16", "--total-timesteps", "10000000"]
    cmd += ["--eval-interval", "0", *flags]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = wait_for_line(proc, lambda line: line.startswith("step 512/"))
    assert line.startswith("step 512/") and len(client_pids(tmp_path)) == 2, line
    return proc


def kill_run(proc: subprocess.Popen, cwd) -> None:
    """a test's cleanup: its learner and its clients, whatever state the assertions left them in"""
    proc.kill()
    for pid in client_pids(cwd):
        os.kill(pid, signal.SIGKILL)


def test_sigint_checkpoint_and_children_gone(tmp_path, jax_cache):
    proc = start_long_run(tmp_path, jax_cache)
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err[-2000:]
        assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
        [run] = run_dirs(tmp_path)
        ckpt = torch.load(Path(run) / "mappo_async_seed.pt", weights_only=True)
        assert ckpt["iteration"] >= 1 and ckpt["global_step"] == 512 * ckpt["iteration"]
        assert f"interrupted at step {ckpt['global_step']}" in out
    finally:
        kill_run(proc, tmp_path)


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
def test_killed_client_stops_the_run_on_request(tmp_path, jax_cache):
    proc = start_long_run(tmp_path, jax_cache, "--stop-on-client-loss")
    try:
        os.kill(client_pids(tmp_path)[0], signal.SIGKILL)
        killed = time.time()
        out, err = proc.communicate(timeout=60)
        assert time.time() - killed < 30
        assert proc.returncode == 1 and "error: env client" in err and "Traceback" not in err, err[-2000:]
        assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
        assert "checkpoint at step" in out  # the last whole update is kept
    finally:
        kill_run(proc, tmp_path)


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_during_setup_takes_the_clients_down(tmp_path, jax_cache, sig):
    """SIGTERM or Ctrl-C as soon as the clients are started (the learner waits in the rendezvous, before its run's
    handlers are set): the learner ends at once with one line and exit 130, and its clients, which may still be
    importing, with it."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache)
    cmd = [sys.executable, str(ROOT / SCRIPT), *SMALL, "--total-timesteps", "10000000"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 600
        while time.time() < deadline and not client_pids(tmp_path):
            time.sleep(0.05)
        assert client_pids(tmp_path)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
        assert err.endswith(f"stopped ({signal.Signals(sig).name}) before training started: nothing to save\n")
        assert wait_no_clients(tmp_path, 5), client_pids(tmp_path)
    finally:
        kill_run(proc, tmp_path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
def test_rendezvous_errors_exit_2(tmp_path, jax_cache):
    """A learner whose --master-port is taken, a client with no learner to meet, a learner whose client never comes:
    exit 2 with one line, no traceback."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache)

    def run(*flags):
        cmd = [sys.executable, str(ROOT / SCRIPT), *flags]
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc = run("--role", "learner", "--master-port", str(busy.getsockname()[1]), *SMALL)
    assert proc.returncode == 2 and "cannot listen on 127.0.0.1" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("--role", "client", "--rank", "1", "--master-port", str(free_port()), "--client-timeout", "3")
    assert proc.returncode == 2 and "env client 1: no learner at 127.0.0.1:" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    proc = run("--role", "learner", "--master-port", str(free_port()), "--client-timeout", "3", "--num-clients", "1", *SMALL)
    assert proc.returncode == 2 and "1 of 2 processes joined within --client-timeout 3 s" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def listening(pids: list[int]) -> set[str]:
    """The addresses on which these processes have TCP sockets listening (/proc: no ss or netstat needed)"""
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with_target = os.readlink(fd) if fd.is_symlink() else ""
            if with_target.startswith("socket:["):
                inodes.add(with_target[len("socket:[") : -1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state, inode = line.split()[1], line.split()[3], line.split()[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                raw = bytes.fromhex(local.split(":")[0])
                if len(raw) == 4:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:  # four little-endian 32-bit words
                    found.add(socket.inet_ntop(socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))))
    return found


@pytest.mark.slow  # multi-process runs, minutes each: python -m pytest tests -m slow
def test_multi_machine_roles_on_loopback(tmp_path, jax_cache):
    """The learner and two clients started as separate commands, as on three hosts, against 127.0.0.1: nothing of
    theirs listens on any other address (the rendezvous store and gloo's sockets)."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache)
    env.pop("GLOO_SOCKET_IFNAME", None)
    net = ["--master-addr", "127.0.0.1", "--master-port", str(free_port())]
    learner = [sys.executable, str(ROOT / SCRIPT), "--role", "learner", *net, *SMALL, "--total-timesteps", "1024"]
    procs = [subprocess.Popen(learner, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)]
    for rank in (1, 2):
        client = [sys.executable, str(ROOT / SCRIPT), "--role", "client", "--rank", str(rank), *net]
        procs.append(subprocess.Popen(client, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env))
    try:
        line = wait_for_line(procs[0], lambda line: line.startswith("step 256/"))
        assert line.startswith("step 256/"), line
        addresses = listening([p.pid for p in procs])
        outs = [p.communicate(timeout=300) for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-1500:] for o in outs]
        assert addresses == {"127.0.0.1"}, addresses  # the store, and gloo's pairs, on loopback only
        [run] = run_dirs(tmp_path)
        assert [s for s, _ in read_scalars(run)["charts/learning_rate"]] == [256, 512, 768, 1024]
        assert json.loads((Path(run) / "eval_summary.json").read_text())["global_step"] == 1024
    finally:
        for p in procs:
            p.kill()


def test_a_rollout_leaves_a_lost_clients_envs_out():
    """The server's side alone (no processes): with client 1 of 2 lost, a rollout holds the other client's envs only,
    every array cut to them, and is taken once that client's splits are done; the budget's last envs cap it"""
    import mappo_async_seed as m

    args = m.Args(env_id="simple_spread_v3", num_envs=8, num_steps=3, num_clients=2, num_splits=2, max_policy_lag=0)
    acting = m.Acting.__new__(m.Acting)  # no threads, no process group: only what rollout() reads
    acting.args, acting.ring, acting.taken, acting.stats = args, 1, 0, dict(wait=0.0)
    acting.layout = m.message_layout(2, 3, 5, 4, 6)  # 2 envs per split, 3 agents
    acting.continuous = False  # discrete actions: (T,E,A)
    acting.buffers = [acting.new_buffer(3, 8, 3, 7)]
    acting.buffers[0]["obs"][:] = np.arange(8)[None, :, None, None]  # (T,E,A,O): each env's index
    acting.complete, acting.live, acting.procs = [{(0, 0), (1, 0)}], [False, True], []  # client 1 lost, done before
    acting.received, acting.answered, acting.last_seen = [0, 0], [0, 0], [time.time()] * 2
    acting.error, acting.requests, acting.cond = None, queue.Queue(), threading.Condition()
    run = type("Run", (), dict(signals=[], error=None))()
    done_late = threading.Timer(0.3, lambda: acting.complete[0].add((1, 1)))  # client 2's last split, after a while
    done_late.start()
    start = time.time()
    seen, out, acted = acting.rollout(run, max_envs=8)
    assert time.time() - start >= 0.3, "taken before the live client's last split was done"
    assert acted["envs"].tolist() == [4, 5, 6, 7]  # client 2's splits: envs 4-7
    assert seen["obs"].shape == (3, 4, 3, 5) and (seen["obs"][:, :, 0, 0] == np.array([4, 5, 6, 7])).all()
    assert seen["actions"].shape == seen["logprobs"].shape == (3, 4, 3) and seen["actor_hs"].shape == (3, 4, 3, 7)
    assert acted["versions"].shape == (3, 4) and out["obs"].shape == (4, 3, 5) and acting.complete == [set()]
    acting.complete = [{(1, 0), (1, 1)}]
    _, _, acted = acting.rollout(run, max_envs=2)  # the budget has steps left for 2 envs
    assert acted["envs"].tolist() == [4, 5]


def test_unpark_asks_each_request_once_and_keeps_every_live_one():
    """The server's choice of the parked requests that act now: every live client's request is either served or
    still parked, even where a buffer is freed while the server looks (publish() on the learner's thread); a lost
    client's requests go; the ready ones come in env order"""
    import mappo_async_seed as m

    acting = m.Acting.__new__(m.Acting)  # no threads, no process group
    acting.live = [True, False, True]  # client 1 lost
    slots = [(2, 1), (0, 1), (1, 0), (0, 0), (2, 0)]
    acting.parked = [dict(slot=slot, has_outcome=False, data=None) for slot in slots]
    answers = iter([False, True, True, False])  # a buffer freed between the asks: the same slot's answer flips
    asked = []
    acting.may_act = lambda slot: asked.append(slot) or next(answers)
    ready = acting.unpark()
    assert asked == [(2, 1), (0, 1), (0, 0), (2, 0)]  # each live request asked once, the lost client's not at all
    assert [r["slot"] for r in ready] == [(0, 0), (0, 1)]  # the ready ones, in env order
    assert [r["slot"] for r in acting.parked] == [(2, 1), (2, 0)]  # none lost between the answers


def test_lost_clients_the_run_goes_on_to_its_total(tmp_path):
    """Three env clients, each on a host of its own (network namespaces). Once the first update is logged, client 1 is
    killed (kill -9) mid-rollout and client 2's link goes down (no error reaches the learner: --client-timeout finds
    it). The learner trains on with client 3 alone to the same total env steps, its rollouts one client's envs from
    then on, the live clients logged, and its checkpoint whole; client 2 exits on its own, the learner unreachable.
    Meanwhile two more clients are refused with one line each: a rank that has joined already, other settings."""
    timeout = "12"  # the rendezvous of 4 processes on 2 busy cores, and how long client 2's silence takes to find
    with network_namespaces(4) as hosts:
        (learner_ns, learner_if, learner_addr), *clients = hosts
        net = ["--master-addr", learner_addr, "--master-port", "29500"]
        flags = ["--env-id", "simple_spread_v3", "--no-cuda", "--num-envs", "6", "--num-steps", "25", "--eval-episodes"]
        flags += ["4", "--total-timesteps", "1500", "--eval-interval", "10", "--num-clients", "3", "--num-splits", "1"]
        flags += ["--client-timeout", timeout, "--save-model"]

        def start(host, *args):
            ns, interface, _ = host
            cmd = ["ip", "netns", "exec", ns, "env", f"GLOO_SOCKET_IFNAME={interface}", sys.executable, str(ROOT / SCRIPT)]
            return subprocess.Popen([*cmd, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        learner = start(hosts[0], "--role", "learner", *net, *flags)
        procs = [start(host, "--role", "client", "--rank", str(r), *net) for r, host in enumerate(clients, 1)]
        try:
            line = wait_for_line(learner, lambda line: line.startswith("step 150/"), timeout=120)
            assert line.startswith("step 150/"), line
            procs[0].kill()  # ip netns exec runs the client in its own process: kill -9 ends it
            subprocess.run(["ip", "link", "set", clients[1][1].replace("cmv", "cmb"), "down"], check=True)  # bridge end
            refused = [start(clients[2], "--role", "client", "--rank", "3", *net)]
            refused.append(start(clients[2], "--role", "client", "--rank", "3", *net, "--env-id", "3m"))
            out, err = learner.communicate(timeout=120)
            client_outs = [p.communicate(timeout=30) for p in procs[1:] + refused]
        finally:
            for p in [learner, *procs, *refused]:
                p.kill()
    assert learner.returncode == 0, err[-3000:]
    assert [p.returncode for p in procs] == [-9, 1, 0]
    assert "env client 2: stopped, the learner is unreachable" in client_outs[0][1]
    assert "error: rank 3: this run's group has formed already" in client_outs[2][1] and refused[0].returncode == 2
    assert "runs another run: its --env-id is simple_spread_v3, this client's 3m" in client_outs[3][1]
    assert refused[1].returncode == 2 and "Traceback" not in err + client_outs[2][1] + client_outs[3][1]
    assert "warning: env client 1: connection lost" in err and f"warning: env client 2 sent nothing for {timeout} s" in err
    [run] = run_dirs(tmp_path)
    logged = read_scalars(run)
    steps = [s for s, _ in logged["stats/live_clients"]]
    live = [v for _, v in logged["stats/live_clients"]]
    rollouts = np.diff([0, *steps])  # env steps per rollout: 25 per env in it
    assert steps[-1] == 1500 and live[0] == 3 and live[-1] == 1 and (np.diff(live) <= 0).all()
    assert rollouts[0] == 150 and (rollouts[-3:] == 50).all()  # every env, then client 3's 2 envs only
    assert all(r % 50 == 0 and r <= 50 * n for r, n in zip(rollouts[1:], live[:-1]))  # whole clients, the live ones
    ckpt = torch.load(Path(run) / f"{SCRIPT[:-3]}.pt", weights_only=True)
    assert ckpt["global_step"] == 1500 and ckpt["iteration"] == len(steps) and ckpt["evals"][-1][0] == 1500


def test_a_killed_learner_takes_its_clients_down(tmp_path):
    """kill -9 of the learner mid-run: its env clients, started apart as on other hosts, exit within their timeout
    with one line each, and the checkpoint of its last whole update (--save-interval 1) loads with its counters"""
    net = ["--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--client-timeout", "20"]
    flags = ["--env-id", "simple_spread_v3", "--no-cuda", "--num-envs", "4", "--num-steps", "25", "--eval-interval", "0"]
    flags += ["--save-interval", "1"]
    cmd = [sys.executable, str(ROOT / SCRIPT)]
    learner = subprocess.Popen([*cmd, "--role", "learner", *net, *flags], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    clients = [
        subprocess.Popen([*cmd, "--role", "client", "--rank", str(r), *net], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        for r in (1, 2)
    ]
    try:
        line = wait_for_line(learner, lambda line: line.startswith("step 200/"), timeout=120)
        assert line.startswith("step 200/"), line
        learner.kill()
        killed = time.time()
        errs = [c.communicate(timeout=20)[1] for c in clients]
        assert time.time() - killed < 20
    finally:
        for p in [learner, *clients]:
            p.kill()
    assert [c.returncode for c in clients] == [1, 1], errs
    assert all("stopped, the learner is gone" in err and "Traceback" not in err for err in errs), errs
    [run] = run_dirs(tmp_path)
    ckpt = torch.load(Path(run) / f"{SCRIPT[:-3]}.pt", weights_only=True)  # written whole or not at all
    assert ckpt["iteration"] >= 2 and ckpt["global_step"] == 100 * ckpt["iteration"]  # 4 envs x 25 steps an update
