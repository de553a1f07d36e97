"""Query intent: the shape of the text decides which retriever's order counts."""

from __future__ import annotations

import pytest

from autodoc.parse.query_parser import parse_query
from autodoc.query.intent import (
    INTENTS,
    LEXICAL_FIRST,
    code_words,
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
    ("How to configure the IPv6 connection settings?", "question", ["IPv6"]),
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
    ],
)
def test_a_code_inside_a_longer_query_is_a_code(text, codes):
    assert code_words(parse_query(text)) == codes
