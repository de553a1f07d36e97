"""The lexical stage on Qdrant: BM25 as sparse vectors, so one cluster serves both stages.

With `embedding.store: {kind: qdrant, …}` (and `lexical` not "tantivy") a workspace's lexical
index is a Qdrant collection of its own (IDF counts that workspace alone, as its Tantivy index
does), and the machine running AutoDoc keeps no Tantivy index. A point is a chunk (id = chunk
id). Its words come from the same fields and analyzer as Tantivy's (lexical.field_texts,
lexical.analyze): stemming, number normalising, codes' numbers and CJK bigrams stay as they are.

- Sparse vector `bm25`: per word, the best field's BM25 term-frequency part times that field's
  weight (the dis-max Tantivy scores with); the collection's IDF modifier multiplies in the
  inverse document frequency at query time. `names`: the same for the title and path only.
  Length normalisation uses the workspace's running average field lengths (kept beside the
  store, in `qdrant.json`); points written earlier keep the average of their day.
- Payload: `doc`, `terms` (its distinct words, a keyword index with prefixes: required words and
  `word*`), `grams` (its CJK bigrams), `names` (the title's and path's words: a number naming a
  record) and `words` (the analyzed words in order, a text index with phrases: a quoted or
  multi-word item).
- Readers search an alias; a rebuild fills a new collection (`…-g<n>`) and its commit moves the
  alias in one request, so readers see the old index or the new one, never neither.

Queries mirror LexicalIndex.build: every non-stopword item required (a filter), then any word;
the names pass requires its numbers in `names`. What differs from Tantivy, by design: a phrase
is matched on the analyzed words of all fields in a row (a phrase may span two fields' edge),
and a prefix scores only as the word it may already be; a query of prefixes alone is filled
with the chunks that match it, unscored. Term ids are CRC32 of the word (a collision between
two of a vault's words merges their weights, rare at 2^32).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autodoc.bm25.analyzer import (
    CJK_FIELD,
    HEX_WORD,
    LEXICAL_FORMAT,
    NAME_FIELDS,
    UNSTEMMED,
    LexicalDoc,
    analyze,
    cjk_runs,
    idf_share,
    is_stopword,
    naming_words,
    normalise_numbers,
    query_terms,
)
from autodoc.bm25.sparse_encoding import (
    CJK_TERM,
    WEIGHTS,
    bigrams,
    chunk_words,
    sparse_weights,
    term_id,
)
from autodoc.parse.query_parser import ParsedQuery, QueryItem
from autodoc.store.qdrant_connection import client_for, is_local, location_kind, quiet

BM25, NAMES = "bm25", "names"
UPSERT_BATCH = 256  # points a call
DELETE_BATCH = 1024
MISSING_PAGE = 64  # chunks a request for the query's missing words reads
FORMAT = f"{LEXICAL_FORMAT}.q1"  # bumped when what a point holds changes: the writer rebuilds
_STATE_FILE = "qdrant.json"


@dataclass
class SparseQuery:
    """One pass: the sparse vector scored (`using`), the filter every hit passes, and whether
    chunks matching the filter but none of the scored words fill the rest (prefixes alone)."""

    using: str
    vector: Counter
    must: list = field(default_factory=list)
    must_not: list = field(default_factory=list)
    fill: bool = False


@dataclass
class _Lengths:
    """Running field-length sums over the chunks written: BM25's average document length."""

    count: int = 0
    sums: dict[str, float] = field(default_factory=dict)

    def add(self, words: dict[str, list[str]]) -> None:
        self.count += 1
        for name, found in words.items():
            self.sums[name] = self.sums.get(name, 0.0) + len(found)

    def average(self) -> dict[str, float]:
        return {name: total / max(self.count, 1) for name, total in self.sums.items()}


