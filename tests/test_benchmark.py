"""benchmark/report/summarize.py on hand-made results folders (known medians, intervals only from 5 seeds, the files it
writes),
benchmark/mappo.sh's resume of an unfinished run and skip of a finished one, and benchmark/measure/async_throughput.py's table
and simulated env."""

import functools
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from conftest import ROOT, run_dirs

sys.path[:0] = [str(ROOT / "benchmark" / role) for role in ("measure", "report")]  # the tools tested here
import summarize  # noqa: E402

# per (map, seed): the win rates of the last 10 evaluations; two earlier evaluations of 0 come before them
LAST10 = {
    ("3m", 1): [0.2] * 10,
    ("3m", 2): [0.4] * 4 + [0.5] * 6,  # median 0.5
    ("3m", 3): [0.6] * 10,
    ("2s3z", 1): [0.8] * 10,
    ("2s3z", 2): [1.0] * 3 + [0.9] * 7,  # median 0.9
    ("2s3z", 3): [1.0] * 10,
}
TRAIN_2S3Z = {1: [0.5] * 10, 2: [0.6] * 10, 3: [0.7] * 4 + [0.4] * 6}  # medians 0.5, 0.6, 0.4: 3m's runs have none


def write_run(root, env_id, seed, wins, returns=None, budget=None, script="mappo", train=None, train_key="train_win_rate"):
    """A run's eval_summary.json; train: the training score (train_key: win rate, or return where there is no win)
    beside each evaluation (runs before it had none)"""
    evals = [0.0, 0.0] + list(wins)
    returns = returns or [w * 2 for w in evals]
    last_w, last_r = np.array(evals[-10:]), np.array(returns[-10:])
    summary = dict(env_id=env_id, seed=seed, global_step=3200 * len(evals), wall_time=10.0 * len(evals))
    summary["budget"] = budget or summary["global_step"]
    summary.update(median_win_rate=float(np.median(last_w)), median_return=float(np.median(last_r)))
    summary["evals"] = [
        dict(step=3200 * (i + 1), win_rate=w, episodic_return=r, wall_time=10.0 * (i + 1))
        for i, (w, r) in enumerate(zip(evals, returns))
    ]
    if train is not None:
        scores = [0.0, 0.0] + list(train)
        summary[f"median_{train_key}"] = float(np.median(scores[-10:]))
        for e, t in zip(summary["evals"], scores):
            e[train_key] = t
    run = root / "runs" / f"{env_id}__{script}__{seed}__0".replace("/", "-")  # as the scripts name their runs
    run.mkdir(parents=True)
    (run / "eval_summary.json").write_text(json.dumps(summary))


@pytest.fixture
def results(tmp_path):
    for (env_id, seed), wins in LAST10.items():
        write_run(tmp_path, env_id, seed, wins, train=TRAIN_2S3Z[seed] if env_id == "2s3z" else None)
    write_run(tmp_path, "simple_spread_v3", 1, [0.0] * 10, returns=[-30.0] * 2 + [-20.0] * 5 + [-18.0] * 5)
    hanabi_train = dict(train=[1.0] * 4 + [1.5] * 6, train_key="train_return")
    write_run(tmp_path, "hanabi", 1, [0.0] * 10, returns=[0.0] * 2 + [2.0] * 4 + [3.0] * 6, **hanabi_train)  # by return
    write_run(tmp_path, "3m", 4, [1.0] * 10, budget=10**9)  # stopped before its budget: left out of every result
    summarize.main(str(tmp_path), marl_eval=True)
    return tmp_path


def test_paper_table_medians(results):
    rows = {(r["script"], r.get("env_id")): r for r in json.loads((results / "summary.json").read_text())}
    assert rows[("mappo", "3m")]["scores"] == pytest.approx([20.0, 50.0, 60.0])
    assert rows[("mappo", "3m")]["median"] == pytest.approx(50.0)
    assert rows[("mappo", "3m")]["std"] == pytest.approx(np.std([20.0, 50.0, 60.0]))
    assert rows[("mappo", "2s3z")]["median"] == pytest.approx(90.0)
    assert rows[("mappo", "simple_spread_v3")]["median"] == pytest.approx(-19.0)  # median of 5 x -20, 5 x -18
    assert (rows[("mappo", "hanabi")]["median"], rows[("mappo", "hanabi")]["metric"]) == (3.0, "score")
    assert rows[("mappo", "hanabi")]["train_scores"] == [1.5]  # no win in Hanabi: the training return
    assert rows[("mappo", "hanabi")]["std"] is None  # one seed: no spread
    assert rows[("mappo", "3m")]["first_0.8"] == [None, None, None]
    assert rows[("mappo", "2s3z")]["first_0.8"][0] == [3 * 3200, 30.0]  # the third evaluation, after 30 s
    md = (results / "summary.md").read_text()
    [row] = [line for line in md.splitlines() if line.startswith("| mappo | 3m | 3 |")]
    assert row.endswith("| 20, 50, 60 | 50 | 20 to 60 | - |")  # whole percents, the range, no paper column
    assert rows[("mappo", "3m")]["wall_time"] == [120.0, 120.0, 120.0]  # 12 evaluations, 10 s apart
    assert "- mappo: all its runs together 0.3 h of wall time" in md  # 8 runs x 120 s = 960 s
    # the training win rate where every seed logged it; with 3 seeds no bootstrap interval anywhere, nor an IQM
    two = rows[("mappo", "2s3z")]
    assert two["train_scores"] == pytest.approx([50.0, 60.0, 40.0]) and "train_scores" not in rows[("mappo", "3m")]
    assert two["mean"] == pytest.approx(90.0) and two["train_mean"] == pytest.approx(50.0)
    assert not any("mean_ci" in r or "train_mean_ci" in r or "iqm" in r for r in rows.values())
    [row] = [line for line in md.splitlines() if line.startswith("| mappo | 2s3z | 3 |")]
    assert row.endswith("| 80, 90, 100 | 90 | 80 to 100 | 50, 60, 40 |") and "IQM" not in md and "bootstrap" not in md


def test_largest_fall_reads_means_over_windows_of_env_steps():
    """summarize.largest_fall: the largest drop from the mean of one 0.5M-env-step window to any later window's, in %,
    with each window's first env step and the median number of evaluations a window; an evaluation at the end of a
    window (10M) belongs to it; None without a drop."""
    wins = {0: [0.2] * 5, 1: [0.8] * 5, 2: [1.0] * 4 + [0.0], 3: [0.1] * 5, 4: [0.5] * 5, 5: [0.95] * 5}  # window -> wins
    evals = [dict(step=500_000 * w + 100_000 * (i + 1), win_rate=x) for w, xs in wins.items() for i, x in enumerate(xs)]
    assert evals[-1]["step"] == 3_000_000  # the last window's end
    assert summarize.largest_fall(evals) == pytest.approx([80.0, 500_000, 10.0, 1_500_000, 5])  # not 100 -> 0 of one eval
    assert summarize.largest_fall(evals[:10]) is None  # 20 then 80: only a climb
    assert summarize.largest_fall(evals, window=3_000_000) is None  # one window
    late = evals + [dict(step=3_100_000, win_rate=0.0)]  # a window of its own, below every other
    assert summarize.largest_fall(late) == pytest.approx([95.0, 2_500_000, 0.0, 3_000_000, 5])


def test_noise_alone_falls_further_the_fewer_evaluations_a_window_holds():
    """update_readme.noise_fall: the median largest fall of a flat 50 % curve, from binomial evaluations of 32 episodes;
    seeded, so the README is the same at every write; about 2.4 points at 156 evaluations a window (the standard error
    of a window's mean is 100 * sqrt(0.25 / (32 * 156)) = 0.7 points, and the largest of 190 ordered differences of
    20 such means is a few of them)."""
    import update_readme

    falls = [update_readme.noise_fall(n) for n in (3, 30, 156)]
    assert falls[0] > falls[1] > falls[2] and 1.5 < falls[2] < 3.5 and 12 < falls[0] < 24
    assert update_readme.noise_fall(3) == falls[0]
    assert update_readme.noise_fall(3, p=1.0) == 0.0  # every game won: nothing to fall


def test_the_falls_table_gives_each_seed_its_fall_in_whole_percents(tmp_path, monkeypatch):
    """update_readme.smax_falls: a row per map and setting (ours, then the other implementations run here, each in its
    evaluation), each seed's largest fall as the difference of the two whole percents it shows, 'none' for a seed that
    never fell, the evaluations a window and what noise alone reads with as many; a folder with no runs adds nothing."""
    import update_readme

    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    win = dict(script="mappo_rnn", metric="win rate %")  # summarize.py's rows
    rows = [dict(win, env_id="10m_vs_11m", largest_fall=[[77.2, 2_500_000, 0.4, 4_500_000, 30], None])]
    rows.append(dict(win, env_id="5m_vs_6m", largest_fall=[[3.6, 5_000_000, 1.4, 5_500_000, 156]]))
    (tmp_path / "smax_hard_10m_tuned").mkdir()
    (tmp_path / "smax_hard_10m_tuned/summary.json").write_text(json.dumps(rows))
    write_mava_run(tmp_path / "smax_hard_10m_mava_rec_mappo", "10m_vs_11m", 0, [0.6] * 20 + [0.1] * 42)  # sampled
    folders = ("smax_hard_10m_paper", "smax_hard_10m_tuned", "smax_hard_10m_jaxmarl", "smax_hard_10m_mava_rec_mappo")
    with pytest.raises(SystemExit, match="folders that do not exist: smax_hard_10m_paper, smax_hard_10m_jaxmarl"):
        update_readme.smax_falls(*folders)  # a misspelt folder would leave its rows out unsaid
    (tmp_path / "smax_hard_10m_paper").mkdir()  # no runs yet
    (tmp_path / "smax_hard_10m_jaxmarl").mkdir()
    table = update_readme.smax_falls(*folders).splitlines()
    noise = [summarize.whole(update_readme.noise_fall(n)) for n in (30, 156, 3)]
    assert table[2:] == [
        f"| 10m_vs_11m | mappo_rnn.py, `tuned` | greedy | 30 | {noise[0]} | 77 (77 at 2.5M to 0 at 4.5M); none |",
        f"| 10m_vs_11m | Mava rec_mappo (82583ba), its SMAX sweep config, run by us | sampled | 3 | {noise[2]} "
        "| 50 (60 at 0.0M to 10 at 3.5M) |",  # 3 evaluations (every 163,840 env steps) in most windows
        f"| 5m_vs_6m | mappo_rnn.py, `tuned` | greedy | 156 | {noise[1]} | 3 (4 at 5.0M to 1 at 5.5M) |",  # 4 - 1
    ]


def test_intervals_from_five_seeds_on(tmp_path):
    """With summarize.MIN_SEEDS_FOR_INTERVALS seeds per map the bootstrap intervals come back: of the mean per map, and
    the IQM's over maps (marl-eval's protocol)"""
    for seed, win in enumerate([0.2, 0.4, 0.5, 0.6, 0.8], start=1):
        write_run(tmp_path, "3m", seed, [win] * 10, train=[win] * 10)
    summarize.main(str(tmp_path))
    [row, iqm] = json.loads((tmp_path / "summary.json").read_text())
    assert row["mean"] == pytest.approx(50.0) and row["mean_ci"][0] < 50.0 < row["mean_ci"][1] and "train_mean_ci" in row
    assert iqm["iqm"] == pytest.approx(0.5) and iqm["iqm_ci"][0] < 0.5 < iqm["iqm_ci"][1]


def test_win_rates_in_whole_percents_halves_up():
    # medians of 32-episode evaluations end in .5 often: both halves go the same way (format() would give 62 and 88)
    assert [summarize.whole(x) for x in (62.5, 87.5, 12.5, 89.0625, 0.0, 100.0)] == ["63", "88", "13", "89", "0", "100"]


def test_iqm_and_bootstrap():
    # six runs: 0.2, 0.5, 0.6, 0.8, 0.9, 1.0 -> drop one at each end -> mean(0.5, 0.6, 0.8, 0.9) = 0.7
    assert summarize.iqm([0.2, 0.5, 0.6, 0.8, 0.9, 1.0]) == pytest.approx(0.7)
    assert summarize.iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx(4.5)  # robust to the outlier
    low, high = summarize.stratified_bootstrap_ci([np.array([0.2, 0.5, 0.6]), np.array([0.8, 0.9, 1.0])])
    assert low <= 0.7 <= high and 0.2 <= low < high <= 1.0
    constant = summarize.stratified_bootstrap_ci([np.full(3, 0.5), np.full(3, 0.9)])
    assert constant == pytest.approx((0.7, 0.7))  # no spread within tasks: a degenerate interval at the IQM


def test_marl_eval_json_and_plot(results):
    data = json.loads((results / "marl_eval.json").read_text())
    runs = data["smax"]["3m"]["mappo"]
    assert sorted(runs) == ["run_0", "run_1", "run_2"]
    assert runs["run_1"]["absolute_metrics"]["win_rate"] == [0.5]
    assert runs["run_1"]["step_11"] == {"step_count": 12 * 3200, "win_rate": [0.5]}
    assert data["mpe"]["simple_spread_v3"]["mappo"]["run_0"]["absolute_metrics"]["episodic_return"] == [-19.0]
    assert data["hanabi"]["hanabi"]["mappo"]["run_0"]["absolute_metrics"]["episodic_return"] == [3.0]
    assert (results / "curves.png").stat().st_size > 10_000


def test_a_run_resumed_past_its_kept_copy_counts_with_its_newer_history(tmp_path):
    """summarize.load: a finished run kept in git (kept/<name>.json.gz, 12 evaluations) and then resumed to a larger
    budget (runs/<name>/eval_summary.json, 14): the same run, read once, from the copy with more env steps"""
    write_run(tmp_path, "3m", 1, [0.5] * 12)  # evaluations 0, 0 and 12 x 0.5 at steps 3200 ... 44800
    run = tmp_path / "runs" / "3m__mappo__1__0"
    (tmp_path / "kept").mkdir()
    shorter = json.loads((run / "eval_summary.json").read_text())
    shorter.update(evals=shorter["evals"][:12], global_step=3200 * 12, budget=3200 * 12)
    with gzip.open(tmp_path / "kept" / "3m__mappo__1__0.json.gz", "wt") as f:
        json.dump(shorter, f)
    [summary] = summarize.load([str(tmp_path)])[("mappo", "3m")]
    assert summary["global_step"] == 3200 * 14 and len(summary["evals"]) == 14
    (run / "eval_summary.json").unlink()  # a fresh machine: the kept copy alone
    assert summarize.load([str(tmp_path)])[("mappo", "3m")][0]["global_step"] == 3200 * 12


