"""benchmark/mava/mava_baseline.py, checked without Mava: a stand-in rec_mappo.py writes what Mava's writes (hydra's
composed config under outputs/, marl-eval's metrics.json under logger.base_exp_path). The runner's rows, meta, the
environment it gives the run, its failures, and that its child does not outlive it."""

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "benchmark", "mava", "mava_baseline.py")

# what rec_mappo.py writes, reduced: evaluations every 2 updates of 16,384 env steps, win rates in percent
FAKE_REC_MAPPO = """import json, os, sys, time
args = dict(a.split("=", 1) for a in sys.argv[1:])
with open(os.path.join(os.environ["PROBE"], "child"), "w") as f:
    json.dump(dict(pid=os.getpid(), args=args, cwd=os.getcwd(), neptune=os.environ.get("NEPTUNE_MODE"),
                   jax=os.environ.get("JAX_PLATFORMS"), prealloc=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")), f)
if os.environ.get("FAKE_SLEEP"):
    time.sleep(float(os.environ["FAKE_SLEEP"]))
os.makedirs("outputs/2026-12-01/19-00-00/.hydra")
with open("outputs/2026-12-01/19-00-00/.hydra/config.yaml", "w") as f:
    f.write("arch:\\n  evaluation_greedy: false\\n  num_eval_episodes: 32\\nsystem:\\n  seed: %s\\n" % args["system.seed"])
steps = {f"step_{k}": dict(step_count=32768 * (k + 1), elapsed_time=10.0 * k, mean_episode_returns=[0.5 + k],
                           mean_episode_length=[40.0], steps_per_second=[1e3], win_rate=[5.0 * k]) for k in range(12)}
steps["step_12"] = dict(step_count=32768 * 13, elapsed_time=120.0)  # an evaluation being written: no win rate yet
run = dict(absolute_metrics=dict(win_rate=[62.5]), **steps)
os.makedirs(os.path.join(args["logger.base_exp_path"], "json", "smax"))
with open(os.path.join(args["logger.base_exp_path"], "json", "smax", "metrics.json"), "w") as f:
    json.dump({"HeuristicEnemySMAX": {args["env.scenario"]: {"rec_mappo": {"seed_" + args["system.seed"]: run}}}}, f)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


def fake_mava(tmp_path):
    systems = tmp_path / "mava" / "mava" / "systems"
    systems.mkdir(parents=True, exist_ok=True)
    (systems / "rec_mappo.py").write_text(FAKE_REC_MAPPO)
    return tmp_path / "mava"


def run_runner(tmp_path, *extra, env=None, wait=True):
    argv = [sys.executable, RUNNER, "--mava-dir", str(fake_mava(tmp_path)), "--map", "10m_vs_11m", "--seed", "2"]
    argv += ["--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "out.json"), *extra]
    env = dict(os.environ, PROBE=str(tmp_path), **(env or {}))
    if not wait:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def test_rows_are_the_evaluations_in_step_order_as_fractions(tmp_path):
    """step_10 comes after step_9 (not after step_1), the evaluation still being written is left out; meta names the
    SMAX release installed beside the runner, the config's metric and the absolute metric; the child ran in the run
    folder with the map, the seed and --set, Neptune offline and JAX on the CPU without preallocation"""
    done = run_runner(tmp_path, "--set", "system.num_updates=24")
    assert done.returncode == 0, done.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert [r["step"] for r in out["rows"]] == [32768 * (k + 1) for k in range(12)]
    assert [r["win_rate"] for r in out["rows"]] == pytest.approx([0.05 * k for k in range(12)])
    assert out["rows"][11]["episodic_return"] == 11.5 and out["rows"][11]["mava_elapsed_time"] == 110.0
    meta = out["meta"]
    jaxmarl = importlib.metadata.version("jaxmarl")
    assert meta["smax"] == f"jaxmarl {jaxmarl}" and meta["map"] == "10m_vs_11m" and meta["seed"] == 2
    assert meta["evaluation_greedy"] is False and meta["episodes_per_evaluation"] == 32
    assert meta["absolute_metric_win_rate"] == 0.625 and meta["wall_time"] > 0
    assert out["config"]["system"]["seed"] == 2
    child = json.loads((tmp_path / "child").read_text())
    assert child["cwd"] == str(tmp_path / "run") and child["args"]["logger.base_exp_path"] == str(tmp_path / "run")
    assert child["args"]["env.scenario"] == "10m_vs_11m" and child["args"]["system.num_updates"] == "24"
    assert (child["neptune"], child["jax"], child["prealloc"]) == ("debug", "cpu", "false")
    again = run_runner(tmp_path)  # the run folder holds that run: Mava would add to its metrics.json
    assert again.returncode == 2 and "is not empty" in again.stderr
    (tmp_path / "elsewhere" / "mava").mkdir(parents=True)  # a venv whose mava is another checkout's
    (tmp_path / "elsewhere" / "mava" / "__init__.py").write_text("")
    other = run_runner(tmp_path, "--run-dir", str(tmp_path / "run2"), env=dict(PYTHONPATH=str(tmp_path / "elsewhere")))
    assert other.returncode == 1 and "not --mava-dir's" in other.stderr and not (tmp_path / "run2").exists()


def test_a_failed_run_leaves_no_output(tmp_path):
    failed = run_runner(tmp_path, env=dict(FAKE_EXIT="1"))
    assert failed.returncode == 1 and "rec_mappo.py exited with 1" in failed.stderr
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGKILL, -9)])
def test_the_child_does_not_outlive_the_runner(tmp_path, sig, code):
    """SIGTERM (a benchmark script stopped) ends the runner and Mava's process with it; SIGKILL too (Linux)"""
    runner = run_runner(tmp_path, env=dict(FAKE_SLEEP="120"), wait=False)
    for _ in range(200):  # the child has started
        if (tmp_path / "child").exists() and (tmp_path / "child").read_text():
            break
        time.sleep(0.05)
    pid = json.loads((tmp_path / "child").read_text())["pid"]
    runner.send_signal(sig)
    assert runner.wait(timeout=30) == code
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("Mava's process outlived the runner")
    assert not (tmp_path / "out.json").exists()


