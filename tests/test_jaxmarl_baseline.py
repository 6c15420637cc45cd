"""benchmark/jaxmarl/jaxmarl_baseline.py, checked without a JaxMARL checkout. Actor snapshots: the hook goes on the first
optimiser chain built (the actor's) only, leaves the optimiser's steps unchanged, and saves the parameters that each
update's last step leaves, inside a jitted scan as in the baseline. Rows: what the baseline's wandb.log calls become,
for the SMAX baseline and for the Hanabi ones (no win rate); --values; device_runs.sh's choice of run and unpacking."""

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import serialization

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "benchmark", "jaxmarl", "jaxmarl_baseline.py")


def load_runner():
    spec = importlib.util.spec_from_file_location("jaxmarl_baseline", RUNNER)
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
        snaps.on_step(1, jax.tree.map(np.asarray, net_params(1)))


def test_snapshots_arriving_out_of_order_keep_their_update(tmp_path):
    """The transform's callback is unordered: each step's parameters carry the step's number, so an update's
    snapshot is the parameters its last step left, whatever the order they reach the host in."""
    snaps = load_runner().ActorSnapshots(str(tmp_path), steps_per_update=2, batch_steps=100, num_actions=3)
    params = {n: jax.tree.map(lambda x, n=n: np.asarray(x) + n, net_params(3)) for n in range(4)}
    for step in (3, 0, 2, 1):
        snaps.on_step(step, params[step])
    index = json.loads((tmp_path / "index.json").read_text())
    assert [(r["update"], r["step"], r["file"]) for r in index] == [
        (0, 100, "actor_0000.msgpack"),
        (1, 200, "actor_0001.msgpack"),
    ]
    for row, step in zip(index, (1, 3)):
        saved = serialization.msgpack_restore((tmp_path / row["file"]).read_bytes())
        for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(params[step])):
            np.testing.assert_array_equal(a, b)


def test_rows_of_a_hanabi_baseline(tmp_path):
    runner = load_runner()
    out = tmp_path / "ippo_seed1.json"
    args = runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--baseline", "ippo_ff_hanabi", "--out", str(out)])
    rec = runner.Recorder(args, {"NUM_ENVS": 4}, seed=1, num_updates=2, batch_steps=100)
    rec.log({"returns": np.float32(1.5), "env_step": np.int32(0), "actor_loss": np.float32(-0.25)})
    assert not rec.done.is_set()
    rec.log({"returns": np.float32(2.0), "env_step": np.int32(100)})
    assert rec.done.is_set()
    with open(out) as f:
        data = json.load(f)
    assert data["meta"]["baseline"] == "ippo_ff_hanabi" and data["meta"]["seed"] == 1 and data["meta"]["map"] is None
    origin = data["meta"]["provenance"]  # the command, the package versions, the checkout (not a git one here: None)
    assert origin["command"][0] == sys.executable and origin["packages"]["jax"] == importlib.metadata.version("jax")
    assert origin["checkout"]["commit"] is None and origin["python"] and origin["machine"]
    assert [(r["update"], r["step"], r["logged_env_step"]) for r in data["rows"]] == [(0, 100, 0), (1, 200, 100)]
    assert [r["episodic_return"] for r in data["rows"]] == [1.5, 2.0]
    assert all(np.isnan(r["win_rate"]) for r in data["rows"])
    assert data["rows"][0]["actor_loss"] == -0.25 and "actor_loss" not in data["rows"][1]
    assert [line.startswith('{"update": ') for line in out.read_text().splitlines()].count(True) == 2  # a row a line


def test_rows_of_the_smax_baseline_stop_at_the_threshold(tmp_path, monkeypatch):
    runner = load_runner()
    out = tmp_path / "3m.json"
    argv = ["--jaxmarl-dir", str(tmp_path), "--out", str(out), "--stop-at-win-rate", "0.8", "--extra-updates", "1"]
    rec = runner.Recorder(runner.parse_args(argv), {}, seed=0, num_updates=10, batch_steps=100)

    class LeftTheProcess(Exception):
        pass

    def leave(code):
        raise LeftTheProcess(code)

    monkeypatch.setattr(runner.os, "_exit", leave)  # the runner leaves from inside the baseline's scan
    rec.log({"returns": 0.5, "env_step": 0, "win_rate": float("nan")})  # no episode ended: NaN, not a crossing
    rec.log({"returns": 0.9, "env_step": 100, "win_rate": 0.85})
    with pytest.raises(LeftTheProcess, match="^0$"):
        rec.log({"returns": 0.7, "env_step": 200, "win_rate": 0.6})  # one extra update after the crossing, then exit
    with open(out) as f:
        data = json.load(f)
    assert data["meta"]["map"] == "3m" and data["meta"]["baseline"] == "mappo_rnn_smax"
    assert data["meta"]["reached"]["update"] == 1 and data["meta"]["reached"]["step"] == 200
    assert [r["win_rate"] for r in data["rows"]][1:] == [0.85, 0.6]


