"""Pictures for gated cells: gradient highways and gate activations.

The gradient-flow experiment of :mod:`lmcourse.viz.gradient_flow` runs a
random recurrent chain whose input is already projected, ``x_t`` of size ``H``, and
whose recurrent matrix ``W`` has spectral radius ``rho``. Here the same experiment
gets an LSTM and a GRU, registered as ``"lstm"`` and ``"gru"``:

    LSTM:  i, f, o = sigmoid(h W_*^T + x U_*^T + b_*),  g = phi(h W^T + x),
           c_t = f * c_{t-1} + i * g,                    h_t = o * phi(c_t)
    GRU:   r, z    = sigmoid(h W_*^T + x U_*^T + b_*),  n = phi(r * (h W^T) + x),
           h_t = (1 - z) * n + z * h_{t-1}

``W`` (spectral radius ``rho``) plays the RNN's role in the candidate; the gates get
fixed random matrices at PyTorch's scale and a bias: ``forget_bias`` pushes ``f``
(LSTM) and ``update_bias`` pushes ``z`` (GRU) towards 1, i.e. towards *keeping* the
state. Along the cell, ``dc_t / dc_{t-1}`` contains ``diag(f_t)``: no matrix, no
squashing slope, so when the gate is open the gradient travels back unharmed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import torch

from lmcourse.models.gated import GatedLM, _affine, gru_step, lstm_gates, lstm_step
from lmcourse.models.rnn import rnn_step
from lmcourse.viz.gradient_flow import NONLINEARITIES, Cell, register_cell

__all__ = ["gru_chain", "hidden_gradient_norms", "lstm_chain", "lstm_gate_trace",
           "plot_gate_heatmap"]

#: Gate biases of the cells registered for the widget (Gers et al. 2000 and Jozefowicz
#: et al. 2015 recommend initialising the LSTM's forget-gate bias to 1).
DEFAULT_GATE_BIAS = 1.0


def _gate_matrices(hidden_size: int, count: int, seed: int = 1234) -> list[torch.Tensor]:
    """``count`` fixed random ``H x H`` matrices with entries of variance ``1/H`` (float64)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(hidden_size, hidden_size, generator=g, dtype=torch.float64)
            / math.sqrt(hidden_size) for _ in range(count)]


def lstm_chain(weight: torch.Tensor, nonlinearity: str = "tanh",
               forget_bias: float = DEFAULT_GATE_BIAS) -> Cell:
    """An LSTM for the gradient-flow experiment; ``weight`` drives the cell candidate."""
    phi = NONLINEARITIES[nonlinearity]
    w_i, w_f, w_o, u_i, u_f, u_o = _gate_matrices(weight.shape[0], 6)

    def step(state, x):
        h, c = state
        i = torch.sigmoid(h @ w_i.T + x @ u_i.T)
        f = torch.sigmoid(h @ w_f.T + x @ u_f.T + forget_bias)
        g = phi(h @ weight.T + x)
        o = torch.sigmoid(h @ w_o.T + x @ u_o.T)
        c = f * c + i * g
        return o * phi(c), c

    return Cell(step=step, init=lambda h0: (h0, torch.zeros_like(h0)))


def gru_chain(weight: torch.Tensor, nonlinearity: str = "tanh",
              update_bias: float = DEFAULT_GATE_BIAS) -> Cell:
    """A GRU for the gradient-flow experiment; ``weight`` drives the candidate."""
    phi = NONLINEARITIES[nonlinearity]
    w_r, w_z, u_r, u_z = _gate_matrices(weight.shape[0], 4)

    def step(state, x):
        (h,) = state
        r = torch.sigmoid(h @ w_r.T + x @ u_r.T)
        z = torch.sigmoid(h @ w_z.T + x @ u_z.T + update_bias)
        n = phi(r * (h @ weight.T) + x)
        return ((1 - z) * n + z * h,)

    return Cell(step=step)


register_cell("lstm", partial(lstm_chain, forget_bias=DEFAULT_GATE_BIAS))
register_cell("gru", partial(gru_chain, update_bias=DEFAULT_GATE_BIAS))


# ---- looking inside a trained model: what the pictures below draw ----------------------------

