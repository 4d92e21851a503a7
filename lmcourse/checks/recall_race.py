"""The race at the end of lab 09: the student's GPT and an LSTM of the same size trained on
the same recall batches for the same steps, each at its own learning rate, and the course's
reference run printed beside the student's figure. :func:`lmcourse.checks.gpt_block.beats_lstm`
checks the earlier exercises, runs the race and judges it."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import torch
from torch import nn

from lmcourse.checks import attempt
from lmcourse.course.spread import Interval
from lmcourse.models.recall import RecallRun

__all__ = ["GPT_SIZE", "LEARNING_RATES", "LSTM_SIZE", "reference_note", "train_both"]

#: the lab's sizes: chapter 7c's transformer and LSTM (about 123K parameters each)
GPT_SIZE = {"d_model": 64, "num_heads": 4, "num_layers": 2}
LSTM_SIZE = {"width": 80, "layers": 2}
LEARNING_RATES = {"gpt": 1e-3, "lstm": 1e-2}  # each model's best on chapter 7c's tuning seed


def train_both(gpt_cls: type[nn.Module], loss_fn: Callable[[torch.Tensor, torch.Tensor],
               torch.Tensor], pairs: int, steps: int, seed: int = 0, num_keys: int = 64,
               num_values: int = 64, max_len: int = 96, device: torch.device | str = "cpu",
               progress: bool = True) -> dict[str, RecallRun]:
    """Train the student's GPT and an LSTM of the same size on the same recall batches for
    the same steps, each at its own learning rate, with the student's loss."""
    from lmcourse.models.recall import recall_model, train_recall

    name = "your GPT against the LSTM"
    vocab = num_keys + num_values
    torch.manual_seed(seed)
    models = {"gpt": attempt(name, gpt_cls, vocab, max_len=max_len, **GPT_SIZE),
              "lstm": recall_model("lstm", LSTM_SIZE["width"], vocab, max_len,
                                   LSTM_SIZE["layers"], seed=seed)}
    return {kind: attempt(name, train_recall, model, pairs, steps, seed,
                          lr=LEARNING_RATES[kind], eval_every=max(steps // 16, 1),
                          num_keys=num_keys, num_values=num_values, device=device,
                          loss_fn=loss_fn, progress=progress)
            for kind, model in models.items()}


def reference_note(accuracy: float, reference: dict[str, Sequence[float]]) -> str:
    """The reference run's seeds beside the student's figure; when the figure lies outside
    the interval the reference transformer's seeds span (:class:`Interval`), how far."""
    note = "; chapter 7c's runs, " + ", ".join(
        f"{k} {statistics.fmean(v):.3f} ({len(v)} seeds)" for k, v in reference.items())
    seeds = list(reference.get("transformer", ()))
    outside = (Interval.of(seeds, 0.001, f"chapter 7c's transformer, {len(seeds)} seeds")
               .outside(accuracy, "Your GPT's accuracy") if len(seeds) >= 2 else "")
    return note + (f". {outside}" if outside else "")