def test_stop_at_step_ends_at_the_last_update_within_the_budget(tmp_path, monkeypatch):
    """--stop-at-step 350 with 100-step updates: three rows (300 env steps), then the process leaves; the config's
    TOTAL_TIMESTEPS (its schedule) is left alone and the stop is in the meta."""
    runner = load_runner()
    out = tmp_path / "mappo_seed1.json"
    argv = ["--jaxmarl-dir", str(tmp_path), "--baseline", "mappo_ff_hanabi", "--out", str(out), "--stop-at-step", "350"]
    config = {"TOTAL_TIMESTEPS": 1e10}
    rec = runner.Recorder(runner.parse_args(argv), config, seed=1, num_updates=10**8, batch_steps=100)

    def leave(code):
        raise SystemExit(f"left with {code}")

    monkeypatch.setattr(runner.os, "_exit", leave)
    rec.log({"returns": 1.0, "env_step": 0})
    rec.log({"returns": 1.0, "env_step": 100})
    with pytest.raises(SystemExit, match="left with 0"):
        rec.log({"returns": 1.0, "env_step": 200})
    data = json.loads(out.read_text())
    assert [r["step"] for r in data["rows"]] == [100, 200, 300] and data["meta"]["stop_at_step"] == 350
    assert data["config"]["TOTAL_TIMESTEPS"] == 1e10


