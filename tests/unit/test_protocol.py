"""The wire schema: every answer the sidecar sends is exactly its `protocol.py` type (every
required key, no other, each of its type), and `lua/autodoc/types.lua` is generated from it."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from pydantic import ValidationError

from autodoc.serve.dispatcher import Dispatcher
from autodoc.serve.host.serving import Host
from autodoc.wire import protocol, schema_views
from autodoc.wire.errors import RpcError

from ..conftest import REPO, STAGE_SETS, fake_openai_engine, write
from ..fake_openai import FakeOpenAI
from ..fake_rankers import FakeRanker

API_VAULT = REPO / "tests" / "fixtures" / "api-vault"
SCHEMA = "common:\n  status: [accepted, superseded]\n"


@pytest.fixture(scope="module")
def wired(tmp_path_factory):
    """A workspace with every stage available: embeddings and a ranker on local servers."""
    base = tmp_path_factory.mktemp("wire")
    root = base / "vault"
    shutil.copytree(API_VAULT, root)
    write(root, "_schema/frontmatter.yaml", SCHEMA)
    write(root, "adr/0001-use-leases.md", "---\nstatus: accepted\n---\n# Use leases\n\nA lease.\n")
    write(root, "adr/0002-drop-leases.md", "---\nstatus: superseded\nsuperseded_by: 0003\n---\n"
          "# Drop leases\n\nNo lease.\n")  # fmt: skip
    with FakeOpenAI(dim=32) as embedder, FakeRanker("tei") as ranker:
        engine = fake_openai_engine(base / "store" / "autodoc.db", root, embedder.url)
        spec = {"provider": "tei", "base_url": ranker.url, "model": "rr", "window": 10}
        engine.workspaces.workspace_configure("v", {"ranker": spec})
        engine.indexing.index_run("v")
        yield Dispatcher(engine), root
        engine.close()


QUERIES = [
    ("passkey challenge", {}),
    ("passkey", {"stages": ["lexical", "semantic", "rerank"]}),
    ("status:accepted", {}),  # filters only: browsing
    ("lease", {"paths": ["adr/"], "facets": {"-status": ["superseded"]}}),
    ("Use leases", {}),  # a document's title: pinned first as `exact`
    ("*** !!!", {}),
]


@pytest.mark.parametrize("stages", [*STAGE_SETS, ["lexical", "semantic", "rerank"]])
@pytest.mark.parametrize("text, opts", QUERIES)
def test_every_search_answer_is_exactly_an_answer(wired, stages, text, opts):
    rpc, _ = wired
    answer = rpc.call("search.query", ["v", text, {**opts, "stages": stages}])
    protocol.conform(answer, protocol.Answer)


def test_the_other_answers_are_exactly_their_types(wired):
    rpc, root = wired
    protocol.conform(rpc.call("search.find", ["v", "auth"]), protocol.FindAnswer)
    protocol.conform(rpc.call("doc.read", ["v", "api/auth.md", 2, 4]), protocol.Span)
    protocol.conform(rpc.call("changes.since", ["v", 0]), protocol.Changes)
    for entry in rpc.call("workspace.list"):
        protocol.conform(entry, protocol.WorkspaceInfo)
    protocol.conform(rpc.engine.reading.semantic_state("v"), protocol.StageState)
    protocol.conform(rpc.call("index.status", ["v"]), protocol.IndexStatus)
    protocol.conform(rpc.call("workspace.add", ["v", str(root)]), protocol.WorkspaceAdded)
    with pytest.raises(RpcError) as err:
        rpc.call("doc.read", ["v", "../outside.md"])
    protocol.conform(err.value.to_dict(), protocol.ErrorObject)


def test_every_server_status_is_one_shape_served_workspaces_first(wired, tmp_path):
    """`autodoc.status`, the MCP `status` tool and `autodoc/indexReady` are `Host.status()`:
    the workspaces this process serves first, then the rest of the store, marked as such."""
    rpc, root = wired
    other = tmp_path / "a-other"
    other.mkdir()
    (other / "note.md").write_text("# Other\n\nA note.\n")
    rpc.call("workspace.add", ["a-other", str(other)])
    host = Host(rpc.engine, watch=False)
    sent: list[tuple[str, Any]] = []
    host.notify = lambda event, params: sent.append((event, params))
    try:
        host.open(root).result(timeout=60)
        status = host.status()
        protocol.conform(status, protocol.Status)
        assert [(w["name"], w["served"], w["indexing"]) for w in status["workspaces"]] == [
            ("v", True, "ready"),
            ("a-other", False, "not refreshed by this server"),
        ]
        assert status["server"]["watching"] is False and status["refused"] == []
        (ready,) = [params for event, params in sent if event == "autodoc/indexReady"]
        assert ready == status
    finally:
        host.refresher.close()
        rpc.call("workspace.remove", ["a-other"])


@pytest.mark.parametrize(
    "change",
    [
        lambda a: a.update(extra=1),  # a key the schema does not have
        lambda a: a.pop("took_ms"),  # a required key missing
        lambda a: a["hits"][0].update(line_start="3"),  # a wrong type, nested
        lambda a: a.update(semantic="warm"),  # not one of the states
        lambda a: a["stages"].update(performed=["lexical", "bm25"]),
    ],
)
def test_conform_rejects_every_kind_of_difference(wired, change):
    rpc, _ = wired
    answer = rpc.call("search.query", ["v", "passkey"])
    protocol.conform(answer, protocol.Answer)
    change(answer)
    with pytest.raises(ValidationError):
        protocol.conform(answer, protocol.Answer)


def test_the_lua_types_are_generated_from_the_schema():
    committed = (REPO / "lua" / "autodoc" / "types.lua").read_text()
    assert committed == schema_views.lua(), (
        "run: python -m autodoc.wire.schema_views lua > lua/autodoc/types.lua"
    )
    for t in protocol.WIRE_TYPES:
        assert f"---@class autodoc.{t.__name__}" in committed
