"""Gated recurrent cells from scratch: the LSTM and the GRU, and their language model.

**LSTM** (Hochreiter & Schmidhuber 1997, with the forget gate of Gers et al. 2000).
Three gates in ``(0, 1)`` and a cell candidate in ``(-1, 1)``, each an affine map of
``x_t`` and ``h_{t-1}``:

    i_t = sigmoid(x_t W_ii^T + b_ii + h_{t-1} W_hi^T + b_hi)     input gate
    f_t = sigmoid(x_t W_if^T + b_if + h_{t-1} W_hf^T + b_hf)     forget gate
    g_t = tanh(x_t W_ig^T + b_ig + h_{t-1} W_hg^T + b_hg)        cell candidate
    o_t = sigmoid(x_t W_io^T + b_io + h_{t-1} W_ho^T + b_ho)     output gate
    c_t = f_t * c_{t-1} + i_t * g_t                              memory cell
    h_t = o_t * tanh(c_t)                                         hidden state

**GRU** (Cho et al. 2014), with PyTorch's placement of the reset gate:

    r_t = sigmoid(x_t W_ir^T + b_ir + h_{t-1} W_hr^T + b_hr)     reset gate
    z_t = sigmoid(x_t W_iz^T + b_iz + h_{t-1} W_hz^T + b_hz)     update gate
    n_t = tanh(x_t W_in^T + b_in + r_t * (h_{t-1} W_hn^T + b_hn)) candidate
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}

The weights of all gates are stacked in one matrix per input, in the order
``i, f, g, o`` (LSTM) and ``r, z, n`` (GRU), under the names and shapes of
``torch.nn.LSTM`` / ``torch.nn.GRU``, so state dicts move between ours and theirs.
The input halves ``x_t W_i*^T + b_i*`` do not depend on the state, so a layer computes
them for every time step at once and only the recurrent halves run step by step.
"""

from __future__ import annotations

import torch
from torch import nn

from lmcourse.models.rnn import RNN, RNNLM, RecurrentModule

__all__ = [
    "GRU",
    "LSTM",
    "GRUCell",
    "GatedLM",
    "LSTMCell",
    "gru_gates",
    "gru_step",
    "lstm_gates",
    "lstm_step",
    "param_count_formula",
]