@pytest.mark.parametrize(
    "flag, message",
    [
        (["--snapshot-dir", "snaps"], "Hanabi has no win rate"),
        (["--stop-at-win-rate", "0.8"], "Hanabi has no win rate"),
        (["--values", "mava"], "values for mappo_rnn_smax's config, not mappo_ff_hanabi's"),
    ],
)
def test_hanabi_baselines_refuse_the_smax_only_flags(tmp_path, flag, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load_runner().parse_args(["--jaxmarl-dir", str(tmp_path), "--baseline", "mappo_ff_hanabi", "--out", "x.json", *flag])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_values_override_the_config_and_set_overrides_them(tmp_path, monkeypatch):
    """--values mava: Mava's SMAX sweep values reach hydra's compose after the map and before --set (the last wins)"""
    composed = {}
    hydra = types.ModuleType("hydra")  # a stand-in for hydra (not in the test venv): records what compose is given
    hydra.initialize_config_dir = lambda config_dir, version_base: contextlib.nullcontext()
    hydra.compose = lambda config_name, overrides: composed.update(name=config_name, overrides=overrides)
    monkeypatch.setitem(sys.modules, "hydra", hydra)
    runner = load_runner()
    argv = ["--jaxmarl-dir", str(tmp_path), "--map", "10m_vs_11m", "--out", "x.json"]
    runner.compose_config(str(tmp_path), "mappo_homogenous_rnn_smax", runner.parse_args(argv))
    assert composed["overrides"] == ["MAP_NAME=10m_vs_11m"]  # "own": the config as it is
    args = runner.parse_args(argv + ["--values", "mava", "--set", "LR=0.001"])
    runner.compose_config(str(tmp_path), "mappo_homogenous_rnn_smax", args)
    mava = ["LR=0.004", "ANNEAL_LR=False", "UPDATE_EPOCHS=2", "NUM_MINIBATCHES=2", "MAX_GRAD_NORM=0.5"]
    assert composed["overrides"] == ["MAP_NAME=10m_vs_11m", *mava, "LR=0.001"]


def toy_train(tx, log, steps_per_update=2, updates=3):
    """The baseline's shape in small: a jitted scan of updates, each a few optimiser steps of the actor's (hooked)
    chain, then an unordered io_callback that hands the update's metrics to `log` (the baseline's wandb.log)."""

    def train(key):
        params = {"params": {"Dense_0": {"kernel": jax.random.normal(key, (4, 5))}, "Dense_1": {"bias": jnp.ones(3)}}}

        def step(carry, _):
            p, s = carry
            updates_, s = tx.update(jax.grad(lambda q: sum(jnp.sum(jnp.sin(x)) for x in jax.tree.leaves(q)))(p), s, p)
            return (optax.apply_updates(p, updates_), s), None

        def update(carry, _):
            (p, s), n = jax.lax.scan(step, carry[0], None, steps_per_update)[0], carry[1]
            metric = {"env_step": n * 100, "returns": p["params"]["Dense_0"]["kernel"].sum(), "win_rate": n / 10.0}
            jax.experimental.io_callback(lambda m: log({k: np.asarray(v) for k, v in m.items()}), None, metric)
            return ((p, s), n + 1), None

        jax.lax.scan(update, ((params, tx.init(params)), 0), None, updates)

    return train


def test_vmapped_seeds_get_the_rows_and_snapshots_each_gets_alone(tmp_path, monkeypatch):
    """--seed 1 2 3 runs the baseline's program vmapped over the seeds' keys: each seed's rows (SeedRows' io_callback in
    place of the baseline's, as main puts it) and actor snapshots, both routed by the seed's index on the vmapped
    axis, are those of that seed's run alone."""
    runner = load_runner()
    runner.jax_version = lambda: "0.11.2"  # the toy runs on jax 0.10.2 too; the real baseline needs 0.11
    seeds, sizes = (1, 2, 3), dict(steps_per_update=2, batch_steps=100, num_actions=3)
    argv = ["--jaxmarl-dir", str(tmp_path), "--seed", *map(str, seeds), "--snapshot-dir", str(tmp_path / "vmap_{seed}")]
    args = runner.parse_args([*argv, "--out", str(tmp_path / "vmap_{seed}.json")])
    recs = [runner.Recorder(args, {}, s, 3, 100, args.out.format(seed=s)) for s in seeds]
    snaps = [runner.ActorSnapshots(args.snapshot_dir.format(seed=s), **sizes) for s in seeds]
    tx = optax.chain(optax.adam(0.1), runner.snapshot_transform(snaps, runner.SEED_AXIS))
    rows = runner.SeedRows(recs)
    monkeypatch.setattr(jax.experimental, "io_callback", rows.io_callback)
    train = toy_train(tx, rows.log)
    jax.jit(jax.vmap(train, axis_name=runner.SEED_AXIS))(jnp.stack([jax.random.PRNGKey(s) for s in seeds]))
    jax.effects_barrier()
    monkeypatch.undo()

    finals = []
    for seed in seeds:  # alone
        alone = runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--seed", str(seed), "--out", str(tmp_path / "a.json")])
        rec, snap = runner.Recorder(alone, {}, seed, 3, 100), runner.ActorSnapshots(str(tmp_path / f"alone_{seed}"), **sizes)
        jax.jit(toy_train(optax.chain(optax.adam(0.1), snap.transform()), rec.log))(jax.random.PRNGKey(seed))
        jax.effects_barrier()
        vmapped = json.loads((tmp_path / f"vmap_{seed}.json").read_text())
        assert vmapped["meta"]["seed"] == seed and [r["update"] for r in vmapped["rows"]] == [0, 1, 2]
        for a, b in zip(vmapped["rows"], rec.rows):
            np.testing.assert_allclose(a["episodic_return"], b["episodic_return"], rtol=1e-5)
        index = json.loads((tmp_path / f"vmap_{seed}" / "index.json").read_text())
        assert [r["update"] for r in index] == [0, 1, 2]
        for name in ("actor_0000.msgpack", "actor_0002.msgpack"):
            restore = [
                serialization.msgpack_restore((tmp_path / d / name).read_bytes()) for d in (f"vmap_{seed}", f"alone_{seed}")
            ]
            for a, b in zip(*map(jax.tree.leaves, restore)):
                np.testing.assert_allclose(a, b, rtol=1e-5)
        finals.append(rec.rows[-1]["episodic_return"])
    assert len(set(finals)) == 3  # the seeds differ, so a seed's rows or snapshots sent to another would show


def test_seed_rows_refuse_a_row_from_outside_their_callback(tmp_path):
    """A row that reaches SeedRows.log without its io_callback (the baseline logging some other way) has no seed
    index: refused, not sent to whichever seed's turn it might be."""
    runner = load_runner()
    runner.jax_version = lambda: "0.11.2"
    args = runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--seed", "1", "2", "--out", str(tmp_path / "x_{seed}.json")])
    rows = runner.SeedRows([runner.Recorder(args, {}, s, 3, 100, args.out.format(seed=s)) for s in (1, 2)])
    with pytest.raises(AssertionError, match="whose seed"):
        rows.log({"env_step": 0, "returns": 1.0})


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--out", "x.json"], "must hold {seed}"),
        (["--out", "x_{seed}.json", "--snapshot-dir", "snaps"], "must hold {seed}"),
        (["--out", "x_{seed}.json", "--stop-at-win-rate", "0.8"], "one seed at a time"),
    ],
)
def test_several_seeds_refuse_shared_files_and_stops(tmp_path, argv, message, capsys):
    runner = load_runner()
    runner.jax_version = lambda: "0.11.2"
    with pytest.raises(SystemExit) as exit_info:
        runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--seed", "1", "2", *argv])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_several_seeds_need_jax_0_11(tmp_path, capsys):
    """With jax 0.10.2 (this machine's CPU venvs) the vmapped baseline hung on its host callbacks: refused there, as
    one seed is not"""
    runner = load_runner()
    argv = ["--jaxmarl-dir", str(tmp_path), "--out", "x_{seed}.json", "--seed"]
    for version, seeds, refused in [("0.10.2", ["1", "2"], True), ("0.10.2", ["1"], False), ("0.11.2", ["1", "2"], False)]:
        runner.jax_version = lambda version=version: version
        if refused:
            with pytest.raises(SystemExit) as exit_info:
                runner.parse_args(argv + seeds)
            assert exit_info.value.code == 2 and "need jax >= 0.11" in capsys.readouterr().err
        else:
            assert runner.parse_args(argv + seeds).seed == [int(s) for s in seeds]


