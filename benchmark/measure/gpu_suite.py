"""Issue 117's GPU measurements in one prepared call of the device tool (one GPU, 16 CPU cores, no network):

- on the GPU, mappo.py and mappo_rnn.py with `--cuda --env-on-device`, eager and `--compile`, beside JaxMARL's
  mappo_rnn_smax (SMAX 3m, 27m_vs_30m) and mappo_ff_hanabi (Hanabi) at their configs (SMAX_EQUAL, HANABI_EQUAL), and
  our host-env path (`--cuda` alone); VMAS, which JaxMARL lacks, on the GPU and on the host. Per run: env steps per
  second in steady state (throughput.py's train_sps: the first update, with compiling, left out), the split of an
  iteration (env / update / rest) and the first update's time (compiling included); JaxMARL's SPS read off its rows
  alike (jaxmarl_baseline.py, the first row left out; no split: its iteration is one XLA program);
- on the 16 cores, learner on the GPU: mappo_async_seed.py with 1 to 14 env clients beside mappo.py at the same number
  of envs (4 per client), on SMAClite 2s3z and SMAX 3m (async_throughput.py's measure: SPS and the per-update times).

    python benchmark/measure/gpu_suite.py prepare        # here: the kit, .device/ (git-ignored; about 13 MB)
    python benchmark/measure/gpu_suite.py run            # there: writes $OUT/gpu_suite.json and $OUT/gpu_suite.log
    python benchmark/measure/gpu_suite.py smoke          # here, on the CPU: each kind of case, tiny (about 3 min)
    python benchmark/measure/gpu_suite.py unpack FILE    # here: FILE -> benchmark/results/gpu_suite.json

The device call: command `python3 benchmark/measure/gpu_suite.py run`, carry [".device"], timeout_s 480.

prepare runs `benchmark/jaxmarl/device_runs.sh prepare` (wheels for the image's Python 3.12 that it lacks, JaxMARL's
checkout from $JAXMARL_DIR, a wandb stub), then adds .device/gpu_suite/: vmas and gym (source releases, built here),
gym-notices, rtree, and SMAClite's wheel built from a checkout ($SMACLITE_SRC, default /work/smaclite-src: SMAClite is
not on PyPI and GitHub is out of reach here; without it the kit has none and the SMAClite rows are skipped there).
run installs the kit into /tmp/gpu_suite_site, then measures the cases in the order of PLAN's tiers (the issue's
targets first: Hanabi against JaxMARL and the host path, SMAClite at 14 clients), each alone, each in its own process
group with its own timeout, within --budget seconds all told: a case that no longer fits is skipped, a case that
needs what is missing (SMAClite, VMAS, JaxMARL's checkout or its packages) is skipped with a line saying so, and the
JSON is rewritten after every case, so what was measured comes back even when the call is cut short. Everything on
PLAN is about 15 minutes of work (estimates, est_s below, to be replaced by the wall_s the first call records), so one
call of 8 minutes measures the first tiers; `run --skip-measured` on a later call measures what is still missing
(benchmark/results/gpu_suite.json travels with the tree), and `unpack` merges it where the GPU is the same model.

Python rather than shell: the cases are data (PLAN), their results JSON, and the measurement functions of
throughput.py and async_throughput.py are reused as they are, each called in a child process (`case SPEC`) that a
timeout can stop whole.
"""

import argparse
import glob
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KIT = os.path.join(ROOT, ".device")
SUITE_WHEELS = os.path.join(KIT, "gpu_suite")  # this suite's wheels, beside device_runs.sh's .device/whl
STUB = os.path.join(KIT, "stub")  # device_runs.sh's wandb stub: jaxmarl_baseline.py imports wandb, never calls init
SITE = "/tmp/gpu_suite_site"
RESULTS = os.path.join(ROOT, "benchmark", "results", "gpu_suite.json")
MARK = "gpu_suite result: "  # a case process's last line: MARK + its result as JSON

