"""bertviz with no network: the rewritten HTML fetches nothing, inlines d3 and jQuery, saves
atomically, and (in headless Chromium with every non-local request refused) really draws."""

from __future__ import annotations

import hashlib
import json
import os
import re

import pytest
import torch

from lmcourse.viz import bertviz_offline
from lmcourse.viz.bertviz_offline import (
    VENDOR,
    head_view,
    model_view,
    offline_html,
    remote_references,
)

TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "purred", "[SEP]"]
CDN = "https://cdnjs.cloudflare.com/ajax/libs"
VIEWS = {"head": head_view, "model": model_view}


def _attentions(layers=2, heads=3, batch=1, seed=0):
    torch.manual_seed(seed)
    T = len(TOKENS)
    return tuple(torch.softmax(torch.randn(batch, heads, T, T), -1) for _ in range(layers))


def _params(html: str) -> dict:
    """The data bertviz embeds in its script (``const params = {...};``)."""
    return json.loads(re.search(r"const params = (\{.*?\});", html).group(1))


@pytest.mark.parametrize("name", VIEWS)
def test_views_fetch_nothing_and_inline_the_libraries(name):
    view = VIEWS[name](_attentions(), TOKENS, sentence_b_start=5)
    for html in (view.data, view.page()):
        assert remote_references(html) == []
        assert "https://d3js.org v5.7.0" in html and "jQuery v2.2.4" in html
        assert "require.config" not in html and "requirejs(" not in html
        assert "cdnjs" not in html and "require.min.js" not in html
    for name_ in ("d3", "jquery"):
        assert bertviz_offline._library(name_) in view.data
    assert view.data.lower().count("</script") == 1  # one script, nothing can end it early
    assert view._repr_html_() == view.data  # what a notebook shows


def test_remote_references_finds_what_bertviz_would_fetch():
    from bertviz import head_view as bertviz_head_view

    raw = bertviz_head_view(list(_attentions()), TOKENS, html_action="return").data
    assert remote_references(raw) == [f"{CDN}/require.js/2.3.6/require.min.js",
                                      f"{CDN}/d3/5.7.0/d3.min", f"{CDN}/jquery/2.0.0/jquery.min"]
    assert remote_references(offline_html(raw)) == []


@pytest.mark.parametrize("html, expected", [
    ('<script src="//cdn.example.org/x.js"></script>', ["//cdn.example.org/x.js"]),
    ("<script src='http://a.org/b.js' defer></script>", ["http://a.org/b.js"]),
    ('<link rel="stylesheet" href="https://fonts.example.com/css">',
     ["https://fonts.example.com/css"]),
    ('<img alt="" src="https://example.com/i.png">', ["https://example.com/i.png"]),
    ("<style>@import url('https://example.com/a.css');</style>",
     ["https://example.com/a.css"]),
    ("<script>require.config({paths: {d3: 'https://x.org/d3'}}); fetch(`//y.org/z`)</script>",
     ["https://x.org/d3", "//y.org/z"]),
    # not fetched: links, comments, XML namespaces, relative (local) files
    ('<a href="https://example.com">a link</a><p>see https://example.com</p>', []),
    ("<script>// from https://github.com/x\nvar ns = 'http://www.w3.org/2000/svg';</script>", []),
    ('<script src="d3.min.js"></script><link rel="stylesheet" href="style.css">', []),
])
def test_remote_references_cases(html, expected):
    assert remote_references(html) == expected


def test_unexpected_bertviz_html_is_refused():
    with pytest.raises(RuntimeError, match="not supported"):
        offline_html("<div>no bertviz here</div>")


