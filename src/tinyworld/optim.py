"""The tiny world's trainers' optimiser state: one flat parameter per model."""

from __future__ import annotations

import torch


def flat_parameters(module: torch.nn.Module) -> torch.nn.Parameter:
    """One parameter holding all of ``module``'s, which become views of it, with one gradient
    of which theirs are views (backward adds into them in place).

    Adam, the gradient norm and its clipping then take one kernel each over ~90,000 numbers
    instead of one per tensor (26 in the policy): the same elementwise update, with the norm
    summed in another order. Zero the gradient with ``flat.grad.zero_()``: setting it to None
    would cut the views loose.
    """
    params = [p for p in module.parameters() if p.requires_grad]
    flat = torch.nn.Parameter(torch.cat([p.detach().reshape(-1) for p in params]))
    flat.grad = torch.zeros_like(flat)
    offset = 0
    for p in params:
        n = p.numel()
        p.data = flat.data[offset : offset + n].view_as(p)
        p.grad = flat.grad[offset : offset + n].view_as(p)
        offset += n
    return flat


__all__ = ["flat_parameters"]
