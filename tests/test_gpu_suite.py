"""benchmark/measure/gpu_suite.py (issue 117's prepared GPU call) and its tables, benchmark/report/gpu_suite_table.py:
the tables on a hand-made result, the flags of every planned case, a case stopped whole at its timeout, unpack's merge,
and the smoke mode on the CPU (slow: its runs on this 2-core machine)."""

import copy
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT

sys.path[:0] = [str(ROOT / "benchmark" / role) for role in ("measure", "report")]  # the tools tested here
import gpu_suite  # noqa: E402
import gpu_suite_table  # noqa: E402


def ours_row(group, mode, sps, env_s, update_s, batch=131072, script="mappo.py", first=1.5):
    env, compiled = mode.split("-") if "-" in mode else (mode, "")
    iteration = batch / sps
    row = dict(name=f"{group}/{script}/{mode}", part="gpu", kind="ours", group=group, script=script, env_id=group)
    row.update(env=env, compile=compiled == "compiled", status="ok", batch=batch, sps=sps, iteration_s=iteration)
    return dict(row, env_s=env_s, update_s=update_s, other_s=iteration - env_s - update_s, first_update_s=first)


def async_row(env_id, clients, script, sps, status="ok", **times):
    row = dict(name=f"async/{env_id}/{clients}/{script}", part="async", kind="async", script=script, env_id=env_id)
    row.update(clients=clients, splits=2, envs=4 * clients, num_steps=100, updates=4, status=status)
    return dict(row, sps=sps, **times) if status == "ok" else dict(row, reason="stopped at its timeout of 60 s")


def hand_made(gpu="NVIDIA H100 80GB HBM3") -> dict:
    """A run's JSON: Hanabi ours (GPU eager, compiled, host) beside JaxMARL, 3m's JaxMARL run skipped; SMAClite's
    scaling at 1 and 14 clients, SMAX's 14-client async run cut at its timeout"""
    cases = [
        ours_row("hanabi", "device", 80000.0, 0.9, 0.6),
        ours_row("hanabi", "device-compiled", 100000.0, 0.9, 0.3, first=45.0),
        ours_row("hanabi", "host", 25000.0, 4.5, 0.6),
    ]
    jax = dict(name="hanabi/jaxmarl/mappo_ff_hanabi", part="gpu", kind="jaxmarl", group="hanabi", env="device")
    jax.update(script="JaxMARL mappo_ff_hanabi", compile=True, status="ok", batch=131072, sps=160000.0)
    cases.append(dict(jax, iteration_s=131072 / 160000, env_s=None, update_s=None, other_s=None, first_update_s=38.0))
    skipped = dict(jax, name="3m/jaxmarl/mappo_rnn_smax", group="3m", script="JaxMARL mappo_rnn_smax", status="skipped")
    cases.append(dict(skipped, reason="the budget: 20 s left, it takes about 50 s"))
    rows = [async_row("smaclite/2s3z", c, "mappo.py", s, update_s=0.2, env_s=3.0) for c, s in ((14, 500.0), (1, 90.0))]
    times = dict(update_s=0.25, wait_s=0.05, inference_s=0.4, env_s=20.0, policy_lag=0.9)
    rows += [async_row("smaclite/2s3z", c, "mappo_async_seed.py", s, **times) for c, s in ((14, 2100.0), (1, 100.0))]
    rows += [async_row("3m", 14, "mappo.py", 9000.0, update_s=0.3), async_row("3m", 14, "mappo_async_seed.py", 0, "timeout")]
    machine = dict(gpu=gpu, cpu_cores=16, torch="2.11.0+cu130", jax="0.11.2")
    return dict(mode="run", command="python benchmark/measure/gpu_suite.py run", date="2027-01-05", machine=machine,
                budget_s=420, cases=cases, async_rows=rows)  # fmt: skip


