"""How a chunk becomes a sparse vector for Qdrant's lexical store (`qdrant_sparse`): the same
fields and analyzer as Tantivy's, each word's BM25 term-frequency part under its field's weight
(Qdrant adds the IDF), keyed by a stable hash of the word."""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable

from autodoc.bm25.analyzer import (
    CJK_BIGRAMS,
    CJK_FIELD,
    CJK_WEIGHT,
    FIELD_WEIGHTS,
    LexicalDoc,
    analyze,
    field_texts,
)

K1, B = 1.2, 0.75  # Tantivy's BM25 constants
WEIGHTS = {**FIELD_WEIGHTS, CJK_FIELD: CJK_WEIGHT}
CJK_TERM = "cjk:"  # a CJK bigram's term prefix: no analyzed word holds a colon


def term_id(word: str) -> int:
    return zlib.crc32(word.encode())


def chunk_words(d: LexicalDoc) -> dict[str, list[str]]:
    """The chunk's analyzed words per field, as Tantivy indexes them (CJK: bigram terms)."""
    texts = field_texts(d)
    words = {name: [w for t in values for w in analyze(t)] for name, values in texts.items()}
    words[CJK_FIELD] = [CJK_TERM + g for run in texts[CJK_FIELD] for g in bigrams(run)]
    return words


def bigrams(run: str) -> list[str]:
    return CJK_BIGRAMS.analyze(run)


def sparse_weights(
    words: dict[str, list[str]], avg: dict[str, float], fields: Iterable[str]
) -> dict[int, float]:
    """term id -> the best field's weighted BM25 term-frequency part (IDF added by Qdrant)."""
    weight: dict[int, float] = {}
    for name in fields:
        found = words.get(name, [])
        norm = K1 * (1 - B + B * len(found) / max(avg.get(name, 1.0), 1e-9))
        for word, tf in Counter(found).items():
            w = WEIGHTS[name] * tf * (K1 + 1) / (tf + norm)
            key = term_id(word)
            weight[key] = max(weight.get(key, 0.0), w)
    return weight
