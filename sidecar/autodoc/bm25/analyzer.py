"""The lexical index's words and fields (spec §2), whichever engine holds it: the analyzer
(English stems, CJK bigrams, numbers without leading zeros), stopwords, the fields a chunk is
indexed under and their weights, and the `Lexical` protocol both indexes implement (Tantivy in
`tantivy_index`, Qdrant sparse vectors in `qdrant_sparse`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import tantivy
from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

from autodoc.parse.query_parser import ParsedQuery
from autodoc.parse.record_numbers import joined_numbers, number_of

ANALYZER_NAME = "autodoc_en"

# Structural weights. A query word scores by the best field it matches in (a disjunction-max,
# no tie-breaker), boosted by that field's weight: a word in the title or an alias says what the
# document is about, in a heading path or a tag what the section is about, in the body only that
# it is mentioned. Max, not sum: a chunk carries its title three times (title, breadcrumb, the H1
# line), and summing those let title words drown the body. Weights above 1.2 cost retrieval
# quality on every visible benchmark split (doc/benchmarks/lexical.md); 1.2 still lets a title
# match outrank the same words in a body (test_title_match_outranks_the_same_word_in_a_body).
# A line that is only a link (`- [Walkthrough: Compiling a native C++ program](…)` under "See
# also") names another document: its words say what that one is about, not this one, and a
# title query found the list above the page it names. They score in a field of their own,
# below the body.
LINKS_WEIGHT = 0.3
FIELD_WEIGHTS: dict[str, float] = {
    "title": 1.2,  # the title and every alias: a document's names
    "path": 1.2,  # the file's folders and stem in words: a name too (`0042-use-kafka.md`)
    "breadcrumb": 1.1,  # the heading path and every tag: what the section is about
    "body": 1.0,
    "links": LINKS_WEIGHT,  # the words of a line that is only a link: another document's name
}
# Aliases and tags are scored inside the title and breadcrumb fields, not as fields of their
# own: most documents have none, and BM25 measures a field's length against its average over
# all documents, so a lone alias would look long and score below a body match.
TIE_BREAKER = 0.0
NAME_FIELDS = ("title", "path")  # where a number names a document (`build_names`)

# The schema's text fields, in a fixed order (Tantivy refuses a schema that differs from the one
# on disk): the scored ones. Filters by alias or tag read SQLite, not this index.
TEXT_FIELDS = tuple(FIELD_WEIGHTS)
# Chinese, Japanese and Korean have no spaces between words, so the word analyzer sees a whole
# run as one word and `数据库` never matches `我们选择了数据库检索方案`. Every run of Han, Hiragana,
# Katakana or Hangul characters is also indexed as overlapping bigrams in a field of its own, and
# a query's runs are phrases of their bigrams there (a one-character run: a bigram holding it).
CJK_FIELD, CJK_ANALYZER, CJK_WEIGHT = "cjk", "autodoc_cjk2", 1.0
_CJK_RUN = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
# Markup a query may be about: `[[note#^block]]`, `%%comment%%`, `==highlight==`, a fence
# ```` ```lang ````, `> [!note]`. The word analyzer drops punctuation, so a page that documents
# the syntax looked like any page that says "comment". Every run of two or more punctuation
# characters is also indexed as a token of its own field (Tantivy only: Qdrant's sparse terms
# are words), and a query's runs score there.
SYNTAX_FIELD, SYNTAX_ANALYZER, SYNTAX_WEIGHT = "syntax", "autodoc_syntax", 1.0
_SYNTAX_RUN = re.compile(r"[^\w\s]{2,}")
_SAME_CHAR = re.compile(r"([^\w\s])\1*")
# Bumped when what is indexed changes; a writer rebuilds an index of another format from SQLite.
LEXICAL_FORMAT = "9"
# A word that may be a short commit hash: a prefix finds the full one.
HEX_WORD = re.compile(r"^(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}$")


def _analyzer(stem: bool) -> tantivy.TextAnalyzer:
    builder = (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(100))
        .filter(Filter.lowercase())
        .filter(Filter.ascii_fold())
    )
    if stem:
        builder = builder.filter(Filter.stemmer("english"))
    return builder.build()


STEMMED = _analyzer(stem=True)
SYNTAX = TextAnalyzerBuilder(Tokenizer.whitespace()).build()


def syntax_marks(text: str) -> list[str]:
    """The markup in `text`'s runs of two or more punctuation characters: each repeated
    character (`[[`, `%%`, `==`, a fence's backticks, at most three) and each pair of different
    neighbours (`#^`, `[!`), so `[[note#^block]]` written inside backticks holds the same marks
    as typed bare."""
    marks: list[str] = []
    for run in _SYNTAX_RUN.findall(text):
        groups = [m.group(0) for m in _SAME_CHAR.finditer(run)]
        marks.extend(g[:3] for g in groups if len(g) > 1)
        marks.extend(a[-1] + b[0] for a, b in itertools.pairwise(groups))
    return marks


UNSTEMMED = _analyzer(stem=False)
CJK_BIGRAMS = (
    TextAnalyzerBuilder(Tokenizer.ngram(min_gram=2, max_gram=2, prefix_only=False))
    .filter(Filter.lowercase())
    .build()
)


def cjk_runs(text: str) -> list[str]:
    return _CJK_RUN.findall(text)


# A word that this analyzer drops is an English stopword (Lucene's list: "the", "of", "is";
# not "why", "did" or "we").
_STOP = (
    TextAnalyzerBuilder(Tokenizer.simple())
    .filter(Filter.lowercase())
    .filter(Filter.stopword("english"))
    .build()
)


# A number written with leading zeros is the same number: `0042`, `ADR-42` and `adr_0042` all
# hold the word `42` (file names pad record numbers, people do not). Only a whole run of digits
# (the analyzer's word) loses its zeros, and not after a decimal point (`1.05`).
_LEADING_ZEROS = re.compile(r"(?<![0-9A-Za-z])(?<!\d\.)0+(?=\d+(?![0-9A-Za-z]))")


def normalise_numbers(text: str) -> str:
    return _LEADING_ZEROS.sub("", text)


def analyze(text: str) -> list[str]:
    """The index's words of `text`, as a query or a hit sees them."""
    return STEMMED.analyze(normalise_numbers(text))


# A code joined to its letters (`C4996`, `LNK2019`; not `S2`: `parse/record_numbers.py`) is
# also its number, in a name: "warning 4996" finds the page titled C4996. A date in a file name
# is one word and its year, so that a record's number does not meet the day of the month
# (`2022-03-17_017-udp.md` is record 17).
_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def name_words(text: str) -> str:
    """A title's or alias's text for the index: numbers without their zeros, codes' numbers."""
    tails = joined_numbers(text)
    text = normalise_numbers(text)
    return f"{text} {' '.join(tails)}" if tails else text


def path_words(path: str) -> str:
    """A file's path as the words of its folders and stem (`.md` off), for the path field."""
    stem = path[:-3] if path.lower().endswith(".md") else path
    return name_words(_DATE.sub(r"\1 \1\2\3", stem))


def naming_words(
    numbers: list[str], query: ParsedQuery, whole: bool
) -> tuple[set[str], set[str]] | None:
    """For a names pass (`build_names`): (the words that name the document, the query's other
    words); None when the numbers hold none. `whole`: each code as written, every word of it;
    else each number's digits without their zeros (`ADR-0042` is 42)."""
    if whole:
        digits = {t for w in numbers for t in analyze(w)}
    else:
        digits = {n for w in numbers if (n := number_of(w))}
    if not digits:
        return None
    return digits, {t for item in query.items for t in analyze(item.text)} - digits


def edit_distance(a: str, b: str, cap: int) -> int:
    """Damerau-Levenshtein distance (adjacent transpositions cost 1, as Tantivy's fuzzy query
    counts them), or `cap` + 1 as soon as it must exceed `cap`."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) > cap:
            return cap + 1
        prev2, prev = prev, row
    return prev[-1]


def idf_share(df: int, total: int) -> float:
    """BM25's IDF of a term `df` of `total` chunks hold, over that of a term one chunk holds:
    0..1 whatever the vault's size (0 for a term no chunk holds)."""
    if df <= 0 or total <= 0:
        return 0.0
    rare = math.log(1 + (total - 0.5) / 1.5)
    return math.log(1 + (total - df + 0.5) / (df + 0.5)) / rare if rare > 0 else 0.0


# The frame of a question in plain words: auxiliaries, pronouns, wh-words (NLTK's English
# stopword list). Tantivy's English list (Lucene's, 33 words) keeps them, so "why did we pick
# sqlite" over a vault that never says "did" was marked `missing: did`, confidence low. They
# are still searched; they only do not count as content a vault must hold (`missing`), nor in
# the ranking's term coverage (`query_terms`).
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


def is_framing(word: str) -> bool:
    """A stopword or a word of a question's frame (FUNCTION_WORDS): no content of its own."""
    return is_stopword(word) or word.lower() in FUNCTION_WORDS


def query_terms(query: ParsedQuery) -> list[str]:
    """The query's distinct analyzed terms that are neither stopwords nor a question's frame
    (FUNCTION_WORDS), in query order (all of them when every word is one): what the ranking's
    term coverage counts."""
    terms: dict[str, None] = {}
    stops: dict[str, None] = {}
    for item in query.items:
        for word in item.text.split():
            target = stops if (not item.phrase and is_framing(word)) else terms
            for token in analyze(word):
                target.setdefault(token, None)
    return list(terms or stops)


def is_stopword(word: str) -> bool:
    return bool(UNSTEMMED.analyze(word)) and not _STOP.analyze(word)


_LINK_LINE = re.compile(
    r"^[ \t>]*(?:[-*+]|\d+[.)])?[ \t]*"  # in a list or a quote, or alone
    r"(?:!?\[((?:[^\[\]\n]|\[[^\]\n]*\])*)\]\([^)\n]*\)|\[\[([^\]\n]*)\]\])"
    r"[ \t]*[,;.]?[ \t]*(?:<br[ \t]*/?>|\\)?[ \t]*$"  # a line break after it: `<br/>`, `\`
)


def link_lines(body: str) -> tuple[str, str]:
    """(the body without its link-only lines, those lines' link texts): see LINKS_WEIGHT."""
    if "](" not in body and "[[" not in body:
        return body, ""
    prose: list[str] = []
    links: list[str] = []
    for line in body.split("\n"):
        m = _LINK_LINE.match(line) if "[" in line else None
        if m is None:
            prose.append(line)
        else:
            links.append((m[1] if m[1] is not None else m[2].split("|")[-1]).strip())
    return "\n".join(prose), "\n".join(links)


@dataclass
class LexicalDoc:
    chunk_id: int
    document_id: int
    title: str
    breadcrumb: str
    aliases: list[str]
    tags: list[str]
    body: str
    path: str = ""


def field_texts(d: LexicalDoc) -> dict[str, list[str]]:
    """The chunk's text per indexed field, before analysis: every lexical index indexes these
    (Tantivy's fields; Qdrant's sparse terms), so both see the same words."""
    prose, links = link_lines(d.body)
    return {
        "title": [name_words(t) for t in (d.title, *d.aliases)],
        "path": [path_words(d.path)],
        "breadcrumb": [normalise_numbers(t) for t in (d.breadcrumb, *d.tags)],
        "body": [normalise_numbers(prose)],
        "links": [normalise_numbers(links)] if links else [],
        CJK_FIELD: cjk_runs(f"{d.title}\n{d.breadcrumb}\n{d.body}"),
    }


class Lexical(Protocol):
    """A workspace's lexical index as the indexer and the lexical stage use it: Tantivy on this
    machine (LexicalIndex), or sparse vectors in Qdrant (qdrant_sparse.QdrantLexical). The
    queries `build`, `build_names` and `only_documents` make are the index's own, opaque to
    their callers; the index may hold chunks the caller's snapshot does not show."""

    engine: str  # the store an answer names: `tantivy`, or `qdrant-sparse:` and where it is

    def add(self, docs: Iterable[LexicalDoc]) -> int: ...
    def delete(self, chunk_ids: Iterable[int]) -> int: ...
    def delete_all(self) -> None: ...
    def commit(self) -> None: ...
    def close(self) -> None: ...
    def drop(self) -> None: ...
    def refresh(self, epoch: int) -> None: ...
    def num_docs(self) -> int: ...
    @property
    def format_ok(self) -> bool: ...
    def mark_format(self) -> None: ...
    def build(self, query: ParsedQuery, all_words: bool, restrict: Any = None) -> Any: ...
    def build_names(
        self, numbers: list[str], query: ParsedQuery, restrict: Any = None, whole: bool = False
    ) -> Any: ...
    def only_documents(
        self, keep: list[int] | None = None, drop: list[int] | None = None
    ) -> Any: ...
    def search(self, q: Any, limit: int) -> list[tuple[int, float]]: ...
    def missing(self, words: list[tuple[str, bool]]) -> list[str]: ...
    def held_terms(self, query: ParsedQuery, chunk_ids: list[int]) -> tuple[Any, Any]: ...
    def correction(self, word: str, distance: int) -> tuple[str, int] | None: ...
    def rarity(self, words: list[str]) -> list[float]: ...
