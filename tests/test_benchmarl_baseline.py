"""benchmark/benchmarl/benchmarl_baseline.py, checked without BenchMARL: its csv scalars become one row per iteration
(evaluations only where BenchMARL evaluated), and the speed leaves the evaluations' time out."""

import importlib.util

import pytest

from conftest import ROOT


def load_runner():
    spec = importlib.util.spec_from_file_location(
        "benchmarl_baseline", ROOT / "benchmark" / "benchmarl" / "benchmarl_baseline.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_from_benchmarls_csv_scalars(tmp_path):
    runner = load_runner()
    scalars = {  # three iterations of 6000 frames; an evaluation after the first and the third
        "counters_total_frames": [6000.0, 12000.0, 18000.0],
        "collection_agents_reward_episode_reward_mean": [-0.5, 0.1, 0.4],
        "eval_agents_reward_episode_reward_mean": {0: 0.3, 2: 0.7},
        "timers_total_time": [10.0, 19.0, 30.0],
        "timers_evaluation_time": {0: 1.0, 2: 2.0},
        "train_agents_loss_objective": [1.0, 2.0, 3.0],  # not recorded
    }
    for tag, values in scalars.items():
        items = values.items() if isinstance(values, dict) else enumerate(values)
        (tmp_path / f"{tag}.csv").write_text("".join(f"{i},{v}\n" for i, v in items))
    rows = runner.read_rows(str(tmp_path))
    assert [r["step"] for r in rows] == [6000, 12000, 18000] and isinstance(rows[0]["step"], int)
    assert [r["train_return"] for r in rows] == [-0.5, 0.1, 0.4]
    assert [r.get("eval_return") for r in rows] == [0.3, None, 0.7]
    assert runner.speed(rows) == pytest.approx(18000 / (30.0 - 3.0))  # evaluations left out


def test_bad_arguments_exit_2(capsys):
    runner = load_runner()
    for argv in (["--task", "navigation", "--out", "x.json"], ["--algorithm", "qmix", "--task", "navigation", "--out", "x"]):
        with pytest.raises(SystemExit) as exit_info:
            runner.parse_args(argv)
        assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        runner.parse_args(["--algorithm", "mappo", "--task", "navigation", "--out", "x", "--max-n-frames", "0"])
