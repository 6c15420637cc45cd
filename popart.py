# popart.py: the one helper shared by the cleanmappo scripts. PopArt value normalisation and masking.
# Pure: no I/O, no globals, no numpy; everything follows the input's device and dtype.
import torch
import torch.nn as nn


class PopArt(nn.Module):
    """Linear value head with Preserving Outputs Precisely, while Adaptively Rescaling Targets.

    The layer predicts a normalised value  v_norm = W h + b  (h: (B, in_features) -> (B, out_features)).
    Targets are normalised with running statistics:  normalize(y) = (y - mu) / sigma,
    denormalize(v) = v * sigma + mu.  `update(targets)` moves mu, sigma towards the batch statistics
    (exponential moving average with weight `beta`, debiased as in Adam) and rescales W, b in place,

        W' = W * sigma / sigma',   b' = (sigma * b + mu - mu') / sigma',

    so that denormalize(forward(h)) is unchanged for every h (van Hasselt et al., 2016).
    beta = 0.99999 and the std floor 1e-2 follow the MAPPO code (on-policy, ValueNorm / PopArt).
    """

    def __init__(self, in_features: int, out_features: int = 1, beta: float = 0.99999, epsilon: float = 1e-5):
        super().__init__()
        self.beta, self.epsilon = beta, epsilon
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        nn.init.orthogonal_(self.weight, gain=1.0)
        self.register_buffer("running_mean", torch.zeros(out_features))
        self.register_buffer("running_mean_sq", torch.zeros(out_features))
        self.register_buffer("debiasing_term", torch.zeros(()))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h: (..., in_features) -> normalised value (..., out_features)"""
        return nn.functional.linear(h, self.weight, self.bias)

    def stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Debiased (mu, sigma), each (out_features,); mu = 0, sigma = 1 before the first update."""
        d = self.debiasing_term.clamp(min=self.epsilon)
        mean = self.running_mean / d
        var = (self.running_mean_sq / d - mean**2).clamp(min=1e-4)  # sigma >= 1e-2
        if self.debiasing_term <= 0:
            return torch.zeros_like(mean), torch.ones_like(var)
        return mean, var.sqrt()

    def normalize(self, y: torch.Tensor) -> torch.Tensor:
        """y: (..., out_features) targets -> (y - mu) / sigma"""
        mean, std = self.stats()
        return (y - mean) / std

    def denormalize(self, v: torch.Tensor) -> torch.Tensor:
        """v: (..., out_features) normalised values -> v * sigma + mu"""
        mean, std = self.stats()
        return v * std + mean

    @torch.no_grad()
    def update(self, targets: torch.Tensor) -> None:
        """targets: (..., out_features) unnormalised returns. Updates mu, sigma and rescales W, b in place."""
        old_mean, old_std = self.stats()
        y = targets.reshape(-1, self.running_mean.shape[0]).to(self.running_mean.dtype)
        self.running_mean.mul_(self.beta).add_((1 - self.beta) * y.mean(0))
        self.running_mean_sq.mul_(self.beta).add_((1 - self.beta) * (y**2).mean(0))
        self.debiasing_term.mul_(self.beta).add_(1 - self.beta)
        new_mean, new_std = self.stats()
        self.weight.mul_((old_std / new_std).unsqueeze(-1))
        self.bias.copy_((old_std * self.bias + old_mean - new_mean) / new_std)


def mask_logits(logits: torch.Tensor, avail_actions: torch.Tensor) -> torch.Tensor:
    """logits: (..., U), avail_actions: (..., U) bool -> logits with unavailable actions at the dtype's minimum.

    MAPPO Suggestion 4: unavailable actions get probability exactly 0 (exp underflows) in sampling, log-prob,
    entropy and KL. The finite minimum, unlike -inf, keeps 0 * logit = 0 in the entropy, so nothing turns NaN.
    """
    return logits.masked_fill(~avail_actions, torch.finfo(logits.dtype).min)


class MaskedCategorical:
    """Categorical distribution over the available actions. logits, avail_actions: (..., U)."""

    def __init__(self, logits: torch.Tensor, avail_actions: torch.Tensor):
        self.avail_actions = avail_actions
        self.logits = torch.log_softmax(mask_logits(logits, avail_actions), dim=-1)  # (..., U) normalised

    @property
    def probs(self) -> torch.Tensor:
        return self.logits.exp()  # (..., U), exactly 0 where masked

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """Gumbel-max sampling (from `generator`, else torch's default one) -> (...,) int64 actions, always available."""
        u = torch.rand(self.logits.shape, generator=generator, dtype=self.logits.dtype, device=self.logits.device)
        u.clamp_(min=torch.finfo(self.logits.dtype).tiny)
        return (self.logits - torch.log(-torch.log(u))).argmax(-1)  # masked logits stay at the dtype's minimum

    def mode(self) -> torch.Tensor:
        """Greedy action: (...,) int64."""
        return self.logits.argmax(-1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """actions: (...,) -> (...,) log pi(a)."""
        return self.logits.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """-(sum_a p log p) over available actions -> (...,)."""
        return -(self.probs * self.logits.masked_fill(~self.avail_actions, 0.0)).sum(-1)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of x over the entries where mask is true (e.g. alive agent-steps): sum(x * m) / max(sum(m), 1)."""
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)
