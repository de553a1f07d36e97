"""Emacs with eglot as a second real LSP client (Debian's emacs-nox, elpa-eglot and
elpa-markdown-mode, which `.ci/run` installs): in batch mode, tests/emacs/eglot_*.el drive
`autodoc serve` and print what it answered, and these tests say what it must have answered;
and doc/editors.md's set-up, taken from the page, in `emacs -nw` as a reader runs it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import termios
import threading
from pathlib import Path

from ..conftest import EXAMPLE_VAULT, REPO, missing, tool
from .test_lsp_first_open import BROKEN, doc_block
from .test_lsp_first_open import _vault as first_open_vault

DRIVER = Path(__file__).parents[1] / "emacs" / "eglot_check.el"
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


RENAME_DRIVER = Path(__file__).parents[1] / "emacs" / "eglot_rename.el"
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


COMPLETION_DRIVER = Path(__file__).parents[1] / "emacs" / "eglot_completion.el"


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


# -- doc/editors.md's set-up, as written -----------------------------------------------------

SETUP_DRIVER = Path(__file__).parents[1] / "emacs" / "doc_setup_check.el"
# The libraries the set-up loads: `eglot' (with-eval-after-load) and `markdown-mode' (its hook).
SETUP_LIBRARIES = ("eglot", "markdown-mode")


def markdown_mode_ready(emacs: str) -> bool:
    """Whether Emacs's packages (Debian's in /usr/share/emacs/site-lisp/elpa) hold
    markdown-mode."""
    probe = subprocess.run([emacs, "--batch", "--eval",
                            "(progn (package-initialize) (require 'markdown-mode))"],
                           capture_output=True, timeout=60)  # fmt: skip
    return probe.returncode == 0


def in_terminal(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    """Run `argv` on a pseudo-terminal of its own (`emacs -nw` wants a controlling one), its
    screen drained as it draws; the screen's last bytes, for a failure to show."""
    leader, follower = pty.openpty()
    screen: list[bytes] = []

    def drain() -> None:
        with contextlib.suppress(OSError):  # the terminal closed
            while block := os.read(leader, 65536):
                screen.append(block)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=follower, stdout=follower,
                            stderr=follower, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))  # fmt: skip
    os.close(follower)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    os.close(leader)
    reader.join(5)
    return b"".join(screen)[-3000:].decode("utf-8", "replace")


def test_the_docs_set_up_opens_a_note_in_markdown_mode_with_eglot_and_its_diagnostics(
    tmp_path: Path,
):
    """doc/editors.md's elisp, taken from the page into ~/.emacs.d/init.el, in `emacs -nw`
    with the Debian packages: the first note opened (it starts the server) is in
    markdown-mode, eglot manages it, and Flymake shows its two broken links."""
    emacs = eglot_ready()
    if emacs is None or not markdown_mode_ready(emacs):
        missing("emacs", "Emacs with eglot and markdown-mode is not installed"
                " (Debian: emacs-nox elpa-eglot elpa-markdown-mode)")  # fmt: skip
    home = tmp_path / "home"
    (home / ".emacs.d").mkdir(parents=True)
    (home / ".emacs.d" / "init.el").write_text(doc_block("Emacs (eglot)", "elisp"))
    vault = first_open_vault(tmp_path / "vault")
    out = tmp_path / "found.json"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env = {**os.environ, "HOME": str(home), "TERM": "xterm", "XDG_CACHE_HOME": cache,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "AUTODOC_DB": str(tmp_path / "store" / "autodoc.db"),
           "AUTODOC_NOTE": str(vault / "first.md"), "AUTODOC_OUT": str(out),
           "AUTODOC_EXPECT": str(len(BROKEN)), "AUTODOC_WAIT_S": "60"}  # fmt: skip
    screen = in_terminal([emacs, "-nw", "-l", str(SETUP_DRIVER), str(vault / "first.md")],
                         vault, env, TIMEOUT_S)  # fmt: skip
    assert out.exists(), screen
    got = json.loads(out.read_text())
    assert got["mode"] == "markdown-mode", got
    assert got["eglot"] is True, got
    assert sorted(got["diagnostics"]) == [
        ["eglot-error", 3, "[lost](lost.md)"],
        ["eglot-error", 3, "[missing](nowhere.md)"],
    ], got
    assert got["flymake"].endswith("[2 0]"), got


def test_the_docs_packages_hold_every_library_its_set_up_loads():
    """The page's `apt install` names the Debian package of each library the set-up loads
    (markdown-mode is in no Emacs: without `elpa-markdown-mode` a note opens in Fundamental
    mode and eglot never starts), and `.ci/run` installs them all."""
    named = doc_block("Emacs (eglot)", "sh").split("apt install", 1)[1].split()
    installed = re.search(r'^DEBS="(.*)"$', (REPO / ".ci" / "run").read_text(), re.M)
    assert installed and set(named) <= set(installed.group(1).split())
    dpkg = shutil.which("dpkg")
    if dpkg is None:
        missing("emacs", "dpkg is not installed: which Debian package holds a library is unknown")
    for library in SETUP_LIBRARIES:
        found = subprocess.run([dpkg, "-S", f"*/{library}.el"], capture_output=True, text=True)
        assert found.returncode == 0, f"no Debian package holds {library}.el: {found.stderr}"
        holders = {line.split(":")[0] for line in found.stdout.splitlines()}
        assert holders & set(named), f"{library}.el is in {holders}, none of {named}"
