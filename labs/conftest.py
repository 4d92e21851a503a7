"""``labs/NN_name.ipynb`` are the student copies, generated from ``labs/solutions/`` by
``python -m tools.nbtools student``: their checks fail by design, so ``pytest --nbval``
never collects them. The notebooks that are executed and tested are the solutions."""

collect_ignore_glob = ["[0-9]*.ipynb"]  # relative to labs/: labs/solutions/ is still collected
