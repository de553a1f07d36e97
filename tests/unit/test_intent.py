"""Query intent: the shape of the text decides which retriever's order counts."""

from __future__ import annotations

import pytest

from autodoc.bm25.analyzer import name_words
from autodoc.parse.query_parser import parse_query
from autodoc.query.intent import (
    INTENTS,
    LEXICAL_FIRST,
    code_words,
    definition_term,
    detect,
    number_words,
)

CASES = [
    ("adr 42", "number", ["42"]),
    ("hydra adr 17", "number", ["17"]),
    ("ADR-0042", "number", ["ADR-0042"]),
    ("adr_0042", "number", ["adr_0042"]),
    ("C4996", "number", ["C4996"]),
    ("lnk2019 unresolved external", "number", ["lnk2019"]),
    ("#42", "number", ["#42"]),
    ("42", "number", ["42"]),
    ("0042", "number", ["0042"]),
    ("RFC 7231", "number", ["7231"]),
    ("rfc7231", "number", ["rfc7231"]),
    ("C4996:", "number", ["C4996:"]),
    # A letter and a digit or a few name a thing, not a record: `S2` is not record 2.
    ("S2 cells level", "words", []),
    ("cometbft v1 internalize go", "words", []),
    ("L2 cache size", "words", []),
    ("p53 binding", "words", []),
    ("sha256 digest", "words", []),
    ("x86 build", "words", []),
    ("chacha20 poly1305 aead", "words", []),
    ("strcpy_s", "identifier", []),
    ("CWnd::OnPaint", "identifier", []),
    ("/permissive-", "identifier", []),
    ("--force", "identifier", []),
    ("_countof", "identifier", []),
    ("__declspec(dllexport)", "identifier", []),
    ("placeOrderRequest", "identifier", []),
    ("docs/adr", "path", []),
    ("0042-use-kafka.md", "path", []),
    ("migr*", "prefix", []),
    ('"blocks are gossiped in parts"', "phrase", []),
    ("why did we choose kafka", "question", []),
    ("is long 8 bytes on 64-bit windows", "question", ["8"]),
    ("kafka retention?", "question", []),
    ("use markdown architectural decision records", "words", []),
    ("ADRs and RFCs", "words", []),
    ("one two three four 5 six", "words", ["5"]),  # a number among many words is a word
    # A sentence holding a name, a quote or a number is not a lookup (claims, agents' requests).
    ("How to configure the IPv6 connection settings?", "question", []),
    ("1 in 5 million in UK have abnormal PrP positivity.", "words", ["1", "5"]),
    ('we want "one phrase" found in a long request', "words", []),
    ("we are building a robot for hopping arou*", "words", []),
    ("what does /permissive- do", "identifier", []),  # short: the option is the point
    ("", "words", []),
]


@pytest.mark.parametrize("text, intent, numbers", CASES)
def test_each_shape_of_query_has_its_intent(text, intent, numbers):
    query = parse_query(text)
    assert detect(query) == intent
    assert number_words(query) == numbers


def test_the_intents_are_the_wires_and_lexical_first_is_the_named_ones():
    assert set(INTENTS) == {i for _, i, _ in CASES}
    assert {"number", "identifier", "path", "phrase", "prefix"} == LEXICAL_FIRST


@pytest.mark.parametrize(
    "text, codes",
    [
        ("c1083 cannot open include file", ["c1083"]),
        ("why does LNK2019 appear after an upgrade", ["LNK2019"]),
        ("why did adr-42 choose kafka", ["adr-42"]),
        ("how should ed25519 addresses be derived", []),  # names of things, not of pages
        ("does p53 bind CD28 or IL-6", []),
        ("fix CA1062 and MSB3073 in the build", ["CA1062", "MSB3073"]),
        ("moving from python3 to ipv6 in 2019", []),  # 6 letters, 1 digit, a bare number
        ('the "C4996" warning', []),  # inside a phrase: the phrase's
        ("why did adr 42 choose kafka", ["adr 42"]),  # a lone number after a series' name
        ("what does RFC 7231 say about caching", ["RFC 7231"]),
        ("is S2 faster than v1 on x86 and L2", []),
    ],
)
def test_a_code_inside_a_longer_query_is_a_code(text, codes):
    assert code_words(parse_query(text)) == codes


@pytest.mark.parametrize(
    "title, indexed",
    [
        ("Compiler Warning C4996", "Compiler Warning C4996 4996"),  # `warning 4996` finds it
        ("LNK2019 and rfc7231", "LNK2019 and rfc7231 2019 7231"),
        ("S2 geometry on x86 with sha256", "S2 geometry on x86 with sha256"),  # no record 2
        ("ADR-0042 Use Kafka", "ADR-42 Use Kafka"),  # the dash splits: 42 is a word already
    ],
)
def test_a_name_holds_a_codes_number_only_for_a_record_number(title, indexed):
    """The index reads a title's numbers by the query's definition: a query for record 2 and
    a title naming record 2 agree that `S2` is neither."""
    assert name_words(title) == indexed


@pytest.mark.parametrize(
    "text, term",
    [
        ("what is a vault", "vault"),
        ("What are Pods?", "pods"),
        ("what's the stub", "stub"),
        ("whats a backlink", "backlink"),
        ("who is the writer", "writer"),
        ("define hierarchy", "hierarchy"),
        ("meaning of frontmatter", "frontmatter"),
        ("what does stub mean", "stub"),
        ("schema definition", "schema"),
        ("what is wrong with using the user home property", None),  # a sentence, not a term
        ("how is a vault made", None),
        ("what is", None),
        ("vault", None),
    ],
)
def test_a_definition_question_names_its_term(text, term):
    assert definition_term(parse_query(text)) == term
