"""Auto-checks for fine-tuning MiniLM, a pre-trained BERT, as a sentence classifier (lab 06).

The classification head, ``configure`` (AdamW with a linear warm-up and decay),
``train_step`` and ``predict_proba`` are each compared with :mod:`lmcourse.finetune` on a
tiny randomly initialised BERT, so that a check takes a fraction of a second; the
fine-tuned model is compared with baselines trained on the same sentences
(:mod:`lmcourse.models.baselines`).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from lmcourse import finetune
from lmcourse.checks import as_float_tensor, attempt, close, expect, fail, passed, same
from lmcourse.checks.beats import beats_baseline  # the last check: against the baselines
from lmcourse.checks.compare import how_far
from lmcourse.models.bert import BertConfig, BertModel

__all__ = ["beats_baseline", "classifier",
           "configure", "predict_proba", "tiny_bert", "train_step"]


def tiny_bert(dropout: float = 0.0, seed: int = 0) -> BertModel:
    """A randomly initialised 2-layer BERT (hidden 32, 4 heads, 50 words), built without
    touching the global random state."""
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BertModel(config)


def _batch(lengths: Sequence[int], extra_padding: int = 2, seed: int = 1
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ``[CLS] ... [SEP]`` rows of the given lengths, right-padded with id 0."""
    g = torch.Generator().manual_seed(seed)
    T = max(lengths) + extra_padding
    ids = torch.zeros(len(lengths), T, dtype=torch.long)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(5, 50, (n,), generator=g)
        ids[row, 0], ids[row, n - 1] = 2, 3  # [CLS], [SEP] of the tiny vocabulary
    mask = (torch.arange(T)[None] < torch.tensor(lengths)[:, None]).long()
    return ids, mask


# ---- exercise 1: the classification head --------------------------------------------------

def classifier(ReviewClassifier: type) -> None:
    """Exercise 1: ``ReviewClassifier(encoder, 2, dropout)(ids, mask)`` = ``W h_[CLS] + b``."""
    name = "ReviewClassifier.forward"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = attempt(name, ReviewClassifier, tiny_bert(), 2, 0.5)
    ids, mask = _batch([7, 3, 5, 2])
    model.eval()
    with torch.no_grad():
        got = attempt(name, model, ids, mask)
        again = attempt(name, model, ids, mask)
        out = model.encoder(ids, attention_mask=mask)
        h = out.last_hidden_state
        want = model.classifier(h[:, 0])
    expect(isinstance(got, torch.Tensor), name,
           f"forward should return a tensor of logits, got {type(got).__name__}")
    if got.dim() == 3:
        fail(name, "the output has a logit pair for every token: classify the sentence from "
                   "its first position only, the [CLS] vector of last_hidden_state.")
    expect(got.shape == (4, 2), name,
           f"expected B x num_labels = 4 x 2 logits (one score per class), got shape "
           f"{tuple(got.shape)}")
    if not torch.equal(got, again):
        fail(name, "in evaluation mode two calls give different logits: dropout is still on. "
                   "Use the module self.dropout (nn.Dropout), which model.eval() switches "
                   "off, not F.dropout(..., training=True).")
    if not same(got, want, 1e-5):
        m = mask[..., None].float()
        with torch.no_grad():
            no_mask = model.classifier(model.encoder(ids).last_hidden_state[:, 0])
            wrong = [
                (torch.softmax(want, -1), "these are probabilities: return the logits; "
                                          "F.cross_entropy applies the log-softmax itself."),
                (no_mask, "the logits change when padding is added: attention_mask was not "
                          "passed to the encoder, so [CLS] attended to the padding. Give the "
                          "encoder the mask through its attention_mask keyword."),
                (model.classifier(out.pooler_output),
                 "you used pooler_output, tanh(W_p h_[CLS] + b_p), trained for next-sentence "
                 "prediction; the exercise asks for the [CLS] vector itself, the first "
                 "position of last_hidden_state."),
                (model.classifier((h * m).sum(1) / m.sum(1)),
                 "that is the mean of the token vectors (mean pooling, sentence-transformers' "
                 "choice); the exercise classifies from [CLS], the first position of "
                 "last_hidden_state."),
                (model.classifier(h.mean(1)),
                 "that is the mean over all positions, padding included; classify from "
                 "[CLS], the first position of last_hidden_state."),
                (model.classifier(h[:, -1]),
                 "you used the last position, which is padding for short sentences; [CLS] "
                 "is the first token, position 0 of last_hidden_state."),
            ]
        for value, hint in wrong:
            if same(got, value, 1e-5):
                fail(name, hint)
        fail(name, f"your logits {[[round(v, 4) for v in row] for row in got[:2].tolist()]}"
                   f" ... differ from classifier(h_[CLS]) by up to "
                   f"{float((got - want).abs().max()):.3g} (evaluation mode): apply the "
                   "classifier to the [CLS] vector, position 0 of last_hidden_state, from the "
                   "encoder given ids and attention_mask.")
    # in training mode (encoder dropout 0 here, head dropout 0.5) the head's dropout must act
    model.train()
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        train_a = attempt(name, model, ids, mask)
        train_b = attempt(name, model, ids, mask)
    if torch.equal(train_a, train_b):
        fail(name, "in training mode the logits never change: apply self.dropout to h_[CLS] "
                   "before self.classifier (BERT drops 10% of the vector while fine-tuning).")
    if (train_a == 0).any():
        fail(name, "some logits are exactly 0: dropout was applied to the logits; apply it to "
                   "h_[CLS], before the linear layer.")
    passed(name, f"4 x 2 logits from h_[CLS], padding masked (max |difference| "
                 f"{float((got - want).abs().max()):.1e}), dropout only in training")