def test_several_folders_side_by_side(tmp_path):
    """Folders read as one, each script with its own rows, rows by env, the files in --out (which
    several folders require). Of two runs with the same script, env and seed, the one with more env steps counts."""
    first, second, out = tmp_path / "mappo", tmp_path / "ippo", tmp_path / "compare"
    write_run(first, "5m_vs_6m", 1, [0.2] * 10)
    write_run(first, "5m_vs_6m", 2, [0.6] * 10)  # 12 evaluations
    write_run(first, "3m", 1, [0.2] * 10)
    write_run(second, "5m_vs_6m", 1, [0.9] * 10, script="ippo")
    write_run(second, "5m_vs_6m", 2, [1.0] * 8)  # mappo seed 2 again, 10 evaluations: left out
    write_run(second, "3m", 1, [0.8] * 12)  # mappo 3m seed 1 again, 14 evaluations: counts instead of the first
    cli = [sys.executable, str(ROOT / "benchmark" / "report" / "summarize.py"), str(first), str(second)]
    refused = subprocess.run(cli, capture_output=True, text=True)
    assert refused.returncode != 0 and "--out" in refused.stderr and not (first / "summary.md").exists()
    done = subprocess.run(cli + ["--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("left out, the same script, env and seed") == 2
    rows = {(r["script"], r.get("env_id")): r for r in json.loads((out / "summary.json").read_text())}
    assert rows[("mappo", "5m_vs_6m")]["scores"] == pytest.approx([20.0, 60.0])
    assert rows[("mappo", "3m")]["scores"] == pytest.approx([80.0])
    assert rows[("ippo", "5m_vs_6m")]["scores"] == pytest.approx([90.0])
    md = (out / "summary.md").read_text()
    assert "| mappo | 5m_vs_6m | 2 |" in md and "| ippo | 5m_vs_6m | 1 |" in md
    order = [line.split(" | ")[:2] for line in md.splitlines() if line.startswith("| ") and " | win rate" in line]
    assert order == [["| mappo", "3m"], ["| ippo", "5m_vs_6m"], ["| mappo", "5m_vs_6m"]]  # by env, then script
    assert (out / "curves.png").stat().st_size > 10_000 and not (first / "summary.md").exists()


def test_mean_and_band_over_seeds():
    # two seeds evaluated at different points; the grid spans only the range both cover, [0, 10]
    curves = [(np.array([0.0, 10.0]), np.array([0.0, 1.0])), (np.array([-5.0, 5.0, 20.0]), np.array([1.0, 1.0, 0.0]))]
    grid, mean, low, high = summarize.mean_and_band(curves, points=3)
    assert grid == pytest.approx([0.0, 5.0, 10.0])
    # seed 1 at 0, 5, 10: 0, 0.5, 1; seed 2: 1, 1, 1 - 5/15
    assert mean == pytest.approx([0.5, 0.75, (1.0 + 2 / 3) / 2])
    # fewer than 5 seeds: the band is their range (with 2 or 3 seeds a bootstrap interval would be too; with 4 it is not)
    assert low == pytest.approx([0.0, 0.5, 2 / 3]) and high == pytest.approx([1.0, 1.0, 1.0])
    four = [(np.array([0.0, 1.0]), np.full(2, v)) for v in (0.0, 1 / 3, 2 / 3, 1.0)]
    _, _, low, high = summarize.mean_and_band(four, points=2)
    assert low == pytest.approx([0.0, 0.0]) and high == pytest.approx([1.0, 1.0])
    assert summarize.bootstrap_mean_ci(np.array([0.0, 1 / 3, 2 / 3, 1.0]))[0] > 0.0  # what the range replaces
    # 5 seeds: the bootstrap interval of the mean, narrower than the range, holding the mean
    x = np.array([0.0, 0.2, 0.4, 0.6, 1.0])
    _, mean, low, high = summarize.mean_and_band([(np.array([0.0, 1.0]), np.full(2, v)) for v in x], points=2)
    assert np.all((0.0 < low) & (low < mean) & (mean < high) & (high < 1.0)) and mean == pytest.approx([x.mean()] * 2)


def mappo_sh(*words, env):
    """bash benchmark/mappo.sh WORDS with the environment `env`: the finished process, its output as text"""
    return subprocess.run(["bash", str(ROOT / "benchmark" / "mappo.sh"), *words], env=env, capture_output=True, text=True)


def test_benchmark_script_resumes_and_skips(tmp_path, run_script):
    """benchmark/mappo.sh: an unfinished run (its last checkpoint) goes on with --resume; a finished one is skipped."""
    small = ["--num-envs", "4", "--eval-episodes", "2"]  # 4 envs x 25 steps = 100 env steps per update
    # an unfinished run: only --save-interval wrote its checkpoint, after each of its 2 updates
    run_script(
        "mappo.py", "--env-id", "simple_spread_v3", "--seed", "1", "--total-timesteps", "200", "--save-interval", "1", *small
    )
    [run] = run_dirs(tmp_path)
    ckpt_path = os.path.join(run, "mappo.pt")
    assert torch.load(ckpt_path, weights_only=True)["iteration"] == 2
    env = dict(os.environ, OUT=str(tmp_path), ENV_IDS="simple_spread_v3", NUM_SEEDS="1", TOTAL_TIMESTEPS="300")
    env.update(EXTRA=" ".join(small), PYTHON=sys.executable)
    bench = functools.partial(mappo_sh, env=env)

    # `keep` copies the unfinished run's checkpoint to kept/, for git; a fresh machine has only that
    kept, name = tmp_path / "kept", os.path.basename(run)
    assert bench("keep").returncode == 0 and os.listdir(kept) == [f"{name}.pt"]
    shutil.rmtree(tmp_path / "runs")
    first = bench()
    assert first.returncode == 0, first.stderr[-2000:]
    assert run_dirs(tmp_path) == [run]  # the same run went on, from kept/
    ckpt = torch.load(ckpt_path, weights_only=True)
    assert ckpt["iteration"] == 3 and ckpt["global_step"] == 300 and len(ckpt["evals"]) == 3
    # and it ends in the table and the plot, from that run
    table = (tmp_path / "summary.md").read_text()
    assert "| mappo | simple_spread_v3 | 1 | 300 | team return |" in table, table
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    second = bench()
    assert second.returncode == 0 and "done already" in second.stderr, second.stderr[-2000:]
    assert torch.load(ckpt_path, weights_only=True)["iteration"] == 3 and run_dirs(tmp_path) == [run]
    # finished: `keep` swaps its checkpoint for its eval summary, which is all a fresh machine needs to skip the run
    # and to summarise it; a summary new to kept/ reaches the folder's summary.json there and then (runs started from
    # `plan` lines have no queue end to write it), one already kept leaves it alone
    (tmp_path / "summary.json").unlink()
    # a PYTHON that cannot draw keeps nothing of the finished run (exit 2), so that the next keep finds it new
    no_plots = stand_in(tmp_path / "no_plots", f"import os, sys\nsys.exit(1) if 'matplotlib' in ' '.join(sys.argv) else "
                        f"os.execv({sys.executable!r}, [{sys.executable!r}] + sys.argv[1:])\n")  # fmt: skip
    refused = mappo_sh("keep", env=dict(env, PYTHON=str(no_plots)))
    assert refused.returncode == 2 and "lacks" in refused.stderr, refused.stderr
    assert os.listdir(kept) == [f"{name}.pt"] and not (tmp_path / "summary.json").exists()
    assert bench("keep").returncode == 0 and os.listdir(kept) == [f"{name}.json.gz"]
    [entry] = json.loads((tmp_path / "summary.json").read_text())  # as the queue's end wrote it
    assert (entry["env_id"], entry["seeds"], entry["env_steps"]) == ("simple_spread_v3", [1], [300])
    (tmp_path / "summary.json").unlink()
    assert bench("keep").returncode == 0 and not (tmp_path / "summary.json").exists()
    shutil.rmtree(tmp_path / "runs")
    (tmp_path / "summary.md").unlink()
    third = bench()
    assert third.returncode == 0 and "done already" in third.stderr, third.stderr[-2000:]
    assert not (tmp_path / "runs").exists() and table == (tmp_path / "summary.md").read_text()


def test_benchmark_script_goes_on_from_whichever_of_runs_and_kept_is_ahead(tmp_path, run_script):
    """benchmark/mappo.sh: kept/ ahead of runs/ (it came back from another machine) is resumed and never overwritten by
    `keep`; a run finished in kept/ is done, whatever older part of it runs/ holds."""
    small = ["--num-envs", "4", "--eval-episodes", "2"]  # 100 env steps per update
    run_script(
        "mappo.py", "--env-id", "simple_spread_v3", "--seed", "1", "--total-timesteps", "200", "--save-interval", "1", *small
    )
    [run] = run_dirs(tmp_path)
    name, ckpt_path = os.path.basename(run), os.path.join(run, "mappo.pt")
    shutil.copy(ckpt_path, tmp_path / "behind.pt")  # 2 updates
    env = dict(os.environ, OUT=str(tmp_path), ENV_IDS="simple_spread_v3", NUM_SEEDS="1", PYTHON=sys.executable)
    env.update(EXTRA=" ".join(small))

    def bench(*words, budget):
        return mappo_sh(*words, env=dict(env, TOTAL_TIMESTEPS=str(budget)))

    assert bench(budget=300).returncode == 0  # on to 3 updates here, as on another machine
    assert bench("keep", budget=400).returncode == 0
    kept = tmp_path / "kept" / f"{name}.pt"
    assert torch.load(kept, weights_only=True)["iteration"] == 3
    shutil.copy(tmp_path / "behind.pt", ckpt_path)  # this machine's runs/ is left behind: 2 updates
    assert bench("keep", budget=400).returncode == 0 and torch.load(kept, weights_only=True)["iteration"] == 3
    plan = bench("plan", budget=400)
    assert f"--resume {kept}" in plan.stdout and "is ahead of" in plan.stderr, (plan.stdout, plan.stderr)
    # runs/ ahead again (the same run went on here): runs/ is what plan resumes and keep keeps
    assert bench(budget=400).returncode == 0 and torch.load(ckpt_path, weights_only=True)["iteration"] == 4
    assert bench("keep", budget=500).returncode == 0 and torch.load(kept, weights_only=True)["iteration"] == 4
    assert f"--resume {ckpt_path}" in bench("plan", budget=500).stdout
    # finished (kept/ holds its eval summary) while runs/ holds an older part of it: done, and keep adds no checkpoint
    assert bench("keep", budget=400).returncode == 0 and os.listdir(tmp_path / "kept") == [f"{name}.json.gz"]
    assert f"--resume {ckpt_path}" in bench("plan", budget=500).stdout  # the finished run itself, a larger budget
    shutil.copy(tmp_path / "behind.pt", ckpt_path)
    plan = bench("plan", budget=500)
    assert plan.stdout == "" and "done already" in plan.stderr
    assert bench("keep", budget=500).returncode == 0 and os.listdir(tmp_path / "kept") == [f"{name}.json.gz"]


def test_async_throughput_table():
    """benchmark/measure/async_throughput.py's table: each run against mappo.py on the same env, and against one split with the
    same number of clients"""
    import async_throughput

    base = dict(env="3m", envs=8, update_s=0.5, wait_s=None, inference_s=None, env_s=1.0, policy_lag=None)
    rows = [dict(base, script="mappo.py", clients=None, splits=None, sps=100.0)]
    rows += [
        dict(base, script="mappo_async_seed.py", clients=2, splits=m, sps=sps, wait_s=0.1) for m, sps in ((1, 150), (2, 195))
    ]
    lines = async_throughput.table(rows).splitlines()
    assert "| 3m | mappo.py | - | 8 | 100 | 1.00 | - |" in lines[2]
    assert "| 2 x 1 | 8 | 150 | 1.50 | 1.00 |" in lines[3] and "| 2 x 2 | 8 | 195 | 1.95 | 1.30 |" in lines[4]
    assert lines[4].endswith("| 0.50 / 0.10 / - / 1.00 | - |")
    simulated = [dict(r, env="simulated: 2 ms sleep per env step, 3m's shapes") for r in rows]
    lines = async_throughput.table(simulated + rows).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| 3m"] * 3 + [
        "| simulated: 2 ms sleep per env step, 3m's shapes"
    ] * 3


def test_the_simulated_env_waits_and_keeps_the_adapter_contract():
    """The latency-bound stand-in: a split of k envs waits k x delay without computing, with the shapes of the env it
    stands in for; its episodes end every 60 steps in a truncation"""
    import async_throughput

    class Like:
        num_envs, num_agents, num_actions, obs_dim, state_dim, has_wins = 3, 2, 5, 7, 11, True

    envs = async_throughput.SleepEnv(Like(), delay=0.01, seed=0)
    out = envs.reset()
    assert out["obs"].shape == (3, 2, 7) and out["env_state"].shape == (3, 11) and out["avail"].all() and out["alive"].all()
    assert envs.continuous is False and envs.has_wins is True
    start = time.perf_counter()
    steps = [envs.step(np.zeros((3, 2), np.int64)) for _ in range(60)]
    assert time.perf_counter() - start >= 60 * 3 * 0.01
    assert [s["truncated"].all() for s in steps] == [False] * 59 + [True] and not any(s["terminated"].any() for s in steps)
    assert steps[-1]["final_obs"].shape == (3, 2, 7) and steps[0]["reward"].shape == (3,)


def test_throughput_rows_of_envs_not_measured_again_stay(tmp_path):
    import throughput

    path = tmp_path / "throughput.json"
    assert throughput.merge_rows(str(path), [dict(env_id="3m", sps=1.0)]) == [dict(env_id="3m", sps=1.0)]
    path.write_text(json.dumps([dict(env_id="3m", sps=1.0), dict(env_id="smaclite/2s3z", sps=2.0)]))
    merged = throughput.merge_rows(str(path), [dict(env_id="hanabi", sps=3.0), dict(env_id="3m", sps=4.0)])
    assert merged == [dict(env_id="3m", sps=4.0), dict(env_id="smaclite/2s3z", sps=2.0), dict(env_id="hanabi", sps=3.0)]


def test_hard_map_sps_times_mappo_rnn_with_the_maps_preset_batch(tmp_path):
    """benchmark/measure/hard_map_sps.py trains mappo_rnn.py (its preset for the map: the batch of the paper setting)
    for a few iterations, evaluation off, and records its steady SPS and a 10M run's hours; other maps' rows stay."""
    import hard_map_sps
    import mappo_rnn

    out = tmp_path / "hard_map_sps.json"
    out.write_text(json.dumps([dict(env_id="27m_vs_30m", sps=200.0)]))
    hard_map_sps.main(["--env-ids", "3m", "--iterations", "2", "--out", str(out)])
    old, row = json.loads(out.read_text())
    args, _ = mappo_rnn.parse_args(["--env-id", "3m"])
    assert old == dict(env_id="27m_vs_30m", sps=200.0) and (row["env_id"], row["script"]) == ("3m", "mappo_rnn.py")
    assert row["batch"] == args.num_envs * args.num_steps and row["iterations"] == 2 and 10 < row["sps"] < 1e6
    assert row["hours_per_10m"] == pytest.approx(1e7 / row["sps"] / 3600)


def test_benchmark_runs_keep_freed_memory_unless_told_otherwise(tmp_path):
    """benchmark/mappo.sh writes MALLOC_TOP_PAD_ into each run's command line (launchers that run its plan, like
    smax_hard_10m.sh, get it too): 4 GiB by default, the caller's value when set."""
    env = dict(os.environ, OUT=str(tmp_path), ENV_IDS="3m", SEEDS="1 2", SCRIPT="mappo_rnn.py")
    env.pop("MALLOC_TOP_PAD_", None)

    def plan(**extra):
        out = mappo_sh("plan", env=dict(env, **extra))
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    lines = plan()
    assert len(lines) == 2 and all("&& MALLOC_TOP_PAD_=4294967296 python " in line for line in lines), lines
    assert all("&& MALLOC_TOP_PAD_=1024 python " in line for line in plan(MALLOC_TOP_PAD_="1024"))


def test_allocator_alternates_sides_with_and_without_the_top_pad(tmp_path, monkeypatch):
    """benchmark/measure/allocator.py: per map, runs alternate default, padded, default, padded; only the padded side's
    child sees MALLOC_TOP_PAD_ (even when this shell has it set), this process's environment is left as it was, and the
    medians and ratio are of each side's runs; update_readme writes the ratio into its line."""
    import allocator
    import update_readme

    seen, update_s = [], iter([4.0, 3.0, 6.0, 5.0, 2.0, 2.2, 2.0, 2.2])

    def fake_train_sps(env_id, iterations, extra, script):
        seen.append((env_id, os.environ.get("MALLOC_TOP_PAD_"), script))
        return dict(sps=100.0, iteration_s=7.0, update_s=next(update_s))

    monkeypatch.setattr(allocator, "train_sps", fake_train_sps)
    monkeypatch.setenv("MALLOC_TOP_PAD_", "1")
    allocator.main(["--env-ids", "10m_vs_11m", "5m_vs_6m", "--out", str(tmp_path / "allocator")])
    pad = allocator.TOP_PAD
    assert seen == [(m, side, "mappo_rnn") for m in ("10m_vs_11m", "5m_vs_6m") for side in (None, pad, None, pad)]
    assert os.environ["MALLOC_TOP_PAD_"] == "1"
    result = json.loads((tmp_path / "allocator.json").read_text())
    big, small = result["maps"]
    assert big["median"]["glibc default"]["update_s"] == 5.0 and big["update_ratio"] == pytest.approx(4.0 / 5.0)
    assert small["update_ratio"] == pytest.approx(1.1)
    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    line = update_readme.allocator()
    assert "10m_vs_11m 4.00 s with it, 5.00 s without (0.80x); 5m_vs_6m 2.20 s with it, 2.00 s without (1.10x)" in line


def test_hanabi_table_puts_jaxmarl_runs_beside_ours(tmp_path, monkeypatch):
    """update_readme's Hanabi table: ours from summarize.py's summary (median of the last 10 rollouts' training
    scores), JaxMARL's from benchmark/jaxmarl/jaxmarl_baseline.py's rows (the last update's), seeds in order"""
    import update_readme

    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    assert update_readme.hanabi().startswith("(not run yet")
    paper = dict(mappo_best=23.87, mappo_average=23.85, source="The paper's 2 players")
    (tmp_path / "anchors.json").write_text(json.dumps(dict(hanabi_paper=paper)))
    (tmp_path / "hanabi_10m_jaxmarl").mkdir()
    for seed, score in ((10, 9.0), (2, 4.0), (1, 2.0)):  # seed 10 sorts before 2 as text
        # updates of 100 steps: the first one 50 s (it compiles), then 1, 2 or 4 s (seed 2: one of 7 s, disturbed)
        walls = np.cumsum([50] + [{10: 1, 2: 2, 1: 4}[seed]] * 10 + [7 if seed == 2 else 1]).tolist()
        rows = [dict(step=100 * (i + 1), episodic_return=score + i, wall_time=walls[i]) for i in range(12)]
        run = dict(meta=dict(seed=seed, steps_per_update=100), rows=rows)
        (tmp_path / f"hanabi_10m_jaxmarl/ippo_ff_hanabi_seed{seed}.json").write_text(json.dumps(run))
    (tmp_path / "hanabi_10m_mappo").mkdir()
    ours = dict(env_id="hanabi", train_scores=[5.0, 7.0, 6.0], scores=[8.0, 9.0, 10.0], median=9.0, env_steps=[1200] * 3)
    (tmp_path / "hanabi_10m_mappo/summary.json").write_text(json.dumps([ours, dict(script="mappo", iqm=0.5)]))
    lines = update_readme.hanabi().splitlines()
    assert lines[2] == "| MAPPO | mappo.py | 3 | 0.0012M | 5.00, 7.00, 6.00 | 6.00 | 9.0 (8.0, 9.0, 10.0) |"
    assert lines[3] == "| IPPO | JaxMARL ippo_ff_hanabi | 3 | 0.0012M | 13.00, 15.00, 20.00 | 15.00 | - |"
    # no speed line: throughput.json has no Hanabi row; the paper's scores, from anchors.json
    assert lines[4:] == ["", "The paper's 2 players: 23.87, 23.85 (anchors.json)."]
    hanabi_speed = dict(env_id="hanabi", sps=860.4, update_s=13.0, iteration_s=14.9)
    (tmp_path / "throughput.json").write_text(json.dumps([dict(env_id="3m", sps=1.0), hanabi_speed]))
    assert update_readme.hanabi().splitlines()[4:6] == [
        "",
        "SPS on this machine, each run alone, in steady state, each with its own configuration (a comparison of "
        "configurations, not an implementation speed): mappo.py 860 (`benchmark/measure/throughput.py`: its update is 87% of"
        " an iteration); JaxMARL ippo_ff_hanabi 50 (the median update of a run alone: `bash benchmark/hanabi_10m.sh"
        " speed` for MAPPO, its 10M runs for IPPO).",
    ]  # the median seed (2): 100 steps in its median update, 2 s (not its mean, 2.45 s)
    assert update_readme.hanabi().splitlines()[6:] == ["", "The paper's 2 players: 23.87, 23.85 (anchors.json)."]
    del ours["train_scores"]  # runs that logged no training score: the greedy score still shows
    (tmp_path / "hanabi_10m_mappo/summary.json").write_text(json.dumps([ours]))
    assert update_readme.hanabi().splitlines()[2] == "| MAPPO | mappo.py | 3 | 0.0012M | - | - | 9.0 (8.0, 9.0, 10.0) |"


def test_hanabi_at_equal_wall_time_reads_each_curve_at_its_own_speed(tmp_path, monkeypatch):
    """update_readme's equal-wall-time table: in T seconds ours (throughput.py's 100 SPS) reaches step 100 T, JaxMARL's
    (its speed run's median update: 1000 steps in 1 s) step 1000 T; each curve is read there (ours: the median of the
    last 10 rollouts' training score, JaxMARL's: its last logged score), then the median over seeds"""
    import update_readme

    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    (tmp_path / "hanabi_10m_jaxmarl").mkdir()
    (tmp_path / "hanabi_10m_mappo/kept").mkdir(parents=True)
    assert update_readme.hanabi_wall().startswith("(not measured yet")
    (tmp_path / "throughput.json").write_text(json.dumps([dict(env_id="hanabi", sps=100.0)]))
    speed = dict(meta=dict(steps_per_update=1000), rows=[dict(wall_time=w) for w in (40.0, 41.0, 42.0, 43.5)])
    (tmp_path / "hanabi_10m_jaxmarl/speed_mappo_ff_hanabi.json").write_text(json.dumps(speed))
    for seed, offset in ((1, 0.0), (2, 1.0), (3, 2.0)):
        rows = [dict(step=1000 * (i + 1), episodic_return=offset + i) for i in range(2000)]  # 2M steps
        (tmp_path / f"hanabi_10m_jaxmarl/mappo_ff_hanabi_seed{seed}.json").write_text(json.dumps(dict(rows=rows)))
        evals = [dict(step=100 * (i + 1), train_return=offset + i) for i in range(20000)]
        with gzip.open(tmp_path / f"hanabi_10m_mappo/kept/hanabi__mappo__{seed}__0.json.gz", "wt") as f:
            json.dump(dict(evals=evals), f)
    (tmp_path / "hanabi_10m_jaxmarl/mappo_ff_hanabi_seed1.log").write_text("")  # logs are not runs
    lines = update_readme.hanabi_wall().splitlines()
    # 300 s: ours at step 30,000 (the median seed, 2: its last 10 scores 291..300, median 295.5), theirs at 300,000
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| 60", "| 120", "| 300", "| 600", "| 900", "| 2000"]
    assert lines[4] == "| 300 | 0.03M, 295.50 | 0.30M, 300.00 |"
    assert lines[-1].startswith("| 2000 | 0.20M, ")  # the last row: JaxMARL's whole run, 2M steps at 1000 SPS


def test_10m_table_puts_each_number_in_the_column_of_its_metric(results, tmp_path_factory, monkeypatch):
    """update_readme's SMAX 10M tables: a row per map and implementation; ours per seed, as whole percents (medians of
    32-episode evaluations), in the greedy, sampled and training columns (sampled only where the runs had
    --eval-sampled); Mava's published number in the sampled-evaluation column; no interval and no IQM over 3 seeds;
    a second setting's folder adds its own rows."""
    import update_readme

    out = tmp_path_factory.mktemp("results")
    shutil.copy(ROOT / "benchmark/results/anchors.json", out)
    monkeypatch.setattr(update_readme, "RESULTS", str(out))
    (out / "smax_10m_mappo").mkdir()
    assert update_readme.smax_10m("smax_10m_mappo").startswith("(not finished yet: `bash benchmark/smax_10m.sh`)")
    shutil.copy(results / "summary.json", out / "smax_10m_mappo")
    table = update_readme.smax_10m("smax_10m_mappo")
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| 2s3z |")]
    assert rows[0][1:8] == ["mappo.py, paper (Table 12)", "jaxmarl 0.2.0", "3", "0.0384M", "80, 90, 100", "-", "50, 60, 40"]
    assert rows[0][8].startswith("2 min (2-core CPU")  # 120 s each: under an hour, in minutes
    read = "Mava rec-MAPPO (published plot: plotted mean over seeds, last point, read by eye)"  # seeds, SMAX: inferred
    mava = [read, "jaxmarl 0.0.2 (inferred)", "10 (inferred)", "10M", "-", "~95", "-", "- |"]
    assert len(rows) == 2 and rows[1][1:] == mava
    [row_3m] = [line.split(" | ") for line in table.splitlines() if line.startswith("| 3m |")]  # no anchor for 3m
    assert row_3m[5:8] == ["20, 50, 60", "-", "-"]  # and no training score logged
    assert "[" not in table.split("![")[0] and "IQM" not in table  # the plot's link aside
    assert "| simple_spread_v3" not in table and "| hanabi" not in table  # win rates only

    summary = json.loads((results / "summary.json").read_text())
    for r in summary:
        r.update(sampled_scores=[70.0, 75.0, 81.25]) if r.get("env_id") == "2s3z" else None
    (out / "smax_hard_10m_table2").mkdir()
    (out / "smax_hard_10m_table2/summary.json").write_text(json.dumps(summary))
    both = update_readme.smax_10m("smax_10m_mappo", "smax_hard_10m_table2")
    rows = [line.split(" | ") for line in both.splitlines() if line.startswith("| 2s3z |")]
    assert [r[1] for r in rows] == ["mappo.py, paper (Table 12)", "mappo_rnn.py, Async MAPPO Table 2: 60 envs, 10 epochs"] + [
        mava[0]
    ]
    assert rows[1][5:7] == ["80, 90, 100", "70, 75, 81"]
    # env steps a run trained on a lent machine's CPU cores (device_runs.sh ours): their share, named in the wall time
    lent = "16-core CPU of a lent GPU machine, 14 runs at once"
    machines = {
        "2s3z__mappo_rnn__1__17": [[lent, 0, 19200]],
        "2s3z__mappo_rnn__2__17": [[lent, 19200, 28800]],
        "2s3z__mappo_rnn__9__17": [[lent, 0, 38400]],  # seed 9: not in the row
        "2s3z__mappo_rnn__3__17": [["another machine", 0, 500]],  # under 0.5 %
    }
    (out / "smax_hard_10m_table2/kept").mkdir()
    (out / "smax_hard_10m_table2/kept/machines.json").write_text(json.dumps(machines))
    for name in ("2s3z__mappo_rnn__4__17.pt", "2s3z__mappo_rnn__5__17.pt", "3m__mappo_rnn__4__17.json.gz"):
        (out / "smax_hard_10m_table2/kept" / name).write_text("")  # two runs of 2s3z that go on; one of 3m that ended
    rows = [line.split(" | ") for line in update_readme.smax_10m("smax_hard_10m_table2").splitlines() if "| 2s3z |" in line]
    tail = f"(2-core CPU, 2 runs at once; 25 % of the env steps on {lent}; <1 % of the env steps on another machine) |"
    assert rows[0][8].endswith(tail)  # 28,800 and 500 of 3 x 38,400 (machines in name order)
    assert rows[0][3] == "3 (+2 unfinished)"  # the row's numbers are the 3 finished seeds'
    [row_3m] = [line.split(" | ") for line in update_readme.smax_10m("smax_hard_10m_table2").splitlines() if "| 3m |" in line]
    assert row_3m[8].endswith("(2-core CPU, 2 runs at once) |") and row_3m[3] == "3"  # all of it here; none goes on

    # JaxMARL's runs here: each seed's median of its last 10 updates, on all three metrics
    jaxmarl = out / "smax_hard_10m_jaxmarl"
    jaxmarl.mkdir()
    for seed, wins in ((1, [0.0] * 5 + [0.5] * 10), (2, [0.0] * 5 + [0.25] * 10)):
        name = f"mappo_rnn_smax_2s3z_seed{seed}"
        rows_ = [dict(step=100 * (i + 1), wall_time=10.0 * (i + 1), win_rate=w) for i, w in enumerate(wins)]
        with gzip.open(jaxmarl / f"{name}.json.gz", "wt") as f:
            json.dump(dict(config=dict(MAP_NAME="2s3z"), rows=rows_), f)
        for mode, scale in (("greedy", 2), ("sampled", 1)):
            evals = [dict(r, win_rate=min(1.0, scale * r["win_rate"])) for r in rows_]
            (jaxmarl / f"{name}_{mode}.json").write_text(json.dumps(dict(rows=evals)))
    (jaxmarl / "a_cut_run.log").write_text("")
    with gzip.open(jaxmarl / "mappo_rnn_smax_2s3z_seed4.json.gz", "wt") as f:  # trained, not evaluated yet: left out
        json.dump(dict(config=dict(MAP_NAME="2s3z"), rows=rows_), f)
    rows = [line.split(" | ") for line in update_readme.smax_10m("smax_hard_10m_jaxmarl").splitlines() if "| 2s3z |" in line]
    assert rows[0][1:8] == ["JaxMARL mappo_rnn_smax, its own config, run by us", "jaxmarl 0.2.0", "2", "0.0015M"] + [
        "100, 50",
        "50, 25",
        "50, 25",
    ]
    assert rows[0][8] == "2.5 min (2-core CPU, beside our runs or alone) |"
    # a run of benchmark/jaxmarl/device_runs.sh on a GPU machine: its seed pooled in the row, each device named
    name = "mappo_rnn_smax_2s3z_seed3"
    with gzip.open(jaxmarl / f"{name}.json.gz", "wt") as f:
        json.dump(dict(config=dict(MAP_NAME="2s3z"), rows=rows_, meta=dict(device="NVIDIA H100 80GB HBM3", runs_at_once=9)), f)
    for mode in ("greedy", "sampled"):
        (jaxmarl / f"{name}_{mode}.json").write_text(json.dumps(dict(rows=rows_)))
    rows = [line.split(" | ") for line in update_readme.smax_10m("smax_hard_10m_jaxmarl").splitlines() if "| 2s3z |" in line]
    assert rows[0][3] == "3" and rows[0][5:8] == ["100, 50, 25", "50, 25, 25", "50, 25, 25"]  # seeds 1, 2, 3
    cpu = "2.5 min (2-core CPU, beside our runs or alone: seeds 1, 2)"
    assert rows[0][8] == f"{cpu}; 2.5 min (NVIDIA H100 80GB HBM3, 9 runs at once: seed 3) |"
    with gzip.open(jaxmarl / f"{name}.json.gz", "wt") as f:  # with our runs on the machine's CPU (device_runs.sh ours)
        meta = dict(device="NVIDIA H200", runs_at_once=1, beside="14 CPU runs")
        json.dump(dict(config=dict(MAP_NAME="2s3z"), rows=rows_, meta=meta), f)
    rows = [line.split(" | ") for line in update_readme.smax_10m("smax_hard_10m_jaxmarl").splitlines() if "| 2s3z |" in line]
    assert rows[0][8] == f"{cpu}; 2.5 min (NVIDIA H200, alone, beside 14 CPU runs on its CPU: seed 3) |"
    mava = out / "smax_hard_10m_mava_jaxmarl"  # Mava's values on JaxMARL's config (--values mava), named so
    shutil.copytree(jaxmarl, mava)
    for path in mava.glob("*.json.gz"):
        with gzip.open(path, "rt") as f:
            run = json.load(f)
        run["meta"] = dict(run.get("meta", {}), values="mava")
        with gzip.open(path, "wt") as f:
            json.dump(run, f)
    table = update_readme.smax_10m("smax_hard_10m_jaxmarl", "smax_hard_10m_mava_jaxmarl").splitlines()
    labels = [line.split(" | ")[1] for line in table if "| 2s3z |" in line]
    assert len(labels) == 3 and labels[2].startswith("Mava rec-MAPPO")  # each folder's devices pooled; published
    assert labels[1] == update_readme.SMAX_SETTINGS["smax_hard_10m_mava_jaxmarl"][0] + ", " + (
        "Mava's SMAX values (lr 4e-3 constant, 2 epochs x 2 mini-batches, gradient norm 0.5), run by us"
    )
    shutil.copy(path, jaxmarl / "mappo_rnn_smax_2s3z_seed9.json.gz")  # a run of Mava's values in JaxMARL's own folder
    for mode in ("greedy", "sampled"):
        shutil.copy(jaxmarl / f"mappo_rnn_smax_2s3z_seed1_{mode}.json", jaxmarl / f"mappo_rnn_smax_2s3z_seed9_{mode}.json")
    with pytest.raises(SystemExit, match="seed9.json.gz ran with --values mava on jaxmarl 0.2.0: it belongs in another"):
        update_readme.smax_10m("smax_hard_10m_jaxmarl")
    older = out / "smax_hard_10m_mava_smax002_jaxmarl"  # on the SMAX of jaxmarl 0.0.2 (--smax-wheel): named so
    shutil.copytree(mava, older)
    for path in older.glob("*.json.gz"):
        with gzip.open(path, "rt") as f:
            run = json.load(f)
        run["meta"]["smax"] = "jaxmarl 0.0.2"
        with gzip.open(path, "wt") as f:
            json.dump(run, f)
    table = update_readme.smax_10m("smax_hard_10m_mava_jaxmarl", "smax_hard_10m_mava_smax002_jaxmarl").splitlines()
    smax = [line.split(" | ")[2] for line in table if "| 2s3z |" in line]
    assert smax == ["jaxmarl 0.2.0", "jaxmarl 0.0.2", "jaxmarl 0.0.2 (inferred)"]  # Mava's: inferred
    shutil.copy(path, mava / "mappo_rnn_smax_2s3z_seed8.json.gz")  # a run on 0.0.2's SMAX among 0.2.0's
    for mode in ("greedy", "sampled"):
        shutil.copy(jaxmarl / f"mappo_rnn_smax_2s3z_seed1_{mode}.json", mava / f"mappo_rnn_smax_2s3z_seed8_{mode}.json")
    with pytest.raises(SystemExit, match="seed8.json.gz ran with --values mava on jaxmarl 0.0.2: it belongs in another"):
        update_readme.smax_10m("smax_hard_10m_mava_jaxmarl")
    assert [update_readme.duration(s) for s in (284, 3599, 3600, 12 * 3600)] == ["4.7 min", "60 min", "1.0 h", "12.0 h"]


def test_hard_map_table_reports_a_map_not_finished_with_its_measured_cost(results, tmp_path, monkeypatch):
    """A hard map measured by benchmark/measure/hard_map_sps.py with no finished paper-setting run of ours (27m_vs_30m
    while it runs in sittings) gets a row that says so, with its SPS and the hours of a 10M run at two significant digits,
    then Mava's row; a map with runs gets none, and the easy-map table never shows it."""
    import update_readme

    shutil.copy(ROOT / "benchmark/results/anchors.json", tmp_path)
    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    (tmp_path / "smax_10m_mappo").mkdir()
    shutil.copy(results / "summary.json", tmp_path / "smax_10m_mappo")
    (tmp_path / "smax_hard_10m_paper").mkdir()
    shutil.copy(results / "summary.json", tmp_path / "smax_hard_10m_paper")
    measured = [dict(env_id=e, script="mappo_rnn.py", setting="paper (Table 12)", sps=sps, hours_per_10m=1e7 / sps / 3600)
                for e, sps in (("27m_vs_30m", 213.4), ("2s3z", 1234.0))]  # fmt: skip
    for row in measured:
        row.update(machine="2-core CPU (x86_64)")
    (tmp_path / "hard_map_sps.json").write_text(json.dumps(measured))
    table = update_readme.smax_10m("smax_hard_10m_paper").splitlines()
    rows = [line.split(" | ") for line in table if line.startswith("| 27m_vs_30m |")]
    assert rows[0][1:8] == ["mappo_rnn.py, paper (Table 12)", "jaxmarl 0.2.0", "-", "not finished", "-", "-", "-"]
    assert rows[0][8] == "~13 h at 210 env steps/s, evaluation off (2-core CPU (x86_64), alone) |"  # 13.02 h
    assert len(rows) == 2 and rows[1][6] == "~79" and "another branch and config" in rows[1][1]  # 27m_vs_30m's own
    assert not any("not finished" in line for line in table if line.startswith("| 2s3z |"))  # it has runs
    assert "27m_vs_30m" not in update_readme.smax_10m("smax_10m_mappo")


# every family that summarize.py summarises from kept/ histories: each README table and figure read from its summary.json
FAMILIES_WITH_HISTORIES = sorted(
    p.parent.name for p in (ROOT / "benchmark/results").glob("*/summary.json") if (p.parent / "kept").is_dir()
)
assert {"mappo", "ippo", "mappo_rnn", "mappo_async_seed", "smax_10m_mappo", "hanabi_10m_mappo"} <= set(FAMILIES_WITH_HISTORIES)


@pytest.mark.parametrize("family", FAMILIES_WITH_HISTORIES)
def test_the_summary_recomputes_from_the_committed_histories(tmp_path, family):
    """benchmark/results/FAMILY/kept/ holds each run's evaluation history (its eval_summary.json, gzipped; for the
    small families, put back from git history by restore_histories.py): summarize.py on a copy gives the committed
    summary.json, from which update_readme writes the README's table."""
    kept = ROOT / "benchmark/results" / family / "kept"
    shutil.copytree(kept, tmp_path / "kept")
    summarize.main(str(tmp_path))
    recomputed = json.loads((tmp_path / "summary.json").read_text())
    assert recomputed == json.loads((ROOT / "benchmark/results" / family / "summary.json").read_text())
    finished = list(kept.glob("*.json.gz"))  # a .pt is a run still under way: not in the summary
    # a family in progress may have one finished run so far (smax_hard_10m_table2): every finished run, at least one
    assert sum(len(r["scores"]) for r in recomputed if "env_id" in r) == len(finished) >= 1


def test_sampled_scores_where_every_run_has_them(tmp_path):
    for seed, sampled in ((1, 0.5), (2, 0.25)):
        write_run(tmp_path, "3m", seed, [0.75] * 10)
        path = tmp_path / "runs" / f"3m__mappo__{seed}__0" / "eval_summary.json"
        path.write_text(json.dumps(dict(json.loads(path.read_text()), median_sampled_win_rate=sampled)))
    write_run(tmp_path, "2s3z", 1, [0.75] * 10)  # without --eval-sampled
    summarize.main(str(tmp_path))
    rows = {r["env_id"]: r for r in json.loads((tmp_path / "summary.json").read_text()) if "env_id" in r}
    assert rows["3m"]["sampled_scores"] == [50.0, 25.0] and "sampled_scores" not in rows["2s3z"]


FAKE_JAXMARL = """import json, os, subprocess, sys
if sys.argv[1] == "-c":  # the script's own check of a finished run's budget
    sys.exit(subprocess.run([{real!r}, *sys.argv[1:]]).returncode)
args = dict(zip(sys.argv[2::2], sys.argv[3::2]))  # after the runner's path: --flag value pairs
if args["--seed"] == os.environ.get("FAIL_SEED"):
    sys.exit("error: only 1 of 2 updates were logged")
budget = int(args["--stop-at-step"])
meta = dict(seed=int(args["--seed"]), num_updates=10**8, steps_per_update=100, stop_at_step=budget)
with open(args["--out"], "w") as f:
    json.dump(dict(config=dict(ANNEAL_LR=True), meta=meta, rows=[{{}}] * (budget // 100)), f)
"""


def stand_in(path, source: str):
    """An executable Python script at PATH (a stand-in for a python the benchmark scripts call)"""
    path.write_text(f"#!{sys.executable}\n" + source)
    path.chmod(0o755)
    return path


def benchmark_copy(tmp_path):
    """A copy of benchmark/ (its results left out) under TMP_PATH/repo: the scripts write results beside themselves"""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "benchmark", repo / "benchmark", ignore=shutil.ignore_patterns("results"))
    return repo


