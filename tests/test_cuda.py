"""The --cuda path of every script: networks and updates on the GPU, SMAX on the CPU. Skipped where torch sees no CUDA
device (CI has none); run it on a GPU machine with `python -m pytest tests/test_cuda.py`."""

from pathlib import Path

import pytest
import torch

from conftest import eval_only_win_rate, read_scalars, run_dirs
from test_runs import TWO_UPDATES, check_smoke

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible to torch")

GPU_SMALL = ["--cuda", "--num-envs", "4", "--num-steps", "32", "--update-epochs", "2", "--eval-episodes", "4"]


def check_on_gpu_and_portable(run_script, run: str, script: str) -> None:
    """The saved parameters lived on the GPU; the checkpoint still evaluates on a CPU-only run."""
    path = Path(run) / script.replace(".py", ".pt")
    ckpt = torch.load(path, weights_only=True)  # no map_location: tensors come back on the device they were saved from
    assert {t.device.type for t in ckpt["actor"].values()} == {"cuda"}
    assert {t.device.type for t in ckpt["critic"].values()} == {"cuda"}
    proc = run_script(script, "--eval-only", path, "--eval-episodes", "4", "--no-cuda")
    eval_only_win_rate(proc.stdout, 4)


@pytest.mark.parametrize("script", ["mappo.py", "ippo.py", "mappo_rnn.py"])
def test_cuda_smoke_3m(run_script, tmp_path, script):
    run_script(script, "--env-id", "3m", *GPU_SMALL, *TWO_UPDATES, "--save-model")
    check_smoke(tmp_path, is_smac=True)  # two updates logged, no NaN, first ratio exactly 1 on the GPU too
    [run] = run_dirs(tmp_path)
    check_on_gpu_and_portable(run_script, run, script)


@pytest.mark.parametrize("recurrent", [False, True])
def test_cuda_async_3m(run_script, tmp_path, recurrent):
    """Inference on the GPU in the server thread, the update on the GPU, the clients' envs on the CPU"""
    flags = ["--env-id", "3m", *GPU_SMALL, "--total-timesteps", "256", "--save-model", "--num-clients", "1"]
    run_script("mappo_async_seed.py", *flags, "--max-policy-lag", "0", *(["--recurrent"] if recurrent else []), timeout=300)
    [run] = run_dirs(tmp_path)
    scalars = read_scalars(run)
    assert [s for s, _ in scalars["charts/learning_rate"]] == [128, 256]
    assert all(v == v for _, v in scalars["losses/value_loss"])  # no NaN
    assert all(v <= 1e-5 for _, v in scalars["losses/first_ratio_dev"])  # zero lag: the server's log-probs, again
    check_on_gpu_and_portable(run_script, run, "mappo_async_seed.py")
