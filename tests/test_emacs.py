"""Emacs with eglot as a second real LSP client (Debian's emacs-nox and elpa-eglot, which
`.ci/run` installs), in batch mode: tests/emacs/eglot_check.el drives `autodoc serve` and
prints what it answered; this test says what it must have answered."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import EXAMPLE_VAULT, missing, tool

DRIVER = Path(__file__).parent / "emacs" / "eglot_check.el"
TIMEOUT_S = 180


def eglot_ready() -> str | None:
    """The emacs binary when it has eglot, else None."""
    emacs = tool("emacs")
    if emacs is None:
        return None
    probe = subprocess.run([emacs, "--batch", "--eval", "(require 'eglot)"],
                           capture_output=True, timeout=60)  # fmt: skip
    return emacs if probe.returncode == 0 else None


def test_eglot_follows_links_finds_references_symbols_hover_outline_and_diagnostics(tmp_path: Path):
    emacs = eglot_ready()
    if emacs is None:
        missing("emacs", "Emacs with eglot is not installed (Debian: emacs-nox elpa-eglot)")
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    (vault / "notes" / "broken.md").write_text(
        "# Broken\n\nSee [[no-such-note]] and [gone](gone.md).\n"
    )
    env = {**os.environ, "AUTODOC_DB": str(tmp_path / "store" / "autodoc.db"),
           "AUTODOC_VAULT": str(vault), "AUTODOC_PYTHON": sys.executable,
           "HOME": str(tmp_path / "home")}  # fmt: skip
    run = subprocess.run([emacs, "--batch", "-l", str(DRIVER)], cwd=vault, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    # eglot roots the project at the note's own folder; the server serves the vault above it
    assert got["eglot_root"].rstrip("/").endswith("vault/notes")
    assert ["adr/0004-lease-recovery.md", 1] in got["symbols"]  # outside notes/
    assert got["wiki_definition"] == [["notes/search-pipeline.md", 1]]  # [[search-pipeline]]
    assert got["md_definition"] == [["adr/0001-record-architecture-decisions.md", 1]]
    assert got["hover"].startswith("**Search pipeline**\n\n`notes/search-pipeline.md:1`")
    assert ["notes/onboarding.md", 10] in got["references"]
    # imenu's outline: every heading at its line, under the one above it (eglot's `A::B`)
    assert sorted(got["outline"], key=lambda e: e[2]) == [
        [None, "Search pipeline", 7],
        ["Search pipeline", "Stages", 14],
        ["Search pipeline::Stages", "Lexical", 19],
        ["Search pipeline::Stages", "Semantic", 27],
        ["Search pipeline::Stages", "Rerank", 33],
        ["Search pipeline", "Fusion", 39],  # a setext heading: `---` under its line
        ["Search pipeline", "Known gaps", 47],
    ]
    line = (vault / "notes" / "broken.md").read_text().splitlines()[2]
    assert sorted((m, line[a:b]) for m, n, a, b in got["diagnostics"] if n == 2) == [
        ("link to 'gone.md' does not resolve", "[gone](gone.md)"),
        ("link to 'no-such-note' does not resolve", "[[no-such-note]]"),
    ]


RENAME_DRIVER = Path(__file__).parent / "emacs" / "eglot_rename.el"
LINKING = "# Linking\n\nSee [[search-pipeline#Known gaps]] and" \
    " [gaps](search-pipeline.md#known-gaps).\n"  # fmt: skip


def test_eglot_rename_on_a_heading_rewrites_the_linking_file(tmp_path: Path):
    """`eglot-rename` (eglot 1.9: documentChanges, no prepareRename, no resource operations)
    on a heading: the heading and a note that links to it from outside eglot's buffers, both
    forms of link, saved."""
    emacs = eglot_ready()
    if emacs is None:
        missing("emacs", "Emacs with eglot is not installed (Debian: emacs-nox elpa-eglot)")
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    (vault / "notes" / "linking.md").write_text(LINKING)
    line = (vault / "notes/search-pipeline.md").read_text().splitlines().index("## Known gaps")
    env = {**os.environ, "AUTODOC_DB": str(tmp_path / "store" / "autodoc.db"),
           "AUTODOC_VAULT": str(vault), "AUTODOC_PYTHON": sys.executable,
           "HOME": str(tmp_path / "home"), "AUTODOC_HEADING_LINE": str(line + 1),
           "AUTODOC_NEW_NAME": "Open problems"}  # fmt: skip
    run = subprocess.run([emacs, "--batch", "-l", str(RENAME_DRIVER)], cwd=vault, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["error"] is None, got["error"]
    assert "\n## Open problems\n" in got["pipeline"] and "Known gaps" not in got["pipeline"]
    assert got["linking"] == (
        "# Linking\n\nSee [[search-pipeline#Open problems]] and"
        " [gaps](search-pipeline.md#open-problems).\n"
    )


COMPLETION_DRIVER = Path(__file__).parent / "emacs" / "eglot_completion.el"


def test_eglot_completion_at_point_after_brackets_inserts_a_link_that_resolves(tmp_path: Path):
    """`completion-at-point` (eglot 1.9: TextEdit, no snippets) after `[[Sea` in a new note:
    the link it writes, and where textDocument/definition says it leads."""
    emacs = eglot_ready()
    if emacs is None:
        missing("emacs", "Emacs with eglot is not installed (Debian: emacs-nox elpa-eglot)")
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    env = {**os.environ, "AUTODOC_DB": str(tmp_path / "store" / "autodoc.db"),
           "AUTODOC_VAULT": str(vault), "AUTODOC_PYTHON": sys.executable,
           "HOME": str(tmp_path / "home")}  # fmt: skip
    run = subprocess.run([emacs, "--batch", "-l", str(COMPLETION_DRIVER)], cwd=vault, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["ready"] is True
    assert got["line"] == "See [[search-pipeline]]"
    assert got["target"] == "notes/search-pipeline.md"
