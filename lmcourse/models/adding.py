r"""The adding problem (Hochreiter & Schmidhuber 1997): a learned task with a long time lag.

Each example is a sequence of ``T`` pairs $(v_t, m_t)$: $v_t$ uniform in $[0, 1]$ and
$m_t \in \{0, 1\}$ a marker set at exactly two positions, one in the first half of the
sequence and one in the second. After reading all of it, the model must output

$$y = \sum_t m_t\, v_t ,$$

the sum of the two marked values. The first marked value must be kept for at least
$T/2$ steps while $T/2$ or more distractors go by, so the lag grows with $T$. A model
that ignores the input and always answers the mean, $\mathbb{E}[y] = 1$, has mean
squared error $\mathrm{Var}(y) = 2 \cdot \tfrac{1}{12} = \tfrac16 \approx 0.167$: the
trivial baseline every recurrent cell must beat.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["AddingResult", "SequenceRegressor", "adding_batch", "train_adding"]

TRIVIAL_MSE = 1 / 6  # Var(v_a + v_b) for two independent uniform values


def adding_batch(n: int, length: int, generator: torch.Generator | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` examples of length ``length``: inputs ``n x length x 2`` (value, marker) and
    targets ``n`` (the sum of the two marked values)."""
    if length < 2:
        raise ValueError(f"the adding problem needs sequences of length >= 2 (one marker in "
                         f"each half), got length={length}.")
    values = torch.rand(n, length, generator=generator)
    half = length // 2
    first = torch.randint(0, half, (n,), generator=generator)
    second = torch.randint(half, length, (n,), generator=generator)
    markers = torch.zeros(n, length)
    rows = torch.arange(n)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    return torch.stack([values, markers], dim=-1), (values * markers).sum(dim=1)


class SequenceRegressor(nn.Module):
    """A recurrent layer (PyTorch's fused ``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU``) that reads
    the whole sequence, and a linear layer that maps its last hidden state to one number.
    ``forget_bias`` is added to an LSTM's forget-gate bias (Gers et al. 2000)."""

    CELLS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}

    def __init__(self, cell: str, hidden_size: int = 32, input_size: int = 2,
                 forget_bias: float = 0.0):
        super().__init__()
        if cell not in self.CELLS:
            raise ValueError(f"cell must be one of {sorted(self.CELLS)}, got {cell!r}")
        if forget_bias and cell != "lstm":
            raise ValueError("forget_bias only applies to an LSTM")
        self.rnn = self.CELLS[cell](input_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, 1)
        if forget_bias:
            with torch.no_grad():  # gate blocks i, f, g, o: the second is f
                self.rnn.bias_ih_l0[hidden_size:2 * hidden_size] += forget_bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.rnn(x)
        return self.head(output[:, -1]).squeeze(-1)


@dataclass
class AddingResult:
    mse: float               # test mean squared error
    trivial_mse: float       # test MSE of always answering 1 (the mean)
    examples_per_second: float


def train_adding(cell: str, length: int, steps: int, seed: int, *, hidden_size: int = 32,
                 batch_size: int = 64, lr: float = 0.02, forget_bias: float = 0.0,
                 test_size: int = 2000, device: torch.device | str = "cpu") -> AddingResult:
    """Train a :class:`SequenceRegressor` on fresh batches of the adding problem (Adam,
    gradient norm clipped at 1) and measure it on ``test_size`` held-out sequences."""
    torch.manual_seed(seed)
    data = torch.Generator().manual_seed(seed)
    model = SequenceRegressor(cell, hidden_size, forget_bias=forget_bias).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    start = time.perf_counter()
    for _ in range(steps):
        x, y = adding_batch(batch_size, length, data)
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    seconds = time.perf_counter() - start
    x, y = adding_batch(test_size, length, torch.Generator().manual_seed(10_000 + length))
    with torch.no_grad():
        mse = float(nn.functional.mse_loss(model(x.to(device)).cpu(), y))
    trivial = float(((y - 1.0) ** 2).mean())
    return AddingResult(mse, trivial, steps * batch_size / max(seconds, 1e-9))