# JaxMARL's configs as our flags: mappo_homogenous_rnn_smax.yaml (smax_hard_10m.sh's jaxcfg) and
# mappo_homogenous_ff_hanabi.yaml, both players' rows as JaxMARL trains on; ours keeps PopArt, Huber, value clipping,
# LayerNorm and 10-step BPTT chunks (JaxMARL: whole 128-step sequences)
SMAX_EQUAL = "--num-envs 128 --num-steps 128 --hidden-dim 128 --learning-rate 2e-3 --critic-learning-rate 2e-3 --anneal-lr"
SMAX_EQUAL += " --update-epochs 4 --num-minibatches 4 --ent-coef 0 --vf-coef 0.5 --max-grad-norm 0.25"
HANABI_EQUAL = "--num-envs 1024 --num-steps 128 --hidden-dim 128 --learning-rate 5e-4 --critic-learning-rate 5e-4"
HANABI_EQUAL += " --anneal-lr --update-epochs 4 --num-minibatches 4 --ent-coef 0.01 --vf-coef 0.5 --max-grad-norm 0.5"
HANABI_EQUAL += " --no-acting-rows-only"
VMAS_GPU = "--num-envs 1024"  # the VMAS preset otherwise (100 steps, 10 epochs): 60 envs leave a GPU idle
TINY = "--num-envs 4 --num-steps 8 --hidden-dim 16 --update-epochs 1"  # smoke
JAXMARL_TINY = ["NUM_ENVS=4", "NUM_STEPS=8", "UPDATE_EPOCHS=1"]  # its GRU stays 128 wide: its initial state is hard-coded
ASYNC_SPLITS, ENVS_PER_SPLIT = 2, 2  # per env client: 2 splits of 2 envs (mappo.py: the same total)
CLIENTS = (14, 1, 4, 8, 2)  # 14 first: the target's point


def ours(tier, est, cap, group, script, env_id, flags, host=False, compile=False, iterations=4, cuda=True):
    """A run of our script on the GPU (host: its envs on the CPU) measured by throughput.py's train_sps"""
    mode = ("host" if host else "device") + ("-compiled" if compile else "")
    flags = ["--cuda" if cuda else "--no-cuda", *([] if host else ["--env-on-device"]), *flags.split()]
    flags.append("--compile" if compile else "--no-compile")
    needs = ["vmas"] if env_id.startswith("vmas/") else ["jaxmarl"]
    case = dict(name=f"{group}/{script}/{mode}", part="gpu", kind="ours", group=group, script=script, env_id=env_id)
    case.update(env="host" if host else "device", compile=compile, flags=flags, iterations=iterations, needs=needs)
    return dict(case, tier=tier, est_s=est, cap_s=cap)


def jaxmarl(tier, est, cap, group, baseline, map_name=None, sets=(), batch=0, updates=4, platforms="cuda,cpu"):
    """A run of JaxMARL's baseline (jaxmarl_baseline.py) stopped after `updates` updates of `batch` env steps"""
    case = dict(name=f"{group}/jaxmarl/{baseline}", part="gpu", kind="jaxmarl", group=group, baseline=baseline)
    case.update(script=f"JaxMARL {baseline}", env_id=map_name or "hanabi", map=map_name, sets=list(sets), batch=batch)
    case.update(env="device", compile=True, updates=updates, platforms=platforms, needs=["jaxmarl-baseline"])
    return dict(case, tier=tier, est_s=est, cap_s=cap)