TOY_BASELINE = """
import jax
import jax.numpy as jnp
import optax


def make_train(config):
    tx = optax.adam(0.1)

    def train(key):
        key, init_key = jax.random.split(key)
        params = {"w": jax.random.normal(init_key, (4, 5))}

        def _update_step(carry, unused):  # the baseline's loop body: the update count last, the PRNG key carried
            (params, opt_state, key), update_steps = carry
            key, noise_key = jax.random.split(key)
            noise = jax.random.normal(noise_key, (4, 5))
            steps = jax.lax.scan(lambda p, _: ({"w": p["w"] * 0.9}, None), params, None, 3)[0]  # an inner scan runs as is
            grads = jax.grad(lambda p: jnp.sum(jnp.sin(p["w"] * noise)))(steps)
            updates, opt_state = tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            metric = {"env_step": update_steps * 100, "returns": params["w"].sum(), "win_rate": noise[0, 0]}
            jax.experimental.io_callback(lambda m: log(m), None, metric)
            return ((params, opt_state, key), update_steps + 1), metric

        carry = ((params, tx.init(params), key), 0)
        final, _ = jax.lax.scan(_update_step, carry, None, config["NUM_UPDATES"])
        return {"runner_state": final}

    return train
"""


def toy_baseline(log):
    """A module shaped like mappo_rnn_smax where the runner looks: make_train(config) -> train(key), whose loop is a
    scan of `_update_step` over NUM_UPDATES with the update count last in its carry, each update logging one row"""
    module = types.ModuleType("toy_baseline")
    exec(TOY_BASELINE, module.__dict__)
    module.log = lambda m: log({k: np.asarray(v) for k, v in m.items()})
    return module


