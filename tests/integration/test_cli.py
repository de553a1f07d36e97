"""The CLI is a thin layer: `--call`, `index` and `search` over the same dispatcher."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from autodoc.serve.cli.main import main

from ..conftest import EXAMPLE_VAULT


@pytest.fixture
def cli(db_path, capsys):
    def run(*argv):
        code = main(["--db", str(db_path), *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_index_and_search_the_example_vault(cli, tmp_path):
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    code, out, _ = cli("index", str(vault))
    assert code == 0
    assert out.startswith("indexed vault: 8 files (8 added")
    code, out, _ = cli("index", str(vault))
    assert "8 unchanged" in out and "(0 written)" in out
    code, out, err = cli("search", "reclaimBatch", "--workspace", "vault")
    assert code == 0
    first = out.splitlines()[0]
    path, _, rest = first.partition("  ")
    assert path.startswith("adr/0003-embedded-sqlite-store.md:")
    assert "reclaimBatch" in rest
    assert "hybrid" in err and "rerank skipped: no ranker configured" in err
    code, out, _ = cli("search", "embedded relational store", "--json", "-n", "2")
    answer = json.loads(out)
    assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    assert len(answer["hits"]) == 2


def test_the_sample_vault_passes_its_own_check(cli):
    """The README's walk-through runs `autodoc check examples/vault`: its frontmatter paths
    (`superseded_by: adr/0003-embedded-sqlite-store.md`, from the root) resolve."""
    code, out, err = cli("check", str(EXAMPLE_VAULT))
    assert (code, out) == (0, "") and err.startswith("0 errors, 0 warnings in 8 documents")


def test_call_prints_json_and_errors_exit_nonzero(cli, tmp_path):
    (tmp_path / "v").mkdir()
    code, out, _ = cli("--call", "workspace.add", json.dumps(["v", str(tmp_path / "v")]))
    assert code == 0 and json.loads(out)["name"] == "v"
    code, out, _ = cli("--call", "workspace.list")
    assert code == 0 and json.loads(out)[0]["name"] == "v"
    code, out, err = cli("--call", "search.query", '["v"]')
    assert code == 2 and json.loads(out)["error"]["code"] == -32602
    assert err == "autodoc: search.query takes 2 to 3 params, got 1\n"
    code, out, err = cli("--call", "search.query", "not json")
    assert code == 2 and json.loads(out)["error"]["code"] == -32700
    assert err.startswith("autodoc: params are not valid JSON: ")
    code, out, err = cli("search", "x", "--workspace", "missing")
    assert (code, out, err) == (2, "", "autodoc: unknown workspace 'missing'\n")


def test_console_script_and_env_db(tmp_path):
    exe = shutil.which("autodoc", path=os.path.dirname(sys.executable))
    assert exe, "the console script is installed with the package"
    env = {**os.environ, "AUTODOC_DB": str(tmp_path / "env.db")}
    proc = subprocess.run(
        [exe, "--call", "workspace.list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert (tmp_path / "env.db").exists()


def test_hidden_folders_are_counted_and_can_be_let_in(cli, tmp_path):
    vault = tmp_path / "v"
    for rel in ("a.md", ".notes/n.md", ".hidden.md", "sub/.trash/t.md", ".obsidian/app.json"):
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(f"# {rel}\n\nsome words about {rel}\n")
    cli("--call", "workspace.add", json.dumps(["v", str(vault)]))
    cli("--call", "workspace.configure", '["v", {"embedding": "none"}]')
    code, out, _ = cli("index", str(vault))
    assert code == 0 and "1 files" in out and "0 skipped, 4 hidden not indexed (.hidden.md, "
    assert ".notes/, .obsidian/, sub/.trash/; --include-hidden PATTERN indexes them)" in out
    code, out, _ = cli("index", str(vault), "--include-hidden", ".notes", "--include-hidden",
                       "*/.trash", "--json")  # fmt: skip
    summary = json.loads(out)
    assert summary["files"] == 3  # the option, once set, walked the root again
    assert summary["hidden"] == {"count": 2, "examples": [".hidden.md", ".obsidian/"]}
    code, out, _ = cli("search", "words", "-w", "v", "--json")
    assert {h["path"] for h in json.loads(out)["hits"]} == {"a.md", ".notes/n.md",
                                                            "sub/.trash/t.md"}  # fmt: skip
    code, out, _ = cli("--call", "workspace.configure", '["v", {"include_hidden": ["../x"]}]')
    assert code == 2 and json.loads(out)["error"]["code"] == -32602
    # The option stays: a later plain `index` keeps them; taking it away retires them.
    code, out, _ = cli("index", str(vault))
    assert "3 files" in out
    cli("--call", "workspace.configure", '["v", {"include_hidden": []}]')
    code, out, _ = cli("search", "words", "-w", "v", "--json")
    assert {h["path"] for h in json.loads(out)["hits"]} == {"a.md"}


def test_ctrl_c_says_how_far_it_got_and_the_next_run_resumes(cli, tmp_path, monkeypatch):
    from autodoc.serve.cli import main as cli_module

    vault = tmp_path / "v"
    vault.mkdir()
    for i in range(1200):
        (vault / f"n{i:04}.md").write_text(f"# Note {i}\n\nbody {i}\n")
    cli("--call", "workspace.add", json.dumps(["v", str(vault)]))
    cli("--call", "workspace.configure", '["v", {"embedding": "none"}]')
    real = cli_module._Progress.__call__

    def interrupted(self, done, total, path=""):
        real(self, done, total, path)
        if self.unit == "file" and done == 700:
            raise KeyboardInterrupt  # as Ctrl-C arriving here would

    monkeypatch.setattr(cli_module._Progress, "__call__", interrupted)
    code, out, err = cli("index", str(vault))
    assert code == 130 and out == ""
    assert err.strip() == (
        f"autodoc: interrupted after 700 of 1,200 files; run `autodoc index {vault}` again to"
        " resume (what was stored is kept)"
    )
    monkeypatch.setattr(cli_module._Progress, "__call__", real)
    code, out, err = cli("index", str(vault))
    # The first batch of 500 was published before the interruption; the rest is read now.
    assert code == 0 and "autodoc: resuming: 500 of 1,200 files already indexed" in err
    assert "(700 added, 0 modified, 0 deleted, 500 unchanged)" in out
    code, out, err = cli("index", str(vault))  # finished: nothing to resume
    assert "resuming" not in err and "1200 unchanged" in out


def test_progress_shows_rate_elapsed_and_estimate_on_a_terminal(monkeypatch):
    import io

    from autodoc.serve.cli.main import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    bar = _Progress("embedding", "chunk")
    bar(64, 1000)
    bar.bar.mininterval, bar.bar.miniters, bar.bar.dynamic_miniters = 0, 1, False  # every report
    for done in (128, 192):
        time.sleep(0.01)
        bar(done, 1000)
    shown = screen.getvalue().split("\r")[-1]
    # tqdm's own line: "embedding:  19%|██  | 192/1000 [00:00<00:01, 1234.5chunk/s]"
    assert re.search(r"embedding: +19%.*192/1000 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+chunk/s\]", shown)
    bar(1000, 1000)
    assert bar.bar is None  # closed at the last report
    quiet = _Progress("files", "file")  # not a terminal: nothing written
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    quiet(1, 2)
    assert sys.stderr.getvalue() == ""


def test_ctrl_c_while_embedding_keeps_the_vectors_stored_and_says_what_is_left(
    cli, tmp_path, monkeypatch
):
    from autodoc.serve.cli import main as cli_module

    vault = tmp_path / "v"
    vault.mkdir()
    for i in range(30):
        sections = "".join(f"## Part {k}\n\nnote {i} part {k} about topic {i * k}\n\n"
                           for k in range(5))  # fmt: skip
        (vault / f"n{i:02}.md").write_text(f"# Note {i}\n\n{sections}")
    real = cli_module._Progress.__call__

    def interrupted(self, done, total, path=""):
        real(self, done, total, path)
        if self.unit == "chunk":
            raise KeyboardInterrupt  # at the first stored batch of vectors

    monkeypatch.setattr(cli_module._Progress, "__call__", interrupted)
    monkeypatch.setattr(
        "autodoc.vectors.embedding_cache.FILL_BATCH", 64
    )  # several batches of a small vault
    code, _, err = cli("index", str(vault))
    m = re.search(r"interrupted while embedding, (\d+) of (\d+) chunks embedded; run", err)
    assert code == 130 and m, err
    done, total = int(m[1]), int(m[2])
    assert 0 < done < total
    monkeypatch.setattr(cli_module._Progress, "__call__", real)
    code, out, err = cli("index", str(vault))
    assert code == 0
    told = f"autodoc: embedding {total - done:,} of {total:,} chunks ({done:,} already stored)"
    assert told in err
    assert f"{total - done} new" in out and f"{total}/{total} chunks covered" in out


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    """`autodoc check DOCS | head -3`: the pipe closes while findings are printed."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "_schema").mkdir()
    (vault / "_schema" / "frontmatter.yaml").write_text("common:\n  n: integer\n")
    for i in range(2000):
        (vault / f"n{i:04}.md").write_text(f"---\nn: x{i}\n---\n# N {i}\n")
    env = {**os.environ, "AUTODOC_DB": str(tmp_path / "db" / "autodoc.db")}
    cmd = f"{sys.executable} -m autodoc check {vault} | head -3"
    out = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], env=env, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert len(out.stdout.splitlines()) == 3 and "n: expected an integer" in out.stdout
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
    assert out.stderr.startswith("2000 errors, 0 warnings in 2000 documents")  # still said
    assert out.returncode == 141  # 128 + SIGPIPE, as for any program whose reader left


