"""Mutation testing of AutoDoc's core modules with mutmut, a module (or a function) at a time.

    python tests/mutation.py fuse [lookup search:x_make_snippet* ...] [--work DIR] [--jobs 2]
    python tests/mutation.py lookup --work DIR --report    # the last run's report again
    python tests/mutation.py lookup --work DIR --plant     # its survivors in today's source

mutmut names a mutant by its file's path from where it runs, and imports the mutated package
from a copy of that path; AutoDoc's package lives in `sidecar/`, so the run happens in a work
folder holding the package as `autodoc/`, the tests, what they read, and a pyproject.toml whose
`[tool.mutmut]` names the module and the in-process tests that exercise it (a test that starts
an `autodoc` process runs the unmutated package there, so it cannot kill a mutant). Prints,
per module, mutants, killed, survived, without a covering test, and timeouts, then every
survivor; `mutmut show NAME` in the work folder shows one. A survivor that only changes the
case of SQL is counted as equivalent on its own line. Not part of CI (doc/testing.md).
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# the query path's in-process tests: test_semantic.py (the ONNX model, ~5 mutants a minute) is
# left out
QUERY_PATH = [
    "test_stages.py",
    "test_protocol.py",
    "test_lexical.py",
    "test_semantic_stage.py",
    "test_facets.py",
    "test_dispatcher.py",
    "test_indexer.py",
    "test_fuse.py",
    "test_rerank.py",
]

# the store package's in-process tests: every module of it shares them
STORE = ["test_store.py", "test_indexer.py", "test_concurrency.py", "test_dispatcher.py"]

# module → the in-process test files that exercise it
MODULES: dict[str, list[str]] = {
    "parse.markdown": ["test_markdown.py", "test_chunking.py", "test_document.py"],
    "parse.document": ["test_markdown.py", "test_document.py", "test_links.py", "test_chunking.py"],
    "parse.chunking": ["test_chunking.py", "test_markdown.py"],
    "parse.query_parser": ["test_query.py", "test_lexical.py", "test_facets.py"],
    "bm25.analyzer": ["test_lexical_index.py", "test_lexical.py", "test_indexer.py"],
    "query.fusion": ["test_fuse.py", "test_semantic.py", "test_lexical.py", "test_dates.py"],
    "vectors.embedding_cache": ["test_semantic_stage.py", "test_semantic.py"],
    "query.pipeline": QUERY_PATH,
    "query.stages": QUERY_PATH,
    "query.stages.lexical": QUERY_PATH,
    "query.stages.semantic": QUERY_PATH,
    "query.stages.fuse": QUERY_PATH,
    "query.stages.rerank": QUERY_PATH,
    "query.snippets": ["test_lexical.py", "test_protocol.py", "test_stages.py"],
    "query.find": ["test_lookup.py"],
    "query.intent": ["test_intent.py", "test_fuse.py", "test_stages.py"],
    "query.confidence": ["test_confidence.py", "test_lexical.py", "test_stages.py"],
    "query.ranking": ["test_ranking.py", "test_confidence.py", "test_fuse.py"],
    "query.facet_filter": ["test_facets_rules.py", "test_facets.py"],
    "store.db": STORE,
    "store.reads": STORE,
    "store.writes": STORE,
    "store.schema": STORE,
    "store.lease": STORE,
    "store.workspace": STORE,
    "engine.reading": ["test_read_path.py", "test_dispatcher.py", "test_reliability.py"],
    "files.confine": ["test_confine.py", "test_read_path.py"],
    "wire.limits": ["test_wire_limits.py", "test_dispatcher.py"],
    "engine.core": ["test_dispatcher.py", "test_semantic_stage.py", "test_stages.py"],
    "engine.indexing": ["test_indexer.py", "test_dispatcher.py", "test_semantic_stage.py"],
    "engine.workspaces": ["test_dispatcher.py", "test_store.py", "test_indexer.py"],
    # (test_link_methods.py reads the tree's sidecar/ folder: it cannot run in the work folder)
    "links.dialect": ["test_link_dialects.py", "test_links.py", "test_rename.py"],
    "links.link_check": ["test_link_dialects.py", "test_links.py"],
    "links.vault_markers": ["test_link_dialects.py"],
    "links.navigate": ["test_link_dialects.py", "test_links.py", "test_rename.py"],
}
# the names before the tree followed the data (doc/testing.md's tables use them)
ALIASES = {
    "markdown": "parse.markdown",
    "document": "parse.document",
    "chunking": "parse.chunking",
    "query": "parse.query_parser",
    "lexical": "bm25.analyzer",
    "fuse": "query.fusion",
    "fusion": "query.fusion",
    "semantic": "vectors.embedding_cache",
    "search": "query.pipeline",
    "stages": "query.stages",
    "stages.lexical": "query.stages.lexical",
    "stages.semantic": "query.stages.semantic",
    "stages.fuse": "query.stages.fuse",
    "stages.rerank": "query.stages.rerank",
    "snippets": "query.snippets",
    "lookup": "query.find",
    "intent": "query.intent",
    "confidence": "query.confidence",
    "facets": "query.facet_filter",
    "store.queries": "store.reads",
    "confine": "files.confine",
    "limits": "wire.limits",
}
# what the tests read besides themselves
ALSO_COPY = ["examples", ".tools", "doc", "README.md", "lua", "plugin", "lsp", ".ci", "bench"]
STATUSES = ("killed", "survived", "no tests", "timeout", "suspicious", "skipped", "not checked")


def _path(module: str) -> str:
    """A MODULES name's file in the work folder: `stages` is a package, `stages.fuse` its module."""
    rel = module.replace(".", "/")
    return (
        f"autodoc/{rel}/__init__.py"
        if (REPO / "sidecar" / "autodoc" / rel).is_dir()
        else f"autodoc/{rel}.py"
    )


