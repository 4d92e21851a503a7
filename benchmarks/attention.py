"""Time our scaled dot-product attention against PyTorch's fused kernel.

    python -m benchmarks.attention            # a few sizes, a table with the ratios

Ours (``lmcourse.models.attention.scaled_dot_product_attention``) computes the scores,
the softmax and the weighted sum as three separate operations and keeps the ``T x S``
weights, because the course wants to look at them. ``torch.nn.functional.
scaled_dot_product_attention`` may fuse the three (flash / memory-efficient kernels) and
never returns the weights. Both run in the same process on the same inputs; the ratio
ours / torch is what to read, the absolute times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial

import torch
import torch.nn.functional as F

import lmcourse
from lmcourse.models.attention import causal_mask, scaled_dot_product_attention
from lmcourse.timing import compare

#: (batch, heads, sequence length, head dimension)
DEFAULT_SIZES = ((8, 8, 64, 64), (8, 8, 256, 64), (4, 8, 512, 64), (2, 8, 1024, 64))


def run(sizes: Sequence[tuple[int, int, int, int]] = DEFAULT_SIZES, *, causal: bool = False,
        device: torch.device | str | None = None, dtype: torch.dtype = torch.float32,
        repeats: int = 10, seed: int = 0) -> list[dict]:
    """One row per size: ``B, H, T, d``, ``ours_ms``, ``torch_ms``, ``ratio`` (ours / torch)
    and ``max_diff`` (largest difference of the outputs, a sanity check)."""
    device = torch.device(device) if device else lmcourse.device()
    g = torch.Generator().manual_seed(seed)
    rows = []
    for B, H, T, d in sizes:
        q, k, v = (torch.randn(B, H, T, d, generator=g, dtype=dtype).to(device)
                   for _ in range(3))
        mask = causal_mask(T, device=device) if causal else None
        with torch.no_grad():
            ours, ref = compare(partial(scaled_dot_product_attention, q, k, v, mask),
                                partial(F.scaled_dot_product_attention, q, k, v, attn_mask=mask),
                                repeats=repeats, warmup=2, device=device)
            diff = (scaled_dot_product_attention(q, k, v, mask)[0]
                    - F.scaled_dot_product_attention(q, k, v, attn_mask=mask)).abs().max()
        rows.append(dict(B=B, H=H, T=T, d=d, ours_ms=1e3 * ours, torch_ms=1e3 * ref,
                         ratio=ours / ref,
                         max_diff=float(diff)))
    return rows


def format_table(rows: Sequence[dict]) -> str:
    """The rows as a plain-text table."""
    lines = [f"{'B':>3} {'H':>3} {'T':>5} {'d':>4} {'ours (ms)':>10} {'torch (ms)':>11} "
             f"{'ours/torch':>11} {'max |diff|':>11}"]
    for r in rows:
        lines.append(f"{r['B']:>3} {r['H']:>3} {r['T']:>5} {r['d']:>4} {r['ours_ms']:>10.2f} "
                     f"{r['torch_ms']:>11.2f} {r['ratio']:>10.2f}x {r['max_diff']:>11.1e}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--causal", action="store_true", help="use a causal mask")
    parser.add_argument("--device", default=None,
                        help="cpu or cuda (default: lmcourse.device(), i.e. LMCOURSE_DEVICE "
                             "or cuda when there is one)")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    rows = run(causal=args.causal, device=args.device, repeats=args.repeats)
    device = args.device or lmcourse.device()
    print(f"scaled dot-product attention on {device}, float32, "
          f"{torch.get_num_threads()} threads{', causal' if args.causal else ''}")
    print(format_table(rows))


if __name__ == "__main__":
    main()