def scaling(tier, est, cap, env_id, clients, num_steps=100, updates=4, cuda=True):
    """mappo.py, then mappo_async_seed.py with `clients` env clients, at the same number of envs"""
    envs = clients * ASYNC_SPLITS * ENVS_PER_SPLIT
    common = ["--env-id", env_id, "--cuda" if cuda else "--no-cuda", "--num-envs", str(envs), "--num-steps", str(num_steps)]
    common += ["--eval-interval", "0", "--total-timesteps", str(updates * envs * num_steps)]
    layout = ["--num-clients", str(clients), "--num-splits", str(ASYNC_SPLITS)]
    layout += ["--num-workers", "1"] if env_id.startswith("smaclite/") else []  # one env worker per split
    needs = ["smaclite"] if env_id.startswith("smaclite/") else ["jaxmarl"]
    cases = []
    for script, flags in (("mappo.py", common), ("mappo_async_seed.py", common + layout)):
        case = dict(name=f"async/{env_id}/{clients}/{script}", part="async", kind="async", script=script, env_id=env_id)
        case.update(clients=clients, splits=ASYNC_SPLITS, envs=envs, num_steps=num_steps, updates=updates, flags=flags)
        cases.append(dict(case, needs=needs, tier=tier, est_s=est, cap_s=cap))
    return cases


def plan(smoke: bool) -> list[dict]:
    """The cases, in the order they run: by tier, then as listed. est_s: a guess of a case's wall time on the GPU
    machine (it starts only if that much of the budget is left); cap_s: its timeout."""
    if smoke:  # each kind of case once, on the CPU, tiny (the host path: the async pair's mappo.py; the flags of
        # every case below are checked by tests/test_gpu_suite.py)
        cases = [ours(1, 0, 240, "3m", "mappo.py", "3m", TINY, iterations=3, cuda=False)]
        cases.append(jaxmarl(1, 0, 300, "3m", "mappo_rnn_smax", "3m", JAXMARL_TINY, batch=32, updates=3, platforms="cpu"))
        return cases + scaling(1, 0, 240, "3m", 1, num_steps=8, updates=3, cuda=False)
    hanabi = [ours(1, 45, 150, "hanabi", "mappo.py", "hanabi", HANABI_EQUAL)]
    hanabi.append(jaxmarl(1, 60, 180, "hanabi", "mappo_ff_hanabi", batch=1024 * 128))
    hanabi.append(ours(1, 50, 150, "hanabi", "mappo.py", "hanabi", HANABI_EQUAL, host=True))
    hanabi.append(ours(2, 80, 200, "hanabi", "mappo.py", "hanabi", HANABI_EQUAL, compile=True))
    smax = []
    for tier, est, group in ((2, 1.0, "3m"), (3, 1.8, "27m_vs_30m")):  # est: 27m's runs take longer
        smax.append(ours(tier, 40 * est, 150 * est, group, "mappo_rnn.py", group, SMAX_EQUAL))
        smax.append(jaxmarl(tier, 50 * est, 180 * est, group, "mappo_rnn_smax", group, batch=128 * 128))
        smax.append(ours(tier, 45 * est, 150 * est, group, "mappo_rnn.py", group, SMAX_EQUAL, host=True))
        smax.append(ours(3, 90 * est, 240 * est, group, "mappo_rnn.py", group, SMAX_EQUAL, compile=True))
    vmas = [ours(2, 35, 120, "vmas/navigation", "mappo.py", "vmas/navigation", VMAS_GPU)]
    vmas.append(ours(2, 40, 120, "vmas/navigation", "mappo.py", "vmas/navigation", VMAS_GPU, host=True))
    vmas.append(ours(3, 60, 150, "vmas/navigation", "mappo.py", "vmas/navigation", VMAS_GPU, compile=True))
    async_cases = []
    for clients in CLIENTS:
        async_cases += scaling(1 if clients == 14 else 2 if clients == 1 else 3, 40, 120, "smaclite/2s3z", clients)
        async_cases += scaling(2 if clients == 14 else 3, 30, 120, "3m", clients)
    return sorted(hanabi + smax + vmas + async_cases, key=lambda c: c["tier"])  # a stable sort: listed order within a tier