def prepare(work: Path, targets: list[tuple[str, str]], only: list[str] | None = None) -> None:
    """The work folder: the package as autodoc/, the tests, and the mutmut settings."""
    for name in ("autodoc", "tests"):
        shutil.rmtree(work / name, ignore_errors=True)
    shutil.copytree(REPO / "sidecar" / "autodoc", work / "autodoc")
    shutil.copytree(REPO / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ALSO_COPY:
        src, dst = REPO / rel, work / rel
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)
        elif src.is_file():
            shutil.copy2(src, dst)
    tests = sorted({_lane_path(t) for module, _ in targets for t in only or MODULES[module]})
    modules = sorted({_path(module) for module, _ in targets})
    settings = "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["autodoc"]',
            f"only_mutate = {modules!r}".replace("'", '"'),
            f"also_copy = {ALSO_COPY!r}".replace("'", '"'),
            f"pytest_add_cli_args_test_selection = {tests!r}".replace("'", '"'),
            'pytest_add_cli_args = ["-p", "no:cacheprovider"]',
            "",
        ]
    )
    (work / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text() + settings)


def results(work: Path, mutmut: str) -> dict[str, str]:
    out = subprocess.run(
        [mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True
    ).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and status in STATUSES:
            found[name] = status
    return found


def _lane_path(name: str) -> str:
    """`tests/<lane>/<name>`: a test file by its name, in whichever lane it lives."""
    found = sorted((REPO / "tests").glob(f"*/{name}"))
    if len(found) != 1:
        raise SystemExit(f"no single test file named {name}: {found}")
    return found[0].relative_to(REPO).as_posix()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="+", help=f"MODULE[:FUNCTION-GLOB] of {sorted(MODULES)}")
    ap.add_argument("--work", help="the work folder (kept; default: a temporary one)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--report", action="store_true", help="report on --work's last run only")
    ap.add_argument("--tests", nargs="+", help="these test files instead of the MODULES table's")
    ap.add_argument(
        "--plant",
        action="store_true",
        help="plant --work's survivors into a copy of the current source, one at a time",
    )
    args = ap.parse_args()
    targets = []
    for t in args.targets:
        module, _, glob = t.partition(":")
        module = ALIASES.get(module, module)
        if module not in MODULES:
            ap.error(f"unknown module {module!r}: one of {', '.join(sorted(MODULES))}")
        targets.append((module, glob or "*"))
    mutmut = shutil.which("mutmut", path=os.path.dirname(sys.executable)) or "mutmut"
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="autodoc-mutants-"))
    if args.plant:
        if not args.work:
            ap.error("--plant needs --work")
        plant(work, targets, args.tests, mutmut)
        return
    if args.report:
        if not args.work:
            ap.error("--report needs --work")
        done = subprocess.CompletedProcess([], 0, "", "")
        report(results(work, mutmut), targets, 0.0, work, done, mutmut)
        return
    work.mkdir(parents=True, exist_ok=True)
    prepare(work, targets, args.tests)
    env = {**os.environ, "AUTODOC_SHARED": str(REPO.parent / "shared")}
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    names = [f"autodoc.{module}.{glob}" for module, glob in targets]
    run = subprocess.run(
        [mutmut, "run", "--max-children", str(args.jobs), *names],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    took = time.monotonic() - started
    found = results(work, mutmut)
    report(found, targets, took, work, run, mutmut)


# SQL keywords and identifiers are case-insensitive in SQLite: a mutant that only changes the
# case of a string holding SQL behaves the same, and is counted as equivalent, not survived.
# Our SQL writes its keywords in capitals and our messages are lower case: the original line
# must hold a capitalised keyword.
_SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|WHERE|FROM|JOIN|VALUES|AND|ORDER BY|GROUP BY|LIMIT|CREATE"
    r"|TABLE|INDEX|EXISTS|DISTINCT|CASE|WHEN|SET|PRAGMA)\b"
)


