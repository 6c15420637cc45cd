"""Expected scores on SMAX at 10M env steps: what our settings scored here, per map, and a check of a run against them.

    python benchmark/report/expected.py                    # rewrites benchmark/results/expected_scores.json
    python benchmark/report/expected.py check runs/10m_vs_11m__mappo_rnn__1__1796166885   # a run folder
    python benchmark/report/expected.py check benchmark/results/smax_hard_10m_tuned       # each finished run there

expected_scores.json holds, for each map, script and setting (FOLDERS), the finished runs of the committed results
folders (their summary.json, written by summarize.py): the seeds, the env steps, and per metric each seed's median of
its last 10 evaluations (win rate %), with their lowest and highest: the range we measured.

A check reads a run's eval_summary.json (a run folder, the file itself, or a kept .json.gz), its script from the run
name and its setting from --setting, else from the run's checkpoint, else from the results folder it is in. Per metric
it prints whether the run's median is inside that range, above or below it. Exit status: 0 when no metric is below,
1 when one is (or the run has not reached the budget of the expected scores), 2 on bad input.
"""

import argparse
import glob
import gzip
import json
import os
import sys

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")
EXPECTED = os.path.join(RESULTS, "expected_scores.json")
# results folder -> (script, setting): the runs whose scores a user can expect with that script and setting
FOLDERS = {
    "smax_10m_mappo": ("mappo.py", "paper"),
    "smax_hard_10m_paper": ("mappo_rnn.py", "paper"),
    "smax_hard_10m_tuned": ("mappo_rnn.py", "tuned"),
}
# metric -> (summary.json's per-seed key, eval_summary.json's median key)
METRICS = {
    "greedy evaluation": ("scores", "median_win_rate"),
    "sampled evaluation": ("sampled_scores", "median_sampled_win_rate"),
    "training episodes": ("train_scores", "median_train_win_rate"),
}


def expected_scores() -> list[dict]:
    """One entry per map, script and setting, from the committed summaries of FOLDERS"""
    entries = []
    for folder, (script, setting) in FOLDERS.items():
        with open(os.path.join(RESULTS, folder, "summary.json")) as f:
            rows = json.load(f)
        for row in rows:
            entry = dict(map=row["env_id"], script=script, setting=setting, seeds=row["seeds"])
            entry["env_steps"] = min(row["env_steps"])
            for metric, (key, _) in METRICS.items():
                if key in row:  # sampled evaluations: only the runs with --eval-sampled
                    per_seed = row[key]
                    entry[metric] = dict(per_seed=per_seed, lowest=min(per_seed), highest=max(per_seed))
            entries.append(entry)
    return sorted(entries, key=lambda e: (e["map"], e["script"], e["setting"]))


def write_expected():
    with open(EXPECTED, "w") as f:
        json.dump(expected_scores(), f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(EXPECTED)}")


def fail(message: str):
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def summaries_at(path: str) -> list[str]:
    """The eval summaries that a path names: a file, a run folder, or a results folder (its kept/ and runs/)"""
    if os.path.isfile(path):
        return [path]
    if os.path.isfile(os.path.join(path, "eval_summary.json")):
        return [os.path.join(path, "eval_summary.json")]
    kept = sorted(glob.glob(os.path.join(path, "kept", "*.json.gz")))
    running = sorted(glob.glob(os.path.join(path, "runs", "*", "eval_summary.json")))
    # a run kept after it finished is in both: once, as kept
    found = kept + [summary for summary in running if run_name(summary) not in map(run_name, kept)]
    if not found:
        fail(f"{path}: no eval_summary.json, run folder or results folder with finished runs there")
    return found


def run_name(summary_path: str) -> str:
    """runs/<name>/eval_summary.json or kept/<name>.json.gz -> <name> ({env_id}__{exp_name}__{seed}__{time})"""
    if os.path.basename(summary_path) == "eval_summary.json":
        return os.path.basename(os.path.dirname(os.path.abspath(summary_path)))
    return os.path.basename(summary_path).removesuffix(".gz").removesuffix(".json")


def setting_of(summary_path: str, script: str, given) -> str:
    """--setting, else the one in the run's checkpoint beside its summary, else its results folder's"""
    if given:
        return given
    checkpoint = os.path.join(os.path.dirname(summary_path), script.removesuffix(".py") + ".pt")
    if os.path.isfile(checkpoint):
        import torch

        args = torch.load(checkpoint, map_location="cpu", weights_only=True)["args"]
        return args.get("setting", "paper")  # checkpoints older than --setting ran the paper's
    for part in reversed(os.path.abspath(summary_path).split(os.sep)):
        if part in FOLDERS:
            return FOLDERS[part][1]
    fail(f"{summary_path}: which setting did it run? Say --setting paper or --setting tuned")


def check_one(summary_path: str, given_setting, expected: list[dict]) -> bool:
    """Prints how the run's medians stand against the expected range; True when none is below it"""
    opener = gzip.open if summary_path.endswith(".gz") else open
    with opener(summary_path, "rt") as f:
        summary = json.load(f)
    name = run_name(summary_path)
    parts = name.split("__")
    if len(parts) != 4:
        fail(f"{summary_path}: not a run's summary (runs/<env_id>__<script>__<seed>__<time>/eval_summary.json)")
    script = parts[1] + ".py"
    setting = setting_of(summary_path, script, given_setting)
    env_id, step = summary["env_id"], summary["global_step"]
    title = f"{env_id}, {script} {setting}, seed {summary['seed']} at {step:,} env steps"
    match = [e for e in expected if (e["map"], e["script"], e["setting"]) == (env_id, script, setting)]
    if not match:
        known = sorted({(e["map"], e["script"], e["setting"]) for e in expected})
        print(f"{title}: no expected scores for it (we have: {', '.join(' '.join(k) for k in known)})")
        return False
    (entry,) = match
    if step < entry["env_steps"]:
        print(f"{title}: unfinished, the expected scores are at {entry['env_steps']:,} env steps")
        return False
    seeds = len(entry["seeds"])
    lines, below = [], False
    for metric, (_, key) in METRICS.items():
        if metric not in entry or summary.get(key) is None:
            continue
        score, low, high = 100 * summary[key], entry[metric]["lowest"], entry[metric]["highest"]
        where = "below" if score < low - 1e-9 else "above" if score > high + 1e-9 else "inside"
        below |= where == "below"
        lines.append(f"  {metric}: {score:.1f} % is {where} what we measured, {low:.1f} to {high:.1f} over {seeds} seeds")
    print("\n".join([f"{title}:"] + lines))
    return not below


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", choices=("write", "check"), default="write")
    parser.add_argument("paths", nargs="*", help="check: run folders, eval summaries or results folders")
    parser.add_argument("--setting", choices=("paper", "tuned"), help="check: the runs' setting (default: read)")
    args = parser.parse_args(argv)
    if args.mode == "write":
        return write_expected()
    if not args.paths:
        fail("check needs a run folder, an eval_summary.json or a results folder")
    with open(EXPECTED) as f:
        expected = json.load(f)
    results = [check_one(path, args.setting, expected) for p in args.paths for path in summaries_at(p)]
    raise SystemExit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
