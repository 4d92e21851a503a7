"""The course's reference runs; importing this package registers them."""

from lmcourse.course.references import bilm_lee, lm_char, pretraining_bench  # noqa: F401
