"""The Jupyter Book site: its table of contents covers every notebook, and the built pages
(``make book`` -> ``_build/html``) work offline in a real browser.

The page checks need the built site (``make test`` builds it first); run alone they are
skipped with a message until ``make book`` has run.
"""

from __future__ import annotations

import json
import re
import urllib.request
import zipfile
from html.parser import HTMLParser

import nbformat
import pytest
import yaml
from headless import Browser, serve  # noqa: E402

from tools import nbtools, toc
from tools.nbtools import ROOT

SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
PART_NAMES = ["Foundations", "Recurrent models", "Embeddings", "Attention & transformers",
              "BERT and beyond", "Efficiency", "Labs"]


# ---- the toc in myst.yml ---------------------------------------------------------------

def _myst_toc() -> list[tuple[str, list[str]]]:
    project = yaml.safe_load((ROOT / "myst.yml").read_text())["project"]
    entries = project["toc"]
    assert entries[0] == {"file": "index.md"}, "the landing page index.md comes first"
    return [(e["title"], [c["file"] for c in e["children"]]) for e in entries[1:]
            if "children" in e]


def _toc_pages() -> list[str]:
    """The pages listed on their own right after index.md (the claims ledger)."""
    entries = yaml.safe_load((ROOT / "myst.yml").read_text())["project"]["toc"][1:]
    pages = []
    for e in entries:
        if "children" in e:
            break
        pages.append(e["file"])
    return pages


def test_toc_lists_the_pages_after_the_landing_page():
    assert _toc_pages() == toc.expected_pages(), "myst.yml's toc is stale: run `make toc`"
    assert "claims.md" in _toc_pages(), "the claims ledger (claims.md) is not on the site"
    entries = yaml.safe_load((ROOT / "myst.yml").read_text())["project"]["toc"]
    assert len(entries) == 1 + len(_toc_pages()) + len(_myst_toc()), (
        "pages go right after index.md, before the parts")


def test_toc_lists_every_notebook_in_order():
    listed = [f for _, files in _myst_toc() for f in files]
    existing = [p.relative_to(ROOT).as_posix() for p in nbtools.notebooks()]
    chapters = [f for f in existing if f.startswith("chapters/")]
    labs = [f for f in existing if f.startswith("labs/solutions/")]
    assert listed == chapters + labs, (
        f"myst.yml's toc {listed} is not chapters then labs {chapters + labs}: run `make toc`")
    assert _myst_toc() == toc.expected_toc(), "myst.yml's toc is stale: run `make toc`"


def test_toc_parts_are_the_course_parts_in_order():
    titles = [title for title, _ in _myst_toc()]
    assert set(titles) <= set(PART_NAMES), f"unknown part(s): {set(titles) - set(PART_NAMES)}"
    assert titles == sorted(titles, key=PART_NAMES.index)
    assert [t for t, _ in toc.PARTS] + [toc.LABS] == PART_NAMES


