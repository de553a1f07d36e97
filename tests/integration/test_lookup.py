"""Name lookup (`search.find`): titles, aliases, headings and code identifiers, by name."""

from __future__ import annotations

import shutil
import time

import pytest

from autodoc.engine import Engine
from autodoc.parse import names as name_index
from autodoc.query import find as find_module
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire.errors import RpcError

from .. import limits
from ..conftest import REPO, corpus, lexical_workspace, write

API_VAULT = REPO / "tests" / "fixtures" / "api-vault"


def names(answer: dict) -> list[tuple[str, str, str, str]]:
    return [(m["match"], m["kind"], m["name"], m["path"]) for m in answer["matches"]]


def assert_ordered(answer: dict) -> None:
    """exact → prefix → partial, and within a tier title → alias → heading → identifier."""
    tiers = [find_module.MATCH_NAMES.index(m["match"]) for m in answer["matches"]]
    assert tiers == sorted(tiers)
    for tier in set(tiers):
        kinds = [
            name_index.KIND_NAMES.index(m["kind"])
            for m in answer["matches"]
            if find_module.MATCH_NAMES.index(m["match"]) == tier
        ]
        assert kinds == sorted(kinds)


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    rpc = Dispatcher(Engine(tmp_path_factory.mktemp("api") / "autodoc.db"))
    rpc.call("workspace.add", ["api", str(API_VAULT)])
    rpc.call("workspace.configure", ["api", {"embedding": "none"}])
    rpc.call("index.run", ["api"])
    yield rpc
    rpc.engine.close()


def find(rpc: Dispatcher, name: str, **opts) -> dict:
    return rpc.call("search.find", ["api", name, opts] if opts else ["api", name])


# -- splitting names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("placeOrderRequest", ["place", "order", "request"]),
        ("GetWebAuthnSession", ["get", "web", "authn", "session"]),
        ("strcpy_s", ["strcpy", "s"]),
        ("_mbscpy_s_l", ["mbscpy", "s", "l"]),
        ("CWnd::Create", ["c", "wnd", "create"]),
        ("HTTPServer", ["http", "server"]),
        ("utf8Decode", ["utf", "8", "decode"]),
        ("place order", ["place", "order"]),
        ("Café crème", ["café", "crème"]),
        ("Größe_maxValue", ["grösse", "max", "value"]),  # casefolded; its ASCII parts split
    ],
)
def test_names_split_into_subwords(name, words):
    assert name_index.subwords(name) == words


def test_a_name_is_stored_under_each_suffix_join():
    assert name_index.suffix_keys("placeOrderRequest") == [
        (0, "placeorderrequest"),
        (1, "orderrequest"),
        (2, "request"),
    ]


@pytest.mark.parametrize(
    ("token", "shaped"),
    [
        ("CWnd", True),
        ("HTTPServer", True),
        ("placeOrder", True),
        ("strcpy_s", True),
        ("_mbscpy", True),
        ("Win32", True),
        ("CWnd::Create", True),
        ("URLs", False),
        ("APIs", False),
        ("Orders", False),
        ("service", False),
    ],
)
def test_prose_words_count_as_identifiers_only_when_shaped_like_code(token, shaped):
    assert name_index.identifier_shaped(token) is shaped


# -- the cases of issue 11, on the fixture vault ----------------------------------------------


def test_whole_name_is_an_exact_match(api):
    answer = find(api, "placeOrderRequest")
    first = answer["matches"][0]
    assert (first["match"], first["kind"]) == ("exact", "heading")
    assert first["name"] == "placeOrderRequest"
    assert first["path"] == "api/orders.md"
    # the section around the heading, ready for read_span
    assert first["line"] == 11 and first["line_start"] == 11 and first["line_end"] >= 21
    assert first["breadcrumb"] == "Orders API › placeOrderRequest"
    # the same identifier in another document's prose is found too, after the heading
    adr = "adr/0007-event-sourcing-for-orders.md"
    assert ("exact", "identifier", "placeOrderRequest", adr) in names(answer)
    assert_ordered(answer)


def test_lookup_is_case_insensitive(api):
    for spelling in ("PLACEORDERREQUEST", "placeorderrequest", "place_order_request"):
        first = find(api, spelling)["matches"][0]
        assert (first["match"], first["name"]) == ("exact", "placeOrderRequest")


