"""How sure an answer is, from absolute evidence rather than the per-query normalised score.

Relevance is normalised within one answer (the top hit is near 1.0 whatever it is), so it cannot
say "nothing here". Two facts can: which of the query's content words occur nowhere in the
workspace (`missing`: a word no chunk holds cannot be answered by words), and how close the
nearest section's meaning is (the semantic stage's top cosine, an absolute number). The level:

- `none`: no hit, or no content word occurs anywhere and the nearest meaning is far;
- `low`: a content word occurs nowhere and the nearest meaning is not close, or only meaning
  found anything and it is far;
- `high`: otherwise.

The cosine thresholds are the bundled model's, calibrated on the golden sets of `bench/golden/`
(doc/benchmarks/retrieval.md): another model's cosines sit on another scale.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

from autodoc.bm25.analyzer import FUNCTION_WORDS, analyze, is_stopword
from autodoc.parse.query_parser import ParsedQuery
from autodoc.wire.protocol import ConfidenceLevel

# Measured on bench/golden (doc/benchmarks/retrieval.md): the 13 negative queries' top cosines
# run 0.33-0.68, the answerable ones' medians are 0.62-0.64, so the cosine alone cannot tell
# them apart; a word found nowhere can. It lifts such an answer to `high` only above every
# negative seen, and marks a meaning-only answer `low` below the answerable queries' tail.
NEAR_COSINE = 0.70  # at or above: a section close in meaning, though a word is missing
FAR_COSINE = 0.30  # below: nothing close in meaning


def content_words(query: ParsedQuery) -> list[tuple[str, bool]]:
    """(word as typed, lowercased; is the trailing prefix) for every word that is neither a
    stopword nor a function word, each once, in query order; a phrase keeps all of its."""
    out: dict[str, bool] = {}
    for item in query.items:
        words = item.text.split()
        for n, word in enumerate(words):
            prefix = item.prefix and n == len(words) - 1
            framing = is_stopword(word) or word.lower() in FUNCTION_WORDS
            if analyze(word) and (prefix or item.phrase or not framing):
                out.setdefault(word.lower(), prefix)
    return list(out.items())


def rare_words(absent: list[str]) -> list[str]:
    """Of words no chunk holds, those rare in English: a vault that never says `forgot` or
    `thumbnail` may still answer, one that never says `rabbitmq` does not cover it."""
    if not absent:
        return absent
    return [w for w in absent if not is_common(w.lower())]


COMMON_WORDS_FILE = "common_words.txt.gz"


def is_common(word: str) -> bool:
    """Whether `word` is an English word at Zipf 3.0 or above (once per million words), from
    wordfreq's list (bench/common_words.py writes the file, a word a line)."""
    return word in _common_words()


@functools.cache
def _common_words() -> frozenset[str]:
    """The list's 29k words, read once, on the first lookup (~7 ms: gunzip, split and set, in
    C). A search asks for every query word (`rarer_half`), so a lookup must cost nothing in a
    long-lived server: searching the list's text instead (~0.1 ms a word) made a hybrid query
    there 1.07x slower for ~5 ms saved once per process (bench/search_ab.py, adr)."""
    data = Path(__file__).with_name(COMMON_WORDS_FILE).read_bytes()
    text = gzip.decompress(data).decode("utf-8")
    while text.startswith("#"):  # the header's lines lead the file
        text = text.partition("\n")[2]
    return frozenset(text.split())


def level(
    hits: int, words: int, missing: int, cosine: float | None, lexical_hits: int
) -> ConfidenceLevel:
    """`words`: the query's content words, `missing` of them absent; `cosine`: the semantic
    stage's best (None: it did not run); `lexical_hits`: what the words found."""
    if hits == 0:
        return "none"
    far = cosine is None or cosine < FAR_COSINE
    near = cosine is not None and cosine >= NEAR_COSINE
    if words and missing == words and far:
        return "none"
    if missing and not near:
        return "low"
    if lexical_hits == 0 and far:
        return "low"
    return "high"
