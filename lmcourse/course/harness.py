"""What the course's machinery did, kept out of the student's view.

A notebook that replays a cached run, checks it against its first steps or reads a
reference run also learns things only a maintainer needs: the cache entry's check, the
processor's model, the thread count. :func:`note` keeps them in a log instead of the cell's
output: appended to ``harness.log`` in the course's cache folder
(:func:`lmcourse.course.cache.cache_dir`) and sent to the ``lmcourse.harness`` logger
(shown only where logging is switched on, e.g. ``logging.basicConfig(level="INFO")``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

__all__ = ["LOG_NAME", "log_path", "note"]

LOG_NAME = "harness.log"
_logger = logging.getLogger("lmcourse.harness")


def log_path() -> Path:
    """Where the notes go: ``<cache folder>/harness.log``."""
    from lmcourse.course.cache import cache_dir

    return cache_dir() / LOG_NAME


def note(message: str) -> None:
    """Log one line about the machinery (not the lesson): to the logger and the log file.
    A log that cannot be written is skipped: a note never stops a notebook."""
    _logger.info(message)
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")
    except OSError as error:
        _logger.warning("could not write %s: %s", LOG_NAME, error)
