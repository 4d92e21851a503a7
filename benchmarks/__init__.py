"""Benchmarks of the course, run by ``make bench`` (``python -m benchmarks``).

Each benchmark is a function registered with :func:`benchmarks.registry.benchmark`; it
says which course modules it needs, so one that is not written yet is reported as
"not yet available" instead of failing the run. Results accumulate in
``benchmarks/results.json`` (one entry per benchmark, with when and where it was measured)
and ``benchmarks/RESULTS.md`` is rewritten from them after every run.
"""