def diff_lines(work: Path, mutmut: str, name: str) -> tuple[list[str], list[str]]:
    """The lines a mutant removes and adds (`mutmut show`)."""
    out = subprocess.run([mutmut, "show", name], cwd=work, capture_output=True, text=True).stdout
    lines = out.splitlines()
    removed = [ln[1:] for ln in lines if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
    return removed, added


_SQL_TEXT = re.compile(r"'[^']*'")  # a literal inside SQL: its case matters


def sql_case_only(removed: list[str], added: list[str]) -> bool:
    return (
        bool(removed)
        and [r.lower() for r in removed] == [a.lower() for a in added]
        and [_SQL_TEXT.findall(r) for r in removed] == [_SQL_TEXT.findall(a) for a in added]
        and all(_SQL.search(r) for r in removed)
    )


def plant(work: Path, targets, only: list[str] | None, mutmut: str) -> None:
    """Each survivor of the last run in `work`, planted by its diff into a copy of the current
    source, against the module's tests: for a module whose source changed since that run (the
    mutants' names no longer match), so its survivors are still checked one by one."""
    found = results(work, mutmut)
    scratch = Path(tempfile.mkdtemp(prefix="autodoc-plant-"))
    for rel in ("sidecar", "tests", "examples", ".tools", "pyproject.toml"):
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, scratch / rel, symlinks=True)
        elif src.is_file():
            shutil.copy2(src, scratch / rel)
    env = {**os.environ, "PYTHONPATH": str(scratch / "sidecar")}
    env["AUTODOC_SHARED"] = str(REPO.parent / "shared")
    for module, glob in targets:
        source = scratch / "sidecar" / _path(module)
        original = source.read_text()
        tests = [_lane_path(t) for t in only or MODULES[module]]
        prefix = f"autodoc.{module}."
        for name in sorted(found):
            if not name.startswith(prefix) or found[name] != "survived":
                continue
            if not fnmatch.fnmatch(name, prefix + glob):
                continue
            removed, added = diff_lines(work, mutmut, name)
            old, new = "\n".join(removed), "\n".join(added)
            if sql_case_only(removed, added):
                continue
            if original.count(old) != 1:
                print(f"{name}: cannot plant (its lines occur {original.count(old)} times)")
                continue
            source.write_text(original.replace(old, new))
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
            )
            print(f"{name}: {'killed' if run.returncode else 'survived'}")
        source.write_text(original)
    shutil.rmtree(scratch, ignore_errors=True)


def report(found: dict[str, str], targets, took: float, work: Path, run, mutmut: str) -> None:
    print(
        "| module | mutants | killed | survived | SQL case (equivalent) | no tests | timeout"
        " | killed of tested |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    survivors = []
    for module, glob in targets:
        prefix = f"autodoc.{module}."
        mine = {n: s for n, s in found.items() if n.startswith(prefix)}
        if glob != "*":
            mine = {n: s for n, s in mine.items() if fnmatch.fnmatch(n, prefix + glob)}
        for n, s in mine.items():
            if s == "survived" and sql_case_only(*diff_lines(work, mutmut, n)):
                mine[n] = "sql case"
        c = collections.Counter(mine.values())
        tested = c["killed"] + c["survived"] + c["timeout"]
        share = f"{(c['killed'] + c['timeout']) / tested:.1%}" if tested else "–"
        label = module if glob == "*" else f"{module}:{glob}"
        print(
            f"| {label} | {len(mine)} | {c['killed']} | {c['survived']} | {c['sql case']}"
            f" | {c['no tests']} | {c['timeout']} | {share} |"
        )
        survivors += sorted(n for n, s in mine.items() if s in ("survived", "no tests"))
    print(f"\n{took:.0f} s; work folder {work}")
    if run.returncode != 0:
        print(f"mutmut exited {run.returncode}: {run.stderr[-2000:]}")
    if survivors:
        print("\nsurvivors and mutants no test runs (`mutmut show NAME` in the work folder):")
        print("\n".join(f"- {n}: {found[n]}" for n in survivors))


if __name__ == "__main__":
    main()
