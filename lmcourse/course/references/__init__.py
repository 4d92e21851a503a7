"""The course's reference runs; importing this package registers them."""

from lmcourse.course.references import bilm_lee, lm_char  # noqa: F401
