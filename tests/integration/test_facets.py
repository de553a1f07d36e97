"""Frontmatter-schema facets and the query grammar (spec §6), and `autodoc check`.

Unit tests for the schema and the parser; engine tests on small vaults (reloading, browsing,
the semantic stage under a narrow filter); and the grammar and `check` over the real ADR corpus
with tests/fixtures/adr-frontmatter.yaml.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

from autodoc.parse import frontmatter_schema
from autodoc.parse.frontmatter_schema import SchemaError
from autodoc.parse.query_parser import FacetToken, parse_query
from autodoc.parse.schema_file import parse_schema
from autodoc.query import facet_filter
from autodoc.serve.cli.main import main
from autodoc.wire.errors import RpcError

from ..conftest import REPO, corpus, corpus_workspace, lexical_workspace, write

ADR_SCHEMA = REPO / "tests" / "fixtures" / "adr-frontmatter.yaml"


def search(rpc, ws, query, **opts):
    return rpc.call("search.query", [ws, query, opts])


def rpc_error(fn, *args, **kwargs) -> RpcError:
    with pytest.raises(RpcError) as info:
        fn(*args, **kwargs)
    return info.value


# -- the schema ---------------------------------------------------------------------------------

SCHEMA = """\
common:
  title: string
  reviewed: boolean
  weight: number
types:
  adr:
    status: {type: enum, values: [proposed, accepted, superseded], required: true}
    number: integer
    date: date
  meeting:
    attendees: list
    status: [planned, held]
match:
  adr: ["decisions/*.md"]
