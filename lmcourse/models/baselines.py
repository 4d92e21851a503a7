"""The strongest simple baselines for sentence classification.

A pre-trained model's score means something only beside what a model without
pre-training reaches on the same split:

* **bag of words**: logistic regression on word counts, ``P(y=1) = sigmoid(v . c(x) + b)``,
  with the rare class weighted by ``n_-/n_+``, its learning rate and steps chosen on held-out
  labelled sentences (:func:`tuned_bag_of_words_baseline`);
* **BiLSTM**: word embeddings learned from scratch, a bidirectional LSTM
  and a linear layer on its final states.

Both take ``(text, label, review_id)`` rows, as :func:`lmcourse.data.goodreads.sentences`
gives them, and return ``predict(texts) -> P(y = 1)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

from lmcourse import metrics
from lmcourse.data import Vocab, tokenize

__all__ = ["BOW_LEARNING_RATES", "BOW_STEPS", "BagOfWordsPairClassifier", "BagOfWordsSetting",
           "BiLSTMRun", "Sentences", "bag_of_words_baseline", "bag_of_words_pair_accuracy",
           "bilstm_baseline", "train_bilstm", "tuned_bag_of_words_baseline",
           "untrained_bilstm"]

Sentences = Sequence[tuple[str, int, str]]  # (text, label, review_id)


def _vocab(train: Sentences) -> Vocab:
    return Vocab((w for text, _, _ in train for w in tokenize(text)), min_freq=2,
                 reserved=["<pad>"])


def _ids(vocab: Vocab, text: str) -> torch.Tensor:
    return torch.tensor(vocab.encode(tokenize(text)) or [vocab.unk_id])


def _counts(vocab: Vocab, texts: Sequence[str]) -> torch.Tensor:
    """The ``N x V`` matrix of word counts, sparse."""
    ids = [_ids(vocab, t) for t in texts]  # each text tokenized once
    rows = [torch.full((len(row),), i) for i, row in enumerate(ids)]
    cols = torch.cat(ids)
    index = torch.stack([torch.cat(rows), cols])
    return torch.sparse_coo_tensor(index, torch.ones(len(cols)), (len(texts), len(vocab)),
                                   check_invariants=True).coalesce()


#: the grid the spoiler bag of words is tuned over on held-out labelled sentences: Adam's
#: learning rate, and how many full-batch steps (early stopping read at these checkpoints)
BOW_LEARNING_RATES = (0.01, 0.05, 0.2)
BOW_STEPS = (25, 50, 100, 200)


@dataclass(frozen=True)
class BagOfWordsSetting:
    """The bag of words' training setting and, once tuned, its held-out ROC-AUC."""

    steps: int
    lr: float
    validation_auc: float | None = None

    def __str__(self) -> str:
        chosen = ("" if self.validation_auc is None else
                  f", chosen on validation (ROC-AUC {self.validation_auc:.3f})")
        return f"Adam lr {self.lr:g}, {self.steps} steps{chosen}"


def _bag_of_words_problem(train: Sentences) -> tuple:
    """``(vocab, X, n, pos_weight)``: each distinct training sentence once, as word counts
    ``X`` (U x V, sparse) with its numbers of negative and positive labels ``n`` (U x 2)."""
    vocab = _vocab(train)
    counts: dict[str, list[int]] = {}
    for text, label, _ in train:
        counts.setdefault(text, [0, 0])[label] += 1
    texts = sorted(counts)
    n = torch.tensor([counts[t] for t in texts], dtype=torch.float)
    return vocab, _counts(vocab, texts), n, float(n[:, 0].sum() / n[:, 1].sum())


def _bag_of_words_fits(problem: tuple, lr: float, checkpoints: Sequence[int]):
    """Yield ``(steps, predict)`` at each of ``checkpoints`` along one full-batch Adam run of
    the weighted logistic regression (see :func:`bag_of_words_baseline`)."""
    vocab, X, n, pos_weight = problem
    total = float(n[:, 0].sum() + pos_weight * n[:, 1].sum())
    v, b = torch.zeros(len(vocab), 1, requires_grad=True), torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.Adam([v, b], lr=lr)
    for step in range(1, max(checkpoints) + 1):
        z = torch.sparse.mm(X, v).squeeze(-1) + b
        # w+ (-log sigmoid(z)) per positive, -log(1 - sigmoid(z)) per negative
        loss = (pos_weight * n[:, 1] * F.softplus(-z) + n[:, 0] * F.softplus(z)).sum() / total
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step in checkpoints:
            yield step, _bag_of_words_predictor(vocab, v.detach().clone(), b.detach().clone())


