"""Releases a course can pin: one version number (``lmcourse.__version__``, which
pyproject.toml reads), a changelog whose newest release is that version and which says what
changed in each, and a site that shows the version and links the changelog."""

from __future__ import annotations

import re

import pytest
import yaml

import lmcourse
from tools import toc
from tools.nbtools import ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
SITE = ROOT / "_build" / "html"
RELEASE = re.compile(r"^## (\d+)\.(\d+)\.(\d+) \((\d{4}-\d{2}-\d{2})\)$", re.M)
#: what every release must say changed (issue 58: results, exercises, check messages)
SECTIONS = ("### Results", "### Exercises", "### Check messages")


def releases(text: str) -> list[tuple[str, str, str]]:
    """(version, date, body) of each ``## X.Y.Z (YYYY-MM-DD)`` section, in file order."""
    heads = list(RELEASE.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)] if heads else []
    return [(".".join(h.group(1, 2, 3)), h.group(4), text[h.end():end])
            for h, end in zip(heads, ends, strict=True)]


def problems(text: str, version: str) -> list[str]:
    """What is wrong with a changelog for a package at ``version``."""
    found = releases(text)
    if not found:
        return ["no release heading '## X.Y.Z (YYYY-MM-DD)'"]
    out = []
    if found[0][0] != version:
        out.append(f"the newest release is {found[0][0]}, the package is {version}: add its "
                   "entry (or bump lmcourse.__version__)")
    numbers = [tuple(map(int, v.split("."))) for v, _, _ in found]
    if numbers != sorted(set(numbers), reverse=True):
        out.append(f"releases are not newest first, each once: {[v for v, _, _ in found]}")
    dates = [d for _, d, _ in found]
    if dates != sorted(dates, reverse=True):
        out.append(f"release dates go forward down the page: {dates}")
    for v, _, body in found:
        missing = [s for s in SECTIONS if not re.search(rf"^{re.escape(s)}$", body, re.M)]
        if missing:
            out.append(f"{v} does not say what changed under {missing}")
    return out


def test_the_changelog_is_current_with_the_package_version():
    assert problems(CHANGELOG.read_text(encoding="utf-8"), lmcourse.__version__) == []


def test_the_changelog_check_catches_what_it_should():
    good = ("## 0.3.0 (2026-12-01)\n### Results\n### Exercises\n### Check messages\n"
            "## 0.2.0 (2026-11-27)\n### Results\n- x\n### Exercises\n### Check messages\n")
    assert problems(good, "0.3.0") == []
    assert "the newest release is 0.3.0, the package is 0.4.0" in problems(good, "0.4.0")[0]
    older, newer = good.split("## 0.2.0")
    swapped = "## 0.2.0" + newer + older
    assert any("newest first" in p for p in problems(swapped, "0.2.0"))
    assert any("dates" in p for p in problems(good.replace("2026-11-27", "2026-12-02"), "0.3.0"))
    assert any("Exercises" in p for p in problems(good.replace("### Exercises\n", "", 1),
                                                  "0.3.0"))
    assert problems("# Changes\n", "0.1.0") == ["no release heading '## X.Y.Z (YYYY-MM-DD)'"]


def test_pyproject_reads_the_one_version_from_the_package():
    pytest.importorskip("setuptools")
    from setuptools.config.pyprojecttoml import read_configuration

    raw = read_configuration(ROOT / "pyproject.toml", expand=False)
    assert "version" not in raw["project"] and "version" in raw["project"]["dynamic"], (
        "pyproject.toml types a version: read it from lmcourse.__version__ instead")
    assert raw["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lmcourse.__version__"}
    built = read_configuration(ROOT / "pyproject.toml", expand=True)
    assert built["project"]["version"] == lmcourse.__version__


def test_the_site_config_shows_the_version_and_lists_the_changelog():
    config = yaml.safe_load((ROOT / "myst.yml").read_text())
    assert config["site"]["options"]["version"] == lmcourse.__version__, (
        "myst.yml's site option version differs from lmcourse.__version__")
    template = yaml.safe_load((ROOT / "site" / "template.yml").read_text())
    assert "version" in [o["id"] for o in template["options"]]
    assert "CHANGELOG.md" in toc.PAGES
    assert {"file": "CHANGELOG.md"} in config["project"]["toc"]
    assert "(CHANGELOG.md)" in (ROOT / "index.md").read_text()


def test_the_built_site_shows_the_version_on_every_page_and_links_the_changelog():
    if not (SITE / "index.html").exists():
        pytest.skip("no built site in _build/html: run `make book` (make test does)")
    label = f"version {lmcourse.__version__}"
    changes = SITE / "changelog" / "index.html"
    assert changes.exists(), "CHANGELOG.md has no page on the built site"
    assert lmcourse.__version__ in changes.read_text()
    for page in [SITE / "index.html", changes, *sorted(SITE.glob("chapters/*/index.html"))]:
        html = page.read_text()
        top = re.search(r'<header class="topbar">.*?</header>', html, re.S).group(0)
        link = re.search(r'<a class="version" href="([^"]+)"[^>]*>([^<]+)</a>', top)
        assert link and link.group(2) == label, f"{page}: no '{label}' in the top bar"
        assert link.group(1).rstrip("/").endswith("changelog"), link.group(1)