def test_a_later_run_of_subwords_finds_the_name(api):
    answer = find(api, "orderRequest")
    assert ("partial", "heading", "placeOrderRequest", "api/orders.md") in names(answer)
    assert all(m["match"] == "partial" for m in answer["matches"])


def test_one_subword_finds_names_by_prefix_then_inside(api):
    answer = find(api, "order", limit=50)
    found = names(answer)
    assert_ordered(answer)
    assert found[0] == ("prefix", "title", "Orders API", "api/orders.md")
    assert ("prefix", "alias", "order service", "api/orders.md") in found
    assert ("prefix", "identifier", "OrderPlaced", "adr/0007-event-sourcing-for-orders.md") in found
    assert ("partial", "heading", "placeOrderRequest", "api/orders.md") in found
    assert ("partial", "identifier", "cancel_order", "api/orders.md") in found
    prefix_end = max(i for i, f in enumerate(found) if f[0] == "prefix")
    assert prefix_end < found.index(("partial", "heading", "placeOrderRequest", "api/orders.md"))


def test_words_with_spaces_find_a_joined_name(api):
    answer = find(api, "place order")
    found = names(answer)
    # `placeOrder` is exactly these words; `placeOrderRequest` begins with them
    assert found[0] == ("exact", "identifier", "placeOrder", "guides/checkout.md")
    assert ("prefix", "heading", "placeOrderRequest", "api/orders.md") in found
    assert_ordered(answer)


def test_a_prefix_of_a_later_subword_finds_the_name(api):
    answer = find(api, "WebAuth")
    found = names(answer)
    assert ("partial", "heading", "GetWebAuthnSession", "api/auth.md") in found
    assert ("prefix", "identifier", "WebAuthn", "api/auth.md") in found  # prose, shaped
    assert_ordered(answer)


def test_snake_case_and_inline_code_identifiers(api):
    first = find(api, "cancel_order")["matches"][0]
    assert (first["match"], first["kind"]) == ("exact", "identifier")
    assert first["path"] == "api/orders.md"
    assert first["line"] == 29 and first["line_start"] <= 29 <= first["line_end"]
    assert find(api, "cancel order")["matches"][0]["name"] == "cancel_order"
    # a code identifier that looks like a plain word still counts (it is in code)
    assert names(find(api, "sku", exact=True))[0][2] == "sku"


def test_titles_and_aliases_are_names(api):
    first = find(api, "checkout API")["matches"][0]
    assert (first["match"], first["kind"], first["path"]) == ("exact", "alias", "api/orders.md")
    first = find(api, "ADR-0007")["matches"][0]
    assert (first["match"], first["kind"]) == ("exact", "alias")
    # a title heading with no text of its own points at the first section after it
    title = find(api, "event sourcing for orders")["matches"][0]
    assert (title["match"], title["kind"], title["line"]) == ("partial", "title", 6)
    assert title["line_start"] == 8 and title["breadcrumb"].endswith("› Decision")
    first = find(api, "Authentication")["matches"][0]
    assert (first["match"], first["kind"], first["path"]) == ("exact", "title", "api/auth.md")


def test_exact_mode_keeps_whole_names_only(api):
    answer = find(api, "order", exact=True)
    assert answer["exact"] is True
    assert all(m["match"] == "exact" for m in answer["matches"])
    assert not any(m["name"] == "placeOrderRequest" for m in answer["matches"])
    assert names(find(api, "placeOrderRequest", exact=True))[0][2] == "placeOrderRequest"


def test_a_subword_never_matches_from_its_middle(api):
    assert find(api, "rder")["matches"] == []
    assert find(api, "laceOrder")["matches"] == []


def test_keywords_and_urls_are_not_names(api):
    assert find(api, "func", exact=True)["matches"] == []
    assert find(api, "return", exact=True)["matches"] == []


def test_lookup_reads_a_key_range_not_the_table(api):
    with api.engine.store.snapshot() as conn:
        plan = " | ".join(
            str(r[3])
            for r in conn.execute(
                "EXPLAIN QUERY PLAN SELECT symbol_id, pos, key FROM symbol_keys"
                " WHERE workspace_id = ? AND key >= ? AND key < ? LIMIT 10",
                (1, "order", "order\U0010ffff"),
            )
        )
    assert "SEARCH symbol_keys USING PRIMARY KEY" in plan and "SCAN" not in plan


