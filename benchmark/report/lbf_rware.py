"""LBF and RWARE (issue 119): our mappo.py and ippo.py beside EPyMARL's MAPPO run here and EPyMARL's published returns
(Papoudakis et al. 2021), in that paper's two metrics, read from the folders benchmark/lbf_rware.sh writes. Writes
RESULTS/lbf_rware.md (the table, as table() returns it) and RESULTS/lbf_rware.png (per task, return against env steps).

    python benchmark/report/lbf_rware.py                 # benchmark/results
    python benchmark/report/lbf_rware.py --results DIR   # another results root, laid out the same (the tests' own)

EPyMARL's metrics, over one side's seeds on one task: the maximum return is the highest, over evaluation points, of
the mean return over seeds; the average return is the mean over all evaluation points and seeds. Each evaluation of
ours plays 100 greedy episodes and 100 sampled ones (--eval-sampled); EPyMARL's MAPPO samples its actions in its
evaluations (100 episodes), so our sampled columns are the ones to set beside its numbers. Seeds are aligned by the
order of their evaluations (ours every 50,000 env steps on LBF, 500,000 on RWARE; EPyMARL's at the first step past
each 50,000). A task counts its finished seeds; where none has finished yet, its unfinished ones over the evaluations
all of them reached, marked provisional. The published values come from RESULTS/epymarl_published.json, each with its
source; that file also says which tasks' rules changed since the paper.
"""

import argparse
import glob
import gzip
import json
import math
import os
import re
import runpy
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from summarize import MIN_SEEDS_FOR_INTERVALS, bootstrap_mean_ci, checkpoint_history, plot_mean, started  # noqa: E402
from summarize import supported  # noqa: E402

RESULTS = os.path.join(os.path.dirname(HERE), "results")
# benchmark/lbf_rware.sh's defaults (LBF_TASKS, RWARE_TASKS, their budgets, SEEDS, EPYMARL_TASKS): task -> budget
TASKS = {
    "Foraging-8x8-2p-2f-coop-v3": 20_000_000,
    "Foraging-2s-8x8-2p-2f-coop-v3": 20_000_000,
    "Foraging-10x10-3p-3f-v3": 20_000_000,
    "rware-tiny-4ag-v2": 40_000_000,
}
SEEDS = (1, 2, 3)
LBF = [task for task in TASKS if task.startswith("Foraging")]
EPYMARL_TASKS = ["Foraging-8x8-2p-2f-coop-v3", "Foraging-2s-8x8-2p-2f-coop-v3", "rware-tiny-4ag-v2"]
# side -> (its results folder, the tasks it runs, its colour in the figure); ippo.py runs on LBF only
SIDES = {
    "mappo.py": ("lbf_rware_mappo", list(TASKS), "C0"),
    "ippo.py": ("lbf_rware_ippo", LBF, "C1"),
    "EPyMARL's MAPPO, run here": ("lbf_rware_epymarl", EPYMARL_TASKS, "C2"),
}
PUBLISHED_COLOURS = {"MAPPO": "C2", "IPPO": "C3"}
SCORES = ("sampled", "greedy")  # the evaluations' two kinds, in the table's order
CHANGED = "rules changed since the paper: not comparable"


def millions(steps: float) -> str:
    """Env steps in millions, as short as exact to 0.01M: 20000000 -> 20M, 6150000 -> 6.15M"""
    return f"{steps / 1e6:.2f}".rstrip("0").rstrip(".") + "M"


def curve(steps, values):
    """(steps, returns) of the evaluations that have this score (NaN: not evaluated so), or None where none has"""
    steps, values = np.asarray(steps, float), np.asarray(values, float)
    keep = ~np.isnan(values)
    return (steps[keep], values[keep]) if keep.any() else None


def read_ours(path: str):
    """One run of ours -> {task, seed, env_steps, budget, finished, sampled, greedy}, the two scores as curve()'s; from
    its kept summary (kept/<name>.json.gz) or its kept checkpoint (kept/<name>.pt); None where unreadable."""
    if path.endswith(".pt"):
        try:
            head, rows = checkpoint_history(path)  # (evaluations, 7): step, ..., return at 2, sampled return at 6
        except Exception as e:  # a checkpoint being replaced, or not one
            print(f"left out, unreadable: {path}: {e}")
            return None
        steps, greedy, sampled = rows[:, 0], rows[:, 2], rows[:, 6]
    else:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            head = json.load(f)
        steps = [e["step"] for e in head["evals"]]
        greedy = [e.get("episodic_return", math.nan) for e in head["evals"]]
        sampled = [e.get("sampled_return", math.nan) for e in head["evals"]]
    return dict(
        task=head["env_id"].split(":")[-1],
        seed=head["seed"],
        env_steps=head["global_step"],
        budget=head["budget"],
        finished=head["global_step"] >= head["budget"],
        greedy=curve(steps, greedy),
        sampled=curve(steps, sampled),
    )


