"""Summarise benchmark runs: reads runs/*/eval_summary.json and kept/*.json.gz (the finished runs' summaries kept in git
by `bash benchmark/mappo.sh keep`) under one results folder or several read as one (scripts side by side, one colour
each), writes summary.md (the paper's
protocol: per seed the median of the last 10 evaluations, then the median and range over seeds; with 5 seeds or more
per map, also the IQM of the SMAC win rates over seeds and maps with a 95% stratified-bootstrap interval, the marl-eval
protocol), summary.json (what README.md's tables are made of) and curves.png; with --marl-eval also marl_eval.json (marl-eval's
raw-data layout, every evaluation of every run).

    python benchmark/report/summarize.py benchmark/results/mappo
    python benchmark/report/summarize.py benchmark/results/{mappo,ippo,mappo_rnn} --out /tmp/compare --marl-eval

The files go to --out, by default the folder read (with several folders --out is required). Runs are grouped by
script and env: keep one configuration of a script per summary.
"""

import argparse
import glob
import gzip
import json
import math
import os
import sys
from collections import defaultdict

import numpy as np

# Below this many seeds a bootstrap interval says more than the data has (three seeds, each the median of evaluations
# of 32 episodes, often all at the ceiling): the per-seed values and their range stand instead, in tables and figures.
# The papers' StarCraft II numbers (MAPPO's Table 1, Async MAPPO's Table 2) are not beside ours here:
# benchmark/results/README.md has them in a table of their own (benchmark/results/anchors.json).
MIN_SEEDS_FOR_INTERVALS = 5


def supported(per_seed) -> bool:
    """Enough seeds (rows) for a bootstrap interval: MIN_SEEDS_FOR_INTERVALS or more"""
    return len(per_seed) >= MIN_SEEDS_FOR_INTERVALS


def whole(x: float) -> str:
    """A win rate (%) in whole percents, halves up (Python's round and format take halves to even: 62.5 -> 62)"""
    return str(math.floor(x + 0.5))


def iqm(x) -> float:
    """Interquartile mean: the mean of the middle half, after dropping the lowest and highest 25% (rounded down)."""
    x = np.sort(np.ravel(x))
    cut = int(0.25 * len(x))
    return float(x[cut : len(x) - cut].mean())