# ========================================= ONE CASE (a child process) =========================================
def jaxmarl_sps(case: dict) -> dict:
    """JaxMARL's baseline for case["updates"] updates -> steady SPS from its rows (the first left out) and how long its
    first update took after its setup (tracing and compiling the whole training program included)"""
    checkout = os.environ.get("JAXMARL_DIR") or os.path.join(KIT, "jaxmarl-src")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = [sys.executable, os.path.join(ROOT, "benchmark", "jaxmarl", "jaxmarl_baseline.py"), "--jaxmarl-dir", checkout]
        stop_at = str(case["updates"] * case["batch"])  # the config's schedule, cut short
        cmd += ["--baseline", case["baseline"], "--seed", "1", "--out", out, "--stop-at-step", stop_at]
        cmd += ["--map", case["map"]] if case["map"] else []
        cmd += [f"--set={s}" for s in case["sets"]]
        subprocess.run(cmd, cwd=tmp, check=True)
        with open(out) as f:
            run = json.load(f)
    rows, meta = run["rows"], run["meta"]
    assert len(rows) >= 2 and meta["steps_per_update"] == case["batch"], f"{len(rows)} rows of {meta['steps_per_update']}"
    sps = (rows[-1]["step"] - rows[0]["step"]) / (rows[-1]["wall_time"] - rows[0]["wall_time"])
    result = dict(num_envs=run["config"]["NUM_ENVS"], batch=case["batch"], sps=sps, iteration_s=case["batch"] / sps)
    result.update(env_s=None, update_s=None, other_s=None, device_kind=meta.get("device"), jax=meta.get("jax_version"))
    return dict(result, first_update_s=rows[0]["wall_time"] - meta["main_start_wall_time"], startup_s=rows[0]["wall_time"])


def run_case(case: dict) -> dict:
    sys.path.insert(0, HERE)
    if case["kind"] == "ours":
        from throughput import train_sps

        return train_sps(case["env_id"], case["iterations"], case["flags"], case["script"].removesuffix(".py"))
    if case["kind"] == "async":
        from async_throughput import measure

        return measure(case["script"], case["flags"], 0.0, case["clients"])
    return jaxmarl_sps(case)


# ============================================ THE SUITE (the parent) ============================================
def missing(need: str, env: dict, cache: dict) -> str | None:
    """Why a case's need is not met (None: met): a package that does not import, or JaxMARL's checkout absent"""
    if need not in cache:
        modules = {"jaxmarl-baseline": "hydra, omegaconf, distrax, wandb"}.get(need, need)
        checkout = env.get("JAXMARL_DIR") or os.path.join(KIT, "jaxmarl-src")
        if need == "jaxmarl-baseline" and not os.path.isdir(os.path.join(checkout, "baselines")):
            cache[need] = f"no JaxMARL checkout at {checkout} (gpu_suite.py prepare copies it into the kit)"
        else:
            env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (STUB, env.get("PYTHONPATH")) if p))  # wandb: the stub
            probe = subprocess.run([sys.executable, "-c", f"import {modules}"], env=env, capture_output=True, text=True)
            lines = probe.stderr.strip().splitlines() or ["?"]
            cache[need] = None if probe.returncode == 0 else f"{modules} does not import: {lines[-1]}"
    return cache[need]


def group_alive(pgid: int) -> bool:
    """A member of the process group that is not a zombie (kill -0 counts those, and an orphan's may stay unreaped)"""
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()  # after the command's name: state, ppid, pgrp, ...
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def end_group(proc: subprocess.Popen):
    """Whatever is left of a case's process group (its run, the run's env workers and clients): SIGTERM, then SIGKILL
    after 20 s, so that nothing of it shares the machine with the next case"""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        proc.poll()  # the case process itself, reaped
        if not group_alive(proc.pid):
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        for _ in range(200):
            if not group_alive(proc.pid):
                break
            proc.poll()
            time.sleep(0.1)
    proc.wait(timeout=10)