def test_hanabi_10m_jaxmarl_mode_skips_finished_runs_and_survives_a_failure(tmp_path):
    """`bash benchmark/hanabi_10m.sh jaxmarl` with a stand-in for the JaxMARL venv's python: a failed run leaves no
    result and the next still runs (exit 1); run again, finished runs are skipped and the failed one goes; a finished
    run of another budget, or of a budget set by TOTAL_TIMESTEPS (another learning-rate schedule), is neither skipped
    as done nor overwritten"""
    fake = stand_in(tmp_path / "python", FAKE_JAXMARL.format(real=sys.executable))
    out = tmp_path / "out"

    def run(fail_seed="", steps="1000"):
        env = dict(os.environ, JAXMARL_PYTHON=str(fake), JAXMARL_OUT=str(out), BASELINES="ippo_ff_hanabi", SEEDS="1 2")
        env.update(FAIL_SEED=fail_seed, TOTAL_TIMESTEPS=steps)
        cmd = ["bash", str(ROOT / "benchmark" / "hanabi_10m.sh"), "jaxmarl"]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    first = run(fail_seed="1")
    assert first.returncode == 1 and "failed: ippo_ff_hanabi seed 1" in first.stderr, first.stderr
    assert sorted(p.name for p in out.glob("*.json")) == ["ippo_ff_hanabi_seed2.json"]
    assert "only 1 of 2 updates" in (out / "ippo_ff_hanabi_seed1.log").read_text()
    second = run()
    assert second.returncode == 0 and "done already" in second.stderr and "seed2" in second.stderr, second.stderr
    assert json.loads((out / "ippo_ff_hanabi_seed1.json").read_text())["meta"]["seed"] == 1
    assert not list((out / "runs").iterdir())
    before = (out / "ippo_ff_hanabi_seed1.json").read_text()
    third = run(steps="2000")
    assert third.returncode == 1 and "another budget" in third.stderr, third.stderr
    assert (out / "ippo_ff_hanabi_seed1.json").read_text() == before
    annealed = json.loads(before)
    annealed["meta"]["stop_at_step"] = None  # run with TOTAL_TIMESTEPS at the budget: its rate falls to 0 there
    (out / "ippo_ff_hanabi_seed1.json").write_text(json.dumps(annealed))
    fourth = run()
    assert fourth.returncode == 1 and "another budget or schedule" in fourth.stderr, fourth.stderr


