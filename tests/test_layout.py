"""The package's layout: rooms import only what lmcourse/README.md allows, no import cycles,
one reader of result.json, and no identifier named after a chapter."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lmcourse"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: str) -> set[str]:
    """The lmcourse modules ``module`` imports anywhere (top level or inside a function):
    ``from a.b import c`` counts as importing ``a.b.c`` when that is a module, else ``a.b``."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names if a.name.startswith("lmcourse")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.startswith("lmcourse"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in MODULES else _resolve(node.module))
    return found - {module}


GRAPH = {m: imports_of(m) for m in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_no_import_cycle_in_the_package():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# ---- rooms, read from lmcourse/README.md --------------------------------------------------

def rooms_table() -> tuple[dict[str, str], dict[str, set[str]]]:
    """``(where, allowed)``: each module file or folder named in the table's second column
    mapped to its room, and each room's "may import" set (itself included)."""
    where, allowed = {}, {}
    for line in (PACKAGE / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("room", "") or set(cells[0]) <= {"-"}:
            continue
        room, modules, may = cells
        for name in re.findall(r"`([\w/]+(?:\.py|/))`", modules):
            where[name] = room
        allowed[room] = {r.strip() for r in may.split(",")} | {room}
    return where, allowed


def room_of(module: str, where: dict[str, str]) -> str:
    rel = MODULES[module].relative_to(PACKAGE).as_posix()
    top = rel.split("/")[0] + "/" if "/" in rel else rel
    if top not in where:
        raise AssertionError(f"{rel} is in no room of lmcourse/README.md: add it to the table")
    return where[top]


def test_every_room_imports_only_what_the_map_allows():
    where, allowed = rooms_table()
    assert set(allowed) >= {"core", "data", "tokenizers", "training", "models", "viz", "checks",
                            "harness"}
    offenders = []
    for module, targets in GRAPH.items():
        room = room_of(module, where)
        for target in targets:
            if target == "lmcourse" and room != "core":
                continue  # the package itself: device(), show(), ...
            if room_of(target, where) not in allowed[room]:
                offenders.append(f"{module} ({room}) imports {target} "
                                 f"({room_of(target, where)})")
    assert not offenders, "imports the map does not allow:\n" + "\n".join(sorted(offenders))


def test_the_room_check_can_fail():
    where, allowed = rooms_table()
    assert room_of("lmcourse.models.bert", where) == "models"
    assert room_of("lmcourse.course.reference.registry", where) == "harness"
    assert "harness" not in allowed["models"] and "checks" not in allowed["harness"]


# ---- one reader of result.json; names for content -------------------------------------------

SOURCES = [p for d in ("lmcourse", "tests", "benchmarks", "tools")
           for p in sorted((ROOT / d).rglob("*.py"))]
SOURCES += sorted((ROOT / "chapters").glob("*.py"))
SOURCES += sorted((ROOT / "labs" / "solutions").glob("*.py"))


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
RESULT_PATH = re.compile(r"(^|/)result\.json$")


def result_json_readers(paths: list[Path]) -> list[str]:
    """Files whose code names a ``result.json`` path (a string that is, or ends in, it)."""
    hits = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    RESULT_PATH.search(node.value):
                hits.append(f"{_shown(path)}:{node.lineno}")
    return hits


def test_reference_result_is_the_only_reader_of_result_json(tmp_path):
    allowed = PACKAGE / "course" / "reference" / "result.py"
    assert result_json_readers([allowed])  # it does name the file ...
    others = result_json_readers([p for p in SOURCES if p != allowed and p != Path(__file__)])
    assert not others, f"read result.json through ReferenceResult, not directly: {others}"
    planted = tmp_path / "reader.py"
    planted.write_text('import json\nr = json.load(open(folder / "result.json"))\n')
    assert result_json_readers([planted])  # ... and the check can fail


CHAPTER_NAME = re.compile(r"(?i)(?:^|_)(?:chapter|ch|lab)_?\d")


def chapter_identifiers(paths: list[Path]) -> list[str]:
    hits = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Name | ast.arg):
                names = [node.id if isinstance(node, ast.Name) else node.arg]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.alias):
                names = [node.asname or node.name.split(".")[-1]]
            hits += [f"{_shown(path)}: {n}" for n in names if CHAPTER_NAME.search(n)]
    return hits


@pytest.mark.parametrize("planted, found", [("def chapter04_glove(): pass", True),
                                            ("lab06 = 1", True), ("batch2 = 1", False)])
def test_the_chapter_name_check_can_fail(tmp_path, planted, found):
    path = tmp_path / "planted.py"
    path.write_text(planted + "\n")
    assert bool(chapter_identifiers([path])) == found


def test_no_identifier_is_named_after_a_chapter():
    hits = chapter_identifiers(SOURCES)
    assert not hits, "name it for what it is, not where it is used:\n" + "\n".join(hits)