"""


def test_a_schema_declares_typed_facets():
    schema = parse_schema(SCHEMA)
    assert schema.facets["status"].type == "enum"
    # One name, two enums: a filter accepts the values of both.
    assert schema.facets["status"].values == (
        "proposed",
        "accepted",
        "superseded",
        "planned",
        "held",
    )
    assert schema.facets["number"].type == "integer" and schema.types["adr"]["status"].required
    assert schema.facets["type"].values == ("adr", "meeting")  # the type field is a facet too
    assert "tag" in schema.facets  # always: frontmatter tags and inline #tags
    assert schema.type_of("decisions/0001.md", {}) == "adr"  # by path
    assert schema.type_of("notes/x.md", {"type": "Meeting"}) == "meeting"  # by field
    assert frontmatter_schema.Schema.from_json(schema.to_json()).to_json() == schema.to_json()


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("common:\n  a: string\n  b: strng\n", 3, "unknown type 'strng'"),
        ("common:\n  a: string\n nope: [\n", 3, "not valid YAML"),
        ("types:\n  adr:\n    status: {type: enum}\n", 3, "an enum needs values"),
        ("types:\n  adr:\n    n: {type: integer, values: [1]}\n", 3, "values are for an enum"),
        ("common:\n  x: string\nextra: 1\n", 3, "unknown section 'extra'"),
        ("common:\n  tag: string\n", 2, "reserved for tags"),
        ("types:\n  adr: {}\nmatch:\n  rfc: ['*.md']\n", 4, "match names type 'rfc'"),
        ("common:\n  a: {type: string, required: maybe}\n", 2, "required must be true or false"),
        ("- just\n- a list\n", 1, "must be a mapping"),
    ],
)
def test_a_bad_schema_names_its_line(text, line, words):
    with pytest.raises(SchemaError) as info:
        parse_schema(text)
    assert info.value.line == line and words in info.value.message


def test_one_field_name_has_one_kind_of_value():
    with pytest.raises(SchemaError, match=r"is a integer in types\.b but a string in common"):
        parse_schema("common:\n  n: string\ntypes:\n  b:\n    n: integer\n")


def test_values_are_coerced_to_the_declared_type():
    schema = parse_schema(SCHEMA)

    def value(name, raw):
        m = facet_filter.coerce(schema, name, raw, source="query")
        return m.value + ("*" if m.prefix else "")

    assert value("number", "007") == "7"
    assert value("weight", "2.50") == "2.5" and value("weight", "3") == "3"
    assert value("reviewed", "yes") == "true" and value("reviewed", "FALSE") == "false"
    assert value("date", "2024-3-5") == "2024-03-05"
    assert value("date", "2024-03") == "2024-03*" and value("date", "2024") == "2024*"
    assert value("status", "Accepted") == "accepted"
    assert value("title", "  Two   Words ") == "two words"
    for name, raw in [("number", "1.5"), ("reviewed", "perhaps"), ("date", "2024-02-30"),
                      ("date", "March"), ("status", "bogus"), ("weight", "heavy")]:  # fmt: skip
        with pytest.raises(RpcError) as info:
            facet_filter.coerce(schema, name, raw, source="query")
        err = info.value
        assert err.code == -32602 and err.data["field"] == name and err.data["value"] == raw


def test_stored_values_are_normalised_like_queries():
    schema = parse_schema(SCHEMA)
    meta = {"Status": "Accepted", "number": 7, "weight": 2.0, "reviewed": True,
            "date": "2024-03-05T10:00:00", "title": "A  Title", "other": "x"}  # fmt: skip
    rows = frontmatter_schema.document_facets(
        schema, "decisions/1.md", meta, ["project/autodoc", "db"]
    )
    assert set(rows) == {
        ("status", "accepted"), ("number", "7"), ("weight", "2"), ("reviewed", "true"),
        ("date", "2024-03-05"), ("title", "a title"), ("type", "adr"),
        ("tag", "db"), ("tag", "project"), ("tag", "project/autodoc"),
    }  # fmt: skip


# -- the grammar --------------------------------------------------------------------------------


def test_facet_tokens_are_stripped_and_undeclared_ones_stay_words():
    declared = {"status", "type", "tag"}
    q = parse_query(
        'lease recovery type:adr -status:superseded tag:"two words" foo:bar', declared.__contains__
    )
    assert [i.text for i in q.items] == ["lease", "recovery", "foo:bar"]
    assert q.facets == [
        FacetToken("type", "adr"),
        FacetToken("status", "superseded", negated=True),
        FacetToken("tag", "two words"),
    ]
    assert q.text == "lease recovery foo:bar"  # what the semantic stage embeds
    # Inside a phrase a facet is words; an empty value is words (still being typed).
    assert parse_query('"type:adr lease" status:', declared.__contains__).facets == []


# -- engine: a small vault --------------------------------------------------------------------


@pytest.fixture
def kb(rpc, vault):
    write(vault, "_schema/frontmatter.yaml", SCHEMA)
    for i in range(1, 7):
        status = ["accepted", "proposed", "superseded"][i % 3]
        write(
            vault,
            f"decisions/{i:04}.md",
            f"---\nstatus: {status}\nnumber: {i}\ndate: 2024-0{i}-01\ntags: [storage]\n---\n"
            f"# Decision {i}\n\nLease recovery for the storage writer, variant {i}.\n",
        )
    write(vault, "notes/meeting.md", "---\ntype: meeting\nstatus: held\n---\n# Sync\n\nLease "
          "recovery was discussed. #ops\n")  # fmt: skip
    write(vault, "notes/plain.md", "# Plain\n\nLease recovery without any frontmatter.\n")
    lexical_workspace(rpc, vault, "kb")
    return rpc


def paths(answer) -> list[str]:
    return sorted({h["path"] for h in answer["hits"]})


def test_each_grammar_form_filters(kb):
    assert paths(search(kb, "kb", "lease status:accepted")) == ["decisions/0003.md",
                                                                "decisions/0006.md"]  # fmt: skip
    assert paths(search(kb, "kb", "lease -status:accepted type:adr")) == [
        "decisions/0001.md", "decisions/0002.md", "decisions/0004.md", "decisions/0005.md"
    ]  # fmt: skip
    # One field's values OR together; different fields AND.
    either = search(kb, "kb", "lease status:accepted status:held")
    assert paths(either) == ["decisions/0003.md", "decisions/0006.md", "notes/meeting.md"]
    assert paths(search(kb, "kb", "lease status:accepted number:6")) == ["decisions/0006.md"]
    assert paths(search(kb, "kb", "lease number:006")) == ["decisions/0006.md"]  # coerced
    assert paths(search(kb, "kb", "lease date:2024-02")) == ["decisions/0002.md"]
    assert len(paths(search(kb, "kb", "lease date:2024"))) == 6
    assert paths(search(kb, "kb", "lease tag:ops")) == ["notes/meeting.md"]  # an inline #tag
    assert paths(search(kb, "kb", "lease -tag:storage")) == ["notes/meeting.md", "notes/plain.md"]
    assert paths(search(kb, "kb", 'lease type:"meeting"')) == ["notes/meeting.md"]
    answer = search(kb, "kb", "lease type:adr", facets={"number": [1, "2"]}, tags=["storage"])
    assert paths(answer) == ["decisions/0001.md", "decisions/0002.md"]
    assert answer["filter"] == {"include": {"type": ["adr"], "number": ["1", "2"],
                                            "tag": ["storage"]}}  # fmt: skip
    kept = search(kb, "kb", "lease", facets={"-status": ["superseded", "proposed"]},
                  paths=["decisions/"])  # fmt: skip
    assert paths(kept) == ["decisions/0003.md", "decisions/0006.md"]
    # The words that reach the index are the query minus its facets: no hit is for "status".
    assert search(kb, "kb", "status:accepted lease")["hits"][0]["highlights"]


def test_undeclared_fields_are_words_and_structured_ones_are_errors(kb):
    write(Path(kb.engine.workspace("kb").root), "notes/colour.md", "# Colours\n\ncolour red.\n")
    kb.call("index.run", ["kb"])
    assert paths(search(kb, "kb", "colour:red")) == ["notes/colour.md"]
    err = rpc_error(search, kb, "kb", "lease", facets={"colour": ["red"]})
    assert err.code == -32602 and err.data["field"] == "colour"
    err = rpc_error(search, kb, "kb", "lease", facets={"number": ["six"]})
    assert err.code == -32602 and err.data == {
        "field": "number", "value": "six", "source": "opts.facets"
    }  # fmt: skip
    err = rpc_error(search, kb, "kb", "lease status:bogus")  # declared inline: coerced, or said
    assert err.code == -32602 and err.data["field"] == "status" and "accepted" in err.message
    for bad in ({"facets": ["status"]}, {"tags": "x"}, {"facets": {"": [1]}}):
        assert rpc_error(search, kb, "kb", "lease", **bad).code == -32602


def test_a_query_of_facets_only_browses_files_in_path_order(kb):
    answer = search(kb, "kb", "type:adr -status:proposed", limit=3)
    assert answer["mode_used"] == "facet" and answer["matched"] == 4
    assert [h["path"] for h in answer["hits"]] == [
        "decisions/0002.md", "decisions/0003.md", "decisions/0005.md"
    ]  # fmt: skip
    # Each file once, shown by its first section.
    assert all(h["via"] == ["facet"] and h["breadcrumb"].startswith("Decision ") for h in
               answer["hits"])  # fmt: skip
    assert answer["stages"]["performed"] == [] and set(answer["stages"]["skipped"]) == {
        "lexical", "semantic", "rerank"
    }  # fmt: skip
    assert search(kb, "kb", "", tags=["ops"])["mode_used"] == "facet"  # structured only: same
    assert search(kb, "kb", "status:held")["hits"][0]["path"] == "notes/meeting.md"


def test_the_schema_reloads_and_a_bad_one_keeps_the_last_good_one(kb):
    root = Path(kb.engine.workspace("kb").root)
    schema = root / "_schema" / "frontmatter.yaml"
    schema.write_text(SCHEMA.replace("number: integer", "number: integer\n    owner: string"))
    write(root, "decisions/0007.md", "---\nstatus: accepted\nowner: Ana\n---\n# D7\n\nLease.\n")
    kb.call("index.run", ["kb"])
    assert paths(search(kb, "kb", "lease owner:ana")) == ["decisions/0007.md"]
    schema.write_text(SCHEMA + "  broken: [\n")  # malformed
    summary = kb.call("index.run", ["kb"])
    warning = next(w for w in summary["warnings"] if w["path"] == "_schema/frontmatter.yaml")
    assert warning["message"].startswith("line 15: not valid YAML")
    assert paths(search(kb, "kb", "lease owner:ana")) == ["decisions/0007.md"]  # still in force
    status = kb.call("index.status", ["kb"])
    assert any(p["kind"] == "schema" for p in status["problems"])
    schema.unlink()  # no schema: only tag: filters; owner:ana is words again
    kb.call("index.run", ["kb"])
    assert search(kb, "kb", "lease owner:ana")["filter"] == {}
    assert paths(search(kb, "kb", "lease tag:ops")) == ["notes/meeting.md"]


def test_a_schema_outside_the_root_via_the_option(rpc, vault, tmp_path):
    elsewhere = tmp_path / "schemas" / "kb.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("common:\n  team: [core, web]\n")
    write(vault, "a.md", "---\nteam: web\n---\n# A\n\nshared words\n")
    write(vault, "b.md", "---\nteam: core\n---\n# B\n\nshared words\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("workspace.configure", ["kb", {"embedding": "none", "schema": str(elsewhere)}])
    rpc.call("index.run", ["kb"])
    assert paths(search(rpc, "kb", "shared team:web")) == ["a.md"]


def test_configuring_a_schema_rebuilds_the_facets_before_it_answers(kb, tmp_path):
    """The issue's case: facets on a new schema's fields worked only after a re-index."""
    elsewhere = tmp_path / "schemas" / "kb.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(SCHEMA.replace("number: integer", "number: integer\n    owner: string"))
    write(Path(kb.engine.workspace("kb").root), "decisions/0001.md",
          "---\nstatus: proposed\nowner: Ana\n---\n# D1\n\nLease.\n")  # fmt: skip
    kb.call("index.run", ["kb"])
    assert search(kb, "kb", "lease owner:ana")["filter"] == {}  # not declared yet: words
    answer = kb.call("workspace.configure", ["kb", {"schema": str(elsewhere)}])
    loaded = answer["schema"]
    assert loaded["path"] == str(elsewhere) and loaded["error"] == ""
    assert {"owner", "status", "number"} <= set(loaded["fields"]) and "adr" in loaded["types"]
    assert loaded["facets_rebuilt"] == 8  # every live document
    assert answer["reindexed"] is None  # nothing re-chunked: the facets were rebuilt alone
    assert paths(search(kb, "kb", "lease owner:ana")) == ["decisions/0001.md"]  # at once
    elsewhere.write_text("common:\n  broken: [\n")
    answer = kb.call("workspace.configure", ["kb", {"schema": "_schema/frontmatter.yaml"}])
    assert answer["schema"]["error"] == "" and "owner" not in answer["schema"]["fields"]
    answer = kb.call("workspace.configure", ["kb", {"schema": str(elsewhere)}])
    assert answer["schema"]["error"].startswith("line 2: not valid YAML")
    assert answer["schema"]["facets_rebuilt"] == 0  # the previous schema stays in force
    assert "status" in answer["schema"]["fields"]


def test_a_narrow_facet_fills_the_limit_in_the_semantic_stage(rpc, vault):
    """3 of 203 documents pass the filter; semantic-only and hybrid still return all three."""
    write(vault, "_schema/frontmatter.yaml", "common:\n  status: [draft, accepted]\n")
    for i in range(200):
        body = f"# Deploy {i}\n\nDeployment pipeline step {i}.\n"
        write(vault, f"bulk/n{i:03}.md", f"---\nstatus: draft\n---\n{body}")
    for i in range(3):
        body = f"# Cake {i}\n\nA recipe for lemon cake {i}.\n"
        write(vault, f"rare/r{i}.md", f"---\nstatus: accepted\n---\n{body}")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])  # the bundled model
    for stages in (["semantic"], ["lexical", "semantic"]):
        answer = search(  # the stages' own order: a fixed fusion lists every hit
            rpc, "kb", "deployment pipeline status:accepted", stages=stages, limit=5, fusion="rrf"
        )
        assert paths(answer) == ["rare/r0.md", "rare/r1.md", "rare/r2.md"], stages
        assert all("semantic" in h["via"] for h in answer["hits"])
        assert answer["mode_used"] == ("semantic" if stages == ["semantic"] else "hybrid")


# -- the ADR corpus -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adr(tmp_path_factory):
    options = {"embedding": "none", "schema": str(ADR_SCHEMA)}
    rpc, root = corpus_workspace(tmp_path_factory, "adr", options)
    rpc.call("index.run", ["adr"])
    yield rpc, root, _frontmatter_truth(root)
    rpc.engine.close()


def _frontmatter_truth(root: Path) -> dict[str, dict]:
    """Each record's frontmatter, read here with PyYAML: what the filters must agree with."""
    out = {}
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if any(p.startswith(".") for p in rel.split("/")):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        meta = {}
        if text.startswith("---\n"):
            try:
                meta = yaml.safe_load(text[4 : text.find("\n---", 4)]) or {}
            except yaml.YAMLError:
                meta = {}
            except ValueError:  # a date PyYAML cannot build (ADR-45)
                meta = {}
        out[rel] = meta if isinstance(meta, dict) else {}
    return out


