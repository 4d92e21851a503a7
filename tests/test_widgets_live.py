"""The masking and temperature widgets, live in JupyterLab in a real browser: run the cells,
move a slider, and the trained model's scores that the widget prints change.

Headless Chromium (Debian's, driven by Playwright; skipped with a hint when missing) opens
a notebook in a JupyterLab server started for the test; nothing outside 127.0.0.1 is
fetched. The model is chapter 09's tiny BERT (the ``tiny-bert`` reference, seed 0).
"""

from __future__ import annotations

import nbformat
import pytest
from headless import Browser, chromium_path, jupyter_lab  # noqa: E402

SETUP = '''\
import torch
from lmcourse.course import reference
from lmcourse.data.sentences import minilm_review_corpus
from lmcourse.models.pretraining import load_tiny_bert
from lmcourse.models.pretraining import mlm_predictor
from lmcourse.pretrained import load_hf_tokenizer
from lmcourse.viz import masking_widget
from lmcourse.viz.temperature import temperature_widget

corpus = minilm_review_corpus().corpus
predict = mlm_predictor(load_tiny_bert(reference.load_weights("tiny-bert", 0)))
pieces = ["[CLS]", *"the twist comes in the [MASK] chapter".split(), "[SEP]"]
ids = torch.tensor([[corpus.pieces.index(p) for p in pieces]])
blank_logits = predict(ids)[0, pieces.index("[MASK]")].double().tolist()
'''
MASKING = ('masking_widget("i did not see the ending coming and the killer was the brother", '
           'corpus.tokenizer(load_hf_tokenizer().tokenize), predict=predict, draws=1, '
           'rate_draws=100)')
TEMPERATURE = "temperature_widget(blank_logits, corpus.pieces, T=2.0)"


def _widget_text(page, cell: int) -> str:
    """The text the live widget of code cell ``cell`` printed into its output."""
    return page.locator(".jp-CodeCell").nth(cell).locator(".jupyter-widgets pre").inner_text()


def _set_slider(page, cell: int, label: str, value: str) -> None:
    """Type ``value`` into the readout of the slider called ``label`` and press Enter, as a
    student can (the readout of an ipywidgets slider is editable)."""
    slider = page.locator(".jp-CodeCell").nth(cell).locator(".widget-slider").filter(
        has=page.locator(".widget-label", has_text=label)).first
    readout = slider.locator(".widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    page.keyboard.press("Enter")


@pytest.mark.slow
def test_masking_and_temperature_widgets_move_a_real_models_scores_in_jupyterlab(tmp_path):
    chromium_path()  # skips, with the way to install it, when there is no browser
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                         for c in (SETUP, MASKING, TEMPERATURE)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(nb, tmp_path / "live.ipynb")
    token = "lmcourse-live"
    with jupyter_lab(tmp_path, tmp_path, token, ("--LabApp.expose_app_in_browser=True",),
                     env={"TQDM_DISABLE": "1", "OMP_NUM_THREADS": "1"}) as url:
        _run_and_move_the_sliders(url, token)


def _run_and_move_the_sliders(url: str, token: str) -> None:
    browser = Browser()
    try:
        page = browser.page()
        page.goto(f"{url}/lab/tree/live.ipynb?token={token}")
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
            " && window.jupyterapp.shell.currentWidget.sessionContext?.session?.kernel"
            "?.connectionStatus === 'connected'", timeout=120_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        for cell in (1, 2):
            page.locator(".jp-CodeCell").nth(cell).locator(".jupyter-widgets pre").wait_for(
                timeout=180_000)
        # one figure per widget: the live one; the static fallback is not drawn beside it
        for cell in (1, 2):
            images = page.locator(".jp-CodeCell").nth(cell).locator(".jp-OutputArea img")
            assert images.count() == 1, f"cell {cell}: {images.count()} figures shown"

        before = _widget_text(page, 1)
        assert "the model on 100 token maskings" in before, before
        _set_slider(page, 1, "select", "0.6")
        page.wait_for_function(
            "([i, old]) => { const pre = document.querySelectorAll('.jp-CodeCell')[i]"
            ".querySelector('.jupyter-widgets pre'); return pre && pre.innerText !== old; }",
            arg=[1, before], timeout=60_000)
        after = _widget_text(page, 1)
        assert after != before and "loss" in after

        before_t = _widget_text(page, 2)
        _set_slider(page, 2, "T", "8")
        page.wait_for_function(
            "([i]) => { const pre = document.querySelectorAll('.jp-CodeCell')[i]"
            ".querySelector('.jupyter-widgets pre'); return pre && pre.innerText.startsWith("
            "'T = 8'); }", arg=[2], timeout=60_000)
        after_t = _widget_text(page, 2)
        entropy = [float(t.split("entropy ")[1].split(" bits")[0]) for t in (before_t, after_t)]
        assert entropy[1] > entropy[0], (before_t, after_t)  # hotter: softer targets
        assert not browser.errors, browser.errors
        assert not browser.remote_hosts(), browser.remote_hosts()
    finally:
        browser.close()
