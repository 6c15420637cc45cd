"""The restructured scripts log the same numbers as before: every non-timing TensorBoard scalar of a few updates
(losses, PopArt statistics, training episodes, greedy evaluations) against tests/golden/, recorded by
tests/record_golden.py at the commit named in each file."""

import json
import os

import numpy as np
import pytest

from conftest import smaclite_missing
from record_golden import ENV_FLAGS, GOLDEN, SCRIPTS, case_name, command, logged

CASES = [(script, env_id) for script in SCRIPTS for env_id in ENV_FLAGS]


@pytest.mark.parametrize("script, env_id", CASES, ids=[case_name(*c) for c in CASES])
def test_same_numbers_as_recorded(script, env_id, jax_cache):
    if env_id.startswith("smaclite/") and smaclite_missing():
        pytest.skip(smaclite_missing())
    golden = json.loads((GOLDEN / f"{case_name(script, env_id)}.json").read_text())
    assert golden["command"] == command(script, env_id), "the recorded case was run with other flags"
    now = logged(script, env_id, env=dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache))
    assert sorted(now) == sorted(golden["scalars"]), "the set of logged tags changed"
    for tag, rows in golden["scalars"].items():
        steps, values = np.array(rows).T
        now_steps, now_values = np.array(now[tag]).T
        np.testing.assert_array_equal(now_steps, steps, err_msg=tag)
        np.testing.assert_allclose(now_values, values, rtol=1e-4, atol=1e-6, err_msg=tag)