def _with_status(truth, *statuses) -> set[str]:
    return {p for p, m in truth.items() if str(m.get("status", "")).strip().lower() in statuses}


@pytest.mark.corpus
def test_adr_grammar_forms_agree_with_the_files(adr):
    rpc, _, truth = adr
    living = _with_status(truth, "living")
    assert len(living) == 92
    answer = search(rpc, "adr", "catalyst status:living", limit=100)
    assert answer["hits"] and {h["path"] for h in answer["hits"]} <= living
    excluded = search(rpc, "adr", "catalyst -status:living -status:final", limit=100)
    assert excluded["hits"] and not {h["path"] for h in excluded["hits"]} & (
        living | _with_status(truth, "final")
    )
    both = search(rpc, "adr", "status:withdrawn status:stagnant", limit=100)
    assert {h["path"] for h in both["hits"]} == _with_status(truth, "withdrawn", "stagnant")
    # type:adr is the path-matched type; type:"standards track" the field as written.
    track = {p for p, m in truth.items() if m.get("type") == "Standards Track"}
    answer = search(rpc, "adr", 'type:"standards track"', limit=100)
    assert answer["matched"] == len(track) and {h["path"] for h in answer["hits"]} <= track
    assert search(rpc, "adr", "type:adr", limit=1)["matched"] == 247
    # Coerced values: an integer record number, a year of a date.
    # ADR-45's frontmatter does not parse (date 2020-01-45): it has no facets to match.
    assert search(rpc, "adr", "adr:045", limit=5)["hits"] == []
    number = search(rpc, "adr", "adr:0102", limit=5)
    assert [h["path"] for h in number["hits"]] == [
        p for p, m in truth.items() if m.get("adr") == 102
    ]
    year = {p for p, m in truth.items() if str(m.get("date", "")).startswith("2023")}
    assert search(rpc, "adr", "date:2023", limit=1)["matched"] == len(year) > 10
    # tag: covers frontmatter tags (Hydra keeps its status there).
    accepted_tag = {p for p, m in truth.items() if "Accepted" in (m.get("tags") or [])}
    answer = search(rpc, "adr", "head protocol tag:accepted", limit=100)
    assert answer["hits"] and {h["path"] for h in answer["hits"]} <= accepted_tag