def test_weights_come_from_the_chosen_example_rounded():
    attentions = _attentions(layers=2, heads=3, batch=2)
    view = head_view(attentions, TOKENS, batch_index=1, decimals=3)
    [data] = _params(view.data)["attention"]
    assert data["left_text"] == TOKENS
    expected = torch.stack([a[1] for a in attentions]).double().round(decimals=3)
    assert torch.equal(torch.tensor(data["attn"], dtype=torch.float64), expected)
    exact = model_view([a[0] for a in attentions], TOKENS, decimals=None)  # heads x T x T
    shown = torch.tensor(_params(exact.data)["attention"][0]["attn"])
    assert torch.allclose(shown, torch.stack([a[0] for a in attentions]), atol=1e-7)


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(ValueError, match="8 positions but 3 tokens"):
        head_view(_attentions(), TOKENS[:3])
    with pytest.raises(ValueError, match="B x heads x T x T"):
        model_view([torch.zeros(2, 8)], TOKENS)
    with pytest.raises(ValueError, match="no attention layers"):
        head_view([], TOKENS)


def test_tokens_cannot_break_out_of_the_script():
    tokens = ["a", "</script><b>x</b>", "<!--", "d"]
    html = head_view([torch.full((1, 1, 4, 4), 0.25)], tokens).data
    assert html.lower().count("</script") == 1
    assert _params(html.replace("<\\/", "</").replace("<\\!", "<!"))["attention"][0][
        "left_text"] == tokens


