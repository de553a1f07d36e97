"""Related sections: a section's neighbours from the stored vectors and the link graph, each
with its reason; the section itself (and by default its document) never among them."""

from __future__ import annotations

import shutil

import pytest

from autodoc.wire.errors import RpcError

from ..conftest import EXAMPLE_VAULT, write

SQLITE = "adr/0003-embedded-sqlite-store.md"
POSTGRES = "adr/0002-store-documents-in-postgres.md"
LEASE = "adr/0004-lease-recovery.md"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The sample vault with the bundled model's vectors, once for the module."""
    from autodoc.engine import Engine
    from autodoc.serve.dispatcher import Dispatcher

    root = tmp_path_factory.mktemp("related") / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    rpc = Dispatcher(Engine(root.parent / "store" / "autodoc.db"))
    rpc.call("workspace.add", ["v", str(root)])
    rpc.call("index.run", ["v"])
    yield rpc
    rpc.engine.close()


def test_a_known_neighbour_comes_first_with_its_reasons(sample):
    # The Decision section of the SQLite record (line 25): the Postgres record it supersedes
    # links to it (superseded_by) and is linked from it (supersedes), and is close in meaning.
    answer = sample.call("related", ["v", SQLITE, 25])
    assert (answer["line_start"], answer["line_end"]) == (23, 27)
    assert answer["breadcrumb"] == "ADR 0003: Embedded relational store › Decision"
    assert answer["semantic"] == "ready"
    first = answer["hits"][0]
    assert first["path"] == POSTGRES
    assert {"similar", "links here", "linked from here"} <= set(first["reasons"])
    assert 0.3 < first["similarity"] < 1.0 and first["score"] > first["similarity"] + 0.29
    assert SQLITE not in {h["path"] for h in answer["hits"]}  # its own document left out
    assert len({h["path"] for h in answer["hits"]}) == len(answer["hits"])  # one per document
    scores = [h["score"] for h in answer["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_the_section_itself_never_comes_back_and_its_document_can(sample):
    answer = sample.call("related", ["v", SQLITE, 25, {"include_self": True, "limit": 20}])
    spans = {(h["path"], h["line_start"]) for h in answer["hits"]}
    assert (SQLITE, 23) not in spans
    assert any(path == SQLITE for path, _ in spans)  # another section of it


def test_a_whole_document_and_links_alone(sample):
    whole = sample.call("related", ["v", LEASE])
    assert (whole["line_start"], whole["breadcrumb"]) == (1, "ADR 0004: Recovering a stale "
                                                             "writer lease")  # fmt: skip
    by_path = {h["path"]: h for h in whole["hits"]}
    assert "linked from here" in by_path[SQLITE]["reasons"]  # [[0003-embedded-sqlite-store]]
    assert "links here" in by_path["notes/meeting-2026-03-02.md"]["reasons"]


def test_without_vectors_only_links_relate_and_say_so(rpc, vault):
    write(vault, "a.md", "# A\n\nSee [[b]] for the rest.\n")
    write(vault, "b.md", "# B\n\nThe rest, and [[c]].\n")
    write(vault, "c.md", "# C\n\nUnrelated words.\n")
    write(vault, "d.md", "# D\n\nAlso [[c]].\n")
    rpc.call("workspace.add", ["v", str(vault)])
    rpc.call("workspace.configure", ["v", {"embedding": "none"}])
    rpc.call("index.run", ["v"])
    answer = rpc.call("related", ["v", "b.md", None])
    assert answer["semantic"].startswith("off")
    got = {h["path"]: (h["reasons"], h["similarity"], h["shared_links"]) for h in answer["hits"]}
    assert got == {
        "a.md": (["links here"], None, 0),
        "c.md": (["linked from here"], None, 0),
        "d.md": (["shares links"], None, 1),  # both link to c.md
    }
    # The section shown for "links here" is the one holding the link.
    a = next(h for h in answer["hits"] if h["path"] == "a.md")
    assert a["line_start"] <= 3 <= a["line_end"]


@pytest.mark.parametrize(
    "params, field",
    [
        (["v", "nope.md"], "path"),
        (["v", "../outside.md"], "path"),
        (["v", ""], "path"),
        (["v", SQLITE, 0], "line"),
        (["v", SQLITE, True], "line"),
        (["v", SQLITE, "3"], "line"),
        (["v", SQLITE, 3, {"limit": 0}], "limit"),
        (["v", SQLITE, 3, {"limit": 51}], "limit"),
        (["v", SQLITE, 3, {"include_self": 1}], "include_self"),
        (["v", SQLITE, 3, {"bogus": 1}], "bogus"),
        (["v", SQLITE, 3, []], "opts"),
    ],
)
def test_bad_requests_get_a_documented_error(sample, params, field):
    with pytest.raises(RpcError) as err:
        sample.call("related", params)
    assert err.value.code == -32602 and err.value.data["field"] == field
