"""Run EPyMARL (uoe-agents/epymarl, src/main.py) unchanged on one Gymnasium task, LBF or RWARE, with its own MAPPO
config, and record its evaluation curve: the anchor of benchmark/lbf_rware.sh's runs (issue 119), whose published
tables (Papoudakis et al. 2021) cannot be read here.

What runs: `EPYMARL_PYTHON EPYMARL_DIR/src/main.py --config=mappo --env-config=gymma with env_args.key=KEY
env_args.time_limit=T seed=SEED t_max=N use_cuda=False save_model=True save_model_interval=500000
local_results_path=RUN/results [checkpoint_path=...] [--set ...]`: EPyMARL's mappo.yaml as it is (10 parallel envs,
GRU actor and centralised critic, 128 wide, lr 3e-4, entropy 0.001, 5-step returns, 4 epochs, clip 0.2,
standardised rewards; at its commit below), gymma.yaml's evaluation (100 episodes every 50,000 env steps; MAPPO's
action selector, soft_policies, samples in evaluations too, whatever test_greedy says) and the time limit the paper
used (LBF 50 steps, RWARE 500). Its env step counter
t_env counts steps over all parallel envs, as the paper's budgets do.

A run goes on over several sittings: EPyMARL saves its networks and optimisers every 500,000 env steps under
RUN/results/models, and a runner started again with the same RUN passes the newest as checkpoint_path, from which
EPyMARL goes on at that step. EPyMARL saves neither its target critic (rebuilt from the critic) nor its reward
standardisation statistics (restarted), so a resumed run is not the run it would have been uncut. Each sitting's
sacred log (EPYMARL_DIR/results/sacred/mappo/KEY/<id>/info.json) is copied to RUN/sittings/; --out merges them: every
evaluation in env-step order, a later sitting's from its start on.

Install (a venv of its own, outside the repo; EPyMARL imports SMAClite whatever the env, so SMAClite and what it
loads come too):

    git clone https://github.com/uoe-agents/epymarl /work/epymarl-src && git -C /work/epymarl-src checkout cbc38c0
    python3.11 -m venv /work/epymarl-venv
    /work/epymarl-venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
    /work/epymarl-venv/bin/pip install sacred==0.8.7 pyyaml==6.0.2 numpy==2.2.6 gymnasium==1.1.1 lbforaging==2.0.0 \\
        rware==2.0.0 setuptools==79.0.1 scikit-learn==1.6.1 Rtree==1.0.0
    sudo apt-get install libspatialindex-dev
    /work/epymarl-venv/bin/pip install --no-deps git+https://github.com/uoe-agents/smaclite.git

Run (one seed):

    /work/epymarl-venv/bin/python benchmark/epymarl/epymarl_baseline.py --epymarl-dir /work/epymarl-src \\
        --key lbforaging:Foraging-8x8-2p-2f-coop-v3 --time-limit 50 --t-max 20050000 --seed 1 \\
        --run-dir /tmp/epymarl_lbf_s1 --out mappo_Foraging-8x8-2p-2f-coop-v3_seed1.json

--out: {"config": EPyMARL's composed config (the last sitting's), "meta", "rows"}; one row per evaluation: step
(t_env), test_return_mean, test_return_std, and the training episodes' return_mean logged nearest before it. meta:
the EPyMARL commit (and its tracked files that differ from it), the versions, whether evaluations were greedy, each
sitting's start step, end step and wall time, and whether the run reached t_max.
"""

import argparse
import glob
import json
import os
import runpy
import sys
import time

# benchmark/provenance.py, loaded by its path: benchmark/ on sys.path would shadow packages by its folders' names
provenance = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "provenance.py"))
provenance = provenance["provenance"]
run_child = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "child.py"))
run_child = run_child["run_child"]

T0 = time.time()
SAVE_INTERVAL = 500_000  # env steps between EPyMARL's checkpoints: at most this much is redone after a stop


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epymarl-dir", default=os.environ.get("EPYMARL_DIR"), help="EPyMARL checkout ($EPYMARL_DIR)")
    p.add_argument("--key", required=True, help="env_args.key: a Gymnasium id, e.g. rware:rware-tiny-4ag-v2")
    p.add_argument("--time-limit", type=int, required=True, help="env_args.time_limit (LBF 50, RWARE 500)")
    p.add_argument("--t-max", type=int, required=True, help="env steps, over all parallel envs")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--config", default="mappo", help="EPyMARL's algorithm config (src/config/algs/NAME.yaml)")
    p.add_argument("--run-dir", required=True, help="its checkpoints and sittings: the same folder goes on")
    p.add_argument("--out", required=True, help="JSON: config, meta and one row per evaluation")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other sacred override")
    args = p.parse_args(argv)
    if not args.epymarl_dir or not os.path.isfile(os.path.join(args.epymarl_dir, "src", "main.py")):
        p.error(f"--epymarl-dir {args.epymarl_dir}: no src/main.py there (or set $EPYMARL_DIR)")
    return args


def newest_checkpoint(run_dir: str):
    """(the models/<token> folder, its largest saved step) of this run, or (None, 0)"""
    models = os.path.join(run_dir, "results", "models")
    found = [
        (int(step), os.path.join(models, token))
        for token in (os.listdir(models) if os.path.isdir(models) else [])
        for step in os.listdir(os.path.join(models, token))
        if step.isdigit() and os.path.exists(os.path.join(models, token, step, "agent_opt.th"))
    ]
    return (max(found)[1], max(found)[0]) if found else (None, 0)


