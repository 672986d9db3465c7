"""One timer for every benchmark module, and the CPU its figures were measured on."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Run ``fn()``; -> (wall seconds, its result)."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


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
    virtual machine names them all alike; the machine's architecture where /proc/cpuinfo does
    not say."""
    name = cpuinfo_field("model name", cpuinfo) or platform.processor() or platform.machine()
    family, model = cpuinfo_field("cpu family", cpuinfo), cpuinfo_field("model", cpuinfo)
    return f"{name} (family {family}, model {model})" if family and model else name
