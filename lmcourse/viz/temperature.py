"""Soft targets as a picture: a teacher's logits through a temperature softmax,
the entropy of the result, and the size of the distillation gradient with and without T².

``temperature_widget`` carries a static figure as its fallback (what a page without a kernel
shows) and a slider for ``T`` that redraws it.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from lmcourse.models.distill import soft_target_grad_norms, softmax_t
from lmcourse.viz.figures import box_with_figure, display_figure

__all__ = ["entropy_bits", "soft_target_kl", "temperature_figure", "temperature_widget"]

TEMPERATURES = tuple(np.geomspace(0.25, 20, 48).tolist())


def entropy_bits(probs: torch.Tensor) -> float:
    """``H(p) = -sum_i p_i log2 p_i`` (0 log 0 = 0)."""
    p = probs.double().clamp_min(1e-300)
    return float(-(probs.double() * torch.log2(p)).sum())


#: how the slider and the legend both write T (three significant digits: 9.95, not 9.95268)
T_FORMAT = ".3g"


def soft_target_kl(logits: Sequence[float], student_logits: Sequence[float], T: float) -> float:
    """``KL(q || p)`` in nats between the teacher's and the student's soft targets at ``T``,
    ``q = softmax(z / T)``, ``p = softmax(s / T)``: the distillation loss less the teacher's
    entropy, a constant for the student."""
    q = softmax_t(torch.as_tensor(logits, dtype=torch.float64), T)
    log_p = torch.log_softmax(torch.as_tensor(student_logits, dtype=torch.float64) / T, -1)
    return float((q * (torch.log(q.clamp_min(1e-300)) - log_p)).sum())


def temperature_figure(logits: Sequence[float], labels: Sequence[str], T: float = 2.0,
                       student_logits: Sequence[float] | None = None, top: int = 12,
                       title: str = "the teacher's soft targets") -> plt.Figure:
    """Three panels: ``softmax(z / T)`` beside ``softmax(z)`` (the ``top`` most likely
    classes, and the rest as one bar when there are more), with ``KL(q || p)`` and
    ``T² KL`` at ``T``; the entropy against ``T``; the norm of the distillation gradient
    against ``T``, for ``L_d`` and ``T² L_d``, from ``student_logits`` (default: all zero,
    a student that knows nothing yet)."""
    z = torch.as_tensor(logits, dtype=torch.float64)
    if len(labels) != z.numel():
        raise ValueError(f"{len(labels)} labels for {z.numel()} logits")
    s = (torch.zeros_like(z) if student_logits is None
         else torch.as_tensor(student_logits, dtype=torch.float64))
    fig, (ax_p, ax_h, ax_g) = plt.subplots(1, 3, figsize=(12, 3.4),
                                           gridspec_kw={"width_ratios": [1.5, 1, 1]})
    shown = (torch.argsort(z, descending=True)[:top] if z.numel() > top
             else torch.arange(z.numel()))
    names = [labels[i] for i in shown.tolist()]
    heights = {t: softmax_t(z, t)[shown].numpy() for t in (1.0, T)}
    if len(shown) < z.numel():  # the long tail as one bar: where the soft targets' mass goes
        names.append(f"other {z.numel() - len(shown):,}")
        heights = {t: np.append(h, 1 - h.sum()) for t, h in heights.items()}
    x = np.arange(len(names))
    ax_p.bar(x - 0.2, heights[1.0], width=0.4, color="#bbbbbb", label="T = 1")
    ax_p.bar(x + 0.2, heights[T], width=0.4, color="tab:blue", label=f"T = {T:{T_FORMAT}}")
    ax_p.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax_p.set_ylabel("probability")
    kl = soft_target_kl(z, s, T)
    ax_p.set_title(f"{title}\nKL(q‖p) at T = {T:{T_FORMAT}}: {kl:.3f} nats, "
                   f"T²·KL = {T * T * kl:.3f}", fontsize=9)
    ax_p.legend()

    temps = np.array(TEMPERATURES)
    entropies = [entropy_bits(softmax_t(z, t)) for t in temps]
    ax_h.plot(temps, entropies)
    ax_h.axhline(np.log2(z.numel()), color="grey", ls=":", label=f"uniform ({z.numel():,})")
    ax_h.plot([T], [entropy_bits(softmax_t(z, T))], "o", color="tab:blue")
    ax_h.set_xscale("log")
    ax_h.set_xlabel("temperature T")
    ax_h.set_ylabel("entropy (bits)")
    ax_h.set_title("how soft")
    ax_h.legend()

    with_t2 = soft_target_grad_norms(s[None], z[None], temps.tolist(), scale_t2=True)
    without = soft_target_grad_norms(s[None], z[None], temps.tolist(), scale_t2=False)
    ax_g.plot(temps, without, label=r"$\|\partial L_d / \partial s\|$")
    ax_g.plot(temps, with_t2, label=r"$\|\partial (T^2 L_d) / \partial s\|$")
    ax_g.axvline(T, color="tab:blue", ls=":")
    ax_g.set_xscale("log")
    ax_g.set_yscale("log")
    ax_g.set_xlabel("temperature T")
    ax_g.set_title("gradient on the student's logits")
    ax_g.legend(fontsize=8)
    fig.tight_layout()
    return fig


def temperature_widget(logits: Sequence[float], labels: Sequence[str], T: float = 2.0,
                       student_logits: Sequence[float] | None = None, top: int = 12,
                       title: str = "the teacher's soft targets"):
    """A log-scale slider for ``T`` (0.25 to 20) that redraws :func:`temperature_figure`
    live; the figure at ``T`` is the widget's static fallback."""
    import ipywidgets as widgets

    static = temperature_figure(logits, labels, T, student_logits, top, title)
    slider = widgets.FloatLogSlider(value=T, base=10, min=np.log10(0.25), max=np.log10(20),
                                    step=0.05, description="T", continuous_update=False,
                                    readout_format=T_FORMAT)
    out = widgets.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            T = slider.value
            display_figure(temperature_figure(logits, labels, T, student_logits, top, title))
            q = softmax_t(torch.as_tensor(logits, dtype=torch.float64), T)
            kl = soft_target_kl(logits, torch.zeros(len(labels)) if student_logits is None
                                else student_logits, T)
            print(f"T = {T:{T_FORMAT}}: entropy {entropy_bits(q):.3f} bits, top class "
                  f"{labels[int(q.argmax())]} {float(q.max()):.3f}; KL(q||p) {kl:.4f} nats, "
                  f"T^2 KL {T * T * kl:.4f}")

    slider.observe(redraw, names="value")
    redraw()
    box = box_with_figure([slider, out], static)
    box.slider, box.output, box.redraw = slider, out, redraw
    return box
