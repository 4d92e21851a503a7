"""Run the data-scaling references (:mod:`~lmcourse.course.reference.lm_scale`) that have
no committed result yet, in order, in the background:

    nohup .venv/bin/python -m lmcourse.course.reference.scale_runs [NAME ...] > build/scale.log &

Each finished run writes ``reference/<name>/result.json`` (commit it and add the run to the
registry). A three-seed run also keeps each finished seed in ``reference/<name>/seeds/``:
commit those too, and a run cut off by the end of a sitting resumes from them instead of
starting again. Within a seed, the run checkpoints itself at every tuning evaluation (in
the course cache, ``checkpoints/``), so on the same machine a seed cut off mid-way goes on
from its last evaluation. Nothing imports this module: it only runs.
"""

from __future__ import annotations

import sys

from lmcourse.course.reference.lm_scale import SCALE_REFS
from lmcourse.course.reference.result import result_path
from lmcourse.course.reference.running import run


def run_missing(names: list[str] | None = None) -> None:
    """Run, in order, every scale reference named (by default all but the ``-converged``
    ones, hours on a CPU) without a result."""
    unknown = sorted(set(names or ()) - set(SCALE_REFS))
    if unknown:
        raise SystemExit(f"no scale reference named {unknown}; known: {sorted(SCALE_REFS)}")
    for name, ref in SCALE_REFS.items():
        # the converged runs (up to 20,000 steps: hours on a CPU) only when named
        wanted = name in names if names else not name.endswith("-converged")
        if wanted and not result_path(name).exists():
            run(ref, progress=True)


if __name__ == "__main__":
    run_missing(sys.argv[1:] or None)