FAKE_JAXMARL_SMAX = """import json, os, sys
import numpy
if sys.argv[1] == "-c":  # python -c CODE ARGS (smax_hard_10m.sh's further): CODE runs as python would run it
    code, sys.argv = sys.argv[2], ["-c"] + sys.argv[3:]
    exec(code)
    sys.exit(0)
words = [w for w in sys.argv[2:] if w != "--sample"]  # the one flag without a value
script, args = os.path.basename(sys.argv[1]), dict(zip(words[::2], words[1::2]))
with open(os.environ["CALLS"], "a") as f:
    f.write(script + "".join(f" {k} {args[k]}" for k in ("--values", "--smax-wheel") if k in args) + "\\n")
if script == "jaxmarl_baseline.py":
    if args["--map"] == os.environ.get("FAIL_MAP"):
        sys.exit("error: only 1 of 610 updates were logged")
    if os.path.exists(args["--checkpoint"]):  # goes on from it
        with open(os.environ["CALLS"], "a") as f:
            f.write(f"going on from {numpy.load(args['--checkpoint'])['update']}\\n")
    os.makedirs(args["--snapshot-dir"], exist_ok=True)
    with open(args["--out"], "w") as f:
        json.dump(dict(config=dict(MAP_NAME=args["--map"]), meta=dict(seed=int(args["--seed"])), rows=[]), f)
    if args["--map"] == os.environ.get("STOP_MAP"):  # Ctrl-C: saved, status 3
        numpy.savez(args["--checkpoint"], update=int(os.environ.get("UPDATE", "1")))
        sys.exit(3)
else:  # jaxmarl_greedy_eval.py: the snapshots and the run's rows must be there
    assert os.path.isdir(args["--snapshot-dir"]) and json.load(open(args["--run-json"]))["config"]["MAP_NAME"]
    with open(args["--out"], "w") as f:
        json.dump(dict(sample="--sample" in sys.argv, rows=[]), f)
"""


