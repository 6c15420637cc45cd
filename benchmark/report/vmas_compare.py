"""VMAS (issue 48): mappo.py and ippo.py beside BenchMARL's MAPPO and IPPO run on this machine, read over the same
window of env steps: per task, algorithm and implementation, each seed's median over the window of its evaluation
return (deterministic actions: our greedy mode, BenchMARL's evaluation_deterministic_actions) and of its training
return (the episodes that ended in the rollouts), then the mean over seeds; and the curves against env steps.

    python benchmark/report/vmas_compare.py   # after bash benchmark/vmas.sh and bash benchmark/vmas.sh benchmarl

Reads benchmark/results/vmas_{mappo,ippo} (as summarize.py reads them: finished runs only) and
benchmark/results/vmas_benchmarl/<task>_<algorithm>_seed<N>.json.gz (benchmark/benchmarl/benchmarl_baseline.py's rows);
writes benchmark/results/vmas_compare/compare.json and curves.png. The window is the last 10 % of the budget (ours
evaluate after every update of 6,000 env steps, 32 episodes; BenchMARL every 120,000 frames, 10 episodes), the
budget the smallest of all runs'. A side with no finished run is left out.

BenchMARL's VMAS-tuned config (benchmark/results/vmas_benchmarl_fine_tuned: `BENCHMARL_CONFIG=fine_tuned bash
benchmark/vmas.sh benchmarl`) runs to its own budget (10M frames, 200 evaluation episodes every 120,000) and is read
apart, run by run, unfinished ones too (the runner's checkpoint kept/<name>.pt holds the rows so far): compare.json's
"fine_tuned", and curves_fine_tuned.png beside the mean curves of the runs above, each partial curve labelled.
"""

import argparse
import glob
import gzip
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import BAND, load, plot_mean  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")
WINDOW = 0.1  # the share of the budget, at its end, that each seed's score is read over


def ours(folder: str) -> dict:
    """(task, algorithm) -> per seed {seed, budget, eval: [(step, return)], train: [(step, return)]} of our runs"""
    out = {}
    for (script, env_id), summaries in load([folder]).items():
        for s in summaries:
            evals = s["evals"]
            run = dict(seed=s["seed"], budget=s["global_step"])
            run["eval"] = [(e["step"], e["episodic_return"]) for e in evals]
            run["train"] = [(e["step"], e["train_return"]) for e in evals if "train_return" in e]
            out.setdefault((env_id.removeprefix("vmas/"), script), []).append(run)
    return out


def benchmarl(folder: str) -> dict:
    """The same for BenchMARL's runs (<task>_<algorithm>_seed<N>.json.gz)"""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*_seed*.json.gz"))):
        match = re.fullmatch(r"(.+)_(mappo|ippo)_seed(\d+)\.json\.gz", os.path.basename(path))
        if match is None:  # not a run of benchmark/vmas.sh
            continue
        task, algorithm, seed = match.groups()
        with gzip.open(path, "rt") as f:
            rows = json.load(f)["rows"]
        run = dict(seed=int(seed), budget=rows[-1]["step"])
        run["eval"] = [(r["step"], r["eval_return"]) for r in rows if "eval_return" in r]
        run["train"] = [(r["step"], r["train_return"]) for r in rows if "train_return" in r]
        out.setdefault((task, algorithm), []).append(run)
    return out


def fine_tuned(folder: str) -> list[dict]:
    """BenchMARL's VMAS-tuned runs, finished (<task>_<algorithm>_seed<N>.json.gz) or under way (kept/<same>.pt), in
    task, algorithm, seed order: each with its budget, the frames it reached, its evaluation curve and its score:
    finished, the median of its evaluations over the last 10 % of its budget (as compare() reads the others);
    unfinished, of its last 3 evaluations (a partial run, labelled so wherever it is shown)"""
    import torch

    finished = sorted(glob.glob(os.path.join(folder, "*_seed*.json.gz")))
    runs = {}
    for path in finished + sorted(glob.glob(os.path.join(folder, "kept", "*_seed*.pt"))):  # the finished first
        name = os.path.basename(path).removesuffix(".json.gz").removesuffix(".pt")
        match = re.fullmatch(r"(.+)_(mappo|ippo)_seed(\d+)", name)
        if match is None or (path.endswith(".pt") and name in runs):  # finished: its checkpoint is stale
            continue
        if path.endswith(".json.gz"):
            with gzip.open(path, "rt") as f:
                saved = json.load(f)
            budget, rows = saved["meta"]["budget"], saved["rows"]
        else:  # the runner's checkpoint, as it loads it
            saved = torch.load(path, weights_only=True)
            budget, rows = saved["run"]["budget"], saved["rows"]
        task, algorithm, seed = match.groups()
        run = dict(task=task, algorithm=algorithm, seed=int(seed), budget=budget, finished=path.endswith(".json.gz"))
        run["reached"] = rows[-1]["step"] if rows else 0
        run["eval"] = [(r["step"], r["eval_return"]) for r in rows if "eval_return" in r]
        if run["finished"]:
            run["score"] = window_median(run["eval"], (1 - WINDOW) * budget, budget)
            run["read_over"] = [(1 - WINDOW) * budget, budget]
        else:
            last = run["eval"][-3:]
            run["score"] = float(np.median([v for _, v in last])) if last else float("nan")
            run["read_over"] = [last[0][0], last[-1][0]] if last else None
        if not np.isfinite(run["score"]):  # no evaluation to read yet: none (JSON has no NaN)
            run["score"] = None
        runs[name] = run
    return sorted(runs.values(), key=lambda r: (r["task"], r["algorithm"], r["seed"]))


