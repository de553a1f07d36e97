"""The exact rules of facet filters (doc/facets.md, doc/errors.md): the error objects a bad
filter gets, what `filter` describes, how tags, paths and exclusions combine, browsing in path
order, the documents a filter keeps (and in which form the stages get them), and the schema's
stored JSON.

Engine tests run over one small vault; the kept-set tests fill a store's tables directly, since
the form changes only past 4,096 documents.
"""

from __future__ import annotations

import datetime as _dt
import time

import pytest
import yaml

from autodoc import store as store_reads
from autodoc.engine import Engine
from autodoc.index import facet_values
from autodoc.parse import frontmatter_schema
from autodoc.parse.frontmatter_schema import Schema, SchemaError
from autodoc.parse.schema_file import parse_schema
from autodoc.query import facet_filter
from autodoc.query.facet_filter import FacetFilter, Match
from autodoc.serve.dispatcher import Dispatcher
from autodoc.store import DocumentSet, Store
from autodoc.wire.errors import RpcError

from ..conftest import lexical_workspace, write

SCHEMA = """\
common:
  status: [draft, accepted, superseded]
  team: string
  date: date
  reviewed: boolean
  weight: number
types:
  adr:
    number: integer
match:
  adr: ["decisions/*"]
"""

# path -> frontmatter (every body has the word "lease")
DOCS = {
    "decisions/0001.md": "status: accepted\nteam: core\ndate: 2024-01-05\nnumber: 1\n"
    "tags: [storage]\nreviewed: true\nweight: 2.5",
    "decisions/0002.md": "status: draft\nteam: web\ndate: 2024-02-10\nnumber: 2\n"
    "tags: [storage, XML, X]",
    "decisions/zeta.md": "status: superseded\nteam: core\ndate: 2023-12-31",
    "notes/a.md": "status: accepted\nteam: web\nreviewed: false\nweight: 3",
    "notes/b.md": "",
}
LIBYAML = hasattr(yaml, "CSafeLoader")  # its messages for malformed YAML are its own
FACETS = ["date", "modified", "number", "reviewed", "status", "tag", "team", "type", "weight"]


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    """One vault for the module: the tests only read it."""
    vault = tmp_path_factory.mktemp("vault")
    rpc = Dispatcher(Engine(tmp_path_factory.mktemp("store") / "autodoc.db"))
    write(vault, "_schema/frontmatter.yaml", SCHEMA)
    for path, meta in DOCS.items():
        head = f"---\n{meta}\n---\n" if meta else ""
        write(vault, path, f"{head}# {path}\n\nLease recovery in {path}. #ops\n")
    lexical_workspace(rpc, vault, "kb")
    # Written after the others: a higher id than every file, but first in path order.
    write(vault, "decisions/0000.md", "---\nstatus: accepted\n---\n# Zero\n\nLease zero.\n")
    rpc.call("index.run", ["kb"])
    yield rpc
    rpc.engine.close()


def search(rpc, query, **opts):
    return rpc.call("search.query", ["kb", query, opts])


def hit_paths(answer) -> list[str]:
    return sorted({h["path"] for h in answer["hits"]})


def error(rpc, query, **opts) -> dict:
    """The error object a search gets (an enum's `allowed` as a list, as JSON carries it)."""
    with pytest.raises(RpcError) as info:
        search(rpc, query, **opts)
    err = info.value.to_dict()
    if "allowed" in err.get("data", {}):
        err["data"]["allowed"] = list(err["data"]["allowed"])
    return err


def invalid(message: str, **data) -> dict:
    return {"code": -32602, "message": message, "data": data}


# -- error objects ------------------------------------------------------------------------------

FACETS_SHAPE = invalid("facets must be an object of field: [values]", field="facets")
TAGS_SHAPE = invalid("tags must be a list of tag names", field="tags")


