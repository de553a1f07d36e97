"""Stage 1, lexical: BM25 on Tantivy with structural field weights (spec §2).

One Tantivy index per workspace, so BM25 statistics describe that workspace alone. The index may
hold chunks SQLite does not show (being written, just retired); callers filter candidates
against their store snapshot. Queries are built in code from `ParsedQuery`, never parsed.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import tantivy
from tantivy import Filter, Occur, Query, TextAnalyzerBuilder, Tokenizer

from autodoc.parse.query_parser import ParsedQuery, QueryItem

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
# Bumped when what is indexed changes; a writer rebuilds an index of another format from SQLite.
LEXICAL_FORMAT = "7"
_FORMAT_FILE = "autodoc-format"

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


# A code joined to its letters (`C4996`, `LNK2019`) is also its number, in a name: "warning
# 4996" finds the page titled C4996. A date in a file name is one word and its year, so that a
# record's number does not meet the day of the month (`2022-03-17_017-udp.md` is record 17).
_CODE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{1,5}0*(\d+)(?![A-Za-z0-9])")
_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def name_words(text: str) -> str:
    """A title's or alias's text for the index: numbers without their zeros, codes' numbers."""
    tails = _CODE.findall(text)
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
        digits = {str(int(m[-1])) for w in numbers if (m := re.findall(r"\d+", w))}
    if not digits:
        return None
    return digits, {t for item in query.items for t in analyze(item.text)} - digits


def is_stopword(word: str) -> bool:
    return bool(UNSTEMMED.analyze(word)) and not _STOP.analyze(word)


def build_schema() -> tantivy.Schema:
    """Only what a query reads: `chunk_id` (a fast field, read per hit, and indexed for
    deletes), `document_id` (indexed, for filters) and the scored text. Nothing is stored:
    SQLite holds every chunk's row, and a hit is read from there."""
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("chunk_id", indexed=True, fast=True)
    sb.add_unsigned_field("document_id", indexed=True)
    for name in TEXT_FIELDS:
        sb.add_text_field(name, tokenizer_name=ANALYZER_NAME)
    sb.add_text_field(CJK_FIELD, tokenizer_name=CJK_ANALYZER)
    return sb.build()


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
    machine (LexicalIndex), or sparse vectors in Qdrant (qdrant_lexical.QdrantLexical). The
    queries `build`, `build_names` and `only_documents` make are the index's own, opaque to
    their callers; the index may hold chunks the caller's snapshot does not show."""

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


