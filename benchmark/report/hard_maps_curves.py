"""The hard SMAX maps (issue 50), every implementation on one figure: per map, the greedy evaluation, the sampled
evaluation and the training episodes' win rate against env steps, for each setting of ours (the folders of
benchmark/smax_hard_10m.sh: the mean over seeds of each seed's curve, smoothed over 10 evaluations) and JaxMARL's
mappo_rnn_smax run by us, with its own config and with Mava's SMAX values (its logged training win rate, smoothed over
10 updates, and our evaluations of its actor every 10th update and at each of the last 10; the mean over seeds), and
Mava's own rec_mappo run by us (its evaluations, every 10th update; the mean over seeds). Ours are solid lines,
JaxMARL's dashed, Mava's dash-dot; each map's legend stands beside its row. A run of ours that goes on in sittings
(27m_vs_30m) is drawn dotted, one line per seed, from the checkpoint its folder's kept/ holds; a JaxMARL run that
does, from what its folder's kept/ holds (its rows and our evaluations of its actors so far).

    python benchmark/report/hard_maps_curves.py   # -> benchmark/results/smax_hard_10m_compare/curves.png

Reads what the README's hard-map table reads, and those checkpoints; a folder or map with no run is left out.
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
from summarize import BAND, checkpoint_history, load, plot_mean  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")
OURS = {
    "smax_hard_10m_paper": "paper",
    "smax_hard_10m_table2": "Table 2",
    "smax_hard_10m_ent0": "ent0 ablation",
    "smax_hard_10m_clip005": "clip 0.05 ablation",
    "smax_hard_10m_epochs5": "5-epoch ablation",
    "smax_hard_10m_jaxcfg": "JaxMARL-values ablation",
    "smax_hard_10m_mavacfg": "Mava-values ablation",
    "smax_hard_10m_tuned": "tuned setting",
    "smax_hard_10m_mavalike": "Mava-like ablation",
    "smax_hard_10m_mavalikecl": "Mava-like ablation, critic on all observations",
}
JAXMARL_FOLDERS = {  # JaxMARL's runs: its own config, and Mava's SMAX values on it (JAXMARL_VALUES=mava)
    "smax_hard_10m_jaxmarl": "JaxMARL mappo_rnn_smax",
    "smax_hard_10m_mava_jaxmarl": "JaxMARL mappo_rnn_smax, Mava's values",
    "smax_hard_10m_smax002_jaxmarl": "JaxMARL mappo_rnn_smax, jaxmarl 0.0.2's SMAX",
    "smax_hard_10m_mava_smax002_jaxmarl": "JaxMARL mappo_rnn_smax, Mava's values, jaxmarl 0.0.2's SMAX",
}
MAVA_FOLDERS = {  # Mava's own recurrent MAPPO (benchmark/mava/): its sweep config, and a named change to it
    "smax_hard_10m_mava_rec_mappo": "Mava rec_mappo",
    "smax_hard_10m_mava_noagentid_rec_mappo": "Mava rec_mappo, no agent ids",
}
SCORES = {"greedy eval": "win_rate", "sampled eval": "sampled_win_rate", "training episodes": "train_win_rate"}


def smooth(y: np.ndarray, window: int = 10) -> np.ndarray:
    """The running mean over the last `window` points (fewer at the start)"""
    c = np.cumsum(np.insert(np.asarray(y, float), 0, 0.0))
    n = np.minimum(np.arange(1, len(y) + 1), window)
    return (c[1:] - c[np.arange(1, len(y) + 1) - n]) / n


def our_label(setting: str) -> str:
    """A setting of ours as the figure names it; a run not finished adds ", seed N, not finished: ..." to it"""
    return f"mappo_rnn.py, {setting}"


def ours(results: str) -> dict:
    """label -> map -> score -> [(steps, win rates)] per seed"""
    out = {}
    for folder, setting in OURS.items():
        if not os.path.isdir(os.path.join(results, folder)):
            continue
        for (_, env_id), summaries in load([os.path.join(results, folder)]).items():
            for s in summaries:
                for score, key in SCORES.items():
                    points = [(e["step"], e[key]) for e in s["evals"] if key in e]
                    if points:
                        x, y = np.array(points).T
                        out.setdefault(our_label(setting), {}).setdefault(env_id, {}).setdefault(score, []).append(
                            (x, smooth(y))
                        )
    return out


def ours_unfinished(results: str) -> dict:
    """Our runs that go on in sittings (27m_vs_30m), from the checkpoints committed in each settings folder's kept/:
    label (setting, seed and how far it is) -> map -> score -> [(steps, win rates)], one run per label"""
    out = {}
    for folder, setting in OURS.items():
        for path in sorted(glob.glob(os.path.join(results, folder, "kept", "*.pt"))):
            head, evals = checkpoint_history(path)  # (evaluations, 7)
            if head["global_step"] >= head["budget"]:  # finished: ours() has its summary
                continue
            label = f"{our_label(setting)}, seed {head['seed']}, not finished: {head['global_step'] / 1e6:.1f}M"
            for score, column in {"greedy eval": 1, "sampled eval": 5, "training episodes": 4}.items():
                x, y = evals[~np.isnan(evals[:, column])][:, [0, column]].T  # NaN: not logged (no --eval-sampled)
                if len(x):
                    out.setdefault(label, {}).setdefault(head["env_id"], {})[score] = [(x, smooth(y))]
    return out


def jaxmarl(results: str) -> dict:
    """The same for JaxMARL's runs (benchmark/smax_hard_10m.sh jaxmarl, or benchmark/jaxmarl/device_runs.sh)"""
    sides = {label: jaxmarl_folder(os.path.join(results, folder)) for folder, label in JAXMARL_FOLDERS.items()}
    return {label: side for label, side in sides.items() if side}