@pytest.mark.corpus
def test_adr_a_one_percent_facet_still_fills_the_limit(adr):
    """`status:stagnant` keeps 4 of 567 records (under 1% of the chunks): a filter applied
    after ranking would find almost none of them in the top 50; ours fills the limit."""
    rpc, _, truth = adr
    stagnant = _with_status(truth, "stagnant")
    with rpc.engine.store.snapshot() as conn:
        marks = ",".join("?" * len(stagnant))
        share = conn.execute(
            f"SELECT sum(d.path IN ({marks})) * 1.0 / count(*) FROM chunks c JOIN documents d"
            " ON d.id = c.document_id WHERE c.state = 1",
            sorted(stagnant),
        ).fetchone()[0]
    assert share < 0.01
    unfiltered = search(rpc, "adr", "the", limit=100)
    assert sum(h["path"] in stagnant for h in unfiltered["hits"][:50]) < 10
    filtered = search(rpc, "adr", "the status:stagnant", limit=10)
    assert len(filtered["hits"]) == 10 and {h["path"] for h in filtered["hits"]} <= stagnant


@pytest.mark.corpus
def test_adr_browsing_undeclared_and_invalid(adr):
    rpc, _, truth = adr
    withdrawn = sorted(_with_status(truth, "withdrawn"))
    answer = search(rpc, "adr", "status:withdrawn", limit=100)
    assert answer["mode_used"] == "facet" and [h["path"] for h in answer["hits"]] == withdrawn
    words = search(rpc, "adr", "consensus:raft", limit=5)  # `consensus` is not declared
    assert words["hits"] and words["filter"] == {} and words["mode_used"] == "lexical"
    err = rpc_error(lambda: search(rpc, "adr", "raft", facets={"consensus": ["raft"]}))
    assert err.code == -32602 and err.data["field"] == "consensus"
    err = rpc_error(lambda: search(rpc, "adr", "raft", facets={"status": ["finished"]}))
    assert err.code == -32602 and err.data["field"] == "status"


