"""mappo_async_seed.py: the batching server, async and serial runs, checkpoints, shutdown, a lost client, multi-machine
roles (and the rendezvous port listening on loopback only)."""

import json
import os
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

from conftest import ROOT, eval_only_win_rate, read_scalars, run_dirs, smaclite_missing, wait_for_line

SCRIPT = "mappo_async_seed.py"
SMALL = ["--env-id", "3m", "--no-cuda", "--num-steps", "32", "--update-epochs", "2", "--eval-episodes", "4"]


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


def make_server(server_batch: int, flush_timeout: float):
    import mappo_async_seed as m

    actor = m.Actor(in_dim=4 + 2, num_actions=3)
    server = m.InferenceServer(actor, torch.eye(2), 4, server_batch, flush_timeout, 3, 1, torch.device("cpu"), {})
    server.publish(actor)
    return m, server


def request(k=2):
    return dict(obs=np.zeros((k, 2, 4), np.float32), env_state=np.zeros((k, 5), np.float32), avail=np.ones((k, 2, 3), bool))


def test_server_flushes_a_partial_batch():
    """3 requests outstanding, a batch size of 2: the third is answered after the flush timeout, never left waiting."""
    m, server = make_server(server_batch=2, flush_timeout=0.05)
    server.thread = threading.Thread(target=server.run, daemon=True)
    server.thread.start()
    futures = [torch.futures.Future() for _ in range(3)]
    for client, future in enumerate(futures):
        server.submit((client, 0), dict(request(), alive=np.ones((2, 2), bool)), future)
    deadline = time.time() + 2.0
    while time.time() < deadline and not all(f.done() for f in futures):
        time.sleep(0.01)
    assert all(f.done() for f in futures), "a partial batch was never run"
    assert all(f.value().shape == (2, 2) for f in futures)
    assert sorted(server.take_stats()["batch_sizes"]) == [1, 2]
    server.stopping.set()
    server.thread.join(timeout=2)
    late = torch.futures.Future()
    server.submit((0, 0), dict(request(), alive=np.ones((2, 2), bool)), late)
    assert late.done() and late.value() is None  # after the end, a request is told to stop


def test_server_error_fails_the_waiting_clients_and_the_learner():
    """A request the server cannot batch (another observation width: a remote client with another env version) kills
    no one silently: the waiting clients get the error, and the learner's wait for segments raises at once."""
    m, server = make_server(server_batch=2, flush_timeout=0.5)
    server.thread = threading.Thread(target=server.run, daemon=True)  # started after both requests: one batch
    wide = dict(obs=np.zeros((2, 2, 5), np.float32), env_state=np.zeros((2, 5), np.float32), avail=np.ones((2, 2, 3), bool))
    futures = [torch.futures.Future(), torch.futures.Future()]
    server.submit((0, 0), dict(request(), alive=np.ones((2, 2), bool)), futures[0])
    server.submit((1, 0), dict(wide, alive=np.ones((2, 2), bool)), futures[1])
    server.thread.start()
    server.thread.join(timeout=5)
    assert not server.thread.is_alive() and all(f.done() for f in futures)
    for future in futures:
        with pytest.raises(ValueError):
            future.wait()
    start = time.time()
    with pytest.raises(m.RunFailed, match="the inference server failed: ValueError"):
        m.collect_segments(server, 3, server.version, 4, [], client_timeout=60.0)
    assert time.time() - start < 1.0
    late = torch.futures.Future()
    server.submit((2, 0), dict(request(), alive=np.ones((2, 2), bool)), late)
    assert late.done() and late.value() is None  # the run is over: a later request is told to stop


def test_stop_clients_runs_once(monkeypatch, tmp_path):
    """The Ctrl-C branch stops the clients, and the `finally` under it stops them again if that branch itself raised
    (a full disk at the checkpoint): the second call must not shut RPC down twice nor touch the children again."""
    m, server = make_server(server_batch=1, flush_timeout=0.0)
    shutdowns = []
    monkeypatch.setattr(m.rpc, "shutdown", lambda graceful=True: shutdowns.append(graceful))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    store = tmp_path / "store"
    store.mkdir()
    m.stop_clients(server, [child], 2, str(store), timeout=1.0)
    assert child.poll() is not None and not store.exists() and shutdowns == [False]
    store.mkdir()
    m.stop_clients(server, [child], 2, str(store), timeout=1.0)
    assert shutdowns == [False] and store.exists()  # the second call did nothing


