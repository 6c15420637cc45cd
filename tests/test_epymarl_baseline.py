"""benchmark/epymarl/epymarl_baseline.py, checked without EPyMARL: a stand-in src/main.py writes what EPyMARL's writes
(sacred's info.json and config.json under EPYMARL_DIR/results/sacred/<config>/<key>/<id>, checkpoints under
local_results_path/models/<token>/<t_env>) and goes on from checkpoint_path as EPyMARL does. Two sittings: the second
resumes from the first's newest checkpoint, and the curve merges them."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "benchmark", "epymarl", "epymarl_baseline.py")

# EPyMARL reduced: evaluations and logs every 10,000 env steps, a checkpoint every 20,000 (none at the end), and a stop
# after STOP_AT steps (exit 1) standing in for a kill; a loaded checkpoint sets t_env, as run.py does; sacred numbers
# its runs beside a _sources folder (its copies of the code). With FOREIGN set, another runner's seed of the same task
# logs into the same folder meanwhile (its own local_results_path, other numbers)
FAKE_MAIN = """import json, os, sys
args = dict(a.split("=", 1) for a in sys.argv[sys.argv.index("with") + 1:])
key, t_max, out = args["env_args.key"], int(args["t_max"]), args["local_results_path"]
t = 0
if "checkpoint_path" in args:
    t = max(int(s) for s in os.listdir(args["checkpoint_path"]))
sacred = os.path.join("results", "sacred", "mappo", key)
os.makedirs(os.path.join(sacred, "_sources"), exist_ok=True)
run = os.path.join(sacred, str(len([name for name in os.listdir(sacred) if name.isdigit()]) + 1))
os.makedirs(run)
config = dict(seed=int(args["seed"]), action_selector="soft_policies", test_greedy=True, test_nepisode=100,
              log_interval=10000, local_results_path=out)
json.dump(config, open(os.path.join(run, "config.json"), "w"))
if os.environ.get("FOREIGN"):
    other = os.path.join(sacred, str(int(os.path.basename(run)) + 1))
    os.makedirs(other)
    json.dump(dict(config, seed=99, local_results_path="/elsewhere"), open(os.path.join(other, "config.json"), "w"))
    json.dump({"test_return_mean": [-1.0], "test_return_mean_T": [10**6], "test_return_std": [0.0],
               "return_mean": [-1.0], "return_mean_T": [10**6]}, open(os.path.join(other, "info.json"), "w"))
info = {k: [] for k in ("test_return_mean", "test_return_mean_T", "test_return_std", "test_return_std_T",
                        "return_mean", "return_mean_T")}
stop = int(os.environ.get("STOP_AT", 10**9))
while t <= t_max:
    if t % 10000 == 0:
        value = {"py/object": "numpy.float64", "dtype": "float64", "value": t / 1e5}
        info["test_return_mean"].append(value); info["test_return_mean_T"].append(t)
        info["test_return_std"].append(0.1); info["test_return_std_T"].append(t)
        info["return_mean"].append(t / 2e5); info["return_mean_T"].append(t)
        json.dump(info, open(os.path.join(run, "info.json"), "w"))
    if t % 20000 == 0 and t > 0:
        saved = os.path.join(out, "models", "token" + os.path.basename(run), str(t))  # a token per sitting
        os.makedirs(saved)
        for name in ("agent.th", "critic.th", "agent_opt.th", "critic_opt.th"):
            open(os.path.join(saved, name), "w").close()
    if t >= stop:
        sys.exit(1)
    t += 5000
"""


def sitting(epymarl, run_dir, out, stop_at=None, foreign=False):
    env = dict(os.environ, **({"STOP_AT": str(stop_at)} if stop_at else {}), **({"FOREIGN": "1"} if foreign else {}))
    cmd = [sys.executable, RUNNER, "--epymarl-dir", str(epymarl), "--key", "lbforaging:Foraging-8x8-2p-2f-coop-v3"]
    cmd += ["--time-limit", "50", "--t-max", "65000", "--seed", "3", "--run-dir", str(run_dir), "--out", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def test_a_resumed_run_goes_on_from_its_newest_checkpoint_and_merges_its_sittings(tmp_path):
    epymarl, run_dir, out = tmp_path / "epymarl", tmp_path / "run", tmp_path / "out.json"
    (epymarl / "src").mkdir(parents=True)
    (epymarl / "src" / "main.py").write_text(FAKE_MAIN)

    first = sitting(epymarl, run_dir, out, stop_at=45000)  # checkpoints at 20,000 and 40,000, evaluations to 40,000
    assert first.returncode == 1, first.stderr
    partial = json.loads(out.read_text())
    assert [r["step"] for r in partial["rows"]] == [0, 10000, 20000, 30000, 40000] and not partial["meta"]["finished"]

    second = sitting(epymarl, run_dir, out, foreign=True)  # another seed's sacred run appears beside this one's
    assert second.returncode == 0, second.stderr
    assert "checkpoint_path=" in second.stdout and "(from step 40000)" in second.stdout
    done = json.loads(out.read_text())
    # the first sitting up to the second's start, then the second's own, each evaluation once
    assert [r["step"] for r in done["rows"]] == [0, 10000, 20000, 30000, 40000, 50000, 60000]
    assert done["rows"][-1]["test_return_mean"] == 0.6 and done["rows"][-1]["return_mean"] == 0.3  # pickled, plain
    meta = done["meta"]
    # end_step: the last step a sitting logged at; finished though the last log (60,000) falls before t_max (65,000)
    assert meta["finished"] and [(s["start_step"], s["end_step"]) for s in meta["sittings"]] == [(0, 40000), (40000, 60000)]
    assert meta["evaluation_greedy"] is False  # soft_policies samples, whatever test_greedy says
    assert len(os.listdir(run_dir / "sittings")) == 2  # the foreign run's log is not taken for a sitting
    assert done["config"]["seed"] == 3  # nor its config
