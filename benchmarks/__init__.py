"""Benchmarks behind `make bench` (``python -m benchmarks``); each module measures one area.

Nothing here is asserted: the runner records what was measured, and the command that reproduces
it, in BENCHMARKS.md.
"""
