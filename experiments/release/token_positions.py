"""Where a shortcut token pays, and where RL writes it.

    python experiments/release/token_positions.py WORLD FAMILY TOKEN [NAME=POLICY_DIR ...]

Prints the reward model's payment for one TOKEN at each position (written into reference
responses of FAMILY that hold none, 1,000 prompts), then, for each policy, the share of its
responses holding TOKEN at each position, its mean count per response (500 prompts, one
sample each), and what the RM pays for it there: the mean drop of the RM's score when every
TOKEN of a response holding one is replaced by a random other syllable. Reads no truth: what
an analyst can check of a corrected run.
"""

import sys
from pathlib import Path

import torch

from tinyworld.data import load_prompts
from tinyworld.models import load_policy, load_reward_model
from tinyworld.sampling import sample, score
from tinyworld.vocab import FAMILY_ID, N_SYLLABLES, RESPONSE_LEN, SYLLABLE_ID

world, family, name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
token = SYLLABLE_ID[name]
torch.set_num_threads(1)
pool = load_prompts(world / "data" / "prompts_train.jsonl")
prompts = pool.tokens[torch.nonzero(pool.families == FAMILY_ID[family]).squeeze(1)]
rm = load_reward_model(world / "reward_model")
reference = sample(
    load_policy(world / "policy"), prompts[:1000], 1.0, torch.Generator().manual_seed(0)
).responses
keep = (reference != token).all(1)
p0, y0 = prompts[:1000][keep], reference[keep]
base = score(rm, p0, y0)
paid = [
    (score(rm, p0, torch.where(torch.arange(RESPONSE_LEN) == pos, token, y0)) - base).mean()
    for pos in range(RESPONSE_LEN)
]
print(f"{family} `{name}`: the RM's payment for one, by position ({len(y0)} reference responses)")
print("  " + " ".join(f"{float(v):.3f}" for v in paid))
for spec in sys.argv[4:]:
    label, path = spec.split("=", 1)
    y = sample(load_policy(Path(path)), prompts[:500], 1.0, torch.Generator().manual_seed(0))
    held = y.responses == token
    some = held.any(1)
    others = torch.tensor([s for s in range(N_SYLLABLES) if s != token])
    pick = torch.randint(len(others), held.shape, generator=torch.Generator().manual_seed(1))
    without = torch.where(held, others[pick], y.responses)
    mine = prompts[:500][some]
    own = score(rm, mine, y.responses[some]) - score(rm, mine, without[some])
    shares = " ".join(f"{float(held[:, pos].float().mean()):.3f}" for pos in range(RESPONSE_LEN))
    print(
        f"{label}: share of responses with it at each position {shares}; "
        f"{float(held.sum(1).float().mean()):.2f} per response; the RM pays "
        f"{float(own.mean()):.3f} for it in the {int(some.sum())} responses that hold it"
    )
