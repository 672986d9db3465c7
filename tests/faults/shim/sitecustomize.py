"""A test shim, on PYTHONPATH only for the fault suite's `rate` processes: with
RATE_TEST_FIXED_STAMP set, every output of the process is stamped with it, so that runs
started together contend for the very same names (as runs of one second do)."""

import os

_stamp = os.environ.get("RATE_TEST_FIXED_STAMP")
if _stamp:
    import rate.store

    rate.store.timestamp = lambda now=None: _stamp
