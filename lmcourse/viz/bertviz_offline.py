"""bertviz's head view and model view, drawn with no network.

bertviz (Vig, 2019) builds its views from HTML plus a script that asks RequireJS to fetch
d3 5.7.0 and jQuery from cdnjs.cloudflare.com, after loading require.js itself from there.
Offline (a laptop on a train, a sandboxed grader, an exported HTML page opened years
later) those requests fail and the views stay blank, with no error in the notebook.

This module calls bertviz with ``html_action='return'`` and rewrites its HTML:

1. the ``<script src=".../require.min.js">`` tag is dropped;
2. d3 and jQuery, vendored in ``lmcourse/viz/vendor/`` (byte-for-byte from npm), are
   inlined in the view's one ``<script>``, each run inside a function whose ``define``,
   ``module`` and ``exports`` are undefined, so that neither registers with a RequireJS
   or CommonJS loader the page may have; d3 attaches to a private object and jQuery is
   taken back from ``window`` with ``jQuery.noConflict(true)``, so the page's own
   ``d3``, ``$`` and ``jQuery`` (if any) are left as they were;
3. bertviz's ``require.config({paths: ...})`` is removed and its
   ``requirejs(['jquery', 'd3'], main)`` becomes ``withLibraries(main)``, which calls
   ``main`` with the inlined copies once the view's ``<div>`` is in the document.

The result needs no RequireJS, so it draws the same in JupyterLab, the classic notebook
(which has RequireJS), VS Code, an nbconvert export and a standalone page (``save``).

Where no script runs (a notebook not yet run or reopened, which JupyterLab does not trust,
or a page that strips scripts) bertviz would leave an empty ``Layer:`` menu. Each view
therefore carries a static picture of the same weights (the course's heat maps, as a
``data:`` PNG), shown until the view's script runs: the script removes it and reveals
bertviz's markup, which is hidden until then.
Each view carries about 320 KB of library code. ``remote_references`` lists whatever in
a piece of HTML would still be fetched from the network; the tests use it.
"""

from __future__ import annotations

import functools
import html as html_lib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch
from IPython.display import HTML

__all__ = ["OfflineView", "head_view", "model_view", "offline_html", "remote_references"]

VENDOR = Path(__file__).with_name("vendor")
STATIC_NOTE = ("A static picture of the same weights: run the cell for bertviz's interactive "
               "view.")
LIBRARIES = {"d3": "d3-5.7.0.min.js", "jquery": "jquery-2.2.4.min.js"}