def test_wait_actions_outlasts_the_rpc_timeout_while_the_learner_answers(monkeypatch):
    """A client waits for its actions as long as the learner is busy, pinging it every rpc_timeout seconds, and stops
    waiting with the ping's error once the learner is gone."""
    import mappo_async_seed as m

    pings = []
    monkeypatch.setattr(m.rpc, "rpc_sync", lambda to, fn, timeout: pings.append((to, fn, timeout)))
    future = torch.futures.Future()
    threading.Timer(1.0, future.set_result, args=("actions",)).start()  # answered 4 rpc timeouts later
    assert m.wait_actions(future, 0.25) == "actions"
    assert 2 <= len(pings) <= 5 and all(p == ("learner", m.learner_alive, 0.25) for p in pings)

    def gone(to, fn, timeout):
        raise RuntimeError("connection refused")

    monkeypatch.setattr(m.rpc, "rpc_sync", gone)
    with pytest.raises(RuntimeError, match="connection refused"):
        m.wait_actions(torch.futures.Future(), 0.1)  # never answered: the ping ends the wait


def test_segment_records_outcomes_and_bootstrap():
    """A slot's segment: T steps with their outcomes, the bootstrap observation, the acting version; complete after the
    outcome of step T-1 arrives."""
    m, server = make_server(server_batch=1, flush_timeout=0.0)
    T, slot = 4, (0, 0)
    for t in range(T + 1):
        data = dict(request(), alive=np.ones((2, 2), bool))
        data["obs"][:] = t
        if t > 0:
            data.update(reward=np.full(2, t, np.float32), terminated=np.array([t == 2, False]), truncated=np.zeros(2, bool))
            data.update(won=np.array([t == 2, False]), final_obs=data["obs"], final_state=data["env_state"])
            data["final_alive"] = data["alive"]
        if t == T:
            assert server.ready.empty()  # not complete before the outcome of step T-1
        server.record(slot, data)
        server.record(slot, data)  # idempotent
        if t < T:
            server.infer([(slot, data, None)])
    seg = server.ready.get_nowait()
    assert seg["obs"][:, 0, 0, 0].tolist() == [0, 1, 2, 3] and seg["next_obs"][0, 0, 0] == 4
    assert seg["rewards"][:, 0].tolist() == [1, 2, 3, 4]  # the outcome of step t arrives with observation t+1
    assert seg["terminated"][:, 0].tolist() == [False, True, False, False]
    assert seg["versions"].tolist() == [1, 1, 1, 1]
    episodes = server.take_stats()["episodes"]
    assert len(episodes) == 1 and episodes[0][0] == 1 + 2 and episodes[0][2] is True  # env 0: return 3, won


# both in the slow tier for CI's time: CI runs an async run with clients in test_sigint_checkpoint_and_children_gone
# and the serial path in tests/test_golden.py
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "serial"])
def test_smoke_and_clean_end(run_script, tmp_path, mode):
    flags = [*SMALL, "--total-timesteps", "512", "--save-model"] + (["--no-async"] if mode == "serial" else [])
    run_script(SCRIPT, *flags, timeout=300, env=own_tmpdir(tmp_path))
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    assert not list((tmp_path / "tmp").glob("cleanmappo_rpc_*"))  # the rendezvous folder is removed at the end
    [run] = run_dirs(tmp_path)
    scalars = read_scalars(run)
    assert len(scalars["charts/SPS"]) == 2  # 512 // (8 envs x 32 steps) updates
    for tag in ("losses/value_loss", "losses/policy_loss", "stats/policy_lag", "stats/server_batch_size"):
        assert len(scalars[tag]) == 2 and all(v == v for _, v in scalars[tag]), tag
    ckpt = torch.load(Path(run) / "mappo_async_seed.pt", weights_only=True)
    assert ckpt["iteration"] == 2 and ckpt["script"] == SCRIPT
    if mode == "serial":  # no policy lag: the first ratio is exactly 1, as in mappo.py
        assert all(v == 0 for _, v in scalars["stats/policy_lag"])
        assert len(scalars["losses/first_ratio_dev"]) == 2 and all(v <= 1e-6 for _, v in scalars["losses/first_ratio_dev"])


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
@pytest.mark.parametrize("env_id", ["simple_spread_v3", "simple_speaker_listener_v4", "smaclite/2s3z"])
def test_smoke_other_backends(run_script, tmp_path, env_id):
    """The MPE and SMAClite adapters in the clients: 4 envs = 2 clients x 2 splits x 1 env, two updates"""
    if env_id.startswith("smaclite/") and smaclite_missing():
        pytest.skip(smaclite_missing())
    flags = ["--env-id", env_id, "--no-cuda", "--num-envs", "4", "--num-steps", "32", "--update-epochs", "2"]
    run_script(SCRIPT, *flags, "--eval-episodes", "2", "--total-timesteps", "256", "--num-workers", "1", timeout=300)
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    [run] = run_dirs(tmp_path)
    scalars = read_scalars(run)
    assert len(scalars["charts/SPS"]) == 2
    for tag in ("losses/value_loss", "losses/policy_loss", "losses/entropy", "popart/std"):
        assert len(scalars[tag]) == 2 and all(v == v for _, v in scalars[tag]), tag  # no NaN
    assert "eval/episodic_return" in scalars and ("eval/win_rate" in scalars) == env_id.startswith("smaclite/")
    summary = json.loads((Path(run) / "eval_summary.json").read_text())  # MPE has no win: none written
    assert (summary["median_win_rate"] is None) == ("win_rate" not in summary["evals"][0]) == env_id.startswith("simple_")


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
def test_checkpoint_save_resume_eval_only(run_script, tmp_path):
    run_script(SCRIPT, *SMALL, "--total-timesteps", "512", "--save-model", "--seed", "3", timeout=300)
    [run] = run_dirs(tmp_path)
    path = Path(run) / "mappo_async_seed.pt"
    ckpt = torch.load(path, weights_only=True)
    # the clients run ahead of the learner, so the server may have stepped more than the two batches trained on
    assert ckpt["iteration"] == 2 and ckpt["global_step"] >= 512 and ckpt["args"]["seed"] == 3
    assert "popart.running_mean" in ckpt["critic"] and ckpt["actor_optimizer"]["state"]

    # resume: the checkpoint's args are the defaults; iterations, step counter and run directory continue
    run_script(SCRIPT, "--resume", path, "--total-timesteps", "1024", timeout=300)  # saves without --save-model
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    assert run_dirs(tmp_path) == [run]
    steps = [s for s, _ in read_scalars(run)["charts/SPS"]]
    assert len(steps) == 4 and steps == sorted(steps) and steps[2] > ckpt["global_step"]
    resumed = torch.load(path, weights_only=True)
    assert resumed["iteration"] == 4 and resumed["args"]["seed"] == 3 and resumed["args"]["num_envs"] == 8
    assert len(resumed["evals"]) == 4
    assert not torch.equal(resumed["actor"]["head.weight"], ckpt["actor"]["head.weight"])  # it trained on

    proc = run_script(SCRIPT, "--eval-only", path, "--eval-episodes", "8", timeout=300)
    eval_only_win_rate(proc.stdout, 8)