@pytest.mark.parametrize(
    "query, opts, expected",
    [
        ("lease", {"facets": ["status"]}, FACETS_SHAPE),
        ("lease", {"facets": {"": ["draft"]}}, FACETS_SHAPE),  # a key must name a field
        ("lease", {"tags": "ops"}, TAGS_SHAPE),
        ("lease", {"tags": [5]}, TAGS_SHAPE),
        ("lease", {"tags": ["#"]}, TAGS_SHAPE),  # no name once # and - are stripped
        ("lease", {"tags": ["-#"]}, TAGS_SHAPE),
        (
            "lease",
            {"facets": {"colour": ["red"]}},
            invalid("'colour' is not a declared facet", field="colour", facets=FACETS),
        ),
        (
            "lease number:six",
            {},
            invalid("number is an integer, not 'six'", field="number", value="six", source="query"),
        ),
        (
            "lease",
            {"facets": {"-number": ["six"]}},
            invalid(
                "number is an integer, not 'six'", field="number", value="six", source="opts.facets"
            ),
        ),
        (
            "lease date:March",
            {},
            invalid(
                "date is a date: YYYY-MM-DD, YYYY-MM or YYYY, not 'March'",
                field="date",
                value="March",
                source="query",
            ),
        ),
        (
            "lease",
            {"facets": {"reviewed": ["perhaps"]}},
            invalid(
                "reviewed is a boolean: true or false, not 'perhaps'",
                field="reviewed",
                value="perhaps",
                source="opts.facets",
            ),
        ),
        (
            "lease",
            {"facets": {"weight": ["heavy"]}},
            invalid(
                "weight is a number, not 'heavy'",
                field="weight",
                value="heavy",
                source="opts.facets",
            ),
        ),
        (
            "lease",
            {"facets": {"weight": [True]}},
            invalid(
                "weight is a number, not True", field="weight", value=True, source="opts.facets"
            ),
        ),
        (
            "lease",
            {"facets": {"number": [True]}},
            invalid(
                "number is an integer, not True", field="number", value=True, source="opts.facets"
            ),
        ),
        (
            "lease",
            {"facets": {"number": [1.5]}},
            invalid(
                "number is an integer, not 1.5", field="number", value=1.5, source="opts.facets"
            ),
        ),
        (
            "lease",
            {"facets": {"status": [["draft"]]}},
            invalid(
                "status: a facet value must be a single value",
                field="status",
                value=["draft"],
                source="opts.facets",
            ),
        ),
        (
            "lease",
            {"facets": {"-team": [None]}},
            invalid(
                "team: a facet value must be a single value",
                field="team",
                value=None,
                source="opts.facets",
            ),
        ),
        (
            "lease",
            {"tags": ["# "]},  # a name of blanks: no value once normalised
            invalid("tag: empty value", field="tag", value=" ", source="opts.tags"),
        ),
        (
            "lease",
            {"facets": {"status": "bogus"}},
            invalid(
                "status is one of draft, accepted, superseded, not 'bogus'",
                field="status",
                value="bogus",
                source="opts.facets",
                allowed=["draft", "accepted", "superseded"],
            ),
        ),
    ],
)
def test_a_bad_filter_is_one_exact_error(kb, query, opts, expected):
    assert error(kb, query, **opts) == expected


# -- what a filter keeps, and how it says so ---------------------------------------------------


