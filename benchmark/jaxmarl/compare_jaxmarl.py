"""Wall-clock time to a train win rate of 0.8 on SMAX 3m: JaxMARL's own recurrent MAPPO (its defaults, through
benchmark/jaxmarl/jaxmarl_baseline.py) against `mappo_rnn.py --env-id 3m` (our defaults), one after the other on the same
machine, each alone. Writes summary.md, summary.json and curves_walltime.png into --out.

    python benchmark/jaxmarl/compare_jaxmarl.py --jaxmarl-dir /work/jaxmarl-src --jaxmarl-python /work/jaxmarl-venv/bin/python

(see benchmark/jaxmarl/jaxmarl_baseline.py for the JaxMARL checkout and its venv). Both metrics are *training* win rates of
the stochastic policy: JaxMARL's `win_rate` (won episodes over the episodes that ended in one update's rollout, 128
envs x 128 steps) and our `charts/win_rate` (the same over one 8 x 400 rollout). One of our rollouts ends about 100
episodes, one of JaxMARL's about 500, so ours is noisier: the table also gives our first time at which the episodes
of the last 5 rollouts together (about 500) reach the threshold, and our first greedy evaluation (32 episodes) that
does. For greedy play on both sides, JaxMARL's run saves its actor after every update and
benchmark/jaxmarl/jaxmarl_greedy_eval.py evaluates each snapshot by our protocol once the run is over. Wall time counts from
the launch of each process (imports and JIT compilation included).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_events(run_dir: str, tag: str) -> list[tuple[int, float, float]]:
    """(step, wall time (unix), value) of one TensorBoard scalar"""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    if tag not in acc.Tags()["scalars"]:
        return []
    return [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]


def shown(cmd: list[str]) -> str:
    """A command as the README shows it: `python`, paths relative to the repository"""
    return " ".join(["python"] + [os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd[1:]])


def first_reaching(rows, threshold):
    """rows: (step, seconds, value) -> the first row with value >= threshold, or None"""
    return next((r for r in rows if r[2] >= threshold), None)


def first_window_mean(rows, threshold, window_s: float):
    """rows: (step, seconds, value) -> the first row at which the mean value of the rows of the last window_s seconds
    (this one included) reaches threshold, or None. A side that evaluates more often gets more chances to cross a
    threshold on a lucky single evaluation; a mean over equal wall time evens that out."""
    for i, row in enumerate(rows):
        window = [r[2] for r in rows[: i + 1] if r[1] > row[1] - window_s]
        if sum(window) / len(window) >= threshold:
            return row
    return None


def run_ours(args, out_dir: str) -> dict:
    """mappo_rnn.py with its defaults; stopped with Ctrl-C (SIGINT) --extra-updates updates after the train win rate
    first reaches the threshold, or at --ours-timesteps."""
    cmd = [sys.executable, os.path.join(ROOT, "mappo_rnn.py"), "--env-id", args.map, "--seed", str(args.ours_seed)]
    cmd += ["--total-timesteps", str(args.ours_timesteps), "--exp-name", "mappo_rnn_vs_jaxmarl"]
    launch = time.time()
    with open(os.path.join(out_dir, f"ours_{args.map}_seed{args.ours_seed}.log"), "w") as log:
        proc = subprocess.Popen(cmd, cwd=out_dir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        run_dir = None
        while proc.poll() is None:
            time.sleep(5)
            runs = sorted(d for d in os.listdir(os.path.join(out_dir, "runs")) if "mappo_rnn_vs_jaxmarl" in d)
            run_dir = os.path.join(out_dir, "runs", runs[-1]) if runs else None
            train = read_events(run_dir, "charts/win_rate") if run_dir else []
            hit = first_reaching(train, args.threshold)
            if hit and sum(s > hit[0] for s, _, _ in train) >= args.extra_updates:
                proc.send_signal(signal.SIGINT)  # writes a checkpoint and the eval summary, then exits 130
                proc.wait(timeout=120)
    to_rows = lambda events: [(s, w - launch, v) for s, w, v in events]  # noqa: E731
    train, evals = to_rows(read_events(run_dir, "charts/win_rate")), to_rows(read_events(run_dir, "eval/win_rate"))
    # the pooled train win rate of the last 5 rollouts (episode-weighted by the episodes each rollout ended)
    lengths = [v for _, _, v in read_events(run_dir, "charts/episodic_length")]
    rollout_steps = train[0][0]  # the first point is logged after one rollout
    episodes = [rollout_steps / max(length, 1.0) for length in lengths]  # episodes ended per rollout, about
    pooled = []
    for i in range(4, len(train)):
        w = np.array(episodes[i - 4 : i + 1])
        pooled.append((train[i][0], train[i][1], float(np.dot(w, [v for _, _, v in train[i - 4 : i + 1]]) / w.sum())))
    return dict(cmd=shown(cmd), run_dir=os.path.relpath(run_dir, ROOT), train=train, eval=evals, pooled5=pooled)


def jaxmarl_paths(args, out_dir: str) -> tuple[str, str, str]:
    """the JaxMARL run's JSON, its greedy evaluations' JSON and its actor snapshots' folder in out_dir"""
    name = f"jaxmarl_{args.map}_seed{args.jaxmarl_seed}"
    snapshots = os.path.join(out_dir, "runs", f"{name}_actor")  # about 0.5 MB per update, git-ignored
    return os.path.join(out_dir, f"{name}.json"), os.path.join(out_dir, f"{name}_greedy.json"), snapshots