@pytest.mark.parametrize(
    ("params", "message", "field"),
    [
        (["api", ""], "name must be a non-empty string", "name"),
        (["api", "  "], "name must be a non-empty string", "name"),
        (["api", 7], "name must be a non-empty string", "name"),
        (["api", "::"], "name has no letters or digits to look up", "name"),
        (["api", "x", []], "options must be an object: {exact, limit}", "opts"),
        (["api", "x", {"fuzzy": True}], "unknown option 'fuzzy' (known: exact, limit)", "fuzzy"),
        (["api", "x", {"limit": 0}], "limit must be an integer from 1 to 500", "limit"),
        (["api", "x", {"limit": 501}], "limit must be an integer from 1 to 500", "limit"),
        (["api", "x", {"limit": True}], "limit must be an integer from 1 to 500", "limit"),
        (["api", "x", {"limit": 2.0}], "limit must be an integer from 1 to 500", "limit"),
        (["api", "x", {"exact": "yes"}], "exact must be true or false", "exact"),
    ],
)
def test_bad_requests_are_invalid_params_naming_the_field(api, params, message, field):
    with pytest.raises(RpcError) as exc:
        api.call("search.find", params)
    assert exc.value.to_dict() == {"code": -32602, "message": message, "data": {"field": field}}


def test_an_unknown_workspace_is_invalid_params(api):
    with pytest.raises(RpcError) as exc:
        api.call("search.find", ["nope", "x"])
    assert exc.value.code == -32602


def test_the_limits_of_a_find_hold_at_their_edges(api):
    assert len(find(api, "order", limit=1)["matches"]) == 1
    assert len(find(api, "order", limit=500)["matches"]) == len(find(api, "order")["matches"])
    assert find(api, "order", exact=False)["matches"] == find(api, "order")["matches"]


def test_a_find_answers_20_matches_unless_asked_for_more(rpc, vault):
    for i in range(30):
        write(vault, f"n{i:02}.md", f"# Note {i}\n\n## widgetPart{i:02}\n\ntext\n")
    lexical_workspace(rpc, vault)
    default = rpc.call("search.find", ["v", "widget"])["matches"]
    assert [m["name"] for m in default] == [f"widgetPart{i:02}" for i in range(20)]
    assert len(rpc.call("search.find", ["v", "widget", {"limit": 21}])["matches"]) == 21


# -- freshness --------------------------------------------------------------------------------


def test_edits_and_deletes_keep_the_dictionary_exact(rpc, tmp_path):
    root = tmp_path / "v"
    shutil.copytree(API_VAULT, root)
    rpc.call("workspace.add", ["v", str(root)])
    rpc.call("workspace.configure", ["v", {"embedding": "none"}])
    rpc.call("index.run", ["v"])
    assert rpc.call("search.find", ["v", "RefreshToken"])["matches"]
    auth = root / "api" / "auth.md"
    auth.write_text(auth.read_text().replace("RefreshToken", "RotateRefreshToken"))
    rpc.call("index.run", ["v"])
    assert rpc.call("search.find", ["v", "RefreshToken", {"exact": True}])["matches"] == []
    renamed = rpc.call("search.find", ["v", "RefreshToken"])["matches"]
    assert [m["name"] for m in renamed] == ["RotateRefreshToken"]
    with rpc.engine.store.snapshot() as conn:
        gone = conn.execute("SELECT count(*) FROM symbols WHERE name = 'RefreshToken'")
        assert gone.fetchone()[0] == 0
    (root / "guides" / "checkout.md").unlink()
    rpc.call("index.run", ["v"])
    assert rpc.call("search.find", ["v", "placeOrder", {"exact": True}])["matches"] == []
    with rpc.engine.store.snapshot() as conn:
        orphans = conn.execute(
            "SELECT count(*) FROM symbols s WHERE NOT EXISTS"
            " (SELECT 1 FROM symbol_sites t WHERE t.symbol_id = s.id)"
        ).fetchone()[0]
        keys = conn.execute("SELECT count(*) FROM symbol_keys").fetchone()[0]
        expected = sum(
            len(name_index.suffix_keys(n)) for (n,) in conn.execute("SELECT name FROM symbols")
        )
    assert orphans == 0 and keys == expected
    rpc.call("workspace.remove", ["v"])
    with rpc.engine.store.snapshot() as conn:
        assert conn.execute("SELECT count(*) FROM symbols").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM symbol_keys").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM symbol_sites").fetchone()[0] == 0