@pytest.mark.parametrize(
    "query, opts, kept, described",
    [
        # One value instead of a list.
        ("lease", {"facets": {"status": "accepted"}}, ["decisions/0000.md", "decisions/0001.md",
         "notes/a.md"], {"include": {"status": ["accepted"]}}),
        ("lease", {"facets": {"number": 2}}, ["decisions/0002.md"], {"include": {"number": ["2"]}}),
        # Values as their fields store them.
        ("lease", {"facets": {"number": [2.0]}}, ["decisions/0002.md"],
         {"include": {"number": ["2"]}}),
        ("lease", {"facets": {"reviewed": [False]}}, ["notes/a.md"],
         {"include": {"reviewed": ["false"]}}),
        ("lease reviewed:no", {}, ["notes/a.md"], {"include": {"reviewed": ["false"]}}),
        ("lease reviewed:on", {}, ["decisions/0001.md"], {"include": {"reviewed": ["true"]}}),
        ("lease weight:2.50 weight:3.0", {}, ["decisions/0001.md", "notes/a.md"],
         {"include": {"weight": ["2.5", "3"]}}),
        ("lease weight:inf", {}, [], {"include": {"weight": ["inf"]}}),  # no value is infinite
        # Tags: `-name` excludes, a leading # is not part of the name (its case is folded).
        ("lease", {"tags": ["-storage"]}, ["decisions/0000.md", "decisions/zeta.md", "notes/a.md",
         "notes/b.md"], {"exclude": {"tag": ["storage"]}}),
        ("lease", {"tags": ["#XML"]}, ["decisions/0002.md"], {"include": {"tag": ["xml"]}}),
        ("lease", {"tags": ["X"]}, ["decisions/0002.md"], {"include": {"tag": ["x"]}}),
        ("lease", {"tags": ["-#X", "ops"]}, ["decisions/0001.md", "decisions/zeta.md",
         "notes/a.md", "notes/b.md"], {"include": {"tag": ["ops"]}, "exclude": {"tag": ["x"]}}),
        # A year or a month takes every date under it.
        ("lease date:2024", {}, ["decisions/0001.md", "decisions/0002.md"],
         {"include": {"date": ["2024*"]}}),
        ("lease date:2023-12", {}, ["decisions/zeta.md"], {"include": {"date": ["2023-12*"]}}),
        # Paths are prefixes, whatever follows them.
        ("lease", {"paths": ["decisions/"]}, ["decisions/0000.md", "decisions/0001.md",
         "decisions/0002.md", "decisions/zeta.md"], {"paths": ["decisions/"]}),
        # Paths AND the other conditions.
        ("lease status:accepted", {"paths": ["notes/"]}, ["notes/a.md"],
         {"include": {"status": ["accepted"]}, "paths": ["notes/"]}),
        ("lease", {"facets": {"team": ["web"]}, "paths": ["decisions/", "notes/b"]},
         ["decisions/0002.md"], {"include": {"team": ["web"]}, "paths": ["decisions/", "notes/b"]}),
        # Every excluded field drops its documents.
        ("lease -status:draft -team:core", {}, ["decisions/0000.md", "notes/a.md", "notes/b.md"],
         {"exclude": {"status": ["draft"], "team": ["core"]}}),
        ("lease", {"facets": {"-team": ["web"], "-status": "superseded"}},
         ["decisions/0000.md", "decisions/0001.md", "notes/b.md"],
         {"exclude": {"team": ["web"], "status": ["superseded"]}}),
    ],
)  # fmt: skip
def test_a_filter_keeps_exactly_and_describes_itself(kb, query, opts, kept, described):
    answer = search(kb, query, **opts)
    assert hit_paths(answer) == kept
    assert answer["filter"] == described
    browsed = search(kb, query.replace("lease", "").strip(), **opts, limit=20)
    assert browsed["mode_used"] == "facet" and browsed["matched"] == len(kept)
    assert [h["path"] for h in browsed["hits"]] == kept  # in path order


def test_browsing_exclusions_only_lists_the_rest_in_path_order(kb):
    answer = search(kb, "-status:accepted", limit=2)
    assert answer["matched"] == 3 and answer["filter"] == {"exclude": {"status": ["accepted"]}}
    assert [h["path"] for h in answer["hits"]] == ["decisions/0002.md", "decisions/zeta.md"]
    answer = search(kb, "", tags=["-storage"], limit=3)
    assert answer["matched"] == 4
    assert [h["path"] for h in answer["hits"]] == [
        "decisions/0000.md",
        "decisions/zeta.md",
        "notes/a.md",
    ]


def _browse(kb, query: str, limit: int, **opts) -> tuple[list[str], int]:
    """FacetFilter.browse itself: (the paths of the ids it returns, how many pass)."""
    ws = kb.engine.workspace("kb")
    store = kb.engine.store
    with store.snapshot() as conn:
        schema = store_reads.stored_schema(conn, ws.id)
        inline = [(f, v, False) for f, v in (t.split(":") for t in query.split())]
        flt = facet_filter.build_filter(schema, inline, opts.get("facets"), opts.get("tags"))
        ids, matched = flt.browse(conn, ws.id, limit)
        by_id = dict(conn.execute("SELECT id, path FROM documents WHERE deleted = 0"))
    return [by_id[i] for i in ids], matched


