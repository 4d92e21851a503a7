"""ELMo (Peters et al., 2018): a character-aware bidirectional LM and its layer mix.

Token encoder (Kim et al., 2016): characters -> embeddings -> 1-D convolutions of several
widths -> max over time -> highway layers -> linear projection, giving ``x_k``.

biLM: a forward LSTM LM reads ``t_1..t_k`` and predicts ``t_{k+1}``; a backward LSTM LM
reads ``t_N..t_k`` and predicts ``t_{k-1}``. Both share the token encoder and the softmax;
training maximises

    sum_k [ log p(t_k | t_1..t_{k-1}) + log p(t_k | t_{k+1}..t_N) ].

Representations (2L+1 vectors per token, stored as L+1 layers of width 2d):
``h_{k,0} = [x_k; x_k]`` and ``h_{k,j} = [fwd h_{k,j}; bwd h_{k,j}]`` for j = 1..L.

ELMo: ``ELMo_k = gamma * sum_j softmax(s)_j h_{k,j}``.

The LSTMs are ``torch.nn.LSTM`` (with its ``proj_size`` for the paper's projected LSTM):
our ``lmcourse.models.gated.LSTM`` computes the same function, but its
Python loop over time steps is too slow to train a biLM inside a notebook's budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import torch
from torch import nn

from lmcourse.train import clip_gradients, perplexity

PAD, BOW, EOW = 0, 1, 2  # character ids: padding, beginning and end of word
NUM_CHARS = 256 + 3  # every UTF-8 byte, shifted past the three specials
ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}  # of the character convolutions


def encode_chars(words: Sequence[str], max_chars: int = 16) -> torch.Tensor:
    """Words -> ``len(words) x max_chars`` byte ids: BOW, bytes (+3), EOW, then PAD.

    Words longer than ``max_chars - 2`` bytes are cut (their EOW is kept).
    """
    out = torch.full((len(words), max_chars), PAD, dtype=torch.long)
    for i, word in enumerate(words):
        ids = [b + 3 for b in word.encode("utf-8")][: max_chars - 2]
        row = [BOW, *ids, EOW]
        out[i, : len(row)] = torch.tensor(row)
    return out


class Highway(nn.Module):
    """One highway layer (Srivastava et al., 2015):

        t = sigmoid(x W_T^T + b_T),   y = t * g(x W_H^T + b_H) + (1 - t) * x.

    ``t`` is the transform gate, ``1 - t`` the carry gate. A negative ``gate_bias`` at
    initialisation makes the layer start close to the identity.
    """

    def __init__(self, dim: int, gate_bias: float = -1.0, activation=torch.relu):
        super().__init__()
        self.transform = nn.Linear(dim, dim)  # W_H, b_H
        self.gate = nn.Linear(dim, dim)  # W_T, b_T
        self.activation = activation
        nn.init.constant_(self.gate.bias, gate_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.sigmoid(self.gate(x))
        return t * self.activation(self.transform(x)) + (1 - t) * x


class CharCNN(nn.Module):
    """Token encoder: chars (``... x C`` ids) -> ``... x output_dim`` vectors.

    For each width w with n filters: ``f[i] = max_t g(conv_w(E[chars])[i, t])``, with
    ``g = relu`` as in ELMo's released options (``"activation": "relu"``; Kim et al. 2016
    used ``tanh``, available as ``activation="tanh"``); the maxima of all widths are
    concatenated, passed through highway layers, and projected to ``output_dim``. Our
    addition (not in ELMo): a LayerNorm on the projection keeps ``x_k`` at unit scale, so a
    tiny model trained briefly with a large learning rate does not saturate its LSTM gates.
    """

    def __init__(self, output_dim: int, char_dim: int = 16,
                 filters: Sequence[tuple[int, int]] = ((1, 16), (2, 16), (3, 32), (4, 64)),
                 num_highway: int = 1, num_chars: int = NUM_CHARS, activation: str = "relu"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got "
                             f"{activation!r}")
        self.activation = ACTIVATIONS[activation]
        self.embed = nn.Embedding(num_chars, char_dim, padding_idx=PAD)
        self.convs = nn.ModuleList(nn.Conv1d(char_dim, n, w) for w, n in filters)
        width = sum(n for _, n in filters)
        self.highways = nn.ModuleList(Highway(width) for _ in range(num_highway))
        self.project = nn.Linear(width, output_dim)
        self.norm = nn.LayerNorm(output_dim)

    def pooled(self, chars: torch.Tensor) -> torch.Tensor:
        """``N x C`` ids -> ``N x sum(n)``: each filter's maximum over positions."""
        e = self.embed(chars).transpose(1, 2)  # N x char_dim x C
        return torch.cat([self.activation(conv(e)).amax(dim=2) for conv in self.convs],
                         dim=1)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        lead, flat = chars.shape[:-1], chars.reshape(-1, chars.shape[-1])
        # a word's vector depends on its characters only: encode each distinct word once
        words, where = torch.unique(flat, dim=0, return_inverse=True)
        h = self.pooled(words)
        for highway in self.highways:
            h = highway(h)
        return self.norm(self.project(h))[where].reshape(*lead, -1)


