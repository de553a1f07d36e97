"""The read path (`doc.read`, the MCP tool `read_span`): exactly the lines asked for, never a
byte outside the workspace root, and every bad request a -32602 naming what was wrong."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodoc.engine import Engine, checked_path
from autodoc.files.confine import OutsideRoot, read_inside
from autodoc.serve.dispatcher import Dispatcher
from autodoc.store import Store
from autodoc.wire.errors import RpcError

from ..conftest import lexical_workspace, long_count, write

A_MD = "# Alpha\n\nfirst line\nsecond line\nthird line\n"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = tmp_path_factory.mktemp("read")
    root = base / "vault"
    write(root, "a.md", A_MD)
    write(root, "sub/b.md", "# Beta\n\nno newline at the end")
    write(root, "empty.md", "")
    write(root, "big.md", "# Big\n\n" + "x" * 2_000_000 + "\n")
    write(root, "edge.md", "# E\n\n" + "x" * (1_000_000 - 6) + "\n")  # exactly 1 MB
    write(root, "over.md", "# O\n\n" + "x" * (1_000_000 - 5) + "\n")  # one byte more
    (root / "latin1.md").write_bytes(b"# Caf\xe9\n\nna\xefve bytes\n")
    (base / "vault-secret").mkdir()
    (base / "vault-secret" / "secret.md").write_text("# Secret\n\ntop secret\n")
    (root / "escape.md").symlink_to(base / "vault-secret" / "secret.md")
    (root / "inside.md").symlink_to(root / "a.md")
    rpc = Dispatcher(Engine(base / "store" / "autodoc.db"))
    lexical_workspace(rpc, root)
    write(root, "late.md", "# Late\n\nwritten after indexing\n")
    yield rpc, root
    rpc.engine.close()


def read(kb, *params):
    rpc, _ = kb
    return rpc.call("doc.read", ["v", *params])


def error(kb, *params) -> dict:
    rpc, _ = kb
    with pytest.raises(RpcError) as exc:
        rpc.call("doc.read", ["v", *params])
    return exc.value.to_dict()


@pytest.mark.parametrize(
    ("params", "start", "end", "text"),
    [
        (["a.md"], 1, 5, A_MD.rstrip("\n")),
        (["a.md", 3, 4], 3, 4, "first line\nsecond line"),
        (["a.md", 3, 3], 3, 3, "first line"),
        (["a.md", 5], 5, 5, "third line"),  # the last line
        (["a.md", 4, 99], 4, 5, "second line\nthird line"),  # clipped to the file
        (["a.md", None, 2], 1, 2, "# Alpha\n"),  # null: from the first line
        (["a.md", 2, None], 2, 5, "\nfirst line\nsecond line\nthird line"),  # null: to the last
        (["a.md", 1, 5], 1, 5, A_MD.rstrip("\n")),
    ],
)
def test_a_span_is_exactly_those_lines(kb, params, start, end, text):
    got = read(kb, *params)
    assert got == {
        "workspace": "v",
        "path": "a.md",
        "line_start": start,
        "line_end": end,
        "lines_total": 5,
        "text": text,
        "generation": 1,
    }


def test_line_counts_follow_the_files_own_line_ends(kb):
    b = read(kb, "sub/b.md")
    assert (b["path"], b["lines_total"], b["text"]) == (
        "sub/b.md",
        3,
        "# Beta\n\nno newline at the end",
    )
    assert read(kb, "sub/b.md", 3)["text"] == "no newline at the end"
    empty = read(kb, "empty.md")
    assert (empty["lines_total"], empty["line_end"], empty["text"]) == (1, 1, "")
    assert read(kb, "inside.md", 3, 3)["text"] == "first line"  # a link inside the root
    assert read(kb, "inside.md")["path"] == "a.md"  # named by where it leads
    assert read(kb, "late.md")["generation"] is None  # on disk, not indexed yet


@pytest.mark.parametrize(
    ("params", "message", "data"),
    [
        ([7], "path must be a non-empty string", {"field": "path"}),
        ([""], "path must be a non-empty string", {"field": "path"}),
        (["a.md\x00"], "path must be a non-empty string", {"field": "path"}),
        (["/etc/passwd"], "path must be relative to the workspace root", {"path": "/etc/passwd"}),
        (["../vault-secret/secret.md"], "path is outside the workspace root",
         {"path": "../vault-secret/secret.md"}),
        (["sub/../../vault-secret/secret.md"], "path is outside the workspace root",
         {"path": "sub/../../vault-secret/secret.md"}),
        (["escape.md"], "path is outside the workspace root", {"path": "escape.md"}),
        ([".."], "path is outside the workspace root", {"path": ".."}),
        (["."], "no such file in the workspace: .", {"path": "."}),
        (["sub"], "no such file in the workspace: sub", {"path": "sub"}),
        (["missing.md"], "no such file in the workspace: missing.md", {"path": "missing.md"}),
        (["a.md", 0], "line_start must be a positive integer", {"field": "line_start"}),
        (["a.md", -1], "line_start must be a positive integer", {"field": "line_start"}),
        (["a.md", True], "line_start must be a positive integer", {"field": "line_start"}),
        (["a.md", "1"], "line_start must be a positive integer", {"field": "line_start"}),
        (["a.md", 1.0], "line_start must be a positive integer", {"field": "line_start"}),
        (["a.md", 1, 0], "line_end must be a positive integer", {"field": "line_end"}),
        (["a.md", 1, False], "line_end must be a positive integer", {"field": "line_end"}),
        (["a.md", 1, "2"], "line_end must be a positive integer", {"field": "line_end"}),
        (["a.md", 4, 3], "line_end is before line_start", {"field": "line_end"}),
        (["a.md", 6], "line_start 6 is past the end (5 lines)", {"field": "line_start"}),
        (["a.md", 6, 9], "line_start 6 is past the end (5 lines)", {"field": "line_start"}),
        (["empty.md", 2], "line_start 2 is past the end (1 lines)", {"field": "line_start"}),
    ],
)  # fmt: skip
def test_a_bad_read_is_invalid_params_saying_what_was_wrong(kb, params, message, data):
    assert error(kb, *params) == {"code": -32602, "message": message, "data": data}


def test_a_file_over_the_size_limit_is_refused_not_read(kb):
    rpc, root = kb
    assert (root / "edge.md").stat().st_size == 1_000_000
    rpc.call("workspace.configure", ["v", {"max_file_mb": 1}])
    try:
        got = error(kb, "big.md")
        assert got["code"] == -32602 and got["data"] == {"path": "big.md"}
        assert got["message"] == "cannot read big.md: file too large (2.0 MB)"
        assert error(kb, "over.md")["message"] == "cannot read over.md: file too large (1.0 MB)"
        assert read(kb, "edge.md", 1, 1)["text"] == "# E"  # at the limit: read
    finally:
        rpc.call("workspace.configure", ["v", {"max_file_mb": 10}])
    assert read(kb, "big.md", 1, 1)["text"] == "# Big"


def test_bytes_that_are_not_utf8_are_read_as_replacement_characters(kb):
    got = read(kb, "latin1.md")
    assert got["text"] == "# Caf\ufffd\n\nna\ufffdve bytes" and got["lines_total"] == 3


def test_the_root_is_compared_by_path_not_by_string(tmp_path):
    root = tmp_path / "vault"
    write(root, "a.md", "x")
    write(tmp_path, "vault2/a.md", "outside")
    assert read_inside(root, "a.md", 100) == (b"x", "a.md")
    with pytest.raises(OutsideRoot):
        read_inside(root, "../vault2/a.md", 100)  # shares the root's name as a prefix
    with pytest.raises(RpcError, match="relative"):
        checked_path("/etc/hostname")


names = st.sampled_from(["a.md", "sub/b.md", "empty.md", "escape.md", "../x.md", "sub", ""])
lines = st.one_of(st.none(), st.integers(-3, 9), st.booleans(), st.floats(), st.text(max_size=3))


@settings(
    max_examples=long_count(300, 5000),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(path=names, start=lines, end=lines)
def test_any_span_of_a_real_file_answers_or_is_invalid_params(kb, path, start, end):
    """Structured fuzzing: real paths and every kind of line value, not only random JSON."""
    try:
        got = read(kb, path, start, end)
    except RpcError as exc:
        assert exc.code == -32602, exc.to_dict()
        return
    assert 1 <= got["line_start"] <= got["line_end"] <= got["lines_total"]
    assert "secret" not in got["text"]


@pytest.mark.parametrize("query", ["lease recovery", "type:adr", "lease type:adr"])
def test_a_search_reads_the_store_in_one_snapshot(rpc, vault, monkeypatch, query):
    """The facet schema the query is read with, the filter, every stage and the rows shown
    come from one read transaction: a schema or a document written meanwhile is seen by all of
    them or by none (a filters-only query browses in that snapshot too)."""
    write(vault, "_schema/frontmatter.yaml", "common:\n  type: string\n")
    write(vault, "adr/1.md", "---\ntype: adr\n---\n# Lease recovery\n\nThe lease recovery rule.\n")
    lexical_workspace(rpc, vault)
    opened = []
    real = Store.snapshot

    def counted(self):
        opened.append(1)
        return real(self)

    monkeypatch.setattr(Store, "snapshot", counted)
    answer = rpc.call("search.query", ["v", query, {"stages": ["lexical"]}])
    assert answer["hits"] and len(opened) == 1