@pytest.mark.parametrize(
    "query, opts, limit, expected",
    [
        ("status:accepted", {}, 2, (["decisions/0000.md", "decisions/0001.md"], 3)),
        ("status:accepted", {}, 3, (["decisions/0000.md", "decisions/0001.md", "notes/a.md"], 3)),
        ("", {"facets": {"-status": ["accepted"]}}, 1, (["decisions/0002.md"], 3)),
        ("", {"facets": {"-status": ["accepted"]}}, 2, (["decisions/0002.md",
         "decisions/zeta.md"], 3)),
        ("", {"facets": {"-status": ["accepted"]}}, 5, (["decisions/0002.md", "decisions/zeta.md",
         "notes/b.md"], 3)),
        ("", {"tags": ["-ops"]}, 5, (["decisions/0000.md"], 1)),
    ],
)  # fmt: skip
def test_browse_takes_the_first_passing_documents_in_path_order(kb, query, opts, limit, expected):
    assert _browse(kb, query, limit, **opts) == expected


def test_a_document_found_by_its_name_still_obeys_the_filter(kb):
    """The exact-name hit (a title typed whole) goes through the kept set too."""
    assert hit_paths(search(kb, "Zero")) == ["decisions/0000.md"]
    assert hit_paths(search(kb, "Zero -status:accepted")) == []
    assert hit_paths(search(kb, "Zero type:adr")) == ["decisions/0000.md"]


# -- the kept set: its ids, or the dropped ones when most pass -------------------------------


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """A store with workspace 1 of 8,194 documents (4,097 in group a, 903 in b, 3,194 in c)
    and workspace 2 of 4,097 (4,096 in a, 1 in b), plus a deleted document in each; the
    facet rows are written by write_facets from each document's frontmatter."""
    store = Store(tmp_path_factory.mktemp("big") / "big.db")
    schema = parse_schema("common:\n  group: string\n")
    groups = {}
    with store.transaction() as conn:
        for ws_id, counts in ((1, {"a": 4097, "b": 903, "c": 3194}), (2, {"a": 4096, "b": 1})):
            conn.execute(
                "INSERT INTO workspaces(id, name, root, options, created_at) VALUES (?,?,?,?,?)",
                (ws_id, f"w{ws_id}", f"/w{ws_id}", "{}", time.time()),
            )
            docs = [(g, f"{g}/{i:05}.md") for g, n in counts.items() for i in range(n)]
            docs.append(("a", "gone.md"))
            rows = []
            for group, path in docs:
                cur = conn.execute(
                    "INSERT INTO documents(workspace_id, path, deleted, meta, tags) "
                    "VALUES (?, ?, ?, ?, '[]')",
                    (ws_id, path, int(path == "gone.md"), f'{{"group": "{group}"}}'),
                )
                if path != "gone.md":
                    groups.setdefault((ws_id, group), set()).add(cur.lastrowid)
                    rows.append((cur.lastrowid, path, {"group": group}, []))
            facet_values.write_facets(conn, ws_id, schema, rows)
    yield store, groups
    store.close()


def _kept(store, ws_id: int, *include: str, exclude: tuple[str, ...] = ()) -> DocumentSet:
    flt = FacetFilter()
    for g in include:
        flt.add("group", Match(g), False)
    for g in exclude:
        flt.add("group", Match(g), True)
    with store.snapshot() as conn:
        return flt.select(conn, ws_id)


def test_most_of_a_big_workspace_passing_goes_to_the_stages_as_the_dropped(big_store):
    store, groups = big_store
    kept = _kept(store, 1, "a", "b")  # 5,000 of 8,194: over half and over 4,096
    assert kept == DocumentSet(5000, keep=None, drop=groups[1, "c"])
    assert all(i in kept for i in groups[1, "a"] | groups[1, "b"])
    assert not any(i in kept for i in groups[1, "c"])
    # Exclusions only: always the dropped.
    assert _kept(store, 1, exclude=("c",)) == DocumentSet(5000, drop=groups[1, "c"])
    assert _kept(store, 2, exclude=("a", "b")) == DocumentSet(0, drop=groups[2, "a"] |
                                                              groups[2, "b"])  # fmt: skip