def _bag_of_words_predictor(vocab: Vocab, v: torch.Tensor, b: torch.Tensor
                            ) -> Callable[[Sequence[str]], torch.Tensor]:
    @torch.no_grad()
    def predict(texts: Sequence[str]) -> torch.Tensor:
        return predict_counts(_counts(vocab, list(texts)))

    @torch.no_grad()
    def predict_counts(counts: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.sparse.mm(counts, v).squeeze(-1) + b)

    predict.from_counts = predict_counts  # type: ignore[attr-defined]
    predict.num_parameters = v.numel() + b.numel()  # type: ignore[attr-defined]
    return predict


def bag_of_words_baseline(train: Sentences, steps: int = 100, lr: float = 0.05
                          ) -> Callable[[Sequence[str]], torch.Tensor]:
    """Logistic regression on word counts ``c(x)``, ``P(spoiler) = sigmoid(v . c(x) + b)``,
    trained full-batch with Adam on the weighted cross-entropy (``pos_weight = n_-/n_+``),
    each distinct sentence once with its numbers of both labels. Returns
    ``predict(texts) -> P(spoiler)``. Untuned: compare a model with
    :func:`tuned_bag_of_words_baseline` instead."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    (_, predict), = _bag_of_words_fits(_bag_of_words_problem(train), lr, [steps])
    return predict


def tuned_bag_of_words_baseline(train: Sentences, validation: Sentences,
                                learning_rates: Sequence[float] = BOW_LEARNING_RATES,
                                steps: Sequence[int] = BOW_STEPS
                                ) -> Callable[[Sequence[str]], torch.Tensor]:
    """:func:`bag_of_words_baseline` with its learning rate and number of steps chosen on
    ``validation`` (labelled rows no model trains on): the highest ROC-AUC over the grid,
    the fewest steps and then the smallest rate on a tie. The predictor carries
    ``.setting`` (a :class:`BagOfWordsSetting`) and ``.tried`` (every setting's AUC)."""
    labels = [label for _, label, _ in validation]
    if len(set(labels)) < 2:
        raise ValueError("the validation rows must hold both labels to choose a setting by "
                         f"ROC-AUC; got only label(s) {sorted(set(labels))}")
    tried, best, problem = {}, None, _bag_of_words_problem(train)
    counts = _counts(problem[0], [t for t, _, _ in validation])  # tokenized once for the grid
    for lr in learning_rates:
        for n_steps, predict in _bag_of_words_fits(problem, lr, sorted(steps)):
            auc = metrics.roc_auc(labels, predict.from_counts(counts).tolist())
            tried[(n_steps, lr)] = auc
            if best is None or auc > best[0] or (auc == best[0] and n_steps < best[1].steps):
                best = (auc, BagOfWordsSetting(n_steps, lr, auc), predict)
    _, setting, predict = best
    predict.setting, predict.tried = setting, tried  # type: ignore[attr-defined]
    return predict


class _BiLSTM(nn.Module):
    """The BiLSTM: embedding, packed bidirectional LSTM, ``[h_T^fwd ; h_1^bwd]``, a logit."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_size: int, pad_id: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.lstm = nn.LSTM(embed_dim, hidden_size, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden_size, 1)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(self.embedding(ids), lengths, batch_first=True,
                                      enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return self.head(torch.cat([h_n[-2], h_n[-1]], dim=-1)).squeeze(-1)


def _padded(vocab: Vocab, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded word ids and lengths of ``texts``."""
    seqs = [_ids(vocab, t) for t in texts]
    return (pad_sequence(seqs, batch_first=True, padding_value=vocab.stoi["<pad>"]),
            torch.tensor([len(s) for s in seqs]))


@dataclass
class BiLSTMRun:
    """A trained BiLSTM baseline: the model, the vocabulary it reads, and the
    training loss of every minibatch."""

    model: _BiLSTM
    vocab: Vocab
    losses: list[float]

    @torch.no_grad()
    def predict(self, texts: Sequence[str]) -> torch.Tensor:
        """``P(spoiler)`` of each text, in batches of 512, in eval mode."""
        self.model.eval()
        texts = list(texts)
        return torch.cat([torch.sigmoid(self.model(*_padded(self.vocab, texts[i:i + 512])))
                          for i in range(0, len(texts), 512)])


def untrained_bilstm(train: Sentences, embed_dim: int = 32, hidden_size: int = 32,
                     seed: int = 0) -> BiLSTMRun:
    """The BiLSTM classifier over ``train``'s vocabulary, its initial weights drawn right after
    ``manual_seed(seed)`` (the caller's generator left alone)."""
    vocab = _vocab(train)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _BiLSTM(len(vocab), embed_dim, hidden_size, vocab.stoi["<pad>"])
    return BiLSTMRun(model.eval(), vocab, [])


def train_bilstm(train: Sentences, epochs: int = 2, embed_dim: int = 32, hidden_size: int = 32,
                 batch_size: int = 64, lr: float = 3e-3, seed: int = 0,
                 stop_after: int | None = None) -> BiLSTMRun:
    """The BiLSTM baseline on the CPU: :func:`untrained_bilstm` trained with Adam on the
    weighted binary cross-entropy, ``epochs`` shuffled passes in minibatches of 64.
    ``stop_after`` ends the run after that many minibatches: the first steps of the full
    run, exactly."""
    run = untrained_bilstm(train, embed_dim, hidden_size, seed)
    model = run.model.train()
    y = torch.tensor([float(label) for _, label, _ in train])
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(metrics.positive_weight(y)))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    batches = (idx for _ in range(epochs)
               for idx in torch.randperm(len(train), generator=g).split(batch_size))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: one thread wastes less time waiting
    try:
        for idx in islice(batches, stop_after):
            loss = loss_fn(model(*_padded(run.vocab, [train[int(i)][0] for i in idx])), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            run.losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return run


def bilstm_baseline(train: Sentences, epochs: int = 2, embed_dim: int = 32,
                    hidden_size: int = 32, batch_size: int = 64, lr: float = 3e-3,
                    seed: int = 0) -> Callable[[Sequence[str]], torch.Tensor]:
    """:func:`train_bilstm`'s model as ``predict(texts) -> P(spoiler)``."""
    return train_bilstm(train, epochs, embed_dim, hidden_size, batch_size, lr, seed).predict


class BagOfWordsPairClassifier(nn.Module):
    """A sentence-pair classifier that ignores word order: each sentence is the mean of its
    pieces' learned vectors (a bag of words), ``a`` and ``b``, and a small MLP reads
    ``[a, b, a * b, |a - b|]``. It can tell *what* two sentences are about, never in which
    order their words, or they, come (the bag-of-words test of NSP and SOP)."""

    def __init__(self, vocab_size: int, dim: int = 32, hidden: int = 64):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(4 * dim, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def _embed(self, sentences: Sequence[Sequence[int]]) -> torch.Tensor:
        flat = torch.tensor([t for s in sentences for t in s], dtype=torch.long)
        offsets = torch.tensor([0, *torch.tensor([len(s) for s in sentences]).cumsum(0)[:-1]])
        return self.bag(flat, offsets)

    def forward(self, pairs: Sequence[tuple[Sequence[int], Sequence[int], int]]) -> torch.Tensor:
        a, b = self._embed([p[0] for p in pairs]), self._embed([p[1] for p in pairs])
        return self.mlp(torch.cat([a, b, a * b, (a - b).abs()], dim=-1))


def bag_of_words_pair_accuracy(train_pairs: Sequence[tuple[Sequence[int], Sequence[int], int]],
                               test_pairs: Sequence[tuple[Sequence[int], Sequence[int], int]],
                               vocab_size: int, steps: int = 300, batch_size: int = 256,
                               seed: int = 0) -> float:
    """Train a :class:`BagOfWordsPairClassifier` on ``(A, B, label)`` pairs (Adam, cross-
    entropy); its accuracy on ``test_pairs``."""
    torch.manual_seed(seed)
    model = BagOfWordsPairClassifier(vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    rows = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        batch = [train_pairs[i] for i in torch.randint(len(train_pairs), (batch_size,),
                                                        generator=rows).tolist()]
        loss = F.cross_entropy(model(batch), torch.tensor([p[2] for p in batch]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        predictions = model(test_pairs).argmax(-1)
    return float((predictions == torch.tensor([p[2] for p in test_pairs])).float().mean())