def jaxmarl_folder(folder: str) -> dict:
    """One folder of JaxMARL's runs: map -> score -> one (steps, win rates) curve per seed"""
    out = {}
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    for name in names:
        match = re.fullmatch(r"mappo_rnn_smax_(.+)_seed\d+\.json\.gz", name)
        if match is None:
            continue
        with gzip.open(os.path.join(folder, name), "rt") as f:
            curves = jaxmarl_curves(json.load(f)["rows"], os.path.join(folder, name.removesuffix(".json.gz")))
        for score, curve in (curves or {}).items():  # None: still being evaluated
            out.setdefault(match.group(1), {}).setdefault(score, []).append(curve)
    return out


def jaxmarl_curves(rows: list, prefix: str):
    """One run of JaxMARL's: its logged rows and our evaluations of its actors (PREFIX_greedy.json, PREFIX_sampled.json)
    -> score -> (steps, win rates); None while either evaluation is missing"""
    evaluated = [f"{prefix}_{mode}.json" for mode in ("greedy", "sampled")]
    if not all(map(os.path.exists, evaluated)):
        return None
    rows = [r for r in rows if r["win_rate"] == r["win_rate"]]  # NaN: no episode ended
    curves = {"training episodes": (np.array([r["step"] for r in rows]), smooth([r["win_rate"] for r in rows]))}
    for score, path in zip(("greedy eval", "sampled eval"), evaluated):
        with open(path) as f:
            evals = json.load(f)["rows"]
        curves[score] = (np.array([e["step"] for e in evals]), np.array([e["win_rate"] for e in evals]))
    return curves


def jaxmarl_unfinished(results: str) -> dict:
    """JaxMARL's runs that go on in sittings (27m_vs_30m; smax_hard_10m.sh jaxmarl-keep: in kept/, its rows so far
    and our evaluations of its actors so far): label (side, seed and how far it is) -> map -> score -> [curve]"""
    out = {}
    for folder, side in JAXMARL_FOLDERS.items():
        for path in sorted(glob.glob(os.path.join(results, folder, "kept", "mappo_rnn_smax_*_seed*.json"))):
            match = re.fullmatch(r"mappo_rnn_smax_(.+)_seed(\d+)\.json", os.path.basename(path))
            if match is None:  # an evaluation (_greedy, _sampled)
                continue
            with open(path) as f:
                rows = json.load(f)["rows"]
            curves = jaxmarl_curves(rows, path.removesuffix(".json"))
            if curves and rows:
                label = f"{side}, seed {match.group(2)}, not finished: {rows[-1]['step'] / 1e6:.1f}M"
                out[label] = {match.group(1): {score: [curve] for score, curve in curves.items()}}
    return out


def mava(results: str) -> dict:
    """Mava's own runs (benchmark/smax_hard_10m.sh mava, MAVA_ABLATION): label -> map -> score -> its evaluations, one
    curve per seed, in the score of their kind (sampled, unless its config evaluates greedily)"""
    sides = {}
    for folder, label in MAVA_FOLDERS.items():
        folder, out = os.path.join(results, folder), {}
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.startswith("rec_mappo_") and name.endswith(".json.gz"):
                with gzip.open(os.path.join(folder, name), "rt") as f:
                    run = json.load(f)
                score = "greedy eval" if run["meta"]["evaluation_greedy"] else "sampled eval"
                curve = (np.array([r["step"] for r in run["rows"]]), np.array([r["win_rate"] for r in run["rows"]]))
                out.setdefault(run["meta"]["map"], {}).setdefault(score, []).append(curve)
                sides[f"{label}, {run['meta']['smax']}"] = out
    return sides