def test_a_store_indexed_before_lookup_is_read_again_once(rpc, vault):
    write(vault, "a.md", "# Alpha\n\nCall `fooBarBaz` here.\n")
    rpc.call("workspace.add", ["v", str(vault)])
    rpc.call("workspace.configure", ["v", {"embedding": "none"}])
    rpc.call("index.run", ["v"])
    with rpc.engine.store.transaction() as conn:  # as an older version left it
        conn.execute("DELETE FROM symbol_sites")
        conn.execute("DELETE FROM symbol_keys")
        conn.execute("DELETE FROM symbols")
        conn.execute("UPDATE documents SET chunk_fp = 'section_tokens=350'")
    assert rpc.call("search.find", ["v", "fooBarBaz"])["matches"] == []
    summary = rpc.call("index.run", ["v"])
    assert summary["modified"] == 1 and summary["chunks_written"] == 0
    assert rpc.call("search.find", ["v", "fooBarBaz"])["matches"][0]["match"] == "exact"
    assert rpc.call("index.run", ["v"])["unchanged"] == 1


# -- real identifiers: cpp-docs ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cpp(tmp_path_factory):
    root = corpus("cpp-docs") / "docs"
    rpc = Dispatcher(Engine(tmp_path_factory.mktemp("cpp") / "autodoc.db"))
    for name, sub in (("crt", "c-runtime-library/reference"), ("mfc", "mfc/reference")):
        rpc.call("workspace.add", [name, str(root / sub)])
        rpc.call("workspace.configure", [name, {"embedding": "none"}])
        rpc.call("index.run", [name])
    yield rpc
    rpc.engine.close()


@pytest.mark.corpus
def test_cpp_docs_strcpy_s(cpp):
    answer = cpp.call("search.find", ["crt", "strcpy_s"])
    first = answer["matches"][0]
    assert (first["match"], first["kind"], first["name"]) == ("exact", "title", "strcpy_s")
    assert first["path"] == "strcpy-s-wcscpy-s-mbscpy-s.md"
    assert_ordered(answer)
    # the plain name's own page comes before the secure variant, which it begins
    plain = cpp.call("search.find", ["crt", "strcpy"])["matches"]
    assert (plain[0]["match"], plain[0]["path"]) == ("exact", "strcpy-wcscpy-mbscpy.md")
    assert any(m["match"] == "prefix" and m["name"] == "strcpy_s" for m in plain)


@pytest.mark.corpus
def test_cpp_docs_cwnd(cpp):
    answer = cpp.call("search.find", ["mfc", "CWnd", {"limit": 50}])
    first = answer["matches"][0]
    assert (first["match"], first["kind"], first["path"]) == ("exact", "title", "cwnd-class.md")
    assert_ordered(answer)
    members = cpp.call("search.find", ["mfc", "CWnd::Create", {"exact": True}])["matches"]
    assert members and members[0]["path"] == "cwnd-class.md" and members[0]["kind"] == "heading"
    # a member by its own name, anywhere after the class: ::CreateEx is a later subword run
    later = cpp.call("search.find", ["mfc", "CreateEx", {"limit": 100}])["matches"]
    assert any(m["name"] == "CWnd::CreateEx" and m["match"] == "partial" for m in later)