class OfflineView(HTML):
    """A bertviz view as self-contained HTML: shows in a notebook, saves as a web page."""

    def __init__(self, fragment: str, title: str):
        super().__init__(fragment)
        self.title = title

    def page(self) -> str:
        """The view as a complete HTML document."""
        return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                f"<title>{html_lib.escape(self.title)}</title>\n</head>\n<body>\n"
                f"{self.data}\n</body>\n</html>\n")

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``page()`` to ``path`` atomically (a temporary file, then a rename)."""
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.page())
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; a web page is for reading
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path


def head_view(attentions: Sequence, tokens: Sequence[str], sentence_b_start: int | None = None,
              *, layer: int | None = None, heads: list[int] | None = None,
              include_layers: list[int] | None = None, prettify_tokens: bool = True,
              batch_index: int = 0, decimals: int | None = 4, static: bool = True
              ) -> OfflineView:
    """bertviz's head view (all heads of one layer, token to token) that needs no network.

    ``attentions``: one ``B x heads x T x T`` tensor per layer (``outputs.attentions`` of
    ``lmcourse.models.bert.BertModel`` or a Hugging Face model); example ``batch_index``
    is drawn. ``tokens``: the ``T`` token strings. ``sentence_b_start``: index of the
    first token of sentence B, for a pair (adds the A->B, B->A, ... filters).
    Weights are rounded to ``decimals`` places to keep the page small (None: exact).
    With ``static`` the view carries every head of the layer it opens on as heat maps,
    shown where no script runs.
    """
    from bertviz import head_view as bertviz_head_view

    prepared = _prepare(attentions, tokens, batch_index, decimals)
    html = bertviz_head_view(
        prepared, list(tokens), sentence_b_start,
        prettify_tokens=prettify_tokens, layer=layer, heads=heads,
        include_layers=include_layers, html_action="return").data
    png = None
    if static:
        from lmcourse.viz.attention_heads import plot_heads_grid
        from lmcourse.viz.figures import figure_png

        shown = (include_layers or range(len(prepared)))[0] if layer is None else layer
        fig = plot_heads_grid([p.float() for p in prepared], list(tokens), shown)
        fig.suptitle(f"layer {shown}: every head (static picture)", fontsize=9)
        png = _png_and_close(fig, figure_png)
    return OfflineView(offline_html(html, png, "every head of one layer"), "bertviz head view")


def model_view(attentions: Sequence, tokens: Sequence[str], sentence_b_start: int | None = None,
               *, display_mode: str = "dark", include_layers: list[int] | None = None,
               include_heads: list[int] | None = None, prettify_tokens: bool = True,
               batch_index: int = 0, decimals: int | None = 4, static: bool = True
               ) -> OfflineView:
    """bertviz's model view (a thumbnail per layer and head) that needs no network.

    Arguments as for ``head_view``; ``display_mode`` is ``"dark"`` or ``"light"``. With
    ``static`` the view carries the same thumbnails as heat maps, shown where no script
    runs.
    """
    from bertviz import model_view as bertviz_model_view

    prepared = _prepare(attentions, tokens, batch_index, decimals)
    html = bertviz_model_view(
        prepared, list(tokens), sentence_b_start,
        prettify_tokens=prettify_tokens, display_mode=display_mode,
        include_layers=include_layers, include_heads=include_heads,
        html_action="return").data
    png = None
    if static:
        from lmcourse.viz.figures import figure_png

        layers = list(include_layers if include_layers is not None else range(len(prepared)))
        heads = list(include_heads if include_heads is not None
                     else range(prepared[0].shape[1]))
        png = _png_and_close(_thumbnails(prepared, layers, heads), figure_png)
    return OfflineView(offline_html(html, png, "a thumbnail per layer and head"),
                       "bertviz model view")


def _png_and_close(fig, figure_png) -> str:
    import matplotlib.pyplot as plt

    try:
        return figure_png(fig, dpi=56)
    finally:
        plt.close(fig)


def _thumbnails(prepared: list[torch.Tensor], layers: list[int], heads: list[int]):
    """The model view as a static grid: one small heat map per (layer, head)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(layers), len(heads), squeeze=False,
                             figsize=(0.9 * len(heads) + 0.6, 0.9 * len(layers) + 0.5))
    for r, layer in enumerate(layers):
        for c, head in enumerate(heads):
            ax = axes[r, c]
            ax.imshow(prepared[layer][0, head].float().numpy(), cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(f"layer {layer}", fontsize=7)
            if r == 0:
                ax.set_title(f"head {head}", fontsize=7)
    fig.suptitle("every head of each layer (static picture; rows: queries, columns: keys)",
                 fontsize=8)
    return fig


def _prepare(attentions: Sequence, tokens: Sequence[str], batch_index: int,
             decimals: int | None) -> list[torch.Tensor]:
    """One ``1 x heads x T x T`` float64 CPU tensor per layer, as bertviz expects."""
    layers = []
    for i, weights in enumerate(attentions):
        weights = torch.as_tensor(weights).detach().to("cpu", torch.float64)
        if weights.dim() == 3:  # heads x T x T: a batch of one
            weights = weights.unsqueeze(0)
        if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
            raise ValueError(f"layer {i}: expected B x heads x T x T attention weights, "
                             f"got shape {tuple(weights.shape)}")
        if weights.shape[-1] != len(tokens):
            raise ValueError(f"layer {i}: the weights cover {weights.shape[-1]} positions but "
                             f"{len(tokens)} tokens were given")
        weights = weights[batch_index].unsqueeze(0)
        layers.append(weights if decimals is None else weights.round(decimals=decimals))
    if not layers:
        raise ValueError("no attention layers were given")
    return layers


# --- the rewrite --------------------------------------------------------------------------

_REQUIRE_TAG = re.compile(r"<script[^>]*\bsrc=[\"'][^\"']*require(?:\.min)?\.js[\"'][^>]*>"
                          r"\s*</script>", re.I)
_SCRIPT_OPEN = '<script type="text/javascript">'
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.S)
_REQUIREJS_CALL = re.compile(r"requirejs\(\s*\[\s*'jquery'\s*,\s*'d3'\s*\]\s*,")
_ROOT_ID = re.compile(r"<div id=\"(bertviz-[0-9a-f]+)\"")

_LOADER = """\
var withLibraries = (function () {{
  // d3 attaches itself to `this` (here `libs`); jQuery to window, and is taken back.
  var libs = {{}};
  (function (define, module, exports) {{
{d3}
  }}).call(libs);
  (function (define, module, exports) {{
{jquery}
  }}).call(libs);
  var jq = window.jQuery.noConflict(true);
  // Run bertviz's main once its <div> is in the document (a notebook may insert the
  // output after running its scripts); give up after 10 s.
  return function (main) {{
    var tries = 0;
    (function start() {{
      if (document.getElementById({root_id})) {{
        // the script runs: drop the static picture, show bertviz's own markup
        var still = document.getElementById({root_id} + "-static");
        if (still) {{ still.parentNode.removeChild(still); }}
        var live = document.getElementById({root_id} + "-live");
        if (live) {{ live.style.display = ""; }}
        main(jq, libs.d3);
      }}
      else if (tries++ < 200) {{ setTimeout(start, 50); }}
    }})();
  }};
}})();
"""