def window_median(points: list, start: float, end: float) -> float:
    """The median of the values at env steps in (start, end]"""
    values = [v for step, v in points if start < step <= end]
    return float(np.median(values)) if values else float("nan")


def compare(sides: dict) -> dict:
    """sides: implementation -> (task, algorithm) -> runs -> the rows of compare.json"""
    runs = [run for side in sides.values() for group in side.values() for run in group]
    budget = min(run["budget"] for run in runs)
    start = (1 - WINDOW) * budget
    rows = []
    for implementation, side in sides.items():
        for (task, algorithm), group in sorted(side.items()):
            group = sorted(group, key=lambda run: run["seed"])
            row = dict(task=task, algorithm=algorithm, implementation=implementation, seeds=[r["seed"] for r in group])
            for score in ("eval", "train"):
                row[score] = [window_median(r[score], start, budget) for r in group]
                row[f"{score}_mean"] = float(np.mean(row[score]))
            rows.append(row)
    return dict(budget=budget, window=[start, budget], rows=rows)


def plot(sides: dict, budget: int, path: str, tuned: list = ()):
    """Per task the mean evaluation curve of each side's runs up to the budget; with `tuned` (fine_tuned()'s runs), the
    tasks and algorithms of those runs only, and each run's own curve beside them, an unfinished one labelled with
    where it got"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r["task"] for r in tuned} or {task for side in sides.values() for task, _ in side})
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        own = [r for r in tuned if r["task"] == task]
        for i, (implementation, side) in enumerate(sides.items()):
            for j, algorithm in enumerate(("mappo", "ippo")):
                if (task, algorithm) not in side or (tuned and algorithm not in {r["algorithm"] for r in own}):
                    continue
                curves = [np.array([p for p in r["eval"] if p[0] <= budget]).T for r in side[(task, algorithm)]]
                label, style = f"{implementation} {algorithm.upper()}", "-" if j == 0 else "--"
                plot_mean(ax, [(x, y) for x, y in curves], f"C{2 * i + j}", label, style, alpha=0.15)
        for j, r in enumerate(own):
            x, y = np.array(r["eval"]).T if r["eval"] else ([], [])
            got = "" if r["finished"] else f", unfinished: {r['reached'] / 1e6:.2f}M of {r['budget'] / 1e6:g}M"
            label = f"BenchMARL {r['algorithm'].upper()} fine_tuned, seed {r['seed']}{got}"
            ax.plot(x, y, color=f"C{4 + j}", lw=1, label=label)
        ax.set_title(f"vmas/{task}: evaluation return", fontsize=9)
        ax.set_xlabel("env steps")
        ax.legend(fontsize=6 if tuned else 7)
    each = "BenchMARL's VMAS-tuned config, each run; the others: " if tuned else ""
    fig.suptitle(f"{each}mean over seeds; {BAND}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)  # callers (the tests, update scripts) draw many figures in one process


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=RESULTS, help="the folder of vmas_mappo, vmas_ippo, vmas_benchmarl")
    parser.add_argument("--out", default=None, help="folder for compare.json and curves.png (RESULTS/vmas_compare)")
    opts = parser.parse_args(argv)
    ours_runs = {}
    for script in ("mappo", "ippo"):
        folder = os.path.join(opts.results, f"vmas_{script}")
        if os.path.isdir(folder):
            ours_runs.update(ours(folder))
    theirs = benchmarl(os.path.join(opts.results, "vmas_benchmarl"))
    sides = {name: side for name, side in (("ours", ours_runs), ("BenchMARL", theirs)) if side}
    if not sides:
        sys.exit("error: no finished VMAS run: bash benchmark/vmas.sh, bash benchmark/vmas.sh benchmarl")
    result = compare(sides)
    tuned = fine_tuned(os.path.join(opts.results, "vmas_benchmarl_fine_tuned"))
    result["fine_tuned"] = [{k: v for k, v in r.items() if k != "eval"} for r in tuned]  # their curves: the figure
    out = opts.out or os.path.join(opts.results, "vmas_compare")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump(result, f, indent=1)
    plot(sides, result["budget"], os.path.join(out, "curves.png"))
    if tuned:
        plot(sides, result["budget"], os.path.join(out, "curves_fine_tuned.png"), tuned)
    elif os.path.exists(os.path.join(out, "curves_fine_tuned.png")):  # not another folder's runs
        os.remove(os.path.join(out, "curves_fine_tuned.png"))
    for row in result["rows"]:
        print(
            row["task"],
            row["algorithm"],
            row["implementation"],
            f"eval {row['eval_mean']:.2f}",
            f"train {row['train_mean']:.2f}",
        )
    for r in tuned:
        got = "finished" if r["finished"] else f"unfinished at {r['reached']:,} of {r['budget']:,} frames"
        score = "-" if r["score"] is None else f"{r['score']:.2f}"
        print(r["task"], r["algorithm"], f"BenchMARL fine_tuned seed {r['seed']}", f"eval {score}", got)


if __name__ == "__main__":
    main()
