import math

import torch

from popart import MaskedCategorical, PopArt, mask_logits, masked_mean


def test_update_preserves_unnormalised_outputs():
    torch.manual_seed(0)
    layer = PopArt(16, 1)
    h = torch.randn(256, 16)
    for scale, shift in [(5.0, 3.0), (100.0, -40.0), (0.1, 0.0)]:
        before = layer.denormalize(layer(h))
        layer.update(torch.randn(512, 1) * scale + shift)
        after = layer.denormalize(layer(h))
        torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-5)
    mean, std = layer.stats()
    assert abs(mean.item()) > 1.0 and std.item() > 1.0  # the statistics did move


def test_statistics_track_targets():
    layer = PopArt(4, 1, beta=0.9)
    for _ in range(200):
        layer.update(torch.full((64, 1), 7.0) + torch.randn(64, 1) * 2.0)
    mean, std = layer.stats()
    assert abs(mean.item() - 7.0) < 0.3 and abs(std.item() - 2.0) < 0.3


def test_normalize_denormalize_round_trip():
    layer = PopArt(8, 1)
    layer.update(torch.randn(100, 1) * 30 + 12)
    y = torch.randn(50, 1) * 20
    torch.testing.assert_close(layer.denormalize(layer.normalize(y)), y, rtol=1e-5, atol=1e-4)
    assert not torch.allclose(layer.normalize(y), y)


def test_identity_before_first_update():
    layer = PopArt(8, 1)
    y = torch.randn(10, 1)
    torch.testing.assert_close(layer.normalize(y), y)
    torch.testing.assert_close(layer.denormalize(y), y)


def test_state_dict_round_trip():
    a = PopArt(8, 1)
    a.update(torch.randn(100, 1) * 3 + 1)
    b = PopArt(8, 1)
    b.load_state_dict(a.state_dict())
    h = torch.randn(5, 8)
    torch.testing.assert_close(b.denormalize(b(h)), a.denormalize(a(h)))
    assert set(a.state_dict()) >= {"running_mean", "running_mean_sq", "debiasing_term", "weight", "bias"}


def test_follows_dtype():
    layer = PopArt(4, 1).double()
    layer.update(torch.randn(10, 1, dtype=torch.float64))
    assert layer(torch.randn(3, 4, dtype=torch.float64)).dtype == torch.float64
    assert layer.stats()[0].dtype == torch.float64


def test_masked_actions_have_zero_probability():
    logits = torch.randn(6, 5) * 10
    avail = torch.tensor([[1, 0, 1, 0, 1]] * 6, dtype=torch.bool)
    dist = MaskedCategorical(logits, avail)
    assert (dist.probs[~avail] == 0).all()
    torch.testing.assert_close(dist.probs.sum(-1), torch.ones(6))
    samples = torch.stack([dist.sample() for _ in range(200)])
    assert avail[0, samples].all()
    assert avail[torch.arange(6), dist.mode()].all()
    assert torch.isfinite(dist.log_prob(dist.sample())).all()


def test_sampling_from_a_generator_leaves_the_default_one_alone():
    """--eval-sampled draws from a generator of its own: the same seed, the same actions, and torch's default generator
    (the one training samples from) is not advanced."""
    dist = MaskedCategorical(torch.randn(64, 9), torch.rand(64, 9) > 0.3)
    torch.manual_seed(0)
    expected = dist.sample()
    torch.manual_seed(0)
    first, second = (dist.sample(torch.Generator().manual_seed(5)) for _ in range(2))
    assert torch.equal(first, second) and torch.equal(dist.sample(), expected)
    assert dist.avail_actions.gather(-1, first.unsqueeze(-1)).all()
    counts = torch.bincount(torch.stack([dist.sample(torch.Generator().manual_seed(s))[0] for s in range(2000)]), minlength=9)
    torch.testing.assert_close(counts / 2000.0, dist.probs[0], atol=0.04, rtol=0)  # it samples pi, not the mode


def test_one_available_action_entropy_zero_and_finite():
    logits = torch.randn(4, 7, requires_grad=True)
    avail = torch.zeros(4, 7, dtype=torch.bool)
    avail[:, 3] = True
    dist = MaskedCategorical(logits, avail)
    entropy = dist.entropy()
    assert torch.isfinite(entropy).all() and torch.allclose(entropy, torch.zeros(4), atol=1e-6)
    assert (dist.sample() == 3).all()
    (entropy.sum() + dist.log_prob(torch.full((4,), 3)).sum()).backward()
    assert torch.isfinite(logits.grad).all()


def test_entropy_equals_uniform_over_available():
    avail = torch.tensor([[1, 1, 0, 1, 0]], dtype=torch.bool)
    dist = MaskedCategorical(torch.zeros(1, 5), avail)
    assert math.isclose(dist.entropy().item(), math.log(3), rel_tol=1e-6)


def test_mask_logits_uses_dtype_minimum():
    out = mask_logits(torch.zeros(2, 3, dtype=torch.float64), torch.tensor([[1, 0, 1], [0, 1, 1]], dtype=torch.bool))
    assert out[0, 1] == torch.finfo(torch.float64).min and not torch.isnan(out).any()


def test_masked_mean_ignores_dead_agents():
    x = torch.tensor([1.0, 2.0, 100.0, 3.0])
    alive = torch.tensor([True, True, False, True])
    assert masked_mean(x, alive).item() == 2.0
    assert masked_mean(x, torch.zeros(4, dtype=torch.bool)).item() == 0.0  # all dead: 0, not NaN
