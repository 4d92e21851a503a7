"""Gradient flow through time: how the gradient shrinks or grows as it travels back.

A recurrent chain ``h_t = phi(W h_{t-1} + x_t)`` with a loss on the last state only,
``L = u . h_T`` (``u`` a random unit vector), sends back

    dL/dh_t = (dh_{t+1}/dh_t)^T ... (dh_T/dh_{T-1})^T u,   dh_s/dh_{s-1} = diag(phi'(a_s)) W.

For a linear chain this is ``(W^{T-t})^T u``. Its norm is at most ``s^(T-t)`` with ``s``
the largest singular value of ``W``, and in the long run it grows or shrinks like
``rho^(T-t)``, ``rho`` the spectral radius (``||W^k||^(1/k) -> rho``). The default
matrices here are scaled orthogonal, whose singular values all equal ``rho``, so the
two agree at every step; a non-normal matrix can have ``s > 1 > rho`` and grow for a
while before it vanishes. A saturating ``tanh`` multiplies in slopes ``phi' <= 1`` and
so shrinks the gradient further. :func:`gradient_flow` measures the norms with autograd.

Other recurrent cells plug in through :data:`CELLS` (name -> builder): a builder takes
the recurrent matrix and a nonlinearity and returns a :class:`Cell`. :mod:`lmcourse.viz.gates` adds
``"lstm"`` and ``"gru"`` there; the widget offers every registered cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import torch

from lmcourse.viz.figures import box_with_figure, display_figure

__all__ = [
    "CELLS",
    "Cell",
    "GradientFlow",
    "gradient_flow",
    "gradient_flow_widget",
    "matrix_power_norms",
    "plot_gradient_flow",
    "recurrent_matrix",
    "register_cell",
    "rnn_cell",
]

State = tuple[torch.Tensor, ...]
NONLINEARITIES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "linear": lambda a: a,
    "tanh": torch.tanh,
    "relu": torch.relu,
}


def recurrent_matrix(hidden_size: int, radius: float, init: str = "orthogonal",
                     seed: int = 0) -> torch.Tensor:
    """A random ``H x H`` matrix (float64) whose spectral radius is exactly ``radius``.

    ``"orthogonal"``: ``radius * Q`` with ``Q`` orthogonal, so every eigenvalue has
    modulus ``radius`` and ``||W^k|| = radius^k``. ``"gaussian"``: i.i.d. normal
    entries rescaled by ``radius / max|eigenvalue|``.
    """
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(hidden_size, hidden_size, generator=g, dtype=torch.float64)
    if init == "orthogonal":
        q, r = torch.linalg.qr(a)
        return radius * q * torch.sign(torch.diagonal(r))  # sign fix: Haar-distributed Q
    if init == "gaussian":
        return radius * a / torch.linalg.eigvals(a).abs().max()
    raise ValueError(f"init must be 'orthogonal' or 'gaussian', got {init!r}")


def matrix_power_norms(weight: torch.Tensor, k_max: int) -> np.ndarray:
    """Spectral norms ``||W^k||_2`` for ``k = 0, 1, ..., k_max``."""
    power, norms = torch.eye(weight.shape[0], dtype=weight.dtype), []
    for _ in range(k_max + 1):
        norms.append(float(torch.linalg.matrix_norm(power, ord=2)))
        power = power @ weight
    return np.array(norms)


@dataclass
class Cell:
    """A recurrent cell for the experiment: ``state_t = step(state_{t-1}, x_t)``.

    ``init(h0)`` makes the first state (a tuple of tensors: ``(h,)`` for an RNN,
    ``(h, c)`` for an LSTM), ``hidden(state)`` the vector the loss reads.
    """

    step: Callable[[State, torch.Tensor], State]
    init: Callable[[torch.Tensor], State] = lambda h0: (h0,)
    hidden: Callable[[State], torch.Tensor] = lambda state: state[0]


def rnn_cell(weight: torch.Tensor, nonlinearity: str = "tanh") -> Cell:
    """The Elman cell ``h_t = phi(W h_{t-1} + x_t)`` (the input is already projected)."""
    phi = NONLINEARITIES[nonlinearity]
    return Cell(step=lambda state, x: (phi(state[0] @ weight.T + x),))


#: Cell builders by name: ``builder(weight, nonlinearity) -> Cell``.
CELLS: dict[str, Callable[[torch.Tensor, str], Cell]] = {"rnn": rnn_cell}


def register_cell(name: str, builder: Callable[[torch.Tensor, str], Cell]) -> None:
    """Make a new cell available to :func:`gradient_flow` and the widget by name."""
    CELLS[name] = builder


@dataclass
class GradientFlow:
    """``norms[t] = ||dL/d state_t||`` for ``t = 0..T`` (the loss reads state ``T``)."""

    norms: np.ndarray
    weight: torch.Tensor
    readout: torch.Tensor
    settings: dict = field(default_factory=dict)

    @property
    def steps_back(self) -> np.ndarray:
        """``T - t``: how many steps each gradient has travelled back from the loss."""
        return np.arange(len(self.norms))[::-1].copy()


def gradient_flow(radius: float = 1.0, nonlinearity: str = "tanh", seq_len: int = 50,
                  hidden_size: int = 64, seed: int = 0, *,
                  cell: str | Callable[[torch.Tensor, str], Cell] = "rnn",
                  init: str = "orthogonal", input_scale: float = 0.1) -> GradientFlow:
    """Run a random recurrent chain for ``seq_len`` steps and measure ``||dL/dh_t||``.

    The recurrent matrix has spectral radius ``radius``; inputs ``x_t`` are Gaussian
    with standard deviation ``input_scale``; the loss is ``u . h_T`` with ``u`` a
    random unit vector. Gradients come from autograd, in float64.
    """
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {sorted(NONLINEARITIES)}, "
                         f"got {nonlinearity!r}")
    build = CELLS[cell] if isinstance(cell, str) else cell
    weight = recurrent_matrix(hidden_size, radius, init, seed)
    chain = build(weight, nonlinearity)
    g = torch.Generator().manual_seed(seed + 1)
    h0 = torch.randn(hidden_size, generator=g, dtype=torch.float64) / math.sqrt(hidden_size)
    xs = input_scale * torch.randn(seq_len, hidden_size, generator=g, dtype=torch.float64)
    readout = torch.randn(hidden_size, generator=g, dtype=torch.float64)
    readout = readout / readout.norm()

    states = [tuple(s.detach().requires_grad_() for s in chain.init(h0))]
    for x_t in xs:
        states.append(chain.step(states[-1], x_t))
    loss = chain.hidden(states[-1]) @ readout
    flat = [s for state in states for s in state]
    grads = torch.autograd.grad(loss, flat, allow_unused=True)
    per_state = len(states[0])
    norms = []
    for t in range(len(states)):
        parts = [gr for gr in grads[t * per_state:(t + 1) * per_state] if gr is not None]
        norms.append(float(torch.sqrt(sum((gr ** 2).sum() for gr in parts))) if parts else 0.0)
    settings = dict(radius=radius, nonlinearity=nonlinearity, seq_len=seq_len,
                    hidden_size=hidden_size, seed=seed, init=init, input_scale=input_scale,
                    cell=cell if isinstance(cell, str) else getattr(cell, "__name__", "cell"))
    return GradientFlow(np.array(norms), weight, readout, settings)


# ---- pictures ------------------------------------------------------------------------------

#: The live widget's single curve: a strong colour, drawn thick and above the reference.
SINGLE_COLOR = "#c2185b"
DEFAULT_SETTINGS = tuple(dict(radius=r, nonlinearity=nl)
                         for nl in ("linear", "tanh") for r in (0.9, 1.0, 1.1))


def _label(flow: GradientFlow) -> str:
    s = flow.settings
    cell = "" if s["cell"] == "rnn" else f"{s['cell']}, "
    return f"{cell}{s['nonlinearity']}, ρ = {s['radius']:g}"


def plot_gradient_flow(settings: Sequence[dict] | None = None, *, reference: bool = False,
                       ax: plt.Axes | None = None, title: str | None = None,
                       **common) -> plt.Figure:
    """One line of ``||dL/dh_t||`` against ``T - t`` per setting, on a log scale.

    Each setting is a dict of :func:`gradient_flow` arguments (``radius``,
    ``nonlinearity``, ``cell``, ...); ``common`` holds those shared by all lines
    (``seq_len=60`` unless given). ``reference`` adds the linear prediction
    ``rho^(T-t)`` as a thin dotted grey line underneath. A single setting (the widget's
    live view) is drawn thick in :data:`SINGLE_COLOR`, on top of everything else.
    """
    settings = DEFAULT_SETTINGS if settings is None else settings
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    radii = sorted({s.get("radius", 1.0) for s in settings})
    cmap = plt.get_cmap("coolwarm")
    styles = {"linear": "--", "tanh": "-", "relu": ":"}
    markers = {"lstm": "o", "gru": "^"}  # colour = radius, line = nonlinearity, marker = cell
    for s in settings:
        kwargs = {"seq_len": 60, **common, **s}
        flow = gradient_flow(**kwargs)
        r = flow.settings["radius"]
        if len(settings) == 1:  # the curve the student moves: strong, thick, on top
            color, lw, z = SINGLE_COLOR, 3.0, 3
        else:
            color, lw, z = cmap(radii.index(r) / max(1, len(radii) - 1)), 1.5, 2
        ax.plot(flow.steps_back, flow.norms, styles.get(flow.settings["nonlinearity"], "-"),
                color=color, lw=lw, zorder=z, label=_label(flow),
                marker=markers.get(flow.settings["cell"]), markevery=6, markersize=4)
        if reference:
            k = flow.steps_back
            ax.plot(k, float(r) ** k, ":", color="0.55", lw=1.2, zorder=1,
                    label=f"linear prediction ρ^(T−t), ρ = {r:g}")
    ax.set_yscale("log", nonpositive="mask")
    values = np.concatenate([np.asarray(line.get_ydata(), float) for line in ax.get_lines()])
    values = values[np.isfinite(values) & (values > 0)]
    if values.size:  # show at least two decades, or round-off on a flat line fills the plot
        lo, hi = values.min(), values.max()
        mid = math.sqrt(lo * hi)
        ax.set_ylim(min(lo, mid / 10) / 1.5, max(hi, mid * 10) * 1.5)
    ax.set_xlabel("steps back from the loss, T − t")
    ax.set_ylabel("‖∂L/∂h_t‖")
    ax.set_title(title or "Gradient norm travelling back through time")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, ncol=2 if len(settings) > 3 else 1, loc="best")
    fig = ax.figure
    fig.tight_layout()
    return fig


def gradient_flow_widget(radius: float = 1.0, nonlinearity: str = "tanh", seq_len: int = 60,
                         hidden_size: int = 64, seed: int = 0, input_scale: float = 0.1, *,
                         static_settings: Sequence[dict] | None = None,
                         cells: Sequence[str] | None = None):
    """Sliders for the spectral radius, nonlinearity, sequence length, input size (and cell).

    Its fallback figure shows several settings (what a page without a kernel shows,
    carried in the widget's own display data and kept as the box's ``static_figure``); the
    live controls redraw the chosen setting beside the linear prediction ``rho^(T-t)``.
    """
    import ipywidgets as widgets

    common = dict(seq_len=seq_len, hidden_size=hidden_size, seed=seed, input_scale=input_scale)
    static = plot_gradient_flow(static_settings, title="Gradient norm through time (static view)",
                                **common)

    cells = list(CELLS) if cells is None else list(cells)
    radius_w = widgets.FloatSlider(value=radius, min=0.5, max=2.0, step=0.05,
                                   description="ρ(W_hh)", continuous_update=False)
    nonlin_w = widgets.Dropdown(options=list(NONLINEARITIES), value=nonlinearity,
                                description="φ")
    length_w = widgets.IntSlider(value=seq_len, min=10, max=200, step=10,
                                 description="T", continuous_update=False)
    scale_w = widgets.FloatLogSlider(value=input_scale, base=10, min=-2, max=0.5, step=0.25,
                                     description="input σ", continuous_update=False)
    cell_w = widgets.Dropdown(options=cells, value=cells[0], description="cell")
    out = widgets.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            setting = dict(radius=radius_w.value, nonlinearity=nonlin_w.value,
                           cell=cell_w.value, input_scale=scale_w.value)
            fig = plot_gradient_flow([setting], seq_len=length_w.value,
                                     hidden_size=hidden_size, seed=seed, reference=True)
            display_figure(fig)

    controls = [radius_w, nonlin_w, length_w, scale_w] + ([cell_w] if len(cells) > 1 else [])
    for w in controls:
        w.observe(redraw, names="value")
    redraw()
    box = box_with_figure([widgets.HBox(controls[:2]), widgets.HBox(controls[2:]), out], static)
    box.redraw = redraw
    return box
