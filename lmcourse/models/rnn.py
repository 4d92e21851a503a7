"""A recurrent neural network from scratch, its language model, and backpropagation through time.

One step of an Elman RNN reads the input ``x_t`` and the previous hidden state:

    h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)

A language model puts a linear head on every ``h_t`` to score the next token,
``o_t = h_t W_hq^T + b_q``. The parameter names and shapes are those of
``torch.nn.RNN``, so a state dict moves between the two in both directions.

Backpropagation through time (BPTT) runs the chain rule backwards along the
sequence. With ``a_t`` the pre-activation and ``g_t`` the gradient the loss sends
straight to ``h_t`` (through the head),

    dL/dh_t = g_t + (dh_{t+1}/dh_t)^T dL/dh_{t+1},   dh_{t+1}/dh_t = diag(1 - h_{t+1}^2) W_hh,

so the gradient reaching ``h_k`` from a loss at step ``t`` is a product of ``t - k``
Jacobians. Truncation cuts this recursion; :func:`bptt` takes the cut as an argument.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lmcourse.sampling import generate  # noqa: F401  (re-exported beside the RNN LM)
from lmcourse.train import lm_loss

__all__ = [
    "RNN",
    "RNNLM",
    "RecurrentModule",
    "bptt",
    "full_bptt",
    "generate",
    "lm_bptt_inputs",
    "randomized_truncation",
    "regular_truncation",
    "rnn_step",
]

_ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu}


def rnn_step(x_t: torch.Tensor, h_prev: torch.Tensor, weight_ih: torch.Tensor,
             weight_hh: torch.Tensor, bias_ih: torch.Tensor | None = None,
             bias_hh: torch.Tensor | None = None, nonlinearity: str = "tanh") -> torch.Tensor:
    """One time step, ``h_t = phi(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``.

    ``x_t`` is ``batch x input_size``, ``h_prev`` is ``batch x hidden_size``.
    """
    a_t = x_t @ weight_ih.T + h_prev @ weight_hh.T
    if bias_ih is not None:
        a_t = a_t + bias_ih + bias_hh
    return _ACTIVATIONS[nonlinearity](a_t)


class RecurrentModule(nn.Module):
    """What every recurrent layer and cell of the course shares: PyTorch's initialisation,
    every parameter uniform in ``(-1/sqrt(H), 1/sqrt(H))`` for hidden size ``H``."""

    hidden_size: int

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)


class RNN(RecurrentModule):
    """A stack of Elman RNN layers with the arguments, parameters and outputs of ``nn.RNN``.

    ``forward(x, h0)`` takes ``x`` as ``T x B x input_size`` (``B x T x input_size``
    with ``batch_first``; or unbatched ``T x input_size``) and ``h0`` as
    ``num_layers x B x hidden_size`` (zeros when ``None``). It returns the last layer's
    states at every step and every layer's last state: ``(output, h_n)``.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False):
        super().__init__()
        if nonlinearity not in _ACTIVATIONS:
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.nonlinearity, self.bias, self.batch_first = nonlinearity, bias, batch_first
        for layer in range(num_layers):
            n_in = input_size if layer == 0 else hidden_size
            self.register_parameter(f"weight_ih_l{layer}",
                                    nn.Parameter(torch.empty(hidden_size, n_in)))
            self.register_parameter(f"weight_hh_l{layer}",
                                    nn.Parameter(torch.empty(hidden_size, hidden_size)))
            if bias:
                self.register_parameter(f"bias_ih_l{layer}", nn.Parameter(torch.empty(hidden_size)))
                self.register_parameter(f"bias_hh_l{layer}", nn.Parameter(torch.empty(hidden_size)))
        self.reset_parameters()

    def layer_weights(self, layer: int) -> tuple[torch.Tensor, ...]:
        """``(weight_ih, weight_hh, bias_ih, bias_hh)`` of one layer (biases may be None)."""
        get = lambda name: getattr(self, f"{name}_l{layer}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        unbatched = x.dim() == 2
        if unbatched:
            x = x.unsqueeze(1)
            h0 = None if h0 is None else h0.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)  # the loop below runs over the first axis: time
        if h0 is None:
            h0 = x.new_zeros(self.num_layers, x.shape[1], self.hidden_size)
        layer_input, last_states = x, []
        for layer in range(self.num_layers):
            h, outputs = h0[layer], []
            for x_t in layer_input:  # one step per position of the sequence
                h = rnn_step(x_t, h, *self.layer_weights(layer), self.nonlinearity)
                outputs.append(h)
            layer_input = torch.stack(outputs)  # the next layer reads this layer's states
            last_states.append(h)
        output, h_n = layer_input, torch.stack(last_states)
        if unbatched:
            return output.squeeze(1), h_n.squeeze(1)
        if self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n

    def extra_repr(self) -> str:
        return (f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"nonlinearity={self.nonlinearity!r}, bias={self.bias}, "
                f"batch_first={self.batch_first}")


class RNNLM(nn.Module):
    """Next-token language model: one-hot (or embedded) tokens -> RNN -> linear head.

    ``logits, state = model(x, state)``: ``x`` is ``B x T`` token ids, ``logits`` is
    ``B x T x V`` (the score of every next token at every position), ``state`` the
    hidden state to carry into the next minibatch (``None`` means zeros).
    ``rnn_class`` may be any module with ``nn.RNN``'s arguments and call convention
    (``nn.RNN``, ``nn.LSTM``, ``nn.GRU``, or the course's own gated cells).
    ``io_dropout`` drops units of the vectors the RNN reads and of the top layer's outputs
    before the head: dropout on the non-recurrent connections only (Zaremba et al. 2014),
    which a ``dropout`` passed on to ``rnn_class`` applies between stacked layers.
    """

    def __init__(self, vocab_size: int, hidden_size: int, num_layers: int = 1,
                 embed: int | None = None, rnn_class: type[nn.Module] = RNN,
                 io_dropout: float = 0.0, **rnn_kwargs):
        super().__init__()
        if not 0.0 <= io_dropout < 1.0:
            raise ValueError(f"io_dropout is a probability in [0, 1), got {io_dropout!r}")
        self.vocab_size = vocab_size
        # no module at all when off, so models without it draw the same random numbers
        self.io_dropout = nn.Dropout(io_dropout) if io_dropout > 0 else nn.Identity()
        self.embedding = None if embed is None else nn.Embedding(vocab_size, embed)
        n_in = vocab_size if embed is None else embed
        self.rnn = rnn_class(n_in, hidden_size, num_layers=num_layers, batch_first=True,
                             **rnn_kwargs)
        self.head = nn.Linear(hidden_size, vocab_size)

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """The vectors the RNN reads: one-hot rows of the identity, or learned embeddings."""
        if self.embedding is None:
            return nn.functional.one_hot(x, self.vocab_size).to(self.head.weight.dtype)
        return self.embedding(x)

    def forward(self, x: torch.Tensor, state=None):
        hidden, state = self.rnn(self.io_dropout(self.inputs(x)), state)
        return self.head(self.io_dropout(hidden)), state


# ---- backpropagation through time, by hand -------------------------------------------------

def full_bptt(seq_len: int) -> torch.Tensor:
    """Keep every backward step: weight 1 on each ``h_t -> h_{t-1}`` link."""
    return torch.ones(seq_len, dtype=torch.float64)


def regular_truncation(seq_len: int, tau: int) -> torch.Tensor:
    """Cut the gradient every ``tau`` steps (the chunks of truncated BPTT)."""
    keep = torch.ones(seq_len, dtype=torch.float64)
    keep[::tau] = 0.0
    return keep


def randomized_truncation(seq_len: int, cut_prob: float,
                          generator: torch.Generator | None = None) -> torch.Tensor:
    """Cut each link with probability ``c``; scale the kept ones by ``1/(1-c)`` (unbiased).

    Tallec & Ollivier (2017): a gradient that survives ``k`` links has probability
    ``(1-c)^k`` and weight ``(1-c)^-k``, so in expectation every path counts once.
    """
    u = torch.rand(seq_len, generator=generator, dtype=torch.float64)
    return (u >= cut_prob).double() / (1.0 - cut_prob)


def lm_bptt_inputs(model: RNNLM, x_ids: torch.Tensor, y_ids: torch.Tensor
                   ) -> tuple[torch.Tensor, ...]:
    """Everything :func:`bptt` needs for a one-layer ``RNNLM``'s loss on ``(x_ids, y_ids)``.

    Runs the forward pass once, caches the states ``h_t``, and lets autograd take only
    the last, easy step: the direct gradient ``g_t = dL/dh_t`` through the linear head.
    Returns ``(x, h, h0, weight_hh, grad_h)``, time-first (``T x B x ...``), h0 = zeros.
    """
    x = model.inputs(x_ids).detach()                 # B x T x input_size
    with torch.no_grad():
        h, _ = model.rnn(x)                          # B x T x H, the cached states
    h.requires_grad_()
    (grad_h,) = torch.autograd.grad(lm_loss(model.head(h), y_ids), h)
    time_first = lambda a: a.detach().transpose(0, 1)  # noqa: E731
    return (time_first(x), time_first(h), torch.zeros_like(h[:, 0]),
            model.rnn.weight_hh_l0.detach(), time_first(grad_h))


def bptt(x: torch.Tensor, h: torch.Tensor, h0: torch.Tensor, weight_hh: torch.Tensor,
         grad_h: torch.Tensor, keep: torch.Tensor | None = None, nonlinearity: str = "tanh"
         ) -> tuple[dict[str, torch.Tensor], int]:
    """Gradients of one RNN layer by backpropagation through time, written out.

    ``x`` (``T x B x I``) are the inputs, ``h`` (``T x B x H``) the states the forward
    pass computed from ``h0``, ``grad_h[t]`` the gradient the loss sends straight to
    ``h_t``. Going backwards, ``delta_t = grad_h[t] + carry`` is ``dL/dh_t`` and

        carry <- keep[t] * (delta_t * phi'(a_t)) W_hh      (one Jacobian product)

    is what flows on to ``h_{t-1}``; ``keep[t] = 0`` truncates there. Returns the
    parameter gradients (``nn.RNN`` names, plus ``"h0"``) and the number of Jacobian
    products computed.
    """
    keep = full_bptt(len(x)) if keep is None else keep
    grads = {"weight_ih": torch.zeros(weight_hh.shape[0], x.shape[-1], dtype=h.dtype),
             "weight_hh": torch.zeros_like(weight_hh),
             "bias": torch.zeros(weight_hh.shape[0], dtype=h.dtype)}
    carry, products = torch.zeros_like(h[0]), 0
    for t in reversed(range(len(x))):
        delta = grad_h[t] + carry                                        # dL/dh_t
        slope = 1 - h[t] ** 2 if nonlinearity == "tanh" else (h[t] > 0).to(h.dtype)
        da = delta * slope                                               # dL/da_t
        h_prev = h[t - 1] if t > 0 else h0
        grads["weight_ih"] += da.T @ x[t]
        grads["weight_hh"] += da.T @ h_prev
        grads["bias"] += da.sum(0)
        if keep[t] != 0:
            carry = keep[t] * (da @ weight_hh)                           # dL/dh_{t-1}
            products += 1
        else:
            carry = torch.zeros_like(carry)
    grads["bias_ih"] = grads["bias_hh"] = grads.pop("bias")  # a_t has both biases added
    grads["h0"] = carry
    return grads, products