class BiLM(nn.Module):
    """Forward and backward L-layer LSTM LMs over a shared ``CharCNN`` and a shared softmax.

    ``dim`` is the width of ``x_k`` and of every LSTM output (each LSTM has ``hidden``
    cells projected to ``dim`` when ``hidden > dim``). Layers above the first add a
    residual connection, as in ELMo. ``dropout`` (0 by default) is applied to the input of
    every LSTM layer and to the input of the softmax.
    """

    def __init__(self, vocab_size: int, dim: int = 64, hidden: int = 128, num_layers: int = 2,
                 dropout: float = 0.0, **encoder_kwargs):
        super().__init__()
        self.encoder = CharCNN(dim, **encoder_kwargs)
        self.drop = nn.Dropout(dropout)
        proj = dim if hidden > dim else 0
        if not proj and hidden != dim:
            raise ValueError("hidden must be >= dim")

        def stack() -> nn.ModuleList:
            return nn.ModuleList(nn.LSTM(dim, hidden, batch_first=True, proj_size=proj)
                                 for _ in range(num_layers))

        self.forward_lstms, self.backward_lstms = stack(), stack()
        self.softmax = nn.Linear(dim, vocab_size)  # Theta_s, shared by both directions
        self.num_layers = num_layers

    def _run(self, lstms: nn.ModuleList, x: torch.Tensor) -> list[torch.Tensor]:
        outputs, h = [], x
        for j, lstm in enumerate(lstms):
            out, _ = lstm(self.drop(h))
            h = out + h if j > 0 else out  # residual connection above the first layer
            outputs.append(h)
        return outputs

    def directional_states(self, chars: torch.Tensor
                           ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """``B x T x C`` char ids -> (x, forward layer outputs, backward layer outputs).

        The backward LM is the forward recipe run on the time-reversed sequence, whose
        outputs are reversed back so that position k lines up with token k.
        """
        x = self.encoder(chars)  # B x T x dim
        fwd = self._run(self.forward_lstms, x)
        bwd = [h.flip(1) for h in self._run(self.backward_lstms, x.flip(1))]
        return x, fwd, bwd

    def forward(self, chars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``B x T x V`` of both LMs: forward at k scores ``t_{k+1}``,
        backward at k scores ``t_{k-1}``."""
        _, fwd, bwd = self.directional_states(chars)
        return self.softmax(self.drop(fwd[-1])), self.softmax(self.drop(bwd[-1]))

    def layers(self, chars: torch.Tensor) -> torch.Tensor:
        """The 2L+1 representations as ``(L+1) x B x T x 2dim``:
        ``h_0 = [x; x]``, ``h_j = [fwd h_j; bwd h_j]``."""
        x, fwd, bwd = self.directional_states(chars)
        reps = [torch.cat([x, x], dim=-1)]
        reps += [torch.cat([f, b], dim=-1) for f, b in zip(fwd, bwd, strict=True)]
        return torch.stack(reps)


def bilm_losses(model: BiLM, chars: torch.Tensor, words: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy of the forward LM (predict ``t_{k+1}``) and the backward LM
    (predict ``t_{k-1}``) on a ``B x T`` window; the joint loss is their sum."""
    logits_f, logits_b = model(chars)
    ce = nn.functional.cross_entropy
    v = logits_f.shape[-1]
    loss_f = ce(logits_f[:, :-1].reshape(-1, v), words[:, 1:].reshape(-1))
    loss_b = ce(logits_b[:, 1:].reshape(-1, v), words[:, :-1].reshape(-1))
    return loss_f, loss_b


def fit_bilm(model: BiLM, batches: Iterable[tuple[torch.Tensor, torch.Tensor]], epochs: int,
             lr: float = 3e-3, clip: float = 1.0, val: Sequence | None = None) -> dict:
    """Adam on the joint loss ``loss_f + loss_b``; returns per-epoch perplexities and the
    training throughput (tokens per second, each token read by both directions)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    dev = next(model.parameters()).device
    batches = list(batches)
    hist: dict[str, list[float]] = {"train_fwd": [], "train_bwd": [], "val_fwd": [],
                                    "val_bwd": [], "tokens_per_s": []}
    for _ in range(epochs):
        model.train()
        tf = tb = 0.0
        start, tokens = time.perf_counter(), 0
        for chars, words in batches:
            tokens += words.numel()
            loss_f, loss_b = bilm_losses(model, chars.to(dev), words.to(dev))
            opt.zero_grad()
            (loss_f + loss_b).backward()
            clip_gradients(model.parameters(), clip)
            opt.step()
            tf, tb = tf + loss_f.item(), tb + loss_b.item()
        hist["tokens_per_s"].append(tokens / (time.perf_counter() - start))
        hist["train_fwd"].append(perplexity(tf / len(batches)))
        hist["train_bwd"].append(perplexity(tb / len(batches)))
        if val:
            f, b = evaluate_bilm(model, val)
            hist["val_fwd"].append(f)
            hist["val_bwd"].append(b)
    return hist


@torch.no_grad()
def evaluate_bilm(model: BiLM, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]
                  ) -> tuple[float, float]:
    """Perplexities (forward, backward) on ``batches``: ``exp`` of the mean cross-entropy
    over every predicted word, so a smaller last batch counts for its words only."""
    model.eval()
    dev = next(model.parameters()).device
    total_f = total_b = 0.0
    count = 0
    for chars, words in batches:
        loss_f, loss_b = bilm_losses(model, chars.to(dev), words.to(dev))
        n = words[:, 1:].numel()  # each direction predicts T - 1 words per window
        total_f, total_b = total_f + float(loss_f) * n, total_b + float(loss_b) * n
        count += n
    model.train()
    return perplexity(total_f / count), perplexity(total_b / count)


class ScalarMix(nn.Module):
    """``ELMo_k = gamma * sum_j softmax(s)_j h_{k,j}``; s = 0 and gamma = 1 at the start,
    so an untrained mix is the mean of the layers."""

    def __init__(self, num_layers: int):
        super().__init__()
        self.s = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    @property
    def weights(self) -> torch.Tensor:
        return torch.softmax(self.s, dim=0)

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        """``layers``: ``(L+1) x ...`` -> ``...``."""
        w = self.weights.reshape(-1, *([1] * (layers.dim() - 1)))
        return self.gamma * (w * layers).sum(dim=0)


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine similarity of two vectors, as a float."""
    return float(nn.functional.cosine_similarity(a, b, dim=-1).detach())


def nearest_neighbour_accuracy(features: torch.Tensor, labels: torch.Tensor) -> float:
    """Leave-one-out 1-nearest-neighbour accuracy under cosine similarity.

    Ties (e.g. identical static vectors) go to the lowest index, as ``argmax`` does.
    """
    f = nn.functional.normalize(features, dim=1)
    sim = f @ f.T
    sim.fill_diagonal_(-float("inf"))
    return float((labels[sim.argmax(dim=1)] == labels).float().mean())


def probe_scores(features: torch.Tensor, labels: torch.Tensor, train: torch.Tensor,
                 steps: int = 200, weight_decay: float = 1e-3) -> torch.Tensor:
    """Fit a logistic-regression probe on ``features[train]``; its class probabilities for
    the other rows (``N_heldout x C``).

    Features are standardised with the training statistics; the encoder stays frozen.
    """
    mu, sd = features[train].mean(0), features[train].std(0) + 1e-6
    z = (features - mu) / sd
    probe = nn.Linear(z.shape[1], int(labels.max()) + 1)
    opt = torch.optim.LBFGS(probe.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(probe(z[train]), labels[train])
        loss = loss + weight_decay * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return probe(z[~train]).softmax(-1)


def linear_probe(features: torch.Tensor, labels: torch.Tensor, train: torch.Tensor,
                 steps: int = 200, weight_decay: float = 1e-3) -> float:
    """Accuracy on the held-out rows of :func:`probe_scores`' probe."""
    pred = probe_scores(features, labels, train, steps, weight_decay).argmax(1)
    return float((pred == labels[~train]).float().mean())
