"""What kind of query this is: it decides how much each retriever's ranking counts.

A person types a record's number, an identifier, a file name, a quoted phrase or a prefix when
they know the words the answer holds: those queries are answered lexical-first (the meaning
stage only adds hits below). A question in their own words is the semantic stage's to answer.
Detection is by the shape of the text alone, so it costs microseconds and never surprises: the
answer's `fusion.intent` says what was detected, and the picker's title shows it.
"""

from __future__ import annotations

import re
from typing import get_args

from autodoc.parse.query_parser import ParsedQuery
from autodoc.parse.record_numbers import lettered_numbers, record_numbers
from autodoc.wire.protocol import Intent

INTENTS: tuple[Intent, ...] = get_args(Intent)  # the wire's, in the order `detect` tries them
# The intents that know the answer's words: lexical ranks first, semantic adds below.
LEXICAL_FIRST: frozenset[Intent] = frozenset({"number", "identifier", "path", "phrase", "prefix"})

SHORT_WORDS = 4  # "tendermint adr 42", "CWnd SetTimer elapse units": a name and a few words
_IDENTIFIER = re.compile(
    r"""(?x)
      [A-Za-z0-9]_[A-Za-z0-9] | ^_+\w     # snake_case, _private, __dunder
    | :: | -> | \w\(                     # C++ scope, members, calls
    | ^(?:/|--?)[A-Za-z][\w:-]*$          # a command-line option: /permissive-, --force
    | [a-z][A-Z] | [A-Z]{2}[a-z]\w        # camelCase; an acronym in a name (CWnd, not ADRs)
    """
)
_PATH = re.compile(r"\w/\w|\w\.md$|^\w[\w-]*-\w[\w-]*\.\w{1,4}$", re.I)
_QUESTION = re.compile(
    r"^(?:why|how|what|when|where|which|who|whom|whose|can|could|should|would|do|does|did|is|"
    r"are|was|were|will|shall|may|might|must|has|have|had)\b",
    re.I,
)


def detect(query: ParsedQuery) -> Intent:
    """The query's intent; the first rule that fits wins, in the order of INTENTS. Only a short
    query (at most SHORT_WORDS words beside its phrases) names its words: a sentence that holds
    an identifier, a quote or a number (a claim, a request to an agent) is a question or words."""
    items = query.items
    if not items:
        return "words"
    words = _plain_words(query)
    asks = bool(_QUESTION.match(query.text)) or query.raw.rstrip().endswith("?")
    if len(words) <= SHORT_WORDS:
        if any(i.phrase for i in items):
            return "phrase"
        if items[-1].prefix:
            return "prefix"
        if any(_PATH.search(w) for w in words):
            return "path"
        if not asks and number_words(query):
            return "number"
        if any(_IDENTIFIER.search(w) for w in words):
            return "identifier"
    return "question" if asks else "words"


def _plain_words(query: ParsedQuery) -> list[str]:
    """The query's words outside its phrases, as typed."""
    return [w for i in query.items if not i.phrase for w in i.text.split()]


def code_words(query: ParsedQuery) -> list[str]:
    """The record numbers of a longer query that name a page wherever they stand (a compiler's
    or linker's code, `c1083`, `LNK2019`; a record's, `adr-42`, `adr 42`), as typed. Not a bare
    number, and not a name with digits in it (`sha256`, `ed25519`, `p53`, `CD28`, `IL-6`):
    those name things a page is about, and a title holding one is no sign of the answer (ADR
    golden set, SciFact). One definition: `parse/record_numbers.py`."""
    return lettered_numbers(_plain_words(query))


def number_words(query: ParsedQuery) -> list[str]:
    """The query's record numbers (`42`, `adr-0042`, `#42`, `C4996`; not `S2`, `v1`, `x86`),
    as typed: a short query holding one is a `number` query."""
    return record_numbers(_plain_words(query))


# A question that asks what a thing is: `what is a vault`, `what are pods`, `what's a
# backlink`, `define hierarchy`, `meaning of frontmatter`, `what does stub mean`, `schema
# definition`. Its term, when a note is titled or aliased by it, names that note.
_DEFINITION = re.compile(
    r"""(?ix)^(?:
        (?:what|who)(?:\s+(?:is|are|was|were)|['’]s|s)\s+(?:an?\s+|the\s+)?(?P<what>.+?)
      | (?:define|definition\s+of|meaning\s+of)\s+(?:an?\s+|the\s+)?(?P<define>.+?)
      | what\s+does\s+(?:an?\s+|the\s+)?(?P<mean>.+?)\s+mean
      | (?P<term>.+?)\s+(?:meaning|definition)
    )\s*[?.!]*$"""
)


def definition_term(query: ParsedQuery) -> str | None:
    """The term a definition question asks about, lower-cased (`what is a vault?`: `vault`);
    None for any other query, and for a term of more than SHORT_WORDS words (a sentence, not
    a name)."""
    m = _DEFINITION.match(" ".join(query.text.split()))
    if m is None:
        return None
    term = next(g for g in m.groups() if g is not None).lower()
    return term if len(term.split()) <= SHORT_WORDS else None