# ---- exercise 2: AdamW and the schedule ---------------------------------------------------

def _schedule_shown(seen: Sequence[float], want: Sequence[float], lr: float) -> str:
    """The student's schedule eta_t / eta and the first step where it goes wrong (too high
    or too low), without the right schedule."""
    step = next(t for t, (s, w) in enumerate(zip(seen, want, strict=True))
                if not close(s, w, 1e-6))
    return (f"\n yours, eta_t/eta: {', '.join(f'{s / lr:.2f}' for s in seen)}"
            f"\n the first wrong step is t = {step}: yours is "
            f"{'too high' if seen[step] > want[step] else 'too low'} there.")


def configure(student: Callable[..., Any], total_steps: int = 20, lr: float = 4e-5,
              warmup: float = 0.25) -> None:
    """Exercise 2: ``configure(model, total_steps, lr, warmup) -> (optimizer, scheduler)``."""
    name = "configure"
    model = finetune.SequenceClassifier(tiny_bert())
    got = attempt(name, student, model, total_steps, lr, warmup)
    expect(isinstance(got, tuple) and len(got) == 2, name,
           "return a pair (optimizer, scheduler)")
    optimizer, scheduler = got
    expect(isinstance(optimizer, torch.optim.Optimizer), name,
           f"the first item should be a torch optimiser, got {type(optimizer).__name__}")
    if not isinstance(optimizer, torch.optim.AdamW):
        fail(name, f"use torch.optim.AdamW, not {type(optimizer).__name__}: Adam's "
                   "weight_decay is added to the gradient and then rescaled away, AdamW "
                   "shrinks the weights directly (Loshchilov & Hutter 2019); BERT used it.")
    expect(hasattr(scheduler, "step") and hasattr(scheduler, "get_last_lr"), name,
           "the second item should be a learning-rate scheduler (LambdaLR, from "
           f"torch.optim.lr_scheduler, built on the optimiser), got "
           f"{type(scheduler).__name__}")
    expect(getattr(scheduler, "optimizer", optimizer) is optimizer, name,
           "the scheduler drives a different optimiser: build it on the one you return")
    in_opt = {id(p) for g in optimizer.param_groups for p in g["params"]}
    head = [p for p in model.classifier.parameters()]
    body = [p for p in model.encoder.encoder.parameters()]
    if not all(id(p) in in_opt for p in body):
        fail(name, "the encoder's parameters are not (all) in the optimiser: only the head "
                   "would learn (the feature-based approach). Fine-tuning updates "
                   "model.parameters().")
    if not all(id(p) in in_opt for p in head):
        fail(name, "the classifier head's parameters are not in the optimiser: it would keep "
                   "its random weights. Pass model.parameters().")
    peak = max(getattr(scheduler, "base_lrs", None) or
               [g.get("initial_lr", g["lr"]) for g in optimizer.param_groups])
    if peak > 1e-3:
        fail(name, f"a peak learning rate of {peak:g} destroys the pre-trained weights in a "
                   "few steps (the loss explodes or every sentence gets the same score); "
                   f"fine-tuning uses 2e-5 to 1e-4: use the lr argument (here {lr:g}).")
    expect(close(peak, lr, 1e-9), name,
           f"the peak learning rate is {peak:g}: use the lr argument (here {lr:g})")
    W = round(warmup * total_steps)
    want = [lr * finetune.warmup_linear_factor(t, W, total_steps) for t in range(total_steps + 1)]
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(total_steps + 1):
            seen.append(optimizer.param_groups[0]["lr"])
            optimizer.step()  # no gradients: nothing moves, the schedule advances
            scheduler.step()
    if all(close(s, w, 1e-6) for s, w in zip(seen, want, strict=True)):
        passed(name, f"AdamW, peak lr {lr:g}, {W} warm-up steps then linear decay to 0 at "
                     f"step {total_steps}")
        return
    show = _schedule_shown(seen, want, lr)
    if max(seen) > lr * (1 + 1e-6):
        fail(name, "the rate goes above lr: the factor rises to 1 at the end of the warm-up "
                   "and then only falls." + show)
    if all(close(s, lr, 1e-6) for s in seen):
        fail(name, "the learning rate never changes: build a LambdaLR whose factor rises "
                   "linearly from 0 over the warm-up and then falls linearly to 0." + show)
    if close(seen[0], lr, 1e-6):
        fail(name, "no warm-up: the rate starts at its peak; start at 0 and rise linearly "
                   f"over the first {W} steps (t / W)." + show)
    top = seen.index(max(seen))
    if top != W and not close(seen[W], lr, 1e-6):
        fail(name, f"the warm-up should last the share warmup of total_steps, here {W} "
                   "steps (warmup is a share of the steps, not a number of steps); yours "
                   f"peaks at step {top}."
             + show)
    if close(seen[-1], lr, 1e-6) or close(seen[-2], lr, 1e-6):
        fail(name, "no decay: after the warm-up the rate must fall linearly to 0 at "
                   "total_steps, (T - t) / (T - W)." + show)
    if not close(seen[-1], 0.0, 1e-9):
        fail(name, f"the rate should reach 0 at step total_steps = {total_steps}, yours "
                   f"ends at {seen[-1]:g}." + show)
    fail(name, "the schedule differs from linear warm-up (t / W) then linear decay "
               "((T - t) / (T - W))." + show)


