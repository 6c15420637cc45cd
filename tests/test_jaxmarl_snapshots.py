"""benchmark/jaxmarl_mappo_rnn.py's actor snapshots, checked without a JaxMARL checkout: the hook goes on the first
optimiser chain built (the actor's) only, leaves the optimiser's steps unchanged, and saves the parameters that each
update's last step leaves, inside a jitted scan as in the baseline."""

import importlib.util
import json
import os
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import serialization

RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmark", "jaxmarl_mappo_rnn.py")


def load_runner():
    spec = importlib.util.spec_from_file_location("jaxmarl_mappo_rnn", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def net_params(head_outputs: int) -> dict:
    kernel0 = jnp.arange(20.0).reshape(4, 5) / 10
    return {"params": {"Dense_0": {"kernel": kernel0, "bias": jnp.ones(5)}, "Dense_1": {"bias": jnp.ones(head_outputs)}}}


def train(tx, params, steps: int):
    """`steps` optimiser steps on sum(p^2) in one jitted scan; returns the parameters after every step"""

    def one(carry, _):
        params, state = carry
        grads = jax.grad(lambda p: sum(jnp.sum(x**2) for x in jax.tree.leaves(p)))(params)
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        return (params, state), params

    _, history = jax.jit(lambda p: jax.lax.scan(one, (p, tx.init(p)), None, steps))(params)
    jax.effects_barrier()
    return [jax.tree.map(lambda x, i=i: np.asarray(x[i]), history) for i in range(steps)]


def test_snapshots_are_the_params_each_update_ends_with(tmp_path):
    runner = load_runner()
    snaps = runner.ActorSnapshots(str(tmp_path), steps_per_update=2, batch_steps=100, num_actions=3)
    baseline = types.SimpleNamespace(optax=optax)
    runner.append_to_actor_chain(baseline, snaps.transform())
    make = lambda: baseline.optax.chain(optax.clip_by_global_norm(0.5), optax.adam(0.1))  # noqa: E731
    actor_tx, critic_tx = make(), make()
    plain_tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(0.1))

    hooked = train(actor_tx, net_params(3), steps=4)
    plain = train(plain_tx, net_params(3), steps=4)
    for a, b in zip(jax.tree.leaves(hooked), jax.tree.leaves(plain)):
        np.testing.assert_array_equal(a, b)  # the hook passes the updates through unchanged
    assert snaps.calls == 4
    train(critic_tx, net_params(1), steps=2)  # the second chain (the critic's) has no hook
    assert snaps.calls == 4

    with open(tmp_path / "index.json") as f:
        index = json.load(f)
    assert [(r["update"], r["step"]) for r in index] == [(0, 100), (1, 200)]
    assert index[0]["wall_time"] <= index[1]["wall_time"]
    for row, expected in zip(index, (plain[1], plain[3])):  # the params after steps 2 and 4
        with open(tmp_path / row["file"], "rb") as f:
            saved = serialization.msgpack_restore(f.read())
        for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(expected)):
            np.testing.assert_allclose(a, b, rtol=0, atol=0)


def test_snapshots_refuse_params_that_are_not_the_actors(tmp_path):
    snaps = load_runner().ActorSnapshots(str(tmp_path), steps_per_update=2, batch_steps=100, num_actions=3)
    with pytest.raises(AssertionError, match="not the actor's parameters"):
        snaps.on_step(jax.tree.map(np.asarray, net_params(1)))