@pytest.mark.parametrize(
    "ws_id, groups_in, why",
    [
        (1, ("a",), "4,097 of 8,194: exactly half, not more"),
        (2, ("a",), "4,096 of 4,097: over half, but not over 4,096"),
        (1, ("b",), "903 of 8,194"),
    ],
)
def test_a_kept_set_stays_the_kept_ids_unless_it_is_big_and_most(big_store, ws_id, groups_in, why):
    store, groups = big_store
    ids = set().union(*(groups[ws_id, g] for g in groups_in))
    assert _kept(store, ws_id, *groups_in) == DocumentSet(len(ids), keep=ids), why


def test_a_small_kept_set_of_most_documents_stays_the_kept_ids(kb):
    ws = kb.engine.workspace("kb")
    with kb.engine.store.snapshot() as conn:
        flt = facet_filter.build_filter(store_reads.stored_schema(conn, ws.id), [], tags=["-ops"])
        ids = {r[0] for r in conn.execute("SELECT id FROM documents WHERE deleted = 0")}
        zero = conn.execute("SELECT id FROM documents WHERE path = 'decisions/0000.md'").fetchone()
        assert flt.select(conn, ws.id) == DocumentSet(1, drop=ids - {zero[0]})
        flt = facet_filter.build_filter(store_reads.stored_schema(conn, ws.id), [], tags=["ops"])
        assert flt.select(conn, ws.id) == DocumentSet(5, keep=ids - {zero[0]})


@pytest.mark.parametrize(
    "kept, doc_id, expected",
    [
        (DocumentSet(1, keep={1}), 1, True),
        (DocumentSet(1, keep={1}), 2, False),
        (DocumentSet(2, drop={2}), 1, True),
        (DocumentSet(2, drop={2}), 2, False),
        (DocumentSet(3, drop=set()), 2, True),
    ],
)
def test_a_document_set_holds_its_kept_or_all_but_its_dropped(kept, doc_id, expected):
    assert (doc_id in kept) is expected


# -- the stored schema --------------------------------------------------------------------------


def test_the_stored_json_gives_back_the_same_schema():
    schema = parse_schema(
        "type_field: kind\ncommon:\n  team: string\ntypes:\n  adr:\n"
        "    status: {type: enum, values: [draft, final], required: true}\n"
        "match:\n  adr: ['decisions/*']\n"
    )
    again = Schema.from_json(schema.to_json())
    assert again.type_field == "kind"
    assert (
        again.facets
        == schema.facets
        == {
            "team": frontmatter_schema.Field("team", "string"),
            "status": frontmatter_schema.Field("status", "enum", ("draft", "final"), True),
            "kind": frontmatter_schema.Field("kind", "enum", ("adr",)),
            "tag": frontmatter_schema.Field("tag", "list"),
            "modified": frontmatter_schema.Field(
                "modified", frontmatter_schema.BUILT_IN
            ),  # every workspace has it
        }
    )
    assert again.types == schema.types and again.match == {"adr": ("decisions/*",)}
    assert again.type_of("x.md", {"kind": "ADR"}) == "adr"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("common:\n  team: string\n", {"team": ("string", ())}),  # no types: no type facet
        # Declared in common, the type field filters on its raw value.
        ("common:\n  type: string\ntypes:\n  adr: {}\n", {"type": ("string", ())}),
        ("types:\n  adr: {}\n  rfc: {}\n", {"type": ("enum", ("adr", "rfc"))}),
        # Type names, their aliases in any case, and specs.
        (
            "common:\n  a: str\n  b: Int\n  c: list[string]\n  d: BOOL\n  e: {type: Float}\n"
            "  f: {type: integer}\n  g: {values: [b, A, b]}\n  h: [2024-01-05, 7, yes]\n",
            {
                "a": ("string", ()),
                "b": ("integer", ()),
                "c": ("list", ()),
                "d": ("boolean", ()),
                "e": ("number", ()),
                "f": ("integer", ()),
                "g": ("enum", ("b", "a")),
                "h": ("enum", ("2024-01-05", "7", "true")),
            },
        ),
        ("common:\ntypes: ~\nmatch: null\ntype_field: kind\n", {}),  # empty sections
    ],
)
def test_each_declared_field_is_one_facet(text, expected):
    schema = parse_schema(text)
    want = {n: frontmatter_schema.Field(n, t, v) for n, (t, v) in expected.items()}
    built_in = {
        "tag": frontmatter_schema.Field("tag", "list"),
        "modified": frontmatter_schema.Field("modified", "file mtime"),
    }
    assert schema.facets == {**built_in, **want}


