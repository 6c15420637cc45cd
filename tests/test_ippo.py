"""ippo.py: MAPPO with a decentralised critic. Its smoke runs are in test_runs.py; here the critic's input."""

from pathlib import Path

import torch

import ippo
from conftest import run_dirs
from test_runs import SMALL


def test_critic_input_is_local_observation_and_id():
    E, A, O, S = 2, 3, 4, 9
    obs, env_state = torch.randn(E, A, O), torch.randn(E, S)
    alive = torch.ones(E, A, dtype=torch.bool)
    x = ippo.critic_input(obs, env_state, alive, torch.eye(A), death_masking=True)
    assert torch.equal(x, torch.cat([obs, torch.eye(A).expand(E, A, A)], dim=-1))
    y = ippo.critic_input(obs, env_state * 100 + 5, alive, torch.eye(A), death_masking=True)
    assert torch.equal(x, y)  # the global state never reaches the critic
    alive[1, 2] = False
    z = ippo.critic_input(obs, env_state, alive, torch.eye(A), death_masking=True)
    assert torch.equal(z[1, 2], torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]))


def test_critic_width_in_checkpoints(train, tmp_path, capsys):
    """On 3m (obs 75, SMAX world state 72, 3 agents) IPPO's critic reads 75 + 3 inputs, MAPPO's 72 + 75 + 3."""
    for script, width in (("ippo.py", 78), ("mappo.py", 150)):
        assert train(script, "--env-id", "3m", *SMALL, "--total-timesteps", "128", "--save-model", "--eval-interval", "0") == 0
        name = script.removesuffix(".py")
        [path] = [Path(d) / f"{name}.pt" for d in run_dirs(tmp_path) if f"__{name}__" in d]
        ckpt = torch.load(path, weights_only=True)
        assert ckpt["critic"]["body.0.weight"].shape == (width,)  # the input LayerNorm
        assert ckpt["actor"]["body.0.weight"].shape == (78,)
    capsys.readouterr()
    assert train("ippo.py", "--eval-only", path) == 2  # mappo's checkpoint: refused, not a traceback
    assert "written by mappo.py" in capsys.readouterr().err