def run_jaxmarl(args, out_dir: str) -> dict:
    """JaxMARL's baseline with its actor saved after every update, then those snapshots evaluated greedily by
    benchmark/jaxmarl/jaxmarl_greedy_eval.py (after the run, so the run is timed alone)."""
    out, evals_out, snapshots = jaxmarl_paths(args, out_dir)
    cmd = [
        args.jaxmarl_python,
        os.path.join(ROOT, "benchmark", "jaxmarl", "jaxmarl_baseline.py"),
        "--jaxmarl-dir",
        args.jaxmarl_dir,
    ]
    cmd += ["--map", args.map, "--seed", str(args.jaxmarl_seed), "--out", out, "--snapshot-dir", snapshots]
    cmd += ["--stop-at-win-rate", str(args.threshold), "--extra-updates", str(args.extra_updates)]
    eval_cmd = [args.jaxmarl_python, os.path.join(ROOT, "benchmark", "jaxmarl", "jaxmarl_greedy_eval.py"), "--jaxmarl-dir"]
    eval_cmd += [args.jaxmarl_dir, "--snapshot-dir", snapshots, "--run-json", out, "--out", evals_out]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    if not (args.reuse_jaxmarl and os.path.exists(out)):
        with open(out.replace(".json", ".log"), "w") as log:
            subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True, env=env)
    if not (args.reuse_jaxmarl and os.path.exists(evals_out)):
        with open(evals_out.replace(".json", ".log"), "w") as log:
            subprocess.run(eval_cmd, stdout=log, stderr=subprocess.STDOUT, check=True, env=env)
    with open(out) as f:
        data = json.load(f)
    with open(evals_out) as f:
        evals = [(r["step"], r["wall_time"], r["win_rate"]) for r in json.load(f)["rows"]]
    rows = [(r["step"], r["wall_time"], r["win_rate"]) for r in data["rows"] if r["win_rate"] == r["win_rate"]]
    return dict(cmd=shown(cmd), eval_cmd=shown(eval_cmd), train=rows, eval=evals, config=data["config"])


