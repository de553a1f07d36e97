"""The query parser: exactly which words, phrases, prefixes and facets a query text becomes."""

from __future__ import annotations

import pytest

from autodoc.parse.query_parser import FacetToken, ParsedQuery, QueryItem, parse_query


def declared(name: str) -> bool:
    return name in {"status", "type"}


def W(text: str, **kw) -> QueryItem:  # short: the tables read as the items they expect
    return QueryItem(text, **kw)


CASES = [
    # plain words; operators and punctuation are words
    ("lease recovery", None, [W("lease"), W("recovery")], []),
    ("a AND b OR NOT (c)", None, [W("a"), W("AND"), W("b"), W("OR"), W("NOT"), W("(c)")], []),
    ("std::vector", None, [W("std::vector")], []),
    # a phrase, closed or not; an empty one is nothing
    ('"write ahead" log', None, [W("write ahead", phrase=True), W("log")], []),
    ('log "write ahead', None, [W("log"), W("write ahead", phrase=True)], []),
    ('x "  " y', None, [W("x"), W("y")], []),
    # a trailing * on the last word only, and only that word's trailing stars
    ("migr*", None, [W("migr", prefix=True)], []),
    ("INDEX*", None, [W("INDEX", prefix=True)], []),
    ("*migr*", None, [W("*migr", prefix=True)], []),
    ("migr** x", None, [W("migr**"), W("x")], []),
    ("x migr**", None, [W("x"), W("migr", prefix=True)], []),
    ("*", None, [], []),
    ("x ***", None, [W("x")], []),
    ('"migr*"', None, [W("migr*", phrase=True)], []),
    # field:value with no declared fields: words, never a call to a missing predicate
    ("status:accepted", None, [W("status:accepted")], []),
    ('status:"in review"', None, [W("status:"), W("in review", phrase=True)], []),
    # declared fields filter, negated or not, quoted or not
    ("lease status:accepted", declared, [W("lease")], [FacetToken("status", "accepted")]),
    ("-status:superseded", declared, [], [FacetToken("status", "superseded", negated=True)]),
    ('status:"in review" x', declared, [W("x")], [FacetToken("status", "in review")]),
    ('-status:"in review"', declared, [], [FacetToken("status", "in review", negated=True)]),
    ('status:"  in review "', declared, [], [FacetToken("status", "in review")]),
    # an undeclared field stays words, quoted value a phrase; an empty quoted value is a word
    ('owner:"ana b"', declared, [W("owner:"), W("ana b", phrase=True)], []),
    ('-owner:"ana b"', declared, [W("-owner:"), W("ana b", phrase=True)], []),
    ("owner:ana", declared, [W("owner:ana")], []),
    ('status:""', declared, [W("status:")], []),
    ("plain", declared, [W("plain")], []),
]


@pytest.mark.parametrize(("raw", "is_facet", "items", "facets"), CASES)
def test_a_query_text_becomes_exactly_these_items_and_facets(raw, is_facet, items, facets):
    parsed = parse_query(raw, is_facet)
    assert (parsed.items, parsed.facets) == (items, facets)
    assert parsed.raw == raw


def test_the_text_for_meaning_stages_joins_the_words_without_syntax():
    parsed = parse_query('"write ahead" migr* status:accepted', declared)
    assert parsed.text == "write ahead migr"
    assert not parsed.empty
    assert parse_query("status:accepted", declared).empty
    assert ParsedQuery("").empty
