"""Masked-language-model masking as pictures: one sentence as a row of coloured tokens, the
rates measured over many draws beside their targets, and a widget.

Colours: grey = not selected, blue = replaced by ``[MASK]``, orange = replaced by a random
token (shown), green = selected but kept. A thick frame marks every position the model must
predict, with the original token (the label) written under it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Patch, Rectangle

from lmcourse.masking import (
    KEPT,
    KIND_NAMES,
    MASKED,
    NOT_SELECTED,
    RANDOM,
    continuation_flags,
    mask_spans,
    mask_tokens,
    mask_whole_words,
    masking_kinds,
    masking_rates,
)
from lmcourse.viz.figures import box_with_figure, display_figure

__all__ = ["SCHEMES", "MaskingInput", "Predictor", "encode_for_masking", "masking_figure",
           "masking_widget", "plot_masking", "plot_masking_rates", "sample_masking",
           "score_masking", "target_rates"]

SCHEMES = ("token", "whole word", "span")
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
COLOURS = {NOT_SELECTED: "#ececec", MASKED: "#4878d0", RANDOM: "#ee854a", KEPT: "#6acc64"}
TEXT_COLOURS = {NOT_SELECTED: "#333333", MASKED: "white", RANDOM: "black", KEPT: "black"}
_ALIASES = {"none": NOT_SELECTED, "mask": MASKED, "random": RANDOM, "kept": KEPT,
            **{name: k for k, name in enumerate(KIND_NAMES)}}
DEFAULT_TEXT = "the quick brown fox jumps over the lazy dog while the farmer was sleeping"
_LINE = 2.1  # vertical distance between wrapped lines of boxes (box height 1)


@dataclass
class MaskingInput:
    """One sentence ready for the maskers: its pieces and ids in a vocabulary."""

    tokens: list[str]
    input_ids: torch.Tensor
    is_continuation: torch.Tensor
    vocab: list[str]  # id -> piece
    mask_id: int
    special_ids: list[int]


def _vocabulary(tokenizer) -> list[str] | None:
    """The tokenizer's pieces in id order (WordPiece, a bound ``.tokenize`` or Hugging Face)."""
    owner = getattr(tokenizer, "__self__", tokenizer)  # WordPiece(vocab).tokenize -> WordPiece
    vocab = getattr(owner, "vocab", None)
    if not isinstance(vocab, Mapping) and hasattr(owner, "get_vocab"):
        vocab = owner.get_vocab()
    if not isinstance(vocab, Mapping) or not vocab:
        return None
    pieces = [f"[id {i}]" for i in range(max(vocab.values()) + 1)]
    for piece, i in vocab.items():
        pieces[i] = piece
    return pieces


def encode_for_masking(text: str | Sequence[str], tokenizer=None) -> MaskingInput:
    """Pieces (wrapped in ``[CLS] ... [SEP]``) and their ids, ready for :func:`sample_masking`.

    ``text`` is a sentence or a list of pieces. ``tokenizer`` is a callable text -> pieces
    (``WordPiece(vocab).tokenize``), an object with ``.tokenize`` (a Hugging Face tokenizer)
    or ``None`` (split on spaces). Random replacements come from the tokenizer's
    vocabulary when it has one, else from the sentence's own pieces.
    """
    if isinstance(text, str):
        split = str.split if tokenizer is None else getattr(tokenizer, "tokenize", tokenizer)
        tokens = list(split(text))
    else:
        tokens = [str(t) for t in text]
    if not tokens or tokens[0] != "[CLS]":
        tokens = ["[CLS]", *tokens, "[SEP]"]
    vocab = _vocabulary(tokenizer) if tokenizer is not None else None
    vocab = list(vocab) if vocab is not None else list(SPECIAL_TOKENS)
    index = {piece: i for i, piece in enumerate(vocab)}
    for piece in [*SPECIAL_TOKENS, *tokens]:
        if piece not in index:
            index[piece] = len(vocab)
            vocab.append(piece)
    return MaskingInput(tokens=tokens, input_ids=torch.tensor([index[t] for t in tokens]),
                        is_continuation=continuation_flags(tokens), vocab=vocab,
                        mask_id=index["[MASK]"],
                        special_ids=sorted(index[s] for s in SPECIAL_TOKENS))