def sacred_runs(epymarl: str, key: str) -> set[str]:
    """EPyMARL's sacred run folders of this env key, every algorithm's: results/sacred/<the algorithm config's name>/
    <key>/<run id> (sacred numbers its runs; its _sources folder, copies of the code, sits beside them)"""
    found = glob.glob(os.path.join(glob.escape(epymarl), "results", "sacred", "*", glob.escape(key), "*"))
    return {path for path in found if os.path.basename(path).isdigit()}


def is_own(sacred_run: str, results: str) -> bool:
    """A sacred run of this run (its config's local_results_path), not one of a runner beside it: seeds of one task
    run at once (lbf_rware.sh's WORKERS) log into the same folder"""
    config = os.path.join(sacred_run, "config.json")
    if not os.path.exists(config):
        return False
    with open(config) as f:
        return json.load(f).get("local_results_path") == results


def values(entries: list) -> list[float]:
    """sacred's info.json lists: numbers, or jsonpickled numpy scalars {"py/object": ..., "value": x}"""
    return [float(e["value"] if isinstance(e, dict) else e) for e in entries]


def merge(sittings: list[dict]) -> list[dict]:
    """Evaluation rows of every sitting in env-step order; a later sitting's rows replace an earlier one's from the
    later one's first evaluation on (it went on from a checkpoint at or before it)"""
    rows = []
    for info in sittings:
        steps = info.get("test_return_mean_T", [])
        if not steps:
            continue
        rows = [r for r in rows if r["step"] < steps[0]]
        train_steps, train_returns = info.get("return_mean_T", []), values(info.get("return_mean", []))
        for step, mean, std in zip(steps, values(info["test_return_mean"]), values(info["test_return_std"])):
            before = [r for t, r in zip(train_steps, train_returns) if t <= step]
            rows.append(
                dict(step=step, test_return_mean=mean, test_return_std=std, return_mean=before[-1] if before else None)
            )
    return rows


def last_step(info: dict, default: int) -> int:
    """the last env step a sitting logged anything at"""
    return max([max(v) for k, v in info.items() if k.endswith("_T") and v] or [default])


def main(argv=None):
    args = parse_args(argv)
    epymarl = os.path.abspath(args.epymarl_dir)
    run_dir = os.path.abspath(args.run_dir)
    sittings_dir = os.path.join(run_dir, "sittings")
    os.makedirs(sittings_dir, exist_ok=True)
    results = os.path.join(run_dir, "results")  # EPyMARL's local_results_path: its checkpoints
    before = sacred_runs(epymarl, args.key)
    checkpoint, start_step = newest_checkpoint(run_dir)

    cmd = [sys.executable, os.path.join(epymarl, "src", "main.py"), f"--config={args.config}", "--env-config=gymma"]
    cmd += ["with", f"env_args.key={args.key}", f"env_args.time_limit={args.time_limit}", f"seed={args.seed}"]
    cmd += [f"t_max={args.t_max}", "use_cuda=False", "save_model=True", f"save_model_interval={SAVE_INTERVAL}"]
    cmd += [f"local_results_path={results}", *args.set]
    if checkpoint:
        cmd.append(f"checkpoint_path={checkpoint}")
    print(" ".join(cmd), f"(from step {start_step})" if checkpoint else "", flush=True)
    try:
        code = run_child(cmd, cwd=epymarl)  # stopped with this process (Ctrl-C, SIGTERM, SIGHUP)
    finally:
        # this sitting's sacred log, kept with the run whatever ended it
        new = [path for path in sacred_runs(epymarl, args.key) - before if is_own(path, results)]
        new.sort(key=lambda path: int(os.path.basename(path)))
        for sacred_run in new:
            info = os.path.join(sacred_run, "info.json")
            if os.path.exists(info):
                with open(info) as f:
                    logged = json.load(f)
                n = len(os.listdir(sittings_dir))
                with open(os.path.join(sittings_dir, f"{n:03d}.json"), "w") as f:
                    json.dump(dict(info=logged, start_step=start_step, wall_time=time.time() - T0), f)
    sittings = [json.load(open(os.path.join(sittings_dir, name))) for name in sorted(os.listdir(sittings_dir))]
    rows = merge([s["info"] for s in sittings])
    config_path = os.path.join(new[-1], "config.json") if new else None
    config = json.load(open(config_path)) if config_path and os.path.exists(config_path) else {}
    origin = provenance(epymarl, ("torch", "numpy", "gymnasium", "lbforaging", "rware", "sacred"))
    meta = dict(
        runner="benchmark/epymarl/epymarl_baseline.py",
        config=args.config,
        key=args.key,
        time_limit=args.time_limit,
        seed=args.seed,
        t_max=args.t_max,
        set=args.set,
        epymarl_commit=origin["checkout"]["commit"],
        epymarl_modified=origin["checkout"]["modified"],
        provenance=origin,
        # soft_policies (MAPPO's, IPPO's) samples its actions in evaluations too: test_greedy is read by other selectors
        evaluation_greedy=config.get("test_greedy") if config.get("action_selector") != "soft_policies" else False,
        episodes_per_evaluation=config.get("test_nepisode"),
        sittings=[
            dict(
                start_step=s["start_step"],
                end_step=last_step(s["info"], s["start_step"]),
                wall_time=s["wall_time"],
            )
            for s in sittings
        ],
        # EPyMARL logs every log_interval env steps: its last log falls within one interval before t_max
        finished=code == 0 and last_step(sittings[-1]["info"], 0) + config.get("log_interval", 0) >= args.t_max,
    )
    with open(args.out + ".tmp", "w") as f:
        json.dump(dict(config=config, meta=meta, rows=rows), f, indent=1)
    os.replace(args.out + ".tmp", args.out)
    last = f", last test return {rows[-1]['test_return_mean']:.3f} at {rows[-1]['step']}" if rows else ""
    print(f"main.py exited {code}: {len(rows)} evaluations{last} -> {args.out}")
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()