def by_task(runs: dict) -> dict:
    """(task, seed) -> run  to  task -> seed -> run"""
    out = {}
    for (task, seed), run in runs.items():
        out.setdefault(task, {})[seed] = run
    return out


def ours(folder: str, script: str) -> dict:
    """task -> seed -> its run (read_ours'), from FOLDER's kept/ (committed: a local runs/ is left out, so that every
    machine draws the same table; `bash benchmark/lbf_rware.sh keep` brings it up to date): of a seed's runs, the one
    furthest on, the newest on a tie"""
    name = f"*__{script}__*"
    paths = glob.glob(os.path.join(folder, "kept", f"{name}.json.gz")) + glob.glob(os.path.join(folder, "kept", f"{name}.pt"))
    best = {}
    for path in sorted(paths, key=lambda p: (started(p), p)):  # oldest run first
        run = read_ours(path)
        key = (run["task"], run["seed"]) if run else None
        if run and (key not in best or run["env_steps"] >= best[key]["env_steps"]):
            best[key] = run
    return by_task(best)


def epymarl(folder: str) -> dict:
    """task -> seed -> EPyMARL's run (read_ours' keys): <task>_seed<N>.json.gz once finished (.json where a sitting
    stopped), else its committed sittings (kept/<task>_seed<N>/sittings, merged as benchmark/epymarl/epymarl_baseline.py
    merges them); the one furthest on"""
    runner = os.path.join(os.path.dirname(HERE), "epymarl", "epymarl_baseline.py")
    found = []  # (task, seed, rows, finished, evaluation greedy)
    for path in glob.glob(os.path.join(folder, "*_seed*.json.gz")) + glob.glob(os.path.join(folder, "*_seed*.json")):
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            out = json.load(f)
        meta = out["meta"]
        found.append((meta["key"].split(":")[-1], meta["seed"], out["rows"], meta["finished"], meta["evaluation_greedy"]))
    unfinished = glob.glob(os.path.join(folder, "kept", "*_seed*", "sittings"))  # committed only, as ours()
    merge = runpy.run_path(runner)["merge"] if unfinished else None  # standard library only: loads in this venv
    for sittings in unfinished:
        task, seed = re.fullmatch(r"(.+)_seed(\d+)", os.path.basename(os.path.dirname(sittings))).groups()
        infos = []
        for name in sorted(os.listdir(sittings)):
            with open(os.path.join(sittings, name)) as f:
                infos.append(json.load(f)["info"])
        found.append((task, int(seed), merge(infos), False, False))  # MAPPO's soft_policies sample in evaluations
    best = {}
    for task, seed, rows, finished, greedy in found:
        if not rows or task not in TASKS:
            continue
        steps, returns = [r["step"] for r in rows], [r["test_return_mean"] for r in rows]
        run = dict(task=task, seed=seed, env_steps=steps[-1], budget=TASKS[task], finished=finished)
        run.update(greedy=curve(steps, returns) if greedy else None, sampled=None if greedy else curve(steps, returns))
        if (task, seed) not in best or (finished, steps[-1]) >= (best[task, seed]["finished"], best[task, seed]["env_steps"]):
            best[task, seed] = run
    return by_task(best)


def spread(x: np.ndarray):
    """(low, high) over seeds: their range, or from MIN_SEEDS_FOR_INTERVALS seeds on the 95% bootstrap interval of
    their mean (summarize.py's rule); None for one seed"""
    if len(x) < 2:
        return None
    return tuple(float(v) for v in (bootstrap_mean_ci(x) if supported(x) else (x.min(), x.max())))


def metrics(curves: list):
    """curves: [(steps, returns)] per seed -> EPyMARL's two metrics over the evaluations every seed reached, aligned by
    their order: maximum (the highest mean over seeds) and its spread() there, average (over every evaluation and seed)
    and the spread() of the seeds' averages, and up_to (the last of those evaluations' env steps)"""
    n = min(len(y) for _, y in curves)
    ys = np.stack([y[:n] for _, y in curves])  # (seeds, evaluations)
    steps = np.stack([x[:n] for x, _ in curves]).max(0)  # (evaluations,)
    best = int(np.argmax(ys.mean(0)))  # the first of equal means
    return dict(
        maximum=float(ys.mean(0)[best]),
        maximum_spread=spread(ys[:, best]),
        average=float(ys.mean()),
        average_spread=spread(ys.mean(1)),
        up_to=float(steps[-1]),
    )