def own_tmpdir(tmp_path) -> dict:
    """TMPDIR for a run: tmp_path/tmp, so that a test sees what the run leaves in the temp dir"""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {"TMPDIR": str(tmp_path / "tmp")}


def start_long_run(tmp_path, jax_cache) -> subprocess.Popen:
    """A 10M-step async run, returned once its first progress line is printed (one update done). Its temporary files
    go to tmp_path/tmp."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache, **own_tmpdir(tmp_path))
    cmd = [sys.executable, str(ROOT / SCRIPT), *SMALL, "--total-timesteps", "10000000"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = wait_for_line(proc, lambda line: line.startswith("3m step "))  # a progress line, not the rounding note
    assert line.startswith("3m step ") and client_pids(tmp_path), line
    return proc


def kill_run(proc: subprocess.Popen, cwd) -> None:
    """a test's cleanup: its learner and its clients, whatever state the assertions left them in"""
    proc.kill()
    for pid in client_pids(cwd):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
def test_a_learner_busy_longer_than_the_rpc_timeout_keeps_its_clients(run_script, tmp_path):
    """While the learner updates, the server holds the clients' requests (its ready queue is full). An update that
    takes longer than --rpc-timeout used to time the clients out, which ended the run (exit 1); now they wait."""
    timeout = 20  # also the rendezvous limit: room for the clients to start on a loaded machine
    flags = [*SMALL, "--update-epochs", "4000", "--total-timesteps", "512", "--rpc-timeout", timeout]
    run_script(SCRIPT, *flags, "--eval-interval", "100", timeout=600, env=own_tmpdir(tmp_path))
    [run] = run_dirs(tmp_path)
    updates = [v for _, v in read_scalars(run)["time/update"]]
    assert len(updates) == 2 and max(updates) > timeout, updates  # the learner was busy longer than the timeout