def test_a_type_comes_from_the_type_field_or_the_path():
    schema = parse_schema(
        "common:\n  team: string\ntypes:\n  adr:\n    n: integer\n  note: {}\n"
        "match:\n  adr: 'decisions/*'\n"
    )
    assert schema.match == {"adr": ("decisions/*",)}  # one glob for a list of one
    assert schema.type_of("x.md", {"type": ["Other", "NOTE"]}) == "note"  # a list: the first type
    assert schema.type_of("decisions/a/b.md", {"type": "other"}) == "adr"
    assert schema.type_of("x.md", {"type": "other"}) is None
    team = {"team": frontmatter_schema.Field("team", "string")}
    assert schema.fields_for("adr") == {**team, "n": frontmatter_schema.Field("n", "integer")}
    assert schema.fields_for(None) == schema.fields_for("nope") == team


SCHEMA_ERRORS = [
    ("common:\n  a: string\n  b: strng\n", 3,
     "common.b: unknown type 'strng' (one of string, integer, number, boolean, date, list, "
     "enum, link)"),
    ("common:\n  a: {type: strng}\n", 2,
     "common.a: unknown type 'strng' (one of string, integer, number, boolean, date, list, "
     "enum, link)"),
    ("types:\n  adr:\n    x: strng\n", 3, "types.adr.x: unknown type 'strng' (one of string, "
     "integer, number, boolean, date, list, enum, link)"),
    ("common:\n  a:\n    type: [string]\n", 3, "type must be a single value"),
    ("common:\n  a: {values: draft}\n", 2, "common.a: values must be a non-empty list"),
    ("common:\n  s:\n    type: enum\n    values: []\n", 4,
     "common.s: values must be a non-empty list"),
    ("common:\n  s: {type: enum, values: []}\n", 2, "common.s: values must be a non-empty list"),
    ("types:\n  adr:\n    s:\n      - a\n      - [b]\n", 5,
     "types.adr.s: enum values must be plain values"),
    ("common:\n  s: [a, {b: 1}]\n", 2, "common.s: enum values must be plain values"),
    ("common:\n  s: {type: string, type: integer}\n", 2, "'type' is declared twice in common.s"),
    ("common:\n  s:\n    type: string\n    colour:\n      - red\n    size: 1\n", 4,
     "common.s: unknown key 'colour' (type, values, required)"),
    ("common:\n  s: {required: true}\n", 2, "common.s needs a type"),
    ("common:\n  n:\n    type: integer\n    values:\n      - 1\n", 4,
     "common.n: values are for an enum, not a integer"),
    ("common:\n  s: {type: enum}\n", 2, "common.s: an enum needs values"),
    ("common:\n  a: {type: string, required: maybe}\n", 2,
     "common.a.required must be true or false"),
    ("common:\n  bad name: string\n", 2, "'bad name' is not a field name (letters, digits, _ . -)"),
    ("common:\n  Tag: string\n", 2, "'Tag' is reserved for tags (letters, digits, _ . -)"),
    ("type_field: bad name\n", 1, "'bad name' is not a field name (letters, digits, _ . -)"),
    ("\ntype_field: tag\n", 2, "'tag' is reserved for tags (letters, digits, _ . -)"),
    ("type_field: [a]\n", 1, "type_field must be a single value"),
    ("common: [a]\n", 1, "common must be a mapping"),
    ("common: x\n", 1, "common must be a mapping"),
    ("common:\n  a: string\n  a: integer\n", 3, "'a' is declared twice in common"),
    ("common:\n  ? [a, b]\n  : string\n", 2, "a key must be a single value"),
    ("types: [adr]\n", 1, "types must be a mapping"),
    ("match: [adr]\n", 1, "match must be a mapping"),
    ("types:\n  adr: {}\nmatch:\n  rfc: ['*.md']\n", 4,
     "match names type 'rfc', which types does not declare"),
    ("types:\n  adr: {}\nmatch:\n  adr: 5\n", 4, "match.adr must be a list of path globs"),
    ("types:\n  adr: {}\nmatch:\n  adr:\n    - '*.md'\n    - 5\n", 5,
     "match.adr must be a list of path globs"),
    ("types:\n  adr: {}\nmatch:\n  adr: ['']\n", 4, "match.adr must be a list of path globs"),
    ("- just\n- a list\n", 1, "the schema must be a mapping"),
    ("common:\n  x: string\nextra: 1\n", 3,
     "unknown section 'extra' (expected common, types, match, type_field)"),
    # One name, one kind: the line of the schema's first key.
    ("# the fields\n\ntypes:\n  a:\n    n: string\n  b:\n    n: integer\n", 3,
     "field 'n' is a integer in types.b but a string in types.a"),
    ("common:\n  n: string\ntypes:\n  b:\n    n: integer\n", 1,
     "field 'n' is a integer in types.b but a string in common"),
    # A reader error has no mark: line 1.
    ("common:\n  a: \x07\n", 1,
     "not valid YAML: unacceptable character #x0007: control characters are not allowed"
     if LIBYAML else
     "not valid YAML: unacceptable character #x0007: special characters are not allowed"),
    # A mark on a line of its own at the end: the last line.
    ("common: [\n", 1, "not valid YAML: did not find expected node content" if LIBYAML else
     "not valid YAML: expected the node content, but found '<stream end>'"),
    ("common:\n  a: string\n nope: x\nmore: 1\n", 3, "not valid YAML: did not find expected key"
     if LIBYAML else "not valid YAML: expected <block end>, but found '<block mapping start>'"),
]  # fmt: skip


