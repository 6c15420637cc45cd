"""Where one PPO update epoch of mappo.py spends its time, by torch operator, at the paper's SMAC batch
(8 envs x 400 steps x 3 agents of 3m) on the CPU.

    python benchmark/profile_update.py   # writes benchmark/results/update_profile.txt
"""

import os
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from mappo import Actor, Critic, value_error  # noqa: E402
from popart import MaskedCategorical, masked_mean  # noqa: E402

B, OBS, STATE, U = 8 * 400 * 3, 75 + 3, 72 + 75 + 3, 8  # SMAX 3m: actor and critic input widths


def main(epochs: int = 5):
    torch.manual_seed(0)
    actor, critic = Actor(OBS, U), Critic(STATE)
    x, state = torch.randn(B, OBS), torch.randn(B, STATE)
    avail = torch.rand(B, U) > 0.3
    avail[:, 4] = True
    actions, old_logprob = torch.full((B,), 4), torch.full((B,), -1.5)
    adv, returns, old_values, alive = torch.randn(B), torch.randn(B), torch.randn(B), torch.rand(B) > 0.1
    actor_opt = torch.optim.Adam(actor.parameters(), 5e-4, eps=1e-5)
    critic_opt = torch.optim.Adam(critic.parameters(), 5e-4, eps=1e-5)

    def epoch():  # the same operations as one epoch of mappo.py's update with one mini-batch
        dist = MaskedCategorical(actor(x), avail)
        logratio = dist.log_prob(actions) - old_logprob
        ratio = logratio.exp()
        pg = masked_mean(torch.max(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)), alive)
        loss = pg - 0.01 * masked_mean(dist.entropy(), alive)
        actor_opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(actor.parameters(), 10.0)
        actor_opt.step()
        value = critic(state)
        clipped = old_values + (value - old_values).clamp(-0.2, 0.2)
        v_loss = torch.max(value_error(value - returns, True, 10.0), value_error(clipped - returns, True, 10.0)).mean()
        critic_opt.zero_grad()
        v_loss.backward()
        nn.utils.clip_grad_norm_(critic.parameters(), 10.0)
        critic_opt.step()

    for _ in range(3):
        epoch()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(epochs):
            epoch()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15)
    total_ms = sum(e.self_cpu_time_total for e in prof.key_averages()) / 1000 / epochs
    text = f"One update epoch, batch {B} agent-steps, {torch.get_num_threads()} threads: {total_ms:.1f} ms\n{table}"
    os.makedirs(os.path.join(ROOT, "benchmark", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmark", "results", "update_profile.txt"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