@functools.cache
def _library(name: str) -> str:
    return _script_safe((VENDOR / LIBRARIES[name]).read_text(encoding="utf-8"))


def _script_safe(code: str) -> str:
    """JavaScript that cannot end its <script> early (``</script`` or ``<!--`` in a string)."""
    code = re.sub(r"</(script)", r"<\\/\1", code, flags=re.I)
    return code.replace("<!--", "<\\!--")


def offline_html(html: str, static_png: str | None = None, alt: str = "attention weights"
                 ) -> str:
    """Rewrite the HTML bertviz returns so that it loads nothing over the network; with
    ``static_png`` (base64), that picture is shown until the view's script runs."""
    html, n_tags = _REQUIRE_TAG.subn("", html)
    start, end = html.find(_SCRIPT_OPEN), html.rfind("</script>")
    root = _ROOT_ID.search(html)
    if n_tags != 1 or start < 0 or end < start or root is None:
        raise RuntimeError("bertviz's HTML is not laid out as expected (a require.js tag, the "
                           "view's <div>, one script); this bertviz version is not supported")
    markup, script = html[:start], html[start + len(_SCRIPT_OPEN):end]
    script, n_config = _REQUIRE_CONFIG.subn("", script)
    script, n_calls = _REQUIREJS_CALL.subn("withLibraries(", script)
    if n_config != 1 or n_calls != 1:
        raise RuntimeError("bertviz's script does not load d3 and jQuery with one "
                           "require.config and one requirejs call; this bertviz version is "
                           "not supported")
    loader = _LOADER.format(d3=_library("d3"), jquery=_library("jquery"),
                            root_id=f'"{root.group(1)}"')
    markup = markup.strip()
    if static_png:
        markup = (f'<div id="{root.group(1)}-static"><img alt="{html_lib.escape(alt)}" '
                  f'src="data:image/png;base64,{static_png}" style="max-width:100%">'
                  f'<p style="font-size:small">{html_lib.escape(STATIC_NOTE)}</p></div>\n'
                  f'<div id="{root.group(1)}-live" style="display:none">\n{markup}\n</div>')
    out = (f"{markup}\n{_SCRIPT_OPEN}\n(function () {{\n{loader}"
           f"{_script_safe(script.strip())}\n}})();\n</script>\n")
    remote = remote_references(out)
    if remote:
        raise RuntimeError(f"the rewritten bertviz HTML still fetches {remote}")
    return out


# --- checking HTML for network requests ------------------------------------------------------

_URL = r"(?:https?:)?//[\w.-][^\"'`\s)>]*"  # absolute or protocol-relative (//host/...)
_MARKUP_URLS = [
    # src / srcset / poster / data of any tag (script, img, iframe, video, object, ...)
    re.compile(rf"<[a-z][^>]*?\s(?:src|srcset|poster|data)\s*=\s*[\"']?({_URL})", re.I),
    # <link href=...> (stylesheets, preloads, icons); <a href> is not fetched
    re.compile(rf"<link\b[^>]*?\shref\s*=\s*[\"']?({_URL})", re.I),
    # CSS @import and url(...), in <style> or style="..."
    re.compile(rf"(?:@import\s+(?:url\()?|url\()\s*[\"']?({_URL})", re.I),
]
# In scripts: string literals that are URLs (require.config paths, fetch, import(), XHR).
_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script\s*>", re.I | re.S)
_SCRIPT_URL = re.compile(rf"[\"'`]({_URL})")
# XML namespace names (d3, SVG) look like URLs but are identifiers, never fetched.
_NAMESPACE = re.compile(r"https?://www\.w3\.org/(?:1999/xhtml|2000/svg|1999/xlink|"
                        r"XML/1998/namespace|2000/xmlns/?)$")


def remote_references(html: str) -> list[str]:
    """The URLs in ``html`` a browser would fetch from the network, in order, each once.

    Looks at ``src``-like attributes of any tag, ``<link href>``, CSS ``@import`` and
    ``url()``, and URL string literals in scripts (which is where RequireJS paths such
    as bertviz's ``require.config({paths: {d3: 'https://...'}})`` live). URLs in comments
    or ordinary ``<a href>`` links are not fetched and not listed; relative URLs are local.
    """
    found: list[tuple[int, str]] = []
    for pattern in _MARKUP_URLS:
        found += [(m.start(1), m.group(1)) for m in pattern.finditer(html)]
    for script in _SCRIPT.finditer(html):
        found += [(script.start(1) + m.start(1), m.group(1))
                  for m in _SCRIPT_URL.finditer(script.group(1))]
    urls = dict.fromkeys(url for _, url in sorted(found) if not _NAMESPACE.match(url))
    return list(urls)