def test_tables_read_a_run_and_give_the_targets_verdicts(tmp_path):
    path = tmp_path / "gpu_suite.json"
    path.write_text(json.dumps(hand_made()))
    table = gpu_suite_table.gpu_table(str(path))
    lines = table.splitlines()
    assert lines[0].startswith("Measured 2027-01-05 on NVIDIA H100 80GB HBM3, 16 CPU cores (torch 2.11.0+cu130, jax 0.11.2)")
    eager = next(line for line in lines if line.startswith("| hanabi | mappo.py | GPU | no |"))
    assert "| 131,072 | 80,000 | 0.50 | 3.20 | 0.900 / 0.600 / 0.138 | 1.5 |" in eager  # vs JaxMARL, vs host, the split
    assert "| 100,000 | 0.62 | 4.00 |" in next(line for line in lines if "| GPU | yes |" in line)
    assert "| host (CPU) | no | 131,072 | 25,000 | 0.16 | - |" in table  # the host run is the base of its own column
    assert "| JaxMARL mappo_ff_hanabi | GPU (one XLA program) | XLA | 131,072 | 160,000 | - | - | - | 38.0 |" in table
    assert "| 3m | JaxMARL mappo_rnn_smax |" in table and "skipped: the budget: 20 s left" in table
    verdict = "hanabi, mappo.py on the GPU (compiled): 0.62x JaxMARL (target >= 0.5: met); 4.00x its host-env path"
    assert verdict + " (target >= 3: met)." in table
    scaling = gpu_suite_table.async_scaling_table(str(path)).splitlines()
    assert "2 splits of 2 envs per client" in scaling[1] and "100 steps per env per rollout, 4 updates per run" in scaling[1]
    rows = [line for line in scaling if line.startswith("| smaclite")]
    assert [line.split(" | ")[1] for line in rows] == ["1", "14"]  # by clients
    assert rows[1].startswith("| smaclite/2s3z | 14 | 56 | 500 | 2,100 | 4.20 | 0.25 / 0.05 / 0.40 / 20.00 | 0.90 |")
    assert "| 3m | 14 | 56 | 9,000 | timeout: stopped at its timeout of 60 s | - | - | - |" in scaling
    assert scaling[-1] == "smaclite/2s3z at 14 clients: mappo_async_seed.py 4.20x mappo.py (target >= 4: met)."


def test_tables_say_in_one_line_that_nothing_is_measured_yet(tmp_path):
    for table in (gpu_suite_table.gpu_table, gpu_suite_table.async_scaling_table):
        line = table(str(tmp_path / "none.json"))
        assert "\n" not in line and "gpu_suite.py run" in line and "unpack" in line


def test_every_planned_case_parses_with_its_script():
    """Each case of the GPU plan (and the smoke's) names flags its script takes, at JaxMARL's batch where it is beside
    JaxMARL; the async layouts divide their envs; the issue's targets come in the first tier"""
    import importlib

    cases = gpu_suite.plan(smoke=False)
    assert [c["name"] for c in cases if c["tier"] == 1] == [
        "hanabi/mappo.py/device",
        "hanabi/jaxmarl/mappo_ff_hanabi",
        "hanabi/mappo.py/host",
        "async/smaclite/2s3z/14/mappo.py",
        "async/smaclite/2s3z/14/mappo_async_seed.py",
    ]
    assert len({c["name"] for c in cases}) == len(cases) and [c["tier"] for c in cases] == sorted(c["tier"] for c in cases)
    batches = {c["group"]: c["batch"] for c in cases if c["kind"] == "jaxmarl"}
    assert batches == {"hanabi": 1024 * 128, "3m": 128 * 128, "27m_vs_30m": 128 * 128}
    for case in cases + gpu_suite.plan(smoke=True):
        if case["kind"] == "jaxmarl" or (case["env_id"].startswith("smaclite/") and not gpu_suite_installed("smaclite")):
            continue
        module = importlib.import_module(case["script"].removesuffix(".py"))
        args, _ = module.parse_args(case["flags"] if case["kind"] == "async" else ["--env-id", case["env_id"], *case["flags"]])
        assert args.cuda == (case in cases) and args.compile == case.get("compile", False)
        if case["kind"] == "ours":
            assert args.env_on_device == (case["env"] == "device")
            if case in cases and case["group"] in batches:
                assert args.num_envs * args.num_steps == batches[case["group"]] and args.update_epochs == 4
        else:
            assert args.num_envs == case["envs"] == 4 * case["clients"]


def gpu_suite_installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_a_case_is_stopped_whole_at_its_timeout_and_a_failure_says_why(tmp_path):
    """A case past its timeout: its process group (the case process, its training run) is gone and the row says why;
    a case that fails gives its last error line"""
    case = next(c for c in gpu_suite.plan(smoke=True) if c["kind"] == "ours")
    marker = f"gpu_suite_timeout_test_{os.getpid()}"
    case = dict(case, flags=[*case["flags"], "--exp-name", marker])
    start = time.time()
    row, _ = gpu_suite.execute(case, dict(os.environ, OMP_NUM_THREADS="1"), timeout=3)
    assert row["status"] == "timeout" and row["reason"] == "stopped at its timeout of 3 s" and "sps" not in row
    assert time.time() - start < 35
    assert marker not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    jaxmarl = next(c for c in gpu_suite.plan(smoke=True) if c["kind"] == "jaxmarl")
    failed, output = gpu_suite.execute(jaxmarl, dict(os.environ, JAXMARL_DIR=str(tmp_path)), timeout=120)
    assert failed["status"] == "failed" and "Error" in failed["reason"] and "CalledProcessError" in output


