"""Puts back the per-evaluation histories of the small-family runs (benchmark/results/{mappo,ippo,mappo_rnn}: the
short-run tables of README.md and benchmark/results/README.md) from git history, as
kept/<env>__<script>__<seed>__restored.json.gz, so that summarize.py recomputes those tables from committed files
(issue 46) without running them again.

Those runs' histories were committed as marl_eval.json (every greedy evaluation of every run: its env step and win
rate or team return) and removed from the tree in commit 8f09757; this reads them at its parent. They hold no wall
time per evaluation and no training score (not logged then): a restored history has the run's total wall time (from
the summary.json that the runs wrote) and no more. Each run is matched to its seed by its score: the median of its
last 10 evaluations must equal the committed summary.json's score of that seed, else nothing is written.

    python benchmark/report/restore_histories.py [--commit 8f09757^] [--families mappo ippo mappo_rnn]
"""

import argparse
import gzip
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def history(run: dict) -> tuple[str, list[dict]]:
    """A marl_eval.json run {step_i: {step_count, win_rate or episodic_return: [v]}} -> (score key, evals in order)"""
    steps = sorted((k for k in run if k.startswith("step_")), key=lambda k: int(k.split("_")[1]))
    key = "win_rate" if "win_rate" in run[steps[0]] else "episodic_return"
    return key, [{"step": int(run[k]["step_count"]), key: float(run[k][key][0])} for k in steps]


def restore(family: str, commit: str) -> list[str]:
    """Writes the family's kept/ histories; returns their paths"""
    shown = subprocess.run(["git", "show", f"{commit}:benchmark/results/{family}/marl_eval.json"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    marl_eval = json.loads(shown)
    folder = os.path.join(ROOT, "benchmark", "results", family)
    with open(os.path.join(folder, "summary.json")) as f:
        rows = {(r["script"], r["env_id"]): r for r in json.load(f) if "env_id" in r}
    written = []
    for env_family, tasks in marl_eval.items():  # smax, mpe or smaclite
        for task, algorithms in tasks.items():
            for script, runs in algorithms.items():
                env_id = f"smaclite/{task}" if env_family == "smaclite" else task
                row = rows[(script, env_id)]
                for i, run in enumerate(runs.values()):
                    key, evals = history(run)
                    median = float(np.median([e[key] for e in evals[-10:]]))
                    scale = 100 if key == "win_rate" else 1
                    if not np.isclose(median * scale, row["scores"][i], rtol=0, atol=1e-9):
                        sys.exit(f"error: {family} {env_id} run {i}: {median * scale} is not the summary's {row['scores'][i]}")
                    summary = dict(env_id=env_id, seed=row["seeds"][i], global_step=evals[-1]["step"])
                    summary.update(budget=evals[-1]["step"], wall_time=row["wall_time"][i])
                    summary["median_win_rate" if key == "win_rate" else "median_return"] = median
                    summary["restored_from"] = f"benchmark/results/{family}/marl_eval.json at {commit}"
                    summary["evals"] = evals
                    path = os.path.join(
                        folder, "kept", f"{env_id.replace('/', '-')}__{script}__{row['seeds'][i]}__restored.json.gz"
                    )
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with gzip.GzipFile(path, "wb", mtime=0) as f:  # the same bytes every time
                        f.write(json.dumps(summary).encode())
                    written.append(path)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commit", default="8f09757^", help="where marl_eval.json still was")
    parser.add_argument("--families", nargs="+", default=["mappo", "ippo", "mappo_rnn"])
    opts = parser.parse_args(argv)
    for family in opts.families:
        paths = restore(family, opts.commit)
        print(f"{family}: {len(paths)} histories restored into benchmark/results/{family}/kept")


if __name__ == "__main__":
    main()