def _affine(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x W^T + b`` (``b`` may be absent)."""
    out = x @ weight.T
    return out if bias is None else out + bias


# ---- the LSTM ------------------------------------------------------------------------------

def lstm_gates(x_part: torch.Tensor, h_prev: torch.Tensor, weight_hh: torch.Tensor,
               bias_hh: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """The LSTM's gates ``(i, f, g, o)`` at one step.

    ``x_part = x_t W_ih^T + b_ih`` is the input's share of all four (``batch x 4H``);
    the state's share ``h_{t-1} W_hh^T + b_hh`` is added here, then each block gets
    its squashing function.
    """
    xi, xf, xg, xo = x_part.chunk(4, dim=-1)
    hi, hf, hg, ho = _affine(h_prev, weight_hh, bias_hh).chunk(4, dim=-1)
    i = torch.sigmoid(xi + hi)  # input gate: how much of the candidate to write
    f = torch.sigmoid(xf + hf)  # forget gate: how much of the old cell to keep
    g = torch.tanh(xg + hg)     # cell candidate: what could be written
    o = torch.sigmoid(xo + ho)  # output gate: how much of the cell to show
    return i, f, g, o


def lstm_step(x_part: torch.Tensor, h_prev: torch.Tensor, c_prev: torch.Tensor,
              weight_hh: torch.Tensor, bias_hh: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step: ``c_t = f * c_{t-1} + i * g``, ``h_t = o * tanh(c_t)``."""
    i, f, g, o = lstm_gates(x_part, h_prev, weight_hh, bias_hh)
    c = f * c_prev + i * g  # the memory cell: keep some of the old, write some of the new
    h = o * torch.tanh(c)   # what the rest of the network sees
    return h, c


# ---- the GRU -------------------------------------------------------------------------------

def gru_gates(x_part: torch.Tensor, h_prev: torch.Tensor, weight_hh: torch.Tensor,
              bias_hh: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """The GRU's ``(r, z, n)`` at one step (``x_part = x_t W_ih^T + b_ih``, ``batch x 3H``).

    The reset gate multiplies the state's share of the candidate *after* its bias
    ``b_hn`` is added (PyTorch's and cuDNN's convention).
    """
    xr, xz, xn = x_part.chunk(3, dim=-1)
    hr, hz, hn = _affine(h_prev, weight_hh, bias_hh).chunk(3, dim=-1)
    r = torch.sigmoid(xr + hr)   # reset gate: how much of the past the candidate may read
    z = torch.sigmoid(xz + hz)   # update gate: how much of the old state to keep
    n = torch.tanh(xn + r * hn)  # candidate state
    return r, z, n


def gru_step(x_part: torch.Tensor, h_prev: torch.Tensor, weight_hh: torch.Tensor,
             bias_hh: torch.Tensor | None = None) -> torch.Tensor:
    """One GRU step: ``h_t = (1 - z) * n + z * h_{t-1}``."""
    r, z, n = gru_gates(x_part, h_prev, weight_hh, bias_hh)
    return (1 - z) * n + z * h_prev  # interpolate between the candidate and the old state


# ---- single cells (the shapes and call conventions of nn.LSTMCell / nn.GRUCell) -------------

class _Cell(RecurrentModule):
    """Parameters ``weight_ih (G*H x I)``, ``weight_hh (G*H x H)``, ``bias_ih``, ``bias_hh``."""

    gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        size = self.gates * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(size)) if bias else None
        self.bias_hh = nn.Parameter(torch.empty(size)) if bias else None
        self.reset_parameters()

    def _zeros(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(*x.shape[:-1], self.hidden_size)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias}"


class LSTMCell(_Cell):
    """One LSTM step as a module, like ``nn.LSTMCell``: ``(h_t, c_t) = cell(x_t, (h, c))``.

    ``i, f, g, o = sigma(.), sigma(.), tanh(.), sigma(.)`` of ``x_t W_ih^T + b_ih +
    h_{t-1} W_hh^T + b_hh`` (four blocks); ``c_t = f*c_{t-1} + i*g``; ``h_t = o*tanh(c_t)``.
    """

    gates = 4

    def forward(self, x: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        h, c = (self._zeros(x), self._zeros(x)) if hx is None else hx
        return lstm_step(_affine(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                         self.bias_hh)


class GRUCell(_Cell):
    """One GRU step as a module, like ``nn.GRUCell``: ``h_t = cell(x_t, h)``.

    ``r, z = sigma(.)``; ``n = tanh(x_t W_in^T + b_in + r*(h W_hn^T + b_hn))``;
    ``h_t = (1 - z)*n + z*h_{t-1}``.
    """

    gates = 3

    def forward(self, x: torch.Tensor, hx: torch.Tensor | None = None) -> torch.Tensor:
        h = self._zeros(x) if hx is None else hx
        return gru_step(_affine(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh)


# ---- stacked, bidirectional layers (the interface of nn.LSTM / nn.GRU) ----------------------

State = tuple[torch.Tensor, ...]  # (h,) for a GRU, (h, c) for an LSTM


class _GatedRNN(RecurrentModule):
    """What the LSTM and the GRU share: parameters, shapes, layers and directions.

    A subclass sets ``gates`` (4 or 3), ``state_size`` (2 or 1) and ``step``, which maps
    ``(x_part_t, state, weight_hh, bias_hh)`` to the next state tuple (``h`` first).
    """

    gates = 1
    state_size = 1
    kind = "rnn"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False):
        super().__init__()
        if input_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError("input_size, hidden_size and num_layers must be positive, got "
                             f"{input_size}, {hidden_size}, {num_layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        self.num_directions = 2 if bidirectional else 1
        size = self.gates * hidden_size
        for layer in range(num_layers):  # registration order = nn.LSTM's state_dict order
            n_in = input_size if layer == 0 else hidden_size * self.num_directions
            for suffix in self._suffixes(layer):
                self.register_parameter(f"weight_ih{suffix}", nn.Parameter(torch.empty(size, n_in)))
                self.register_parameter(f"weight_hh{suffix}",
                                        nn.Parameter(torch.empty(size, hidden_size)))
                if bias:
                    self.register_parameter(f"bias_ih{suffix}", nn.Parameter(torch.empty(size)))
                    self.register_parameter(f"bias_hh{suffix}", nn.Parameter(torch.empty(size)))
        self.reset_parameters()

    def _suffixes(self, layer: int) -> list[str]:
        """``_l{layer}`` for the forward direction, ``_l{layer}_reverse`` for the backward one."""
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.num_directions]

    def weights(self, layer: int, direction: int = 0) -> tuple[torch.Tensor | None, ...]:
        """``(weight_ih, weight_hh, bias_ih, bias_hh)`` of one layer and direction."""
        suffix = self._suffixes(layer)[direction]
        return tuple(getattr(self, f"{name}{suffix}", None)
                     for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    # -- checking what comes in --

    def _check_input(self, x: torch.Tensor) -> tuple[torch.Tensor, bool]:
        """``x`` as ``T x B x input_size`` and whether it came with a batch axis."""
        if not isinstance(x, torch.Tensor) or x.dim() not in (2, 3):
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            layout = "B x T x input_size" if self.batch_first else "T x B x input_size"
            raise ValueError(f"{type(self).__name__} expects a 3-d input ({layout}) or a 2-d "
                             f"unbatched one (T x input_size), got {shape}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: the last axis of the input must be "
                             f"input_size={self.input_size}, got shape {tuple(x.shape)}")
        if not x.is_floating_point():
            raise ValueError(f"{type(self).__name__} expects a floating-point input, got "
                             f"{x.dtype} (embed or one-hot encode token ids first)")
        if x.dim() == 2:
            return x.unsqueeze(1), False
        return (x.transpose(0, 1) if self.batch_first else x), True

    def _initial_state(self, x: torch.Tensor, hx, batched: bool) -> State:
        """``hx`` as a tuple of ``(num_layers * num_directions) x B x H`` tensors."""
        name = type(self).__name__
        want = (self.num_layers * self.num_directions, x.shape[1], self.hidden_size)
        if hx is None:
            return tuple(x.new_zeros(want) for _ in range(self.state_size))
        if self.state_size == 2:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise ValueError(f"{name} expects hx = (h_0, c_0), a pair of tensors, got "
                                 f"{type(hx).__name__}")
            parts = tuple(hx)
        else:
            if not isinstance(hx, torch.Tensor):
                raise ValueError(f"{name} expects hx = h_0, one tensor, got {type(hx).__name__}")
            parts = (hx,)
        if not batched:
            parts = tuple(p.unsqueeze(1) if p.dim() == 2 else p for p in parts)
        for label, p in zip(("h_0", "c_0"), parts, strict=False):
            if tuple(p.shape) != want:
                layout = "(num_layers * num_directions, batch, hidden_size)"
                raise ValueError(f"{name}: {label} must have shape {layout} = {want}"
                                 f"{'' if batched else ' without the batch axis'}, "
                                 f"got {tuple(p.shape)}")
        return parts

    # -- running --

    def step(self, x_part: torch.Tensor, state: State, weight_hh: torch.Tensor,
             bias_hh: torch.Tensor | None) -> State:
        raise NotImplementedError

    def run_direction(self, x: torch.Tensor, state: State, layer: int, direction: int
                      ) -> tuple[torch.Tensor, State]:
        """One layer in one direction over ``x`` (``T x B x n_in``): all ``h_t`` and the last state.

        The backward direction (``direction=1``) reads the sequence from the end, so its
        ``h_t`` summarises ``x_t .. x_T``; its outputs are stored at the positions they
        belong to.
        """
        weight_ih, weight_hh, bias_ih, bias_hh = self.weights(layer, direction)
        x_parts = _affine(x, weight_ih, bias_ih)  # the input's share of every gate, all steps
        order = range(len(x) - 1, -1, -1) if direction == 1 else range(len(x))
        outputs: list[torch.Tensor] = [x_parts] * len(x)  # placeholders, all overwritten
        for t in order:
            state = self.step(x_parts[t], state, weight_hh, bias_hh)
            outputs[t] = state[0]
        return torch.stack(outputs), state

    def forward(self, x: torch.Tensor, hx=None):
        """``(output, h_n)`` (GRU) or ``(output, (h_n, c_n))`` (LSTM), as in PyTorch.

        ``output`` holds the last layer's ``h_t`` at every step (both directions
        concatenated, ``2H`` wide, when bidirectional); ``h_n`` (and ``c_n``) the last
        state of every layer and direction, ``(num_layers * num_directions) x B x H``,
        indexed ``layer * num_directions + direction``.
        """
        x, batched = self._check_input(x)
        state0 = self._initial_state(x, hx, batched)
        layer_input, finals = x, [[] for _ in range(self.state_size)]
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                out, last = self.run_direction(layer_input, tuple(s[k] for s in state0),
                                               layer, direction)
                outputs.append(out)
                for kept, s in zip(finals, last, strict=True):
                    kept.append(s)
            layer_input = torch.cat(outputs, dim=-1)  # forward and backward side by side
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = nn.functional.dropout(layer_input, self.dropout, training=True)
        output = layer_input
        final = tuple(torch.stack(kept) for kept in finals)
        if not batched:
            output, final = output.squeeze(1), tuple(s.squeeze(1) for s in final)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, (final if self.state_size == 2 else final[0])

    def extra_repr(self) -> str:
        extras = [f"{self.input_size}, {self.hidden_size}"]
        if self.num_layers != 1:
            extras.append(f"num_layers={self.num_layers}")
        for name, default in (("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                extras.append(f"{name}={getattr(self, name)}")
        return ", ".join(extras)


class LSTM(_GatedRNN):
    """A stack of LSTM layers with the arguments, parameters and outputs of ``nn.LSTM``.

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; ``output, (h_n, c_n) = lstm(x, (h_0, c_0))``.
    ``x`` is ``T x B x input_size`` (``B x T x input_size`` with ``batch_first``, or
    unbatched ``T x input_size``); a missing ``(h_0, c_0)`` means zeros. ``dropout``
    (training only) is applied to the outputs of every layer but the last.
    """

    gates, state_size, kind = 4, 2, "lstm"

    def step(self, x_part, state, weight_hh, bias_hh):
        h, c = state
        return lstm_step(x_part, h, c, weight_hh, bias_hh)


class GRU(_GatedRNN):
    """A stack of GRU layers with the arguments, parameters and outputs of ``nn.GRU``.

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; ``output, h_n = gru(x, h_0)``.
    """

    gates, state_size, kind = 3, 1, "gru"

    def step(self, x_part, state, weight_hh, bias_hh):
        return (gru_step(x_part, state[0], weight_hh, bias_hh),)


def param_count_formula(cell: str, input_size: int, hidden_size: int) -> int:
    """Parameters of one layer and direction: ``G * (H * (I + H) + 2H)`` with two bias vectors.

    ``G`` = 1 (RNN), 3 (GRU), 4 (LSTM) blocks of weights, each ``H x I`` plus ``H x H``.
    """
    blocks = {"rnn": 1, "gru": 3, "lstm": 4}[cell]
    return blocks * (hidden_size * (input_size + hidden_size) + 2 * hidden_size)


# ---- a character / word language model on top ----------------------------------------------

RECURRENT = {
    ("rnn", "ours"): RNN, ("lstm", "ours"): LSTM, ("gru", "ours"): GRU,
    ("rnn", "torch"): nn.RNN, ("lstm", "torch"): nn.LSTM, ("gru", "torch"): nn.GRU,
}


class GatedLM(RNNLM):
    """``RNNLM`` (one-hot or embedded tokens -> recurrent layers -> linear head) with a
    chosen cell: ``"rnn"``, ``"lstm"`` or ``"gru"``.

    ``impl="ours"`` uses this course's modules, ``impl="torch"`` PyTorch's fused ones
    (same parameter names, same numbers, much faster). ``forget_bias`` (LSTM only) is
    added to the forget gate's bias, as Gers et al. (2000) and Jozefowicz et al. (2015)
    recommend. Usable with :func:`lmcourse.train.fit_lm`: ``logits, state = model(x, state)``.
    """

    def __init__(self, vocab_size: int, hidden_size: int, cell: str = "lstm",
                 num_layers: int = 1, embed: int | None = None, impl: str = "ours",
                 forget_bias: float = 0.0, **rnn_kwargs):
        if (cell, impl) not in RECURRENT:
            raise ValueError(f"cell must be 'rnn', 'lstm' or 'gru' and impl 'ours' or 'torch', "
                             f"got {cell!r}, {impl!r}")
        super().__init__(vocab_size, hidden_size, num_layers=num_layers, embed=embed,
                         rnn_class=RECURRENT[cell, impl], **rnn_kwargs)
        self.cell = cell
        if forget_bias:
            if cell != "lstm":
                raise ValueError("forget_bias only applies to an LSTM")
            with torch.no_grad():
                for name, p in self.rnn.named_parameters():
                    if name.startswith("bias_ih"):  # blocks i, f, g, o: the second is f
                        p[hidden_size:2 * hidden_size] += forget_bias