def test_toc_generator_places_chapters_by_number(tmp_path):
    for name in ["chapters/01_a", "chapters/05_b", "chapters/09_c", "chapters/13_d",
                 "labs/solutions/02_y", "labs/solutions/01_x", "labs/01_x"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.ipynb").write_text("{}")
    assert toc.expected_toc(tmp_path) == [  # a lab's page is its solution, not the copy
        ("Foundations", ["chapters/01_a.ipynb"]),
        ("Embeddings", ["chapters/05_b.ipynb"]),
        ("BERT and beyond", ["chapters/09_c.ipynb"]),
        ("Efficiency", ["chapters/13_d.ipynb"]),
        ("Labs", ["labs/solutions/01_x.ipynb", "labs/solutions/02_y.ipynb"]),
    ]
    text = "project:\n  toc:\n    - file: index.md\nsite:\n  template: ./site\n"
    new = toc.updated(text, tmp_path)
    assert "        - file: chapters/05_b.ipynb\n" in new
    assert new.endswith("site:\n  template: ./site\n")
    assert "claims.md" not in new  # listed only once it exists
    (tmp_path / "claims.md").write_text("# What this course reproduces\n")
    assert "    - file: index.md\n    - file: claims.md\n    - title: " in toc.updated(
        text, tmp_path)
    (tmp_path / "chapters" / "14_e.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="14_e"):
        toc.expected_toc(tmp_path)


# ---- the built site ---------------------------------------------------------------------

def _need_site():
    if not (SITE / "index.html").exists():
        pytest.skip("no built site in _build/html: run `make book` (make test does)")


def _title(path) -> str:
    """A page's title: the first line (a ``#`` heading) of its notebook or Markdown file."""
    if str(path).endswith(".md"):
        first = path.read_text().strip().splitlines()[0]
    else:
        first = nbformat.read(path, as_version=4).cells[0].source.strip().splitlines()[0]
    return first.lstrip("#").strip()


class _Links(HTMLParser):
    """Collects <a href>, <script src>, <link href> and <img src> of a page."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict]]:
    parser = _Links()
    parser.feed(html)
    return parser.tags


def _nav(html: str) -> list[tuple[str, str]]:
    """(href, text) of the toc links in the sidebar, in order."""
    nav = re.search(r'<nav class="toc".*?</nav>', html, re.S).group(0)
    return [(href, re.sub(r"<[^>]+>", "", text).replace("&amp;", "&"))
            for href, text in re.findall(r'<a href="([^"]+)"[^>]*>(.*?)</a>', nav, re.S)]


def _pages() -> list[tuple[str, str]]:
    """(url path, notebook or Markdown file) of every page, from the landing page's toc."""
    html = (SITE / "index.html").read_text()
    links = [(h, t) for h, t in _nav(html) if not h.endswith(".zip")]
    files = ["index.md", *_toc_pages()] + [f for _, fs in _myst_toc() for f in fs]
    return [(href, f) for (href, _), f in zip(links, files, strict=False)]


def test_site_has_a_page_for_every_notebook_with_its_title():
    _need_site()
    html = (SITE / "index.html").read_text()
    titles = [t for h, t in _nav(html) if not h.endswith(".zip")]
    expected = ["Introduction"] + [_title(ROOT / f) for f in _toc_pages()] + [
        _title(ROOT / f) for _, fs in _myst_toc() for f in fs]
    assert titles == expected, "the built site is stale or incomplete: run `make book`"
    for href, _ in _pages():
        assert (SITE / href.strip("/") / "index.html").exists(), f"no page for {href}"


def test_built_html_loads_no_remote_script_or_stylesheet():
    _need_site()
    remote = re.compile(r"^(https?:)?//", re.I)
    problems = []
    for page in SITE.rglob("*.html"):
        for tag, attrs in _tags(page.read_text(encoding="utf-8")):
            url = attrs.get("src") if tag in ("script", "img", "iframe") else (
                attrs.get("href") if tag == "link" else None)
            if url and remote.match(url):
                problems.append(f"{page.relative_to(SITE)}: <{tag}> {url}")
    for css in SITE.rglob("*.css"):
        for url in re.findall(r"(?:url\(|@import\s+)['\"]?([^'\")\s]+)", css.read_text()):
            if remote.match(url):
                problems.append(f"{css.relative_to(SITE)}: {url}")
    assert not problems, "\n".join(problems[:20])


def test_student_copies_are_offered_for_download():
    _need_site()
    if not nbtools.solutions():
        pytest.skip("no labs yet")
    archive = SITE / "downloads" / "lmcourse-labs.zip"
    assert archive.exists(), "the site has no student zip: `make book` runs `make student` first"
    assert 'href="/downloads/lmcourse-labs.zip"' in (SITE / "index.html").read_text()
    with zipfile.ZipFile(archive) as zf:
        names = sorted(n.split("/")[-1] for n in zf.namelist())
        assert names == sorted(p.name for p in nbtools.solutions())
        for name in zf.namelist():
            text = zf.read(name).decode()
            assert nbtools.BEGIN not in text, f"{name}: a student copy still holds a solution"
            assert text == (ROOT / "labs" / name.split("/")[-1]).read_text(), (
                f"{name}: not the committed student copy that make lab opens")


def _outside_details(html: str, css_class: str) -> str:
    """The page with every ``<details class="css_class">`` element cut out."""
    return re.sub(rf'<details class="{css_class}">.*?</details>', "", html, flags=re.S)


def test_lab_pages_fold_solutions_and_offer_the_student_copy():
    _need_site()
    if not nbtools.solutions():
        pytest.skip("no labs yet")
    for (href, source) in _pages():
        if not source.startswith("labs/"):
            continue
        html = (SITE / href.strip("/") / "index.html").read_text()
        name = source.split("/")[-1]
        assert nbtools.BEGIN in html, f"{href}: the solutions should be on the page, folded"
        assert nbtools.BEGIN not in _outside_details(html, "solution"), (
            f"{href}: a solution is shown unfolded")
        link = f'href="/downloads/labs/{name}"'
        assert link in html, f"{href}: no link to the student copy {name}"
        copy = (SITE / "downloads" / "labs" / name).read_text()
        assert nbtools.BEGIN not in copy, f"the downloadable {name} holds a solution"
        assert copy == (ROOT / "labs" / name).read_text(), (
            f"the downloadable {name} is not the committed student copy labs/{name}")
        notebooks = re.findall(r'href="([^"]+\.ipynb)"', html)
        assert notebooks == [f"/downloads/labs/{name}"], (
            f"{href}: offers {notebooks}; only the student copy should be downloadable")


def test_speaker_notes_are_folded_on_chapter_pages():
    _need_site()
    for (href, source) in _pages():
        if not source.startswith("chapters/"):
            continue
        nb = nbformat.read(ROOT / source, as_version=4)
        notes = [c for c in nb.cells
                 if c.metadata.get("slideshow", {}).get("slide_type") == "notes"]
        html = (SITE / href.strip("/") / "index.html").read_text()
        assert html.count('<details class="speaker-notes">') == len(notes), href
        for cell in notes:
            words = cell.source.split()[:6]  # the note's first words, as rendered
            assert " ".join(words) not in _outside_details(html, "speaker-notes"), (
                f"{href}: a speaker note is shown unfolded")


def test_claims_page_has_a_row_per_claim_linking_to_its_notebook():
    _need_site()
    records = json.loads((ROOT / "benchmarks" / "claims.json").read_text())
    page_of = {source: href for href, source in _pages()}
    html = (SITE / page_of["claims.md"].strip("/") / "index.html").read_text()
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)[1:]  # the header row first
    assert len(rows) == len(records), "the claims page is stale: run `make claims`, `make book`"
    for row, record in zip(rows, records, strict=True):
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        assert f'href="{page_of[record["notebook"]]}"' in cells[0], (
            f"{record['claim']!r} does not link to {record['notebook']}'s page")
        assert cells[-1] == f"<strong>{record['verdict']}</strong>"


def test_recorded_claims_show_on_the_notebook_pages_as_lines_or_table_rows():
    """A claim's output bundle has no renderer of its own: the page shows its text/plain,
    or, for the claims of one experiment (verdict_tables.verdict_table), one row of its table."""
    _need_site()
    page_of = {source: href for href, source in _pages()}
    records = json.loads((ROOT / "benchmarks" / "claims.json").read_text())
    for notebook in dict.fromkeys(r["notebook"] for r in records):
        html = (SITE / page_of[notebook].strip("/") / "index.html").read_text()
        shown = re.findall(r'<pre class="output-text">(verdict: .*?)</pre>', html, re.S)
        tables = re.findall(r"<table class=.lmcourse-verdicts.>(.*?)</table>", html, re.S)
        rows = sum(table.count("<tr>") - 1 for table in tables)  # less each header row
        count = sum(r["notebook"] == notebook for r in records)
        assert len(shown) + rows == count, (
            f"{notebook}: {len(shown)} verdict lines and {rows} table rows shown, "
            f"{count} recorded")
        assert "vnd.lmcourse" not in html


# ---- in the browser -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def site_url():
    _need_site()
    with serve(SITE) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    yield b
    b.close()


def _expected_figures(path) -> int:
    if path.endswith(".md"):
        return 0
    nb = nbformat.read(ROOT / path, as_version=4)
    count = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data and "text/html" not in data and not any(
                    "widget-view" in m for m in data):
                count += 1
    return count


def _has_maths(path) -> bool:
    source = (ROOT / path).read_text() if path.endswith(".md") else "\n".join(
        c.source for c in nbformat.read(ROOT / path, as_version=4).cells
        if c.cell_type == "markdown")
    return bool(re.search(r"\$[^$\s][^$]*\$", source))


def _screenshot(page, name: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name))