def summarize(args, ours: dict, theirs: dict, out_dir: str):
    thr = args.threshold
    j, o = first_reaching(theirs["train"], thr), first_reaching(ours["train"], thr)
    o5, oe = first_reaching(ours["pooled5"], thr), first_reaching(ours["eval"], thr)
    je = first_reaching(theirs.get("eval", []), thr)
    win = args.eval_window
    oew, jew = first_window_mean(ours["eval"], thr, win), first_window_mean(theirs.get("eval", []), thr, win)
    fmt = lambda r: "not reached" if r is None else f"{r[1]:.0f} s, {r[0]:,} env steps"  # noqa: E731
    lines = [
        f"SMAX {args.map}, wall-clock time to win rate >= {thr} from process launch, run one after the other on this machine",
        f"({os.cpu_count()} CPU cores, no GPU).",
        "",
        "| run | metric | first reached at |",
        "|---|---|---|",
        f"| JaxMARL mappo_rnn_smax.py, its defaults, seed {args.jaxmarl_seed} | train win rate, one update (~500 episodes) | {fmt(j)} |",
        f"| mappo_rnn.py, our defaults, seed {args.ours_seed} | train win rate, one rollout (~100 episodes) | {fmt(o)} |",
        f"| mappo_rnn.py | train win rate, last 5 rollouts pooled (~500 episodes) | {fmt(o5)} |",
        f"| JaxMARL, the actor after each update | greedy eval win rate (32 episodes, evaluated afterwards) | {fmt(je)} |",
        f"| mappo_rnn.py | greedy eval win rate (32 episodes) | {fmt(oe)} |",
        f"| JaxMARL | greedy eval win rate, mean of the evaluations of the last {win:.0f} s | {fmt(jew)} |",
        f"| mappo_rnn.py | greedy eval win rate, mean of the evaluations of the last {win:.0f} s | {fmt(oew)} |",
        "",
    ]
    if j and o5:
        lines.append(f"Ours / JaxMARL wall time, train win rates (ours pooled): {o5[1] / j[1]:.2f} (goal: <= 0.5).")
    if je and oe:
        lines.append(f"Ours / JaxMARL wall time, greedy eval win rates: {oe[1] / je[1]:.2f} (goal: <= 0.5).")
    if jew and oew:
        lines.append(f"Ours / JaxMARL wall time, greedy eval win rates over {win:.0f} s: {oew[1] / jew[1]:.2f}.")
    stopped = "stopped with SIGINT after the threshold" if o else "the threshold not reached: ran its --total-timesteps"
    lines += ["", f"Commands: `{theirs['cmd']}`; `{ours['cmd']}` ({stopped})."]
    if "eval_cmd" in theirs:
        lines += ["", f"JaxMARL's greedy evaluation: `{theirs['eval_cmd']}`. A snapshot's wall time is when the run had"]
        lines += ["it; the evaluation ran after the run and is not charged to it (ours evaluates inside its run)."]
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    summary = dict(
        threshold=thr,
        eval_window_s=win,
        jaxmarl=dict(theirs, first=j, first_eval=je, first_eval_window=jew),
        ours=dict(ours, first=o, first_pooled5=o5, first_eval=oe, first_eval_window=oew),
    )
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for rows, label in (
        (theirs["train"], "JaxMARL MAPPO (RNN), train"),
        (ours["pooled5"], "mappo_rnn.py, train (5 rollouts)"),
    ):
        ax.plot([r[1] for r in rows], [r[2] for r in rows], label=label)
    ax.plot([r[1] for r in ours["eval"]], [r[2] for r in ours["eval"]], label="mappo_rnn.py, greedy eval", alpha=0.6)
    if theirs.get("eval"):
        ax.plot([r[1] for r in theirs["eval"]], [r[2] for r in theirs["eval"]], label="JaxMARL, greedy eval", alpha=0.6)
    ax.axhline(thr, color="grey", ls=":")
    ax.set(xlabel="wall time since launch (s)", ylabel="win rate", title=f"SMAX {args.map}, same machine, one at a time")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "curves_walltime.png"), dpi=100)
    print("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jaxmarl-dir", default=os.environ.get("JAXMARL_DIR"))
    p.add_argument("--jaxmarl-python", help="the python of the venv set up for JaxMARL")
    p.add_argument("--map", default="3m")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--extra-updates", type=int, default=5, help="updates each run goes on after the threshold")
    p.add_argument("--jaxmarl-seed", type=int, default=0, help="JaxMARL's default SEED")
    p.add_argument("--ours-seed", type=int, default=1, help="mappo_rnn.py's default --seed")
    p.add_argument("--ours-timesteps", type=int, default=2_000_000, help="our budget if the threshold is never reached")
    p.add_argument("--eval-window", type=float, default=30.0, help="seconds of evaluations averaged in one table row")
    p.add_argument("--reuse-jaxmarl", action="store_true", help="keep an earlier JaxMARL result in --out, run ours only")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "walltime_3m_seed1"))
    p.add_argument("--summary-only", action="store_true", help="run nothing: write summary and plot from summary.json")
    args = p.parse_args()
    if args.summary_only:  # the measured rows as they are; commands stored with absolute paths are shown relative
        with open(os.path.join(args.out, "summary.json")) as f:
            saved = json.load(f)
        theirs, ours = saved["jaxmarl"], saved["ours"]
        for run in (theirs, ours):
            for key in ("cmd", "eval_cmd"):
                if key in run:
                    words = run[key].split()
                    run[key] = run[key] if words[0] == "python" else shown(["python", *words])
        summarize(args, ours, theirs, args.out)
        return
    if not (args.jaxmarl_dir and args.jaxmarl_python):
        p.error("--jaxmarl-dir (or JAXMARL_DIR) and --jaxmarl-python are required")
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    out, _, snapshots = jaxmarl_paths(args, args.out)
    snapshot_index = os.path.join(snapshots, "index.json")
    if args.reuse_jaxmarl and os.path.exists(out) and not os.path.exists(snapshot_index):
        p.error(f"--reuse-jaxmarl: the JaxMARL run in --out has no actor snapshots ({snapshot_index}); run it again")
    theirs = run_jaxmarl(args, args.out)
    ours = run_ours(args, args.out)
    summarize(args, ours, theirs, args.out)


if __name__ == "__main__":
    main()
