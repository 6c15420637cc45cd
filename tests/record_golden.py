"""Records what the scripts log in their first updates, for tests/test_golden.py.

    python tests/record_golden.py            # every case; SMAClite cases only where SMAClite is installed
    python tests/record_golden.py mappo.py   # the cases of one script

Each case runs a script for a few updates on the CPU with a fixed seed and writes every TensorBoard scalar except
timings to tests/golden/<script>__<env>.json. The files in the repo were recorded at the commit named in their
"commit" field, before the scripts were restructured; the test asserts that the scripts still log the same numbers.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import read_scalars

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SCRIPTS = {
    "mappo.py": [],
    "ippo.py": [],
    "mappo_rnn.py": [],
}  # script -> its own flags (mappo_async_seed.py at zero lag must log mappo.py's and mappo_rnn.py's: test_golden.py)
ENV_FLAGS = {  # a few updates each: 3 on SMAX and MPE, 2 on SMAClite (SMAClite has no 3m: 2s3z is its smallest map here)
    "3m": ["--num-envs", "4", "--num-steps", "60", "--total-timesteps", "720", "--eval-episodes", "8"],
    "simple_spread_v3": ["--num-envs", "8", "--num-steps", "25", "--total-timesteps", "600", "--eval-episodes", "8"],
    "smaclite/2s3z": ["--num-envs", "2", "--num-steps", "40", "--total-timesteps", "160", "--eval-episodes", "2"]
    + ["--eval-interval", "1", "--num-workers", "2"],
}
COMMON = ["--seed", "1", "--no-cuda"]


def case_name(script: str, env_id: str) -> str:
    return f"{script[: -len('.py')]}__{env_id.replace('/', '-')}"


def command(script: str, env_id: str) -> list[str]:
    """The case's command line, relative to the repo root."""
    return [script, "--env-id", env_id, *COMMON, *ENV_FLAGS[env_id], *SCRIPTS[script]]


def scalars(run_dir) -> dict[str, list[list[float]]]:
    """A run's TensorBoard scalars -> {tag: [[step, value], ...]}, timings left out."""
    timings = ("time/", "stats/time_", "charts/SPS")
    return {t: [list(row) for row in rows] for t, rows in sorted(read_scalars(run_dir).items()) if not t.startswith(timings)}


def logged(script: str, env_id: str) -> dict[str, list[list[float]]]:
    """Runs one case as a command, in a temporary folder -> its scalars"""
    with tempfile.TemporaryDirectory() as cwd:
        cmd = [sys.executable, str(ROOT / script), *command(script, env_id)[1:]]
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, timeout=900)
        [run_dir] = (Path(cwd) / "runs").iterdir()
        return scalars(run_dir)


if __name__ == "__main__":
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    for script in sys.argv[1:] or SCRIPTS:
        for env_id in ENV_FLAGS:
            if env_id.startswith("smaclite/"):
                try:
                    import smaclite  # noqa: F401
                except (ImportError, OSError):
                    print(f"skipped {script} {env_id}: SMAClite not installed")
                    continue
            path = GOLDEN / f"{case_name(script, env_id)}.json"
            path.write_text(
                json.dumps(dict(commit=commit, command=command(script, env_id), scalars=logged(script, env_id)), indent=1)
            )
            print(f"wrote {path.relative_to(ROOT)}")