@pytest.mark.corpus
def test_autodoc_check_finds_the_real_problems_in_the_adr_corpus(tmp_path, capsys):
    root = corpus("adr")
    db = str(tmp_path / "check.db")
    code = main(["--db", db, "check", str(root), "--schema", str(ADR_SCHEMA), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    summary = report["summary"]
    assert summary["documents"] == 567 and summary["typed"] == 247
    findings = {(f["path"], f["line"], f["kind"]): f["message"] for f in report["findings"]}
    jab = "JabRef__jabref/docs/decisions/"
    assert "supersedes ADR-0045" in findings[(f"{jab}0057-allow-positional-input-file-argument.md",
                                             4, "enum")]  # fmt: skip
    assert ("decentraland__adr/content/ADR-45-entities-v4.md", 1, "frontmatter") in findings
    assert (f"{jab}0058-use-djl-for-embeddings.md", 2, "type") in findings  # nav_order: '0058'
    missing = [k for k in findings if k[2] == "required"]
    truth = _frontmatter_truth(root)
    no_status = [
        p for p, m in truth.items()
        if p.startswith(jab) and p.split("/")[-1].startswith("0") and "status" not in m
    ]  # fmt: skip
    assert len(missing) == len(no_status) > 50
    links = [f for f in report["findings"] if f["kind"] == "link"]
    assert len(links) > 100 and summary["by_kind"]["link"] == len(links)
    # Every link finding is real: the link is on that line and no file answers it.
    for f in links:
        text = (root / f["path"]).read_text(encoding="utf-8", errors="replace")
        target = re.search(r"'(.*)' does not resolve", f["message"]).group(1)
        assert target in unquote(text.splitlines()[f["line"] - 1])
        assert not (root / os.path.dirname(f["path"]) / target).is_file()
    # The text form: path:line: message, then the summary on stderr.
    code = main(["--db", db, "check", str(root)])
    out, err = capsys.readouterr()
    assert code == 1 and re.match(r"^\S+\.md:\d+: ", out) and "errors" in err


def test_check_passes_a_clean_vault_and_fails_on_each_kind(tmp_path, capsys):
    vault = tmp_path / "v"
    write(vault, "_schema/frontmatter.yaml", SCHEMA)
    write(vault, "decisions/0001.md", "---\nstatus: accepted\nnumber: 1\n---\n# One\n\n[[0002]]\n")
    write(vault, "decisions/0002.md", "---\nstatus: proposed\n---\n# Two\n\n![d](d.png)\n")
    write(vault, "decisions/d.png", "not really a png")
    db = str(tmp_path / "s.db")
    assert main(["--db", db, "check", str(vault)]) == 0
    capsys.readouterr()
    write(vault, "decisions/0003.md", "---\nnumber: three\n---\n# Three\n\n[x](missing.md)\n")
    write(vault, "notes/n.md", "---\nreviewed: maybe\nweight: [1]\n---\n# N\n")
    assert main(["--db", db, "check", str(vault)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "decisions/0003.md:1: missing required field 'status' (type adr)",
        "decisions/0003.md:2: number: expected an integer, got 'three'",
        "decisions/0003.md:6: link to 'missing.md' does not resolve",
        "notes/n.md:2: reviewed: expected true or false, got 'maybe'",
        "notes/n.md:3: weight: expected a number, got a list",
    ]


def test_check_reports_the_same_problems_on_every_run(tmp_path, capsys):
    """Parse problems of unchanged files stand: a CI gate fails on the second run too, after a
    touch (new mtime, same bytes), and after a save that re-reads the same content."""
    vault = tmp_path / "v"
    write(vault, "_schema/frontmatter.yaml", SCHEMA)
    write(vault, "decisions/0001.md", "---\nstatus: [unclosed\n---\n# One\n")
    (vault / "notes").mkdir()
    (vault / "notes" / "latin1.md").write_bytes(b"# Caf\xe9\n\ntext\n")
    write(vault, "notes/fine.md", "# Fine\n")
    db = str(tmp_path / "s.db")

    def run() -> tuple[int, list[dict]]:
        code = main(["--db", db, "check", str(vault), "--json"])
        findings = json.loads(capsys.readouterr().out)["findings"]
        return code, [(f["path"], f["kind"], f["severity"]) for f in findings]

    first = run()
    assert first[0] == 1
    main(["--db", db, "index", str(vault)])  # the summary says the stored warnings stand
    assert "0 warnings (and 2 from unchanged files: autodoc check lists them)" in (
        capsys.readouterr().out
    )
    assert ("decisions/0001.md", "frontmatter", "error") in first[1]
    assert ("notes/latin1.md", "warning", "warning") in first[1]
    assert run() == first
    os.utime(vault / "decisions" / "0001.md", ns=(1, 1))  # touched: read again, same bytes
    assert run() == first
    from autodoc.engine import Engine

    engine = Engine(db)
    try:
        engine.indexing.index_paths("v", ["decisions/0001.md", "notes/latin1.md", "notes/fine.md"])
    finally:
        engine.close()
    assert run() == first
    write(vault, "decisions/0001.md", "---\nstatus: accepted\n---\n# One\n")  # mended
    code, findings = run()
    assert code == 0  # the latin-1 note is a warning: it does not fail the gate
    assert ("decisions/0001.md", "frontmatter", "error") not in findings
    assert ("notes/latin1.md", "warning", "warning") in findings
