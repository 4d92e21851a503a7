"""Cutting one long token stream into (input, target) minibatches for a language model.

A language model reads ``x_1..x_T`` and predicts ``x_2..x_{T+1}``: the target is the
input shifted by one. Two ways to cut the stream into length-``num_steps`` pieces:

* **random partitioning**: every minibatch holds subsequences from random places, so
  neighbouring minibatches are unrelated and the hidden state starts fresh each time;
* **sequential partitioning**: row ``b`` of minibatch ``i+1`` continues row ``b`` of
  minibatch ``i``, so the hidden state can be carried over (and detached: truncated
  BPTT).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch


def _check(corpus_len: int, batch_size: int, num_steps: int) -> None:
    if batch_size < 1 or num_steps < 1:
        raise ValueError(f"batch_size and num_steps must be >= 1, got {batch_size}, {num_steps}")
    # the random offset (up to num_steps - 1) and the shift by one must still leave a batch
    if corpus_len < (batch_size + 1) * num_steps:
        raise ValueError(
            f"a corpus of {corpus_len} tokens is too short for batch_size={batch_size} x "
            f"num_steps={num_steps} (it needs at least {(batch_size + 1) * num_steps}); "
            "use a longer corpus or smaller batches"
        )


def random_partition(corpus: Sequence[int], batch_size: int, num_steps: int,
                     generator: torch.Generator | None = None
                     ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Minibatches of subsequences taken from random, non-overlapping places."""
    _check(len(corpus), batch_size, num_steps)
    data = torch.as_tensor(corpus, dtype=torch.long)
    offset = int(torch.randint(num_steps, (1,), generator=generator))
    num_subseqs = (len(data) - offset - 1) // num_steps
    starts = offset + num_steps * torch.randperm(num_subseqs, generator=generator)
    for i in range(0, num_subseqs - batch_size + 1, batch_size):
        idx = starts[i:i + batch_size, None] + torch.arange(num_steps)
        yield data[idx], data[idx + 1]


def sequential_partition(corpus: Sequence[int], batch_size: int, num_steps: int,
                         generator: torch.Generator | None = None
                         ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Minibatches whose rows continue the rows of the previous minibatch."""
    _check(len(corpus), batch_size, num_steps)
    data = torch.as_tensor(corpus, dtype=torch.long)
    offset = int(torch.randint(num_steps, (1,), generator=generator))
    usable = ((len(data) - offset - 1) // batch_size) * batch_size
    xs = data[offset:offset + usable].reshape(batch_size, -1)
    ys = data[offset + 1:offset + 1 + usable].reshape(batch_size, -1)
    for i in range(0, (xs.shape[1] // num_steps) * num_steps, num_steps):
        yield xs[:, i:i + num_steps], ys[:, i:i + num_steps]


def lm_batches(corpus: Sequence[int], batch_size: int, num_steps: int, *,
               sequential: bool = True, generator: torch.Generator | None = None
               ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of ``(X, Y)`` pairs, each ``batch_size x num_steps``, as a list."""
    cut = sequential_partition if sequential else random_partition
    return list(cut(corpus, batch_size, num_steps, generator=generator))
