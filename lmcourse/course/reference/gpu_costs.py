"""Table 1 of Vaswani et al. (2017) measured on a GPU: ``reference/gpu-costs.json``.

Chapter 07 times one self-attention layer and one recurrent layer on the machine in front
of the student (a CPU, usually). The case for attention is about parallel hardware, so this
file keeps the same measurement made once on a GPU, with the device recorded:

    python -m lmcourse.course.reference.gpu_costs      # on a machine with a GPU

- ``layer_ms``: one forward and backward pass of a fresh layer
  (:func:`~lmcourse.models.layer_costs.layer_seconds`, batch of 8, median of 10) for
  ``attention``, ``rnn``, ``lstm`` and ``gru`` of width 128 and 512, at each of ``lengths``;
- ``train_tokens_per_s``: characters per second of one training step (forward, backward,
  clipping, Adam; batch 32, random ids) of the data-scaling references' LSTM (2 x 512) and
  transformer (4 x 256), both 3.35 M parameters, at sequence lengths 128 to 1,024.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
WIDTHS = (128, 512)
KINDS = ("attention", "rnn", "lstm", "gru")
TRAIN_LENGTHS = (128, 256, 512, 1024)


def costs_path() -> Path:
    from lmcourse.course.reference.result import reference_dir

    return reference_dir() / "gpu-costs.json"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_tokens_per_s(cell: str, length: int, device: torch.device, steps: int = 10) -> float:
    """Characters per second of a training step of the scale references' ``cell`` model
    (``"lstm"`` or ``"transformer"``) on batches of 32 x ``length`` (3 warm-up steps)."""
    from lmcourse.course.reference.lm_scale import CELLS, build_model, recipe_for, wiki_chars
    from lmcourse.models.transformer import TransformerLM
    from lmcourse.train import lm_train_step

    vocab, recipe = len(wiki_chars()[0]), recipe_for(cell, "full")
    torch.manual_seed(0)
    if cell == "transformer":  # positions for the longer windows too
        c = CELLS[cell]
        model = TransformerLM(vocab, c["d_model"], c["heads"], c["layers"], c["feedforward"],
                              max_len=length, positions=c["positions"],
                              dropout=recipe["dropout"])
    else:
        model = build_model(recipe)
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, y = (torch.randint(0, vocab, (32, length), device=device) for _ in range(2))
    for _ in range(3):
        lm_train_step(model, opt, x, y, None, 1.0)
    _sync(device)
    tick = time.perf_counter()
    for _ in range(steps):
        lm_train_step(model, opt, x, y, None, 1.0)
    _sync(device)
    return 32 * length * steps / (time.perf_counter() - tick)


def measure(device: torch.device) -> dict:
    """Every figure of the file, measured on ``device``."""
    from lmcourse.models.layer_costs import layer_seconds

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {
        "device": name, "torch": torch.__version__, "batch": 8, "repeats": 10,
        "lengths": list(LENGTHS),
        "layer_ms": {f"{kind}@{d}": [round(layer_seconds(kind, n, d, batch=8, repeats=10,
                                                         device=device) * 1e3, 4)
                                     for n in LENGTHS]
                     for d in WIDTHS for kind in KINDS},
        "train_tokens_per_s": {f"{cell}@{t}": round(train_tokens_per_s(cell, t, device))
                               for cell in ("lstm", "transformer") for t in TRAIN_LENGTHS},
        "train_setup": "batch 32, one training step (forward, backward, clip, Adam), mean of "
                       "10 steps after 3 warm-ups, random ids",
    }


def load() -> dict:
    """The committed GPU measurement (``reference/gpu-costs.json``)."""
    path = costs_path()
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: on a machine with a GPU, run "
                                "`python -m lmcourse.course.reference.gpu_costs`")
    return json.loads(path.read_text())


if __name__ == "__main__":
    from lmcourse.course.reference.result import write_atomic

    if not torch.cuda.is_available():
        raise SystemExit("no GPU here: this measurement is the GPU's side of chapter 07's table")
    table = measure(torch.device("cuda"))
    write_atomic(costs_path(), lambda tmp: Path(tmp).write_text(json.dumps(table, indent=1)))
    print(f"wrote {costs_path()}")
