"""The scripts log the same numbers as before the restructure: every non-timing TensorBoard scalar of a few updates
(losses, PopArt statistics, training episodes, greedy evaluations) against tests/golden/, recorded at the commit named
in each recording. Each case is also the script's smoke test on that env: the step counter, the first ratio, the
evaluation summary. mappo_async_seed.py, synchronous with one env client, must log the numbers of mappo.py and mappo_rnn.py.

A case may hold one recording per kind of CPU: a run must log the numbers of one of them, whole. The 3m cases come out
differently on different CPUs (CI's machines until 2026-11-26, and an Intel Xeon with AVX512_SPR, where 186a62c and
1f574e2 log the same numbers to the tolerance below), and no tolerance can bridge that: multiplying the critic's input
by (1 + 1e-7), which moves some of its floats by one unit in the last place, moves the first update's critic_grad_norm
by 45 % and its value_loss by 2e-4 (at 2 threads; 15 epochs of Adam on one mini-batch). SMAX's floats depend on the
code XLA builds for the CPU (on one machine, --xla_cpu_max_isa=AVX, without FMA, changes them); which library differs
between the two CPUs was not found. The MPE cases log the same numbers on both.

    python tests/test_golden.py --record            # record every case again (after a deliberate change of numbers):
                                                    # one recording each, this machine's
    python tests/test_golden.py --record mappo.py   # the cases of one script; SMAClite's only where it is installed
    python tests/test_golden.py --add-machine       # on a CPU whose numbers match no recording, at a commit that matches
                                                    # one on a CPU that does: add this machine's where they differ
Each case runs a script for a few updates on the CPU with a fixed seed and writes every TensorBoard scalar except
timings to tests/golden/<script>__<env>.json."""

import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import network_namespaces, read_scalars, run_dirs, smaclite_missing

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SCRIPTS = {
    "mappo.py": [],
    "ippo.py": [],
    "mappo_rnn.py": [],
}  # script -> its own flags (mappo_async_seed.py at zero lag must log mappo.py's and mappo_rnn.py's: below)
ENV_FLAGS = {  # a few updates each: 3 on SMAX and MPE, 2 on SMAClite (SMAClite has no 3m: 2s3z is its smallest map here)
    "3m": ["--num-envs", "4", "--num-steps", "60", "--total-timesteps", "720", "--eval-episodes", "8"],
    "simple_spread_v3": ["--num-envs", "8", "--num-steps", "25", "--total-timesteps", "600", "--eval-episodes", "8"],
    "smaclite/2s3z": ["--num-envs", "2", "--num-steps", "40", "--total-timesteps", "160", "--eval-episodes", "2"]
    + ["--eval-interval", "1", "--num-workers", "2"],
}
COMMON = ["--seed", "1", "--no-cuda"]


def case_name(script: str, env_id: str) -> str:
    return f"{script[: -len('.py')]}__{env_id.replace('/', '-')}"


def command(script: str, env_id: str) -> list[str]:
    """The case's command line, relative to the repo root."""
    return [script, "--env-id", env_id, *COMMON, *ENV_FLAGS[env_id], *SCRIPTS[script]]


def scalars(run_dir) -> dict[str, list[list[float]]]:
    """A run's TensorBoard scalars -> {tag: [[step, value], ...]}, timings left out."""
    timings = ("time/", "stats/time_", "charts/SPS")
    return {t: [list(row) for row in rows] for t, rows in sorted(read_scalars(run_dir).items()) if not t.startswith(timings)}


# torch's CPU reductions sum in an order that depends on its number of threads (approx_kl moves in the 3rd decimal
# from 2 to 1): every case is recorded and checked with this many, whatever the machine's cores
THREADS = 2


@pytest.fixture(autouse=True)
def recorded_threads(monkeypatch):
    """The tests in this process, and the processes they start (mappo_async_seed.py's clients), at THREADS threads"""
    monkeypatch.setenv("OMP_NUM_THREADS", str(THREADS))
    threads = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    yield
    torch.set_num_threads(threads)


def logged(script: str, env_id: str) -> dict[str, list[list[float]]]:
    """Runs one case as a command, in a temporary folder, at THREADS threads -> its scalars"""
    with tempfile.TemporaryDirectory() as cwd:
        cmd = [sys.executable, str(ROOT / script), *command(script, env_id)[1:]]
        env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, timeout=900, env=env)
        [run_dir] = (Path(cwd) / "runs").iterdir()
        return scalars(run_dir)