def counted(runs: dict) -> tuple:
    """seed -> run: (the runs a task counts: its finished ones, or where none is, all of them; provisional)"""
    finished = {seed: run for seed, run in runs.items() if run["finished"]}
    return (finished, False) if finished else (runs, bool(runs))


def collect(results: str) -> dict:
    """Everything the table and the figure show: sides (side -> task -> seed -> run), published (the JSON)"""
    sides = {}
    for side, (folder, tasks, _) in SIDES.items():
        folder = os.path.join(results, folder)
        runs = epymarl(folder) if side.startswith("EPyMARL") else ours(folder, side.removesuffix(".py"))
        sides[side] = {task: runs.get(task, {}) for task in tasks}
    with open(os.path.join(results, "epymarl_published.json")) as f:
        published = json.load(f)
    return dict(sides=sides, published=published)


def show(value: float, interval) -> str:
    """A return and its spread in brackets, 2 decimals"""
    return f"{value:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def seeds_cell(runs: dict) -> str:
    """How far a side's seeds are on a task: '2 of 3 finished; seed 3 at 6.2M'"""
    planned = sorted(set(SEEDS) | set(runs))
    parts = [f"{sum(run['finished'] for run in runs.values())} of {len(planned)} finished"]
    parts += [f"seed {seed} at {millions(run['env_steps'])}" for seed, run in sorted(runs.items()) if not run["finished"]]
    missing = [str(seed) for seed in planned if seed not in runs]
    if missing:
        parts.append(f"seed{'s' * (len(missing) > 1)} {', '.join(missing)} not started")
    return "; ".join(parts)


def side_row(side: str, task: str, runs: dict) -> str:
    """One side's row on one task: its seeds, the env steps its numbers cover, the metrics of each score"""
    use, provisional = counted(runs)
    cells = ["-"] * 4
    covered = "-"
    for i, score in enumerate(SCORES):
        curves = [run[score] for run in use.values() if run[score] is not None]
        if curves and len(curves) == len(use):
            m = metrics(curves)
            cells[2 * i : 2 * i + 2] = [show(m["maximum"], m["maximum_spread"]), show(m["average"], m["average_spread"])]
            budget = millions(max(run["budget"] for run in use.values()))
            covered = f"to {millions(m['up_to'])} of {budget}, provisional" if provisional else budget
    return f"| {side} | {seeds_cell(runs)} | {covered} | " + " | ".join(cells) + " |"


def published_rows(entry: dict, changed: bool) -> list:
    """The published values of one task (epymarl_published.json's tasks.<task>): one row per algorithm"""
    rows = []
    for algorithm in sorted({v["algorithm"] for v in entry.get("values", [])}):
        values = {v["metric"]: v for v in entry["values"] if v["algorithm"] == algorithm}
        cells = []
        for metric in ("maximum", "average"):
            v = values.get(metric)
            if v is None:
                cells.append("-")
                continue
            interval = v.get("interval")
            text = f"{v['value']:.2f}" + (f" ± {v['plus_minus']:.2f}" if "plus_minus" in v else "")
            cells.append(text + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "") + f" ({v['source']})")
        seeds = sorted({str(v["seeds"]) for v in values.values() if "seeds" in v})
        side = f"EPyMARL's {algorithm}, published" + (f" ({CHANGED})" if changed else "")
        rows.append(f"| {side} | {', '.join(seeds) or '-'} | the paper's | " + " | ".join(cells) + " | - | - |")
    return rows


