"""The import graph of src/scoreboard, imports inside functions included: no cycle, and the
layering DESIGN.md asks for (statistics pure, subjects blind to cases and graders, case loaders
blind to subjects, nothing below the CLI importing it, no private names across modules)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "scoreboard"
PKG = "scoreboard"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _resolve(current: str, node: ast.AST) -> list[tuple[str, str | None]]:
    """(target module, imported name or None) for every name an import statement binds."""
    out: list[tuple[str, str | None]] = []
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = current.split(".")
            if MODULES[current].name != "__init__.py":
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        for alias in node.names:
            sub = f"{mod}.{alias.name}"
            out.append((sub, None) if sub in MODULES else (mod, alias.name))
    elif isinstance(node, ast.Import):
        out.extend((alias.name, None) for alias in node.names)
    return out


def _owner(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name if name.startswith(PKG) else None


def _graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Edges module -> modules it imports (package __init__ files only re-export, so an edge to
    one counts as an edge to nothing), and every (module, target, name) with a private name."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    private: list[tuple[str, str, str]] = []
    for mod, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target, name in _resolve(mod, node):
                owner = _owner(target)
                if owner is None or owner == mod:
                    continue
                if MODULES[owner].name != "__init__.py":
                    edges[mod].add(owner)
                if name and name.startswith("_") and not name.startswith("__"):
                    private.append((mod, owner, name))
    return edges, private


EDGES, PRIVATE = _graph()


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def _in(module: str, *packages: str) -> bool:
    return any(module == f"{PKG}.{p}" or module.startswith(f"{PKG}.{p}.") for p in packages)


#: (importer packages, forbidden target packages, why)
FORBIDDEN = [
    (("subjects",), ("cases", "graders", "judges", "cli", "engine", "suite", "record", "stats"),
     "subjects never see cases, graders or the CLI"),
    (("cases",), ("subjects", "engine", "cli", "judges"), "case loaders call no model"),
    (("stats",), ("record", "engine", "cli", "judges", "graders", "subjects", "suite", "cases", "store",
                  "agents", "jsonio"), "statistics are pure functions of attempts and plan"),
    (("graders", "judges", "subjects", "cases", "suite", "stats", "record", "engine", "store", "agents",
      "validation", "errors", "hashing", "jsonio", "redact"), ("cli",), "nothing below the CLI imports it"),
    (("engine",), ("cli",), "the engine is called by commands, never the reverse"),
    (("record",), ("engine", "cli"), "the record is read and written by the engine, never the reverse"),
]


def test_no_import_cycles():
    assert _cycles(EDGES) == []


#: the bottom layer every other may import: the record's schema and its shared names
BOTTOM = {f"{PKG}.record.constants", f"{PKG}.record.schema", f"{PKG}.record.schema_summary"}


@pytest.mark.parametrize("importers,targets,why", FORBIDDEN, ids=[f[2] for f in FORBIDDEN])
def test_forbidden_edges(importers, targets, why):
    bad = sorted(f"{m} -> {t}" for m, ts in EDGES.items() if _in(m, *importers)
                 for t in ts if _in(t, *targets) and t not in BOTTOM)
    assert bad == [], why


def test_statistics_do_no_file_io():
    io_calls = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}
    found = []
    for mod, path in MODULES.items():
        if not _in(mod, "stats"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in io_calls:
                    found.append(f"{mod}:{node.lineno} {name}()")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target, _ in _resolve(mod, node):
                    if target.split(".")[0] in ("os", "pathlib", "shutil", "tempfile", "io"):
                        found.append(f"{mod}:{node.lineno} imports {target}")
    assert found == []


def _package(module: str) -> str:
    return module.rpartition(".")[0] if MODULES[module].name != "__init__.py" else module


def test_no_private_names_across_packages():
    """A module may share an underscored helper with its own package, never beyond it."""
    crossing = [f"{m} imports {n} from {t}" for m, t, n in PRIVATE if _package(m) != _package(t)]
    private_modules = [f"{m} imports {t}" for m, ts in EDGES.items() for t in ts
                       if any(part.startswith("_") and not part.startswith("__") for part in t.split("."))
                       and _package(m) != _package(t)]
    assert crossing + private_modules == []


def test_one_report_driver():
    sources = "\n".join(p.read_text(encoding="utf-8") for p in MODULES.values())
    assert "run_recorded_async" not in sources
    assert "_RestoringLog" not in sources


def test_graph_sees_function_level_imports(tmp_path):
    """The checker itself: an import inside a function is an edge like any other."""
    tree = ast.parse("def f():\n    from ..stats import summary\n")
    found = [t for node in ast.walk(tree) for t, _ in _resolve(f"{PKG}.engine.pipeline", node)]
    assert f"{PKG}.stats.summary" in found
