"""The scripts log the same numbers as before the restructure: every non-timing TensorBoard scalar of a few updates
(losses, PopArt statistics, training episodes, greedy evaluations) against tests/golden/, recorded by
tests/record_golden.py at the commit named in each file. Each case is also the script's smoke test on that env: the
step counter, the first ratio, the evaluation summary. mappo_async_seed.py, synchronous with one env client, must log
the numbers of mappo.py and mappo_rnn.py."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_dirs, smaclite_missing
from record_golden import ENV_FLAGS, GOLDEN, SCRIPTS, case_name, command, scalars

CASES = [(script, env_id) for script in SCRIPTS for env_id in ENV_FLAGS]


@pytest.mark.parametrize("script, env_id", CASES, ids=[case_name(*c) for c in CASES])
def test_same_numbers_as_recorded(train, tmp_path, script, env_id):
    if env_id.startswith("smaclite/") and smaclite_missing():
        pytest.skip(smaclite_missing())
    golden = json.loads((GOLDEN / f"{case_name(script, env_id)}.json").read_text())
    assert golden["command"] == command(script, env_id), "the recorded case was run with other flags"
    assert train(*command(script, env_id)) == 0
    [run] = run_dirs(tmp_path)
    now = scalars(run)
    assert sorted(now) == sorted(golden["scalars"]), "the set of logged tags changed"
    for tag, rows in golden["scalars"].items():
        steps, values = np.array(rows).T
        now_steps, now_values = np.array(now[tag]).T
        np.testing.assert_array_equal(now_steps, steps, err_msg=tag)
        np.testing.assert_allclose(now_values, values, rtol=1e-4, atol=1e-6, err_msg=tag)

    # smoke: global_step counts env steps, one evaluation per update, and the PPO detail that the ratio is exactly 1
    # on the first mini-batch of the first epoch of every update
    cmd = command(script, env_id)
    num_envs, num_steps, total = (int(cmd[cmd.index(flag) + 1]) for flag in ("--num-envs", "--num-steps", "--total-timesteps"))
    batch = num_envs * num_steps
    assert [s for s, _ in now["losses/value_loss"]] == list(range(batch, total + 1, batch))
    assert all(v <= 1e-6 for _, v in now["losses/first_ratio_dev"])
    summary = json.loads((Path(run) / "eval_summary.json").read_text())
    is_smac = not env_id.startswith("simple_")
    assert summary["global_step"] == total and len(summary["evals"]) == total // batch
    assert (summary["median_win_rate"] is not None) == is_smac and ("win_rate" in summary["evals"][0]) == is_smac
    # beside each evaluation, the training score of the rollout before it
    key, tag = ("train_win_rate", "charts/win_rate") if is_smac else ("train_return", "charts/episodic_return")
    logged, rows = dict(now.get(tag, [])), [(e["step"], e.get(key)) for e in summary["evals"]]
    assert any(v is not None for _, v in rows), "no training score in the summary"
    assert all(logged.get(s) == pytest.approx(v, rel=1e-6) if v is not None else s not in logged for s, v in rows)


ZERO_LAG = ["--num-clients", "1", "--num-splits", "1", "--max-policy-lag", "0"]
ASYNC_CASES = [(base, env_id) for base in ("mappo.py", "mappo_rnn.py") for env_id in ENV_FLAGS]


@pytest.mark.parametrize("base, env_id", ASYNC_CASES, ids=[f"async_as_{case_name(*c)}" for c in ASYNC_CASES])
def test_async_at_zero_lag_logs_the_base_scripts_numbers(train, tmp_path, base, env_id):
    """mappo_async_seed.py with one client of one split and --max-policy-lag 0 (acting waits for every update) steps
    the same envs with the same seeds, samples the same actions and makes the same updates as mappo.py (--recurrent:
    as mappo_rnn.py): every scalar recorded for that script, its own stats/ tags aside, must come out the same."""
    if env_id.startswith("smaclite/") and smaclite_missing():
        pytest.skip(smaclite_missing())
    golden = json.loads((GOLDEN / f"{case_name(base, env_id)}.json").read_text())
    recurrent = ["--recurrent"] if base == "mappo_rnn.py" else []
    assert train("mappo_async_seed.py", *command(base, env_id)[1:], *ZERO_LAG, *recurrent) == 0
    [run] = run_dirs(tmp_path)
    now = scalars(run)
    assert set(golden["scalars"]) <= set(now), "a tag of the base script is missing"
    for tag, rows in golden["scalars"].items():
        steps, values = np.array(rows).T
        now_steps, now_values = np.array(now[tag]).T
        np.testing.assert_array_equal(now_steps, steps, err_msg=tag)
        np.testing.assert_allclose(now_values, values, rtol=1e-4, atol=1e-6, err_msg=tag)
    assert all(v == 0 for _, v in now["stats/policy_lag_max"])