def test_sigint_checkpoint_and_children_gone(tmp_path, jax_cache):
    proc = start_long_run(tmp_path, jax_cache)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)
    assert not list((tmp_path / "tmp").glob("cleanmappo_rpc_*"))  # and after Ctrl-C
    [run] = run_dirs(tmp_path)
    assert torch.load(Path(run) / "mappo_async_seed.pt", weights_only=True)["iteration"] >= 1


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
def test_sigterm_during_setup_takes_the_clients_down(tmp_path, jax_cache):
    """SIGTERM as soon as the clients are started (the learner then blocks in the RPC rendezvous, where no Python
    handler runs): the learner ends at once and its clients with it, though they wait in the rendezvous too (or are
    still importing). Before: the learner died alone and its clients waited out the rendezvous."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache)
    cmd = [sys.executable, str(ROOT / SCRIPT), *SMALL, "--total-timesteps", "10000000"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 600
        while time.time() < deadline and not client_pids(tmp_path):
            time.sleep(0.05)
        assert client_pids(tmp_path)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGTERM, err[-2000:]
        assert wait_no_clients(tmp_path, 30), client_pids(tmp_path)
    finally:
        kill_run(proc, tmp_path)


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
def test_killed_client_is_noticed(tmp_path, jax_cache):
    proc = start_long_run(tmp_path, jax_cache)
    [victim, *_] = client_pids(tmp_path)
    os.kill(victim, signal.SIGKILL)
    killed = time.time()
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        kill_run(proc, tmp_path)
    assert time.time() - killed < 30
    assert proc.returncode == 1 and "env client" in err and "exited" in err, err[-2000:]
    assert wait_no_clients(tmp_path, 10), client_pids(tmp_path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_batch_that_can_never_fill_exits_2(capfd):
    """One client with two splits has at most two requests waiting: a batch of three would wait out the flush
    timeout before every forward. A client does not check it: its --num-clients is not the run's."""
    import mappo_async_seed as m

    flags = [*SMALL, "--num-splits", "2", "--server-batch", "3"]
    with pytest.raises(SystemExit) as exit_info:
        m.parse_args([*flags, "--num-clients", "1"])
    assert exit_info.value.code == 2 and "--server-batch 3 exceeds the 2 requests" in capfd.readouterr().err
    assert m.parse_args([*flags, "--num-clients", "2"])[0].server_batch == 3
    assert m.parse_args([*flags, "--num-clients", "1", "--role", "client", "--rank", "1"])[0].server_batch == 3


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
def test_rendezvous_errors_exit_2(tmp_path, jax_cache):
    """A learner whose --master-port is taken, and a client with no learner to meet: exit 2 with a message."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        net = ["--master-addr", "127.0.0.1", "--master-port", str(busy.getsockname()[1]), "--world-size", "2"]
        learner = [sys.executable, str(ROOT / SCRIPT), "--role", "learner", *net, *SMALL]
        proc = subprocess.run(learner, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2 and "cannot listen on 127.0.0.1" in proc.stderr and "Traceback" not in proc.stderr
    net = ["--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--world-size", "2", "--rpc-timeout", "3"]
    client = [sys.executable, str(ROOT / SCRIPT), "--role", "client", "--rank", "1", *net]
    env.pop("TORCH_CPP_LOG_LEVEL", None)  # as a user's shell has it (importing the script here set it in os.environ)
    proc = subprocess.run(client, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "no rendezvous with the learner" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "frame #" not in proc.stderr  # one line, no C++ stack dump
    # a learner whose client never comes: torch's own start-up would wait ~25 days for it
    net = ["--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--world-size", "2", "--rpc-timeout", "3"]
    learner = [sys.executable, str(ROOT / SCRIPT), "--role", "learner", *net, *SMALL]
    proc = subprocess.run(learner, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "1 of 2 processes joined within --rpc-timeout 3 s" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def listening_addresses(port: int) -> set[str]:
    """IPv4/IPv6 addresses with a TCP socket listening on port, from /proc/net/tcp{,6} (no ss/netstat needed)"""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    raw = bytes.fromhex(address)
                    if len(raw) == 4:
                        found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                    else:  # four little-endian 32-bit words
                        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                        found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


@pytest.mark.slow  # long multi-process runs: python -m pytest tests -m slow
def test_multi_machine_roles_on_loopback(tmp_path, jax_cache):
    """The learner and two clients started as separate commands, as on three hosts, against 127.0.0.1."""
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache)
    net = ["--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--world-size", "3"]
    learner = [sys.executable, str(ROOT / SCRIPT), "--role", "learner", *net, *SMALL, "--total-timesteps", "512"]
    procs = [subprocess.Popen(learner, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)]
    for rank in (1, 2):
        client = [sys.executable, str(ROOT / SCRIPT), "--role", "client", "--rank", str(rank), *net]
        procs.append(
            subprocess.Popen(client, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        )
    port, deadline, addresses = int(net[3]), time.time() + 120, set()
    while not addresses and time.time() < deadline and procs[0].poll() is None:
        addresses = listening_addresses(port)
        time.sleep(0.05)
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-1500:] for o in outs]
    assert addresses == {"127.0.0.1"}  # the rendezvous store listens on --master-addr only, not on every interface
    [run] = run_dirs(tmp_path)
    assert len(read_scalars(run)["charts/SPS"]) == 2