@pytest.mark.parametrize("text, line, message", SCHEMA_ERRORS)
def test_a_bad_schema_gets_its_exact_line_and_message(text, line, message):
    with pytest.raises(SchemaError) as info:
        parse_schema(text)
    assert (info.value.line, info.value.message) == (line, message)
    assert str(info.value) == f"line {line}: {message}"


@pytest.mark.parametrize(
    "value, stored",
    [
        (None, None),
        ({"a": 1}, None),
        (["a"], None),
        (True, "true"),
        (False, "false"),
        (7, "7"),
        (2.0, "2"),
        (2.5, "2.5"),
        (float("nan"), None),
        (float("inf"), None),
        (float("-inf"), None),
        (_dt.date(2024, 1, 5), "2024-01-05"),
        (_dt.datetime(2024, 1, 5, 10, 30), "2024-01-05"),
        ("2024-03-05T10:00:00", "2024-03-05"),
        ("  Two \n Words ", "two words"),
        ("", None),
        ("x" * 200, "x" * 200),
        ("x" * 201, None),  # prose, not a value
    ],
)
def test_a_frontmatter_value_is_stored_canonical(value, stored):
    assert frontmatter_schema.canonical(value) == stored


def test_only_plain_values_of_declared_fields_become_facet_rows():
    schema = parse_schema(
        "common:\n  owner: string\n  team: string\n  weight: number\n  status: [a, b]\n"
    )  # no owner below: the fields after it still count
    meta = {"Team": {"core": 1}, "weight": float("nan"), "status": [["a"], "B", None], "x": "y"}
    assert frontmatter_schema.document_facets(schema, "n.md", meta, ["#Ops/Infra"]) == [
        ("status", "b"),
        ("tag", "ops"),
        ("tag", "ops/infra"),
    ]


def test_a_workspace_without_a_stored_schema_has_the_empty_one(kb):
    with kb.engine.store.snapshot() as conn:
        assert store_reads.stored_schema(conn, 999) is frontmatter_schema.EMPTY
        assert store_reads.stored_schema(conn, kb.engine.workspace("kb").id).to_json() == (
            parse_schema(SCHEMA).to_json()
        )


# -- the facet table, written and rebuilt -----------------------------------------------------


