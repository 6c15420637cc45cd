"""benchmark/report/lbf_rware.py on a hand-made results root: our finished runs (kept summaries), an unfinished
checkpoint (and a local runs/ copy of it, further on, which the committed table leaves out), EPyMARL's runner's output
(a finished <task>_seed<N>.json.gz, an unfinished run's sittings) and a published value; EPyMARL's two metrics checked
against values worked out by hand."""

import gzip
import json
import re
import sys

import pytest
import torch

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmark" / "report"))
import lbf_rware  # noqa: E402

COOP = "Foraging-8x8-2p-2f-coop-v3"
LBF_ID = f"gym/lbforaging:{COOP}"


def summary(seed: int, greedy: list, sampled: list, step: int = 50_000, budget: int = 150_000) -> dict:
    """An eval_summary.json as mappo.py writes it: one evaluation every `step` env steps"""
    evals = [dict(step=step * (i + 1), episodic_return=g, sampled_return=s) for i, (g, s) in enumerate(zip(greedy, sampled))]
    return dict(env_id=LBF_ID, seed=seed, global_step=step * len(evals), budget=budget, evals=evals)


def checkpoint(path, env_id: str, seed: int, rows: list, total: int):
    """A checkpoint as mappo.py saves it, less its networks: 10 envs x 500 steps a rollout"""
    args = dict(env_id=env_id, seed=seed, num_envs=10, num_steps=500, total_timesteps=total)
    torch.save(dict(args=args, global_step=int(rows[-1][0]), iteration=len(rows), evals=rows), path)


def epymarl_out(seed: int, returns: list) -> dict:
    """benchmark/epymarl/epymarl_baseline.py's --out, finished: EPyMARL's first evaluation at t_env 0"""
    rows = [dict(step=50_010 * i, test_return_mean=r, test_return_std=0.1, return_mean=None) for i, r in enumerate(returns)]
    meta = dict(key=f"lbforaging:{COOP}", seed=seed, t_max=150_000, finished=True, evaluation_greedy=False)
    return dict(config=dict(action_selector="soft_policies"), meta=meta, rows=rows)


@pytest.fixture
def results(tmp_path):
    """The results root: mappo.py on COOP (seeds 1 and 2 finished, 3 not) and rware (one seed, not finished),
    EPyMARL on COOP (seeds 1 and 2 finished, 3 in sittings), the committed published JSON plus one made-up value"""
    mappo = tmp_path / "lbf_rware_mappo"
    (mappo / "kept").mkdir(parents=True)
    with gzip.open(mappo / "kept" / f"gym-lbforaging-{COOP}__mappo__1__100.json.gz", "wt") as f:
        json.dump(summary(1, [0.1, 0.5, 0.3], [0.2, 0.6, 0.4]), f)
    with gzip.open(mappo / "kept" / f"gym-lbforaging-{COOP}__mappo__2__200.json.gz", "wt") as f:
        json.dump(summary(2, [0.3, 0.7, 0.9], [0.4, 0.9, 0.8]), f)
    run = mappo / "runs" / f"gym-lbforaging-{COOP}__mappo__3__300"  # a local copy, further on: not committed, left out
    run.mkdir(parents=True)
    (run / "eval_summary.json").write_text(json.dumps(summary(3, [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])))
    # rows: step, greedy win rate, return, wall time, training return, sampled win rate, return
    seed3 = [[50_000, 0.0, 0.9, 1.0, 0.0, 0.0, 0.9]]
    checkpoint(mappo / "kept" / f"gym-lbforaging-{COOP}__mappo__3__300.pt", LBF_ID, 3, seed3, 150_000)
    rware = [[500_000, 0.0, 5.0, 1.0, 0.0, 0.0, 6.0], [1_000_000, 0.0, 7.0, 2.0, 0.0, 0.0, 8.0]]
    rware_name = "gym-rware-rware-tiny-4ag-v2__mappo__1__400.pt"
    checkpoint(mappo / "kept" / rware_name, "gym/rware:rware-tiny-4ag-v2", 1, rware, 40_000_000)

    epymarl = tmp_path / "lbf_rware_epymarl"
    epymarl.mkdir()
    for seed, returns in ((1, [0.0, 0.4, 0.8]), (2, [0.2, 0.6, 0.6])):
        with gzip.open(epymarl / f"{COOP}_seed{seed}.json.gz", "wt") as f:
            json.dump(epymarl_out(seed, returns), f)
    sittings = epymarl / "kept" / f"{COOP}_seed3" / "sittings"  # lbf_rware.sh epymarl-keep's copy of an unfinished run
    sittings.mkdir(parents=True)
    info = dict(test_return_mean=[0.5, {"py/object": "numpy.float64", "value": 0.9}], test_return_mean_T=[0, 50_010])
    info.update(test_return_std=[0.1, 0.1], return_mean=[0.3], return_mean_T=[40_000])
    (sittings / "000.json").write_text(json.dumps(dict(info=info, start_step=0, wall_time=9.0)))

    published = json.loads((ROOT / "benchmark" / "results" / "epymarl_published.json").read_text())
    source = "made-up source, Table 0"
    published["tasks"][COOP]["values"] = [
        dict(algorithm="MAPPO", metric="maximum", value=0.77, plus_minus=0.02, seeds=5, source=source),
        dict(algorithm="MAPPO", metric="average", value=0.55, plus_minus=0.01, seeds=5, source=source),
    ]
    (tmp_path / "epymarl_published.json").write_text(json.dumps(published))
    return tmp_path


