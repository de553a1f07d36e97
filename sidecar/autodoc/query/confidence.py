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

from autodoc.bm25.analyzer import Lexical, analyze, is_stopword
from autodoc.parse.query_parser import ParsedQuery
from autodoc.wire.protocol import ConfidenceLevel

# Measured on bench/golden (doc/benchmarks/retrieval.md): the 13 negative queries' top cosines
# run 0.33-0.68, the answerable ones' medians are 0.62-0.64, so the cosine alone cannot tell
# them apart; a word found nowhere can. It lifts such an answer to `high` only above every
# negative seen, and marks a meaning-only answer `low` below the answerable queries' tail.
NEAR_COSINE = 0.70  # at or above: a section close in meaning, though a word is missing
FAR_COSINE = 0.30  # below: nothing close in meaning


# The frame of a question in plain words: auxiliaries, pronouns, wh-words (NLTK's English
# stopword list). Tantivy's English list (Lucene's, 33 words) keeps them, so "why did we pick
# sqlite" over a vault that never says "did" was marked `missing: did`, confidence low. They
# are still searched; they only do not count as content a vault must hold.
_FUNCTION_WORDS = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())


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


def missing_words(lexical: Lexical, words: list[tuple[str, bool]]) -> list[str]:
    """Of `words` (`content_words`'), those no chunk of the index holds, in any field (for a
    prefix: no word starts with it). The index may still hold a chunk retired seconds ago:
    such a word counts as present, and the answer's hits show it is not."""
    return lexical.missing(words)


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