def execute(case: dict, env: dict, timeout: float) -> tuple[dict, str]:
    """One case in a process group of its own, stopped whole at its timeout -> (its row, its output)"""
    start = time.time()
    spec = {k: v for k, v in case.items() if k not in ("est_s", "cap_s", "needs")}
    cmd = [sys.executable, os.path.abspath(__file__), "case", json.dumps(spec)]
    with tempfile.TemporaryFile("w+") as log:  # a file, not a pipe: a stray grandchild cannot hold the read open
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
            status = "ok" if proc.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            status = "timeout"
        end_group(proc)
        log.seek(0)
        output = log.read()
    row = dict(case, status=status, wall_s=round(time.time() - start, 1), timeout_s=round(timeout))
    results = [line[len(MARK) :] for line in output.splitlines() if line.startswith(MARK)]
    if status == "ok" and results:
        row.update(json.loads(results[-1]))
    elif status == "ok":
        row.update(status="failed", reason="no result line")
    else:  # the last error line (not the case process's own CalledProcessError), else the last line
        lines = [line.strip() for line in output.splitlines() if line.strip()] or [""]
        errors = [line for line in lines if "Error" in line and "CalledProcessError" not in line] or lines
        row["reason"] = f"stopped at its timeout of {timeout:.0f} s" if status == "timeout" else errors[-1][-300:]
    return row, output


def install_kit(env: dict) -> list[str]:
    """The kit's wheels into SITE, put first on PYTHONPATH with JaxMARL's checkout (the image has no jaxmarl) ->
    notes on what is missing"""
    wheels = sorted(glob.glob(os.path.join(KIT, "whl", "*.whl")) + glob.glob(os.path.join(SUITE_WHEELS, "*.whl")))
    if not wheels:
        return [f"no kit at {KIT} (gpu_suite.py prepare): tyro, JaxMARL and the envs' packages are missing"]
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir"]
    subprocess.run([*pip, "--upgrade", "--target", SITE, *wheels], check=True)
    paths = [SITE, os.path.join(KIT, "jaxmarl-src"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    sys.path.insert(0, SITE)  # for the versions below
    return [] if glob.glob(os.path.join(SUITE_WHEELS, "smaclite-*.whl")) else ["the kit has no SMAClite wheel"]


def machine(env: dict) -> dict:
    """The GPU's name (None: none), the versions that decide the numbers, the CPU, JaxMARL's commit"""
    probe = "import json, torch; print(json.dumps([torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "
    probe += "torch.__version__]))"  # in a process of its own: this one holds no CUDA context while the cases run
    gpu, torch_version = json.loads(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True).stdout)

    def version(name):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), None)
    commit = os.path.join(env.get("JAXMARL_DIR") or os.path.join(KIT, "jaxmarl-src"), "COMMIT")
    out = dict(gpu=gpu, cpu_cores=os.cpu_count(), cpu=model, python=sys.version.split()[0], torch=torch_version)
    out.update({name: version(name) for name in ("jax", "jaxlib", "jax-cuda13-plugin", "flax", "optax", "vmas", "smaclite")})
    out["jaxmarl_commit"] = open(commit).read().strip() if os.path.exists(commit) else None
    return out


