"""benchmark/benchmarl/benchmarl_baseline.py, checked without BenchMARL: its csv scalars become one row per iteration
(evaluations only where BenchMARL evaluated), the speed leaves the evaluations' time out, and what a resumed run
needs of its own (rows merged, random generators saved and put back) works."""

import importlib.util
import random

import numpy as np
import pytest
import torch

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
    for bad in (["--max-n-frames", "0"], ["--checkpoint-interval", "0"]):
        with pytest.raises(SystemExit):
            runner.parse_args(["--algorithm", "mappo", "--task", "navigation", "--out", "x", *bad])


def test_a_resumed_runs_rows_merge_by_step():
    runner = load_runner()
    before = [dict(step=6000, train_return=-1.0), dict(step=12000, train_return=-0.5)]
    after = [dict(step=12000, train_return=-0.4), dict(step=18000, train_return=0.2)]  # 12000 run again after a stop
    rows = runner.merge_rows(before, after)
    assert [(r["step"], r["train_return"]) for r in rows] == [(6000, -1.0), (12000, -0.4), (18000, 0.2)]
    assert runner.merge_rows([], after) == after and runner.merge_rows(before, []) == before


def test_generator_states_survive_a_weights_only_checkpoint(tmp_path):
    runner = load_runner()
    torch.manual_seed(3), np.random.seed(3), random.seed(3)
    torch.rand(5), np.random.rand(5), random.random()  # somewhere past the seed
    torch.save(dict(generators=runner.generator_states()), tmp_path / "c.pt")
    expected = (torch.rand(4), np.random.rand(4), np.random.randn(), [random.random() for _ in range(4)])
    torch.manual_seed(0), np.random.seed(0), random.seed(0)  # what run() does on a resume: reseeded
    runner.set_generator_states(torch.load(tmp_path / "c.pt", weights_only=True)["generators"])
    got = (torch.rand(4), np.random.rand(4), np.random.randn(), [random.random() for _ in range(4)])
    assert torch.equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    assert got[2] == expected[2] and got[3] == expected[3]


def test_a_new_run_starts_with_nothing_so_far_and_a_resumed_one_with_its_checkpoints():
    runner = load_runner()
    assert runner.so_far(None) == dict(rows=[], wall=0.0, resumed_at=[])
    saved = dict(rows=[dict(step=6000)], wall=12.5, resumed_at=[6000], experiment={}, run={})
    assert runner.so_far(saved) == dict(rows=[dict(step=6000)], wall=12.5, resumed_at=[6000])


def test_the_fine_tuned_config_sets_benchmarls_vmas_values_and_options_win():
    """--config fine_tuned: BenchMARL's VMAS-tuned experiment values (600 envs, 60,000 frames a batch, 45 passes of
    4096, gamma 0.9, 10M frames, 200 evaluation episodes); an option given beside it wins; base sets nothing"""
    runner = load_runner()
    base = ["--algorithm", "mappo", "--task", "navigation", "--out", "x.json"]
    assert runner.experiment_fields(runner.parse_args(base)) == {}
    fields = runner.experiment_fields(runner.parse_args([*base, "--config", "fine_tuned"]))
    assert fields["on_policy_n_envs_per_worker"] == 600 and fields["on_policy_collected_frames_per_batch"] == 60_000
    assert fields["on_policy_n_minibatch_iters"] == 45 and fields["on_policy_minibatch_size"] == 4096
    assert fields["gamma"] == 0.9 and fields["max_n_frames"] == 10_000_000 and fields["evaluation_episodes"] == 200
    given = runner.parse_args([*base, "--config", "fine_tuned", "--max-n-frames", "120000", "--minibatch-size", "512"])
    fields = runner.experiment_fields(given)
    assert fields["max_n_frames"] == 120_000 and fields["on_policy_minibatch_size"] == 512 and fields["gamma"] == 0.9