def test_checkpointed_run_stops_and_goes_on_to_the_rows_of_one_run(tmp_path):
    """--checkpoint: the toy baseline's loop run one update at a time; SIGINT during update 2 stops it after that
    update (saved, rows kept); the same command goes on from there, and the rows and the final parameters are those
    of the run in one jitted scan. A checkpoint is refused by a run of another seed."""
    runner = load_runner()
    config, seed, updates = {"NUM_UPDATES": 6, "SEED": 1}, 1, 6
    straight = runner.Recorder(runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--out", str(tmp_path / "a.json")]),
                               config, seed, updates, 100)  # fmt: skip
    final = jax.jit(toy_baseline(straight.log).make_train(dict(config)))(jax.random.PRNGKey(seed))["runner_state"]
    jax.effects_barrier()

    ckpt, out = tmp_path / "run.npz", tmp_path / "b.json"
    argv = ["--jaxmarl-dir", str(tmp_path), "--out", str(out), "--checkpoint", str(ckpt), "--checkpoint-every", "3"]
    args = runner.parse_args(argv)
    first = runner.Recorder(args, config, seed, updates, 100)

    def log_then_stop(row):
        first.log(row)
        if int(row["env_step"]) == 100:  # update 1 (0-based): a Ctrl-C while it runs
            os.kill(os.getpid(), signal.SIGINT)

    resumed = []
    handler = signal.getsignal(signal.SIGINT)  # Python's, or SIG_IGN where a shell started the tests in the background
    done = runner.run_in_sittings(args, toy_baseline(log_then_stop), config, seed, None, resumed.append)
    assert done == 2 and resumed == [] and [r["update"] for r in first.rows] == [0, 1]
    assert signal.getsignal(signal.SIGINT) is handler  # the handler is given back

    second = runner.Recorder(args, config, seed, updates, 100)
    done = runner.run_in_sittings(args, toy_baseline(second.log), config, seed, None, second.resume)
    jax.effects_barrier()
    assert done == updates and second.done.is_set()
    data = json.loads(out.read_text())
    assert [r["update"] for r in data["rows"]] == list(range(updates))
    assert [s["from_update"] for s in data["meta"]["sittings"]] == [0, 2]
    assert data["rows"][1]["wall_time"] <= data["rows"][2]["wall_time"]  # counts on from the first sitting
    for a, b in zip(straight.rows, data["rows"]):
        assert a["episodic_return"] == pytest.approx(b["episodic_return"], rel=1e-6) and a["win_rate"] == b["win_rate"]
    with np.load(ckpt) as f:  # saved at update 2 (the stop), then 3 and 6 (--checkpoint-every): the final carry
        assert int(f["update"]) == updates
        for i, leaf in enumerate(jax.tree.leaves(final)):
            np.testing.assert_allclose(f[f"leaf_{i:05d}"], np.asarray(leaf), rtol=1e-6)

    other = runner.Recorder(args, dict(config, SEED=2), 2, updates, 100)
    with pytest.raises(SystemExit, match="not a checkpoint of this run"):
        runner.run_in_sittings(args, toy_baseline(other.log), dict(config, SEED=2), 2, None, other.resume)


def test_going_on_needs_the_rows_before_the_checkpoint(tmp_path):
    """A checkpoint after 3 updates with --out gone, or holding fewer rows, cannot go on: the run's rows would have a
    hole. Rows after the checkpoint (trained, then lost with the stop) are dropped: they are trained again."""
    runner = load_runner()
    out = tmp_path / "run.json"
    args = runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--out", str(out), "--checkpoint", str(tmp_path / "c.npz")])
    with pytest.raises(SystemExit, match="is gone"):
        runner.Recorder(args, {}, 1, 10, 100).resume(3)
    rows = [dict(update=u, wall_time=10.0 * (u + 1)) for u in range(5)]
    out.write_text(json.dumps(dict(meta=dict(start_unix_time=1.0), rows=rows[:2])))
    with pytest.raises(SystemExit, match="lacks rows"):
        runner.Recorder(args, {}, 1, 10, 100).resume(3)
    out.write_text(json.dumps(dict(meta=dict(start_unix_time=1.0), rows=rows)))
    rec = runner.Recorder(args, {}, 1, 10, 100)
    rec.resume(3)
    assert [r["update"] for r in rec.rows] == [0, 1, 2] and rec.wall_offset == 30.0 and not rec.done.is_set()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--out", "x.csv"], "--out a .json"),
        (["--out", "x.json", "--baseline", "ippo_ff_hanabi"], "mappo_rnn_smax"),
        (["--out", "x.json", "--stop-at-win-rate", "0.8"], "run it in one go"),
        (["--out", "x.json", "--checkpoint-every", "0"], "at least 1"),
    ],
)
def test_checkpoint_refuses_what_cannot_go_on(tmp_path, argv, message, capsys):
    runner = load_runner()
    with pytest.raises(SystemExit) as exit_info:
        runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--checkpoint", "c.npz", *argv])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def device_runs_in(root) -> str:
    """A copy of benchmark/jaxmarl/device_runs.sh and the rule it sources at ROOT/benchmark/jaxmarl (it cds to ROOT and
    writes there)"""
    script = root / "benchmark" / "jaxmarl" / "device_runs.sh"
    script.parent.mkdir(parents=True)
    for name in ("device_runs.sh", "results_folder.sh"):
        shutil.copy(os.path.join(ROOT, "benchmark", "jaxmarl", name), script.parent / name)
    return script


