"""Stage 1's index on Tantivy: BM25 with structural field weights (spec §2).

One Tantivy index per workspace, so BM25 statistics describe that workspace alone. The index may
hold chunks SQLite does not show (being written, just retired); callers filter candidates
against their store snapshot. Queries are built in code from `ParsedQuery`, never parsed.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import numpy as np
import tantivy
from tantivy import Occur, Query

from autodoc.bm25.analyzer import (
    ANALYZER_NAME,
    CJK_ANALYZER,
    CJK_BIGRAMS,
    CJK_FIELD,
    CJK_WEIGHT,
    FIELD_WEIGHTS,
    HEX_WORD,
    LEXICAL_FORMAT,
    NAME_FIELDS,
    STEMMED,
    SYNTAX,
    SYNTAX_ANALYZER,
    SYNTAX_FIELD,
    SYNTAX_WEIGHT,
    TEXT_FIELDS,
    TIE_BREAKER,
    UNSTEMMED,
    LexicalDoc,
    analyze,
    cjk_runs,
    edit_distance,
    field_texts,
    idf_share,
    is_stopword,
    naming_words,
    normalise_numbers,
    query_terms,
    syntax_marks,
)
from autodoc.parse.query_parser import ParsedQuery, QueryItem

_FORMAT_FILE = "autodoc-format"


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
    sb.add_text_field(SYNTAX_FIELD, tokenizer_name=SYNTAX_ANALYZER)
    return sb.build()


HELD_TERMS_MAX = 24  # query terms `held_terms` tells apart (2^24: f32's exact integers)


class LexicalIndex:
    """A workspace's Tantivy index: add and retire chunks, and find candidates."""

    engine = "tantivy"  # what an answer names as the lexical stage's store

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
        self.index.register_tokenizer(SYNTAX_ANALYZER, SYNTAX)
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
            # it (FileAlreadyExists: found by tests/integration/test_reliability.py). Only this
            # process
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
            marks = syntax_marks(f"{d.title}\n{d.breadcrumb}\n{d.body}")
            if marks:
                doc.add_text(SYNTAX_FIELD, " ".join(marks))
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
            stop = item.optional or (not item.phrase and not item.prefix and is_stopword(item.text))
            (optional if stop or not all_words else required).append(clause)
        # A word's markup (`%%comment%%`, `[[note#^block]]`) is among the query's words:
        # required by the all-words pass, like them. Punctuation alone (`!!!`) is no word.
        marks = [m for item in query.items if analyze(item.text) for m in syntax_marks(item.text)]
        (required if all_words else optional).extend(
            Query.boost_query(Query.term_query(self.schema, SYNTAX_FIELD, m), SYNTAX_WEIGHT)
            for m in dict.fromkeys(marks)
        )
        if all_words and not required:  # stopwords or markup only: require them all
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

    def held_terms(self, query: ParsedQuery, chunk_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """For the ranking's features: the query's distinct content terms' IDF weights, scaled
        to 0..1 by the IDF of a term only one chunk holds (comparable across vaults), and for
        each of `chunk_ids` which of those terms it holds in any field (a bool matrix, one row
        a chunk: the candidates' term coverage, `choose kafka`'s rare word).

        One search whatever the number of terms: each term scores a constant 2^j, so a chunk's
        score is the bit set of the terms it holds (exact in Tantivy's f32 scores up to
        HELD_TERMS_MAX terms; later terms count as held nowhere)."""
        terms = query_terms(query)[:HELD_TERMS_MAX]
        held = np.zeros((len(chunk_ids), len(terms)), dtype=bool)
        if not terms or not chunk_ids:
            return np.zeros(len(terms)), held
        searcher = self.index.searcher()
        total = max(searcher.num_docs, 1)
        weights = np.zeros(len(terms))
        bits: list[tuple[Occur, Query]] = []
        for j, term in enumerate(terms):
            if cjk_runs(term):  # held inside runs: its bigrams, in their field
                alternatives = self._cjk_query(term)
                found = searcher.search(alternatives[0], 1, count=True) if alternatives else None
                df = (found.count or 0) if found is not None else 0  # type: ignore[attr-defined]
            else:
                alternatives = [Query.term_query(self.schema, n, term) for n in TEXT_FIELDS]
                df = max(searcher.doc_freq(name, term) for name in TEXT_FIELDS)
            weights[j] = idf_share(df, total)
            if df:
                anywhere = Query.boolean_query([(Occur.Should, a) for a in alternatives])
                bits.append((Occur.Should, Query.const_score_query(anywhere, float(1 << j))))
        if not bits:
            return weights, held
        among = self._among(chunk_ids)
        q = Query.boolean_query(
            [
                (Occur.Must, Query.const_score_query(among, 0.0)),
                (Occur.Must, Query.boolean_query(bits)),
            ]
        )
        result = searcher.search(q, len(chunk_ids), count=False)
        if not result.hits:
            return weights, held
        ids = searcher.fast_field_values("chunk_id", [addr for _, addr in result.hits])
        row = {cid: i for i, cid in enumerate(chunk_ids)}
        at = np.array([row.get(cast(int, cid), -1) for cid in ids])
        masks = np.rint([score for score, _ in result.hits]).astype(np.int64)
        holds = (masks[:, None] >> np.arange(len(terms))) & 1  # each term's bit, per chunk
        ours = at >= 0
        held[at[ours]] = holds[ours].astype(bool)
        return weights, held

    def _among(self, chunk_ids: list[int]) -> Query:
        """The chunks `chunk_ids`, as a union of one term query each: for the ~100 candidates a
        query ranks, about three times faster in Tantivy than a term-set query, which walks its
        whole set (measured on cpp-docs, 108k chunks: 0.21 ms against 0.62 ms)."""
        return Query.boolean_query(
            [(Occur.Should, Query.term_query(self.schema, "chunk_id", c)) for c in chunk_ids]
        )

    def rarity(self, words: list[str]) -> list[float]:
        """Each word's rarest analyzed term's IDF share (`idf_share`: 1.0 a term one chunk
        holds, 0.0 one none does); a CJK word, found inside runs rather than as a term, 1.0."""
        searcher = self.index.searcher()
        total = searcher.num_docs
        out = []
        for word in words:
            if cjk_runs(word):
                out.append(1.0)
                continue
            dfs = [max(searcher.doc_freq(n, t) for n in TEXT_FIELDS) for t in analyze(word)]
            out.append(max((idf_share(df, total) for df in dfs), default=0.0))
        return out

    def correction(self, word: str, distance: int) -> tuple[str, int] | None:
        """The indexed term within `distance` edits of `word`'s stem that the most chunks hold
        (ties: the first alphabetically), with one chunk holding it now: the word a typo most
        likely meant. The term dictionary is walked only under the stem's first or second
        letter, among chunks a fuzzy query matches (a typo in the first letter is not
        corrected); a holding chunk is looked up for the likeliest terms only, until one has
        one (the dictionary may still count a term only retired chunks held)."""
        stems = analyze(word)
        if len(stems) != 1:
            return None
        stem = stems[0]
        searcher = self.index.searcher()
        found: dict[str, int] = {}
        for name in ("title", "body"):
            fuzzy = Query.fuzzy_term_query(self.schema, name, stem, distance)
            for lead in dict.fromkeys(stem[:2]):
                for term, count in searcher.terms_with_prefix(name, lead, filter_query=fuzzy):
                    if term != stem and edit_distance(term, stem, distance) <= distance:
                        found[term] = max(found.get(term, 0), count)
        for term, _ in sorted(found.items(), key=lambda kv: (-kv[1], kv[0])):
            anywhere = Query.boolean_query(
                [(Occur.Should, Query.term_query(self.schema, n, term)) for n in TEXT_FIELDS]
            )
            hits = self.search(anywhere, 1)
            if hits:
                return term, hits[0][0]
        return None

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
