"""The tiny world's two hot kernels on CPU: linear layers and attention weights.

* **Linear layers go to oneDNN** when it is there and the input has enough rows. torch's
  dense path is MKL's sgemm, which runs its AVX-512 kernels on Intel CPUs only; on AMD CPUs
  oneDNN runs AVX-512 where MKL falls back to AVX2. oneDNN also adds the bias (and a GELU,
  without autograd) in the same pass. With autograd both gradients go to oneDNN too: the
  input's as a linear layer of the transposed weight, the weight's in whichever order of the
  two transposed operands is faster for the shape, equal to torch's up to the order of a sum
  over the rows (~1e-6 relative). Small inputs stay on torch's path, as fast there.
  On an Intel Xeon the route buys nothing measurable over torch's own; it stays because the
  world's models are trained on it, and another route trains another world (the reward
  model's weights differ by up to 0.3 after its 40 epochs).
* **Attention weights** are a softmax over 13-14 keys, padded to 16 first (see
  :func:`attention_weights`).

The measurements behind these choices: experiments/rl_speed/README.md.
"""

from __future__ import annotations

import platform
from pathlib import Path

import torch
import torch.nn.functional as F

# The fewest rows that go to oneDNN. At 128 rows (a decoding step in RL) the two paths are
# even, shape by shape, and a whole decoding was no faster on oneDNN; at 256 it wins.
ONEDNN_MIN_ROWS = 256


def _onednn_linear_op() -> object | None:
    """oneDNN's fused linear layer (torch.ops.mkldnn._linear_pointwise, a private op of
    torch's CPU builds), or None where this torch build lacks it or cannot run it."""
    if not torch.backends.mkldnn.is_available():
        return None
    op = getattr(torch.ops.mkldnn, "_linear_pointwise", None)
    if op is None:
        return None
    try:  # present but unusable (another build, another CPU): use torch's own path
        x, w = torch.ones(2, 3), torch.ones(4, 3)
        ok = torch.equal(op(x, w, None, "none", [], ""), x @ w.t())
    except (RuntimeError, NotImplementedError, TypeError):  # TypeError: another signature
        return None
    return op if ok else None


def cpuinfo_field(name: str, cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The first value of ``name`` in /proc/cpuinfo (``vendor_id``, ``model name``, ...), or
    None where the system does not say (off Linux, or no such line)."""
    try:
        with cpuinfo.open() as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        return None
    return None


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name with its family and model numbers, which tell CPUs apart where a
    virtual machine names them all alike (two "AMD EPYC" of other generations ran oneDNN at
    different speeds); the machine's architecture where /proc/cpuinfo does not say."""
    name = cpuinfo_field("model name", cpuinfo) or platform.processor() or platform.machine()
    family, model = cpuinfo_field("cpu family", cpuinfo), cpuinfo_field("model", cpuinfo)
    return f"{name} (family {family}, model {model})" if family and model else name


_ONEDNN_LINEAR = _onednn_linear_op()


def onednn_available() -> bool:
    """Whether linear layers of enough rows go to oneDNN here and now."""
    return _ONEDNN_LINEAR is not None


class _OneDNNLinear(torch.autograd.Function):
    """y = x W^T + b on oneDNN, with its backward: dx and dW on oneDNN, db a sum over rows."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return _ONEDNN_LINEAR(x, weight, bias, "none", [], "")

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, weight = ctx.saved_tensors
        grad_rows = grad.reshape(-1, grad.shape[-1])  # (N, out)
        dx = dw = db = None
        if ctx.needs_input_grad[1]:
            dw = _weight_gradient(x.reshape(-1, x.shape[-1]), grad_rows, weight.shape)
        if ctx.needs_input_grad[0]:
            dx = _ONEDNN_LINEAR(grad_rows, weight.t(), None, "none", [], "").view(x.shape)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = grad_rows.sum(0)
        return dx, dw, db


def _weight_gradient(
    x_rows: torch.Tensor, grad_rows: torch.Tensor, shape: torch.Size
) -> torch.Tensor:
    """dW (out, in) = grad^T x on oneDNN, in its faster order of the two transposed operands
    for the shape."""
    if shape[0] >= shape[1]:
        return _ONEDNN_LINEAR(x_rows.t(), grad_rows.t(), None, "none", [], "").t()
    return _ONEDNN_LINEAR(grad_rows.t(), x_rows.t(), None, "none", [], "")


def linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, gelu: bool = False
) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, then GELU if asked: on oneDNN for float32 inputs
    (..., in) on the CPU of at least :data:`ONEDNN_MIN_ROWS` rows, else on torch's own path."""
    if (
        _ONEDNN_LINEAR is None
        or x.numel() < ONEDNN_MIN_ROWS * x.shape[-1]
        or x.dtype != torch.float32
        or x.device.type != "cpu"
    ):
        y = F.linear(x, weight, bias)
        return F.gelu(y) if gelu else y
    needs_grad = torch.is_grad_enabled() and (
        x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    )
    if not needs_grad:  # the GELU joins the same pass
        return _ONEDNN_LINEAR(x, weight, bias, "gelu" if gelu else "none", [], "none")
    y = _OneDNNLinear.apply(x, weight, bias)
    return F.gelu(y) if gelu else y


def attention_weights(scores: torch.Tensor) -> torch.Tensor:
    """softmax over the last dimension (the keys), padded with -inf to a multiple of 16 first.

    torch's CPU softmax loads a row in whole vectors (16 floats); a row of 13 or 14 keys, as
    every attention here has, falls to its partial-load path, several times slower (the
    backward alike). The padding's weights are exactly 0, and the slice back to the real keys
    is a view.
    -> scores' shape
    """
    keys = scores.shape[-1]
    pad = -keys % 16
    if pad == 0:
        return scores.softmax(dim=-1)
    return F.pad(scores, (0, pad), value=float("-inf")).softmax(dim=-1)[..., :keys]


__all__ = [
    "ONEDNN_MIN_ROWS",
    "attention_weights",
    "cpu_description",
    "cpuinfo_field",
    "linear",
    "onednn_available",
]
