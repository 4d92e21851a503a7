"""Fine-tuning BERT's heads (:mod:`lmcourse.models.heads`) on the plot tasks
(:mod:`lmcourse.data.plot_tasks`): turning each task into pieces and targets, one training
loop for all three heads, and reading their predictions back as words.

The two conversions every head needs:

- **answer span -> token positions.** The tokenizer reports each piece's character span
  (``offset_mapping``); the answer's first piece is the passage piece whose span holds the
  answer's first character, its last piece the one holding its last character;
- **word tags -> piece labels.** A word cut into pieces gets its tag on the first piece
  and ``-100`` (ignored by the loss) on the others, as in the BERT paper's NER setup; at
  prediction the first piece speaks for the word.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch
from torch import nn

from lmcourse import progress_bar
from lmcourse.data.plot_tasks import TAGS, QAExample, TaggedSentence
from lmcourse.finetune import make_optimizer, shuffled_batches, warmup_linear
from lmcourse.models.heads import IGNORE_INDEX, best_span

__all__ = ["encode_pairs", "encode_questions", "encode_tags", "predict_answers",
           "predict_pairs", "predict_tags", "train_head"]

Inputs = dict[str, torch.Tensor]


def encode_questions(tokenizer, examples: Sequence[QAExample], max_len: int = 96) -> Inputs:
    """Question and passage as a pair, with the answer's first and last piece
    (``start_positions``, ``end_positions``), the passage's pieces (``passage``: where an
    answer may be) and each piece's character span (``offsets``)."""
    enc = tokenizer([e.question for e in examples], [e.context for e in examples],
                    truncation="only_second", max_length=max_len, padding=True,
                    return_offsets_mapping=True, return_tensors="pt")
    starts, ends, passage = [], [], torch.zeros_like(enc["input_ids"], dtype=torch.bool)
    for i, e in enumerate(examples):
        in_passage = [s == 1 for s in enc.sequence_ids(i)]
        passage[i] = torch.tensor(in_passage)
        first, last = e.answer_start, e.answer_start + len(e.answer)
        span = [t for t, (a, b) in enumerate(enc["offset_mapping"][i].tolist())
                if in_passage[t] and a < last and b > first]
        if not span:
            raise ValueError(f"example {i}: the answer {e.answer!r} was cut off at {max_len} "
                             "pieces; raise max_len")
        starts.append(span[0])
        ends.append(span[-1])
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
            "token_type_ids": enc["token_type_ids"], "start_positions": torch.tensor(starts),
            "end_positions": torch.tensor(ends), "passage": passage,
            "offsets": enc["offset_mapping"]}


def encode_tags(tokenizer, sentences: Sequence[TaggedSentence], max_len: int = 48) -> Inputs:
    """Words as pieces; ``labels`` holds each word's tag id (:data:`TAGS`) on its first
    piece and -100 elsewhere; ``first_piece`` marks those pieces."""
    enc = tokenizer([s.words for s in sentences], is_split_into_words=True, truncation=True,
                    max_length=max_len, padding=True, return_tensors="pt")
    labels = torch.full_like(enc["input_ids"], IGNORE_INDEX)
    for i, s in enumerate(sentences):
        seen = set()
        for t, w in enumerate(enc.word_ids(i)):
            if w is not None and w not in seen:
                seen.add(w)
                labels[i, t] = TAGS.index(s.tags[w])
        if len(seen) < len(s.words):
            raise ValueError(f"sentence {i} has {len(s.words)} words, {len(seen)} fit in "
                             f"{max_len} pieces; raise max_len")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
            "token_type_ids": enc["token_type_ids"], "labels": labels,
            "first_piece": labels != IGNORE_INDEX}


def encode_pairs(tokenizer, pairs: Sequence[tuple[str, str, int]], max_len: int = 64) -> Inputs:
    """Sentence pairs ``[CLS] a [SEP] b [SEP]`` with their labels."""
    enc = tokenizer([a for a, _, _ in pairs], [b for _, b, _ in pairs], truncation=True,
                    max_length=max_len, padding=True, return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
            "token_type_ids": enc["token_type_ids"],
            "labels": torch.tensor([label for _, _, label in pairs])}