def test_save_writes_the_whole_page_atomically(tmp_path, monkeypatch):
    view = model_view(_attentions(), TOKENS)
    target = tmp_path / "view.html"
    target.write_text("old page")
    seen = []
    real_replace = os.replace

    def replace(src, dst):  # at the rename, the old page is intact and the new one complete
        seen.append((target.read_text(), open(src, encoding="utf-8").read() == view.page()))
        real_replace(src, dst)

    monkeypatch.setattr(bertviz_offline.os, "replace", replace)
    assert view.save(target) == target
    assert seen == [("old page", True)]
    assert target.read_text(encoding="utf-8") == view.page()
    assert target.read_text().startswith("<!DOCTYPE html>") and target.read_text().endswith(
        "</html>\n")
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in tmp_path.iterdir()] == ["view.html"]

    def fail(src, dst):
        raise OSError("disk full")

    target.write_text("old page")
    monkeypatch.setattr(bertviz_offline.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        view.save(target)
    assert target.read_text() == "old page"  # untouched, and no temporary file left behind
    assert [p.name for p in tmp_path.iterdir()] == ["view.html"]


def test_vendored_files_match_their_readme():
    readme = (VENDOR / "README.md").read_text()
    for name in bertviz_offline.LIBRARIES.values():
        digest = hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
        assert re.search(rf"`{re.escape(name)}`.*`{digest}`", readme), f"{name}: sha256 changed"


# ---- in the browser -----------------------------------------------------------------------

# A notebook-like host: RequireJS's `define` is present (the classic notebook has it) and the
# page has its own `$`; the view is inserted as JupyterLab does, via innerHTML into a detached
# node whose scripts are re-created, and the node is attached to the document later.
HOST = """<!DOCTYPE html><html><head><meta charset="utf-8"><script>
window.defineCalls = 0; window.define = function () { window.defineCalls++; };
window.define.amd = {}; window.$ = "host's $";
</script></head><body><div id="slot"></div><script>
var node = document.createElement("div");
node.innerHTML = FRAGMENT;
node.querySelectorAll("script").forEach(function (old) {
  var s = document.createElement("script");
  s.textContent = old.textContent;
  old.parentNode.replaceChild(s, old);
});
setTimeout(function () { document.getElementById("slot").appendChild(node); }, 200);
</script></body></html>"""

DRAWN = """() => ({
  text: Array.from(document.querySelectorAll("#vis svg text")).map(t => t.textContent),
  lines: document.querySelectorAll("#vis svg line").length,
  layers: document.querySelectorAll("select#layer option").length,
})"""


@pytest.fixture(scope="module")
def browser():
    from headless import Browser, chromium_path

    chromium_path()  # skips, saying how to install it, without Chromium or Playwright
    b = Browser()
    yield b
    b.close()


@pytest.fixture(scope="module")
def minilm_views():
    """Head and model views of the real MiniLM's attentions on a sentence pair."""
    from lmcourse.models.bert import BertModel
    from lmcourse.pretrained import load_hf_tokenizer, minilm_path

    tokenizer = load_hf_tokenizer()
    enc = tokenizer("the cat sat on the mat", "it purred", return_tensors="pt")
    model = BertModel.from_pretrained(minilm_path()).eval()
    with torch.no_grad():
        attentions = model(enc["input_ids"], token_type_ids=enc["token_type_ids"]).attentions
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    b_start = enc["token_type_ids"][0].tolist().index(1)
    return tokens, len(attentions), head_view(attentions, tokens, b_start), model_view(
        attentions, tokens, b_start)


@pytest.mark.slow
def test_views_draw_in_chromium_with_the_network_blocked(browser, minilm_views, tmp_path):
    from headless import serve

    tokens, n_layers, head, model = minilm_views
    head.save(tmp_path / "head.html")
    model.save(tmp_path / "model.html")
    (tmp_path / "host.html").write_text(HOST.replace(
        "FRAGMENT", json.dumps(head.data).replace("</", "<\\/")), encoding="utf-8")
    with serve(tmp_path) as url:
        page = browser.page()
        page.goto(f"{url}/head.html", wait_until="load")
        page.wait_for_selector("#vis svg text", timeout=10_000)
        drawn = page.evaluate(DRAWN)
        assert drawn["text"] == tokens + tokens  # left and right columns
        assert drawn["lines"] > len(tokens) ** 2 and drawn["layers"] == n_layers
        assert page.evaluate("document.querySelectorAll('[id$=\"-static\"]').length") == 0, (
            "the script ran, so the static picture is gone")

        (tmp_path / "noscript.html").write_text(re.sub(
            r"<script\b.*?</script>", "", head.page(), flags=re.S), encoding="utf-8")
        page.goto(f"{url}/noscript.html", wait_until="load")
        shown = page.evaluate("""() => [...document.querySelectorAll('img')].map(
            i => [i.naturalWidth, i.offsetParent !== null])""")
        assert len(shown) == 1 and shown[0][0] > 100 and shown[0][1], (
            "without scripts the static picture is what a reader sees")
        assert not page.locator("select#layer").is_visible(), "no empty Layer: menu"

        page.goto(f"{url}/model.html", wait_until="load")
        page.wait_for_selector("#vis svg text", timeout=10_000)
        drawn = page.evaluate(DRAWN)
        heads = len(_params(model.data)["attention"][0]["attn"][0])
        assert drawn["text"] == (["Heads", *map(str, range(heads)),
                                  "Layers", *map(str, range(n_layers))])
        assert drawn["lines"] >= n_layers * heads * len(tokens)

        page.goto(f"{url}/host.html", wait_until="load")
        page.wait_for_selector("#slot #vis svg text", timeout=10_000)
        assert page.evaluate(DRAWN)["text"] == tokens + tokens
        assert page.evaluate("[window.defineCalls, window.$, typeof window.d3]") == [
            0, "host's $", "undefined"]
        page.close()
    assert browser.remote_hosts() == set(), browser.hosts
    assert not browser.errors, browser.errors
    assert not browser.failed, browser.failed


def test_each_view_carries_a_static_picture_unless_asked_not_to(minilm_views):
    tokens, n_layers, head, model = minilm_views
    for view in (head, model):
        html = view.data
        assert html.count("data:image/png;base64,") == 1
        static = html.index("-static")
        live = html.index('-live" style="display:none"')
        assert static < live < html.index("<script"), "picture first, bertviz hidden till run"
    plain = head_view([torch.full((1, 2, 3, 3), 1 / 3)], ["a", "b", "c"], static=False)
    assert "data:image/png" not in plain.data and '-live" style' not in plain.data