def test_unpack_merges_a_later_call_on_the_same_gpu(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu_suite, "RESULTS", str(tmp_path / "results" / "gpu_suite.json"))
    first = hand_made()
    (tmp_path / "first.json").write_text(json.dumps(first))
    gpu_suite.unpack(str(tmp_path / "first.json"), merge=True)
    later = copy.deepcopy(first)  # measured the skipped 3m run; its hanabi host run failed this time
    smax = dict(first["cases"][3], name="3m/jaxmarl/mappo_rnn_smax", group="3m", script="JaxMARL mappo_rnn_smax")
    later["cases"] = [dict(smax, sps=50000.0, batch=16384), dict(first["cases"][2], status="failed", reason="?")]
    later["async_rows"] = []
    (tmp_path / "later.json").write_text(json.dumps(later))
    gpu_suite.unpack(str(tmp_path / "later.json"), merge=True)
    merged = json.loads((tmp_path / "results" / "gpu_suite.json").read_text())
    statuses = {r["name"]: (r["status"], r.get("sps")) for r in merged["cases"]}
    assert statuses["3m/jaxmarl/mappo_rnn_smax"] == ("ok", 50000.0)
    assert statuses["hanabi/mappo.py/host"] == ("ok", 25000.0)  # the earlier measurement stays
    assert len(statuses) == 5 and len(merged["async_rows"]) == 6
    other = dict(later, machine=dict(later["machine"], gpu="NVIDIA H200"))
    (tmp_path / "other.json").write_text(json.dumps(other))
    gpu_suite.unpack(str(tmp_path / "other.json"), merge=True)  # another GPU: replaced whole
    assert len(json.loads((tmp_path / "results" / "gpu_suite.json").read_text())["cases"]) == 2
    (tmp_path / "smoke.json").write_text(json.dumps(dict(first, mode="smoke")))
    with pytest.raises(SystemExit, match="not the JSON of a run on a GPU"):
        gpu_suite.unpack(str(tmp_path / "smoke.json"), merge=True)


@pytest.mark.slow
def test_smoke_runs_each_kind_of_case_and_writes_consistent_numbers(tmp_path):
    """gpu_suite.py smoke on the CPU: ours (SMAX on the training device), JaxMARL's baseline (skipped, with the reason,
    where its checkout or packages are missing), mappo.py beside mappo_async_seed.py. About 3 minutes on this 2-core
    machine shared with two training runs (each run compiles SMAX, or loads it from the session's cache)."""
    out = tmp_path / "gpu_suite.json"
    cmd = [sys.executable, str(ROOT / "benchmark" / "measure" / "gpu_suite.py"), "smoke", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["mode"] == "smoke" and result["machine"]["gpu"] is None and result["machine"]["cpu_cores"] >= 1
    assert result["elapsed_s"] <= result["budget_s"] and (tmp_path / "gpu_suite.log").exists()
    rows = {r["name"]: r for r in result["cases"] + result["async_rows"]}
    for name, row in rows.items():
        assert row["status"] in ("ok", "skipped"), (name, row.get("reason"))
        assert row["status"] == "ok" or row["reason"], name
    assert all(rows[name]["status"] == "ok" for name in ("3m/mappo.py/device", "async/3m/1/mappo.py"))
    assert rows["async/3m/1/mappo_async_seed.py"]["status"] == "ok"
    for row in rows.values():
        if row["status"] != "ok":
            continue
        assert row["sps"] > 0
        if row["kind"] == "async":
            assert row["envs"] == 4 and row["update_s"] > 0 and row["updates"] == 3
            continue
        assert row["batch"] == 32 and row["iteration_s"] == pytest.approx(row["batch"] / row["sps"])
        assert row["first_update_s"] > 0
        if row["kind"] == "ours":  # the split: env and update are parts of the iteration, the rest what is left
            assert row["env_s"] > 0 and row["update_s"] > 0 and row["env_s"] + row["update_s"] <= 1.1 * row["iteration_s"]
            assert row["env_s"] + row["update_s"] + row["other_s"] == pytest.approx(row["iteration_s"])
    assert "| 3m | mappo.py | GPU | no | 32 |" in proc.stdout and "| 3m | 1 | 4 |" in proc.stdout  # the tables