def rows_of(md: str, task: str) -> list:
    """A task's rows: its first (which names it) and those after it, up to the next task's"""
    lines = md.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(f"| {task} "))
    rest = lines[first + 1 :]
    end = next((i for i, line in enumerate(rest) if not line.startswith("|  |")), len(rest))
    return [lines[first]] + rest[:end]


def test_metrics_are_epymarls_maximum_and_average_over_the_finished_seeds(results):
    data = lbf_rware.collect(str(results))
    runs = data["sides"]["mappo.py"][COOP]
    assert sorted(runs) == [1, 2, 3] and [runs[s]["finished"] for s in (1, 2, 3)] == [True, True, False]
    use, provisional = lbf_rware.counted(runs)
    assert sorted(use) == [1, 2] and not provisional  # the unfinished seed 3 is not counted
    greedy = lbf_rware.metrics([use[s]["greedy"] for s in (1, 2)])
    # means over the 2 seeds per evaluation: 0.2, 0.6, 0.6 -> the first 0.6 (seeds 0.5 and 0.7); all 6: 2.8 / 6
    assert greedy["maximum"] == pytest.approx(0.6) and greedy["maximum_spread"] == pytest.approx((0.5, 0.7))
    assert greedy["average"] == pytest.approx(2.8 / 6) and greedy["average_spread"] == pytest.approx((0.3, 1.9 / 3))
    sampled = lbf_rware.metrics([use[s]["sampled"] for s in (1, 2)])
    assert sampled["maximum"] == pytest.approx(0.75) and sampled["average"] == pytest.approx(0.55)

    md = lbf_rware.table(str(results))
    mappo, ippo, epymarl, published = rows_of(md, COOP)
    assert "| mappo.py | 2 of 3 finished; seed 3 at 0.05M | 0.15M |" in mappo
    assert mappo.endswith("| 0.75 [0.60, 0.90] | 0.55 [0.40, 0.70] | 0.60 [0.50, 0.70] | 0.47 [0.30, 0.63] |")
    assert "| ippo.py | 0 of 3 finished; seeds 1, 2, 3 not started | - |" in ippo
    # EPyMARL here: sampled only; means 0.1, 0.5, 0.7 -> 0.7 (seeds 0.8, 0.6); all 6: 2.6 / 6; seed 3 in sittings
    assert "2 of 3 finished; seed 3 at 0.05M" in epymarl
    assert epymarl.endswith("| 0.70 [0.60, 0.80] | 0.43 [0.40, 0.47] | - | - |")
    assert "0.77 ± 0.02 (made-up source, Table 0)" in published and "0.55 ± 0.01 (made-up source, Table 0)" in published