def test_device_runs_by_default_run_the_first_missing_run_alone(tmp_path):
    """device_runs.sh run with MAPS and SEEDS unset runs one run, the first of the hard maps' seeds 1-3 not yet in the
    results folder (the GPU fits one 10M run per call); with none missing it runs nothing and says so."""
    script = device_runs_in(tmp_path)
    results = tmp_path / "benchmark" / "results" / "smax_hard_10m_jaxmarl"
    results.mkdir(parents=True)
    fake = tmp_path / "python"  # pip succeeds; the baseline records its arguments and fails, so nothing is evaluated
    fake.write_text('#!/bin/sh\n[ "$2" = pip ] && exit 0\necho "$@" >>"$ARGS_LOG"\nexit 3\n')
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake), OUT=str(tmp_path / "out"), ARGS_LOG=str(tmp_path / "args"), RUN_SECONDS="20")
    env.pop("MAPS", None), env.pop("SEEDS", None)
    run = lambda: subprocess.run(["bash", str(script), "run"], env=env, capture_output=True, text=True)  # noqa: E731
    done = [("5m_vs_6m", 1), ("5m_vs_6m", 2), ("5m_vs_6m", 3), ("3s5z_vs_3s6z", 1), ("3s5z_vs_3s6z", 3)]
    for map_, seed in done:
        (results / f"mappo_rnn_smax_{map_}_seed{seed}.json.gz").write_bytes(b"")
    out = run()
    assert "running 3s5z_vs_3s6z, seeds 2" in out.stdout, out.stderr
    baseline_args = (tmp_path / "args").read_text().split()
    assert baseline_args[baseline_args.index("--map") + 1 :][:3] == ["3s5z_vs_3s6z", "--seed", "2"]
    assert "failed or cut short: mappo_rnn_smax_3s5z_vs_3s6z_seed2" in out.stdout
    for map_, seed in [("3s5z_vs_3s6z", 2)] + [("10m_vs_11m", s) for s in (1, 2, 3)]:
        (results / f"mappo_rnn_smax_{map_}_seed{seed}.json.gz").write_bytes(b"")
    out = run()
    assert out.returncode == 2 and "nothing to run" in out.stderr
    env["JAXMARL_VALUES"] = "mava"  # Mava's values: their own folder, empty, so its first run, with the values
    out = run()
    assert "running 5m_vs_6m, seeds 1" in out.stdout, out.stderr
    baseline_args = (tmp_path / "args").read_text().splitlines()[-1].split()
    assert baseline_args[baseline_args.index("--values") + 1] == "mava"
    env["JAXMARL_VALUES"] = "tuned"
    out = run()
    assert out.returncode == 2 and "JAXMARL_VALUES: own or mava" in out.stderr
    env["JAXMARL_VALUES"], env["SMAX_WHEEL"] = "mava", "/work/jaxmarl-0.0.2"  # a folder of this machine: the kit's copy runs
    (tmp_path / ".device" / "smax-wheel" / "jaxmarl-0.0.2.dist-info").mkdir(parents=True)
    out = run()
    assert out.returncode == 2 and "SMAX_WHEEL: prepare with it first" in out.stderr
    (tmp_path / ".device" / "smax-wheel" / "jaxmarl" / "environments" / "smax").mkdir(parents=True)
    (tmp_path / "benchmark/results/smax_hard_10m_mava_smax002_jaxmarl/mappo_rnn_smax_5m_vs_6m_seed1.json.gz").parent.mkdir()
    (tmp_path / "benchmark/results/smax_hard_10m_mava_smax002_jaxmarl/mappo_rnn_smax_5m_vs_6m_seed1.json.gz").write_bytes(b"")
    out = run()  # its own folder: the first run missing there
    assert "running 5m_vs_6m, seeds 2" in out.stdout, out.stderr
    baseline_args = (tmp_path / "args").read_text().splitlines()[-1].split()
    assert baseline_args[baseline_args.index("--smax-wheel") + 1] == str(tmp_path / ".device" / "smax-wheel")


