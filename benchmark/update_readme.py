"""Writes the generated parts of README.md, so that no number in it is typed by hand:

- between `<!-- gen NAME ARGS -->` and `<!-- /gen -->`, what the generator NAME makes of files in benchmark/results (or,
  for `lines` and `diff`, of the scripts themselves);
- the line numbers of links into the scripts, written `[text](mappo.py#L123 "def compute_gae")`: the title is the
  text of the line the link points to, and the number is rewritten to the first line that contains it.

    python benchmark/update_readme.py           # rewrite README.md
    python benchmark/update_readme.py --check   # exit 1 if README.md is not what this would write (tests run this)
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmark", "results")


def load(rel: str):
    with open(os.path.join(RESULTS, rel)) as f:
        return json.load(f)


def lines(script: str) -> str:
    """the number of lines of a script"""
    with open(os.path.join(ROOT, script)) as f:
        return str(sum(1 for _ in f))


def diff(script: str) -> str:
    """the changed lines between mappo.py and a script: `diff mappo.py SCRIPT | grep -cE '^[<>]'`"""
    out = subprocess.run(["diff", "mappo.py", script], cwd=ROOT, capture_output=True, text=True).stdout
    return str(sum(line.startswith(("<", ">")) for line in out.splitlines()))


def pct(x: float) -> str:
    return f"{x:.1f}"


def curves(folder: str) -> str:
    """the plot summarize.py wrote into benchmark/results/FOLDER, as a README image after a blank line ("" if none)"""
    png = f"benchmark/results/{folder}/curves.png"
    return f"\n\n![evaluation curves]({png})" if os.path.exists(os.path.join(ROOT, png)) else ""


def results(family: str) -> str:
    """One table per script: our runs (benchmark/results/FAMILY/summary.json, written by summarize.py) beside the
    same-environment anchors of benchmark/results/anchors.json, each with its budget and metric; StarCraft II numbers
    in their own column."""
    rows, anchors = [r for r in load(f"{family}/summary.json") if "env_id" in r], load("anchors.json")
    ours_jaxmarl = jaxmarl_greedy_medians()
    head = [
        "| env | env steps | seeds | ours: median over seeds (min to max) | same env, SMAX: value (budget, metric) "
        "| MAPPO paper, StarCraft II (10M) |",
        "|---|---|---|---|---|---|",
    ]
    out = []
    for r in sorted(rows, key=lambda r: (r["env_id"].startswith("simple_"), r["env_id"])):
        env, scores = r["env_id"], r["scores"]
        unit = " %" if r["metric"].startswith("win") else ""
        spread = f" ({pct(min(scores))} to {pct(max(scores))})" if len(scores) > 1 else ""
        same = [f"{a['name']} ~{a['value']} % ({a['budget']}, {a['metric']})" for a in anchors["smax"].get(env, [])]
        if env == "3m" and ours_jaxmarl:
            spread_j = f"({pct(min(ours_jaxmarl))} to {pct(max(ours_jaxmarl))})"
            same.append(f"JaxMARL MAPPO run here: {pct(np.median(ours_jaxmarl))} % {spread_j} (≤1.2M, greedy)")
        paper = anchors["sc2_paper"].get(family if family == "ippo" else "mappo", {}).get(env, "-")
        steps = f"{min(r['env_steps']) / 1e6:.2g}M"
        out.append(
            f"| {env} | {steps} | {len(scores)} | {pct(r['median'])}{unit}{spread} | {'; '.join(same) or '-'} | {paper} |"
        )
    return "\n".join(head + out) + curves(family)


def smax_10m() -> str:
    """mappo.py at the anchors' budget (benchmark/mappo_10m.sh -> benchmark/results/mappo_10m/summary.json): each
    anchor of benchmark/results/anchors.json beside ours on its own metric, JaxMARL's training win rate beside our
    training episodes' win rate and Mava's evaluation win rate beside our greedy evaluation; mean over seeds with its
    95% bootstrap interval, each seed's median of its last 10 evaluations, and the IQM over every run of the maps."""
    if not os.path.exists(os.path.join(RESULTS, "mappo_10m/summary.json")):
        return "(not finished yet: `bash benchmark/mappo_10m.sh`)"
    table, anchors = load("mappo_10m/summary.json"), load("anchors.json")

    def ours(mean, ci, per_seed) -> str:
        return f"{pct(mean)} [{pct(ci[0])}, {pct(ci[1])}] ({', '.join(pct(x) for x in per_seed)})"

    def anchor(env: str, name: str) -> str:
        found = [f"~{a['value']} ({a['budget']}, {a['metric']})" for a in anchors["smax"].get(env, []) if a["name"] == name]
        return "; ".join(found) or "-"

    out = [
        "| map | env steps | seeds | ours, greedy evaluation: mean [95% CI] (per seed) | Mava rec-MAPPO "
        "| ours, training episodes: mean [95% CI] (per seed) | JaxMARL MAPPO | MAPPO paper, StarCraft II (10M) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = sorted((r for r in table if r.get("metric", "").startswith("win")), key=lambda r: r["env_id"])
    for r in rows:
        env = r["env_id"]
        train = ours(r["train_mean"], r["train_mean_ci"], r["train_scores"]) if "train_scores" in r else "-"
        out.append(
            f"| {env} | {min(r['env_steps']) / 1e6:.3g}M | {len(r['scores'])} | {ours(r['mean'], r['mean_ci'], r['scores'])} "
            f"| {anchor(env, 'Mava rec-MAPPO')} | {train} | {anchor(env, 'JaxMARL MAPPO')} "
            f"| {anchors['sc2_paper']['mappo'].get(env, '-')} |"
        )
    for iqm in (r for r in table if "iqm" in r):  # summarize.py's, per script
        runs = sum(len(r["scores"]) for r in rows if r["script"] == iqm["script"])
        out.append(
            f"\n{iqm['script']}.py: IQM of the greedy win rates over its {runs} runs: {pct(100 * iqm['iqm'])} % (95% "
            f"stratified-bootstrap interval {pct(100 * iqm['iqm_ci'][0])} to {pct(100 * iqm['iqm_ci'][1])})."
        )
    return "\n".join(out) + curves("mappo_10m")


def jaxmarl_pairs() -> list[dict]:
    """The seed pairs of benchmark/compare_jaxmarl.py (JaxMARL's recurrent MAPPO and mappo_rnn.py, each run alone on
    this machine), one summary.json per folder benchmark/results/jaxmarl_compare*."""
    return [load(f"{d}/summary.json") for d in sorted(os.listdir(RESULTS)) if d.startswith("jaxmarl_compare")]


def jaxmarl_greedy_medians() -> list[float]:
    """Per JaxMARL run: the median of the greedy win rates (%) of the actors of its last 10 updates."""
    return [100 * float(np.median([row[2] for row in pair["jaxmarl"]["eval"][-10:]])) for pair in jaxmarl_pairs()]


def jaxmarl() -> str:
    """Time from launch to a first greedy evaluation >= the threshold, and to a mean over the evaluations of a window."""

    def at(point) -> str:
        return "not reached" if point is None else f"{point[1]:.0f} s ({point[0] / 1e3:.0f}k steps)"

    def ratio(ours, theirs) -> str:
        return f"{ours[1] / theirs[1]:.2f}" if ours and theirs else "-"

    pair = jaxmarl_pairs()[0]
    thr, win = pair["threshold"], pair["eval_window_s"]
    out = [
        f"| seeds (JaxMARL, ours) | first greedy eval >= {thr}: JaxMARL | ours | ours / JaxMARL "
        f"| mean of the last {win:.0f} s of evals >= {thr}: JaxMARL | ours | ours / JaxMARL |",
        "|---|---|---|---|---|---|---|",
    ]
    for pair in jaxmarl_pairs():
        j, o = pair["jaxmarl"], pair["ours"]
        seeds = f"{j['cmd'].split('--seed ')[1].split()[0]}, {o['cmd'].split('--seed ')[1].split()[0]}"
        out.append(
            f"| {seeds} | {at(j['first_eval'])} | {at(o['first_eval'])} | {ratio(o['first_eval'], j['first_eval'])} "
            f"| {at(j['first_eval_window'])} | {at(o['first_eval_window'])} "
            f"| {ratio(o['first_eval_window'], j['first_eval_window'])} |"
        )
    return "\n".join(out)


def install() -> str:
    """What the two install lines download (benchmark/install_size.py)."""
    r = load("install.json")
    return (
        f"Downloads, measured with `python benchmark/install_size.py` on Python {r['python']}: about "
        f"{r['cpu_install_mb']} MB for the CPU-only lines (torch's CPU wheel is {r['torch_cpu_mb']} MB), about "
        f"{r['gpu_install_mb'] / 1e3:.1f} GB for the GPU line (CUDA libraries included)."
    )


def throughput() -> str:
    """mappo.py's training throughput beside raw env stepping (benchmark/throughput.py)."""
    rows = load("throughput.json")
    out = [
        "| env | envs | raw env SPS | mappo.py SPS | ratio | s per iteration: env / update / rest |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        split = f"{r['env_s']:.2f} / {r['update_s']:.2f} / {r['other_s']:.2f}"
        out.append(f"| {r['env_id']} | {r['num_envs']} | {r['raw_sps']:.0f} | {r['sps']:.0f} | {r['ratio']:.2f} | {split} |")
    return "\n".join(out)


def async_learning() -> str:
    """mappo_async_seed.py beside mappo.py at the same budget and seeds (benchmark/mappo_async_seed.sh)"""
    if not os.path.exists(os.path.join(RESULTS, "mappo_async_seed/summary.json")):
        return "(not run yet: `bash benchmark/mappo_async_seed.sh`)"
    rows = {r["script"]: r for r in load("mappo_async_seed/summary.json") if "env_id" in r}
    out = [
        "| env | env steps | script | per seed: median of the last 10 greedy evaluations | median |",
        "|---|---|---|---|---|",
    ]
    for script in ("mappo", "mappo_async_seed"):
        r = rows[script]
        seeds = ", ".join(f"{pct(x)} %" for x in r["scores"])
        out.append(f"| {r['env_id']} | {min(r['env_steps']) / 1e6:.2g}M | {script}.py | {seeds} | {pct(r['median'])} % |")
    return "\n".join(out) + curves("mappo_async_seed")


def hanabi() -> str:
    """mappo.py and ippo.py on 2-player Hanabi beside JaxMARL's own MAPPO and IPPO run on this machine, at the same env
    steps (benchmark/hanabi_10m.sh; its `jaxmarl` mode for JaxMARL's runs). Both sides' training score over the last
    ~130k env steps of each run: ours, the median over the last 10 rollouts (128 envs x 100 steps each) of the mean
    score of the episodes that ended in the rollout; JaxMARL's, its last logged value (one update of 1024 envs x 128
    steps): the mean over its envs of each one's last ended episode. Then, once benchmark/throughput.py has a Hanabi row
    and JaxMARL's runs exist, the speeds: mappo.py's from that row, JaxMARL's from the wall times of its runs' updates."""
    jaxmarl_dir, out, speed = os.path.join(RESULTS, "hanabi_10m_jaxmarl"), [], {}
    jaxmarl_files = os.listdir(jaxmarl_dir) if os.path.isdir(jaxmarl_dir) else []
    for algo, ours, theirs in (("MAPPO", "mappo", "mappo_ff_hanabi"), ("IPPO", "ippo", "ippo_ff_hanabi")):
        if os.path.exists(os.path.join(RESULTS, f"hanabi_10m_{ours}/summary.json")):
            [r] = [r for r in load(f"hanabi_10m_{ours}/summary.json") if r.get("env_id") == "hanabi"]
            greedy = f"{pct(r['median'])} ({', '.join(pct(x) for x in r['scores'])})"
            out.append((algo, f"{ours}.py", len(r["scores"]), r.get("train_scores"), min(r["env_steps"]), greedy))
        runs = [
            load(f"hanabi_10m_jaxmarl/{f}") for f in jaxmarl_files if f.startswith(f"{theirs}_seed") and f.endswith(".json")
        ]
        if runs:
            runs.sort(key=lambda run: run["meta"]["seed"])
            train = [run["rows"][-1]["episodic_return"] for run in runs]
            out.append((algo, f"JaxMARL {theirs}", len(runs), train, min(run["rows"][-1]["step"] for run in runs), "-"))
            speed[f"JaxMARL {theirs}"] = np.median([jaxmarl_sps(run) for run in runs])
    if not out:
        return "(not run yet: `bash benchmark/hanabi_10m.sh`, `bash benchmark/hanabi_10m.sh jaxmarl`)"
    table = [
        "| algorithm | implementation | seeds | env steps | training score per seed | median | greedy score: median (per seed) |",
        "|---|---|---|---|---|---|---|",
    ]
    for algo, impl, seeds, train, steps, greedy in out:
        per_seed, median = (", ".join(f"{x:.2f}" for x in train), f"{np.median(train):.2f}") if train else ("-", "-")
        table.append(f"| {algo} | {impl} | {seeds} | {steps / 1e6:.3g}M | {per_seed} | {median} | {greedy} |")
    throughput = load("throughput.json") if os.path.exists(os.path.join(RESULTS, "throughput.json")) else []
    r = next((r for r in throughput if r["env_id"] == "hanabi"), None)
    if r and speed:  # the speeds, where both sides were measured
        speeds = ", ".join(f"{name} {sps:.0f}" for name, sps in speed.items())
        table += ["", f"SPS on this machine, each run alone, in steady state: mappo.py {r['sps']:.0f} (`benchmark/throughput.py`: "
                  f"its update is {r['update_s'] / r['iteration_s']:.0%} of an iteration); {speeds} (the median update of "
                  "each 10M run, median over seeds)."]  # fmt: skip
    return "\n".join(table)


def jaxmarl_sps(run: dict) -> float:
    """A JaxMARL baseline run's env steps per second in its median update (the first one compiles)"""
    return run["meta"]["steps_per_update"] / np.median(np.diff([row["wall_time"] for row in run["rows"]]))


def async_throughput() -> str:
    """mappo_async_seed.py's SPS beside mappo.py's (benchmark/async_throughput.py)"""
    from async_throughput import table  # benchmark/ is on the path of a script run from it

    return table(load("async_throughput.json"))


GENERATORS = dict(lines=lines, diff=diff, results=results, throughput=throughput, jaxmarl=jaxmarl, install=install)
GENERATORS.update(async_learning=async_learning, async_throughput=async_throughput, hanabi=hanabi, smax_10m=smax_10m)
BLOCK = re.compile(r"<!-- gen (\w+)((?: [\w./-]+)*) -->(.*?)<!-- /gen -->", re.S)
LINK = re.compile(r"\]\(((?:\w+)\.py)#L(\d+) \"([^\"]+)\"\)")


def render(readme: str) -> str:
    def block(m: re.Match) -> str:
        name, args, old = m.group(1), m.group(2).split(), m.group(3)
        new = GENERATORS[name](*args)
        if "\n" in old or "\n" in new:  # a block: the generated text on lines of its own
            new = f"\n{new}\n"
        return f"<!-- gen {name}{m.group(2)} -->{new}<!-- /gen -->"

    def link(m: re.Match) -> str:
        script, text = m.group(1), m.group(3)
        with open(os.path.join(ROOT, script)) as f:
            found = [i for i, line in enumerate(f, 1) if text in line]
        if not found:
            sys.exit(f"README.md links to {script} at a line with {text!r}, which it no longer has")
        return f']({script}#L{found[0]} "{text}")'

    return LINK.sub(link, BLOCK.sub(block, readme))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md differs from what would be written")
    opts = parser.parse_args()
    path = os.path.join(ROOT, "README.md")
    with open(path) as f:
        readme = f.read()
    new = render(readme)
    if opts.check:
        if new != readme:
            sys.exit("README.md is not what benchmark/update_readme.py writes: run it and commit the result")
        return
    with open(path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()