def write_json(path: str, result: dict):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def suite(opts, smoke: bool):
    start = time.time()
    out = opts.out or (os.path.join(os.environ["OUT"], "gpu_suite.json") if os.environ.get("OUT") else None)
    if out is None:
        sys.exit("run: --out FILE, or OUT (the device tool sets it: the folder whose files come back)")
    env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")  # torch shares the card
    env.setdefault("JAX_COMPILATION_CACHE_DIR", "/tmp/gpu_suite_jax_cache")  # ours: SMAX compiles once per map
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    notes = [] if smoke else install_kit(env)
    if smoke:
        env["OMP_NUM_THREADS"] = "1"  # this 2-core machine is shared
    info = machine(env)
    if not smoke and info["gpu"] is None:
        sys.exit("run: torch sees no GPU here (on the CPU: gpu_suite.py smoke)")
    command = " ".join(["python", "benchmark/measure/gpu_suite.py", *sys.argv[1:]])
    result = dict(suite="benchmark/measure/gpu_suite.py", mode="smoke" if smoke else "run", command=command)
    result.update(date=time.strftime("%Y-%m-%d"), machine=info, budget_s=opts.budget, notes=notes, cases=[], async_rows=[])
    measured = set()
    if opts.skip_measured and os.path.exists(RESULTS):
        with open(RESULTS) as f:
            before = json.load(f)
        if before["machine"]["gpu"] == info["gpu"]:
            measured = {r["name"] for r in before["cases"] + before["async_rows"] if r["status"] == "ok"}
    cases = [c for c in plan(smoke) if c["name"] not in measured and (not opts.only or any(o in c["name"] for o in opts.only))]
    print(f"{info['gpu'] or 'no GPU'}, {info['cpu_cores']} CPU cores: {len(cases)} cases in {opts.budget} s", flush=True)
    for note in notes:
        print(f"note: {note}", flush=True)
    log_path = os.path.join(os.path.dirname(os.path.abspath(out)), "gpu_suite.log")
    open(log_path, "w").close()  # each case's last lines, appended as it ends
    cache, deadline = {}, start + opts.budget
    for case in cases:
        left = deadline - time.time()
        why = next((m for m in (missing(n, env, cache) for n in case["needs"]) if m), None)
        if why is None and left < max(case["est_s"], 10):
            why = f"the budget: {left:.0f} s left, it takes about {case['est_s']:.0f} s"
        if why:
            row, output = dict(case, status="skipped", reason=why), ""
        else:
            case_env = dict(env, JAX_PLATFORMS=case["platforms"]) if case["kind"] == "jaxmarl" else env
            if case["kind"] == "jaxmarl":  # its compiling is part of what it reports: no cache; wandb: the kit's stub
                case_env.pop("JAX_COMPILATION_CACHE_DIR", None)
                case_env["PYTHONPATH"] = os.pathsep.join(p for p in (STUB, env.get("PYTHONPATH")) if p)
            row, output = execute(case, case_env, min(case["cap_s"], left))
        row.pop("needs", None)
        row["date"], row["gpu"] = result["date"], info["gpu"]
        result["cases" if case["part"] == "gpu" else "async_rows"].append(row)
        sps = f"{row['sps']:.0f} SPS" if row.get("sps") else row.get("reason", "")
        print(f"{row['name']}: {row['status']} ({row.get('wall_s', 0):.0f} s) {sps}", flush=True)
        with open(log_path, "a") as f:
            f.write(f"== {row['name']}: {row['status']}, {row.get('wall_s', 0):.0f} s\n")
            f.write("\n".join(output.splitlines()[-60:]) + "\n")
        result["elapsed_s"] = round(time.time() - start, 1)
        write_json(out, result)  # after every case: a call cut short still sends back what it measured
    result["elapsed_s"] = round(time.time() - start, 1)
    write_json(out, result)
    sys.path.insert(0, os.path.join(ROOT, "benchmark", "report"))
    from gpu_suite_table import async_scaling_table, gpu_table

    print(f"\n{gpu_table(out)}\n\n{async_scaling_table(out)}\n\nwrote {out} in {result['elapsed_s']:.0f} s")