class LexicalIndex:
    """A workspace's Tantivy index: add and retire chunks, and find candidates."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.schema = build_schema()
        fresh = not (path / "meta.json").exists()
        try:
            self.index = tantivy.Index(self.schema, str(path), reuse=True)
        except ValueError:  # another schema (an older AutoDoc) or a damaged index: start over
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
            self.index = tantivy.Index(self.schema, str(path), reuse=True)
            fresh = True
        if fresh:
            self.mark_format()
        self.index.register_tokenizer(ANALYZER_NAME, STEMMED)
        self.index.register_tokenizer(CJK_ANALYZER, CJK_BIGRAMS)
        self.index.config_reader(reload_policy="Manual")
        self._writer: tantivy.IndexWriter | None = None
        self.epoch_seen = -1

    @property
    def format_ok(self) -> bool:
        try:
            return (self.path / _FORMAT_FILE).read_text().strip() == LEXICAL_FORMAT
        except OSError:
            return False

    def mark_format(self) -> None:
        (self.path / _FORMAT_FILE).write_text(LEXICAL_FORMAT)

    @staticmethod
    def destroy(path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def drop(self) -> None:
        """The index goes (its workspace was removed)."""
        self.close()
        self.destroy(self.path)

    # -- writing ----------------------------------------------------------------------------

    def _w(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self.index.writer(heap_size=64_000_000, num_threads=1)
            # A writer killed after writing a segment or delete file but before its commit
            # leaves that file behind, and the next commit at the same opstamp would fail on
            # it (FileAlreadyExists: found by tests/test_reliability.py). Only this process
            # writes (the store's lease), so files no commit references are safe to drop.
            self._writer.garbage_collect_files()
        return self._writer

    def add(self, docs: Iterable[LexicalDoc]) -> int:
        w = self._w()
        n = 0
        for d in docs:
            doc = tantivy.Document()
            doc.add_unsigned("chunk_id", d.chunk_id)
            doc.add_unsigned("document_id", d.document_id)
            for name, values in field_texts(d).items():
                for value in values:  # one value a CJK run: no bigram spans two
                    doc.add_text(name, value)
            w.add_document(doc)
            n += 1
        return n

    def delete(self, chunk_ids: Iterable[int]) -> int:
        # delete_documents_by_term does not match u64 terms in tantivy-py 0.27: go by query.
        ids = list(chunk_ids)
        w = self._w()
        for start in range(0, len(ids), 1024):
            part = ids[start : start + 1024]
            w.delete_documents_by_query(Query.term_set_query(self.schema, "chunk_id", part))
        return len(ids)

    def delete_all(self) -> None:
        self._w().delete_all_documents()

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()
            self.index.reload()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.rollback()
            self._writer.wait_merging_threads()
            self._writer = None

    # -- reading ----------------------------------------------------------------------------

    def refresh(self, epoch: int) -> None:
        """Reload the searcher when the writer has committed since we last looked."""
        if epoch != self.epoch_seen:
            self.index.reload()
            self.epoch_seen = epoch

    def num_docs(self) -> int:
        return self.index.searcher().num_docs

    def build(
        self, query: ParsedQuery, all_words: bool, restrict: tuple[Occur, Query] | None = None
    ):
        """The Tantivy query for `query`: every word required, or any word (the fallback);
        `restrict` (from `only_documents`) filters before ranking."""
        required: list[Query] = []
        optional: list[Query] = []
        for item in query.items:
            clause = self._item_query(item)
            if clause is None:
                continue
            stop = not item.phrase and not item.prefix and is_stopword(item.text)
            (optional if stop or not all_words else required).append(clause)
        if all_words and not required:  # a query of stopwords only: require them all
            required, optional = optional, []
        if not required and not optional:
            return None
        words = Query.boolean_query(
            [(Occur.Must, q) for q in required] + [(Occur.Should, q) for q in optional]
        )
        if restrict is None:
            return words
        return Query.boolean_query([(Occur.Must, words), restrict])

    def build_names(
        self,
        numbers: list[str],
        query: ParsedQuery,
        restrict: tuple[Occur, Query] | None = None,
        whole: bool = False,
    ) -> Query | None:
        """The documents a query's numbers name: each number (its digits: `ADR-0042` is 42,
        `C4996` 4996) in the title or the path, required; the query's other words score in
        those fields only, so "jabref 0058" ranks JabRef's record 58 above another project's,
        and a record that only mentions ADR 58 in its text is not among them. `whole`: each
        code as written (`c1083`, `adr-42`: every word of it), for a code inside a longer
        query, where a bare number (`sha256`'s 256) would name a record by accident."""
        named = naming_words(numbers, query, whole)
        if named is None:
            return None
        digits, others = named
        required = [self._in_fields(token) for token in sorted(digits)]
        # A code names the page; the other words choose its section (`lnk2019 linking 32-bit
        # library into 64-bit code`), so they score in every field. A number's other words
        # choose between records (`jabref 0058`): only in the names.
        fields = TEXT_FIELDS if whole else NAME_FIELDS
        scored = [self._in_fields(token, fields) for token in sorted(others)]
        names = Query.boolean_query(
            [(Occur.Must, q) for q in required] + [(Occur.Should, q) for q in scored]
        )
        return names if restrict is None else Query.boolean_query([(Occur.Must, names), restrict])

    def _in_fields(self, token: str, fields: Iterable[str] = NAME_FIELDS) -> Query:
        """`token` in the best of `fields` (the names, by default), each with its weight."""
        per_field = [
            Query.boost_query(Query.term_query(self.schema, name, token), FIELD_WEIGHTS[name])
            for name in fields
        ]
        return Query.disjunction_max_query(per_field, TIE_BREAKER)

    def only_documents(
        self, keep: list[int] | None = None, drop: list[int] | None = None
    ) -> tuple[Occur, Query]:
        """A clause for `build`: only chunks of the `keep` documents, or none of the `drop` ones
        (the caller passes the shorter list: a term set's cost grows with its size)."""
        if keep is not None:
            return (Occur.Must, Query.term_set_query(self.schema, "document_id", keep))
        return (Occur.MustNot, Query.term_set_query(self.schema, "document_id", drop or []))

    def _item_query(self, item: QueryItem) -> Query | None:
        tokens = analyze(item.text)
        if not tokens:
            return None
        prefix_tail = None
        if item.prefix:
            raw = UNSTEMMED.analyze(normalise_numbers(item.text))
            prefix_tail = raw[-1] if raw else None
        # Built with tantivy's element type: its stubs take a `list`, which is invariant.
        phrase: list[str | tuple[int, str]] = list(tokens)
        per_field: list[Query] = []
        for name, weight in FIELD_WEIGHTS.items():
            alternatives: list[Query] = []
            if len(tokens) == 1:
                alternatives.append(Query.term_query(self.schema, name, tokens[0]))
            else:
                alternatives.append(Query.phrase_query(self.schema, name, phrase))
            if prefix_tail:
                words: list[str | tuple[int, str]] = [*tokens[:-1], prefix_tail]
                alternatives.append(Query.phrase_prefix_query(self.schema, name, words))
            elif len(tokens) == 1 and HEX_WORD.match(tokens[0]):
                # A short commit prefix should find the full hash.
                alternatives.append(Query.phrase_prefix_query(self.schema, name, phrase))
            q = (
                alternatives[0]
                if len(alternatives) == 1
                else Query.boolean_query([(Occur.Should, a) for a in alternatives])
            )
            per_field.append(Query.boost_query(q, weight))
        per_field.extend(self._cjk_query(item.text))
        return Query.disjunction_max_query(per_field, TIE_BREAKER)

    def missing(self, words: list[tuple[str, bool]]) -> list[str]:
        """Of (word, is a prefix), those no chunk holds in any field, read from one searcher."""
        searcher = self.index.searcher()
        return [word for word, prefix in words if not self._holds(searcher, word, prefix)]

    def _holds(self, searcher: tantivy.Searcher, word: str, prefix: bool) -> bool:
        """Whether some chunk holds `word` in any field (`prefix`: some word starts with it; a
        CJK word: its runs). A chunk retired seconds ago may still count."""
        if cjk_runs(word):  # words without spaces: a run of the text holds them
            q = self._cjk_query(word)
            return bool(q) and bool(searcher.search(q[0], 1, count=False).hits)
        if prefix:
            tail = UNSTEMMED.analyze(word)[-1:]
            return bool(tail) and any(
                searcher.terms_with_prefix(name, tail[0], limit=1) for name in TEXT_FIELDS
            )
        return all(
            any(searcher.doc_freq(name, token) for name in TEXT_FIELDS) for token in analyze(word)
        )

    def _cjk_query(self, text: str) -> list[Query]:
        """The item's CJK runs in the bigram field, all of them (empty: it has none)."""
        runs = []
        for run in cjk_runs(text):
            # The n-gram tokenizer puts every bigram of a value at position 0: a phrase of them
            # all at 0 is every bigram in one run of the text (as Tantivy's own parser builds it).
            grams: list[str | tuple[int, str]] = [(0, g) for g in CJK_BIGRAMS.analyze(run)]
            if len(grams) > 1:
                runs.append(Query.phrase_query(self.schema, CJK_FIELD, grams))
            elif grams:
                runs.append(Query.term_query(self.schema, CJK_FIELD, CJK_BIGRAMS.analyze(run)[0]))
            else:  # one character: any bigram that holds it
                c = re.escape(run)
                runs.append(Query.regex_query(self.schema, CJK_FIELD, f"{c}.|.{c}"))
        if not runs:
            return []
        q = runs[0] if len(runs) == 1 else Query.boolean_query([(Occur.Must, r) for r in runs])
        return [Query.boost_query(q, CJK_WEIGHT)]

    def search(self, q: Query, limit: int) -> list[tuple[int, float]]:
        """The top `limit` (chunk_id, bm25) best first; ties broken by chunk id so the order is
        stable. (No offset: Tantivy pages ties in its own document order, not ours.)"""
        searcher = self.index.searcher()
        result = searcher.search(q, limit, count=False)
        if not result.hits:
            return []
        # chunk_id is an unsigned fast field: its values are ints.
        ids = cast(
            list[int], searcher.fast_field_values("chunk_id", [addr for _, addr in result.hits])
        )
        pairs = [(cid, score) for (score, _), cid in zip(result.hits, ids, strict=True)]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return pairs

    def all_chunk_ids(self) -> set[int]:
        """Every chunk id in the index (used to reconcile after a crash; not on the query path)."""
        searcher = self.index.searcher()
        total = searcher.num_docs
        if not total:
            return set()
        result = searcher.search(Query.all_query(), total, count=False)
        ids = cast(list[int], searcher.fast_field_values("chunk_id", [a for _, a in result.hits]))
        return set(ids)
