"""Writes the generated parts of README.md and of benchmark/results/README.md (the tables and figures in detail that
README.md points to), so that no number in them is typed by hand:

- between `<!-- gen NAME ARGS -->` and `<!-- /gen -->`, what the generator NAME makes of files in benchmark/results (or,
  for `lines` and `diff`, of the scripts themselves);
- the line numbers of links into the scripts, written `[text](mappo.py#L123 "def compute_gae")`: the title is the
  text of the line the link points to, and the number is rewritten to the first line that contains it.

Images of benchmark/results in the second are written relative to its folder.

    python benchmark/report/update_readme.py           # rewrite both
    python benchmark/report/update_readme.py --check   # exit 1 if either is not what this would write (tests run this)
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import largest_fall, whole  # noqa: E402
import gpu_suite_table  # noqa: E402  (the GPU measurements' tables)
import lbf_rware  # noqa: E402  (its table: the LBF and RWARE results)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "benchmark", "results")
DOCS = ("README.md", "benchmark/results/README.md")


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
    """One table per script: our runs (benchmark/results/FAMILY/summary.json, written by summarize.py), each seed's
    median of its last 10 greedy evaluations. No anchor stands beside them: the published SMAX numbers are at 10M env
    steps (the 10M tables), the MAPPO paper's are StarCraft II (sc2_reference)."""
    rows = [r for r in load(f"{family}/summary.json") if "env_id" in r]
    out = ["| env | env steps | seeds | metric | ours, greedy evaluation: per seed | median |", "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["env_id"].startswith("simple_"), r["env_id"])):
        win = r["metric"].startswith("win")
        metric = "win rate %" if win else r["metric"]
        values = percents(r["scores"]) if win else ", ".join(f"{x:.1f}" for x in r["scores"])
        median = whole(r["median"]) if win else f"{r['median']:.1f}"
        steps = f"{min(r['env_steps']) / 1e6:.2g}M"
        out.append(f"| {r['env_id']} | {steps} | {len(r['scores'])} | {metric} | {values} | {median} |")
    return "\n".join(out) + curves(family)


def sc2_reference() -> str:
    """The StarCraft II numbers of the MAPPO paper (Table 1) and of Async MAPPO (Table 2; benchmark/results/anchors.json),
    on their own: another simulator against another opponent, a target of shape only."""
    paper = load("anchors.json")["sc2_paper"]
    out = ["| map | MAPPO (Table 1) | IPPO (Table 1) | Async MAPPO (its Table 2) |", "|---|---|---|---|"]
    for env in sorted(set(paper["mappo"]) | set(paper["async"]), key=lambda m: (paper["mappo"].get(m, 0), m), reverse=True):
        row = (paper[k].get(env) for k in ("mappo", "ippo", "async"))
        out.append(f"| {env} | " + " | ".join("-" if x is None else f"{x:.1f}" for x in row) + " |")
    return "\n".join(out)


# Results folder of a 10M SMAX family -> (script, setting, where it ran). Ours and JaxMARL's runs here step the SMAX of
# the pinned jaxmarl release (requirements.txt), unless a JaxMARL run's meta names another (jaxmarl_baseline.py
# --smax-wheel); Mava's published runs stepped jaxmarl 0.0.2's (anchors.json).
SMAX_VERSION = "jaxmarl 0.2.0"
SMAX_SETTINGS = {
    "smax_10m_mappo": ("mappo.py", "paper (Table 12)", "2-core CPU, 2 runs at once"),
    "smax_hard_10m_paper": ("mappo_rnn.py", "paper (Table 12)", "2-core CPU, 2 runs at once"),
    "smax_hard_10m_table2": ("mappo_rnn.py", "Async MAPPO Table 2: 60 envs, 10 epochs", "2-core CPU, 2 runs at once"),
    "smax_hard_10m_ent0": ("mappo_rnn.py", "ablation: paper, --ent-coef 0 (as JaxMARL, Mava)", "2-core CPU, 2 runs at once"),
    "smax_hard_10m_clip005": (
        "mappo_rnn.py",
        "ablation: paper, --clip-coef 0.05 (the authors' 5m_vs_6m script)",
        "2-core CPU, 2 runs at once",
    ),
    "smax_hard_10m_epochs5": (
        "mappo_rnn.py",
        "ablation: paper, --update-epochs 5 (Table 12's value on 3s5z_vs_3s6z and 27m_vs_30m)",
        "2-core CPU, 2 runs at once",
    ),
    "smax_hard_10m_jaxcfg": (
        "mappo_rnn.py",
        "ablation: paper with JaxMARL's values (128 envs x 128 steps, 128 wide, lr 2e-3 annealed, 4 epochs x 4"
        " mini-batches, no entropy bonus, value loss weight 0.5, gradient norm 0.25)",
        "2-core CPU, 2 runs at once",
    ),
    "smax_hard_10m_mavacfg": (
        "mappo_rnn.py",
        "ablation: paper with Mava's SMAX sweep values (128 envs x 128 steps, 128 wide, lr 4e-3 constant, 2 epochs x 2"
        " mini-batches, no entropy bonus, value loss weight 0.5, gradient norm 0.5)",
        "2-core CPU, 2 runs at once",
    ),
    "smax_hard_10m_tuned": (
        "mappo_rnn.py",
        "tuned (--setting tuned)",
        "2-core CPU, 2 runs at once",
    ),
    "smax_hard_10m_mavalike": (
        "mappo_rnn.py",
        "ablation: paper with Mava's values and its choices we have flags for (critic on the world state and id, no death"
        " masking, dead agents in the policy loss, 128-step BPTT, no PopArt, squared error, no input LayerNorm, 1 layer)",
        "2-core CPU, 2 runs at once",
    ),
    "smax_hard_10m_mavalikecl": (
        "mappo_rnn.py",
        "ablation: as the row above, with the critic on all agents' observations (Mava's GlobalStateWrapper, which its"
        " rec_mappo.py does not use)",
        "2-core CPU, 2 runs at once",
    ),
    "smax_hard_10m_jaxmarl": ("JaxMARL mappo_rnn_smax", "its own config, run by us", "2-core CPU, beside our runs or alone"),
    "smax_hard_10m_mava_jaxmarl": (
        "JaxMARL mappo_rnn_smax",
        "Mava's SMAX values (lr 4e-3 constant, 2 epochs x 2 mini-batches, gradient norm 0.5), run by us",
        "2-core CPU, beside our runs",
    ),
    "smax_hard_10m_smax002_jaxmarl": (
        "JaxMARL mappo_rnn_smax",
        "its own config, on the SMAX Mava's runs stepped, run by us",
        "2-core CPU, beside our runs",
    ),
    "smax_hard_10m_mava_rec_mappo": (
        "Mava rec_mappo (82583ba)",
        "its SMAX sweep config, run by us",
        "2-core CPU, beside our runs",
    ),
    "smax_hard_10m_mava_noagentid_rec_mappo": (
        "Mava rec_mappo (82583ba)",
        "ablation: its SMAX sweep config without agent ids (system.add_agent_id=False), run by us",
        "2-core CPU, beside our runs",
    ),
    "smax_hard_10m_mava_smax002_jaxmarl": (
        "JaxMARL mappo_rnn_smax",
        "Mava's SMAX values, on the SMAX Mava's runs stepped, run by us",
        "2-core CPU, beside our runs",
    ),
}


def jaxmarl_smax(folder: str) -> list[dict]:
    """JaxMARL's runs in benchmark/results/FOLDER (`bash benchmark/smax_hard_10m.sh jaxmarl`) as summarize.py's rows: per
    map, the seeds of every device pooled (this machine's CPU, or a GPU machine: benchmark/jaxmarl/device_runs.sh; the
    configs are the same, the wall-time cell names each device and its seeds), each seed's median over its
    last 10 updates of the greedy and of the sampled evaluation of their actors (benchmark/jaxmarl/jaxmarl_greedy_eval.py)
    and of its logged training win rate; the env steps and wall time of its end."""
    import gzip

    runs = {}
    for name in sorted(os.listdir(os.path.join(RESULTS, folder))):
        evaluated = all(
            os.path.exists(os.path.join(RESULTS, folder, name.replace(".json.gz", f"_{m}.json")))
            for m in ("greedy", "sampled")
        )
        if name.startswith("mappo_rnn_smax_") and name.endswith(".json.gz") and evaluated:  # else still being evaluated
            with gzip.open(os.path.join(RESULTS, folder, name), "rt") as f:
                run = json.load(f)
            meta = run.get("meta", {})
            values = meta.get("values", "own")  # jaxmarl_baseline.py --values (runs before it: own)
            smax = meta.get("smax") or SMAX_VERSION  # --smax-wheel's release, else the checkout's
            tags = ([] if values == "own" else [values]) + (["smax" + smax.split()[-1]] if meta.get("smax") else [])
            if folder != "_".join(["smax_hard_10m", *tags, "jaxmarl"]).replace(".", ""):
                raise SystemExit(f"error: {folder}/{name} ran with --values {values} on {smax}: it belongs in another folder")
            evals = [load(f"{folder}/{name.removesuffix('.json.gz')}_{mode}.json")["rows"] for mode in ("greedy", "sampled")]
            # runs before the device was recorded ran on this machine's CPU
            device = (meta.get("device", "cpu"), meta.get("runs_at_once"), meta.get("beside"))  # what shared the machine
            seed = int(name.removesuffix(".json.gz").rsplit("seed", 1)[1])
            training_greedy_sampled = (run["rows"], *evals)
            runs.setdefault((run["config"]["MAP_NAME"], smax), []).append((seed, device, training_greedy_sampled))
    rows = []
    for (env, smax), seeds in runs.items():  # one row per map and SMAX release: every device's seeds pooled
        last10 = [[100 * np.nanmedian([row["win_rate"] for row in rows_[-10:]]) for rows_ in r] for *_, r in seeds]
        train, greedy, sampled = (list(x) for x in zip(*last10))
        end = [training[-1] for *_, (training, _, _) in seeds]
        row = dict(env_id=env, metric="win rate %", scores=greedy, sampled_scores=sampled, train_scores=train, smax=smax)
        row["largest_fall"] = [largest_fall(greedy_rows) for *_, (_, greedy_rows, _) in seeds]  # by our evaluation
        row.update(env_steps=[e["step"] for e in end], wall_time=[e["wall_time"] for e in end])
        by_device = {}  # device -> [(seed, wall time)]
        for (seed, device, _), wall in zip(seeds, row["wall_time"]):
            by_device.setdefault(device, []).append((seed, wall))
        if len(by_device) == 1:  # one device: the folder's machine (None), or the one named
            [device] = by_device
            row["machine"] = None if device[0] == "cpu" else device_name(device, folder)
        else:  # per device, its seeds and their median wall time
            named = {device: device_name(device, folder) for device in by_device}
            seeds_on = {
                d: ("seeds " if len(r) > 1 else "seed ") + ", ".join(str(seed) for seed, _ in r) for d, r in by_device.items()
            }
            row["machine"] = "; ".join(f"{seeds_on[d]}: {named[d]}" for d in by_device)
            row["wall_cell"] = "; ".join(
                f"{duration(np.median([wall for _, wall in runs_]))} ({named[d]}: {seeds_on[d]})"
                for d, runs_ in by_device.items()
            )
        rows.append(row)
    return rows


def device_name(device: tuple, folder: str) -> str:
    """Where a JaxMARL run ran, from its meta: the folder's machine for this CPU, else the GPU and what shared it"""
    gpu, at_once, beside = device
    if gpu == "cpu":
        return SMAX_SETTINGS[folder][2]
    shared = "alone" if at_once == 1 else f"{at_once} runs at once"
    return f"{gpu}, {shared}" + (f", beside {beside} on its CPU" if beside else "")  # device_runs.sh ours, same call


# Mava's runs: each folder's changes to its sweep config (smax_hard_10m.sh MAVA_ABLATION, mava_baseline.py --set)
MAVA_SETS = {"smax_hard_10m_mava_rec_mappo": [], "smax_hard_10m_mava_noagentid_rec_mappo": ["system.add_agent_id=False"]}


def mava_smax(folder: str) -> list[dict]:
    """Mava's own runs in benchmark/results/FOLDER (`bash benchmark/smax_hard_10m.sh mava`: benchmark/mava/mava_baseline.py)
    as summarize.py's rows: per map, each seed's median over its last 10 evaluations, in the column of their metric
    (sampled or greedy, from the run's config); the env steps of its last evaluation and the run's wall time. Mava
    evaluates every 10 updates: its last 10 span the last 1.6M env steps, where JaxMARL's (every update) span 164k."""
    import gzip

    runs = {}
    for name in sorted(os.listdir(os.path.join(RESULTS, folder))):
        if name.startswith("rec_mappo_") and name.endswith(".json.gz"):
            with gzip.open(os.path.join(RESULTS, folder, name), "rt") as f:
                run = json.load(f)
            if run["meta"].get("set", []) != MAVA_SETS[folder]:
                raise SystemExit(
                    f"error: {folder}/{name} ran with --set {run['meta'].get('set')}: it belongs in another folder"
                )
            runs.setdefault((run["meta"]["map"], run["meta"]["smax"], run["meta"]["evaluation_greedy"]), []).append(run)
    rows = []
    for (env, smax, greedy), seeds in runs.items():
        last10 = [100 * float(np.median([r["win_rate"] for r in run["rows"][-10:]])) for run in seeds]
        row = dict(env_id=env, metric="win rate %", scores=last10 if greedy else [], sampled_scores=[] if greedy else last10)
        row.update(smax=smax, env_steps=[run["rows"][-1]["step"] for run in seeds], machine=None)
        row.update(largest_fall=[largest_fall(run["rows"]) for run in seeds], fall_metric="greedy" if greedy else "sampled")
        rows.append(dict(row, wall_time=[run["meta"]["wall_time"] for run in seeds]))
    return rows


# other implementations run here, by the end of their folder's name (they have no summary.json): their rows' reader
BASELINE_READERS = {"_jaxmarl": jaxmarl_smax, "_rec_mappo": mava_smax}
BASELINE_FOLDERS = tuple(BASELINE_READERS)


def elsewhere(folder: str, row: dict) -> str:
    """The share of a row's env steps trained away from its folder's machine, from FOLDER/kept/machines.json (each run
    resumed on a lent machine's CPU cores by benchmark/jaxmarl/device_runs.sh ours: [machine, from step, to step]), as
    "; N % of the env steps on MACHINE", or "" where none was"""
    path = os.path.join(RESULTS, folder, "kept", "machines.json")
    if not os.path.exists(path):
        return ""
    away = {}
    for name, parts in load(f"{folder}/kept/machines.json").items():
        env, _, seed, _ = name.split("__")
        if env == row["env_id"] and int(seed) in row["seeds"]:
            for machine, start, end in parts:
                away[machine] = away.get(machine, 0) + end - start
    total = len(row["seeds"]) * max(row["env_steps"])  # each seed ran to its budget (the distinct ones: env_steps)
    share = lambda steps: f"{100 * steps / total:.0f} %" if steps >= total / 200 else "<1 %"  # noqa: E731
    return "".join(f"; {share(steps)} of the env steps on {machine}" for machine, steps in sorted(away.items()))


# The setting whose runs --setting tuned reuses on a map (smax_hard_10m.sh's tuned_links) -> what tuned is there
TUNED_FROM = {
    "mavacfg": "Mava's SMAX sweep values, mavacfg's runs",
    "ent0": "no entropy bonus, ent0's runs",
    "paper": "Table 12's values, paper's runs",
}


def tuned_here(env: str) -> str:
    """What the tuned setting is on ENV, read off the links of smax_hard_10m_tuned/kept to the runs it reuses; its own
    runs (no link) have Table 12's values"""
    kept = os.path.join(RESULTS, "smax_hard_10m_tuned", "kept")
    for name in sorted(os.listdir(kept)) if os.path.isdir(kept) else []:
        path = os.path.join(kept, name)
        if name.startswith(f"{env}__") and os.path.islink(path):
            setting = os.readlink(path).split(os.sep)[-3].removeprefix("smax_hard_10m_")
            return TUNED_FROM[setting]
    return "Table 12's values"


def unfinished_runs(folder: str, env: str) -> int:
    """ENV's runs in FOLDER that stopped short of their budget: a checkpoint in FOLDER/kept (ours: smax_hard_10m.sh
    keep, a finished run is kept as its .json.gz instead; JaxMARL's: jaxmarl-keep, removed once the run is done)"""
    kept = os.path.join(RESULTS, folder, "kept")
    ours = re.compile(rf"{re.escape(env)}__.*\.pt")
    jaxmarls = re.compile(rf"mappo_rnn_smax_{re.escape(env)}_seed\d+\.npz")
    names = os.listdir(kept) if os.path.isdir(kept) else []
    return sum(bool(ours.fullmatch(n) or jaxmarls.fullmatch(n)) for n in names)


def duration(seconds) -> str:
    """A run's wall time: in hours (one decimal), or in minutes (two significant digits) under an hour"""
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{float(f'{seconds / 60:.2g}'):g} min"


def percents(values) -> str:
    """Win rates (%) of the seeds in whole percents (summarize.whole: each a median of 32-episode evaluations)"""
    return ", ".join(map(whole, values)) if values else "-"


def finished(folders) -> list[str]:
    """The folders with runs to show: ours with a summary.json, the other implementations' with a run (.json.gz). A
    folder that does not exist stops the write: a misspelt name would otherwise leave its rows out unsaid."""
    missing = [f for f in folders if not os.path.isdir(os.path.join(RESULTS, f))]
    if missing:
        sys.exit(f"a generated block names results folders that do not exist: {', '.join(missing)}")
    done = [f for f in folders if os.path.exists(os.path.join(RESULTS, f, "summary.json"))]
    baselines = [f for f in folders if f.endswith(BASELINE_FOLDERS) and os.path.isdir(os.path.join(RESULTS, f))]
    return done + [f for f in baselines if any(name.endswith(".json.gz") for name in os.listdir(os.path.join(RESULTS, f)))]


def win_rows(folder: str) -> list[dict]:
    """A folder's rows scored by win rate: ours from its summary.json, the others' from their reader"""
    reader = next((read for end, read in BASELINE_READERS.items() if folder.endswith(end)), None)
    return [r for r in (reader(folder) if reader else load(f"{folder}/summary.json")) if r.get("metric", "").startswith("win")]


def smax_10m(*folders: str) -> str:
    """SMAX at 10M env steps, one row per map and implementation: each setting of ours (benchmark/results/FOLDER/
    summary.json), then Mava's published number. Every number sits in the column of its metric: greedy evaluation,
    sampled evaluation, or the training episodes (sampled actions); each of ours is per seed, the median of its last
    10 evaluations (or of the training episodes of the same 10 rollouts). With `+jaxmarl2023` among the folders, the
    JaxMARL report's 2023 training win rates too, marked stale (anchors.json's reading says why)."""
    jaxmarl2023 = "+jaxmarl2023" in folders
    folders = tuple(f for f in folders if f != "+jaxmarl2023")
    done = finished(folders)
    if not done:
        return f"(not finished yet: `bash benchmark/{'smax_10m' if folders == ('smax_10m_mappo',) else 'smax_hard_10m'}.sh`)"
    anchors, ours = load("anchors.json"), {}
    for folder in done:
        for r in win_rows(folder):
            ours.setdefault(r["env_id"], []).append((folder, r))
    out = [
        "| map | implementation, setting | SMAX | seeds | env steps | greedy eval % | sampled eval % "
        "| training episodes % | wall time per run (machine) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    measured = []  # benchmark/measure/hard_map_sps.py: what a run of a map costs here
    if "smax_hard_10m_paper" in folders and os.path.exists(os.path.join(RESULTS, "hard_map_sps.json")):
        measured = load("hard_map_sps.json")
    paper_maps = {env for env, rs in ours.items() if any(folder == "smax_hard_10m_paper" for folder, _ in rs)}
    unfinished = {r["env_id"]: r for r in measured if r["env_id"] not in paper_maps}
    for env in sorted({*ours, *unfinished}):
        if env in unfinished:  # what a run would cost: one timing, two significant digits
            r = unfinished[env]
            sps, hours = (float(f"{x:.2g}") for x in (r["sps"], r["hours_per_10m"]))
            out.append(
                f"| {env} | {r['script']}, {r['setting']} | {SMAX_VERSION} | - | not finished | - | - | - | ~{hours:g} h at "
                f"{sps:,.0f} env steps/s, evaluation off ({r['machine']}, alone) |"
            )
        for folder, r in ours.get(env, []):
            script, setting, machine = SMAX_SETTINGS[folder]
            if folder == "smax_hard_10m_tuned":  # per map, what tuned is there
                setting = f"{setting.removesuffix(')')}: {tuned_here(env)})"
            wall = f"{duration(np.median(r['wall_time']))} ({r.get('machine') or machine}{elsewhere(folder, r)})"
            wall = r.get("wall_cell") or wall  # JaxMARL's seeds on several devices: each device's
            seeds = len(r["scores"] or r.get("sampled_scores") or [])  # Mava's runs: sampled evaluations only
            more = unfinished_runs(folder, env)  # runs that go on in sittings (27m_vs_30m): not in the row's numbers
            seeds = f"{seeds} (+{more} unfinished)" if more else seeds
            out.append(
                f"| {env} | {script}, {setting} | {r.get('smax', SMAX_VERSION)} | {seeds} | {min(r['env_steps']) / 1e6:.3g}M "
                f"| {percents(r['scores'])} | {percents(r.get('sampled_scores'))} | {percents(r.get('train_scores'))} "
                f"| {wall} |"
            )
        for a in anchors["smax"].get(env, []):
            if a["name"] == "JaxMARL MAPPO" and jaxmarl2023:  # a training win rate; JaxMARL's MAPPO was fixed since
                how = anchors["reading"][a["name"]]
                who = f"{a['name']} (2023 report, stale: its MAPPO fixed since; {how['read']})"
                out.append(f"| {env} | {who} | {how['smax']} | {how['seeds']} | {a['budget']} | - | - | ~{a['value']} | - |")
            if a["name"].startswith("Mava"):  # published: an evaluation with sampled actions; how it was read, and what
                # of it is inferred (its seeds, its SMAX), anchors.json's "reading" says with the reasons
                how = anchors["reading"][a["name"]]
                note = how["read"] + (f"; {how['per_map'][env]}" if env in how.get("per_map", {}) else "")
                who, steps, value = f"{a['name']} (published plot: {note})", a["budget"], f"~{a['value']}"
                out.append(f"| {env} | {who} | {how['smax']} | {how['seeds']} | {steps} | - | {value} | - | - |")
    if any(f.endswith(BASELINE_FOLDERS) for f in done):  # every implementation on one figure (report/hard_maps_curves.py)
        return "\n".join(out) + curves("smax_hard_10m_compare")  # each setting's own: `figures` in benchmark/results
    own = figures(*done)
    return "\n".join(out) + (f"\n\n{own}" if own else "")


def setting_cost(base: str, other: str) -> str:
    """What a run of one setting costs beside another's on each map both finished: the median wall time per run and
    the env steps trained per second it comes to (10M env steps over that time), from their summary.json files"""
    rows = {folder: {r["env_id"]: r for r in win_rows(folder)} for folder in (base, other)}
    out = [
        f"| map | {SMAX_SETTINGS[base][1]}: wall time per run | env steps/s | {SMAX_SETTINGS[other][1]}: wall time per run "
        "| env steps/s | time, ratio | machine |",
        "|---|---|---|---|---|---|---|",
    ]
    for env in sorted(set(rows[base]) & set(rows[other])):
        a, b = (rows[f][env] for f in (base, other))
        wall_a, wall_b = float(np.median(a["wall_time"])), float(np.median(b["wall_time"]))
        sps_a, sps_b = min(a["env_steps"]) / wall_a, min(b["env_steps"]) / wall_b
        out.append(
            f"| {env} | {duration(wall_a)} | {sps_a:,.0f} | {duration(wall_b)} | {sps_b:,.0f} | {wall_b / wall_a:.2f}x "
            f"| {SMAX_SETTINGS[other][2]} |"
        )
    return "\n".join(out)


def figures(*folders: str) -> str:
    """the plots of our folders that have one, a blank line between two"""
    return "".join(curves(f) for f in folders if not f.endswith(BASELINE_FOLDERS)).lstrip("\n")


def noise_fall(per_window: float, windows: int = 20, p: float = 0.5, reps: int = 2000) -> float:
    """The median largest fall (points) that noise alone reads on a flat curve: a true win rate p throughout, `windows`
    windows of per_window evaluations of 32 episodes each (seeded, so the README does not change between writes)."""
    rng = np.random.default_rng(0)
    means = 100 * rng.binomial(int(32 * per_window), p, (reps, windows)) / (32 * per_window)  # (reps, windows)
    best_before = np.maximum.accumulate(means, axis=1)[:, :-1]  # (reps, windows - 1): the best window up to each
    return float(np.median((best_before - means[:, 1:]).max(axis=1)))


def smax_falls(*folders: str) -> str:
    """How far each seed fell on the way (summarize.largest_fall): the largest fall of its win rate from the mean over
    one window of 0.5M env steps to a later window's, in the evaluation each side has over the whole run: greedy for
    ours (benchmark/results/FOLDER/summary.json) and JaxMARL's (its actors evaluated by jaxmarl_greedy_eval.py), Mava's
    own (sampled, every 10 updates: about 3 evaluations a window)."""
    out = [
        "| map | implementation, setting | evaluation | evaluations a window | a flat 50 % curve's fall "
        "| largest fall on the way, per seed: points of win rate (from the mean % of a 0.5M-env-step window, at its first "
        "env step, to a later one's) |",
        "|---|---|---|---|---|---|",
    ]
    rows = [(r["env_id"], i, folder, r) for i, folder in enumerate(finished(folders)) for r in win_rows(folder)]

    def fall(f) -> str:  # in whole percents, the fall the difference of the two shown
        if f is None:
            return "none"
        high, low = whole(f[0]), whole(f[2])
        return f"{int(high) - int(low)} ({high} at {f[1] / 1e6:.1f}M to {low} at {f[3] / 1e6:.1f}M)"

    def per_window(falls) -> str:  # the evaluations of 32 episodes a window (median over seeds); noise alone's fall
        counts = [f[4] for f in falls if f is not None]
        return f"{np.median(counts):.0f} | {whole(noise_fall(np.median(counts)))}" if counts else "- | -"

    for env, _, folder, r in sorted(rows, key=lambda row: row[:2]):
        script, setting, _ = SMAX_SETTINGS[folder]
        if folder.startswith("smax_hard_10m_") and not folder.endswith(BASELINE_FOLDERS):  # smax_hard_10m.sh's SETTINGS
            setting = f"`{folder.removeprefix('smax_hard_10m_')}`"
        where = f" ({r['machine']})" if r.get("machine") else ""
        falls = "; ".join(map(fall, r["largest_fall"]))
        evaluation = f"{r.get('fall_metric', 'greedy')} | {per_window(r['largest_fall'])}"
        out.append(f"| {env} | {script}, {setting}{where} | {evaluation} | {falls} |")
    return "\n".join(out)


def jaxmarl_pairs() -> list[dict]:
    """The seed pairs of benchmark/jaxmarl/compare_jaxmarl.py (JaxMARL's recurrent MAPPO and mappo_rnn.py, each run alone on
    this machine), one summary.json per folder benchmark/results/walltime_3m_*."""
    return [load(f"{d}/summary.json") for d in sorted(os.listdir(RESULTS)) if d.startswith("walltime_3m_")]


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
    """What the two install lines download (benchmark/measure/install_size.py)."""
    r = load("install.json")
    return (
        f"Downloads, measured with `python benchmark/measure/install_size.py` on Python {r['python']}: about "
        f"{r['cpu_install_mb']} MB for the CPU-only lines (torch's CPU wheel is {r['torch_cpu_mb']} MB), about "
        f"{r['gpu_install_mb'] / 1e3:.1f} GB for the GPU line (CUDA libraries included)."
    )


def default_budget() -> str:
    """What a run at the default budget costs here: the wall time of mappo.py's 10M runs on SMAX (smax_10m_mappo)"""
    rows = load("smax_10m_mappo/summary.json")
    hours = [t / 3600 for r in rows for t in r["wall_time"]]
    maps = ", ".join(r["env_id"] for r in rows)
    return (
        f"The default budget is 10M env steps (the MAPPO paper's SMAC budget): on this 2-core CPU, two runs at once, "
        f"mappo.py's 10M runs on {maps} took {min(hours):.1f} to {max(hours):.1f} h each "
        "(`benchmark/results/smax_10m_mappo`); `--total-timesteps` sets another."
    )


def throughput() -> str:
    """mappo.py's training throughput beside raw env stepping (benchmark/measure/throughput.py)."""
    rows = load("throughput.json")
    out = [
        "| env | envs | raw env SPS | mappo.py SPS | ratio | s per iteration: env / update / rest |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        split = f"{r['env_s']:.2f} / {r['update_s']:.2f} / {r['other_s']:.2f}"
        out.append(f"| {r['env_id']} | {r['num_envs']} | {r['raw_sps']:.0f} | {r['sps']:.0f} | {r['ratio']:.2f} | {split} |")
    return "\n".join(out)


def compile_speed() -> str:
    """The update eager and with --compile, alternating runs of each script (benchmark/measure/compile_speed.py)"""
    if not os.path.exists(os.path.join(RESULTS, "compile.json")):
        return "(not measured yet: `python benchmark/measure/compile_speed.py`)"
    speed = load("compile.json")
    out = [
        f"Measured on {speed['machine']}: `{speed['command']}`.",
        "",
        "| script | env | update, eager | update, compiled | compiled / eager | first update, compiling | SPS eager / compiled |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in speed["rows"]:
        out.append(
            f"| {r['script']} | {r['env_id']} | {r['eager_update_s']:.2f} s | {r['compiled_update_s']:.2f} s "
            f"| {r['update_ratio']:.2f}x | {r['compile_first_update_s']:.0f} s | {r['eager_sps']:,.0f} / {r['compiled_sps']:,.0f} |"
        )
    return "\n".join(out)


def async_learning() -> str:
    """mappo_async_seed.py beside mappo.py at the same budget and seeds (benchmark/mappo_async_seed.sh): each seed's
    median of its last 10 greedy evaluations (32 episodes each: whole percents) and of the training win rate of the
    rollouts before them. No wall time: these runs shared the machine; the throughput table below is measured alone."""
    if not os.path.exists(os.path.join(RESULTS, "mappo_async_seed/summary.json")):
        return "(not run yet: `bash benchmark/mappo_async_seed.sh`)"
    rows = {r["script"]: r for r in load("mappo_async_seed/summary.json") if "env_id" in r}
    out = [
        "| env | env steps | script | greedy eval %, per seed | median | training episodes %, per seed |",
        "|---|---|---|---|---|---|",
    ]
    for script in ("mappo", "mappo_async_seed"):
        r = rows[script]
        seeds, train = percents(r["scores"]), percents(r.get("train_scores", []))
        steps = f"{min(r['env_steps']) / 1e6:.2g}M"
        out.append(f"| {r['env_id']} | {steps} | {script}.py | {seeds} | {whole(r['median'])} | {train} |")
    return "\n".join(out) + curves("mappo_async_seed")


def hanabi() -> str:
    """mappo.py and ippo.py on 2-player Hanabi beside JaxMARL's own MAPPO and IPPO run on this machine, at the same env
    steps (benchmark/hanabi_10m.sh; its `jaxmarl` mode for JaxMARL's runs). Both sides' training score over the last
    ~130k env steps of each run: ours, the median over the last 10 rollouts (128 envs x 100 steps each) of the mean
    score of the episodes that ended in the rollout; JaxMARL's, its last logged value (one update of 1024 envs x 128
    steps): the mean over its envs of each one's last ended episode. Then, once benchmark/measure/throughput.py has a Hanabi row
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
            speed[f"JaxMARL {theirs}"] = jaxmarl_speed(theirs, runs)
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
        table += ["", "SPS on this machine, each run alone, in steady state, each with its own configuration (a "
                  f"comparison of configurations, not an implementation speed): mappo.py {r['sps']:.0f} (`benchmark/measure/throughput.py`: "
                  f"its update is {r['update_s'] / r['iteration_s']:.0%} of an iteration); {speeds} (the median update of "
                  "a run alone: `bash benchmark/hanabi_10m.sh speed` for MAPPO, its 10M runs for IPPO)."]  # fmt: skip
    paper = load("anchors.json")["hanabi_paper"]
    table += ["", f"{paper['source']}: {paper['mappo_best']}, {paper['mappo_average']} (anchors.json)."]
    return "\n".join(table)


def hanabi_wall() -> str:
    """MAPPO on Hanabi at equal wall time on this machine: each side's training-score curve (per step, from its 10M
    runs) read at the env step it reaches in T seconds at its speed measured here alone, in steady state, up to the end
    of JaxMARL's runs (their curve goes no further): mappo.py's
    from benchmark/measure/throughput.py's Hanabi row, JaxMARL's from the median update of a run of its own alone
    (hanabi_10m_jaxmarl/speed_mappo_ff_hanabi.json: `bash benchmark/hanabi_10m.sh speed`). Start-up and compilation
    are left out on both sides, and so is our evaluation (JaxMARL's baseline has none). Per seed: ours, the median of
    the last 10 rollouts' score up to that step; JaxMARL's, its last logged score up to that step; then the median."""
    speed_file = os.path.join(RESULTS, "hanabi_10m_jaxmarl/speed_mappo_ff_hanabi.json")
    ours_dir = os.path.join(RESULTS, "hanabi_10m_mappo/kept")
    jaxmarl_dir = os.path.join(RESULTS, "hanabi_10m_jaxmarl")
    theirs = [f for f in sorted(os.listdir(jaxmarl_dir)) if re.fullmatch(r"mappo_ff_hanabi_seed\d+\.json", f)]
    if not (os.path.exists(speed_file) and os.path.isdir(ours_dir) and theirs):
        return "(not measured yet: `bash benchmark/hanabi_10m.sh speed`, after both sides' 10M runs)"
    import gzip

    [row] = [r for r in load("throughput.json") if r["env_id"] == "hanabi"]
    sps = {
        "mappo.py": row["sps"],
        "JaxMARL mappo_ff_hanabi": jaxmarl_speed("mappo_ff_hanabi", []),
    }
    curves = {"mappo.py": [], "JaxMARL mappo_ff_hanabi": []}  # per seed: [(step, training score)], steps rising
    for name in sorted(os.listdir(ours_dir)):
        with gzip.open(os.path.join(ours_dir, name), "rt") as f:
            evals = json.load(f)["evals"]
        scores = [e.get("train_return", np.nan) for e in evals]
        curves["mappo.py"].append([(e["step"], np.nanmedian(scores[max(0, i - 9) : i + 1])) for i, e in enumerate(evals)])
    for name in theirs:
        curves["JaxMARL mappo_ff_hanabi"].append(
            [(r["step"], r["episodic_return"]) for r in load(f"hanabi_10m_jaxmarl/{name}")["rows"]]
        )
    end = min(curve[-1][0] for curve in curves["JaxMARL mappo_ff_hanabi"]) / sps["JaxMARL mappo_ff_hanabi"]
    out = [
        "| seconds | "
        + " | ".join(f"{name}: env steps, training score (median over {len(c)} seeds)" for name, c in curves.items())
        + " |",
        "|---|---|---|",
    ]
    for seconds in [s for s in (60, 120, 300, 600, 900) if s < end] + [int(end)]:  # within JaxMARL's curve
        cells = []
        for name, per_seed in curves.items():
            steps = sps[name] * seconds
            read = [next((score for step, score in reversed(curve) if step <= steps), np.nan) for curve in per_seed]
            cells.append(
                f"{steps / 1e6:.2f}M, {np.median(read):.2f}" if not np.isnan(read).any() else f"{steps / 1e6:.2f}M, -"
            )
        out.append(f"| {seconds} | {' | '.join(cells)} |")
    return "\n".join(out)


def jaxmarl_speed(baseline: str, runs: list) -> float:
    """A JaxMARL baseline's SPS here alone: from its speed run (`bash benchmark/hanabi_10m.sh speed`) where there is
    one, else the median over its 10M runs (which must then have run alone)"""
    if os.path.exists(os.path.join(RESULTS, f"hanabi_10m_jaxmarl/speed_{baseline}.json")):
        return jaxmarl_sps(load(f"hanabi_10m_jaxmarl/speed_{baseline}.json"))
    return float(np.median([jaxmarl_sps(run) for run in runs]))


def jaxmarl_sps(run: dict) -> float:
    """A JaxMARL baseline run's env steps per second in its median update (the first one compiles)"""
    return run["meta"]["steps_per_update"] / np.median(np.diff([row["wall_time"] for row in run["rows"]]))


def async_throughput() -> str:
    """mappo_async_seed.py's SPS beside mappo.py's (benchmark/measure/async_throughput.py)"""
    sys.path.insert(0, os.path.join(ROOT, "benchmark", "measure"))
    from async_throughput import table  # the measurement tool writes the table it measured

    return table(load("async_throughput.json"))


def acting_rows() -> str:
    """Hanabi with --acting-rows-only: the update's time (benchmark/measure/acting_rows.py) and the learning check
    (benchmark/hanabi_acting_rows.sh, read by benchmark/report/compare_histories.py)"""
    speed, check = load("acting_rows.json"), load("hanabi_acting_rows/compare.json")
    old, new = (speed["median"][side]["update_s"] for side in ("all rows", "acting rows only"))
    out = [
        f"Update: {new:.2f} s with acting rows only, {old:.2f} s with every row ({speed['update_ratio']:.2f}x; "
        "mappo.py's Hanabi preset, alternating runs on this 2-core CPU: benchmark/results/acting_rows.md).",
        "",
    ]
    out += ["| rows in the update | greedy eval, per seed (mean) | training episodes, per seed (mean) |", "|---|---|---|"]
    for label, scores in check["per_seed"].items():
        cells = [
            f"{', '.join(f'{v:.2f}' for v in scores[score].values())} ({check['mean'][label][score]:.2f})"
            for score in ("greedy evaluation", "training episodes")
        ]
        out.append(f"| {label} | {cells[0]} | {cells[1]} |")
    out.append("")
    out.append(f"Score at {check['until']:,} env steps, per seed the median of the last 10 evaluations (32 games each).")
    return "\n".join(out)


def vmas() -> str:
    """VMAS, ours beside BenchMARL run here (benchmark/report/vmas_compare.py: each seed's median over the last 10 % of
    the budget, then the mean over seeds), and the speed of each alone (benchmark/measure/vmas_speed.py)."""
    if not os.path.exists(os.path.join(RESULTS, "vmas_compare", "compare.json")):
        return "(not run yet: `bash benchmark/vmas.sh`, `bash benchmark/vmas.sh benchmarl`)"
    result = load("vmas_compare/compare.json")
    start, end = result["window"]
    out = [
        "| task | algorithm | implementation | seeds | evaluation return (deterministic actions), per seed | mean "
        "| training return, per seed | mean |",
        "|---|---|---|---|---|---|---|---|",
    ]
    largest = {}  # per task: 3 significant digits of its largest return set the decimals of all its numbers
    for r in result["rows"]:
        largest[r["task"]] = max([largest.get(r["task"], 0.0)] + [abs(x) for x in r["eval"] + r["train"]])
    places = {task: max(0, 2 - math.floor(math.log10(x))) if x > 0 else 2 for task, x in largest.items()}
    for r in sorted(result["rows"], key=lambda r: (r["task"], r["algorithm"] == "ippo", r["implementation"] != "ours")):
        name = {"ours": f"{r['algorithm']}.py", "BenchMARL": f"BenchMARL {r['algorithm'].upper()}"}[r["implementation"]]
        decimals = places[r["task"]]
        per_seed = {score: ", ".join(f"{x:.{decimals}f}" for x in r[score]) for score in ("eval", "train")}
        out.append(
            f"| vmas/{r['task']} | {r['algorithm'].upper()} | {name} | {len(r['seeds'])} | {per_seed['eval']} "
            f"| {r['eval_mean']:.{decimals}f} | {per_seed['train']} | {r['train_mean']:.{decimals}f} |"
        )
    text = "\n".join(out) + f"\n\nRead over env steps {start / 1e6:.2f}M to {end / 1e6:.2f}M."
    if os.path.exists(os.path.join(RESULTS, "vmas_speed.json")):
        # benchmark/measure/vmas_speed.py's timings: both sides at one shared setting (equal work), then each with its
        # own configuration (a comparison of configurations); per side the median of the alternated timings, the range
        speed = load("vmas_speed.json")

        def sps(x: float) -> str:  # 3 significant digits: 3,712.4 -> 3,710
            return f"{float(f'{x:.3g}'):,.0f}"

        def ratio(x: float) -> str:
            return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"

        def side(s: dict) -> str:
            return f"{sps(s['median'])} ({sps(s['range'][0])} to {sps(s['range'][1])})"

        pinned = f"pinned to one core (`{speed['pinning']}`)" if speed["pinning"] else "not pinned"
        speed_text = (
            f"Env steps trained per second on this machine ({speed['machine']}), one run at a time, {pinned} (the "
            "other core ran other work: the alternation puts it on both sides), "
            f"{speed['threads']} thread{'s' if speed['threads'] > 1 else ''} (OMP_NUM_THREADS), evaluation off, its first "
            f"batch and start-up left out; per side the median of {speed['repeats']} timings, alternated in one run, and "
            f"their range (`{speed['command']}`). At equal work, both sides at one shared setting "
            f"({speed['setting']['name']}) and {speed['frames']:,} env steps per run: "
        )
        speed_text += "; ".join(
            f"vmas/{r['task']} {r['algorithm'].upper()}: ours {side(r['ours'])}, BenchMARL {side(r['benchmarl'])}: "
            f"{ratio(r['ratio'])}"
            for r in speed["rows"]
        )
        speed_text += f". Not made equal (the implementations' own): {speed['setting']['unequal']}."
        if speed.get("own"):
            speed_text += (
                f" Each with its own configuration, a comparison of configurations, not an implementation speed (ours "
                f"{speed['own']['ours']}, the same timings; BenchMARL {speed['own']['benchmarl']}, {speed['own_frames']:,} "
                "env steps per run): "
            )
            speed_text += "; ".join(
                f"vmas/{r['task']} {r['algorithm'].upper()}: ours {sps(r['ours']['median'])}, BenchMARL "
                f"{side(r['benchmarl_own'])}: {ratio(r['own_ratio'])}"
                for r in speed["rows"]
            )
            speed_text += "."
        text += " " + speed_text
    png = "benchmark/results/vmas_compare/curves.png"
    text += f"\n\n![VMAS evaluation curves]({png})" if os.path.exists(os.path.join(ROOT, png)) else ""
    return text + "\n\n" + vmas_fine_tuned(result)


def vmas_fine_tuned(result: dict) -> str:
    """BenchMARL's VMAS-tuned config, run by run (vmas_compare.py's "fine_tuned"): each at its own budget, an
    unfinished one read over its last 3 evaluations and labelled so, with where it got"""
    intro = (
        "BenchMARL's VMAS-tuned config (its fine_tuned/vmas experiment values: FINE_TUNED_VMAS in "
        "benchmark/benchmarl/benchmarl_baseline.py), at its own budget, not this section's, and with its own evaluation "
        "(more episodes, deterministic actions), run here (`BENCHMARL_CONFIG=fine_tuned bash benchmark/vmas.sh benchmarl`)"
    )
    runs = result.get("fine_tuned", [])
    if not runs:
        return intro + ": no run yet."
    out = [
        intro + "; each run, a finished one read over the last 10 % of its budget, an unfinished one over its last 3 "
        "evaluations, so far:",
        "",
        "| task | algorithm | seed | frames | evaluation return (deterministic actions) | read over env steps |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs:
        got = (
            f"{r['budget'] / 1e6:g}M" if r["finished"] else f"{r['reached'] / 1e6:.2f}M of {r['budget'] / 1e6:g}M: unfinished"
        )
        span = f"{r['read_over'][0] / 1e6:.2f}M to {r['read_over'][1] / 1e6:.2f}M" if r["read_over"] else "-"
        score = "-" if r["score"] is None else f"{r['score']:.3g}"  # no evaluation yet
        out.append(f"| vmas/{r['task']} | {r['algorithm'].upper()} | {r['seed']} | {got} | {score} | {span} |")
    png = "benchmark/results/vmas_compare/curves_fine_tuned.png"
    figure = f"\n\n![BenchMARL's VMAS-tuned runs]({png})" if os.path.exists(os.path.join(ROOT, png)) else ""
    return "\n".join(out) + figure


def allocator() -> str:
    """mappo_rnn.py's update with glibc's default malloc and with benchmark/mappo.sh's MALLOC_TOP_PAD_
    (benchmark/measure/allocator.py)"""
    speed = load("allocator.json")
    padded = [side for side in speed["maps"][0]["median"] if side != "glibc default"][0]
    maps = "; ".join(
        f"{m['env_id']} {m['median'][padded]['update_s']:.2f} s with it, {m['median']['glibc default']['update_s']:.2f} s "
        f"without ({m['update_ratio']:.2f}x)"
        for m in speed["maps"]
    )
    return (
        f"mappo_rnn.py's update, paper settings: {maps} (alternating runs on this 2-core CPU: benchmark/results/allocator.md)."
    )


GENERATORS = dict(lines=lines, diff=diff, results=results, throughput=throughput, jaxmarl=jaxmarl, install=install)
GENERATORS.update(async_learning=async_learning, async_throughput=async_throughput, hanabi=hanabi, smax_10m=smax_10m)
GENERATORS.update(sc2_reference=sc2_reference, hanabi_wall=hanabi_wall, acting_rows=acting_rows, vmas=vmas)
GENERATORS.update(allocator=allocator, smax_falls=smax_falls, figures=figures, default_budget=default_budget)
GENERATORS.update(compile_speed=compile_speed, setting_cost=setting_cost, lbf_rware=lbf_rware.table)
GENERATORS.update(gpu_table=gpu_suite_table.gpu_table, async_scaling_table=gpu_suite_table.async_scaling_table)
BLOCK = re.compile(r"<!-- gen (\w+)((?: [\w./+-]+)*) -->(.*?)<!-- /gen -->", re.S)
LINK = re.compile(r"\]\(((?:\w+)\.py)#L(\d+) \"([^\"]+)\"\)")
IMAGE = re.compile(r"\]\((benchmark/results/[^)\s]+\.png)\)")


def render(readme: str, doc: str = "README.md") -> str:
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

    def image(m: re.Match) -> str:  # from the repo's root to the doc's folder
        return f"]({os.path.relpath(m.group(1), os.path.dirname(doc) or '.')})"

    unread = readme.count("<!-- gen ") - len(BLOCK.findall(readme))
    if unread:  # a marker the pattern does not take (a bad character, no end): its stale text would stay unseen
        sys.exit(f"{doc}: {unread} '<!-- gen' marker(s) that {BLOCK.pattern} does not match")
    return IMAGE.sub(image, LINK.sub(link, BLOCK.sub(block, readme)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a doc differs from what would be written")
    opts = parser.parse_args()
    for doc in DOCS:
        path = os.path.join(ROOT, doc)
        with open(path) as f:
            text = f.read()
        new = render(text, doc)
        if opts.check and new != text:
            sys.exit(f"{doc} is not what benchmark/report/update_readme.py writes: run it and commit the result")
        if not opts.check:
            with open(path, "w") as f:
                f.write(new)


if __name__ == "__main__":
    main()