# ================================================ HERE: THE KIT ================================================
def prepare():
    """device_runs.sh's kit (it starts afresh: .device/ removed), then this suite's wheels beside it"""
    subprocess.run(["bash", os.path.join(ROOT, "benchmark", "jaxmarl", "device_runs.sh"), "prepare"], check=True)
    os.makedirs(SUITE_WHEELS, exist_ok=True)
    platforms = [f"--platform={p}" for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")]
    pip = [sys.executable, "-m", "pip", "-q"]
    binary = ["--no-deps", "--only-binary=:all:", "--python-version=3.12", "--implementation=cp", *platforms]
    subprocess.run([*pip, "download", *binary, "-d", SUITE_WHEELS, "gym-notices==0.0.8", "rtree==1.4.1"], check=True)
    # source releases only: built here (pure Python); smaclite needs rtree, not the 1.0.0 its setup.py pins (no
    # wheel for Python 3.12), and scikit-learn, which the image has
    subprocess.run([*pip, "wheel", "--no-deps", "-w", SUITE_WHEELS, "vmas==1.5.2", "gym==0.26.2"], check=True)
    smaclite = os.environ.get("SMACLITE_SRC", "/work/smaclite-src")
    if os.path.exists(os.path.join(smaclite, "setup.py")):
        subprocess.run([*pip, "wheel", "--no-deps", "-w", SUITE_WHEELS, smaclite], check=True, capture_output=True)
    else:
        print(f"no SMAClite checkout at {smaclite} (SMACLITE_SRC): the kit has no SMAClite, its rows will be skipped")
    print("\n".join(sorted(os.listdir(SUITE_WHEELS))))
    subprocess.run(["du", "-sh", KIT], check=True)


def unpack(path: str, merge: bool):
    """A run's JSON into benchmark/results/gpu_suite.json; with the same GPU model there, the rows it lacks stay, and
    so do their measurements where it has a row without one (a later call that measured the rest)"""
    with open(path) as f:
        new = json.load(f)
    if new.get("mode") != "run" or not new["machine"].get("gpu"):
        sys.exit(f"{path}: not the JSON of a run on a GPU (mode {new.get('mode')}, GPU {new['machine'].get('gpu')})")
    if merge and os.path.exists(RESULTS):
        with open(RESULTS) as f:
            old = json.load(f)
        if old["machine"]["gpu"] == new["machine"]["gpu"]:
            for key in ("cases", "async_rows"):
                old_ok = {r["name"]: r for r in old[key] if r["status"] == "ok"}
                rows = [old_ok.get(r["name"], r) if r["status"] != "ok" else r for r in new[key]]
                new[key] = rows + [r for r in old[key] if r["name"] not in {r["name"] for r in rows}]
    write_json(RESULTS, new)
    sys.path.insert(0, os.path.join(ROOT, "benchmark", "report"))
    from gpu_suite_table import async_scaling_table, gpu_table

    print(f"{gpu_table(RESULTS)}\n\n{async_scaling_table(RESULTS)}\n\nwrote {os.path.relpath(RESULTS, ROOT)}")


def main():
    if sys.argv[1:2] == ["case"]:  # a child: one case, its result as the last line
        print(MARK + json.dumps(run_case(json.loads(sys.argv[2]))), flush=True)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    sub.add_parser("prepare", help="here: the kit (.device/)")
    for mode, budget in (("run", 420), ("smoke", 900)):
        p = sub.add_parser(mode, help="there: every case within the budget" if mode == "run" else "here, on the CPU, tiny")
        p.add_argument("--budget", type=float, default=budget, help="seconds for the whole suite, the kit's install included")
        p.add_argument("--out", default=None, help="the JSON (run: $OUT/gpu_suite.json); gpu_suite.log beside it")
        p.add_argument("--only", nargs="+", default=None, help="the cases whose names hold one of these strings")
        p.add_argument("--skip-measured", action="store_true", help="not the cases measured in " + RESULTS)
    p = sub.add_parser("unpack", help="here: a run's JSON into benchmark/results/gpu_suite.json")
    p.add_argument("file")
    p.add_argument("--no-merge", dest="merge", action="store_false", help="replace the file whole")
    opts = parser.parse_args()
    if opts.mode == "prepare":
        prepare()
    elif opts.mode == "unpack":
        unpack(opts.file, opts.merge)
    else:
        suite(opts, opts.mode == "smoke")


if __name__ == "__main__":
    main()
