"""``labs/*.ipynb`` are the student copies, generated from ``labs/solutions/`` by
``python -m tools.nbtools student``: their checks fail by design, so ``pytest --nbval``
never collects them. The notebooks that are executed and tested are the solutions."""

from pathlib import Path

collect_ignore = sorted(p.name for p in Path(__file__).parent.glob("*.ipynb"))
