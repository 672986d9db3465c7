"""RL's fixed-shape passes run as TorchScript traces: the same kernels in the same order,
without Python's cost per kernel.

An RL step decodes 128 rows in ~40 kernels per token and scores them with the reward model,
each kernel a few microseconds of work, so Python's share of a step is large, and the reward
model's thread waits on the same interpreter lock as the policy's. On one thread of an Intel
Xeon, traced against eager: the decoding 4.81 against 5.76 ms, the reward model 6.25 against
6.66, the reference's log-probs 2.75 against 3.03; a whole step ~13% less (``python -m
benchmarks.rl_step`` times each pass both ways; experiments/RESULTS.md at commit 825f898,
"Faster RL: the passes as TorchScript traces").

A trace records the kernels its first call ran, branches included (the linear route, the
shapes), so :class:`Traced` keeps one per input shapes and route, and checks each one's first
call against the eager module to the last bit. Where tracing fails (a torch without
TorchScript, an op the tracer cannot record) or differs, the module runs eagerly, with the
same results. oneDNN's linear layer (:mod:`tinyworld.kernels`), which the tracer cannot
record as an op, goes into a trace as a call of a TorchScript function: on AMD CPUs, where
RL takes it, the reward model and the reference pass would otherwise run eager, each op
taking the interpreter lock that the policy's thread needs too.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable

import torch
from torch import nn

from tinyworld.kernels import onednn_available

log = logging.getLogger(__name__)

# warnings.catch_warnings swaps the process's filters and puts back what it found: two
# threads tracing at once (RL traces the reward model on its own thread) could leave the
# tracer's "ignore" in place for good, so traces are made one at a time.
_TRACING = threading.Lock()

Outputs = torch.Tensor | tuple[torch.Tensor, ...]


class Traced:
    """``module(*inputs)`` as a TorchScript trace per input shapes, linear route and
    inference mode, eager where a trace cannot be had.

    The trace takes the module's weights as its parameters, read at each call: in-place
    updates (the optimiser's) are seen. Make it after
    :func:`~tinyworld.optim.flat_parameters`, and do not swap the module's tensors after.
    """

    def __init__(self, module: nn.Module, name: str) -> None:
        self.module, self.name = module, name
        self.traces: dict[tuple, Callable[..., Outputs]] = {}
        # Two threads may want the same trace at once (RL decodes in halves on two): the
        # second waits for the first's, rather than making its own (~120 ms a decoding).
        self._making = threading.Lock()

    def __call__(self, *inputs: torch.Tensor) -> Outputs:
        key = (
            tuple((tuple(t.shape), t.dtype) for t in inputs),
            onednn_available(),
            torch.is_inference_mode_enabled(),
        )
        run = self.traces.get(key)
        if run is None:
            with self._making:
                run = self.traces.get(key)
                if run is None:
                    run = self.traces[key] = self._trace(inputs)
        return run(*inputs)

    def is_traced(self) -> bool:
        """Whether it has run, and through a trace for every input shapes it was given (none
        fell back to the eager module)."""
        return bool(self.traces) and all(r != self.module.forward for r in self.traces.values())

    def _trace(self, inputs: tuple[torch.Tensor, ...]) -> Callable[..., Outputs]:
        eager = self.module.forward
        start = time.perf_counter()
        try:
            with _TRACING, warnings.catch_warnings():
                # The tracer warns of shapes read as Python numbers (fixed per trace, by the
                # key) and that torch.jit.trace is deprecated (hence the fallback below).
                warnings.simplefilter("ignore")
                traced = torch.jit.trace(_Slim(self.module), inputs, check_trace=False)

            def run(*args: torch.Tensor) -> Outputs:
                # Without TorchScript's graph optimisations: they took ~140 ms of a
                # decoding's first two calls for no gain, and the recorded kernels run as
                # they are, the eager module's.
                with torch.jit.optimized_execution(False):
                    return traced(*args)

            same = _equal(run(*inputs), eager(*inputs))
        except Exception as error:  # noqa: BLE001 - any failure to trace leaves the eager module
            log.info("%s stays eager: it could not be traced (%s)", self.name, type(error).__name__)
            return eager
        if not same:
            log.warning("%s stays eager: its trace differed from it on this torch", self.name)
            return eager
        log.debug(
            "%s traced and checked in %.0f ms", self.name, (time.perf_counter() - start) * 1e3
        )
        return run


class _Slim(nn.Module):
    """A module's parameters in one flat list, and its forward. Traced as it is, every
    submodule would become a TorchScript module of its own (~25 ms for the policy's 27); this
    way the trace still takes the parameters as its own (read at each call), and the
    buffers, which no pass here changes, as constants."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.weights = nn.ParameterList(module.parameters())
        self.__dict__["inner"] = module  # not registered: its tree is not made a module

    def forward(self, *inputs: torch.Tensor) -> Outputs:
        return self.inner(*inputs)


def _equal(a: Outputs, b: Outputs) -> bool:
    a, b = (x if isinstance(x, tuple) else (x,) for x in (a, b))
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


__all__ = ["Traced"]