def test_unpack_puts_each_run_in_the_archives_folder(tmp_path):
    """device_runs.sh unpack: the runs of the archive go to its results folder (JaxMARL's own config, or Mava's values
    on it), each whole (its rows and both evaluations), except one this machine has already; every log is appended."""
    script = device_runs_in(tmp_path / "repo")
    there = tmp_path / "there"
    folder = there / "benchmark" / "results" / "smax_hard_10m_mava_jaxmarl"
    folder.mkdir(parents=True)
    for seed in (1, 2):
        for end in (".json.gz", "_greedy.json", "_sampled.json", ".log"):
            (folder / f"mappo_rnn_smax_5m_vs_6m_seed{seed}{end}").write_text(f"there {seed}")
    archive = tmp_path / "smax_hard_jaxmarl_gpu.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="benchmark/results/smax_hard_10m_mava_jaxmarl")
    here = tmp_path / "repo" / "benchmark" / "results" / "smax_hard_10m_mava_jaxmarl"
    here.mkdir(parents=True)
    (here / "mappo_rnn_smax_5m_vs_6m_seed1.json.gz").write_text("here")
    (here / "mappo_rnn_smax_5m_vs_6m_seed1.log").write_text("here\n")
    done = subprocess.run(["bash", str(script), "unpack", str(archive)], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0 and "kept this machine's mappo_rnn_smax_5m_vs_6m_seed1" in done.stdout, done.stderr
    assert (here / "mappo_rnn_smax_5m_vs_6m_seed1.json.gz").read_text() == "here"
    assert [(here / f"mappo_rnn_smax_5m_vs_6m_seed2{end}").read_text() for end in (".json.gz", "_sampled.json")] == [
        "there 2"
    ] * 2
    assert (here / "mappo_rnn_smax_5m_vs_6m_seed1.log").read_text() == "here\nthere 1"
    assert not (here.parent / "smax_hard_10m_jaxmarl").exists()  # JaxMARL's own folder untouched
    other = tmp_path / "other.tar.gz"  # an archive of something else: refused, nothing made
    with tarfile.open(other, "w:gz") as tar:
        tar.add(script, arcname="benchmark/jaxmarl/device_runs.sh")
    refused = subprocess.run(["bash", str(script), "unpack", str(other)], capture_output=True, text=True)
    assert refused.returncode == 2 and "not an archive of device_runs.sh run" in refused.stderr
    assert sorted(p.name for p in here.parent.iterdir()) == ["smax_hard_10m_mava_jaxmarl"]


def test_ours_unpack_replaces_kept_and_moves_stale_runs_aside(tmp_path):
    """device_runs.sh ours-unpack: each archive's kept/ folder replaces this machine's (a run finished there leaves no
    .pt of it here), this machine's runs/ of the unpacked runs move to runs_before_unpack/ (they are behind), other
    runs/ stay; an archive of anything else is refused with exit 2."""
    script = device_runs_in(tmp_path / "repo")
    results = tmp_path / "repo" / "benchmark" / "results" / "smax_hard_10m_paper"
    (results / "kept").mkdir(parents=True)
    for name in ("5m_vs_6m__mappo_rnn__1__7.pt", "5m_vs_6m__mappo_rnn__2__8.pt"):
        (results / "kept" / name).write_text("here")
    for name in ("5m_vs_6m__mappo_rnn__1__7", "10m_vs_11m__mappo_rnn__1__9"):
        (results / "runs" / name).mkdir(parents=True)
    there = tmp_path / "there" / "benchmark" / "results" / "smax_hard_10m_paper" / "kept"
    there.mkdir(parents=True)
    for name in ("5m_vs_6m__mappo_rnn__1__7.json.gz", "5m_vs_6m__mappo_rnn__2__8.pt", "machines.json"):
        (there / name).write_text("there")
    archive = tmp_path / "smax_hard_ours_paper.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(there, arcname="benchmark/results/smax_hard_10m_paper/kept")
    unpack = lambda *a: subprocess.run(["bash", str(script), "ours-unpack", *map(str, a)], capture_output=True, text=True)  # noqa: E731
    done = unpack(archive)
    assert done.returncode == 0, done.stderr
    kept = {p.name: p.read_text() for p in (results / "kept").iterdir()}
    assert kept == {
        "5m_vs_6m__mappo_rnn__1__7.json.gz": "there",
        "5m_vs_6m__mappo_rnn__2__8.pt": "there",
        "machines.json": "there",
    }
    assert sorted(p.name for p in (results / "runs").iterdir()) == ["10m_vs_11m__mappo_rnn__1__9"]
    assert [p.name for p in (results / "runs_before_unpack").iterdir()] == ["5m_vs_6m__mappo_rnn__1__7"]
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        tar.add(there, arcname="somewhere/else")
    refused = unpack(other)
    assert refused.returncode == 2 and "not an archive of ours" in refused.stderr
    assert unpack().returncode == 2


def fake_wheel(tmp_path, version="9.9.9"):
    """an unzipped 'jaxmarl VERSION' wheel whose SMAX is the installed one's, marked: WHEEL_MARKER in its package"""
    installed = importlib.util.find_spec("jaxmarl").submodule_search_locations[0]
    smax = tmp_path / "wheel" / "jaxmarl" / "environments" / "smax"
    shutil.copytree(os.path.join(installed, "environments", "smax"), smax)
    with open(smax / "__init__.py", "a") as f:
        f.write("\nWHEEL_MARKER = 1\n")
    info = tmp_path / "wheel" / f"jaxmarl-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: jaxmarl\nVersion: {version}\n")
    return tmp_path / "wheel"