# ---- exercise 3: one training step --------------------------------------------------------

class _RecordingAdamW(torch.optim.AdamW):
    """AdamW that remembers the gradients it was given and when it was called."""

    def __init__(self, params, **kwargs):
        super().__init__(params, **kwargs)
        self.calls: list[list[torch.Tensor | None]] = []
        self.log: list[str] = []

    def step(self, closure=None):
        self.calls.append([None if p.grad is None else p.grad.detach().clone()
                           for g in self.param_groups for p in g["params"]])
        self.log.append("optimizer")
        return super().step(closure)


class _RecordingScheduler(torch.optim.lr_scheduler.LambdaLR):
    def __init__(self, optimizer: _RecordingAdamW):
        super().__init__(optimizer, lambda t: 1.0)
        self.recorder = optimizer

    def step(self, epoch=None):
        if hasattr(self, "recorder"):  # LambdaLR steps once while it is being built
            self.recorder.log.append("scheduler")
        return super().step(epoch)


def _flat(grads: Sequence[torch.Tensor | None], params: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([(torch.zeros_like(p) if g is None else g).flatten()
                      for g, p in zip(grads, params, strict=True)])


def _clipped(g: torch.Tensor, c: float) -> torch.Tensor:
    return g * min(1.0, c / (float(g.norm()) + 1e-6))  # as nn.utils.clip_grad_norm_



def _gradient_the_optimiser_saw(name: str, optimizer: _RecordingAdamW, params: list,
                                g: torch.Tensor, old: torch.Tensor, clip: float, model: str,
                                near: Callable[[torch.Tensor, torch.Tensor], bool]
                                ) -> torch.Tensor:
    """The part every training-step check shares: exactly one ``optimizer.step()``, fresh
    gradients (``zero_grad`` before ``backward``, ``old`` being the stale ones) and clipping
    to norm ``clip`` when ``g``, this step's gradient, is larger. Returns what it saw."""
    n = optimizer.log.count("optimizer")
    expect(n == 1, name, f"optimizer.step() was called {n} times: once per training step.")
    seen = optimizer.calls[0]
    if all(s is None or not s.any() for s in seen):
        fail(name, "the optimiser saw no gradient: call optimizer.zero_grad() before "
                   "loss.backward(), not between backward() and optimizer.step().")
    seen = _flat(seen, params)
    if near(seen, _clipped(g + old, clip)) or near(seen, g + old):
        fail(name, "the gradients of an earlier backward() were added to this step's: call "
                   "optimizer.zero_grad() before loss.backward() (PyTorch accumulates .grad).")
    if near(seen, g) and float(g.norm()) > clip:
        fail(name, f"the gradient was not clipped when the optimiser used it (norm "
                   f"{float(g.norm()):.3f} > clip = {clip}): rescale the {model}'s whole "
                   "gradient to norm clip (nn.utils.clip_grad_norm_) between loss.backward() "
                   "and optimizer.step().")
    return seen


def train_step(student: Callable[..., Any], clip: float = 0.05) -> None:
    """Exercise 3: ``train_step(model, batch, optimizer, scheduler, clip, class_weight)``."""
    name = "train_step"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = finetune.SequenceClassifier(tiny_bert(), dropout=0.0)
    reference = copy.deepcopy(model)
    params = list(model.parameters())
    ids, mask = _batch([7, 3, 5, 2, 6, 4])
    labels = torch.tensor([1, 0, 0, 1, 0, 0])
    weight = torch.tensor([0.75, 1.5])
    optimizer = _RecordingAdamW(params, lr=1e-3)
    scheduler = _RecordingScheduler(optimizer)
    junk = [torch.full_like(p, 0.01) for p in params]  # gradients left from an earlier step
    for p, j in zip(params, junk, strict=True):
        p.grad = j.clone()
    model.eval()  # as predict_proba leaves it

    ref_params = list(reference.parameters())
    grads = {}
    for key, w in (("weighted", weight), ("plain", None)):
        loss = F.cross_entropy(reference(ids, mask), labels, weight=w)
        grads[key] = _flat(torch.autograd.grad(loss, ref_params, allow_unused=True), ref_params)
        grads[key + " loss"] = loss.item()
    g, old = grads["weighted"], _flat(junk, params)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = student(model, (ids, mask, labels.clone()), optimizer, scheduler, clip=clip,
                          class_weight=weight)
    except RuntimeError as err:
        if "dtype" in str(err) and "Float" in str(err):
            fail(name, "the labels were turned into floats: F.cross_entropy takes class "
                       "indices, a LongTensor (0 or 1), with B x 2 logits. Leave the labels "
                       f"as they are. ({err})")
        got = attempt(name, student, model, (ids, mask, labels), optimizer, scheduler,
                      clip=clip, class_weight=weight)
    except Exception:  # noqa: BLE001 - let attempt() phrase it
        got = attempt(name, student, model, (ids, mask, labels), optimizer, scheduler,
                      clip=clip, class_weight=weight)
    if isinstance(got, torch.Tensor) and got.requires_grad:
        fail(name, "return the loss as a Python float (its .item()), not the tensor: the "
                   "tensor keeps the whole graph of the step alive (memory grows with every "
                   "step you store).")
    try:
        loss = float(got)
    except (TypeError, ValueError, RuntimeError):
        fail(name, f"return the loss as a float (loss.item()), got {type(got).__name__}")
    expect(model.training, name,
           "the model is still in evaluation mode: call model.train() first, so that dropout "
           "is on while training (predict_proba switched it off).")
    seen = _gradient_the_optimiser_saw(name, optimizer, params, g, old, clip, "model",
                                       lambda a, b: same(a, b, 1e-4))
    if same(seen, _clipped(grads["plain"], clip), 1e-4) or same(seen, grads["plain"], 1e-4):
        fail(name, "class_weight was ignored: give it to F.cross_entropy as its weight "
                   "argument, so that the rarer class counts as much as the other.")
    expect(same(seen, _clipped(g, clip), 1e-4), name,
           "the gradient the optimiser used differs from that of the class-weighted "
           "cross-entropy of the model's logits on this batch (ids and mask) against the "
           f"labels, clipped to norm {clip}.")
    if not close(loss, grads["weighted loss"], 1e-4):
        fail(name, f"the returned loss {loss:.6f} "
                   f"{how_far(loss, grads['weighted loss'], 1e-4)} against the weighted "
                   "cross-entropy of the batch: return the .item() of the loss you called "
                   "backward() on.")
    n = optimizer.log.count("scheduler")
    expect(n >= 1, name, "the scheduler was not stepped: the learning rate would stay where "
                         "the warm-up starts, at 0. Call scheduler.step() after "
                         "optimizer.step().")
    expect(n == 1, name, f"scheduler.step() was called {n} times: once per training step.")
    expect(optimizer.log == ["optimizer", "scheduler"], name,
           "step the optimiser first, then the scheduler (otherwise the first step's rate "
           "is skipped).")
    passed(name, f"weighted loss {loss:.4f}, fresh gradients clipped to norm {clip} "
                 f"(from {float(g.norm()):.3f}), one optimiser and one scheduler step")


# ---- exercise 4: predictions --------------------------------------------------------------

def predict_proba(student: Callable[..., Any]) -> None:
    """Exercise 4: ``predict_proba(model, ids, mask, batch_size)`` = ``softmax(z)[:, 1]``."""
    name = "predict_proba"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = finetune.SequenceClassifier(tiny_bert(dropout=0.3), dropout=0.3)
    ids, mask = _batch([7, 3, 5, 2, 6, 4, 8, 3, 5, 9], seed=2)
    n = len(ids)
    want = finetune.predict_proba(model, ids, mask)
    model.eval()
    with torch.no_grad():
        logits = model(ids, mask)
        no_mask = torch.softmax(model(ids), -1)[:, 1]
    runs = []
    for _ in range(2):  # dropout masks differ between the two runs if dropout is on
        model.train()  # as train_step leaves it
        raw = attempt(name, student, model, ids.clone(), mask.clone(), 4)
        if isinstance(raw, torch.Tensor) and raw.requires_grad:
            fail(name, "the probabilities carry a gradient graph: compute them under "
                       "torch.no_grad() (or @torch.no_grad()); no graph is needed to predict, "
                       "and keeping one costs memory at every batch.")
        got = as_float_tensor(raw)
        expect(got is not None, name, f"return a tensor of probabilities, got "
                                      f"{type(raw).__name__}")
        if got.shape == (n, 2):
            fail(name, "return P(class 1) only (P(fresh) in the lab): one column of "
                       "the softmax, shape (N,).")
        got = got.reshape(-1) if got.numel() == n else got
        expect(got.shape == (n,), name,
               f"expected {n} probabilities (one per row, batch_size 4: three batches, the "
               f"last one short), got shape {tuple(got.shape)}")
        runs.append(got)
    got = runs[0]
    if same(got, want, 1e-5):
        passed(name, f"{n} rows in batches of 4, evaluation mode, max |difference| "
                     f"{float((got - want).abs().max()):.1e}")
        return
    if not torch.equal(runs[0], runs[1]):
        fail(name, "two calls give different probabilities: dropout is still on. Call "
                   "model.eval() before predicting (train_step switches it back on).")
    wrong = [(logits[:, 1], "these are logits: turn them into probabilities with a softmax "
                            "over the class axis, then keep class 1's column."),
             (1 - want, "that is P(class 0), 'rotten' in the lab: take column 1 of the softmax."),
             (torch.sigmoid(logits[:, 1]), "sigmoid(z_1) ignores z_0: the model has two "
                                           "logits, and P(class 1) is softmax(z)_1 over both "
                                           "(= sigmoid(z_1 - z_0))."),
             (no_mask, "attention_mask was not passed to the model: padded rows attended to "
                       "their padding. Give the model each batch's mask with its ids.")]
    for value, hint in wrong:
        if same(got, value, 1e-5):
            fail(name, hint)
    row = int((got - want).abs().argmax())
    fail(name, f"your probabilities {[round(v, 4) for v in got.tolist()[:4]]} ... differ from "
               f"P(class 1) = softmax(z)_1, most at row {row}, where yours "
               f"{how_far(float(got[row]), float(want[row]), 1e-5)}: the model in evaluation "
               "mode, each batch with its mask, softmax over the classes, column 1.")