def test_meta_names_the_commit_and_what_was_edited_since(tmp_path):
    """mava_commit is --mava-dir's HEAD; mava_modified lists its tracked files that differ from it (untracked ones, such
    as a run's outputs, are not Mava's code): [] for the commit as it is, None where --mava-dir is not a git checkout"""
    mava = fake_mava(tmp_path)
    git = lambda *a: subprocess.run(["git", "-C", str(mava), *a], check=True, capture_output=True, text=True)  # noqa: E731
    (mava / "README.md").write_text("Mava\n")
    git("init", "-q")
    git("add", "mava", "README.md")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "rec_mappo")
    head = git("rev-parse", "HEAD").stdout.strip()
    (mava / "notes.txt").write_text("untracked")
    assert run_runner(tmp_path).returncode == 0
    meta = json.loads((tmp_path / "out.json").read_text())["meta"]
    assert meta["mava_commit"] == head and meta["mava_modified"] == []
    origin = meta["provenance"]  # the exact command, the package versions, the checkout
    assert origin["command"][1].endswith("mava_baseline.py") and "--map" in origin["command"]
    assert origin["checkout"]["commit"] == head and set(origin["packages"]) >= {"jax", "jaxmarl", "flax"}
    (mava / "README.md").write_text("Mava, edited\n")
    assert run_runner(tmp_path, "--run-dir", str(tmp_path / "run2")).returncode == 0
    meta = json.loads((tmp_path / "out.json").read_text())["meta"]
    assert meta["mava_commit"] == head and meta["mava_modified"] == ["README.md"]