def test_related_from_a_file_on_disk_and_a_line(cli, tmp_path):
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    cli("--call", "workspace.add", json.dumps(["vault", str(vault)]))
    cli("--call", "workspace.configure", '["vault", {"embedding": "none"}]')
    cli("index", str(vault))
    target = vault / "adr" / "0003-embedded-sqlite-store.md"
    code, out, err = cli("related", f"{target}:25")
    assert code == 0
    assert out.splitlines() == [
        # its frontmatter (superseded_by, line 1) links here: the section holding that line
        "adr/0002-store-documents-in-postgres.md:1-9  ADR 0002: Store documents in Postgres"
        " › Abstract  (links here, linked from here)",
        "README.md:9-14  Sample vault › What is inside › Architecture decisions  (links here,"
        " shares 1 link)",
        "adr/0004-lease-recovery.md:12-21  ADR 0004: Recovering a stale writer lease › Context"
        "  (links here)",
        "notes/search-pipeline.md:7-12  Search pipeline  (links here)",
    ]
    assert "related to adr/0003-embedded-sqlite-store.md:23-27" in err and "semantic off" in err
    code, out, _ = cli("related", "adr/0004-lease-recovery.md", "-w", "vault", "--json")
    assert json.loads(out)["path"] == "adr/0004-lease-recovery.md"
    code, out, err = cli("related", "adr/nope.md", "-w", "vault", "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == -32602
    assert err.startswith("autodoc: ") and "adr/nope.md" in err


def test_the_index_report_says_why_fewer_vectors_than_chunks(cli, tmp_path):
    """Two chunks with one text get one vector: the report says so, rather than leaving
    "embedding 3 chunks" beside "2 new vectors" unexplained."""
    vault = tmp_path / "v"
    same = "# Shared\n\nThe same boilerplate paragraph about licensing terms.\n"
    for name in ("a.md", "b.md"):
        (vault / name).parent.mkdir(parents=True, exist_ok=True)
        (vault / name).write_text(same)
    (vault / "c.md").write_text("# Other\n\nSomething else entirely about vectors.\n")
    code, out, err = cli("index", str(vault))
    assert code == 0, err
    assert re.search(r"embeddings \(.+\): 2 new vectors.*, 3/3 chunks covered"
                     r" \(1 repeats another chunk's text: one vector serves each text\)",
                     out), out  # fmt: skip


def test_a_search_over_a_local_qdrant_store_names_it_and_leaves_stderr_empty(tmp_path):
    """Issue 57: the answer says which store ran each stage, and the process ends without
    qdrant-client's `__del__` complaining on stderr at interpreter shutdown."""
    pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
    vault = tmp_path / "v"
    shutil.copytree(EXAMPLE_VAULT, vault)
    store = {"kind": "qdrant", "path": str(tmp_path / "qdrant")}
    env = {**os.environ, "AUTODOC_DB": str(tmp_path / "db" / "autodoc.db")}

    def call(method: str, params: list) -> subprocess.CompletedProcess:
        args = [sys.executable, "-m", "autodoc", "--call", method, json.dumps(params)]
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)

    for method, params in (
        ("workspace.add", ["v", str(vault)]),
        ("workspace.configure", ["v", {"embedding": {"provider": "bundled", "store": store}}]),
        ("index.run", ["v"]),
    ):
        done = call(method, params)
        assert done.returncode == 0 and done.stderr == "", (method, done.stderr)
    done = call("search.query", ["v", "writer lease"])
    assert done.returncode == 0 and done.stderr == "", done.stderr
    answer = json.loads(done.stdout)
    assert answer["stages"]["performed"] == ["lexical", "semantic"]
    assert answer["stages"]["engines"] == {
        "lexical": "qdrant-sparse:local",
        "semantic": "qdrant:local",
    }
    assert answer["hits"]
