import contextlib
import glob
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The benchmark scripts that tests start call a bare `python`: this interpreter's, however pytest was started (an
# activated venv, or its python called by path)
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
# One persistent JAX compilation cache for the whole session, in this process (set before anything imports jax) and in
# every script the tests start: SMAX compiles once.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="cleanmappo_jax_cache_"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")  # the many small compilations too (default: >= 1 s)


def pytest_collection_modifyitems(items):
    """test_mappo_async_seed.py last: its env clients, two processes on 2 cores, then read SMAX from the compilation cache that
    the other files filled instead of compiling it at once, side by side (its SIGINT test: 67 s first, 27 s last)."""
    items.sort(key=lambda item: item.path.name == "test_mappo_async_seed.py")  # a stable sort: the order is kept otherwise


@pytest.fixture(scope="session")
def jax_cache():
    return os.environ["JAX_COMPILATION_CACHE_DIR"]


def load_script(script) -> object:
    """A script as a module: mappo.py -> the module mappo; a path (a mutant written by a test) -> a module of its own"""
    script = str(script)
    if os.path.dirname(script) in ("", str(ROOT)):
        return importlib.import_module(os.path.basename(script)[: -len(".py")])
    spec = importlib.util.spec_from_file_location(Path(script).stem, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def train(tmp_path, monkeypatch):
    """train("mappo.py", "--env-id", "3m", ...): the script's parse_args and train in this process, in tmp_path (no
    interpreter start-up, SMAX from the compilation cache) -> its exit status, 0 when train returned."""
    monkeypatch.chdir(tmp_path)

    def run(script, *flags) -> int:
        module = load_script(script)
        if not hasattr(module, "train"):  # a script without a train function runs as a command
            cmd = [sys.executable, str(ROOT / script), *map(str, flags)]
            return subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=900).returncode
        try:
            module.train(*module.parse_args([str(f) for f in flags]))
        except SystemExit as e:
            return e.code
        return 0

    return run


@pytest.fixture
def run_script(tmp_path, jax_cache):
    """run_script("mappo.py", "--env-id", "3m", ...) in tmp_path on the CPU -> CompletedProcess (text)."""

    def run(script, *args, timeout=600, check=True, env=None):
        full_env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax_cache, **(env or {}))
        cmd = [sys.executable, str(ROOT / script), *map(str, args)]
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout, env=full_env)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{cmd} exited {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
            )
        return proc

    return run


def run_dirs(root) -> list[str]:
    return sorted(d for d in glob.glob(str(Path(root) / "runs" / "*")) if os.path.isdir(d))


def read_scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    """TensorBoard scalars of a run: tag -> [(step, value), ...] in step order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def wait_for_line(proc: subprocess.Popen, wanted, timeout: float = 300) -> str:
    """The first stdout line of a running script for which wanted(line) holds; if the script ends first, a line that
    says how (exit status and stderr), so that the caller's assertion shows it; "" on a timeout."""
    line, deadline = "", time.time() + timeout
    while time.time() < deadline and not wanted(line):
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            return f"exit status {proc.returncode}, stderr: {proc.stderr.read()[-3000:]}"
    return line


def smaclite_missing() -> str:
    """'' when SMAClite imports (or CLEANMAPPO_REQUIRE_SMACLITE=1: its tests then run and fail without it), else the
    reason to skip its tests. Only a missing package or Rtree's missing libspatialindex skips: an install that breaks
    on import in another way fails."""
    if os.environ.get("CLEANMAPPO_REQUIRE_SMACLITE") == "1":
        return ""
    try:
        import smaclite  # noqa: F401
    except (ImportError, OSError) as e:  # not installed, or its Rtree without libspatialindex (OSError)
        return f'SMAClite not installed ({type(e).__name__}: {e}); see README.md, section "Environments" (SMAClite)'
    return ""


def eval_only_win_rate(stdout: str, episodes: int) -> float:
    """The greedy win rate that `--eval-only` printed on SMAX. It must be a count of wins out of `episodes`, and a
    return must come with it."""
    [last] = [line for line in stdout.splitlines() if line.startswith("greedy: ")]
    assert last.startswith("greedy: win_rate=") and " episodic_return=" in last, stdout[-2000:]
    win_rate = float(last.split()[1].split("=")[1])
    wins = win_rate * episodes  # printed to 4 decimals
    assert 0.0 <= win_rate <= 1.0 and abs(wins - round(wins)) <= 0.5e-4 * episodes, last
    return win_rate


@contextlib.contextmanager
def network_namespaces(count: int):
    """count network namespaces, each with one veth interface on a shared bridge and address 10.213.0.<i+1> ->
    [(namespace, interface, address)]; all removed after. Skips the test where they cannot be made (not root)."""
    tag = str(os.getpid() % 100000)
    bridge, made = f"cmbr{tag}", []

    def ip(*args):
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)

    try:
        try:
            ip("link", "add", bridge, "type", "bridge")
        except (OSError, subprocess.CalledProcessError) as e:
            pytest.skip(f"cannot make network namespaces here ({getattr(e, 'stderr', '') or e})")
        ip("link", "set", bridge, "up")
        for i in range(count):
            ns, veth, peer, address = f"cmns{i}_{tag}", f"cmv{i}_{tag}", f"cmb{i}_{tag}", f"10.213.0.{i + 1}"
            ip("netns", "add", ns)
            made.append(ns)
            ip("link", "add", veth, "type", "veth", "peer", "name", peer)
            ip("link", "set", veth, "netns", ns)
            ip("link", "set", peer, "master", bridge)
            ip("link", "set", peer, "up")
            ip("netns", "exec", ns, "ip", "addr", "add", f"{address}/24", "dev", veth)
            ip("netns", "exec", ns, "ip", "link", "set", veth, "up")
            ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")  # a host reaches its own address over its own lo
        yield [(f"cmns{i}_{tag}", f"cmv{i}_{tag}", f"10.213.0.{i + 1}") for i in range(count)]
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
