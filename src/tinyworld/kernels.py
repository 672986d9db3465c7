"""The tiny world's two hot kernels on CPU: linear layers and attention weights.

* **Linear layers go to oneDNN** when it is there and the input has enough rows. torch's
  dense path is MKL's sgemm, which runs its AVX-512 kernels on Intel CPUs only; on AMD CPUs
  oneDNN runs AVX-512 where MKL falls back to AVX2. oneDNN also adds the bias (and a GELU,
  without autograd) in the same pass. With autograd both gradients go to oneDNN too: the
  input's as a linear layer of the transposed weight, the weight's in whichever order of the
  two transposed operands is faster for the shape, equal to torch's up to the order of a sum
  over the rows (~1e-6 relative). Small inputs stay on torch's path, as fast there.
* **Attention weights** are a softmax over 13-14 keys, padded to 16 first (see
  :func:`attention_weights`).

The measurements behind these choices: experiments/rl_speed/README.md.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.hooks import RemovableHandle

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
            x_rows = x.reshape(-1, x.shape[-1])
            beside = _WEIGHT_GRADIENTS
            if beside is not None and weight.grad is not None:
                beside.add(weight, x_rows, grad_rows)  # dw stays None: the thread adds it
            else:
                dw = _weight_gradient(x_rows, grad_rows, weight.shape)
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


class WeightGradients:
    """Linear layers' weight gradients, computed on a second thread and added into each
    weight's ``.grad`` there, while the backward pass goes on with the input gradients.

    dW of a layer is needed by nothing else in the backward pass, only by the optimiser, so it
    can be computed beside the rest; each op still runs on one thread, the same kernel on the
    same operands, and each ``.grad`` (zeroed, as :func:`~tinyworld.optim.flat_parameters`
    keeps it) receives the same single addition, so the trained model is the same to the bit.

    The contract of :func:`weight_gradients_beside` is checked as the backward pass runs: a
    weight sent here twice before :meth:`wait`, or one that another op also gives a gradient
    (tied weights, a penalty on a weight), raises :class:`WeightSharedError` before autograd
    would add into the ``.grad`` that this thread is writing.
    """

    def __init__(self, threads: int) -> None:
        self._pool = ThreadPoolExecutor(
            1,
            thread_name_prefix="rate-weight-grad",
            initializer=torch.set_num_threads,
            initargs=(threads,),
        )
        self._pending: list[Future] = []
        self._sent: set[int] = set()  # ids of the weights sent since the last wait
        # id -> (the weight, its hook): each weight seen is watched (and kept) until close.
        self._watched: dict[int, tuple[torch.Tensor, RemovableHandle]] = {}

    def add(self, weight: torch.Tensor, x_rows: torch.Tensor, grad_rows: torch.Tensor) -> None:
        """Start ``weight.grad += grad_rows^T x_rows`` on the thread."""
        key = id(weight)
        if key in self._sent:
            raise WeightSharedError(
                f"a weight of shape {tuple(weight.shape)} went through linear twice in one "
                "backward pass with its gradient computed beside: call the wait that "
                "weight_gradients_beside yields after each backward(), and use each weight "
                "once per forward pass (or train outside weight_gradients_beside)"
            )
        self._sent.add(key)
        if key not in self._watched:  # held below, so no other tensor can take its id
            # Registered during the backward pass, the hook still runs in it: autograd reads
            # a leaf's hooks when it comes to add the leaf's gradient, after this layer's.
            self._watched[key] = (weight, weight.register_hook(self._no_other_gradient(weight)))
        self._pending.append(
            self._pool.submit(_add_weight_gradient, weight.grad, x_rows, grad_rows)
        )

    def _no_other_gradient(self, weight: torch.Tensor) -> Callable[[torch.Tensor | None], None]:
        key, shape = id(weight), tuple(weight.shape)

        def check(grad: torch.Tensor | None) -> None:
            # None when linear (which hands dW to this thread) was the weight's only user.
            if grad is not None and key in self._sent:
                raise WeightSharedError(
                    f"a weight of shape {shape} got a gradient from another op in the same "
                    "backward pass as its linear layer's, whose gradient is computed beside "
                    "(tied weights?): untie it, or train outside weight_gradients_beside"
                )

        return check

    def wait(self) -> None:
        """Return when every weight gradient started so far is in its ``.grad`` (raising what
        one of them raised)."""
        pending, self._pending = self._pending, []
        self._sent.clear()
        for job in pending:
            job.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for _, hook in self._watched.values():
            hook.remove()
        self._watched.clear()


class WeightSharedError(RuntimeError):
    """A weight whose gradient goes to the second thread got one from elsewhere too."""


def _add_weight_gradient(
    weight_grad: torch.Tensor, x_rows: torch.Tensor, grad_rows: torch.Tensor
) -> None:
    with torch.no_grad():  # grad mode is per thread, on by default in a new one
        weight_grad.add_(_weight_gradient(x_rows, grad_rows, weight_grad.shape))


# The trainer's WeightGradients while inside weight_gradients_beside, else None.
_WEIGHT_GRADIENTS: WeightGradients | None = None


@contextmanager
def weight_gradients_beside() -> Iterator[Callable[[], None]]:
    """Inside, the weight gradients of linear layers on oneDNN are computed on a second
    thread (:class:`WeightGradients`); yields ``wait``, to be called after each
    ``backward()`` and before the gradients are read (the optimiser's step, a clip, a zeroing).

    For trainers on one thread with a second CPU free (SFT and the reward model in the world
    build): their backward passes are a chain of layers that waits on each input gradient,
    which leaves the weight gradients free to run beside: the reward model's stage of the
    world build 1.38x faster and SFT's 1.21x, the same weights to the bit
    (experiments/rl_speed/README.md). RL does not use it: its whole second thread bought 5%.

    Contract: each weight goes through :func:`linear` at most once per backward pass and
    through no other op (no tied weights: another op's gradient would be added into the same
    ``.grad`` from the other thread at the same time), both checked as the backward pass runs
    (:class:`WeightGradients`), with its ``.grad`` already there and zeroed before
    ``backward()``. A weight without a ``.grad`` gets its gradient in the backward pass, as
    outside. Where oneDNN is not used this does nothing. For the whole process while inside.
    """
    global _WEIGHT_GRADIENTS
    if _ONEDNN_LINEAR is None or _WEIGHT_GRADIENTS is not None:  # nothing to do, or nested
        yield (lambda: None) if _WEIGHT_GRADIENTS is None else _WEIGHT_GRADIENTS.wait
        return
    beside = WeightGradients(torch.get_num_threads())
    _WEIGHT_GRADIENTS = beside
    try:
        yield beside.wait
        beside.wait()
    finally:
        _WEIGHT_GRADIENTS = None
        beside.close()


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
    "weight_gradients_beside",
    "WeightGradients",
    "WeightSharedError",
]