def _check_page(browser, site_url, href, source):
    page = browser.page()
    try:
        response = page.goto(site_url + href, wait_until="load")
        assert response.status == 200, f"{href}: HTTP {response.status}"
        page.evaluate("document.fonts.ready")
        title = page.title()
        h1 = page.inner_text("h1.page-title")
        expected = "lmcourse" if source == "index.md" else _title(ROOT / source)
        assert h1 == expected and (expected in title), f"{href}: title {title!r}, h1 {h1!r}"
        broken = page.evaluate("""Array.from(document.images)
            .filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.src)""")
        assert not broken, f"{href}: images that did not load: {broken}"
        figures = page.locator("img.output-image").count()
        assert figures == _expected_figures(source), (
            f"{href}: {figures} figures on the page, {_expected_figures(source)} in the notebook")
        if _has_maths(source):
            assert page.locator(".katex").count() > 0, f"{href}: no maths rendered by KaTeX"
            assert page.locator(".math-error, .katex-error").count() == 0, (
                f"{href}: some formulas failed to render (KaTeX errors)")
            fonts = page.evaluate("""Array.from(document.fonts)
                .filter(f => f.status === 'loaded').map(f => f.family.replace(/"/g, ''))""")
            assert "KaTeX_Main" in fonts, f"{href}: KaTeX fonts not loaded ({fonts})"
        return page
    except BaseException:
        page.close()
        raise


