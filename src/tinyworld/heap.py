"""The C heap's settings for the audit's commands: freed memory is kept for reuse, not returned.

The audit scores hundreds of thousands of rewrites through the reward model in chunks of
4,096, each pass allocating and freeing tensors of 1 to 90 MB. With glibc's defaults, blocks
that large come from fresh ``mmap`` pages or from a heap top trimmed back to the system after
each pass, so every pass touches new pages (tens of millions of page faults an audit). Raising
the mmap threshold to glibc's maximum and switching trimming off serves most of them from the
heap instead, at the price of a process whose resident memory stays at its peak. The arithmetic
is unchanged: only where the bytes live moves. A process setting, so the commands that audit
call it (as the commands that train set their threads), never an import or a library function.
What it buys: experiments/rl_speed/README.md ("The devices outside the loop").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from functools import cache

log = logging.getLogger(__name__)

# glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long)  # 32 MB on 64-bit
_NO_TRIM = 2**31 - 1  # the option is an int: the largest, i.e. never trim


@cache
def keep_freed_memory() -> bool:
    """Have glibc's malloc keep freed blocks for reuse, for the rest of this process (once;
    later calls do nothing). -> whether the settings took (False off glibc: nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    took = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _NO_TRIM)
    )
    log.debug("malloc keeps freed memory: %s", took)
    return took


__all__ = ["keep_freed_memory"]