def test_a_task_with_no_finished_seed_is_provisional_and_what_is_missing_is_said(results):
    md = lbf_rware.table(str(results))
    mappo = rows_of(md, "rware-tiny-4ag-v2")[0]
    assert "| 0 of 3 finished; seed 1 at 1M; seeds 2, 3 not started | to 1M of 40M, provisional |" in mappo
    assert mappo.endswith("| 8.00 | 7.00 | 7.00 | 6.00 |")  # one seed: no spread
    missing = md[md.index("Missing:") :]
    assert "- ippo.py: no run yet on Foraging-8x8-2p-2f-coop-v3, Foraging-2s-8x8-2p-2f-coop-v3" in missing
    assert "EPyMARL's published values: none recorded for Foraging-2s-8x8-2p-2f-coop-v3" in missing
    assert f"none recorded for {COOP}" not in missing  # it has one


def test_changed_rules_are_flagged_and_the_figure_is_drawn(results):
    md = lbf_rware.table(str(results))
    changed = rows_of(md, "Foraging-10x10-3p-3f-v3")
    assert "rules changed since the paper: not comparable" in changed[0]
    assert all("not comparable" not in line for task in (COOP, "rware-tiny-4ag-v2") for line in rows_of(md, task))
    lbf_rware.main(str(results))
    assert (results / "lbf_rware.md").read_text() == md and (results / "lbf_rware.png").stat().st_size > 0


def test_published_values_name_their_source_and_only_the_changed_task_is_marked():
    """The committed JSON: every value with its source (none typed without one), a task's rules change with its note"""
    published = json.loads((ROOT / "benchmark" / "results" / "epymarl_published.json").read_text())
    assert "_about" in published and set(published["tasks"]) == set(lbf_rware.TASKS)
    for entry in published["tasks"].values():
        for value in entry["values"]:
            assert value["source"] and value["algorithm"] in ("MAPPO", "IPPO") and value["metric"] in ("maximum", "average")
    assert [task for task, entry in published["tasks"].items() if entry["rules_changed"]] == ["Foraging-10x10-3p-3f-v3"]


def test_tasks_seeds_and_budgets_are_lbf_rware_shs():
    script = (ROOT / "benchmark" / "lbf_rware.sh").read_text()
    lbf = re.search(r'LBF_TASKS=\$\{LBF_TASKS-"([^"]*)"\}', script).group(1).split()
    rware = re.search(r'RWARE_TASKS=\$\{RWARE_TASKS-"([^"]*)"\}', script).group(1).split()
    assert list(lbf_rware.TASKS) == lbf + rware and lbf_rware.LBF == lbf
    budgets = re.findall(r"=\$\{TOTAL_TIMESTEPS:-(\d+)\}", script)  # LBF's, then RWARE's
    assert [int(b) for b in budgets] == [lbf_rware.TASKS[lbf[0]], lbf_rware.TASKS[rware[0]]]
    assert all(lbf_rware.TASKS[task] == lbf_rware.TASKS[lbf[0]] for task in lbf)
    specs = re.search(r"EPYMARL_TASKS:-([^}]*)\}", script).group(1).replace("\\\n", " ").split()
    assert [spec.split(":")[1] for spec in specs] == lbf_rware.EPYMARL_TASKS
    assert all(int(spec.split(":")[-1]) == lbf_rware.TASKS[spec.split(":")[1]] + 50_000 for spec in specs)
    assert re.findall(r"\$\{SEEDS:-([^}]*)\}", script) == [" ".join(map(str, lbf_rware.SEEDS))]
