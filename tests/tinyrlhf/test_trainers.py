"""SFT, reward-model training, best-of-N and the REINFORCE update rule."""

from __future__ import annotations

import pytest
import torch

from tinyworld.best_of_n import best_of_n
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.rl import shaped_advantages
from tinyworld.rm_train import train_reward_model
from tinyworld.sampling import sample, score
from tinyworld.sft import train_sft
from tinyworld.vocab import SYLLABLE_ID, encode_prompts


def family_prompts(n: int, family: str = "anvil") -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    return encode_prompts(
        [
            {
                "id": str(i),
                "family": family,
                "attrs": torch.randint(0, 8, (4,), generator=gen).tolist(),
            }
            for i in range(n)
        ]
    )


def test_sft_learns_a_fixed_demonstration():
    p = family_prompts(256)
    target = torch.tensor(
        [[SYLLABLE_ID[s] for s in ["ba", "da", "fa", "ga", "ha", "ja", "ka", "la"]]]
    ).repeat(256, 1)
    policy, history = train_sft(p, target, epochs=30, lr=3e-3, batch_size=64, seed=0)
    assert history[-1]["loss"] < 0.1 * history[0]["loss"]
    s = sample(policy, p[:16], temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert (s.responses == target[:16]).float().mean() > 0.95


def test_reward_model_learns_a_token_count():
    gen = torch.Generator().manual_seed(0)
    p = family_prompts(1024)
    r = torch.randint(0, 24, (1024, 8), generator=gen)
    y = (r == SYLLABLE_ID["pa"]).sum(-1).float()
    rm, history = train_reward_model(p, r, y, epochs=20, lr=2e-3, batch_size=64, seed=0)
    assert history[-1]["mse"] < 0.2 * history[0]["mse"]
    test_r = torch.randint(0, 24, (256, 8), generator=gen)
    pred = score(rm, family_prompts(256), test_r)
    truth = (test_r == SYLLABLE_ID["pa"]).sum(-1).float()
    assert torch.corrcoef(torch.stack([pred, truth]))[0, 1] > 0.9


def test_reward_model_refuses_non_finite_labels():
    p = family_prompts(4)
    with pytest.raises(ValueError, match="NaN"):
        train_reward_model(
            p,
            torch.zeros(4, 8, dtype=torch.long),
            torch.tensor([0.0, float("nan"), 1, 2]),
            1,
            1e-3,
            2,
            0,
        )


def test_shaped_advantages_known_answer():
    reward = torch.tensor([1.0, 3.0, 0.0, 2.0, 10.0, 10.0])
    kl = torch.tensor([0.0, 10.0, 2.0, 0.0, 1.0, 3.0])
    shaped, adv = shaped_advantages(reward, kl, kl_coef=0.1, group_size=2)
    # shaped = [1, 2, -0.2, 2, 9.9, 9.7]; group means 1.5, 0.9, 9.8
    assert shaped.tolist() == pytest.approx([1.0, 2.0, -0.2, 2.0, 9.9, 9.7])
    assert adv.tolist() == pytest.approx([-0.5, 0.5, -1.1, 1.1, 0.1, -0.1], abs=1e-6)


class CountReward(RewardModel):
    """A reward model that pays one per `pa`: best-of-N must pick the response with most."""

    def forward(self, prompts, responses):
        return (responses == SYLLABLE_ID["pa"]).sum(-1).float()


def test_best_of_n_picks_the_highest_scoring_sample():
    torch.manual_seed(0)
    policy, rm = Policy(), CountReward()
    p = family_prompts(32)
    gen = torch.Generator().manual_seed(1)
    chosen, scores = best_of_n(policy, rm, p, n=16, generator=gen)
    single = sample(policy, p, generator=torch.Generator().manual_seed(2)).responses
    assert torch.equal(scores, (chosen == SYLLABLE_ID["pa"]).sum(-1).float())
    assert scores.mean() > (single == SYLLABLE_ID["pa"]).sum(-1).float().mean() + 0.3
    # Each choice is the max over its own 16 candidates, drawn in the same order.
    again = sample(policy, p.repeat_interleave(16, 0), generator=torch.Generator().manual_seed(1))
    again = again.responses
    best = (again == SYLLABLE_ID["pa"]).sum(-1).view(32, 16).max(1).values.float()
    assert torch.equal(best, scores)
