"""The ranking function (issue 41): one calibrated probability that a hit answers the query.

Every candidate the retrievers found (lexical passes, the semantic shortlist) gets a row of
features: each stage's score, rank and per-query normalised score, the cosine, the pass that
found it, the share of the query's IDF it holds, the query's intent, inbound links, a tag
match. A logistic model over them gives the probability that the hit answers; it is the order,
the relevance a client shows, and (from the top one) the answer's confidence.

The model is learned, not tuned: `bench/train_ranking.py` fits it with scikit-learn on the
visible benchmark splits and golden sets, choosing features and regularisation by
leave-one-set-out folds (doc/benchmarks/retrieval.md), and writes `ranking_model.json` beside
this module. Inference is one matrix product over the candidates.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from autodoc.query.intent import LEXICAL_FIRST
from autodoc.wire.protocol import ConfidenceLevel

if TYPE_CHECKING:
    from autodoc.query.fusion import Fused

# The features, in the model file's order. `lex_*`: the lexical stage (0 where it did not find
# the hit); `sem_*`: the semantic stage (a hit it did not find gets its shortlist's last cosine,
# an upper bound); `q_*`: the query, the same for every candidate; the rest: the hit.
BASE_FEATURES: tuple[str, ...] = (
    "lex_found",
    "lex_norm",  # BM25 / the query's best BM25
    "lex_rank",  # 1 / log2(1 + rank)
    "lex_all_words",  # found by the pass that requires every word (or the names pass)
    "lex_named",  # found by the names pass: the document a number or a code names
    "lex_rare_words",  # found by the pass that requires the query's rarer words
    "sem_found",
    "sem_cos",
    "sem_gap",  # the query's best cosine minus this one
    "sem_rank",
    "idf_cover",  # share of the query's IDF the chunk holds
    "rarest_held",  # it holds the query's rarest term
    "rare_cover",  # as idf_cover, each term weighed by its IDF cubed: the rare words' share
    "q_top_cos",  # the query's best cosine
    "q_lex_gap",  # (best BM25 - tenth) / best: how sharply the words pick their hits
    "q_avg_idf",  # the query's terms' mean IDF, 0..1: how specific its words are in this vault
    "q_max_idf",  # its rarest term's
    "q_missing",  # share of its content words found nowhere and rare in English (`missing`)
    "q_absent",  # share of its content words found nowhere, common or rare
    "q_question",
    "q_lexical_first",
    "q_terms",  # min(1, terms / 8)
    "links",  # min(1, log2(1 + inbound links) / 5)
    "outlinks",  # the same of the links the document holds: an index page holds many
    "tag",  # a tag of the document among the query's words
    "position",  # its place among its document's chunks, 0 (the first) .. 1 (the last)
    "depth",  # how deep its heading sits: min(1, (breadcrumb parts - 1) / 4)
)
# Read from the whole candidate list, so computed from the base columns (`derive`): where a hit
# stands among this query's candidates, and how much the two stages agree.
LIST_FEATURES: tuple[str, ...] = (
    "sem_z",  # (cosine - the candidates' mean) / their spread
    "lex_z",  # the same for the normalised BM25 of the hits the words found
    "q_agree",  # share of candidates both stages found
    "q_sem_spread",  # best cosine - the candidates' mean cosine
)
# The least spread a standardisation divides by: a few candidates of nearly equal score (a small
# vault, two notes that say the same) stay near-equal, not a standard deviation apart.
MIN_COSINE_SPREAD = 0.05
MIN_BM25_SPREAD = 0.1
# How much each stage's score counts depends on the query: each query feature times each
# stage's normalised score, so a linear model learns per-query stage weights.
QUERY_FEATURES = ("q_top_cos", "q_lex_gap", "q_avg_idf", "q_max_idf", "q_question",
                  "q_lexical_first", "q_terms", "q_agree", "q_sem_spread")  # fmt: skip
STAGE_SCORES = ("lex_norm", "sem_cos")
INTERACTIONS: tuple[tuple[str, str], ...] = tuple(
    (q, s) for q in QUERY_FEATURES for s in STAGE_SCORES
)
FEATURES: tuple[str, ...] = (
    BASE_FEATURES + LIST_FEATURES + tuple(f"{q}_x_{s}" for q, s in INTERACTIONS)
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}
# Which of the query's terms each candidate holds: one more index search a query
# (`Lexical.held_terms`), run only for a model that weighs one of these (or while training).
COVERAGE_FEATURES = ("idf_cover", "rarest_held", "rare_cover")
# What the query's terms' IDF gives (one document-frequency look-up a term), with the above.
_QUERY_TERM_FEATURES = ("q_avg_idf", "q_max_idf", "q_terms")
TERM_FEATURES = frozenset((*COVERAGE_FEATURES, *_QUERY_TERM_FEATURES)) | {
    f"{q}_x_{s}" for q, s in INTERACTIONS if q in _QUERY_TERM_FEATURES
}

# Which lexical pass found a hit (query/stages/lexical.py): the documents a query's numbers or
# codes name, the chunks holding every word, those holding its rarer half, those holding some.
NAMES_PASS, ALL_WORDS_PASS, RARE_WORDS_PASS, ANY_WORD_PASS = 0, 1, 2, 3


@dataclass(frozen=True)
class LinearModel:
    """One stage set's logistic model: weights over FEATURES (zero for those it leaves out)."""

    weights: np.ndarray
    intercept: float

    @cached_property
    def reads_terms(self) -> bool:
        """It weighs a feature of the query's terms (TERM_FEATURES): the fuse stage looks them
        up for this stage set, and not otherwise."""
        return bool(np.any(self.weights[[_INDEX[f] for f in sorted(TERM_FEATURES)]]))

    @cached_property
    def reads_place(self) -> bool:
        """It weighs where a candidate sits in its record (`position`, `depth`): the fuse
        stage then reads every candidate's place, not only those the section model reorders."""
        return bool(np.any(self.weights[[_INDEX["position"], _INDEX["depth"]]]))

    def probability(self, x: np.ndarray) -> np.ndarray:
        z = x @ self.weights + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)), p clipped to [1e-6, 1 - 1e-6]: finite for a certain or hopeless p."""
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(clipped / (1 - clipped))


@dataclass(frozen=True)
class DocumentCalibration:
    """The probability that a *document* answers, from its candidates' (the relevance a person
    reads: a chunk's own probability is low wherever several sections share an answer): a
    logistic over the logit of its best candidate's probability and how many of its chunks are
    candidates, fitted on the left-out folds' predictions (bench/train_ranking.py)."""

    best: float
    hits: float
    intercept: float

    def probabilities(self, best: np.ndarray, hits: np.ndarray) -> np.ndarray:
        z = self.best * logit(best) + self.hits * np.log2(hits) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