@pytest.mark.slow
def test_landing_page_in_the_browser(browser, site_url):
    page = _check_page(browser, site_url, "/", "index.md")
    assert page.locator("nav.toc a").count() >= 1 + len(nbtools.notebooks())
    _screenshot(page, "landing.png")
    page.close()
    assert not browser.errors, browser.errors


@pytest.mark.slow
def test_every_page_in_the_browser(browser, site_url):
    pages = _pages()[1:]
    chapters = [s for _, s in pages if s.startswith("chapters/")]
    shown = next((s for s in chapters if s.startswith("chapters/02_")), chapters[0] if chapters
                 else None)
    for href, source in pages:
        page = _check_page(browser, site_url, href, source)
        if source == shown:  # chapter 02's maths at the top of the page, then its first figure
            name = source.split("/")[-1].removesuffix(".ipynb")
            _screenshot(page, f"{name}.png")
            if page.locator("img.output-image").count():
                page.locator("img.output-image").first.scroll_into_view_if_needed()
                page.evaluate("window.scrollBy(0, -250)")
                _screenshot(page, f"{name}-figure.png")
        page.close()
    assert not browser.errors, f"JavaScript errors: {browser.errors}"
    assert not browser.failed, f"failed requests: {browser.failed[:10]}"
    assert not browser.remote_hosts(), f"requests left 127.0.0.1: {browser.remote_hosts()}"


@pytest.mark.slow
def test_toc_and_page_links_resolve(site_url):
    checked = set()
    for href, _ in _pages():
        html = (SITE / href.strip("/") / "index.html").read_text()
        for tag, attrs in _tags(html):
            url = attrs.get("href") if tag in ("a", "link") else attrs.get("src")
            if not url or url.startswith(("#", "http:", "https:", "mailto:", "data:")):
                continue
            url = url.split("#")[0]
            if url in checked:
                continue
            checked.add(url)
            with urllib.request.urlopen(site_url + url) as resp:  # noqa: S310 (local server)
                assert resp.status == 200, f"{href} links to {url}: HTTP {resp.status}"
    assert len(checked) > len(_pages()), "too few links checked"


@pytest.mark.slow
def test_no_request_left_127_0_0_1(browser, site_url):
    page = browser.page()
    page.goto(site_url + "/", wait_until="load")
    page.close()
    assert browser.hosts, "the browser made no requests at all"
    assert not browser.remote_hosts(), f"requests left 127.0.0.1: {browser.remote_hosts()}"


def _text(page: str) -> str:
    """A page's text as letters and digits only (tags dropped, entities read), so that a
    phrase matches however the page spaces and punctuates it."""
    from html import unescape

    return re.sub(r"\W+", "", unescape(re.sub(r"<[^>]+>", " ", page)))


#: a chapter's folded provenance block, as its markdown writes it
HOW_WE_KNOW = re.compile(r"<details><summary>How we know[^<]*</summary>\s*(.*?)</details>", re.S)


def test_how_we_know_blocks_are_folded_on_chapter_pages():
    """Issue 57, item 8: the provenance a chapter folds stays folded on its page."""
    _need_site()
    checked = 0
    for (href, source) in _pages():
        if not source.startswith("chapters/"):
            continue
        nb = nbformat.read(ROOT / source, as_version=4)
        bodies = [m.group(1) for c in nb.cells if c.cell_type == "markdown"
                  for m in HOW_WE_KNOW.finditer(c.source)]
        html = (SITE / href.strip("/") / "index.html").read_text()
        outside = re.sub(r"<details\b.*?</details>", "", html, flags=re.S)
        for body in bodies:
            words = re.sub(r"[`*_\[\]()]", "", body).split()[:4]
            if not words:
                continue
            phrase = " ".join(words)
            assert _text(phrase) in _text(html), f"{href}: {phrase!r} is not on the page"
            assert _text(phrase) not in _text(outside), (
                f"{href}: the How we know block starting {phrase!r} is shown unfolded")
            checked += 1
    assert checked, "no How we know block was found on any chapter page"
