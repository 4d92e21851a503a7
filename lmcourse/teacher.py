"""Moved to :mod:`lmcourse.course.teacher` (the harness); kept for old notebooks' imports."""
from lmcourse.course.teacher import *  # noqa: F403
from lmcourse.course.teacher import __all__  # noqa: F401