class QdrantLexical:
    """A workspace's lexical index as sparse vectors in Qdrant (lexical.Lexical)."""

    def __init__(self, spec: dict[str, Any], local: Path, owner: str, ws_id: int) -> None:
        from qdrant_client import models

        self.m = models
        self.spec = spec
        self.engine = f"qdrant-sparse:{location_kind(spec)}"
        self.client, self.lock = client_for(spec)
        self.local = is_local(spec)
        self.name = collection_name(spec, owner, ws_id)  # an alias of the collection in use
        self.building: str | None = None  # the collection a rebuild fills, until its commit
        self.state_path = local / _STATE_FILE
        local.mkdir(parents=True, exist_ok=True)
        self.lengths = self._load_lengths()
        self._ensure()

    # -- the collection --------------------------------------------------------------------

    def _load_lengths(self) -> _Lengths:
        try:
            state = json.loads(self.state_path.read_text())
            return _Lengths(int(state["count"]), {k: float(v) for k, v in state["sums"].items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return _Lengths()

    def _aliased(self) -> str | None:
        for alias in self.client.get_aliases().aliases:
            if alias.alias_name == self.name:
                return str(alias.collection_name)
        return None

    def _current(self) -> str | None:
        """The collection the alias names (None: none yet, or it was deleted under it)."""
        name = self._aliased()
        return name if name is not None and self.client.collection_exists(name) else None

    def _ensure(self) -> None:
        with self.lock:
            if self._current() is not None:
                return
            first = f"{self.name}-g1"
            if self.client.collection_exists(first):  # made by a process killed before its alias
                self.client.delete_collection(first)
            self._create(first)
            self._point_alias_at(first)
        # Made now, so of this format (as a fresh Tantivy index is); a collection made empty
        # where SQLite holds chunks is refilled by the reconcile (fewer entries than chunks).
        self.lengths = _Lengths()
        self._save(format_=FORMAT)

    def _create(self, name: str) -> None:
        m = self.m
        sparse = m.SparseVectorParams(modifier=m.Modifier.IDF)
        self.client.create_collection(
            name,
            vectors_config={},
            sparse_vectors_config={BM25: sparse, NAMES: sparse},
            shard_number=self.spec.get("shards", 1),
            replication_factor=self.spec.get("replicas", 1),
        )
        keyword = m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, prefix=True)
        text = m.TextIndexParams(
            type=m.TextIndexType.TEXT,
            tokenizer=m.TokenizerType.WHITESPACE,  # the words are analyzed already
            lowercase=False,
            phrase_matching=True,
        )
        indexes = {"doc": m.PayloadSchemaType.INTEGER, "terms": keyword, "names": keyword,
                   "grams": keyword, "words": text}  # fmt: skip
        for key, schema in indexes.items():
            with quiet(self.local):  # local mode: "payload indexes have no effect"
                self.client.create_payload_index(name, key, schema)

    def _point_alias_at(self, collection: str) -> None:
        """One request: readers see the old collection or the new one, never neither."""
        m = self.m
        change: list[Any] = []
        if self._aliased():
            change.append(_delete_alias(m, self.name))
        create = m.CreateAlias(collection_name=collection, alias_name=self.name)
        change.append(m.CreateAliasOperation(create_alias=create))
        self.client.update_collection_aliases(change_aliases_operations=change)

    def drop(self) -> None:
        """The collections go (the workspace was removed, or moved off Qdrant)."""
        with self.lock:
            current = self._current()
            if self._aliased() is not None:
                delete = _delete_alias(self.m, self.name)
                self.client.update_collection_aliases(change_aliases_operations=[delete])
            for name in {current, self.building} - {None}:
                if self.client.collection_exists(name):
                    self.client.delete_collection(name)
        self.building = None
        self.state_path.unlink(missing_ok=True)

    # -- writing (the writer, under the store's lease) ----------------------------------------

    def add(self, docs: Iterable[LexicalDoc]) -> int:
        """Upserted as they come, in batches: a point the caller's snapshot does not show yet
        is filtered out by its readers, as Tantivy's uncommitted documents would be."""
        n = 0
        batch: list[LexicalDoc] = []
        for d in docs:
            batch.append(d)
            if len(batch) >= UPSERT_BATCH:
                n += self._upsert(batch)
                batch = []
        return n + self._upsert(batch)

    def _upsert(self, docs: list[LexicalDoc]) -> int:
        if not docs:
            return 0
        words = [chunk_words(d) for d in docs]
        for w in words:
            self.lengths.add(w)
        avg = self.lengths.average()
        points = [self._point(d, w, avg) for d, w in zip(docs, words, strict=True)]
        with self.lock:
            self.client.upsert(self._target(), points, wait=True)
        return len(points)

    def _point(self, d: LexicalDoc, words: dict[str, list[str]], avg: dict[str, float]) -> Any:
        m = self.m
        every = sparse_weights(words, avg, WEIGHTS)
        names = sparse_weights(words, avg, NAME_FIELDS)
        in_order = "\n".join(
            " ".join(found) for name, found in words.items() if found and name != CJK_FIELD
        )
        return m.PointStruct(
            id=d.chunk_id,
            vector={BM25: _sparse(m, every), NAMES: _sparse(m, names)},
            payload={
                "doc": d.document_id,
                "terms": sorted(
                    {w for name, found in words.items() if name != CJK_FIELD for w in found}
                ),
                "grams": sorted({w.removeprefix(CJK_TERM) for w in words[CJK_FIELD]}),
                "names": sorted({w for name in NAME_FIELDS for w in words[name]}),
                "words": in_order,
            },
        )

    def delete(self, chunk_ids: Iterable[int]) -> int:
        ids: list[Any] = list(chunk_ids)
        for start in range(0, len(ids), DELETE_BATCH):
            part = ids[start : start + DELETE_BATCH]
            with self.lock:
                selector = self.m.PointIdsList(points=part)
                self.client.delete(self._target(), points_selector=selector)
        return len(ids)

    def _target(self) -> str:
        return self.building or self.name

    def delete_all(self) -> None:
        """A rebuild fills a new collection; readers keep the one the alias names until the
        commit moves the alias (Tantivy's readers keep theirs until its commit, too)."""
        with self.lock:
            current = self._current() or f"{self.name}-g0"
            number = int(current.rsplit("-g", 1)[1]) + 1 if "-g" in current else 1
            self.building = f"{self.name}-g{number}"
            if self.client.collection_exists(self.building):  # left by a killed rebuild
                self.client.delete_collection(self.building)
            self._create(self.building)
        self.lengths = _Lengths()

    def commit(self) -> None:
        """Points are written as they come (wait=True). A rebuild's collection takes the alias
        and the old one goes; the lengths are kept."""
        if self.building is not None:
            with self.lock:
                old = self._current()
                self._point_alias_at(self.building)
                if old is not None and old != self.building:
                    self.client.delete_collection(old)
            self.building = None
        self._save(format_=self._saved_format())

    def close(self) -> None:
        """An uncommitted rebuild's collection goes, as Tantivy's rollback drops its adds."""
        if self.building is not None:
            with self.lock:
                if self.client.collection_exists(self.building):
                    self.client.delete_collection(self.building)
            self.building = None

    def _saved_format(self) -> str:
        try:
            return str(json.loads(self.state_path.read_text()).get("format", ""))
        except (OSError, ValueError, AttributeError):
            return ""

    def _save(self, format_: str) -> None:
        state = {"format": format_, "count": self.lengths.count, "sums": self.lengths.sums}
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(self.state_path)

    @property
    def format_ok(self) -> bool:
        return self._saved_format() == FORMAT

    def mark_format(self) -> None:
        self._save(format_=FORMAT)

    def num_docs(self) -> int:
        with self.lock:
            return int(self.client.count(self.name, exact=True).count)

    def refresh(self, epoch: int) -> None:
        return None  # the server answers from what it holds; readers filter by their snapshot

    # -- queries ---------------------------------------------------------------------------

    def build(
        self, query: ParsedQuery, all_words: bool, restrict: tuple[str, Any] | None = None
    ) -> SparseQuery | None:
        """As LexicalIndex.build: every word required (stopwords scored, not required), or
        any word; `restrict` from `only_documents`."""
        vector: Counter = Counter()
        required: list[Any] = []
        optional: list[Any] = []
        open_ended = False
        for item in query.items:
            scored, condition, unscored = self._item(item)
            if condition is None:
                continue
            vector.update(scored)
            open_ended |= unscored
            stop = item.optional or (not item.phrase and not item.prefix and is_stopword(item.text))
            (optional if stop or not all_words else required).append(condition)
        if all_words and not required and optional:  # stopwords only: require them all
            return self.build(_without_stops(query), all_words, restrict)
        if not required and not optional:
            return None
        # Any word: some item matched as a whole (a phrase's words in a row, a run's bigrams).
        must = required if all_words else [self.m.Filter(should=optional)]
        return _restricted(SparseQuery(BM25, vector, must=must, fill=open_ended), restrict)

    def _item(self, item: QueryItem) -> tuple[list[int], Any, bool]:
        """(the item's scored term ids, the condition a chunk holding it passes, whether it may
        match words it does not score as: a `word*`, a short commit hash, a one-character CJK
        run)."""
        m = self.m
        tokens = analyze(item.text)
        if not tokens:
            return [], None, False
        scored = [term_id(t) for t in tokens]
        # The words as analyzed (a term, or a phrase of them), or else (as Tantivy's phrase
        # prefix) the words before the last and a word starting with the last as typed.
        whole = _term(m, tokens[0]) if len(tokens) == 1 else _phrase(m, tokens)
        either = [whole]
        tail = UNSTEMMED.analyze(normalise_numbers(item.text))[-1:] if item.prefix else []
        if tail:
            words = [_term(m, t) for t in tokens[:-1]]
            either.append(m.Filter(must=[*words, _prefix(m, tail[0])]))
            scored += [term_id(t) for t in tail]
        hex_word = not item.prefix and len(tokens) == 1 and bool(HEX_WORD.match(tokens[0]))
        if hex_word:  # a short commit prefix: the full hash
            either.append(_prefix(m, tokens[0]))
        runs = cjk_runs(item.text)
        if runs:  # every run of the item, each as its bigrams (Tantivy's CJK field)
            either.append(m.Filter(must=[self._cjk(run) for run in runs]))
            scored += [term_id(CJK_TERM + g) for run in runs for g in bigrams(run)]
        unscored = bool(tail) or hex_word or any(not bigrams(run) for run in runs)
        return scored, either[0] if len(either) == 1 else m.Filter(should=either), unscored

    def _cjk(self, run: str) -> Any:
        """Every bigram of the run held (a one-character run: some bigram holding it)."""
        m = self.m
        grams = bigrams(run)
        if not grams:
            return m.FieldCondition(key="grams", match=m.MatchSubstring(substring=run))
        return m.Filter(must=[_gram(m, g) for g in grams])

    def build_names(
        self,
        numbers: list[str],
        query: ParsedQuery,
        restrict: tuple[str, Any] | None = None,
        whole: bool = False,
    ) -> SparseQuery | None:
        """As LexicalIndex.build_names: the numbers (`whole`: the codes as written) required in
        a title or path; the other words score in the names (`whole`: everywhere)."""
        named = naming_words(numbers, query, whole)
        if named is None:
            return None
        digits, others = named
        required = [
            self.m.FieldCondition(key="names", match=self.m.MatchValue(value=d))
            for d in sorted(digits)
        ]
        vector = Counter(term_id(t) for t in digits | others)
        return _restricted(SparseQuery(BM25 if whole else NAMES, vector, required), restrict)

    def only_documents(
        self, keep: list[int] | None = None, drop: list[int] | None = None
    ) -> tuple[str, Any]:
        m = self.m
        if keep is not None:
            return "must", m.FieldCondition(key="doc", match=m.MatchAny(any=keep))
        return "must_not", m.FieldCondition(key="doc", match=m.MatchAny(any=drop or []))

    def search(self, q: SparseQuery, limit: int) -> list[tuple[int, float]]:
        """The top `limit` (chunk_id, score) best first, ties by chunk id; a prefix-only pass
        filled with the chunks that match it and score no word (0.0)."""
        m = self.m
        keys = sorted(q.vector)
        flt = m.Filter(must=q.must or None, must_not=q.must_not or None)
        with self.lock, quiet(self.local):
            points = self.client.query_points(
                self.name,
                query=m.SparseVector(indices=keys, values=[float(q.vector[k]) for k in keys]),
                using=q.using,
                query_filter=flt,
                limit=limit,
                with_payload=False,
            ).points
        pairs = [(int(p.id), float(p.score)) for p in points]
        if q.fill and len(pairs) < limit:
            pairs += self._unscored(q, {cid for cid, _ in pairs}, limit - len(pairs))
        pairs.sort(key=lambda p: (-round(p[1], 6), p[0]))
        return pairs

    def _unscored(self, q: SparseQuery, found: set[int], limit: int) -> list[tuple[int, float]]:
        m = self.m
        seen = [m.HasIdCondition(has_id=sorted(found))] if found else []
        flt = m.Filter(must=q.must or None, must_not=(q.must_not + seen) or None)
        with self.lock:
            points, _ = self.client.scroll(
                self.name, scroll_filter=flt, limit=limit, with_payload=False
            )
        return [(int(p.id), 0.0) for p in points]

    def missing(self, words: list[tuple[str, bool]]) -> list[str]:
        """Of (word, is a prefix), those no chunk holds (CJK: its runs): a few requests for all
        of them, not one a word. Each asks for chunks holding some word not yet seen and
        reads their terms; a short page means the words still unseen are held nowhere."""
        units = {word: self._units(word, prefix) for word, prefix in words}
        pending = {u for found in units.values() for u in found}
        while pending:
            seen, short = self._seen(sorted(pending))
            pending -= seen
            if short:
                break
            if not seen:  # a full page that holds none of them (it cannot, by `_holds`):
                pending.clear()  # count them present rather than ask for ever
                break
        return [w for w, found in units.items() if not found or any(u in pending for u in found)]

    def held_terms(self, query: ParsedQuery, chunk_ids: list[int]) -> tuple[Any, Any]:
        """As `LexicalIndex.held_terms`, the candidates' terms read from their payloads (one
        request)."""
        terms = query_terms(query)
        held = np.zeros((len(chunk_ids), len(terms)), dtype=bool)
        if not terms or not chunk_ids:
            return np.zeros(len(terms)), held
        weights = np.array(self._idf_shares(terms))
        with self.lock:
            points = self.client.retrieve(self.name, ids=chunk_ids, with_payload=["terms", "grams"])
        row = {cid: i for i, cid in enumerate(chunk_ids)}
        units = [("run", t) if cjk_runs(t) else ("term", t) for t in terms]
        for p in points:
            have = (set(p.payload.get("terms", [])), set(p.payload.get("grams", [])))
            held[row[int(p.id)]] = [_holds(have, u) for u in units]
        return weights, held

    def rarity(self, words: list[str]) -> list[float]:
        """As `LexicalIndex.rarity` (a CJK word: 1.0)."""
        shares = [max(self._idf_shares(analyze(w)), default=0.0) for w in words]
        return [1.0 if cjk_runs(w) else share for w, share in zip(words, shares, strict=True)]

    def _idf_shares(self, terms: list[str]) -> list[float]:
        """Each term's `idf_share`, from exact counts of the chunks holding it (a CJK word:
        every bigram of it)."""
        m = self.m
        with self.lock, quiet(self.local):
            total = self.client.count(self.name, exact=True).count
            held = [self._cjk(t) if cjk_runs(t) else _term(m, t) for t in terms]
            counts = [
                self.client.count(self.name, count_filter=m.Filter(must=[h])).count for h in held
            ]
        return [idf_share(df, total) for df in counts]

    def correction(self, word: str, distance: int) -> tuple[str, int] | None:
        """No typo correction on Qdrant's sparse vectors: it has no term dictionary to walk
        (doc/scale.md says so); a misspelt word finds what meaning finds."""
        return None

    def _units(self, word: str, prefix: bool) -> list[tuple[str, str]]:
        """What holding `word` means, as (kind, text) each some chunk must hold."""
        if cjk_runs(word):
            return [("run", run) for run in cjk_runs(word)]
        if prefix:
            tail = UNSTEMMED.analyze(word)[-1:]
            return [("prefix", tail[0])] if tail else []
        return [("term", t) for t in analyze(word)]

    def _seen(self, units: list[tuple[str, str]]) -> tuple[set[tuple[str, str]], bool]:
        """The units some chunk of one page holds, and whether the page was short (every chunk
        holding any of them was read, so the rest are held nowhere)."""
        m = self.m
        conditions = [self._unit_condition(u) for u in units]
        with self.lock:
            points, _ = self.client.scroll(
                self.name,
                scroll_filter=m.Filter(should=conditions),
                limit=MISSING_PAGE,
                with_payload=["terms", "grams"],
            )
        held = [(set(p.payload["terms"]), set(p.payload["grams"])) for p in points]
        seen = {u for u in units if any(_holds(h, u) for h in held)}
        return seen, len(points) < MISSING_PAGE

    def _unit_condition(self, unit: tuple[str, str]) -> Any:
        kind, text = unit
        if kind == "run":
            return self._cjk(text)
        return _prefix(self.m, text) if kind == "prefix" else _term(self.m, text)


def _holds(held: tuple[set[str], set[str]], unit: tuple[str, str]) -> bool:
    """Whether a chunk of these (terms, CJK bigrams) holds the unit: as its filter asks."""
    terms, grams = held
    kind, text = unit
    if kind == "term":
        return text in terms
    if kind == "prefix":
        return any(t.startswith(text) for t in terms)
    wanted = bigrams(text)
    if wanted:
        return all(g in grams for g in wanted)
    return any(text in g for g in grams)


def collection_name(spec: dict[str, Any], owner: str, ws_id: int) -> str:
    base = spec.get("collection") or f"autodoc-{owner[:12]}"
    return f"{base}-lexical-{ws_id}"


def _delete_alias(m: Any, alias: str) -> Any:
    return m.DeleteAliasOperation(delete_alias=m.DeleteAlias(alias_name=alias))


def _term(m: Any, word: str) -> Any:
    return m.FieldCondition(key="terms", match=m.MatchValue(value=word))


def _gram(m: Any, gram: str) -> Any:
    return m.FieldCondition(key="grams", match=m.MatchValue(value=gram))


def _phrase(m: Any, tokens: list[str]) -> Any:
    return m.FieldCondition(key="words", match=m.MatchPhrase(phrase=" ".join(tokens)))


def _prefix(m: Any, start: str) -> Any:
    return m.FieldCondition(key="terms", match=m.MatchPrefix(prefix=start))


def _sparse(m: Any, weights: dict[int, float]) -> Any:
    keys = sorted(weights)
    return m.SparseVector(indices=keys, values=[weights[k] for k in keys])


def _restricted(q: SparseQuery, restrict: tuple[str, Any] | None) -> SparseQuery:
    if restrict is not None:
        (q.must if restrict[0] == "must" else q.must_not).append(restrict[1])
    return q


def _without_stops(query: ParsedQuery) -> ParsedQuery:
    """The query with its stopwords marked as phrases: required, as Tantivy requires a query of
    stopwords only."""
    items = [QueryItem(i.text, phrase=True, prefix=i.prefix) for i in query.items]
    return dataclasses.replace(query, items=items)
