"""A rename round trip on a copy of a vault, through the command line as a person or CI runs it:
index, `autodoc check`, rename the most-linked note (from a link that names it by its file) and
the most-linked heading with `autodoc --call links.rename`, apply each edit as an editor would
(tests/rename_apply.py), index again, `autodoc check` again. What it measured comes back as a
dict: tests/integration/test_rename_corpus.py holds it to its promises, bench/rename_roundtrip.py
prints it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from autodoc.engine import Engine
from autodoc.links.navigate import slug
from autodoc.links.rename_plan import written_links
from autodoc.serve.dispatcher import Dispatcher

from .rename_apply import apply

WORKSPACE = "vault"
TIMED_RUNS = 3


def autodoc(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autodoc", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def call(db: Path, method: str, params: list[Any]) -> Any:
    run = autodoc(db, "--call", method, json.dumps(params))
    if run.returncode != 0:
        raise RuntimeError(f"{method}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def unresolved(db: Path, root: Path) -> set[tuple[str, int, str]]:
    """`autodoc check`'s link findings: (path, line, message)."""
    run = autodoc(db, "check", str(root), "-w", WORKSPACE, "--json")
    report = json.loads(run.stdout)
    return {(f["path"], f["line"], f["message"]) for f in report["findings"] if f["kind"] == "link"}


def _rows(db: Path, sql: str, *args: Any) -> list[tuple]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def links_to(db: Path, path: str) -> list[tuple[str, int, str, str, str]]:
    """(source, line, kind, target, heading) of the index's links to the note at `path`."""
    return [tuple(r) for r in _rows(
        db,
        "SELECT s.path, l.line, l.kind, l.target, l.heading FROM links l"
        " JOIN documents s ON s.id = l.source_id JOIN documents d ON d.id = l.target_id"
        " WHERE d.path = ? AND d.deleted = 0 AND s.deleted = 0 AND l.kind != 'record'",
        path,
    )]  # fmt: skip


def most_linked(db: Path) -> list[str]:
    """The notes by how many links lead to them, most first."""
    rows = _rows(
        db,
        "SELECT d.path, count(*) FROM links l JOIN documents d ON d.id = l.target_id"
        " WHERE l.kind != 'record' AND d.deleted = 0 GROUP BY d.path ORDER BY 2 DESC, 1",
    )
    return [r[0] for r in rows]


def _positions(root: Path, links: list[tuple], *, heading: bool) -> list[tuple[str, int, int]]:
    """(source, line, column) inside each link's file name or heading."""
    out = []
    for src, line, kind, target, linked in links:
        if kind == "meta":
            continue
        text = (root / src).read_text(encoding="utf-8").split("\n")[line - 1]
        for w in written_links(text):
            if (w.kind, w.target, w.heading) == (kind, target, linked):
                span = w.heading_span if heading else w.target_span
                if span is not None and span[1] > span[0]:
                    out.append((src, line, span[1] - 1))
    return out


def pick_note(db: Path, root: Path) -> tuple[str, tuple[str, int, int]]:
    """The most-linked note that a link names by its file, and that link's position."""
    for path in most_linked(db):
        for src, line, column in _positions(root, links_to(db, path), heading=False):
            got = call(db, "links.prepare_rename", [WORKSPACE, src, line, column])
            if got["kind"] == "file":
                return path, (src, line, column)
    raise LookupError("no note is linked by its file name")


def pick_heading(db: Path, root: Path) -> tuple[str, str, tuple[str, int, int]]:
    """The heading most links lead to (that the index resolves to a heading of its note)."""
    counts = _rows(
        db,
        "SELECT d.path, l.heading, count(*) FROM links l JOIN documents d ON d.id = l.target_id"
        " WHERE l.heading != '' AND l.kind != 'record' AND d.deleted = 0"
        " GROUP BY d.path, lower(l.heading) ORDER BY 3 DESC, 1, 2",
    )
    for path, linked, _ in counts:
        links = [x for x in links_to(db, path) if slug(x[4]) == slug(linked)]
        for src, line, column in _positions(root, links, heading=True)[:1]:
            try:
                got = call(db, "links.prepare_rename", [WORKSPACE, src, line, column])
            except RuntimeError:
                continue  # `#summary,1:#*`: no heading of the note answers to it
            if got["kind"] == "heading":
                return path, got["placeholder"], (src, line, column)
    raise LookupError("no linked heading")


def _timed(db: Path, params: list[Any]) -> float:
    """The median of TIMED_RUNS `links.rename` calls in one process, in ms (the method alone,
    as a server answers it; the CLI's process start is measured apart)."""
    rpc = Dispatcher(Engine(db))
    try:
        times = []
        for _ in range(TIMED_RUNS):
            t0 = time.perf_counter()
            rpc.call("links.rename", params)
            times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times)
    finally:
        rpc.engine.close()


# Over 60 lines: the round trip read top to bottom, one figure gathered at each step.
def round_trip(root: Path, db: Path, note_name: str, heading_name: str) -> dict[str, Any]:
    """Index `root`, rename its most-linked note to `note_name` and its most-linked heading to
    `heading_name`, apply, index again; the figures of each step."""
    figures: dict[str, Any] = {"files": sum(1 for _ in root.rglob("*.md"))}
    call(db, "workspace.add", [WORKSPACE, str(root)])
    call(db, "workspace.configure", [WORKSPACE, {"embedding": "none"}])
    t0 = time.perf_counter()
    autodoc(db, "index", str(root), "-w", WORKSPACE)
    figures["index_s"] = round(time.perf_counter() - t0, 1)
    before = unresolved(db, root)
    figures["unresolved_before"] = len(before)

    note, (src, line, column) = pick_note(db, root)
    links_before = links_to(db, note)
    params = [WORKSPACE, src, line, column, note_name]
    t0 = time.perf_counter()
    answer = call(db, "links.rename", params)
    cli_s = time.perf_counter() - t0
    figures["note"] = {
        "path": note, "new_path": answer["new_path"], "links_before": len(links_before),
        "rewritten": answer["links"], "kept": answer["kept"], "files": answer["files"],
        "edits": len(answer["edits"]), "call_ms": round(_timed(db, params), 1),
        "cli_s": round(cli_s, 2),
    }  # fmt: skip
    apply(root, answer)
    autodoc(db, "index", str(root), "-w", WORKSPACE)
    figures["note"]["links_after"] = len(links_to(db, answer["new_path"]))
    moved = {note: answer["new_path"]}

    path, heading, (src, line, column) = pick_heading(db, root)
    named = [x for x in links_to(db, path) if slug(x[4]) == slug(heading)]
    params = [WORKSPACE, src, line, column, heading_name]
    t0 = time.perf_counter()
    answer = call(db, "links.rename", params)
    cli_s = time.perf_counter() - t0
    figures["heading"] = {
        "path": path, "heading": heading, "new_heading": heading_name,
        "links_before": len(named), "rewritten": answer["links"], "local": answer["local"],
        "files": answer["files"], "call_ms": round(_timed(db, params), 1),
        "cli_s": round(cli_s, 2),
    }  # fmt: skip
    apply(root, answer)
    autodoc(db, "index", str(root), "-w", WORKSPACE)
    after_heading = [x for x in links_to(db, path) if slug(x[4]) == slug(heading_name)]
    figures["heading"]["links_after"] = len(after_heading)
    after = unresolved(db, root)
    figures["unresolved_after"] = len(after)
    was = {(moved.get(p, p), n, m) for p, n, m in before}
    figures["new_unresolved"] = sorted(after - was)
    figures["cores"] = os.cpu_count()
    return figures
