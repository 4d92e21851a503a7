"""lmcourse.timing: what the timer reads about the machine."""

from __future__ import annotations

from lmcourse.timing import cpu_has_bf16


def test_cpu_has_bf16_reads_the_flags():
    assert cpu_has_bf16("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n") is True
    assert cpu_has_bf16("flags\t\t: fpu sse avx2 amx_bf16 amx_tile\n") is True
    assert cpu_has_bf16("flags\t\t: fpu sse avx2 avx512f\n") is False
    assert cpu_has_bf16("model name\t: something\n") is False
    assert cpu_has_bf16() in (True, False, None)  # this machine's answer, whatever it is