def test_smax_wheel_replaces_the_smax_package_only(tmp_path):
    """--smax-wheel: jaxmarl.environments.smax and its modules come from the wheel, the rest of jaxmarl from where it
    was; an env of the wheel's SMAX plays; jax.tree_map (called by releases before 0.0.3) is jax.tree.map"""
    wheel = fake_wheel(tmp_path)
    code = f"""
import sys
sys.path.insert(0, {os.path.dirname(RUNNER)!r})
from jaxmarl_baseline import smax_from_wheel
print(smax_from_wheel({str(wheel)!r}))
import jax, jaxmarl
import jaxmarl.environments.multi_agent_env as base
import jaxmarl.environments.smax as smax
from jaxmarl.environments.smax import smax_env
env = smax.HeuristicEnemySMAX(scenario=smax.map_name_to_scenario("3m"))
obs, state = env.reset(jax.random.PRNGKey(0))
print(smax.WHEEL_MARKER, smax_env.__file__.startswith({str(wheel)!r}), base.__file__.startswith({str(wheel)!r}))
print(obs["ally_0"].shape[0] > 0, jax.tree_map(lambda x: x + 1, {{"a": 1}}))
try:  # a second finder would come after the first import: refused
    smax_from_wheel({str(wheel)!r})
except SystemExit as e:
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()  # jaxmarl's import prints between
    assert lines[0] == "jaxmarl 9.9.9" and lines[-3:-1] == ["1 True False", "True {'a': 2}"]
    assert lines[-1] == "error: jaxmarl's SMAX is imported already; take another release's before jaxmarl is imported"


def test_smax_wheel_refuses_what_is_not_an_unzipped_wheel(tmp_path, capsys):
    """the runner needs the wheel's dist-info (its release) and its SMAX package; the Hanabi baselines refuse the flag;
    the greedy evaluation plays the SMAX its run's meta names, so a run whose wheel is gone fails there too"""
    runner = load_runner()
    wheel = fake_wheel(tmp_path)
    shutil.rmtree(wheel / "jaxmarl-9.9.9.dist-info")
    with pytest.raises(SystemExit, match="not an unzipped jaxmarl wheel"):
        runner.smax_from_wheel(str(wheel))
    with pytest.raises(SystemExit) as exit_info:
        runner.parse_args(["--jaxmarl-dir", str(tmp_path), "--baseline", "ippo_ff_hanabi", "--smax-wheel", "w", "--out", "x"])
    assert exit_info.value.code == 2 and "not for ippo_ff_hanabi" in capsys.readouterr().err
    run = tmp_path / "run.json"
    run.write_text(json.dumps(dict(config={}, meta=dict(smax_wheel=str(tmp_path / "gone")), rows=[])))
    evaluator = os.path.join(os.path.dirname(RUNNER), "jaxmarl_greedy_eval.py")
    argv = ["--jaxmarl-dir", str(tmp_path), "--snapshot-dir", str(tmp_path), "--run-json", str(run), "--out", "e.json"]
    out = subprocess.run([sys.executable, evaluator, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 1 and "gone is not an unzipped jaxmarl wheel" in out.stderr