def test_benchmark_scripts_are_read_whole_before_they_run():
    """bash reads a script as it runs it: an edit made during a run of hours would shift what it reads next (a line
    cut in two ran as a command once). Every benchmark script that runs more than one command is one brace group,
    read whole first, ending in exit; a wrapper whose last line execs another script needs none, nor a file sourced for
    the one function it defines (bash reads a function whole before it defines it)."""
    for script in sorted((ROOT / "benchmark").rglob("*.sh")):
        code = [line for line in script.read_text().splitlines() if line.strip() and not line.startswith("#")]
        if code[-1].startswith(("exec ", "SCRIPT=")) and "exec " in code[-1] and len(code) <= 3:
            continue  # e.g. benchmark/ippo.sh: nothing left to read after the exec
        if re.fullmatch(r"[a-z_]+\(\) \{", code[0]) and code[-1] == "}" and all(line[0] == " " for line in code[1:-1]):
            continue  # e.g. benchmark/jaxmarl/results_folder.sh: one function, nothing run
        assert code[0].startswith("{ ") and code[-2].startswith("exit") and code[-1] == "}", script


def test_an_edit_during_a_run_does_not_change_what_runs(tmp_path):
    """benchmark/mappo.sh with a stand-in python whose training run takes a second: the script is edited in place (lines
    added near its top, as an editor saving it may) while the run goes on; the script still ends as it began, with
    its summary, and nothing else runs."""
    repo = benchmark_copy(tmp_path)
    marks = {"started": tmp_path / "started", "summarized": tmp_path / "summarized"}  # a run marks its start, then sleeps
    fake = stand_in(tmp_path / "python", "import sys, time\nif sys.argv[1] == '-c':\n    sys.exit(0)\n"  # the import check
                    "if sys.argv[1].endswith('summarize.py'):\n"
                    f"    open({str(marks['summarized'])!r}, 'w').close()\nelse:\n"
                    f"    open({str(marks['started'])!r}, 'w').close()\n    time.sleep(1.5)\n")  # fmt: skip
    env = dict(os.environ, PYTHON=str(fake), ENV_IDS="3m", NUM_SEEDS="1", OUT=str(tmp_path / "out"), WORKERS="1")
    script = repo / "benchmark" / "mappo.sh"
    run = subprocess.Popen(["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not marks["started"].exists() and time.time() < deadline:  # bash is past its plan, in the run
        time.sleep(0.05)
    assert marks["started"].exists(), "the stand-in run never started"
    lines = script.read_text().splitlines(keepends=True)
    with open(script, "w") as f:  # in place: the same file, longer above the line bash reads next
        f.writelines(lines[:2] + ["# an edited comment, long enough to move every line below it\n" * 3] + lines[2:])
    try:
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 0 and "command not found" not in err and "syntax error" not in err, err
    assert marks["summarized"].exists()


def test_every_hard_map_setting_reaches_the_keep_the_table_the_curves_and_the_device_runs():
    """A setting of benchmark/smax_hard_10m.sh (a case of its setting()) is kept by its keep mode, run by
    device_runs.sh ours, named in the hard-map table, the table of falls and the figures of benchmark/results/README.md
    and in the compare figure: a setting added in one place and not the others would run
    and never be kept, or be kept and never shown"""
    import hard_maps_curves
    import update_readme

    script = (ROOT / "benchmark" / "smax_hard_10m.sh").read_text()
    settings = re.findall(r"^ {4}([a-z0-9]+)\) ENV_IDS=", script, flags=re.M)
    assert {"paper", "table2"} < set(settings), settings  # the parse itself: the two paper settings are cases
    [kept] = re.findall(r'^ALL_SETTINGS="([^"]*)"', script, flags=re.M)
    assert "keep) for s in ${SETTINGS:-$ALL_SETTINGS}; do" in script  # keep's default is that list
    [device] = re.findall(r'SETTINGS="([^"]*)"', (ROOT / "benchmark" / "jaxmarl" / "device_runs.sh").read_text())
    [glance] = [line.split()[2:-1] for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith("<!-- gen smax_10m smax_hard_10m_paper ")]  # fmt: skip
    detail = (ROOT / "benchmark" / "results" / "README.md").read_text().splitlines()
    [table] = [line.split()[2:-1] for line in detail if line.startswith("<!-- gen smax_10m smax_hard_10m_paper ")]
    table = [arg for arg in table if not arg.startswith("+")]  # options (+jaxmarl2023), not folders
    # the README's table at a glance: ours with the paper setting and the named one, JaxMARL and Mava run here
    assert glance == ["smax_10m", *(f"smax_hard_10m_{s}" for s in ("paper", "tuned", "jaxmarl", "mava_rec_mappo"))]
    assert set(glance) <= set(table)
    [falls] = [line.split()[3:-1] for line in detail if line.startswith("<!-- gen smax_falls ")]
    [figures] = [line.split()[3:-1] for line in detail if line.startswith("<!-- gen figures smax_hard_10m_")]
    folders = [f"smax_hard_10m_{s}" for s in settings]
    assert kept.split() == settings and device.split() == settings
    assert table[0] == "smax_10m" and falls == table[1:]  # the falls of every side the hard-map table shows
    assert figures == [f for f in table[1:] if not f.endswith(update_readme.BASELINE_FOLDERS)]  # and ours, each
    assert all(f in table and f in update_readme.SMAX_SETTINGS and f in hard_maps_curves.OURS for f in folders)


def test_every_mava_folder_has_its_config_changes_a_table_row_and_a_curve():
    """A folder of `smax_hard_10m.sh mava` (its own, or a MAVA_ABLATION case) is read by update_readme with the same
    --set changes the script runs with (it refuses a run with others), labelled in the table and in the compare
    figure, and named on the gen line of benchmark/results/README.md's hard-map table: an ablation added to the
    script alone would run and never be shown"""
    import hard_maps_curves
    import update_readme

    script = (ROOT / "benchmark" / "smax_hard_10m.sh").read_text()
    [own] = re.findall(r"local out=benchmark/results/(smax_hard_10m_mava\w+) ", script)
    cases = re.findall(r"^ {4}[a-z0-9]+\) set=\(--set ([^)]*)\) out=benchmark/results/(\w+) ;;", script, flags=re.M)
    assert cases, "the parse itself: noagentid is a case"
    sets = {own: []} | {folder: changes.split(" --set ") for changes, folder in cases}
    detail = (ROOT / "benchmark" / "results" / "README.md").read_text().splitlines()
    [table] = [line.split()[2:-1] for line in detail if line.startswith("<!-- gen smax_10m smax_hard_10m_paper ")]
    table = [arg for arg in table if not arg.startswith("+")]  # options (+jaxmarl2023), not folders
    assert update_readme.MAVA_SETS == sets
    assert set(hard_maps_curves.MAVA_FOLDERS) == set(sets)
    assert all(f in table and f in update_readme.SMAX_SETTINGS for f in sets)


def test_smax_hard_jaxmarl_mode_trains_evaluates_and_skips_what_is_done(tmp_path):
    """`bash benchmark/smax_hard_10m.sh jaxmarl` with a stand-in for the JaxMARL venv's python: each run trains, then
    its snapshots are evaluated greedy and sampled; a failed run leaves nothing and the next still runs (exit 1); run
    again, only what is missing runs. The results folder is the repo's, so the stand-in writes into a copy."""
    repo = benchmark_copy(tmp_path)
    fake = stand_in(tmp_path / "python", FAKE_JAXMARL_SMAX)
    calls = tmp_path / "calls"

    def run(fail_map="", values="own", wheel=""):
        calls.write_text("")
        env = dict(os.environ, JAXMARL_PYTHON=str(fake), CALLS=str(calls), FAIL_MAP=fail_map, SEEDS="1", JAXMARL_VALUES=values)
        env["SMAX_WHEEL"] = wheel
        env["MAPS"] = "5m_vs_6m 10m_vs_11m"
        cmd = ["bash", str(repo / "benchmark" / "smax_hard_10m.sh"), "jaxmarl"]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    out = repo / "benchmark/results/smax_hard_10m_jaxmarl"
    first = run(fail_map="5m_vs_6m")
    assert first.returncode == 1 and "failed: mappo_rnn_smax_5m_vs_6m_seed1" in first.stderr, first.stderr
    done = ["mappo_rnn_smax_10m_vs_11m_seed1" + end for end in (".json.gz", "_greedy.json", "_sampled.json")]
    assert sorted(p.name for p in out.iterdir() if not p.name.endswith((".log", "runs"))) == sorted(done)
    assert calls.read_text().split() == ["jaxmarl_baseline.py", "--values", "own"] * 2 + ["jaxmarl_greedy_eval.py"] * 2
    assert json.loads((out / done[2]).read_text())["sample"] and not json.loads((out / done[1]).read_text())["sample"]
    (out / done[2]).unlink()  # an evaluation that did not finish
    second = run()
    assert second.returncode == 0, second.stderr
    assert calls.read_text().split() == ["jaxmarl_baseline.py", "--values", "own"] + ["jaxmarl_greedy_eval.py"] * 3
    third = run()
    assert third.returncode == 0 and calls.read_text() == ""
    mava = run(values="mava")  # Mava's values on JaxMARL's config: the same runs again, in a folder of their own
    trained = [line for line in calls.read_text().splitlines() if line.startswith("jaxmarl_baseline.py")]
    assert mava.returncode == 0 and trained == ["jaxmarl_baseline.py --values mava"] * 2, mava.stderr
    assert len(list((repo / "benchmark/results/smax_hard_10m_mava_jaxmarl").glob("*.json.gz"))) == 2
    unknown = run(values="tuned")
    assert unknown.returncode == 2 and "JAXMARL_VALUES: own or mava" in unknown.stderr and calls.read_text() == ""
    assert not (repo / "benchmark/results/smax_hard_10m_tuned_jaxmarl").exists()
    wheel = tmp_path / "wheel"  # an unzipped jaxmarl 0.0.2 wheel: its SMAX, in a folder named by its release
    (wheel / "jaxmarl-0.0.2.dist-info").mkdir(parents=True)
    no_smax = run(values="mava", wheel=str(wheel))
    assert no_smax.returncode == 2 and "SMAX_WHEEL: an unzipped jaxmarl wheel" in no_smax.stderr and calls.read_text() == ""
    (wheel / "jaxmarl" / "environments" / "smax").mkdir(parents=True)
    older = run(values="mava", wheel=str(wheel))
    trained = [line for line in calls.read_text().splitlines() if line.startswith("jaxmarl_baseline.py")]
    assert older.returncode == 0 and trained == [f"jaxmarl_baseline.py --values mava --smax-wheel {wheel}"] * 2, older.stderr
    assert len(list((repo / "benchmark/results/smax_hard_10m_mava_smax002_jaxmarl").glob("*.json.gz"))) == 2
    assert run(wheel=str(wheel)).returncode == 0 and (repo / "benchmark/results/smax_hard_10m_smax002_jaxmarl").is_dir()
    no_wheel = run(values="mava", wheel=str(tmp_path))
    assert no_wheel.returncode == 2 and "SMAX_WHEEL: an unzipped jaxmarl wheel" in no_wheel.stderr and calls.read_text() == ""


def test_smax_hard_jaxmarl_mode_stops_and_goes_on_from_the_checkpoint(tmp_path):
    """A JaxMARL run stopped with Ctrl-C (jaxmarl_baseline.py saved its checkpoint, status 3) stops the mode there (the
    next map does not start; status 3) and keeps its snapshots; jaxmarl-keep (27m_vs_30m without MAPS) evaluates them
    and puts the run's state in kept/; the mode goes on from runs/ where it is as far on as kept/, else from kept/ (a
    later sitting committed elsewhere); on a machine without runs/ it goes on from kept/, evaluates, and removes
    kept/'s copy once the run is evaluated. A run cut short without its checkpoint starts again, its snapshots gone."""
    repo = benchmark_copy(tmp_path)
    fake = stand_in(tmp_path / "python", FAKE_JAXMARL_SMAX)
    calls = tmp_path / "calls"

    def run(mode="jaxmarl", stop_map="", maps="27m_vs_30m 10m_vs_11m", update=1):  # a stop saves UPDATE
        calls.write_text("")
        env = dict(os.environ, JAXMARL_PYTHON=str(fake), CALLS=str(calls), STOP_MAP=stop_map, SEEDS="1", FAIL_MAP="")
        env.update(MAPS=maps, JAXMARL_VALUES="own", SMAX_WHEEL="", UPDATE=str(update))
        cmd = ["bash", str(repo / "benchmark" / "smax_hard_10m.sh"), mode]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    out = repo / "benchmark/results/smax_hard_10m_jaxmarl"
    name = "mappo_rnn_smax_27m_vs_30m_seed1"
    stopped = run(stop_map="27m_vs_30m")
    assert stopped.returncode == 3 and f"stopped: {name}, saved in" in stopped.stderr, stopped.stderr
    assert calls.read_text().split("\n")[:-1] == ["jaxmarl_baseline.py --values own"]  # 10m_vs_11m did not start
    assert (out / "runs" / f"{name}.npz").exists() and (out / "runs" / name).is_dir()
    kept = run(mode="jaxmarl-keep", maps="")
    assert kept.returncode == 0 and f"kept: {name}" in kept.stderr, kept.stderr
    assert calls.read_text().split("\n")[:-1] == ["jaxmarl_greedy_eval.py"] * 2
    in_kept = sorted(p.name for p in (out / "kept").iterdir())
    assert in_kept == sorted(f"{name}{end}" for end in (".npz", ".json", "_greedy.json", "_sampled.json"))
    for update, goes_on_from in ((2, 1), (3, 2)):  # runs/ as far on as kept/ (update 1), then further on: from runs/
        assert run(stop_map="27m_vs_30m", update=update).returncode == 3
        assert calls.read_text().split("\n")[1] == f"going on from {goes_on_from}"
    np.savez(out / "kept" / f"{name}.npz", update=5)  # kept/ further on than runs/ (3): from kept/, its evaluations too
    (out / "kept" / f"{name}_greedy.json").write_text('{"sample": false, "rows": [], "sitting": "kept"}')
    assert run(stop_map="27m_vs_30m", update=6).returncode == 3 and calls.read_text().split("\n")[1] == "going on from 5"
    assert (out / "runs" / f"{name}_greedy.json").read_bytes() == (out / "kept" / f"{name}_greedy.json").read_bytes()
    np.savez(out / "kept" / f"{name}.npz", update=7)
    shutil.rmtree(out / "runs")  # another machine: the committed kept/ only
    went_on = run()
    assert went_on.returncode == 0, went_on.stderr
    assert (
        calls.read_text().split("\n")[:4]
        == ["jaxmarl_baseline.py --values own", "going on from 7"] + ["jaxmarl_greedy_eval.py"] * 2
    )
    assert (out / f"{name}.json.gz").exists() and (out / f"{name}_greedy.json").exists()
    assert not (out / "runs" / f"{name}.npz").exists() and not list((out / "kept").iterdir())
    (out / f"{name}.json.gz").unlink()  # a run cut short without its checkpoint: starts again
    (out / "runs" / name / "actor_0000.msgpack").write_text("")
    again = run()
    assert again.returncode == 0 and "going on" not in calls.read_text()
    assert not (out / "runs" / name / "actor_0000.msgpack").exists()


def test_smax_hard_refuses_a_python_without_the_repos_requirements(tmp_path):
    """PYTHON draws the figures after hours of runs: one that cannot import matplotlib stops every mode before any run
    (exit 2, saying what to do); plan, which only prints, still works"""
    repo = benchmark_copy(tmp_path)
    bare = stand_in(tmp_path / "bare", "import sys\nsys.exit(1 if 'matplotlib' in ' '.join(sys.argv) else 0)\n")
    fake = stand_in(tmp_path / "python", FAKE_JAXMARL_SMAX)
    calls = tmp_path / "calls"
    calls.write_text("")
    env = dict(os.environ, PYTHON=str(bare), JAXMARL_PYTHON=str(fake), MAVA_PYTHON=str(fake), CALLS=str(calls), SEEDS="1")
    for mode in ("jaxmarl", "mava", ""):
        cmd = ["bash", str(repo / "benchmark" / "smax_hard_10m.sh")] + ([mode] if mode else [])
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and f"PYTHON ({bare}) lacks" in done.stderr, (mode, done.stderr)
        assert calls.read_text() == "" and not (repo / "benchmark/results").exists()
    plan = subprocess.run(
        ["bash", str(repo / "benchmark" / "smax_hard_10m.sh"), "plan"], env=env, capture_output=True, text=True
    )
    assert plan.returncode == 0 and "mappo_rnn.py" in plan.stdout, plan.stderr


def test_smax_hard_maps_picks_the_runs_of_our_settings(tmp_path):
    """MAPS narrows each setting of ours to the maps of its own that MAPS names (a setting with none of them runs
    nothing; 27m_vs_30m runs only where named (paper, ent0, jaxcfg, mavacfg), and is kept in any case; the tuned
    setting's own runs are on smax_10m.sh's maps); a map that is neither stops every mode before any run (exit 2): a
    typo would select nothing"""
    repo = benchmark_copy(tmp_path)
    calls = tmp_path / "calls"
    fake = stand_in(tmp_path / "python", f"import sys\nopen({str(calls)!r}, 'a').write(' '.join(sys.argv[1:]))\n")

    def plan(maps, settings="paper ent0 epochs5", mode="plan"):
        env = dict(os.environ, PYTHON=sys.executable, SEEDS="1", SETTINGS=settings, MAPS=maps)
        env |= dict(JAXMARL_PYTHON=str(fake), MAVA_PYTHON=str(fake))  # the baselines' runs, were any to start
        cmd = ["bash", str(repo / "benchmark" / "smax_hard_10m.sh"), mode]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    def runs(done):  # (folder, map) of each planned run
        assert done.returncode == 0, done.stderr
        return [(re.search(r"results/(\w+) ", line)[1], re.search(r"--env-id (\S+)", line)[1])
                for line in done.stdout.splitlines()]  # fmt: skip

    everything = runs(plan(""))
    assert len(everything) == 3 + 3 + 1 and ("smax_hard_10m_epochs5", "10m_vs_11m") in everything
    assert runs(plan("3s5z_vs_3s6z")) == [("smax_hard_10m_paper", "3s5z_vs_3s6z"), ("smax_hard_10m_ent0", "3s5z_vs_3s6z")]
    assert runs(plan("5m_vs_6m 10m_vs_11m")) == [r for r in everything if r[1] != "3s5z_vs_3s6z"]
    assert runs(plan("3s5z_vs_3s6z", settings="epochs5")) == []
    named = [("smax_hard_10m_paper", "27m_vs_30m"), ("smax_hard_10m_ent0", "27m_vs_30m")]  # paper's and ent0's, named only
    assert runs(plan("27m_vs_30m")) == named and runs(plan("27m_vs_30m", settings="ent0")) == named[1:]
    tuned = ["3s5z", "3s_vs_5z", "6h_vs_8z"]  # its own runs: on the hard maps it has other settings' flags (linked)
    assert runs(plan("", settings="tuned")) == [("smax_hard_10m_tuned", m) for m in tuned]
    assert runs(plan("27m_vs_30m 3s5z", settings="paper tuned")) == [named[0], ("smax_hard_10m_tuned", "3s5z")]
    mavacfg = [("smax_hard_10m_mavacfg", m) for m in ("5m_vs_6m", "3s5z_vs_3s6z", "10m_vs_11m")]
    assert runs(plan("", settings="mavacfg")) == mavacfg
    probes = [("smax_hard_10m_jaxcfg", "27m_vs_30m"), ("smax_hard_10m_mavacfg", "27m_vs_30m")]  # named only, as paper's
    assert runs(plan("27m_vs_30m", settings="jaxcfg mavacfg")) == probes
    assert runs(plan("", settings="jaxcfg")) == [("smax_hard_10m_jaxcfg", "10m_vs_11m")]
    paper = repo / "benchmark" / "results" / "smax_hard_10m_paper"  # keep keeps a 27m_vs_30m run without MAPS
    (paper / "runs" / "27m_vs_30m__mappo_rnn__1__7").mkdir(parents=True)
    checkpoint = dict(args=dict(num_envs=8, num_steps=400), global_step=32000, iteration=10)
    torch.save(checkpoint, paper / "runs" / "27m_vs_30m__mappo_rnn__1__7" / "mappo_rnn.pt")
    assert plan("", settings="paper", mode="keep").returncode == 0
    assert [p.name for p in (paper / "kept").iterdir()] == ["27m_vs_30m__mappo_rnn__1__7.pt"]
    for mode in ("plan", "keep", "jaxmarl", "mava"):
        typo = plan("5m_vs_6m 3s5z_vs_3s7z", mode=mode)
        assert typo.returncode == 2 and "MAPS: '3s5z_vs_3s7z' is not a hard map" in typo.stderr, (mode, typo.stderr)
        assert typo.stdout == "" and not calls.exists()


def test_launchers_refuse_a_python_without_the_repos_requirements(tmp_path):
    """mappo.sh (so every launcher of our runs) and vmas.sh's BenchMARL mode stop before any run when PYTHON lacks
    matplotlib, and mappo.sh's keep, which reads checkpoints, when it lacks torch (exit 2, saying what to do): a python
    outside the venv would misread every checkpoint as unreadable"""
    repo = benchmark_copy(tmp_path)
    calls = tmp_path / "calls"
    record = f"import sys\nopen({str(calls)!r}, 'a').write(' '.join(sys.argv[1:]).replace(chr(10), ' ') + '\\n')\n"
    no_plots = stand_in(tmp_path / "no_plots", record + "sys.exit(1 if 'matplotlib' in ' '.join(sys.argv) else 0)\n")
    no_torch = stand_in(tmp_path / "no_torch", record + "sys.exit(1 if 'torch' in ' '.join(sys.argv) else 0)\n")
    fake = stand_in(tmp_path / "benchmarl", record)
    cases = [
        ("mappo.sh", "", no_plots),
        ("vmas.sh", "", no_plots),
        ("vmas.sh", "benchmarl", no_plots),
        ("mappo.sh", "keep", no_torch),
    ]
    for script, mode, python in cases:
        calls.write_text("")
        env = dict(os.environ, PYTHON=str(python), BENCHMARL_PYTHON=str(fake), OUT=str(tmp_path / "out"), ENV_IDS="3m")
        cmd = ["bash", str(repo / "benchmark" / script)] + ([mode] if mode else [])
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and f"PYTHON ({python}) lacks" in done.stderr, (script, mode, done.stderr)
        assert [line.split()[0] for line in calls.read_text().splitlines()] == ["-c"], (script, mode)  # the check alone
    kept = subprocess.run(["bash", str(repo / "benchmark" / "mappo.sh"), "keep"], env=dict(env, PYTHON=str(no_plots)),
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert kept.returncode == 0, kept.stderr  # keep draws nothing: matplotlib is not needed there


def test_compare_histories_reads_both_sides_up_to_one_step(tmp_path):
    """compare_histories.py: per seed the median of the last 10 evaluations at or before the step read up to (the
    smallest budget by default: a longer run is cut there), and the mean over seeds"""
    before, after = tmp_path / "before", tmp_path / "after"
    for seed in (1, 2):  # 22 evaluations of 3200 steps; the first 12 score 0.1 * seed, the rest 1.0
        write_run(before, "3m", seed, [0.1 * seed] * 10 + [1.0] * 10, train=[0.2] * 20, budget=3200 * 22)
        write_run(after, "3m", seed, [0.3] * 10, train=[0.4] * 10, budget=3200 * 12)  # 12 evaluations: 0, 0, 0.3 x 10
    out = tmp_path / "cmp" / "compare"
    cmd = [sys.executable, str(ROOT / "benchmark" / "report" / "compare_histories.py"), before, after, "--out", out]
    subprocess.run(cmd + ["--labels", "old", "new"], check=True, capture_output=True)
    result = json.loads(out.with_suffix(".json").read_text())
    assert result["until"] == 3200 * 12  # the shorter side's budget
    assert result["per_seed"]["old"]["greedy evaluation"] == {"1": pytest.approx(0.1), "2": pytest.approx(0.2)}
    assert result["mean"]["old"]["greedy evaluation"] == pytest.approx(0.15)  # the 1.0s after step 38400 not read
    assert result["per_seed"]["new"]["greedy evaluation"] == {"1": 0.3, "2": 0.3}
    assert result["mean"]["new"]["training episodes"] == pytest.approx(0.4)
    assert out.with_suffix(".png").stat().st_size > 0 and "| new | greedy evaluation |" in out.with_suffix(".md").read_text()


def test_vmas_compare_reads_both_sides_over_the_same_window_and_the_readme_shows_it(tmp_path, monkeypatch):
    """vmas_compare.py: ours (summarize.py's reading of vmas_mappo) and BenchMARL's rows, each seed's median over the
    last 10 % of the smallest budget (ours: an evaluation every 3200 steps; BenchMARL: one every 9600 frames, a training
    return every 3200), then the mean over seeds; update_readme's vmas table and speed line from its files"""
    import update_readme
    import vmas_compare

    for seed in (1, 2):  # 32 evaluations up to 102,400 steps; the window (92,160, 102,400] holds the last 4
        returns = [-10.0] * 29 + [-1.0 * seed] * 3  # in the window -10 and 3 x -seed: median -seed
        write_run(tmp_path / "vmas_mappo", "vmas/navigation", seed, [0.0] * 30, returns=returns, train=[-5.0] * 30,
                  train_key="train_return")  # fmt: skip
    summarize.main(str(tmp_path / "vmas_mappo"))  # scored by return, as MPE (it took vmas/ for a SMAX map once)
    [row] = [r for r in json.loads((tmp_path / "vmas_mappo/summary.json").read_text()) if "env_id" in r]
    assert (row["metric"], row["scores"]) == ("team return", [-10.0, -10.0])  # medians of the last 10
    (tmp_path / "vmas_benchmarl").mkdir()
    for seed, late in ((1, 0.5), (2, 1.5)):  # frames up to 105,600 (ours stop at 102,400: the window is theirs too)
        rows = [dict(step=3200 * (i + 1), train_return=late if i >= 29 else 0.0) for i in range(33)]
        for row in rows[2::3]:
            row["eval_return"] = late if row["step"] > 92160 else -20.0
        rows[-1].update(train_return=100.0, eval_return=100.0)  # frame 105,600, past the window: never read
        (tmp_path / f"vmas_benchmarl/navigation_mappo_seed{seed}.json.gz").write_bytes(
            gzip.compress(json.dumps(dict(meta={}, rows=rows)).encode())
        )
    vmas_compare.main(["--results", str(tmp_path)])
    result = json.loads((tmp_path / "vmas_compare/compare.json").read_text())
    assert result["window"] == [pytest.approx(0.9 * 102400), 102400]
    ours, theirs = result["rows"]
    assert (ours["implementation"], ours["seeds"], ours["eval"]) == ("ours", [1, 2], [-1.0, -2.0])
    assert ours["eval_mean"] == pytest.approx(-1.5) and ours["train"] == [-5.0, -5.0]
    assert (theirs["implementation"], theirs["eval"], theirs["eval_mean"]) == ("BenchMARL", [0.5, 1.5], 1.0)
    assert theirs["train"] == [0.5, 1.5]  # frames 92,800 to 102,400; 105,600 lies past the window
    assert (tmp_path / "vmas_compare/curves.png").stat().st_size > 0

    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    lines = update_readme.vmas().splitlines()
    # 3 significant digits of the task's largest return (-5) set its decimals: 2 here
    assert lines[2] == "| vmas/navigation | MAPPO | mappo.py | 2 | -1.00, -2.00 | -1.50 | -5.00, -5.00 | -5.00 |"
    assert lines[3] == "| vmas/navigation | MAPPO | BenchMARL MAPPO | 2 | 0.50, 1.50 | 1.00 | 0.50, 1.50 | 1.00 |"
    assert lines[5] == "Read over env steps 0.09M to 0.10M."  # no speed line without vmas_speed.json
    # vmas_speed.py's timings: 3 alternated per side at the shared setting, BenchMARL's also at its own configuration
    ours_side = dict(sps=[3712.0, 3650.0, 3760.0], median=3712.0, range=[3650.0, 3760.0])
    theirs_side = dict(sps=[3100.4, 3020.0, 3150.0], median=3100.4, range=[3020.0, 3150.0])
    own_side = dict(sps=[251.2, 248.0, 255.0], median=251.2, range=[248.0, 255.0])
    speed = dict(task="navigation", algorithm="mappo", ours=ours_side, benchmarl=theirs_side, ratio=3712.0 / 3100.4)
    speed.update(benchmarl_own=own_side, own_ratio=3712.0 / 251.2)
    setting = dict(name="60 envs x 100 steps", unequal="ours add LayerNorms")
    result = dict(machine="2-core CPU", command="cmd", pinning="taskset -c 1", threads=1, setting=setting, frames=60000,
                  own=dict(ours="VMAS_PRESET", benchmarl="base_experiment.yaml"), own_frames=18000, repeats=3, rows=[speed])  # fmt: skip
    (tmp_path / "vmas_speed.json").write_text(json.dumps(result))
    text = update_readme.vmas()
    assert lines[5] + " Env steps trained per second" in text
    assert (
        "pinned to one core (`taskset -c 1`) (the other core ran other work" in text
        and "1 thread (OMP" in text
        and "the median of 3" in text
    )
    # equal work: the setting named, medians and ranges to 3 digits, the ratio of the medians
    assert "At equal work, both sides at one shared setting (60 envs x 100 steps) and 60,000 env steps per run: " in text
    assert "vmas/navigation MAPPO: ours 3,710 (3,650 to 3,760), BenchMARL 3,100 (3,020 to 3,150): 1.20x." in text
    assert "Not made equal (the implementations' own): ours add LayerNorms." in text
    # each side's own configuration, labelled as such
    assert "Each with its own configuration, a comparison of configurations, not an implementation speed" in text
    assert "vmas/navigation MAPPO: ours 3,710, BenchMARL 251 (248 to 255): 15x." in text
    del result["own"]  # --no-own: the equal-work line only
    (tmp_path / "vmas_speed.json").write_text(json.dumps(result))
    assert "At equal work" in update_readme.vmas() and "its own configuration" not in update_readme.vmas()


def test_vmas_compare_reads_benchmarls_tuned_runs_finished_or_not_and_labels_the_unfinished(tmp_path, monkeypatch):
    """vmas_compare.py's "fine_tuned": BenchMARL's VMAS-tuned runs at their own budget, each alone: a finished one over
    the last 10 % of its budget, one under way (the runner's checkpoint, rows inside) over its last 3 evaluations, a
    finished run's stale checkpoint ignored; update_readme's table says which is which"""
    import update_readme
    import vmas_compare

    def rows(evals: list, every: int = 120_000) -> list:
        return [dict(step=every * (i + 1), eval_return=v, train_return=0.0) for i, v in enumerate(evals)]

    base = tmp_path / "vmas_benchmarl"
    base.mkdir()
    (base / "navigation_mappo_seed1.json.gz").write_bytes(gzip.compress(json.dumps(dict(meta={}, rows=rows([0.5]))).encode()))
    tuned = tmp_path / "vmas_benchmarl_fine_tuned"
    (tuned / "kept").mkdir(parents=True)
    # finished: budget 1.2M, 10 evaluations; the last 10 % (1.08M, 1.2M] holds only the last one
    finished = dict(meta=dict(budget=1_200_000), rows=rows([0.1] * 9 + [0.9]))
    (tuned / "navigation_mappo_seed1.json.gz").write_bytes(gzip.compress(json.dumps(finished).encode()))
    torch.save(dict(rows=rows([-5.0])), tuned / "kept" / "navigation_mappo_seed1.pt")  # stale: never to be loaded
    # under way: 5 of its 10M frames' evaluations so far; the last 3 are 0.2, 0.4, 0.3
    going = dict(run=dict(budget=10_000_000), rows=rows([0.0, 0.1, 0.2, 0.4, 0.3]))
    torch.save(going, tuned / "kept" / "navigation_mappo_seed2.pt")
    # just started: a batch trained, no evaluation yet
    started = dict(run=dict(budget=10_000_000), rows=[dict(step=60_000, train_return=0.0)])
    torch.save(started, tuned / "kept" / "navigation_mappo_seed3.pt")
    vmas_compare.main(["--results", str(tmp_path)])
    result = json.loads((tmp_path / "vmas_compare/compare.json").read_text())
    done, going, started = result["fine_tuned"]
    assert (started["score"], started["read_over"], started["reached"]) == (None, None, 60_000)
    assert (done["seed"], done["finished"], done["score"], done["reached"]) == (1, True, 0.9, 1_200_000)
    assert done["read_over"] == [pytest.approx(1_080_000), 1_200_000]
    assert (going["seed"], going["finished"], going["score"], going["reached"]) == (2, False, 0.3, 600_000)
    assert going["read_over"] == [360_000, 600_000]
    assert (tmp_path / "vmas_compare/curves_fine_tuned.png").stat().st_size > 0

    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    text = update_readme.vmas()
    assert "| vmas/navigation | MAPPO | 1 | 1.2M | 0.9 | 1.08M to 1.20M |" in text
    assert "| vmas/navigation | MAPPO | 2 | 0.60M of 10M: unfinished | 0.3 | 0.36M to 0.60M |" in text
    assert "| vmas/navigation | MAPPO | 3 | 0.06M of 10M: unfinished | - | - |" in text
    for path in tuned.rglob("*_seed*"):
        path.unlink()
    vmas_compare.main(["--results", str(tmp_path)])
    assert not (tmp_path / "vmas_compare/curves_fine_tuned.png").exists()
    assert update_readme.vmas().endswith("(`BENCHMARL_CONFIG=fine_tuned bash benchmark/vmas.sh benchmarl`): no run yet.")


def test_vmas_speed_leaves_benchmarls_first_batch_out_and_gives_medians_and_ranges():
    """vmas_speed.py: BenchMARL's speed from the runner's rows (cumulative wall time) after its first batch, as ours'
    logged SPS leaves its warm-up out; each side's timings, their median and range"""
    import vmas_speed

    rows = [dict(step=6000, wall_time=5.0), dict(step=12000, wall_time=7.0), dict(step=18000, wall_time=9.5, eval_time=0.5)]
    assert vmas_speed.after_first_batch(rows) == pytest.approx(12000 / 4.0)  # the warm-up's 5 s and the evaluation out
    with pytest.raises(ValueError):
        vmas_speed.after_first_batch(rows[:1])
    assert vmas_speed.summary([3.0, 1.0, 2.0]) == dict(sps=[3.0, 1.0, 2.0], median=2.0, range=[1.0, 3.0])
    assert vmas_speed.pinned(["python"], 1) == ["taskset", "-c", "1", "python"]
    assert vmas_speed.pinned(["python"], None) == ["python"]
    assert vmas_speed.one_thread(1)["OMP_NUM_THREADS"] == "1" == vmas_speed.one_thread(1)["MKL_NUM_THREADS"]


def test_hard_maps_curves_put_ours_and_jaxmarl_on_one_figure(tmp_path):
    """hard_maps_curves.py: a running mean over the last 10 points; ours (a settings folder) and JaxMARL's run (its
    rows and our evaluations of it) of the same map on one figure"""
    import hard_maps_curves

    assert hard_maps_curves.smooth([1, 2, 3, 4], window=2).tolist() == [1.0, 1.5, 2.5, 3.5]
    write_run(tmp_path / "smax_hard_10m_paper", "5m_vs_6m", 1, [0.1] * 10, train=[0.2] * 10)
    jaxmarl = tmp_path / "smax_hard_10m_jaxmarl"
    jaxmarl.mkdir()
    rows = [dict(step=100 * (i + 1), win_rate=0.1 * (i % 2)) for i in range(20)]
    with gzip.open(jaxmarl / "mappo_rnn_smax_5m_vs_6m_seed1.json.gz", "wt") as f:
        json.dump(dict(rows=rows + [dict(step=2100, win_rate=float("nan"))]), f)
    for mode in ("greedy", "sampled"):
        (jaxmarl / f"mappo_rnn_smax_5m_vs_6m_seed1_{mode}.json").write_text(json.dumps(dict(rows=rows[::5])))
    shutil.copytree(jaxmarl, tmp_path / "smax_hard_10m_mava_jaxmarl")  # Mava's values on JaxMARL's config: a side of its own
    for name in (tmp_path / "smax_hard_10m_mava_jaxmarl").glob("*_sampled.json"):
        name.unlink()  # not evaluated yet: left out, and with it the side
    sides = {**hard_maps_curves.ours(str(tmp_path)), **hard_maps_curves.jaxmarl(str(tmp_path))}
    assert sorted(sides) == ["JaxMARL mappo_rnn_smax", "mappo_rnn.py, paper"]
    x, y = sides["JaxMARL mappo_rnn_smax"]["5m_vs_6m"]["training episodes"][0]
    assert len(x) == 20 and y[-1] == pytest.approx(0.05)  # the NaN row left out; the mean of 0, 0.1, ... over 10
    shutil.copy(jaxmarl / "mappo_rnn_smax_5m_vs_6m_seed1_sampled.json", tmp_path / "smax_hard_10m_mava_jaxmarl")
    mava = hard_maps_curves.jaxmarl(str(tmp_path))["JaxMARL mappo_rnn_smax, Mava's values"]["5m_vs_6m"]
    assert [len(mava[score]) for score in ("greedy eval", "sampled eval", "training episodes")] == [1, 1, 1]
    assert "sampled eval" not in sides["mappo_rnn.py, paper"]["5m_vs_6m"]  # no --eval-sampled in that run
    hard_maps_curves.main(["--results", str(tmp_path)])
    assert (tmp_path / "smax_hard_10m_compare" / "curves.png").stat().st_size > 0
    # every side its own colour, the same on every row, whichever sides a figure has
    every = {
        "ours": {hard_maps_curves.our_label(setting): {} for setting in hard_maps_curves.OURS.values()},
        "JaxMARL": {label: {} for label in hard_maps_curves.JAXMARL_FOLDERS.values()},
        "Mava": {label: {} for label in hard_maps_curves.MAVA_FOLDERS.values()},
    }
    styles = hard_maps_curves.line_styles(every)
    assert len(styles) == sum(map(len, every.values())) > 10  # more sides than matplotlib's 10 colours:
    assert len({colour for colour, _ in styles.values()}) == len(styles)  # still none shared
    assert {style for _, style in styles.values()} == {"-", "--", "-."}
    some = hard_maps_curves.line_styles({"JaxMARL": every["JaxMARL"], "other": {}})
    assert all(some[label] == styles[label] for label in every["JaxMARL"])
    # a run of ours not finished: its setting's colour, dotted; one of a setting unknown to the catalog, a new colour
    unfinished = {
        "mappo_rnn.py, ent0 ablation, seed 1, not finished: 4.6M": {},
        "mappo_rnn.py, x, seed 2, not finished: 1M": {},
    }
    some = hard_maps_curves.line_styles({"ours, not finished": unfinished, "JaxMARL": every["JaxMARL"]})
    assert some["mappo_rnn.py, ent0 ablation, seed 1, not finished: 4.6M"] == (styles["mappo_rnn.py, ent0 ablation"][0], ":")
    assert some["mappo_rnn.py, x, seed 2, not finished: 1M"][0] not in {colour for colour, _ in styles.values()}


def test_hard_maps_curves_draw_a_run_not_finished_from_its_kept_checkpoint(tmp_path):
    """hard_maps_curves.py: a run of ours that goes on in sittings (27m_vs_30m) is a dotted line of its own, from the
    evaluations its kept checkpoint holds (older checkpoints: no sampled columns), each score read from the column
    mappo_rnn.py's eval_summary reads it from; a finished one is not drawn twice"""
    import hard_maps_curves
    import mappo_rnn

    kept = tmp_path / "smax_hard_10m_paper" / "kept"
    kept.mkdir(parents=True)
    nan = float("nan")
    evals = [[3200.0 * (i + 1), 0.1 * i, 0.0, 1.0, 0.2, 0.3 if i % 2 else nan, 0.0] for i in range(12)]
    args = dict(total_timesteps=10_000_000, env_id="27m_vs_30m", seed=1, num_envs=8, num_steps=400)
    torch.save(dict(args=args, global_step=38400, evals=evals), kept / "27m_vs_30m__mappo_rnn__1__0.pt")
    older = [e[:5] for e in evals[:3]]
    torch.save(dict(args={**args, "seed": 2}, global_step=9600, evals=older), kept / "27m_vs_30m__mappo_rnn__2__0.pt")
    done = dict(args={**args, "seed": 3, "total_timesteps": 40000}, global_step=38400, evals=evals)  # 12 rollouts of 3200
    torch.save(done, kept / "27m_vs_30m__mappo_rnn__3__0.pt")
    sides = hard_maps_curves.ours_unfinished(str(tmp_path))
    seed1, seed2 = "mappo_rnn.py, paper, seed 1, not finished: 0.0M", "mappo_rnn.py, paper, seed 2, not finished: 0.0M"
    assert sorted(sides) == [seed1, seed2]
    [(x, y)] = sides[seed1]["27m_vs_30m"]["greedy eval"]
    assert x.tolist() == [3200.0 * (i + 1) for i in range(12)] and y[-1] == pytest.approx(
        np.mean([0.1 * i for i in range(2, 12)])
    )
    [(x, y)] = sides[seed1]["27m_vs_30m"]["sampled eval"]
    assert len(x) == 6 and y.tolist() == pytest.approx([0.3] * 6)  # the evaluations without sampled episodes left out
    assert sorted(sides[seed2]["27m_vs_30m"]) == ["greedy eval", "training episodes"]
    rows = mappo_rnn.eval_summary(evals, has_wins=True)["evals"]
    for score, key in {
        "greedy eval": "win_rate",
        "sampled eval": "sampled_win_rate",
        "training episodes": "train_win_rate",
    }.items():
        [(x, y)] = sides[seed1]["27m_vs_30m"][score]
        logged = [row for row in rows if key in row]
        assert x.tolist() == [row["step"] for row in logged] and y == pytest.approx(
            hard_maps_curves.smooth([row[key] for row in logged])
        )
    hard_maps_curves.main(["--results", str(tmp_path)])
    assert (tmp_path / "smax_hard_10m_compare" / "curves.png").stat().st_size > 0


def test_a_jaxmarl_run_not_finished_is_drawn_from_its_kept_sitting_and_counted_in_its_row(tmp_path, monkeypatch):
    """A JaxMARL run that goes on in sittings (smax_hard_10m.sh jaxmarl-keep: kept/NAME.npz, its rows so far NAME.json,
    our evaluations of its actors so far): hard_maps_curves.py draws it dotted, its seed and how far it got in its
    label, once both evaluations are there; the README's row counts it as unfinished"""
    import hard_maps_curves
    import update_readme

    kept = tmp_path / "smax_hard_10m_jaxmarl" / "kept"
    kept.mkdir(parents=True)
    name = "mappo_rnn_smax_27m_vs_30m_seed2"
    rows = [dict(step=16384 * (i + 1), win_rate=0.05 * i) for i in range(30)]
    (kept / f"{name}.json").write_text(json.dumps(dict(rows=rows)))
    (kept / f"{name}.npz").write_bytes(b"")
    (kept / f"{name}_greedy.json").write_text(json.dumps(dict(rows=rows[::10])))
    assert hard_maps_curves.jaxmarl_unfinished(str(tmp_path)) == {}  # the sampled evaluation still to come
    (kept / f"{name}_sampled.json").write_text(json.dumps(dict(rows=rows[::5])))
    sides = hard_maps_curves.jaxmarl_unfinished(str(tmp_path))
    label = "JaxMARL mappo_rnn_smax, seed 2, not finished: 0.5M"
    assert list(sides) == [label] and list(sides[label]) == ["27m_vs_30m"]
    curves = sides[label]["27m_vs_30m"]
    [(x, y)] = curves["greedy eval"]
    assert x.tolist() == [16384, 16384 * 11, 16384 * 21] and y.tolist() == pytest.approx([0.0, 0.5, 1.0])
    [(x, y)] = curves["sampled eval"]
    assert len(x) == 6
    [(x, y)] = curves["training episodes"]
    assert len(x) == 30 and y[-1] == pytest.approx(np.mean([0.05 * i for i in range(20, 30)]))
    assert hard_maps_curves.jaxmarl(str(tmp_path)) == {}  # no finished run: not among the finished sides
    styles = hard_maps_curves.line_styles({"JaxMARL, not finished": sides})
    assert styles[label] == (
        hard_maps_curves.line_styles({"JaxMARL": {"JaxMARL mappo_rnn_smax": {}}})["JaxMARL mappo_rnn_smax"][0],
        ":",
    )
    hard_maps_curves.main(["--results", str(tmp_path)])
    assert (tmp_path / "smax_hard_10m_compare" / "curves.png").stat().st_size > 0
    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    (kept / "mappo_rnn_smax_10m_vs_11m_seed1_greedy.json").write_text("{}")  # not a sitting of its own
    assert update_readme.unfinished_runs("smax_hard_10m_jaxmarl", "27m_vs_30m") == 1
    assert update_readme.unfinished_runs("smax_hard_10m_jaxmarl", "10m_vs_11m") == 0


def write_mava_run(folder, env_id: str, seed: int, win_rates: list, greedy=False, smax="jaxmarl 0.0.2", set_=()):
    """a run of benchmark/mava/mava_baseline.py: one row per evaluation (every 10 updates of 16,384 env steps)"""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [dict(step=163840 * (i + 1), win_rate=w) for i, w in enumerate(win_rates)]
    meta = dict(map=env_id, seed=seed, smax=smax, evaluation_greedy=greedy, wall_time=9000.0 + seed, set=list(set_))
    with gzip.open(folder / f"rec_mappo_{env_id}_seed{seed}.json.gz", "wt") as f:
        json.dump(dict(config={}, meta=meta, rows=rows), f)


def test_mava_runs_take_the_column_of_their_metric_and_their_smax(tmp_path, monkeypatch):
    """Mava's own runs (smax_hard_10m.sh mava): per seed the median of its last 10 evaluations, in the sampled column
    (its config's evaluation_greedy: False), no greedy or training score; its SMAX release; the run's wall time; and
    a side of its own on the compare figure"""
    import hard_maps_curves
    import update_readme

    shutil.copy(ROOT / "benchmark/results/anchors.json", tmp_path)
    monkeypatch.setattr(update_readme, "RESULTS", str(tmp_path))
    mava = tmp_path / "smax_hard_10m_mava_rec_mappo"
    write_mava_run(mava, "10m_vs_11m", 0, [0.9] * 52 + [0.5, 0.6, 0.7, 0.4, 0.55, 0.65, 0.45, 0.6, 0.5, 0.6])
    write_mava_run(mava, "10m_vs_11m", 1, [0.3] * 62)
    (mava / "rec_mappo_10m_vs_11m_seed2.log").write_text("")  # a log is not a run
    table = update_readme.smax_10m("smax_hard_10m_mava_rec_mappo").splitlines()
    [row] = [line.split(" | ") for line in table if line.startswith("| 10m_vs_11m | Mava rec_mappo")]
    assert row[1:8] == [
        "Mava rec_mappo (82583ba), its SMAX sweep config, run by us",
        "jaxmarl 0.0.2",
        "2",
        "10.2M",
        "-",
        "57, 30",  # seed 0: the median of its last 10 is 0.575, the first 52 left out
        "-",
    ]
    assert row[8] == "2.5 h (2-core CPU, beside our runs) |"
    assert "smax_hard_10m_compare/curves.png" in "\n".join(table)  # every implementation's figure, no figure of its own
    side = hard_maps_curves.mava(str(tmp_path))
    assert list(side) == ["Mava rec_mappo, jaxmarl 0.0.2"] and list(side["Mava rec_mappo, jaxmarl 0.0.2"]["10m_vs_11m"]) == [
        "sampled eval"
    ]
    write_mava_run(mava, "5m_vs_6m", 0, [0.25] * 10, greedy=True)  # a greedy config: the greedy column
    [row] = [
        line.split(" | ")
        for line in update_readme.smax_10m("smax_hard_10m_mava_rec_mappo").splitlines()
        if "| 5m_vs_6m | Mava rec_mappo" in line
    ]
    assert row[5:8] == ["25", "-", "-"]
    noid = tmp_path / "smax_hard_10m_mava_noagentid_rec_mappo"  # MAVA_ABLATION=noagentid: a row and a side of its own
    write_mava_run(noid, "10m_vs_11m", 0, [0.2] * 62, set_=["system.add_agent_id=False"])
    [row] = [
        line for line in update_readme.smax_10m(noid.name).splitlines() if line.startswith("| 10m_vs_11m | Mava rec_mappo")
    ]
    assert (
        "| Mava rec_mappo (82583ba), ablation: its SMAX sweep config without agent ids (system.add_agent_id=False), run by us |"
        in row
    )
    assert row.split(" | ")[6] == "20"
    assert sorted(hard_maps_curves.mava(str(tmp_path))) == [
        "Mava rec_mappo, jaxmarl 0.0.2",
        "Mava rec_mappo, no agent ids, jaxmarl 0.0.2",
    ]
    write_mava_run(mava, "10m_vs_11m", 2, [0.2] * 62, set_=["system.add_agent_id=False"])  # in the other folder
    with pytest.raises(SystemExit, match="seed2.json.gz ran with --set .'system.add_agent_id=False'.: it belongs in another"):
        update_readme.smax_10m("smax_hard_10m_mava_rec_mappo")


FAKE_MAVA_RUNNER = """import json, os, sys
args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
with open(os.environ["CALLS"], "a") as f:
    f.write(" ".join([os.path.basename(sys.argv[1]), args["--map"], args["--seed"]] + args.get("--set", "").split()) + "\\n")
if args["--map"] == os.environ.get("FAIL_MAP"):
    sys.exit("error: rec_mappo.py exited with 1")
with open(args["--out"], "w") as f:
    meta = dict(map=args["--map"], seed=int(args["--seed"]), smax="jaxmarl 0.0.2", evaluation_greedy=False, wall_time=1.0)
    meta["set"] = [args["--set"]] if "--set" in args else []
    json.dump(dict(config={}, meta=meta, rows=[dict(step=163840, win_rate=0.5)]), f)
"""


def test_smax_hard_mava_mode_runs_what_is_missing(tmp_path):
    """`bash benchmark/smax_hard_10m.sh mava` with a stand-in for Mava's venv python: each run of MAPS x SEEDS (Mava's
    sweep seeds by default) goes through mava_baseline.py into the folder, gzipped; a failed run leaves nothing and the
    next still runs (exit 1); run again, only the missing one runs"""
    repo = benchmark_copy(tmp_path)
    fake = stand_in(tmp_path / "python", FAKE_MAVA_RUNNER)
    calls = tmp_path / "calls"

    def run(fail_map="", seeds=None, ablation=""):
        calls.write_text("")
        env = dict(os.environ, MAVA_PYTHON=str(fake), CALLS=str(calls), FAIL_MAP=fail_map, MAPS="5m_vs_6m 10m_vs_11m")
        env["MAVA_ABLATION"] = ablation
        env.pop("SEEDS", None)
        if seeds:
            env["SEEDS"] = seeds
        cmd = ["bash", str(repo / "benchmark" / "smax_hard_10m.sh"), "mava"]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    out, maps = repo / "benchmark/results/smax_hard_10m_mava_rec_mappo", ("5m_vs_6m", "10m_vs_11m")
    first = run(fail_map="5m_vs_6m", seeds="0")
    assert first.returncode == 1 and "failed: rec_mappo_5m_vs_6m_seed0" in first.stderr, first.stderr
    assert calls.read_text().split("\n")[:-1] == ["mava_baseline.py 5m_vs_6m 0", "mava_baseline.py 10m_vs_11m 0"]
    assert sorted(p.name for p in out.glob("*.json.gz")) == ["rec_mappo_10m_vs_11m_seed0.json.gz"]
    second = run()  # seeds 0 1 2: the one done is skipped
    assert second.returncode == 0 and "done already: rec_mappo_10m_vs_11m_seed0" in second.stderr, second.stderr
    assert len(calls.read_text().splitlines()) == 5 and len(list(out.glob("*.json.gz"))) == 6
    noid = run(seeds="0", ablation="noagentid")  # a named change to Mava's config: the same runs, a folder of their own
    assert noid.returncode == 0, noid.stderr
    assert calls.read_text().splitlines() == [f"mava_baseline.py {m} 0 system.add_agent_id=False" for m in maps]
    assert len(list((repo / "benchmark/results/smax_hard_10m_mava_noagentid_rec_mappo").glob("*.json.gz"))) == 2
    figure = repo / "benchmark/results/smax_hard_10m_compare/curves.png"
    drawn = figure.stat().st_mtime_ns
    unknown = run(seeds="0", ablation="tuned")
    assert unknown.returncode == 2 and "MAVA_ABLATION: noagentid or unset" in unknown.stderr and calls.read_text() == ""
    assert figure.stat().st_mtime_ns == drawn  # a usage error draws nothing


def test_expected_scores_recompute_from_the_committed_summaries():
    """benchmark/results/expected_scores.json is what expected.py makes of the committed summaries, each range the
    lowest and highest of its per-seed medians; the named setting and the paper's are both there"""
    import expected

    with open(ROOT / "benchmark" / "results" / "expected_scores.json") as f:
        assert json.load(f) == expected.expected_scores()
    entries = {(e["map"], e["script"], e["setting"]): e for e in expected.expected_scores()}
    tuned = entries["10m_vs_11m", "mappo_rnn.py", "tuned"]
    assert tuned["greedy evaluation"]["lowest"] == min(tuned["greedy evaluation"]["per_seed"]) == 100.0
    assert len(tuned["seeds"]) == len(tuned["training episodes"]["per_seed"]) == 3
    assert ("27m_vs_30m", "mappo_rnn.py", "paper") in entries and ("3s5z", "mappo.py", "paper") in entries


def test_expected_check_says_inside_below_unfinished_and_asks_for_a_setting(tmp_path):
    """A committed run checks inside its own setting's range (exit 0); the same run scored lower is below (exit 1), one
    short of the budget unfinished (exit 1); a run whose setting cannot be told exits 2 asking for --setting"""
    script = [sys.executable, str(ROOT / "benchmark" / "report" / "expected.py"), "check"]
    tuned = tmp_path / "benchmark" / "results" / "smax_hard_10m_tuned"  # the committed runs: kept/, not a local runs/
    shutil.copytree(ROOT / "benchmark" / "results" / "smax_hard_10m_tuned" / "kept", tuned / "kept")
    done = subprocess.run([*script, str(tuned)], capture_output=True, text=True, timeout=120)
    finished = len(list(tuned.glob("kept/*.json.gz")))  # every finished run of the setting, on every map so far
    assert done.returncode == 0 and done.stdout.count("is inside what we measured") == 3 * finished, done.stdout
    [kept] = tuned.glob("kept/10m_vs_11m__mappo_rnn__1__*.json.gz")
    summary = json.load(gzip.open(kept, "rt"))
    run = tmp_path / "runs" / kept.name.removesuffix(".json.gz")
    run.mkdir(parents=True)
    (run / "eval_summary.json").write_text(json.dumps(dict(summary, median_win_rate=0.5)))
    done = subprocess.run([*script, str(run), "--setting", "tuned"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "greedy evaluation: 50.0 % is below what we measured, 100.0 to 100.0" in done.stdout
    assert "sampled evaluation: 96.9 % is inside" in done.stdout
    (run / "eval_summary.json").write_text(json.dumps(dict(summary, global_step=16384)))
    done = subprocess.run([*script, str(run), "--setting", "tuned"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "unfinished, the expected scores are at 9,994,240 env steps" in done.stdout
    done = subprocess.run([*script, str(run)], capture_output=True, text=True, timeout=120)  # no checkpoint, no folder
    assert done.returncode == 2 and "Say --setting paper or --setting tuned" in done.stderr


def test_the_tuned_settings_rows_are_the_runs_of_its_flags():
    """benchmark/results/smax_hard_10m_tuned/kept links, per hard map, every kept run of the setting whose flags
    --setting tuned has there (mappo_rnn.py's SMAX_TUNED: mavacfg's values, ent0's, or none over Table 12's) and
    nothing else: the tuned rows are those runs, none left out"""
    import mappo_rnn

    results = ROOT / "benchmark" / "results"
    source = {m: "mavacfg" if v == mappo_rnn.MAVA_SWEEP else "ent0" for m, v in mappo_rnn.SMAX_TUNED.items()}
    assert all(v == {"ent_coef": 0.0} for m, v in mappo_rnn.SMAX_TUNED.items() if source[m] == "ent0")  # ent0's flag
    linked = {}
    for link in (results / "smax_hard_10m_tuned" / "kept").iterdir():
        if link.is_symlink():
            target = (link.parent / os.readlink(link)).resolve()
            assert target.is_file() and target.name == link.name, link
            linked[link.name] = target.parent.parent.name
    for m in ("5m_vs_6m", "3s5z_vs_3s6z", "10m_vs_11m", "27m_vs_30m"):
        folder = f"smax_hard_10m_{source.get(m, 'paper')}"
        runs = {p.name for p in (results / folder / "kept").iterdir() if p.name.startswith(f"{m}__")}
        assert runs and {n for n, f in linked.items() if n.startswith(f"{m}__")} == runs, m
        assert all(linked[n] == folder for n in runs), m


def test_the_tuned_rows_say_what_tuned_is_on_their_map(tmp_path, monkeypatch):
    """The hard-map tables' tuned rows name, per map, the setting whose runs the tuned folder links (the values
    --setting tuned has there: the test above); a map without a link (tuned's own runs) has Table 12's values"""
    import update_readme

    results = tmp_path / "results"
    tuned = results / "smax_hard_10m_tuned" / "kept"
    tuned.mkdir(parents=True)
    for setting, env in (("ent0", "27m_vs_30m"), ("mavacfg", "10m_vs_11m")):
        (results / f"smax_hard_10m_{setting}" / "kept").mkdir(parents=True)
        name = f"{env}__mappo_rnn__1__1.json.gz"
        (results / f"smax_hard_10m_{setting}" / "kept" / name).write_bytes(b"")
        (tuned / name).symlink_to(f"../../smax_hard_10m_{setting}/kept/{name}")
    (tuned / "3s5z__mappo_rnn__1__1.json.gz").write_bytes(b"")
    monkeypatch.setattr(update_readme, "RESULTS", str(results))
    assert update_readme.tuned_here("27m_vs_30m") == "no entropy bonus, ent0's runs"
    assert update_readme.tuned_here("10m_vs_11m") == "Mava's SMAX sweep values, mavacfg's runs"
    assert update_readme.tuned_here("3s5z") == "Table 12's values"
    monkeypatch.undo()  # the committed links: the README's rows
    readme = (ROOT / "README.md").read_text()
    for env, label in (("27m_vs_30m", "no entropy bonus"), ("10m_vs_11m", "Mava's SMAX sweep values")):
        assert f"| {env} | mappo_rnn.py, tuned (--setting tuned: {label}" in readme


def test_before_after_alternates_the_two_versions_and_reads_the_ref_from_git(tmp_path, monkeypatch):
    """benchmark/measure/before_after.py runs the scripts as they were at --ref (from git, beside popart.py) and as
    they are, alternated, and reports each side's median and after / before"""
    import before_after

    calls = []

    def fake_train_sps(env_id, iterations, extra, script, root):
        calls.append((script, env_id, root == str(ROOT)))
        if root != str(ROOT):  # the ref's copy: the file git holds
            text = subprocess.run(["git", "show", f"HEAD:{script}.py"], cwd=ROOT, capture_output=True, text=True)
            assert open(os.path.join(root, f"{script}.py")).read() == text.stdout
            assert os.path.exists(os.path.join(root, "popart.py"))
        return dict(sps=100.0 * len(calls))

    monkeypatch.setattr(before_after, "train_sps", fake_train_sps)
    out = tmp_path / "before_after.json"
    argv = ["before_after.py", "--ref", "HEAD", "--scripts", "ippo", "--env-ids", "3m", "--repeats", "2"]
    monkeypatch.setattr(sys, "argv", argv + ["--out", str(out)])
    before_after.main()
    assert calls == [("ippo", "3m", False), ("ippo", "3m", True)] * 2  # before, after, before, after
    [row] = json.loads(out.read_text())["rows"]
    assert row["sps"] == {"before": [100.0, 300.0], "after": [200.0, 400.0]}
    assert row["ratio"] == pytest.approx(300.0 / 200.0)