# The section model's inputs: which of a document's candidates is the section that answers (the
# document's place in the list is the ranking model's; only its own hits trade places). Where a
# section stands in its record, and how deep, read differently for a question: a question
# restates the problem in the problem's own words, and is answered further down.
SECTION_INPUTS = ("logit", "position", "position_x_question", "depth", "depth_x_question")


def section_inputs(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    """SECTION_INPUTS of each candidate from its features and its probability."""
    q = x[:, _INDEX["q_question"]]
    pos, depth = x[:, _INDEX["position"]], x[:, _INDEX["depth"]]
    return np.column_stack([logit(p), pos, pos * q, depth, depth * q])


@dataclass(frozen=True)
class SectionModel:
    """A logistic model over SECTION_INPUTS, fitted on the golden sets' documents with several
    candidate sections (bench/train_ranking.py): higher, the likelier the section answers."""

    weights: np.ndarray
    intercept: float

    def scores(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        return section_inputs(x, p) @ self.weights + self.intercept


def within_documents(
    order: Sequence[int], docs: Sequence[Any], tiers: Sequence[int], section: np.ndarray
) -> list[int]:
    """`order` (candidate indexes, best first) with each document's candidates of one tier
    trading places by their section score: the document keeps every place it had, its likeliest
    section takes the first (ties: the list's order). In numpy: no loop over the candidates."""
    if not len(order):
        return []
    at = np.asarray(order)
    _, doc_code = np.unique(np.asarray(docs)[at], return_inverse=True)
    _, group = np.unique(doc_code * (int(max(tiers)) + 1) + np.asarray(tiers)[at],
                         return_inverse=True)  # fmt: skip
    place = np.arange(len(at))
    slots = np.lexsort((place, group))  # each group's places, in list order
    best = np.lexsort((place, -np.asarray(section)[at], group))  # its candidates, best first
    out = np.empty_like(at)
    out[slots] = at[best]
    return out.tolist()


@dataclass(frozen=True)
class RankingModel:
    """The shipped model file: a version, one logistic model per stage set (`hybrid`,
    `lexical`, `semantic`), the floor under which a hit is not listed, the document
    calibration (None in a file from before it), and the top document probabilities that make
    an answer's confidence `low` or `high` (a file without the calibration: the top hit's)."""

    version: str
    models: dict[str, LinearModel]
    floor: float
    confident: float  # top probability at or above: `high`
    doubtful: float  # below: `none` (between: `low`)
    document: DocumentCalibration | None = None
    section: SectionModel | None = None  # None: a document's hits stay in probability order
    answer: AnswerModel | None = None  # None: the confidence reads the top document's probability

    def for_stages(self, stages: Sequence[str]) -> LinearModel:
        key = "hybrid" if len(stages) > 1 else (stages[0] if stages else "hybrid")
        return self.models.get(key, self.models["hybrid"])


def parse_model(data: dict[str, Any]) -> RankingModel:
    """A model file's JSON as a RankingModel; features it does not name weigh 0, and a feature
    it names that this code does not compute is an error (a model for another version)."""
    names = data["features"]
    unknown = [n for n in names if n not in _INDEX]
    if unknown:
        raise ValueError(f"ranking model {data.get('version')!r} uses unknown features {unknown}")
    models = {}
    for key, spec in data["models"].items():
        w = np.zeros(len(FEATURES))
        for name, value in zip(names, spec["coef"], strict=True):
            w[_INDEX[name]] = value
        models[key] = LinearModel(w, float(spec["intercept"]))
    doc = data.get("document")
    calibration = (
        DocumentCalibration(float(doc["best"]), float(doc["hits"]), float(doc["intercept"]))
        if doc
        else None
    )
    sec = data.get("section")
    section = (
        SectionModel(np.array([float(sec["coef"][n]) for n in SECTION_INPUTS]),
                     float(sec["intercept"]))
        if sec
        else None
    )  # fmt: skip
    return RankingModel(
        version=str(data["version"]),
        models=models,
        floor=float(data["floor"]),
        confident=float(data["confidence"]["high"]),
        doubtful=float(data["confidence"]["low"]),
        document=calibration,
        section=section,
        answer=_answer_model(data.get("answer")),
    )


def _answer_model(spec: dict[str, Any] | None) -> AnswerModel | None:
    if not spec:
        return None
    unknown = [n for n in spec["coef"] if n not in ANSWER_INPUTS]
    if unknown:
        raise ValueError(f"answer model uses unknown inputs {unknown}")
    return AnswerModel(
        np.array([float(spec["coef"].get(n, 0.0)) for n in ANSWER_INPUTS]),
        float(spec["intercept"]),
        doubtful=float(spec["confidence"]["low"]),
    )


def document_probabilities(
    model: RankingModel, scores: Sequence[float], docs: Sequence[int]
) -> dict[int, float]:
    """{document: the probability that it answers} from its candidates' probabilities (every
    candidate of the query, listed or not); without a calibration, its best candidate's."""
    if not len(docs):
        return {}
    keys, at = np.unique(np.asarray(docs), return_inverse=True)
    best = np.zeros(len(keys))
    np.maximum.at(best, at, np.asarray(scores, dtype=float))
    if model.document is not None:
        best = model.document.probabilities(best, np.bincount(at).astype(float))
    return dict(zip(keys.tolist(), best.tolist(), strict=True))


MODEL_FILE = "ranking_model.json"
# A model file to use instead of the shipped one: a fold's model while training
# (bench/train_ranking.py), never set in use.
MODEL_ENV = "AUTODOC_RANKING_MODEL"


def active_model() -> RankingModel:
    return shipped_model(os.environ.get(MODEL_ENV) or None)


@cache
def shipped_model(path: str | None = None) -> RankingModel:
    """The model shipped in the package, or the one at `path` (a fold's, when training)."""
    if path:
        with open(path, encoding="utf-8") as f:
            return parse_model(json.load(f))
    text = Path(__file__).with_name(MODEL_FILE).read_text(encoding="utf-8")
    return parse_model(json.loads(text))


@dataclass
class Evidence:
    """What the stages left for the features: each retriever's hits (in its order) and scores,
    the lexical pass of each lexical hit, the query's terms' IDF weights and which candidates
    hold each, its intent, and each document's inbound links and tag match."""

    ranked: list[tuple[str, list[tuple[int, int]]]]
    signals: dict[str, list[float]]
    lexical_passes: list[int]
    term_weights: np.ndarray
    held: np.ndarray
    intent: str
    missing_share: float
    absent_share: float
    inbound: dict[int, int]
    outbound: dict[int, int]
    tagged: set[int]
    structure: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # chunk_structure


def candidate_features(fused: list[Fused], ev: Evidence) -> np.ndarray:
    """One row of FEATURES a candidate, in `fused`'s order."""
    n = len(fused)
    x = np.zeros((n, len(FEATURES)))
    if not n:
        return x
    stages = [stage for stage, _ in ev.ranked]
    ranks = np.array([f.ranks for f in fused], dtype=float).reshape(n, len(stages))
    col = _INDEX
    if "lexical" in stages:
        _lexical_columns(ev, x, ranks[:, stages.index("lexical")])
    if "semantic" in stages:
        _semantic_columns(ev, x, ranks[:, stages.index("semantic")])
    weights = ev.term_weights
    if len(weights) and weights.sum() > 0:
        x[:, col["idf_cover"]] = ev.held @ weights / weights.sum()
        x[:, col["rarest_held"]] = ev.held[:, int(np.argmax(weights))]
        cubed = weights**3
        x[:, col["rare_cover"]] = ev.held @ cubed / cubed.sum()
        x[:, col["q_avg_idf"]] = weights.mean()
        x[:, col["q_max_idf"]] = weights.max()
    x[:, col["q_missing"]] = ev.missing_share
    x[:, col["q_absent"]] = ev.absent_share
    x[:, col["q_question"]] = float(ev.intent == "question")
    x[:, col["q_lexical_first"]] = float(ev.intent in LEXICAL_FIRST)
    x[:, col["q_terms"]] = min(1.0, len(weights) / 8)
    docs = np.array([f.document_id for f in fused])
    links = np.array([ev.inbound.get(d, 0) for d in docs.tolist()], dtype=float)
    x[:, col["links"]] = np.minimum(1.0, np.log2(1 + links) / 5)
    held = np.array([ev.outbound.get(d, 0) for d in docs.tolist()], dtype=float)
    x[:, col["outlinks"]] = np.minimum(1.0, np.log2(1 + held) / 5)
    x[:, col["tag"]] = np.isin(docs, list(ev.tagged)) if ev.tagged else 0.0
    if ev.structure:
        _structure_columns(ev.structure, [f.chunk_id for f in fused], x)
    return derive(x)


def _structure_columns(
    structure: dict[int, tuple[int, int, int]], chunk_ids: list[int], x: np.ndarray
) -> None:
    """`position` and `depth` from each candidate's place in its document."""
    ordinal, count, depth = (
        np.array([structure.get(cid, (0, 1, 0)) for cid in chunk_ids], dtype=float).reshape(-1, 3).T
    )
    x[:, _INDEX["position"]] = np.where(count > 1, ordinal / np.maximum(count - 1, 1), 0.0)
    x[:, _INDEX["depth"]] = np.minimum(1.0, depth / 4)


def derive(x: np.ndarray) -> np.ndarray:
    """Fill the LIST_FEATURES and INTERACTIONS columns from the base ones (in place; returned):
    training recomputes them from captured base columns."""
    col = _INDEX
    if len(x):
        sem = x[:, col["sem_cos"]]
        if x[:, col["sem_found"]].any():
            x[:, col["sem_z"]] = (sem - sem.mean()) / max(sem.std(), MIN_COSINE_SPREAD)
            x[:, col["q_sem_spread"]] = sem.max() - sem.mean()
        found = x[:, col["lex_found"]] > 0
        if found.any():
            lex = x[found, col["lex_norm"]]
            x[found, col["lex_z"]] = (lex - lex.mean()) / max(lex.std(), MIN_BM25_SPREAD)
        both = found & (x[:, col["sem_found"]] > 0)
        x[:, col["q_agree"]] = both.mean()
    for q, s in INTERACTIONS:
        x[:, col[f"{q}_x_{s}"]] = x[:, col[q]] * x[:, col[s]]
    return x


def _rank_feature(ranks: np.ndarray) -> np.ndarray:
    """1 / log2(1 + rank) for a found hit (1.0 first), 0 for one the stage did not find."""
    out = np.zeros_like(ranks)
    found = ranks > 0
    out[found] = 1.0 / np.log2(1 + ranks[found])
    return out


def _lexical_columns(ev: Evidence, x: np.ndarray, ranks: np.ndarray) -> None:
    col = _INDEX
    found = ranks > 0
    # Each pass ranks by BM25, but a stricter pass's hit stays above a looser one's whatever
    # their raw scores: each score capped at the one above it, as the stage lists them.
    scores = np.minimum.accumulate(np.asarray(ev.signals.get("lexical", []), dtype=float))
    passes = np.asarray(ev.lexical_passes, dtype=int)
    x[:, col["lex_found"]] = found
    x[:, col["lex_rank"]] = _rank_feature(ranks)
    if not len(scores):
        return
    at = ranks[found].astype(int) - 1
    top = scores[0] if scores[0] > 0 else 1.0
    x[found, col["lex_norm"]] = scores[at] / top
    tenth = scores[9] if len(scores) >= 10 else 0.0  # fewer than ten matches: a sharp list
    x[:, col["q_lex_gap"]] = (scores[0] - tenth) / top
    if len(passes) == len(scores):
        x[found, col["lex_all_words"]] = passes[at] <= ALL_WORDS_PASS
        x[found, col["lex_named"]] = passes[at] == NAMES_PASS
        x[found, col["lex_rare_words"]] = passes[at] == RARE_WORDS_PASS


def _semantic_columns(ev: Evidence, x: np.ndarray, ranks: np.ndarray) -> None:
    col = _INDEX
    cosines = np.asarray(ev.signals.get("semantic", []), dtype=float)
    if not len(cosines):
        return
    found = ranks > 0
    top, last = float(cosines[0]), float(cosines[-1])
    cos = np.full(len(ranks), last)
    cos[found] = cosines[ranks[found].astype(int) - 1]
    x[:, col["sem_found"]] = found
    x[:, col["sem_cos"]] = cos
    x[:, col["sem_gap"]] = top - cos
    x[:, col["sem_rank"]] = _rank_feature(ranks)
    x[:, col["q_top_cos"]] = top


def tiers(
    named: set[int], chunk_ids: Sequence[int], lexical_ranks: Sequence[int], lexical_first: bool
) -> list[int]:
    """The promises kept above the probability: what the names pass found (a number's record,
    a code's page) comes first whatever the query's shape; under a query that names its words
    (LEXICAL_FIRST) every hit the words found comes before those only meaning found."""
    out = []
    for cid, rank in zip(chunk_ids, lexical_ranks, strict=True):
        if cid in named:
            out.append(0)
        else:
            out.append(2 if lexical_first and not rank else 1)
    return out


# Whether the vault answers at all (issue 55), read from the ranked list once its order is
# known: what separates "the top hit shares the topic" from "it answers". Query-level, one row
# a search.
ANSWER_INPUTS: tuple[str, ...] = (
    "top_logit",  # logit of the listed top document's probability of answering
    "document_gap",  # that probability minus the best other document's
    "top_cover",  # share of the query's IDF the top hit holds (`idf_cover`)
    "top_rare_cover",  # the same, the rare words weighed up (`rare_cover`)
    "best_cover",  # the most of the query's IDF any of the first three hits holds
    "stages_agree",  # the words' first document is meaning's first document
    "top_all_words",  # the top hit holds every word (`lex_all_words`)
    "q_top_cos",
    "q_sem_spread",
    "q_agree",
    "q_absent",
    "q_missing",
    "q_avg_idf",
    "q_question",
    "q_lexical_first",  # the query names its words (a phrase, a prefix, a code)
)
# The inputs that are the top candidate's own FEATURES columns, by the column's name.
_TOP_COLUMNS = {"top_all_words": "lex_all_words"} | {
    name: name for name in ANSWER_INPUTS if name.startswith("q_")
}


def answer_inputs(
    x: np.ndarray, order: Sequence[int], docs: Sequence[int], document_p: dict[int, float]
) -> np.ndarray:
    """ANSWER_INPUTS for one search: `x` its candidates' FEATURES, `order` the listed order
    (candidate indexes), `docs` each candidate's document, `document_p` each document's
    probability of answering."""
    if not len(order):
        return np.zeros(len(ANSWER_INPUTS))
    col = _INDEX
    top = order[0]
    p_top = document_p.get(docs[top], 0.0)
    others = [p for d, p in document_p.items() if d != docs[top]]
    lex_first = np.flatnonzero(x[:, col["lex_rank"]] >= 1.0).tolist()  # rank 1: 1 / log2(2)
    sem_first = np.flatnonzero(x[:, col["sem_rank"]] >= 1.0).tolist()
    values = {
        "top_logit": float(logit(np.asarray(p_top))),
        "document_gap": p_top - max(others, default=0.0),
        "top_cover": x[top, col["idf_cover"]],
        "top_rare_cover": x[top, col["rare_cover"]],
        "best_cover": x[list(order[:3]), col["idf_cover"]].max(),
        "stages_agree": float(bool({docs[i] for i in lex_first} & {docs[i] for i in sem_first})),
    } | {name: x[top, col[column]] for name, column in _TOP_COLUMNS.items()}
    return np.array([values[name] for name in ANSWER_INPUTS], dtype=float)


# The answer model was fitted on vaults of 5,168 to 108,370 chunks, where a common word the vault
# never uses tells (`q_absent`); in a vault of a few notes it does not (the sample vault's "why
# did we stop using postgres", answered by its second hit, lacks "stop"). Below this many
# chunks the top document's reading stands alone.
ANSWER_MODEL_MIN_CHUNKS = 1000


def names_what_it_finds(inputs: np.ndarray) -> bool:
    """A query that names its words (a phrase, a prefix, a code, a number) whose top hit holds
    every one of them: the vault holds what was named, and the answer model is not asked (the
    confidence reads the top document's probability, as an exact title's does)."""
    at = ANSWER_INPUTS.index
    return bool(inputs[at("q_lexical_first")] and inputs[at("top_all_words")])


@dataclass(frozen=True)
class AnswerModel:
    """How likely the vault answers the query at all: a logistic over ANSWER_INPUTS fitted on the
    golden sets' answerable queries against their negatives (bench/train_answerability.py), and
    the probability below which an answer is `none` whatever its top document's reading (a veto:
    in the folds, letting it also decide `high` doubted more answerable queries for no more
    negatives found)."""

    weights: np.ndarray
    intercept: float
    doubtful: float

    def probability(self, inputs: np.ndarray) -> float:
        z = float(inputs @ self.weights) + self.intercept
        return 1.0 / (1.0 + float(np.exp(-np.clip(z, -40, 40))))


# The relevance a person reads (issue 55): each answer on one scale whose top is the answer's
# confidence, its bands the levels' (below LOW_FROM `none`, from HIGH_FROM `high`). A calibrated
# probability that a section answers is low wherever several sections share an answer, and a
# person read the right section of a `high` answer, shown at 0.11, as a poor match.
LOW_FROM, HIGH_FROM = 0.3, 0.7


def confidence_score(
    model: RankingModel, top: float | None, missing: bool = False, answered: float | None = None
) -> float:
    """The answer's confidence on the shown scale, from the calibrated probability that its top
    document answers: piecewise linear through the model's thresholds (`doubtful` → LOW_FROM,
    `confident` → HIGH_FROM), so the bands are the levels. With an answer model, `answered` (its
    probability that the vault answers at all) below the model's `doubtful` brings it under
    LOW_FROM (`none`) in proportion; an exact name at the top (probability 1) stays sure. With a
    query word the vault never holds that is rare in English (`missing`), below HIGH_FROM: the
    hits may answer the rest of the query, not that part of it."""
    if top is None:
        return 0.0
    low, high = model.doubtful, model.confident
    if top < low:
        score = LOW_FROM * top / low if low > 0 else LOW_FROM
    elif top < high:
        score = LOW_FROM + (HIGH_FROM - LOW_FROM) * (top - low) / (high - low)
    else:
        score = HIGH_FROM + (1 - HIGH_FROM) * (top - high) / max(1 - high, 1e-9)
    veto = model.answer.doubtful if model.answer is not None else 0.0
    if answered is not None and answered < veto and top < 1.0:
        score = min(score, LOW_FROM * answered / veto)
    return min(score, HIGH_FROM - 0.01) if missing else min(score, 1.0)


def confidence_level(
    model: RankingModel, top: float | None, missing: bool = False, answered: float | None = None
) -> ConfidenceLevel:
    """`none` / `low` / `high`: the band of `confidence_score` (None: no hit)."""
    if top is None:
        return "none"
    score = confidence_score(model, top, missing, answered)
    return "none" if score < LOW_FROM else "high" if score >= HIGH_FROM else "low"


def shown_relevance(
    model: RankingModel,
    probabilities: Sequence[float],
    missing: bool = False,
    answered: float | None = None,
) -> list[float]:
    """Each listed hit's relevance: its document's probability of answering (in list order,
    never above the one before it) on the answer's scale, whose top is the answer's
    `confidence_score`."""
    if not probabilities or probabilities[0] <= 0:
        return [0.0 for _ in probabilities]
    scale = confidence_score(model, probabilities[0], missing, answered) / probabilities[0]
    return [p * scale for p in probabilities]


def non_increasing(values: Sequence[float]) -> list[float]:
    """Each value capped at the one above it: a column that reads down in order."""
    out: list[float] = []
    ceiling = math.inf
    for v in values:
        ceiling = min(ceiling, v)
        out.append(ceiling)
    return out