def render(data: dict) -> str:
    """The Markdown: one row per side on each task, the published values, then what the numbers mean and what is
    missing"""
    lines = [
        "| task | side | seeds | env steps | maximum return, sampled | average return, sampled | maximum return, greedy "
        "| average return, greedy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tasks = data["published"]["tasks"]
    for task in TASKS:
        entry = tasks.get(task, {})
        changed = bool(entry.get("rules_changed"))
        name = f"{task} (paper: {entry['paper_name']})" if "paper_name" in entry else task
        rows = [side_row(side, task, runs[task]) for side, runs in data["sides"].items() if task in runs]
        rows += published_rows(entry, changed)
        if not entry.get("values"):
            rows.append("| EPyMARL's MAPPO and IPPO, published | none recorded | - | - | - | - | - |")
        for i, row in enumerate(rows):
            first = name + (f" **{CHANGED}**" if changed else "") if i == 0 else ""
            lines.append(f"| {first} " + row)
    notes = [
        "",
        "EPyMARL's metrics (Papoudakis et al. 2021): the maximum return is the highest, over evaluation points, of the mean "
        "return over seeds; the average return is the mean over all evaluation points and seeds. Each evaluation of ours: "
        "100 greedy and 100 sampled episodes; EPyMARL's MAPPO samples its actions in its evaluations (100 episodes), so "
        "the sampled columns compare with its numbers. In brackets: the range over seeds (of the mean at the maximum's "
        f"evaluation; of each seed's average), from {MIN_SEEDS_FOR_INTERVALS} seeds on the 95% bootstrap interval of the "
        "mean over seeds; the paper's tables could not be read here, so whether they print an interval or a spread is not "
        "checked. A task counts its finished seeds; with none finished, its unfinished ones over the evaluations all of "
        "them reached (provisional). Env ids differ from the paper's (LBF -v3, RWARE -v2 now; -v1 then): "
        "benchmark/results/epymarl_published.json gives what changed, and the tasks whose rules changed are marked.",
        "",
        "Missing:",
        *missing_lines(data),
    ]
    return "\n".join(lines + notes) + "\n"


def missing_lines(data: dict) -> list:
    """What the table still lacks, one line per side and one for the published values"""
    out = []
    for side, runs in data["sides"].items():
        none = [task for task, seeds in runs.items() if not seeds]
        done = [task for task, seeds in runs.items() if set(SEEDS) <= {seed for seed, r in seeds.items() if r["finished"]}]
        part = [f"{task}: {seeds_cell(seeds)}" for task, seeds in runs.items() if seeds and task not in done]
        if none:
            part.append(f"no run yet on {', '.join(none)}")
        if part:
            out.append(f"- {side}: " + "; ".join(part))
    unpublished = [task for task in TASKS if not data["published"]["tasks"].get(task, {}).get("values")]
    if unpublished:
        why = "(epymarl_published.json says why)"
        out.append(f"- EPyMARL's published values: none recorded for {', '.join(unpublished)} {why}")
    return out or ["- nothing"]


def table(results: str = None) -> str:
    """The Markdown table of the results under `results` (default benchmark/results), for README.md"""
    return render(collect(results or RESULTS))


def plot(data: dict, path: str):
    """Per task, return against env steps: each side's greedy (solid) and sampled (dashed) evaluations, the mean over
    the seeds it counts with summarize.py's band, and each published maximum as a dotted horizontal line"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, task in zip(axes.flat, TASKS):
        drawn = False
        for side, runs in data["sides"].items():
            use, provisional = counted(runs.get(task, {}))
            for score, style in (("greedy", "-"), ("sampled", "--")):
                curves = [run[score] for run in use.values() if run[score] is not None]
                if curves:
                    label = f"{side}, {score} ({len(curves)} seed{'s' * (len(curves) > 1)}{', not finished' * provisional})"
                    plot_mean(ax, curves, SIDES[side][2], label, style)
                    drawn = True
        entry = data["published"]["tasks"].get(task, {})
        for v in entry.get("values", []):
            if v["metric"] == "maximum":
                colour = PUBLISHED_COLOURS.get(v["algorithm"], "C4")
                ax.axhline(v["value"], color=colour, ls=":", lw=1.2, label=f"EPyMARL's {v['algorithm']}, published maximum")
                drawn = True
        if not drawn:
            ax.text(0.5, 0.5, "no runs yet", transform=ax.transAxes, ha="center", va="center", color="grey")
        changed = "\n(rules changed since the paper)" if entry.get("rules_changed") else ""
        ax.set_title(task + changed, fontsize=9)
        ax.set_xlabel("env steps")
        ax.set_ylabel("team return")
        if drawn:
            ax.set_xlim(0, TASKS[task])
            ax.legend(fontsize=6)
    band = f"shaded: the range over seeds (from {MIN_SEEDS_FOR_INTERVALS} seeds on: the mean's 95% bootstrap interval)"
    fig.suptitle(f"line: the mean over seeds; {band}; dotted: a published maximum", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    from PIL import Image  # matplotlib's own dependency

    with Image.open(path) as image:  # 32 colours: a third of the file, the same plot (as summarize.py's)
        image = image.convert("RGB").quantize(colors=32, method=Image.Quantize.MEDIANCUT)
    image.save(path, optimize=True)


def main(results: str = RESULTS):
    data = collect(results)
    md = render(data)
    with open(os.path.join(results, "lbf_rware.md"), "w") as f:
        f.write(md)
    plot(data, os.path.join(results, "lbf_rware.png"))
    print(md + f"wrote {results}/lbf_rware.md, lbf_rware.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=RESULTS, help="the results root: lbf_rware_*/ and epymarl_published.json")
    main(parser.parse_args().results)
