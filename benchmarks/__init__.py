"""Benchmarks of the course, run by ``make bench`` (``python -m benchmarks``).

Each benchmark is a function registered with :func:`benchmarks.registry.benchmark`; it
imports the course code it measures, so one whose code is not written yet is reported as
"not yet available" (its ``ImportError``) instead of failing the run. Results accumulate in
``benchmarks/results.json`` (one entry per benchmark, with when and where it was measured)
and ``benchmarks/RESULTS.md`` is rewritten from them after every run.
"""