CASES = [(script, env_id) for script in SCRIPTS for env_id in ENV_FLAGS]


def recorded(script: str, env_id: str) -> dict:
    return json.loads((GOLDEN / f"{case_name(script, env_id)}.json").read_text())


def assert_recorded_scalars(now: dict, scalars: dict):
    """Every recorded tag at the recorded steps, with the recorded values (to float32 rounding)"""
    for tag, rows in scalars.items():
        steps, values = np.array(rows).T
        now_steps, now_values = np.array(now[tag]).T
        np.testing.assert_array_equal(now_steps, steps, err_msg=tag)
        np.testing.assert_allclose(now_values, values, rtol=1e-4, atol=1e-6, err_msg=tag)


def assert_one_recording(now: dict, golden: dict):
    """now logs the numbers of one of the case's recordings (one per kind of CPU seen); else an AssertionError that
    shows each recording's first mismatch and names this machine"""
    mismatches = []
    for recording in golden["recordings"]:
        try:
            return assert_recorded_scalars(now, recording["scalars"])
        except AssertionError as e:
            mismatches.append(f"recorded at {recording['commit'][:8]} on {recording['machine']}:{e}")
    raise AssertionError(f"no recording matches; this machine: {machine()}\n" + "\n".join(mismatches))


def machine() -> str:
    """The CPU, as a recording names it: model name and SIMD extensions, from Linux's /proc/cpuinfo (x86 "flags", ARM
    "Features"), named as numpy names them (avx512_fp16 stands for numpy's AVX512_SPR)"""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    fields = dict(line.split(":", 1) for line in cpuinfo.splitlines() if ":" in line)  # the last CPU's, as all are alike
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set((fields.get("flags", "") + " " + fields.get("Features", "")).split())
    names = dict(avx2="AVX2", fma="FMA3", avx512f="AVX512F", avx512_fp16="AVX512_SPR", asimd="ASIMD", sve="SVE")
    simd = [name for flag, name in names.items() if flag in flags]
    return f"{fields.get('model name') or platform.processor() or 'unknown CPU'} ({platform.machine()}; {' '.join(simd)})"


def test_a_run_must_match_one_recording_whole():
    """One recording per CPU kind: a run passes on the numbers of one of them, not on a mix of the two"""
    a = {"losses/value_loss": [[240, 5.70843]], "losses/critic_grad_norm": [[240, 4.53282]]}
    b = {"losses/value_loss": [[240, 5.70742]], "losses/critic_grad_norm": [[240, 3.11772]]}
    golden = {
        "recordings": [dict(commit="a" * 40, machine="cpu a", scalars=a), dict(commit="b" * 40, machine="cpu b", scalars=b)]
    }
    assert_one_recording(b, golden)
    assert_one_recording(a, golden)
    mixed = {"losses/value_loss": a["losses/value_loss"], "losses/critic_grad_norm": b["losses/critic_grad_norm"]}
    with pytest.raises(AssertionError, match="no recording matches; this machine: .+\n.+on cpu a:(.|\n)+on cpu b:"):
        assert_one_recording(mixed, golden)


@pytest.mark.parametrize("script, env_id", CASES, ids=[case_name(*c) for c in CASES])
def test_same_numbers_as_recorded(train, tmp_path, script, env_id):
    if env_id.startswith("smaclite/") and smaclite_missing():
        pytest.skip(smaclite_missing())
    golden = recorded(script, env_id)
    assert golden["command"] == command(script, env_id), "the recorded case was run with other flags"
    assert train(*command(script, env_id)) == 0
    [run] = run_dirs(tmp_path)
    now = scalars(run)
    assert all(sorted(now) == sorted(r["scalars"]) for r in golden["recordings"]), "the set of logged tags changed"
    assert_one_recording(now, golden)

    # smoke: global_step counts env steps, one evaluation per update, and the PPO detail that the ratio is exactly 1
    # on the first mini-batch of the first epoch of every update
    cmd = command(script, env_id)
    num_envs, num_steps, total = (int(cmd[cmd.index(flag) + 1]) for flag in ("--num-envs", "--num-steps", "--total-timesteps"))
    batch = num_envs * num_steps
    assert [s for s, _ in now["losses/value_loss"]] == list(range(batch, total + 1, batch))
    assert all(v <= 1e-6 for _, v in now["losses/first_ratio_dev"])
    summary = json.loads((Path(run) / "eval_summary.json").read_text())
    is_smac = not env_id.startswith("simple_")
    assert summary["global_step"] == total and len(summary["evals"]) == total // batch
    assert (summary["median_win_rate"] is not None) == is_smac and ("win_rate" in summary["evals"][0]) == is_smac
    # beside each evaluation, the training score of the rollout before it
    key, tag = ("train_win_rate", "charts/win_rate") if is_smac else ("train_return", "charts/episodic_return")
    logged, rows = dict(now.get(tag, [])), [(e["step"], e.get(key)) for e in summary["evals"]]
    assert any(v is not None for _, v in rows), "no training score in the summary"
    assert all(logged.get(s) == pytest.approx(v, rel=1e-6) if v is not None else s not in logged for s, v in rows)


