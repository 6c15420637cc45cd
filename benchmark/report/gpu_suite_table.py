"""The README's tables of benchmark/measure/gpu_suite.py's GPU call (issue 117), read from
benchmark/results/gpu_suite.json: gpu_table() (ours on the GPU beside JaxMARL and our host-env path) and
async_scaling_table() (mappo_async_seed.py's env clients beside mappo.py). Where that file does not exist, each is one
line saying so and how to measure it.

    python benchmark/report/gpu_suite_table.py [FILE]   # both tables, on stdout
"""

import json
import os
import sys

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "gpu_suite.json")
NOT_MEASURED = (
    "Not measured on a GPU yet: `python benchmark/measure/gpu_suite.py run` on a lent GPU machine (the device call is in "
    "its docstring), then `python benchmark/measure/gpu_suite.py unpack FILE` here."
)
TARGETS = dict(jaxmarl=0.5, host=3.0, async_clients=14, async_env="smaclite/2s3z", async_ratio=4.0)  # issue 117's


def load(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def number(x, digits=0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def verdict(ratio: float, than: str, target: float) -> str:
    return f"{ratio:.2f}x {than} (target >= {target:g}: {'met' if ratio >= target else 'not met'})"


def cell(r: dict | None) -> str:
    """A run's SPS, or why it has none"""
    if r is None:
        return "-"
    return number(r["sps"]) if r["status"] == "ok" else f"{r['status']}: {r.get('reason', '')}"


def measured_on(result: dict, rows: list[dict]) -> str:
    """The line above a table: when, on what, with which command"""
    m = result["machine"]
    dates = sorted({r.get("date", result["date"]) for r in rows})
    versions = f"torch {m['torch']}, jax {m.get('jax') or '-'}"
    where = f"{m['gpu'] or 'no GPU (a smoke run)'}, {m['cpu_cores']} CPU cores ({versions})"
    return f"Measured {', '.join(dates)} on {where}, each run alone: `{result['command']}`."


def gpu_table(path: str = RESULTS) -> str:
    """Per env: our scripts with the envs on the GPU (eager, compiled) and on the host, and JaxMARL's baseline at its
    config, with steady-state SPS, the ratios the issue's targets read, and where an iteration's time goes"""
    result = load(path)
    if result is None or not result["cases"]:
        return NOT_MEASURED
    rows = result["cases"]
    out = [
        measured_on(result, rows),
        "",
        "| env | implementation | envs step on | compiled | env steps per update | SPS | vs JaxMARL | vs host "
        "| s / iteration: env / update / rest | first update (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = list(dict.fromkeys(r["group"] for r in rows))
    lines = []
    for group in groups:
        mine = [r for r in rows if r["group"] == group]
        ok = [r for r in mine if r["status"] == "ok"]
        jax_sps = next((r["sps"] for r in ok if r["kind"] == "jaxmarl"), None)
        host_sps = next((r["sps"] for r in ok if r["kind"] == "ours" and r["env"] == "host" and not r["compile"]), None)
        for r in mine:
            where = "GPU (one XLA program)" if r["kind"] == "jaxmarl" else "GPU" if r["env"] == "device" else "host (CPU)"
            compiled = "XLA" if r["kind"] == "jaxmarl" else "yes" if r["compile"] else "no"
            if r["status"] != "ok":
                out.append(f"| {group} | {r['script']} | {where} | {compiled} | - | {cell(r)} | - | - | - | - |")
                continue
            ours = r["kind"] == "ours"
            vs_jax = f"{r['sps'] / jax_sps:.2f}" if ours and jax_sps else "-"
            is_host = (r["env"], r["compile"]) == ("host", False)
            vs_host = f"{r['sps'] / host_sps:.2f}" if ours and host_sps and not is_host else "-"
            split = "-" if r["env_s"] is None else " / ".join(f"{r[k]:.3f}" for k in ("env_s", "update_s", "other_s"))
            out.append(
                f"| {group} | {r['script']} | {where} | {compiled} | {r['batch']:,} | {cell(r)} | {vs_jax} | {vs_host} "
                f"| {split} | {number(r['first_update_s'], 1)} |"
            )
        device = [r for r in ok if r["kind"] == "ours" and r["env"] == "device"]
        if device:  # the targets, read off the better of eager and compiled
            best = max(device, key=lambda r: r["sps"])
            reads = []
            if jax_sps:
                reads.append(verdict(best["sps"] / jax_sps, "JaxMARL", TARGETS["jaxmarl"]))
            if host_sps:
                reads.append(verdict(best["sps"] / host_sps, "its host-env path", TARGETS["host"]))
            if reads:
                mode = "compiled" if best["compile"] else "eager"
                lines.append(f"{group}, {best['script']} on the GPU ({mode}): {'; '.join(reads)}.")
    out += ["", *lines] if lines else []
    out += [
        "",
        "SPS: env steps per second from the first to the last update (the first update, with its compiling, left out); "
        "rest: inference, storage, GAE. JaxMARL's iteration is one XLA program: no split; its first update counts "
        "tracing and compiling the whole training program. Configs: JaxMARL's (mappo_rnn_smax: 128 envs x 128 steps, "
        "4 epochs x 4 mini-batches; mappo_ff_hanabi: 1024 x 128), ours the same values through flags "
        "(benchmark/measure/gpu_suite.py); VMAS has no JaxMARL run.",
    ]
    return "\n".join(out)


def async_scaling_table(path: str = RESULTS) -> str:
    """Per env and number of env clients: mappo.py and mappo_async_seed.py at the same envs, learner on the GPU"""
    result = load(path)
    if result is None or not result["async_rows"]:
        return NOT_MEASURED
    rows = result["async_rows"]
    first = rows[0]
    out = [
        measured_on(result, rows),
        f"Learner on the GPU, env clients on the CPU cores: {first['splits']} splits of "
        f"{first['envs'] // (first['clients'] * first['splits'])} envs per client, mappo.py at as many envs; "
        f"{first['num_steps']} steps per env per rollout, {first['updates']} updates per run.",
        "",
        "| env | clients | envs | mappo.py SPS | mappo_async_seed.py SPS | async / mappo.py | async per update (s): "
        "update / learner wait / inference / env steps (all clients) | policy lag |",
        "|---|---|---|---|---|---|---|---|",
    ]
    envs = list(dict.fromkeys(r["env_id"] for r in rows))
    target = None
    for env_id in envs:
        for clients in sorted({r["clients"] for r in rows if r["env_id"] == env_id}):
            pair = {r["script"]: r for r in rows if r["env_id"] == env_id and r["clients"] == clients}
            base, run = pair.get("mappo.py"), pair.get("mappo_async_seed.py")
            both = base and run and base["status"] == run["status"] == "ok"
            ratio = run["sps"] / base["sps"] if both else None
            times, lag = "-", "-"
            if run is not None and run["status"] == "ok":
                times = " / ".join(number(run.get(k), 2) for k in ("update_s", "wait_s", "inference_s", "env_s"))
                lag = number(run.get("policy_lag"), 2)
            envs_n = (run or base)["envs"]
            out.append(
                f"| {env_id} | {clients} | {envs_n} | {cell(base)} | {cell(run)} | {number(ratio, 2)} | {times} | {lag} |"
            )
            if env_id == TARGETS["async_env"] and clients == TARGETS["async_clients"] and ratio is not None:
                target = ratio
    if target is not None:
        at = f"{TARGETS['async_env']} at {TARGETS['async_clients']} clients"
        out += ["", f"{at}: mappo_async_seed.py {verdict(target, 'mappo.py', TARGETS['async_ratio'])}."]
    return "\n".join(out)


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else RESULTS
    print(f"{gpu_table(path)}\n\n{async_scaling_table(path)}")