def sample_masking(example: MaskingInput, scheme: str = "token", draws: int = 1, *,
                   prob: float = 0.15, mask_frac: float = 0.8, random_frac: float = 0.1,
                   p: float = 0.2, max_span: int = 10,
                   generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``draws`` independent maskings of one sentence: ``(masked_ids, labels)``, ``draws x T``."""
    common = dict(mask_id=example.mask_id, vocab_size=len(example.vocab),
                  special_ids=example.special_ids, prob=prob, generator=generator,
                  mask_frac=mask_frac, random_frac=random_frac)
    ids = example.input_ids.repeat(draws, 1)
    if scheme == "token":
        return mask_tokens(ids, **common)
    if scheme == "whole word":
        return mask_whole_words(ids, example.is_continuation.repeat(draws, 1), **common)
    if scheme == "span":
        return mask_spans(ids, p=p, max_span=max_span,
                          is_continuation=example.is_continuation.repeat(draws, 1), **common)
    raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")


def target_rates(prob: float, mask_frac: float, random_frac: float,
                 vocab_size: int | None = None, num_special: int = 0) -> dict[str, float]:
    """The rates the maskers aim at. A random draw equal to the original token reads as kept
    (probability ``1 / (vocab_size - num_special)``), which moves that share from random to
    kept when ``vocab_size`` is given."""
    hit = 1.0 / (vocab_size - num_special) if vocab_size else 0.0
    return {"selected": prob, "mask": mask_frac, "random": random_frac * (1 - hit),
            "kept": 1 - mask_frac - random_frac + random_frac * hit}


def _as_kinds(kinds, tokens, masked_tokens, labels, mask_token) -> list[int]:
    if kinds is None:
        if labels is None:
            raise ValueError("give the kinds (from lmcourse.masking.masking_kinds) or the labels")
        labels = [int(v) for v in torch.as_tensor(labels).flatten()]
        return [NOT_SELECTED if lab == -100 else MASKED if m == mask_token
                else KEPT if m == t else RANDOM
                for t, m, lab in zip(tokens, masked_tokens, labels, strict=True)]
    if isinstance(kinds, torch.Tensor):
        kinds = kinds.flatten().tolist()
    return [_ALIASES[k] if isinstance(k, str) else int(k) for k in kinds]


@cache
def _glyphs() -> frozenset[int]:
    """Code points the monospace font can draw (a random piece may be CJK, Thai, ...)."""
    from matplotlib.font_manager import FontProperties, findfont
    from matplotlib.ft2font import FT2Font

    return frozenset(FT2Font(findfont(FontProperties(family="monospace"))).get_charmap())


def _drawable(token: str) -> str:
    """``token`` with the characters the font lacks shown as ``□`` (no missing-glyph noise)."""
    return "".join(ch if ch.isascii() or ord(ch) in _glyphs() else "□" for ch in token)


def _layout(shown: Sequence[str], below: Sequence[str], max_chars: float):
    """(x, line, width) of each box in character units, wrapping at ``max_chars``."""
    boxes, x, line, right = [], 0.0, 0, 0.0
    for s, b in zip(shown, below, strict=True):
        w = max(len(s), len(b), 1) + 1.0
        if x > 0 and x + w > max_chars:
            x, line = 0.0, line + 1
        boxes.append((x, line, w))
        right = max(right, x + w)
        x += w + 0.5
    return boxes, line + 1, right


def plot_masking(tokens: Sequence[str], masked_tokens: Sequence[str], kinds=None, *,
                 labels=None, mask_token: str = "[MASK]", ax: plt.Axes | None = None,
                 title: str | None = None, max_chars: float = 80,
                 legend: bool = True, guesses: Sequence[str | None] | None = None
                 ) -> plt.Figure:
    """One masked sentence as a row of boxes coloured by what happened to each token.

    ``tokens`` are the originals, ``masked_tokens`` what the model reads; ``kinds`` are
    codes from :func:`lmcourse.masking.masking_kinds` (or their names), or pass ``labels``
    (``-100`` = not selected) and they are worked out from the tokens. ``guesses`` (one per
    token, ``None`` where nothing is predicted) writes a model's top guess under each label:
    green when it is the label, red when not.
    """
    if len(tokens) != len(masked_tokens):
        raise ValueError(f"{len(tokens)} tokens but {len(masked_tokens)} masked tokens")
    kinds = _as_kinds(kinds, tokens, masked_tokens, labels, mask_token)
    if len(kinds) != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {len(kinds)} kinds")
    below = [_drawable(t) if k != NOT_SELECTED else "" for t, k in zip(tokens, kinds,
                                                                         strict=True)]
    if guesses is not None and len(guesses) != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {len(guesses)} guesses")
    guessed = [("→ " + _drawable(g)) if g is not None and k != NOT_SELECTED else ""
               for g, k in zip(guesses or [None] * len(tokens), kinds, strict=True)]
    gap = _LINE + (0.6 if guesses is not None else 0.0)
    masked_tokens = [_drawable(t) for t in masked_tokens]
    boxes, n_lines, right = _layout(masked_tokens, [max(b, g, key=len) for b, g in
                                                    zip(below, guessed, strict=True)], max_chars)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(0.09 * right + 0.6, 6.0), 0.6 * n_lines + 0.9))
    for (x, line, w), shown, target, kind, guess in zip(boxes, masked_tokens, below, kinds,
                                                          guessed, strict=True):
        y = -line * gap
        predicted = kind != NOT_SELECTED
        ax.add_patch(Rectangle((x, y), w, 1.0, facecolor=COLOURS[kind],
                               edgecolor="black" if predicted else "#bbbbbb",
                               linewidth=1.8 if predicted else 0.6))
        ax.text(x + w / 2, y + 0.5, shown, ha="center", va="center", fontsize=8,
                family="monospace", color=TEXT_COLOURS[kind])
        if predicted:
            ax.text(x + w / 2, y - 0.12, target, ha="center", va="top", fontsize=7,
                    family="monospace", style="italic", color="#222222")
            if guess:
                right_guess = guess[2:] == target
                ax.text(x + w / 2, y - 0.6, guess, ha="center", va="top", fontsize=7,
                        family="monospace", color="#1a7f37" if right_guess else "#c62828")
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    ax.set_xlim(-0.3, max(right + 0.3, width_in / 0.085))  # ~ one character per 0.085 in
    ax.set_ylim(-(n_lines - 1) * gap - (1.4 if guesses is not None else 0.9), 1.2)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    if legend:
        handles = [Patch(facecolor=COLOURS[k], edgecolor="#999999", label=KIND_NAMES[k])
                   for k in (NOT_SELECTED, MASKED, RANDOM, KEPT)]
        handles.append(Patch(facecolor="white", edgecolor="black", linewidth=1.8,
                             label="predicted (label below" + (", then the model's guess)"
                                                               if guesses is not None else ")")))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, 0), ncol=5,
                  fontsize=7, frameon=False, handlelength=1.2, borderaxespad=0.1)
    return ax.figure


_RATE_LABELS = {"selected": "selected\n(of tokens)", "mask": "[MASK]\n(of selected)",
                "random": "random\n(of selected)", "kept": "kept\n(of selected)"}


def plot_masking_rates(rates: Mapping, target: Mapping[str, float] | None = None, *,
                       ax: plt.Axes | None = None, title: str | None = None) -> plt.Figure:
    """Bars of measured rates (one series, or a dict name -> rates) beside the targets.

    Rates are dicts like :func:`lmcourse.masking.masking_rates` returns: ``selected`` (of
    the non-special tokens), ``mask``, ``random`` and ``kept`` (of the selected tokens).
    """
    series = dict(rates) if all(isinstance(v, Mapping) for v in rates.values()) \
        else {"measured": rates}
    if target is not None:
        series["target"] = target
    keys = list(_RATE_LABELS)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.0))
    width = 0.8 / len(series)
    for j, (name, values) in enumerate(series.items()):
        xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(keys))]
        heights = [float(values[k]) for k in keys]
        style = dict(color="white", edgecolor="black", hatch="//") if name == "target" else {}
        bars = ax.bar(xs, heights, width * 0.95, label=name, **style)
        ax.bar_label(bars, [f"{h:.3f}" for h in heights], fontsize=6, padding=1)
    ax.set_xticks(range(len(keys)), [_RATE_LABELS[k] for k in keys], fontsize=8)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("fraction", fontsize=8)
    ax.legend(fontsize=7, ncol=len(series), loc="upper left", frameon=False)
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    return ax.figure


#: a masked LM as the widget sees it: masked ids (draws x T) -> logits (draws x T x V), ids
#: and V in the vocabulary the sentence was encoded with
Predictor = Callable[[torch.Tensor], torch.Tensor]


@torch.no_grad()
def score_masking(predict: Predictor, masked: torch.Tensor, labels: torch.Tensor
                  ) -> tuple[torch.Tensor, float, float]:
    """A masked LM on maskings of a sentence: its top guess at every position, and over the
    predicted positions M (``labels != -100``) the masked-LM loss
    ``-1/|M| sum_(i in M) log p(x_i | masked sentence)`` in nats and the share of top
    guesses equal to the label (``nan`` for both when nothing is predicted)."""
    logits = predict(masked)
    if logits.shape[:2] != masked.shape:
        raise ValueError(f"predict gave logits of shape {tuple(logits.shape)} for ids of shape "
                         f"{tuple(masked.shape)}; it must return draws x T x vocabulary")
    logits, labels = logits.float().cpu(), labels.cpu()
    guesses = logits.argmax(-1)
    picked = labels != -100
    if not picked.any():
        return guesses, float("nan"), float("nan")
    loss = torch.nn.functional.cross_entropy(logits[picked], labels[picked]).item()
    return guesses, loss, (guesses[picked] == labels[picked]).float().mean().item()


def masking_figure(text: str | Sequence[str] | MaskingInput = DEFAULT_TEXT, tokenizer=None, *,
                   schemes: Sequence[str] = SCHEMES, draws: int = 1, prob: float = 0.15,
                   mask_frac: float = 0.8, random_frac: float = 0.1, p: float = 0.2,
                   max_span: int = 10, rate_draws: int = 1000, seed: int = 0,
                   max_chars: float = 80, predict: Predictor | None = None) -> plt.Figure:
    """``draws`` maskings of one sentence per scheme, then the rates over ``rate_draws``
    maskings of it beside :func:`target_rates` (the static twin of :func:`masking_widget`).

    With ``predict`` (a trained masked LM, :data:`Predictor`) every drawn row also shows
    the model's top guess under each label and how many it gets right, and the rates'
    title its loss and accuracy over all the maskings of each scheme."""
    example = text if isinstance(text, MaskingInput) else encode_for_masking(text, tokenizer)
    settings = dict(prob=prob, mask_frac=mask_frac, random_frac=random_frac, p=p,
                    max_span=max_span)
    generator = torch.Generator().manual_seed(seed)
    rows, rates, scores = [], {}, {}
    for scheme in schemes:
        masked, labels = sample_masking(example, scheme, draws + rate_draws,
                                        generator=generator, **settings)
        guesses = None
        if predict is not None:  # guesses for the rows drawn; scores over the rates' maskings
            guesses = score_masking(predict, masked[:draws], labels[:draws])[0]
            scored = slice(draws, None) if rate_draws else slice(None, draws)
            _, loss, accuracy = score_masking(predict, masked[scored], labels[scored])
            scores[scheme] = {"loss": loss, "accuracy": accuracy}
        for d in range(draws):
            shown = [example.vocab[i] for i in masked[d].tolist()]
            kinds = masking_kinds(masked[d], labels[d], example.mask_id)
            title, row_guesses = f"{scheme} masking, draw {d + 1}", None
            if guesses is not None:
                row_guesses = [example.vocab[g] for g in guesses[d].tolist()]
                picked = labels[d] != -100
                right = int((guesses[d][picked] == labels[d][picked]).sum())
                title += f" (the model gets {right} of {int(picked.sum())} right)"
            rows.append((title, shown, kinds, row_guesses))
        if rate_draws:
            rates[scheme] = masking_rates(masked[draws:], labels[draws:], example.mask_id,
                                        example.special_ids)
    def below(row_guesses):  # what is written under the boxes, for the layout's widths
        if row_guesses is None:
            return example.tokens
        return [max(t, "→ " + g, key=len) for t, g in zip(example.tokens, row_guesses,
                                                         strict=True)]

    line_height = 0.6 if predict is None else 0.8
    layouts = [_layout(shown, below(g), max_chars) for _, shown, _, g in rows]
    heights = [n_lines * line_height + 0.55 for _, n_lines, _ in layouts]
    heights += [3.0 + 0.15 * len(scores)] if rates else []
    right = max([r for _, _, r in layouts], default=40)
    fig, axes = plt.subplots(len(heights), 1, squeeze=False, height_ratios=heights,
                             figsize=(max(0.09 * right + 0.6, 6.5), sum(heights) + 0.3))
    axes = axes[:, 0]
    for ax, (title, shown, kinds, row_guesses) in zip(axes, rows, strict=False):
        plot_masking(example.tokens, shown, kinds, ax=ax, title=title, max_chars=max_chars,
                     legend=ax is axes[len(rows) - 1], guesses=row_guesses)
    if rates:
        target = target_rates(prob, mask_frac, random_frac, len(example.vocab),
                              len(example.special_ids))
        title = (f"rates over {rate_draws} maskings of this sentence (prob = {prob:g}, "
                 f"{mask_frac:.0%} / {random_frac:.0%} / {1 - mask_frac - random_frac:.0%})")
        if scores:
            title += "".join(f"\nthe model on the {k} maskings: loss {v['loss']:.2f} nats, "
                             f"accuracy {v['accuracy']:.2f}" for k, v in scores.items())
        plot_masking_rates(rates, target, ax=axes[-1], title=title)
    fig.tight_layout()
    fig.model_scores = scores  # scheme -> the model's loss and accuracy (with predict)
    return fig


def masking_widget(text: str | Sequence[str] = DEFAULT_TEXT,
                   tokenizer: Callable[[str], list[str]] | object | None = None, *,
                   sentences: Sequence[str] = (), scheme: str = "token", prob: float = 0.15,
                   mask_frac: float = 0.8, random_frac: float = 0.1, p: float = 0.2,
                   max_span: int = 10, draws: int = 3, rate_draws: int = 500, seed: int = 0,
                   predict: Predictor | None = None):
    """A sentence box, sliders for the selection rate, the [MASK]/random split and the span
    length (SpanBERT's p: spans average about 1/p words), a toggle for token / whole-word /
    span masking and a "resample" button; the live controls redraw ``draws`` fresh
    maskings into an ``Output``.

    With ``predict`` (a trained masked LM, :data:`Predictor`) each masking also shows the
    model's guesses for the masked positions, and the rates' title its loss and accuracy over
    ``rate_draws`` maskings: move a slider and watch the model cope. Its fallback figure
    (every scheme once, with measured rates) is what a page without a kernel shows, kept
    as the box's ``static_figure``; ``sentences`` are offered in the sentence box.
    """
    import ipywidgets as widgets

    settings = dict(prob=prob, mask_frac=mask_frac, random_frac=random_frac, p=p,
                    max_span=max_span, rate_draws=rate_draws)
    example = encode_for_masking(text, tokenizer)
    static = masking_figure(example, schemes=SCHEMES, draws=1, seed=seed, predict=predict,
                            **settings)

    first = text if isinstance(text, str) else " ".join(text)
    text_w = widgets.Combobox(value=first, options=[first, *sentences], ensure_option=False,
                              continuous_update=False, description="sentence",
                              layout=widgets.Layout(width="95%"))
    scheme_w = widgets.ToggleButtons(options=list(SCHEMES), value=scheme, description="masking")
    slider = dict(min=0.0, max=1.0, step=0.01, continuous_update=False, readout_format=".2f")
    prob_w = widgets.FloatSlider(value=prob, description="select", **slider)
    mask_w = widgets.FloatSlider(value=mask_frac, description="→ [MASK]", **slider)
    random_w = widgets.FloatSlider(value=random_frac, description="→ random", **slider)
    p_w = widgets.FloatSlider(value=p, min=0.05, max=1.0, step=0.05, continuous_update=False,
                              description="span p", tooltip="spans average about 1/p words")
    resample_w = widgets.Button(description="resample", icon="refresh")
    out = widgets.Output()
    state = {"seed": seed, "text": first, "example": example}

    def redraw(*_):
        if text_w.value != state["text"]:
            state["text"], state["example"] = text_w.value, encode_for_masking(
                text_w.value if text_w.value.strip() else first, tokenizer)
        with out:
            out.clear_output(wait=True)
            try:
                fig = masking_figure(state["example"], schemes=(scheme_w.value,), draws=draws,
                                     prob=prob_w.value, mask_frac=mask_w.value,
                                     random_frac=random_w.value, p=p_w.value,
                                     max_span=max_span, rate_draws=rate_draws,
                                     seed=state["seed"], predict=predict)
            except ValueError as err:  # e.g. [MASK] + random shares above 1
                print(err)
                return
            state["figure"] = fig
            display_figure(fig)
            if predict is not None:  # the model's scores as text too: readable, searchable
                score = fig.model_scores[scheme_w.value]
                print(f"the model on {rate_draws} {scheme_w.value} maskings of this sentence: "
                      f"loss {score['loss']:.3f} nats, accuracy {score['accuracy']:.3f}")

    def resample(*_):
        state["seed"] += 1
        redraw()

    for w in (text_w, scheme_w, prob_w, mask_w, random_w, p_w):
        w.observe(redraw, names="value")
    resample_w.on_click(resample)
    redraw()
    box = box_with_figure([text_w, widgets.HBox([scheme_w, resample_w]),
                           widgets.HBox([prob_w, mask_w, random_w]), p_w, out], static)
    box.redraw = redraw
    box.controls = dict(text=text_w, scheme=scheme_w, prob=prob_w, mask_frac=mask_w,
                        random_frac=random_w, p=p_w, resample=resample_w)
    box.output, box.state = out, state  # state: seed, text, example, last figure drawn
    return box