_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_TARGETS = ("labels", "start_positions", "end_positions")


def _batch(inputs: Inputs, rows: torch.Tensor, device: torch.device, targets: bool = True
           ) -> Inputs:
    """The model's arguments for ``rows``, padding columns no row uses cut off."""
    width = int(inputs["attention_mask"][rows].sum(1).max())
    out = {k: inputs[k][rows, :width].to(device) for k in _MODEL_INPUTS}
    if targets:
        out.update({k: inputs[k][rows].to(device) for k in _TARGETS if k in inputs})
        if "labels" in out and out["labels"].dim() == 2:
            out["labels"] = out["labels"][:, :width]
    return out


def train_head(model: nn.Module, inputs: Inputs, steps: int, batch_size: int = 16,
               lr: float = 1e-4, warmup: float = 0.1, clip: float = 1.0, seed: int = 0,
               progress: bool = True, stop_after: int | None = None,
               callback=None) -> tuple[list[float], float]:
    """Fine-tune any head on ``inputs`` (an ``encode_*`` result): AdamW with a linear
    warm-up and decay over ``steps``, shuffled batches, gradient clipping; the loss is the
    head's own (``model(...).loss``). ``callback(step, seconds)`` runs after each step with
    the training seconds so far (its own time not counted). Returns every step's loss and
    the training seconds."""
    device = next(model.parameters()).device
    optimizer = make_optimizer(model, lr)
    scheduler = warmup_linear(optimizer, round(warmup * steps), steps)
    batches = shuffled_batches(len(inputs["input_ids"]), batch_size, stop_after or steps,
                               torch.Generator().manual_seed(seed))
    losses, seconds = [], 0.0
    model.train()
    for step, rows in enumerate(progress_bar(batches, progress, total=stop_after or steps,
                                             desc="fine-tuning"), start=1):
        tick = time.perf_counter()
        loss = model(**_batch(inputs, rows, device)).loss
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        seconds += time.perf_counter() - tick
        if callback is not None:
            callback(step, seconds)
            model.train()
    return losses, seconds


@torch.no_grad()
def _outputs(model: nn.Module, inputs: Inputs, batch_size: int = 64):
    model.eval()
    device = next(model.parameters()).device
    for rows in torch.arange(len(inputs["input_ids"])).split(batch_size):
        yield rows, model(**_batch(inputs, rows, device, targets=False))


def predict_answers(model: nn.Module, inputs: Inputs, examples: Sequence[QAExample],
                    max_length: int = 10) -> list[str]:
    """Each passage's best span (:func:`best_span` over its pieces) as text."""
    answers = []
    for rows, out in _outputs(model, inputs):
        width = out.start_logits.shape[1]
        starts, ends = best_span(out.start_logits.cpu(), out.end_logits.cpu(),
                                 inputs["passage"][rows, :width], max_length=max_length)
        for r, s, e in zip(rows.tolist(), starts.tolist(), ends.tolist(), strict=True):
            a, b = inputs["offsets"][r, s, 0], inputs["offsets"][r, e, 1]
            answers.append(examples[r].context[a:b])
    return answers


def predict_tags(model: nn.Module, inputs: Inputs) -> list[list[str]]:
    """Each word's tag, read at its first piece."""
    tags = []
    for rows, out in _outputs(model, inputs):
        best = out.logits.argmax(-1).cpu()
        first = inputs["first_piece"][rows, :best.shape[1]]
        tags += [[TAGS[t] for t in best[i][first[i]].tolist()] for i in range(len(rows))]
    return tags


def predict_pairs(model: nn.Module, inputs: Inputs) -> torch.Tensor:
    """The probability that each pair gives away the same fact."""
    return torch.cat([out.logits.softmax(-1)[:, 1].cpu() for _, out in _outputs(model, inputs)])