# each implementation's line style; a run not finished (its own line, the seed in its label) dotted
STYLES = {"ours": "-", "ours, not finished": ":", "JaxMARL": "--", "JaxMARL, not finished": ":", "Mava": "-."}
PALETTE = [f"C{i}" for i in range(10)] + ["black", "goldenrod", "navy", "maroon", "teal", "slateblue"]
PALETTE += ["olive", "darkorange", "crimson", "darkgreen"]


def unfinished_labels(groups: dict) -> list:
    """The labels of the runs not finished (one line each, the seed in the label), of every implementation"""
    return [label for impl, sides in groups.items() if impl.endswith("not finished") for label in sides]


def line_styles(groups: dict) -> dict:
    """implementation -> {label: side} -> label -> (colour, line style). Each side has a colour of its own, the same
    on every row: the order of OURS, JAXMARL_FOLDERS and MAVA_FOLDERS, then any other label (while there are no more
    sides than PALETTE's 20 colours). A run not finished takes its side's colour, dotted"""
    setting = {label: label.rsplit(", seed ", 1)[0] for label in unfinished_labels(groups)}  # its side's label
    catalog = [our_label(name) for name in OURS.values()] + [*JAXMARL_FOLDERS.values(), *MAVA_FOLDERS.values()]
    labels = [label for sides in groups.values() for label in sides if label not in setting] + list(setting.values())
    order = list(dict.fromkeys(catalog + labels))
    colour = {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(order)}
    return {label: (colour[setting.get(label, label)], STYLES[impl]) for impl, sides in groups.items() for label in sides}


def plot(groups: dict, path: str):
    """groups: implementation (a key of STYLES) -> label -> map -> score -> curves. A row per map, a panel per score,
    and the row's legend beside it, off the curves"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sides = {label: side for impl_sides in groups.values() for label, side in impl_sides.items()}
    styles = line_styles(groups)
    unfinished = set(unfinished_labels(groups))
    maps = sorted({m for side in sides.values() for m in side})
    fig, axes = plt.subplots(len(maps), len(SCORES), figsize=(4.2 * len(SCORES), 3.2 * len(maps)), squeeze=False)
    for row, env_id in zip(axes, maps):
        for ax, score in zip(row, SCORES):
            for label, side in sides.items():
                curves = [(x, y) for x, y in side.get(env_id, {}).get(score, []) if len(x)]  # a run that logged none
                if not curves:
                    continue
                colour, style = styles[label]
                one_run = label in unfinished  # its label names the seed
                seeds = "" if one_run else f" ({len(curves)} seed{'s' * (len(curves) > 1)})"
                plot_mean(ax, curves, colour, label + seeds, style, alpha=0.15)
            ax.set_title(f"{env_id}: {score}", fontsize=9)
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("env steps")
        labelled = {}  # label -> line, over the row's panels (the sampled one alone has Mava's)
        for ax in row:
            for line, label in zip(*ax.get_legend_handles_labels()):
                labelled.setdefault(label, line)
        row[-1].legend(labelled.values(), labelled, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    smoothed = "ours, and JaxMARL's training episodes: running mean over 10 points; the rest as evaluated"
    smoothed += "; dotted: a run not finished" if unfinished else ""
    fig.suptitle(f"win rate, mean over seeds; {smoothed}; {BAND}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")  # the canvas grows to hold the legends beside the rows
    plt.close(fig)  # callers (the tests, update scripts) draw many figures in one process


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=RESULTS)
    opts = parser.parse_args(argv)
    groups = {"ours": ours(opts.results), "ours, not finished": ours_unfinished(opts.results)}
    groups.update({"JaxMARL": jaxmarl(opts.results), "JaxMARL, not finished": jaxmarl_unfinished(opts.results)})
    groups["Mava"] = mava(opts.results)
    if not any(groups.values()):
        sys.exit("error: no hard-map run: bash benchmark/smax_hard_10m.sh")
    out = os.path.join(opts.results, "smax_hard_10m_compare")
    os.makedirs(out, exist_ok=True)
    plot(groups, os.path.join(out, "curves.png"))
    print(f"wrote {os.path.join(out, 'curves.png')}")


if __name__ == "__main__":
    main()