def hidden_gradient_norms(model: GatedLM, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """``||dL_T / dh_t||`` for ``t = 1..T``, averaged over the batch.

    ``L_T`` is the cross-entropy of the *last* prediction only, so the curve shows how
    much of that loss's gradient reaches each earlier hidden state. The first layer is
    unrolled by hand (works for ours and PyTorch's modules: same parameter names); for
    an LSTM the gradient also flows along ``c_t``, which is part of the state but not
    of ``h_t``, so ``||dL/dh_t||`` is what reaches the hidden state itself.
    """
    rnn = model.rnn
    w_ih, w_hh = rnn.weight_ih_l0, rnn.weight_hh_l0
    b_ih, b_hh = getattr(rnn, "bias_ih_l0", None), getattr(rnn, "bias_hh_l0", None)
    kind = model.cell
    inputs = model.inputs(x).transpose(0, 1)  # T x B x I
    h = inputs.new_zeros(inputs.shape[1], model.head.in_features)
    c, hiddens = torch.zeros_like(h), []
    for x_t in inputs:
        if kind == "rnn":
            h = rnn_step(x_t, h, w_ih, w_hh, b_ih, b_hh)
        elif kind == "lstm":
            h, c = lstm_step(_affine(x_t, w_ih, b_ih), h, c, w_hh, b_hh)
        else:
            h = gru_step(_affine(x_t, w_ih, b_ih), h, w_hh, b_hh)
        hiddens.append(h)
    loss = torch.nn.functional.cross_entropy(model.head(h), y[:, -1], reduction="sum")
    grads = torch.autograd.grad(loss, hiddens)
    return np.array([float(g.norm(dim=-1).mean()) for g in grads])


@torch.no_grad()
def lstm_gate_trace(lstm: torch.nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Gates ``i, f, g, o`` and the cell ``c`` of the first layer at every step.

    ``lstm`` is ours or ``nn.LSTM``; ``x`` is one sequence, ``T x input_size``. Returns
    ``T x H`` tensors under the keys ``"i", "f", "g", "o", "c", "h"``.
    """
    w_ih, w_hh = lstm.weight_ih_l0, lstm.weight_hh_l0
    b_ih, b_hh = getattr(lstm, "bias_ih_l0", None), getattr(lstm, "bias_hh_l0", None)
    h = x.new_zeros(lstm.hidden_size)
    c = torch.zeros_like(h)
    trace: dict[str, list[torch.Tensor]] = {k: [] for k in "ifgoch"}
    for x_part in _affine(x, w_ih, b_ih):
        gates = lstm_gates(x_part, h, w_hh, b_hh)  # recorded; lstm_step recomputes them
        h, c = lstm_step(x_part, h, c, w_hh, b_hh)
        for key, value in zip("ifgoch", (*gates, c, h), strict=True):
            trace[key].append(value)
    return {k: torch.stack(v) for k, v in trace.items()}


def plot_gate_heatmap(trace: dict[str, torch.Tensor], text: str, units: Sequence[int],
                      gates: Sequence[str] = ("i", "f", "o"),
                      names: dict[str, str] | None = None) -> plt.Figure:
    """One heatmap per gate: rows are hidden units, columns the characters of ``text``.

    ``trace`` maps a gate's letter to a ``T x H`` tensor (as from
    :func:`lstm_gate_trace`); values in ``(0, 1)``.
    """
    names = names or {"i": "input gate i", "f": "forget gate f", "o": "output gate o",
                      "g": "candidate g", "c": "cell c", "h": "hidden h"}
    fig, axes = plt.subplots(len(gates), 1, figsize=(max(7, 0.16 * len(text)), 1.3 * len(gates)
                                                    + 0.6 * len(units) / 4), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, gate in zip(axes, gates, strict=True):
        values = trace[gate][:, list(units)].T.cpu().numpy()
        image = ax.imshow(values, aspect="auto", cmap="viridis", vmin=0, vmax=1,
                          interpolation="nearest")
        ax.set_yticks(range(len(units)), [str(u) for u in units], fontsize=7)
        ax.set_ylabel(names.get(gate, gate), fontsize=8)
    axes[-1].set_xticks(range(len(text)), [("␣" if ch == " " else ch) for ch in text],
                        fontsize=7)
    axes[-1].set_xlabel("character read at step t (rows: hidden units)")
    fig.colorbar(image, ax=list(axes), fraction=0.02, pad=0.01)
    return fig