def test_a_schema_change_rebuilds_every_documents_facets_in_declaration_order(rpc, vault):
    """Two types whose globs both take docs/: the first declared wins, on the run that loads
    the schema and on every later one (the stored schema keeps the order); a schema change
    rewrites every document's rows from its stored frontmatter; an edit replaces its values."""
    schema = vault / "_schema" / "frontmatter.yaml"
    write(vault, "_schema/frontmatter.yaml", "types:\n  rfc: {}\n  adr: {}\n"
          "match:\n  rfc: ['docs/*']\n  adr: ['docs/*']\n")  # fmt: skip
    write(vault, "docs/x.md", "---\nowner: Ana\ntags: [db]\n---\n# X\n\nLease x.\n")
    write(vault, "docs/y.md", "---\nowner: Bo\n---\n# Y\n\nLease y.\n")
    write(vault, "other/z.md", "---\nowner: Ana\n---\n# Z\n\nLease z.\n")
    lexical_workspace(rpc, vault, "kb")

    def browse(query):
        return [h["path"] for h in search(rpc, query, limit=10)["hits"]]

    assert browse("type:rfc") == ["docs/x.md", "docs/y.md"] and browse("type:adr") == []
    write(vault, "docs/x.md", "---\nowner: Cy\ntags: [db]\n---\n# X\n\nLease x, edited.\n")
    rpc.call("index.run", ["kb"])  # the stored schema now
    assert browse("type:rfc") == ["docs/x.md", "docs/y.md"] and browse("type:adr") == []
    assert error(rpc, "type:memo") == invalid(
        "type is one of rfc, adr, not 'memo'",
        field="type",
        value="memo",
        source="query",
        allowed=["rfc", "adr"],
    )
    schema.write_text(schema.read_text() + "common:\n  owner: string\n")
    rpc.call("index.run", ["kb"])  # no document changed: their rows come from the store
    assert browse("owner:ana") == ["other/z.md"]
    assert browse("owner:cy") == ["docs/x.md"] and browse("owner:bo") == ["docs/y.md"]
    assert browse("tag:db type:rfc") == ["docs/x.md"]
    write(vault, "docs/y.md", "---\nowner: Di\n---\n# Y\n\nLease y, edited.\n")
    rpc.call("index.run", ["kb"])
    assert browse("owner:bo") == [] and browse("owner:di") == ["docs/y.md"]


def _rows(store, ws_id: int) -> list[tuple]:
    with store.snapshot() as conn:
        rows = conn.execute(
            "SELECT d.path, f.field, f.value FROM facets f JOIN documents d"
            " ON d.id = f.document_id WHERE f.workspace_id = ?",
            (ws_id,),
        )
        return sorted(tuple(r) for r in rows)


def test_write_facets_takes_frontmatter_and_tags_as_objects_or_json(tmp_path):
    store = Store(tmp_path / "w.db")
    schema = parse_schema("common:\n  owner: string\ntypes:\n  adr: {}\nmatch:\n  adr: ['d/*']\n")
    docs = {"d/1.md": ({"Owner": "Ana"}, ["x/y"]), "d/2.md": ('{"owner": "Bo"}', '["z"]'),
            "d/3.md": (None, None), "n/4.md": ("", ""), "n/5.md": ({}, [])}  # fmt: skip
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO workspaces(id, name, root, options, created_at) VALUES (1,'w','/w','{}',0)"
        )
        ids = {}
        for path in docs:
            cur = conn.execute("INSERT INTO documents(workspace_id, path) VALUES (1, ?)", (path,))
            ids[path] = cur.lastrowid
        facet_values.write_facets(
            conn, 1, schema, [(ids[p], p, m, t) for p, (m, t) in docs.items()]
        )
    expected = [
        ("d/1.md", "owner", "ana"), ("d/1.md", "tag", "x"), ("d/1.md", "tag", "x/y"),
        ("d/1.md", "type", "adr"), ("d/2.md", "owner", "bo"), ("d/2.md", "tag", "z"),
        ("d/2.md", "type", "adr"), ("d/3.md", "type", "adr"),
    ]  # fmt: skip
    assert _rows(store, 1) == expected
    with store.transaction() as conn:  # written again: the new rows replace the old
        facet_values.write_facets(conn, 1, schema, [(ids["d/1.md"], "d/1.md", {"owner": "Cy"}, [])])
    assert _rows(store, 1) == [("d/1.md", "owner", "cy"), ("d/1.md", "type", "adr"), *expected[4:]]
    store.close()