@pytest.mark.parametrize("script", ["mappo.py", "mappo_rnn.py"])
def test_env_on_device_logs_the_recorded_numbers(train, tmp_path, script):
    """--env-on-device on a CPU machine: SMAX's arrays reach torch by DLPack instead of as numpy copies, the rollout
    stays in torch tensors, and every recorded scalar comes out the same"""
    golden = recorded(script, "3m")
    assert train(*command(script, "3m"), "--env-on-device") == 0
    [run] = run_dirs(tmp_path)
    now = scalars(run)
    assert all(sorted(now) == sorted(r["scalars"]) for r in golden["recordings"])
    assert_one_recording(now, golden)


ZERO_LAG = ["--num-clients", "1", "--num-splits", "1", "--max-policy-lag", "0"]
ASYNC_CASES = [(base, env_id) for base in ("mappo.py", "mappo_rnn.py") for env_id in ENV_FLAGS]


@pytest.mark.parametrize("base, env_id", ASYNC_CASES, ids=[f"async_as_{case_name(*c)}" for c in ASYNC_CASES])
def test_async_at_zero_lag_logs_the_base_scripts_numbers(train, tmp_path, base, env_id):
    """mappo_async_seed.py with one client of one split and --max-policy-lag 0 (acting waits for every update) steps
    the same envs with the same seeds, samples the same actions and makes the same updates as mappo.py (--recurrent:
    as mappo_rnn.py): every scalar recorded for that script, its own stats/ tags aside, must come out the same."""
    if env_id.startswith("smaclite/") and smaclite_missing():
        pytest.skip(smaclite_missing())
    golden = recorded(base, env_id)
    recurrent = ["--recurrent"] if base == "mappo_rnn.py" else []
    assert train("mappo_async_seed.py", *command(base, env_id)[1:], *ZERO_LAG, *recurrent) == 0
    [run] = run_dirs(tmp_path)
    now = scalars(run)
    assert all(set(r["scalars"]) <= set(now) for r in golden["recordings"]), "a tag of the base script is missing"
    assert_one_recording(now, golden)
    assert all(v == 0 for _, v in now["stats/policy_lag_max"])


CONTINUOUS = [
    ("mappo.py", "simple_spread_v3_continuous"),
    ("mappo.py", "vmas/navigation"),
    ("mappo_rnn.py", "vmas/navigation"),
]


@pytest.mark.parametrize("base_script, env_id", CONTINUOUS, ids=[f"{s[:-3]}-{e}" for s, e in CONTINUOUS])
def test_async_at_zero_lag_with_continuous_actions_logs_the_base_scripts_numbers(train, tmp_path, base_script, env_id):
    """Continuous actions: mappo_async_seed.py's server samples the Gaussian policy, the client clips what it steps,
    the learner scores the unclipped sample; at zero lag with one client of one split, every scalar of mappo.py's run
    with the same flags (mappo_rnn.py's with --recurrent; a Gaussian policy too) comes out the same, its log std
    learned the same way"""
    flags = ["--env-id", env_id, *COMMON, "--num-envs", "4", "--num-steps", "25", "--total-timesteps", "300"]
    flags += ["--eval-episodes", "4", "--save-model"]
    assert train(base_script, *flags) == 0
    recurrent = ["--recurrent"] if base_script == "mappo_rnn.py" else []
    assert train("mappo_async_seed.py", *flags, *ZERO_LAG, *recurrent) == 0
    # run names: the env, then the script
    [base] = [run for run in run_dirs(tmp_path) if f"__{base_script[:-3]}__" in run]
    [seed] = [run for run in run_dirs(tmp_path) if "__mappo_async_seed__" in run]
    now = scalars(seed)
    assert_recorded_scalars(now, {tag: rows for tag, rows in scalars(base).items() if not tag.startswith("stats/")})
    assert len(now["losses/value_loss"]) == 3 and all(v == 0 for _, v in now["stats/policy_lag_max"])
    log_stds = [torch.load(next(Path(run).glob("*.pt")), weights_only=True)["actor"]["log_std"] for run in (base, seed)]
    assert log_stds[0].abs().min() > 0 and torch.equal(*log_stds)