@pytest.mark.corpus
def test_cpp_docs_lookup_is_fast(cpp):
    took = []
    for name in ("strcpy_s", "CWnd", "str", "GetWindowText", "malloc", "CString", "wcs", "_s"):
        ws = "mfc" if name in ("CWnd", "GetWindowText", "CString") else "crt"
        started = time.perf_counter()
        cpp.call("search.find", [ws, name])
        took.append(time.perf_counter() - started)
    took.sort()
    assert took[len(took) // 2] < limits.FIND_P50_S, took


def test_an_answer_carries_the_name_the_options_and_each_matchs_document(rpc, vault):
    text = "---\ntitle: Billing API\n---\n# Billing API\n\n## chargeCard\n\nCharges.\n"
    write(vault, "api.md", text)
    lexical_workspace(rpc, vault)
    answer = rpc.call("search.find", ["v", "charge_card", {"exact": True}])
    assert answer.pop("took_ms") >= 0
    assert answer == {
        "workspace": "v",
        "name": "charge_card",
        "exact": True,
        "matches": [
            {
                "name": "chargeCard",
                "match": "exact",
                "kind": "heading",
                "path": "api.md",
                "title": "Billing API",
                "line": 6,
                "line_start": 6,
                "line_end": 8,
                "breadcrumb": "Billing API › chargeCard",
            }
        ],
        "truncated": False,
    }


def test_a_heading_at_the_end_with_no_text_points_at_the_last_section(rpc, vault):
    write(vault, "a.md", "# Alpha\n\nFirst words.\n\n## Beta\n\nMore words.\n\n## Gamma Tail\n")
    lexical_workspace(rpc, vault)
    [match] = rpc.call("search.find", ["v", "Gamma Tail"])["matches"]
    assert (match["line"], match["line_start"], match["breadcrumb"]) == (9, 5, "Alpha › Beta")


@pytest.mark.parametrize(("exact", "n"), [(True, 4), (False, 5)])
def test_truncated_says_when_more_keys_matched_than_were_read(rpc, vault, monkeypatch, exact, n):
    """At most CANDIDATES key rows are read; one more than that and the answer says so. Four
    names share the key `foobar`; `foobarBaz` only begins with it (a prefix, not exact)."""
    names = ["fooBar", "foo_bar", "FOO_BAR", "foo-bar", "foobarBaz"]
    write(vault, "a.md", "# A\n\n" + "".join(f"## {n}\n\ntext\n\n" for n in names))
    lexical_workspace(rpc, vault)
    monkeypatch.setattr(find_module, "CANDIDATES", n)
    answer = rpc.call("search.find", ["v", "foobar", {"exact": exact}])
    assert answer["truncated"] is False and len(answer["matches"]) == n
    monkeypatch.setattr(find_module, "CANDIDATES", n - 1)
    answer = rpc.call("search.find", ["v", "foobar", {"exact": exact}])
    assert answer["truncated"] is True and len(answer["matches"]) == n - 1


@pytest.mark.parametrize(
    ("text", "token", "at"),
    [
        ("foo", "foo", 0),  # at the very start
        ("foo foo", "foo", 0),  # the first whole word
        ("foo x foo", "foo", 0),
        ("a foo b", "foo", 2),
        ("xfoo foo", "foo", 5),  # inside a longer word first
        ("foox foo", "foo", 5),
        ("xfoo a foo", "foo", 7),
        ("xfoo foo foo", "foo", 5),  # the first whole word after, not the last
        ("foo_x foo", "foo", 6),  # an underscore or a colon joins words
        ("_foo foo", "foo", 5),
        ("a:foo foo", "foo", 6),
        ("foo: foo", "foo", 5),
        ("CWnd::Create x", "Create", 6),  # only inside a qualified name: its first place
        ("ab", "zz", 0),  # absent: the start
    ],
)
def test_a_names_offset_is_its_first_whole_word_else_its_first_place(text, token, at):
    assert name_index._offset_of(text, token) == at


@pytest.mark.parametrize(
    ("token", "is_name"),
    [
        ("x", False),  # one character
        ("ab", True),
        ("_a", True),
        ("__", False),  # underscores only
        ("X_X", True),
        ("if", False),  # a keyword, any case
        ("IF", False),
        ("Class", False),
        ("classy", True),
    ],
)
def test_which_code_tokens_are_names(token, is_name):
    assert name_index._code_name(token) is is_name


def test_code_between_prose_is_read_as_code_and_prose_after_it_as_prose():
    from autodoc.parse.document import parse_document

    text = "# T\n\nprose words\n\n```\nplainname = 1\n```\n\nthen fooBar here\n"
    sites = name_index.document_symbols(parse_document(text.encode(), "t.md"))
    assert sites["plainname"] == (name_index.KIND_CODE, 0, 6)  # not shaped like code: from code
    assert sites["fooBar"] == (name_index.KIND_CODE, 0, 9)
    assert "prose" not in sites and "then" not in sites


SYMBOLS_DOC = """\
---
title: Orders API
aliases: [order service, "checkout; cart", "alpha, beta"]
---
# Orders API

The order service keeps `placeOrder` and `if` calls and `inlineonly` `twoA` `twoB`; see
the snake_case_name helper and CWnd::Create, HTTPServer and URLs
on a later line: parseJSON and CWnd::Destroy.

[the docs](https://example.com/linkTarget) and more words,
https://bare.example/bareUrl_part are links, not names. fooBar twice: fooBar.

```python
def plainname(arg):
    return arg
```

An autolink <https://x.y/autoLink> alone.

## placeOrder, cancelOrder; refund

### A heading about renderHTML

## !!!

## plainname

## CWnd::Attach method
"""


def test_document_symbols_are_exactly_these_names_kinds_labels_and_lines():
    """One document with every source of a name; each expected site checked by reading it:
    the strongest kind wins (a heading over code), list-like labels split, link targets and
    URLs skipped, keywords, prose words and a fence's info string left out, the first code
    site of a name kept."""
    from autodoc.parse.document import parse_document

    text = SYMBOLS_DOC + "\n## " + "a" * 200 + "\n\n## " + "b" * 201 + "\n"  # the longest name
    sites = name_index.document_symbols(parse_document(text.encode(), "o.md"))
    t, a, h, c = (
        name_index.KIND_TITLE,
        name_index.KIND_ALIAS,
        name_index.KIND_HEADING,
        name_index.KIND_CODE,
    )
    assert sites == {
        "Orders API": (t, 10, 5),
        "alpha, beta": (a, 11, 1),
        "alpha": (a, 11, 1),
        "beta": (a, 11, 1),
        "order service": (a, 13, 1),
        "checkout; cart": (a, 14, 1),
        "checkout": (a, 14, 1),
        "cart": (a, 14, 1),
        "plainname": (h, 9, 27),  # code first, then a heading: the heading's site
        "CWnd": (h, 19, 29),
        "CWnd::Attach": (h, 19, 29),
        "CWnd::Attach method": (h, 19, 29),
        "renderHTML": (h, 26, 23),
        "A heading about renderHTML": (h, 26, 23),
        "placeOrder": (h, 31, 21),
        "cancelOrder": (h, 31, 21),
        "placeOrder, cancelOrder; refund": (h, 31, 21),
        "refund": (h, 31, 21),
        "a" * 200: (h, 200, 31),
        "inlineonly": (c, 0, 7),
        "twoA": (c, 0, 7),
        "twoB": (c, 0, 7),
        "snake_case_name": (c, 0, 8),
        "CWnd::Create": (c, 0, 8),
        "Create": (c, 0, 8),
        "HTTPServer": (c, 0, 8),
        "parseJSON": (c, 0, 9),
        "CWnd::Destroy": (c, 0, 9),
        "Destroy": (c, 0, 9),
        "fooBar": (c, 0, 12),
        "arg": (c, 0, 15),
        "Attach": (c, 0, 29),  # a part of a qualified name in a heading is an identifier
    }


def test_a_title_no_h1_repeats_is_sited_on_the_first_line():
    from autodoc.parse.document import parse_document

    text = "---\ntitle: Orders API\n---\n# Overview\n\n## Orders API\n\ntext\n"
    sites = name_index.document_symbols(parse_document(text.encode(), "o.md"))
    assert sites["Orders API"] == (name_index.KIND_TITLE, 10, 1)
    assert sites["Overview"] == (name_index.KIND_HEADING, 8, 4)


@pytest.mark.parametrize(
    "text",
    [
        "# T\n\n```cpp\nint realName;\n```\n",
        "# T\n\n~~~ {.cpp title=x}\nint realName;\n~~~\n",
        "# T\n\n- item\n\n      ```cpp\n      int realName;\n      ```\n",
        "# T\n\n> ```cpp\n> int realName;\n> ```\n",
    ],
)
def test_a_fences_info_string_is_no_name(text):
    from autodoc.parse.document import parse_document

    sites = name_index.document_symbols(parse_document(text.encode(), "t.md"))
    assert "realName" in sites and not {"cpp", "title", "x"} & set(sites)


def test_a_name_and_its_parts_keep_their_first_sites_and_links_are_no_names():
    from autodoc.parse.document import parse_document

    text = (
        "# T\n\nCWnd::Create first.\n\n"
        "See [the guide](docs/someGuide.md) for more.\n\n```\ncode\n```\n\n"
        "Then CWnd::Destroy later.\n"
        "Write to <mailto:someone@example.com?subject=helloWorld> then.\n"
    )
    sites = name_index.document_symbols(parse_document(text.encode(), "t.md"))
    c = name_index.KIND_CODE
    assert {k: v for k, v in sites.items() if k != "T"} == {
        "CWnd::Create": (c, 0, 3),
        "CWnd": (c, 0, 3),  # not moved to line 11 by CWnd::Destroy
        "Create": (c, 0, 3),
        "code": (c, 0, 8),
        "CWnd::Destroy": (c, 0, 11),
        "Destroy": (c, 0, 11),
    }