def stratified_bootstrap_ci(scores_per_task: list, reps: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% interval of the IQM over all runs: each replicate resamples the seeds within every task, with replacement."""
    rng = np.random.default_rng(seed)
    stats = [iqm(np.concatenate([rng.choice(t, size=len(t)) for t in scores_per_task])) for _ in range(reps)]
    return float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5))


def bootstrap_mean_ci(x, reps: int = 2000, seed: int = 0) -> tuple:
    """95% percentile-bootstrap interval (low, high) of the mean over seeds: x (seeds,) -> two floats; x (seeds, points)
    -> two arrays (points,), one interval per point."""
    x = np.asarray(x, dtype=float)
    means = x[np.random.default_rng(seed).integers(0, len(x), (reps, len(x)))].mean(1)  # (reps, ...)
    return np.percentile(means, 2.5, axis=0), np.percentile(means, 97.5, axis=0)


def env_family(env_id: str) -> str:
    """smaclite, mpe, hanabi, vmas, generic (pz/, gym/: LBF, RWARE) or smax: the scripts' backend for env_id"""
    prefixes = {"smaclite/": "smaclite", "simple_": "mpe", "hanabi": "hanabi", "vmas/": "vmas"}
    prefixes.update({"pz/": "generic", "gym/": "generic"})
    return next((family for prefix, family in prefixes.items() if env_id.startswith(prefix)), "smax")


def scores_win_rate(env_id: str) -> bool:
    """SMAX and SMAClite maps are scored by win rate; MPE, VMAS and Hanabi by return (Hanabi's: the game's score)."""
    return env_family(env_id) in ("smax", "smaclite")


def marl_eval_json(runs) -> dict:
    """{env: {task: {algorithm: {run_i: {step_k: {step_count, metric: [v]}, absolute_metrics: {metric: [v]}}}}}}"""
    out = {}
    for (script, env_id), summaries in sorted(runs.items()):
        is_smac = scores_win_rate(env_id)
        metric, key = ("win_rate", "median_win_rate") if is_smac else ("episodic_return", "median_return")
        task = out.setdefault(env_family(env_id), {}).setdefault(env_id.split("/")[-1], {}).setdefault(script, {})
        for i, s in enumerate(summaries):
            run = {f"step_{k}": {"step_count": e["step"], metric: [e[metric]]} for k, e in enumerate(s["evals"])}
            run["absolute_metrics"] = {metric: [s[key]]}
            task[f"run_{i}"] = run
    return out


def first_reaching(evals, key, threshold):
    """(step, wall seconds) of the first evaluation with evals[key] >= threshold, or None; the seconds are None in a
    history that kept no wall time (the restored small-family runs: see benchmark/report/restore_histories.py)."""
    return next(((e["step"], e.get("wall_time")) for e in evals if e[key] >= threshold), None)


def largest_fall(evals, key: str = "win_rate", window: int = 500_000):
    """A run's largest fall on the way, read on means over windows of `window` env steps (one evaluation of 32 episodes
    is too noisy to read a fall from): [mean (%) of the window it falls from, that window's first env step, mean of the
    lowest window after it, its first env step, the median number of evaluations in a window (the fewer, the larger the
    falls that noise alone makes)], the largest difference over every pair of windows in order; None where no window
    is below an earlier one."""
    scores = defaultdict(list)  # the first env step of a window -> the scores of its evaluations
    for e in evals:  # a window holds the steps after its first, up to the next's: 10M ends the window from 9.5M
        scores[(e["step"] - 1) // window * window].append(e[key])
    starts = sorted(scores)
    means = [100 * float(np.mean(scores[s])) for s in starts]
    pairs = [(means[i] - means[j], i, j) for i in range(len(means)) for j in range(i + 1, len(means))]
    fall, i, j = max(pairs, key=lambda p: p[0], default=(0.0, 0, 0))  # the first of equal falls
    per_window = float(np.median([len(scores[s]) for s in starts]))
    return [means[i], starts[i], means[j], starts[j], per_window] if fall > 0 else None


def run_name(path: str) -> list:
    """runs/<env>__<script>__<seed>__<unix time>/eval_summary.json, or kept/<the same>.json.gz (.pt: a run under way)
    -> [env, script, seed, unix time]"""
    if path.endswith((".json.gz", ".pt")):
        name = os.path.basename(path).removesuffix(".json.gz").removesuffix(".pt")
    else:
        name = os.path.basename(os.path.dirname(path))
    return name.split("__")


def checkpoint_history(path: str) -> tuple[dict, np.ndarray]:
    """A kept checkpoint of a run under way -> its head (env_id, seed, global_step, budget: whole rollouts) and its
    evaluations (n,7): step, greedy win rate, return, wall time, training score, sampled win rate, return (an older
    run's 5 columns padded with NaN)"""
    import torch

    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    args = ckpt["args"]
    batch = args["num_envs"] * args["num_steps"]  # env steps a rollout: the run trains whole ones
    head = dict(env_id=args["env_id"], seed=args["seed"], global_step=ckpt["global_step"])
    head["budget"] = args["total_timesteps"] // batch * batch
    evals = np.array([list(e) + [np.nan] * (7 - len(e)) for e in ckpt["evals"]], float).reshape(-1, 7)
    return head, evals


def results_folder(path: str) -> str:
    """The folder that holds runs/ and kept/: FOLDER/runs/<name>/eval_summary.json or FOLDER/kept/<name>.json.gz"""
    return os.path.dirname(os.path.dirname(path if path.endswith(".gz") else os.path.dirname(path)))


def same_run(a: str, b: str) -> bool:
    """Whether two summaries are one run's, in one results folder: runs/<name>/eval_summary.json and kept/<name>.json.gz"""
    return run_name(a) == run_name(b) and os.path.samefile(results_folder(a), results_folder(b))


def started(path: str) -> int:
    """The start time in a run folder's name (0 if it has none)."""
    tail = run_name(path)[-1]
    return int(tail) if tail.isdigit() else 0


def load(results_dirs: list):
    """(script, env) -> the eval summaries of its finished runs; runs stopped before their budget are left out. Of
    several runs of the same script, env and seed (not independent samples) only the one with the most env steps
    counts, the newest on a tie."""
    best = {}  # (script, env, seed) -> (global_step, path, summary)
    paths = [p for d in results_dirs for p in glob.glob(os.path.join(d, "runs", "*", "eval_summary.json"))]
    paths += [p for d in results_dirs for p in glob.glob(os.path.join(d, "kept", "*.json.gz"))]
    for path in sorted(paths, key=lambda p: (started(p), p)):  # oldest first
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            summary = json.load(f)
        if summary["global_step"] < summary.get("budget", 0):
            print(f"left out, stopped at step {summary['global_step']} of {summary['budget']}: {path}")
            continue
        summary["script"] = run_name(path)[1]
        key = (summary["script"], summary["env_id"], summary["seed"])
        if key in best and same_run(best[key][1], path):  # in runs/ and in kept/: the one further on (a finished run
            if summary["global_step"] > best[key][0]:  # resumed to a larger budget is ahead of its kept copy)
                best[key] = (summary["global_step"], path, summary)
            continue
        if key in best:  # paths come oldest first, so >= keeps the newest on a tie
            new_wins = summary["global_step"] >= best[key][0]
            kept, dropped = (path, best[key][1]) if new_wins else (best[key][1], path)
            print(f"left out, the same script, env and seed as {kept} (which has more env steps or is newer): {dropped}")
            if not new_wins:
                continue
        best[key] = (summary["global_step"], path, summary)
    runs = defaultdict(list)
    for (script, env_id, _), (_, _, summary) in sorted(best.items()):
        runs[(script, env_id)].append(summary)
    return runs


def main(results_dirs, out_dir=None, marl_eval=False):
    results_dirs = [results_dirs] if isinstance(results_dirs, str) else list(results_dirs)
    if out_dir is None and len(results_dirs) > 1:
        sys.exit("several results folders: say where the files go with --out")
    out_dir = out_dir or results_dirs[0]
    runs = load(results_dirs)
    if not runs:
        sys.exit(f"no runs/*/eval_summary.json under {' '.join(results_dirs)}")
    os.makedirs(out_dir, exist_ok=True)
    lines = [
        "| script | env | seeds | env steps | metric | per seed: median of its last 10 evaluations | median | range "
        "| training episodes, per seed (median of the same 10) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    table = []
    for (script, env_id), summaries in sorted(runs.items(), key=lambda item: (item[0][1], item[0][0])):  # by env
        is_smac = scores_win_rate(env_id)
        key = "median_win_rate" if is_smac else "median_return"
        scores = np.array([s[key] * (100 if is_smac else 1) for s in summaries])
        show = whole if is_smac else "{:.2f}".format  # win rates of 32-episode evaluations: whole percents
        steps = sorted({s["global_step"] for s in summaries})
        metric = "win rate %" if is_smac else ("score" if env_family(env_id) == "hanabi" else "team return")
        median, std = np.median(scores), scores.std()
        train_key, scale = ("median_train_win_rate", 100) if is_smac else ("median_train_return", 1)
        train = [scale * s[train_key] for s in summaries if train_key in s]  # the rollout's, before each evaluation
        train = train if len(train) == len(summaries) else []  # older runs logged no training score
        lines.append(
            f"| {script} | {env_id} | {len(scores)} | {'/'.join(map(str, steps))} | {metric} "
            f"| {', '.join(map(show, scores))} | {show(median)} | {show(scores.min())} to {show(scores.max())} "
            f"| {', '.join(map(show, train)) or '-'} |"
        )
        row = dict(script=script, env_id=env_id, seeds=[s["seed"] for s in summaries], scores=scores.tolist())
        std = float(std) if len(scores) > 1 else None  # one seed has no spread to show
        row.update(median=float(median), std=std, mean=float(scores.mean()), metric=metric)
        if supported(scores):
            row["mean_ci"] = [float(c) for c in bootstrap_mean_ci(scores)]
        row["env_steps"] = steps
        if train:
            row.update(train_scores=train, train_mean=float(np.mean(train)))
            if supported(train):
                row["train_mean_ci"] = [float(c) for c in bootstrap_mean_ci(train)]
        sampled_key = "median_sampled_win_rate" if is_smac else "median_sampled_return"  # --eval-sampled
        if all(s.get(sampled_key) is not None for s in summaries):
            row["sampled_scores"] = [s[sampled_key] * (100 if is_smac else 1) for s in summaries]
        row["wall_time"] = [s["wall_time"] for s in summaries]  # seconds from the start to the last evaluation
        if is_smac:
            row["first_0.8"] = [first_reaching(s["evals"], "win_rate", 0.8) for s in summaries]
            row["first_0.95"] = [first_reaching(s["evals"], "win_rate", 0.95) for s in summaries]
            row["largest_fall"] = [largest_fall(s["evals"]) for s in summaries]
        table.append(row)

    def when(points):
        return ", ".join(
            "never" if p is None else f"step {p[0]}" + (f" ({p[1]:.0f} s)" if p[1] is not None else "") for p in points
        )

    scripts = sorted({script for script, _ in runs})
    for script in scripts:
        smac = [np.array(r["scores"]) / 100 for r in table if r["script"] == script and r["metric"] == "win rate %"]
        if smac and all(map(supported, smac)):
            low, high = stratified_bootstrap_ci(smac)
            lines.append(
                f"\n{script}: IQM of the SMAC win rates over {sum(map(len, smac))} runs ({len(smac)} maps) = "
                f"{100 * iqm(np.concatenate(smac)):.1f}%, 95% stratified-bootstrap interval [{100 * low:.1f}, {100 * high:.1f}]"
            )
            table.append(dict(script=script, iqm=iqm(np.concatenate(smac)), iqm_ci=[low, high]))
    reach = [
        f"- {r['script']} {r['env_id']}, first single evaluation with win rate >= 0.8: {when(r['first_0.8'])}; "
        f">= 0.95: {when(r['first_0.95'])} (per seed; wall time since the start of the run)"
        for r in table
        if "first_0.8" in r
    ]
    falls = [
        f"- {r['script']} {r['env_id']}, largest fall of the greedy win rate (means over 0.5M env steps): "
        + ", ".join(
            "none" if f is None else f"{whole(f[0])} % at {f[1]:,} to {whole(f[2])} % at {f[3]:,}" for f in r["largest_fall"]
        )
        + " (per seed)"
        for r in table
        if "largest_fall" in r
    ]
    walls = [
        f"- {r['script']} {r['env_id']}, wall time of each run (start to last evaluation): "
        + ", ".join(f"{w:.0f} s" for w in r["wall_time"])
        for r in table
        if "wall_time" in r
    ]
    for script in scripts:
        total = sum(sum(r["wall_time"]) for r in table if r.get("script") == script and "wall_time" in r)
        walls.append(f"- {script}: all its runs together {total / 3600:.1f} h of wall time")
    md = "\n".join(lines + [""] + reach + [""] + falls + [""] + walls) + "\n"
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(table, f, indent=1)
    if marl_eval:
        with open(os.path.join(out_dir, "marl_eval.json"), "w") as f:
            json.dump(marl_eval_json(runs), f)
    plot(runs, os.path.join(out_dir, "curves.png"))
    print(md + f"wrote {out_dir}/summary.md, summary.json, curves.png" + (", marl_eval.json" if marl_eval else ""))


def mean_and_band(curves: list, points: int = 200):
    """curves: [(x, y)] per seed -> (grid, mean, low, high): the mean over seeds and a band around it, the range over
    seeds (fewer than MIN_SEEDS_FOR_INTERVALS) or the 95% bootstrap interval of the mean, linearly interpolated on a
    grid over the x range that every curve covers (from the latest first point to the earliest last one), so no seed
    is extrapolated."""
    grid = np.linspace(max(x[0] for x, _ in curves), min(x[-1] for x, _ in curves), points)
    ys = np.stack([np.interp(grid, x, y) for x, y in curves])  # (seeds, points)
    band = bootstrap_mean_ci(ys) if supported(ys) else (ys.min(0), ys.max(0))
    return grid, ys.mean(0), *band


# the figures' words for mean_and_band's shading
BAND = f"shaded: the range over seeds\n(from {MIN_SEEDS_FOR_INTERVALS} seeds on: the mean's 95% bootstrap interval)"


def plot_mean(ax, curves: list, color: str, label: str, style: str = "-", alpha: float = 0.2):
    """curves: [(x, y)] per seed -> their mean as a line on ax, the band of mean_and_band shaded"""
    grid, mean, low, high = mean_and_band(curves)
    ax.plot(grid, mean, style, color=color, lw=1.2, label=label)
    ax.fill_between(grid, low, high, color=color, alpha=alpha, lw=0)


def plot(runs, path):
    """One panel per env: eval curves (and the training score, dashed, where logged) against env steps (top row)
    and wall time (bottom row, where the histories kept it); the mean over seeds as a line and mean_and_band's band
    shaded, one colour per script."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = sorted({env for _, env in runs})
    scripts = sorted({script for script, _ in runs})
    colours = {script: f"C{i}" for i, script in enumerate(scripts)}
    x_axes = [("step", "env steps"), ("wall_time", "wall time (s)")]  # no wall time row where no history kept it
    x_axes = x_axes[: 1 + any("wall_time" in s["evals"][0] for summaries in runs.values() for s in summaries)]
    fig, axes = plt.subplots(len(x_axes), len(envs), figsize=(4.5 * len(envs), 3.25 * len(x_axes)), squeeze=False)
    for col, env_id in enumerate(envs):
        is_smac = scores_win_rate(env_id)
        key, train_key = ("win_rate", "train_win_rate") if is_smac else ("episodic_return", "train_return")
        for row, (x_key, x_label) in enumerate(x_axes):
            ax = axes[row][col]
            for (script, env), summaries in sorted(runs.items()):
                if env != env_id:
                    continue
                for y_key, style in ((key, "-"), (train_key, "--")):  # the training score: where it was logged
                    evals = [[e for e in s["evals"] if y_key in e and x_key in e] for s in summaries]
                    curves = [(np.array([e[x_key] for e in es]), np.array([e[y_key] for e in es])) for es in evals if es]
                    if len(curves) < len(summaries):
                        continue
                    label = f"{script} ({len(curves)} seed{'s' * (len(curves) > 1)})" + (", training" if style == "--" else "")
                    plot_mean(ax, curves, colours[script], label, style)
            ax.set_title(env_id)
            ax.set_xlabel(x_label)
            ax.set_ylabel("win rate" if is_smac else ("score" if env_family(env_id) == "hanabi" else "team return"))
            ax.legend(fontsize=7)
    # two lines: one line is wider than a one-env figure
    fig.suptitle(f"line: mean over seeds; dashed: training episodes;\n{BAND}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)  # callers (the tests, update scripts) draw many figures in one process
    from PIL import Image  # matplotlib's own dependency

    with Image.open(path) as image:  # 32 colours: a third of the file, the same plot
        image = image.convert("RGB").quantize(colors=32, method=Image.Quantize.MEDIANCUT)
    image.save(path, optimize=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dirs", nargs="*", default=["benchmark/results/mappo"], help="folders holding runs/")
    parser.add_argument("--out", default=None, help="where the files go (default: the one folder read)")
    parser.add_argument("--marl-eval", action="store_true", help="also write marl_eval.json")
    cli = parser.parse_args()
    main(cli.results_dirs, cli.out, cli.marl_eval)
