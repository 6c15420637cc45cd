"""Two results folders of the same env side by side, each read up to the same env step: per seed the median of its
last 10 evaluations up to that step (greedy evaluation and the training episodes), the mean over seeds, and the curves
against env steps. For a change that must learn at least as well per env step as before (issue 49: Hanabi with
--acting-rows-only against the same preset's runs with every row).

    python benchmark/report/compare_histories.py benchmark/results/hanabi_10m_mappo benchmark/results/hanabi_acting_rows \
        --labels "all rows" "acting rows only" --out benchmark/results/hanabi_acting_rows/compare

Each folder is read as summarize.py reads it (runs/*/eval_summary.json and kept/*.json.gz, finished runs only). The
step read up to is the smallest budget among the runs unless --until gives one. Writes OUT.md, OUT.json and OUT.png.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import BAND, load, plot_mean, scores_win_rate  # noqa: E402

SCORES = {"greedy evaluation": "eval", "training episodes": "train"}


def histories(folder: str) -> list[dict]:
    """A folder's finished runs of one env -> their summaries"""
    runs = load([folder])
    if len(runs) != 1:
        sys.exit(f"error: {folder} must hold the runs of one script on one env, found {sorted(runs) or 'none'}")
    return next(iter(runs.values()))


def score_keys(env_id: str) -> dict:
    win = scores_win_rate(env_id)
    return {"eval": "win_rate" if win else "episodic_return", "train": "train_win_rate" if win else "train_return"}


def per_seed(summary: dict, until: int, key: str) -> float:
    """The median of the last 10 evaluations at or before `until` that logged `key`"""
    values = [e[key] for e in summary["evals"] if e["step"] <= until and key in e][-10:]
    return float(np.median(values)) if values else float("nan")


def plot(sides: dict, keys: dict, until: int, path: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (label, summaries) in enumerate(sides.items()):
        for name, style in (("eval", "-"), ("train", "--")):
            curves = []
            for s in summaries:
                es = [e for e in s["evals"] if e["step"] <= until and keys[name] in e]
                curves.append((np.array([e["step"] for e in es]), np.array([e[keys[name]] for e in es])))
            plot_mean(ax, curves, f"C{i}", f"{label}, {'greedy' if name == 'eval' else 'training'}", style)
    ax.set_xlabel("env steps")
    ax.set_ylabel(keys["eval"].replace("_", " "))
    ax.legend(fontsize=7)
    ax.set_title(f"mean over seeds;\n{BAND}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)  # callers (the tests, update scripts) draw many figures in one process


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--labels", nargs=2, default=["before", "after"])
    parser.add_argument("--until", type=int, default=None, help="env step read up to (default: the smallest budget)")
    parser.add_argument("--out", required=True, help="path without extension: OUT.md, OUT.json, OUT.png")
    opts = parser.parse_args()
    sides = dict(zip(opts.labels, (histories(opts.before), histories(opts.after))))
    env_ids = {s["env_id"] for summaries in sides.values() for s in summaries}
    if len(env_ids) != 1:
        sys.exit(f"error: the two folders hold different envs: {sorted(env_ids)}")
    env_id = env_ids.pop()
    keys = score_keys(env_id)
    until = opts.until or min(s["budget"] for summaries in sides.values() for s in summaries)
    rows = {
        label: {score: {str(s["seed"]): per_seed(s, until, keys[name]) for s in summaries} for score, name in SCORES.items()}
        for label, summaries in sides.items()
    }
    means = {label: {score: float(np.mean(list(v.values()))) for score, v in r.items()} for label, r in rows.items()}
    lines = [
        f"{env_id}, read up to env step {until}: per seed the median of the last 10 evaluations (32 games each) up to "
        "that step, then the mean over seeds. `python benchmark/report/compare_histories.py "
        f"{opts.before} {opts.after} --labels {' '.join(repr(x) for x in opts.labels)}`",
        "",
        "| runs | score | per seed | mean |",
        "|---|---|---|---|",
    ]
    for label in rows:
        for score in SCORES:
            seeds = ", ".join(f"{seed}: {v:.2f}" for seed, v in rows[label][score].items())
            lines.append(f"| {label} | {score} | {seeds} | {means[label][score]:.2f} |")
    os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
    with open(opts.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(opts.out + ".json", "w") as f:
        json.dump(dict(env_id=env_id, until=until, per_seed=rows, mean=means), f, indent=1)
    plot(sides, keys, until, opts.out + ".png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