def test_a_torchrun_launch_logs_the_base_scripts_numbers(tmp_path):
    """Launched by torchrun (env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and torchrun's own store on that port),
    rank 0 is the learner and rank 1 its env client, with no --role flag: at zero policy lag they log mappo.py's
    recorded numbers, as the script started alone does"""
    with socket.socket() as sock:  # a free port for torchrun's store
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    flags = [*command("mappo.py", "simple_spread_v3")[1:], "--num-splits", "1", "--max-policy-lag", "0"]
    launch = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2"]
    launch += ["--master-addr", "127.0.0.1", "--master-port", str(port), str(ROOT / "mappo_async_seed.py"), *flags]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    proc = subprocess.run(launch, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    [run] = run_dirs(tmp_path)  # one learner wrote logs
    assert_one_recording(scalars(run), recorded("mappo.py", "simple_spread_v3"))


def test_learner_and_two_clients_on_three_hosts_log_the_base_scripts_numbers(tmp_path):
    """The learner and two env clients each in a network namespace of its own (a host of its own: its own address on a
    bridge and its own loopback, so nothing between them can go over loopback), at zero policy lag with every split's
    request in each forward: they log mappo.py's recorded numbers on simple_spread_v3 (whose envs are seeded one by one,
    so two clients step what mappo.py's one process steps), tag for tag"""
    with network_namespaces(3) as hosts:
        (learner_ns, learner_if, learner_addr), *clients = hosts
        net = ["--master-addr", learner_addr, "--master-port", "29500"]
        flags = [*command("mappo.py", "simple_spread_v3")[1:], "--num-clients", "2", "--num-splits", "1"]
        flags += ["--max-policy-lag", "0", "--server-batch", "2", "--flush-timeout", "30"]
        script = str(ROOT / "mappo_async_seed.py")

        def start(ns, interface, *args):
            cmd = ["ip", "netns", "exec", ns, "env", f"GLOO_SOCKET_IFNAME={interface}", sys.executable, script, *args]
            return subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        procs = [start(learner_ns, learner_if, "--role", "learner", *net, *flags)]
        procs += [
            start(ns, interface, "--role", "client", "--rank", str(r), *net) for r, (ns, interface, _) in enumerate(clients, 1)
        ]
        try:
            outs = [p.communicate(timeout=600) for p in procs]
        finally:
            for p in procs:
                p.kill()
        assert [p.returncode for p in procs] == [0, 0, 0], "\n".join(o[1][-2500:] for o in outs)
    [run] = run_dirs(tmp_path)
    assert_one_recording(scalars(run), recorded("mappo.py", "simple_spread_v3"))


if __name__ == "__main__":
    mode = sys.argv[1:2]
    if mode not in (["--record"], ["--add-machine"]):
        sys.exit("usage: python tests/test_golden.py --record|--add-machine [script ...]   (pytest runs the tests)")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    for script in sys.argv[2:] or SCRIPTS:
        for env_id in ENV_FLAGS:
            if env_id.startswith("smaclite/"):
                try:
                    import smaclite  # noqa: F401
                except (ImportError, OSError):
                    print(f"skipped {script} {env_id}: SMAClite not installed")
                    continue
            path = GOLDEN / f"{case_name(script, env_id)}.json"
            recording = dict(commit=commit, machine=machine(), scalars=logged(script, env_id))
            recordings = [recording]
            if mode == ["--add-machine"]:
                golden = recorded(script, env_id)
                assert golden["command"] == command(script, env_id), f"{path.name} was recorded with other flags"
                try:
                    assert_one_recording(recording["scalars"], golden)
                    print(f"{path.relative_to(ROOT)}: a recording matches this machine's numbers, kept as it is")
                    continue
                except AssertionError:
                    recordings = [*golden["recordings"], recording]
            path.write_text(json.dumps(dict(command=command(script, env_id), recordings=recordings), indent=1))
            print(f"wrote {path.relative_to(ROOT)} ({len(recordings)} recording(s))")
