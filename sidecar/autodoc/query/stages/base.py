"""What a pipeline stage is, and the one search it works on.

A stage has a name (the wire's and the picker's), says whether it can run for this search and
why not, and runs on a `QueryContext`: the frozen request (the query, the filter, the plans),
the results the stages before it left, and the trace the answer and training read.
`run_search` (query/pipeline.py) is a short loop over the registry (`stages/__init__.py`); the
answer's `stages` record, `mode_used` and the evaluation's stage sets are all derived from the
registry, never listed by hand.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal, Protocol

import numpy as np

from autodoc.bm25.analyzer import Lexical
from autodoc.models.rankers import RankPlan
from autodoc.parse.query_parser import ParsedQuery
from autodoc.query import confidence, fusion
from autodoc.query.facet_filter import FacetFilter
from autodoc.query.intent import Intent
from autodoc.store import DocumentSet, Store, Workspace
from autodoc.vectors.nearest import SemanticPlan
from autodoc.wire import protocol

Phase = Literal["snapshot", "after"]


@dataclass
class Skip:
    """Why a stage did not run; `code`, `message` and `data` are the error a search gets when
    it asked for retrieval stages that all could not run."""

    reason: str
    code: int = 0
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchOptions:
    limit: int
    stages: list[protocol.StageName]
    paths: list[str]
    demote_superseded: bool | None = None
    window: int | None = None  # how many fused hits the ranker reads (default: the workspace's)
    facets: dict[str, Any] | None = None  # {field: [values]}; a "-field" key excludes
    tags: list[str] | None = None  # tag names; "-name" excludes
    fusion: str = protocol.DEFAULT_FUSION  # "learned", "convex", "confidence" or plain "rrf"
    recency: float | None = None  # a half-life in days: newer documents rank higher


@dataclass(frozen=True)
class SearchRequest:
    """What was asked, read once before the first stage runs and never changed by one."""

    store: Store
    lexical: Lexical
    ws: Workspace
    text: str
    options: SearchOptions
    query: ParsedQuery
    flt: FacetFilter
    semantic: SemanticPlan
    rank: RankPlan
    check: Callable[[], None]
    wordless: bool
    started: float
    intent: Intent = "words"

    @cached_property
    def content_words(self) -> list[tuple[str, bool]]:
        """The query's content words (`confidence.content_words`), worked out once."""
        return confidence.content_words(self.query)


@dataclass
class StageResults:
    """What each stage leaves for the stages after it and for the answer."""

    epochs: tuple[int, int] = (0, 0)  # read inside the snapshot
    allowed: DocumentSet | None = None  # the filter's documents (None: no filter)
    absent: list[str] | None = None  # content words no chunk holds (the lexical stage's look)
    lexical_query: ParsedQuery | None = None  # the words searched, typos corrected
    did_you_mean: str | None = None  # that query as the user would type it
    ranked: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)
    signals: dict[str, list[float]] = field(default_factory=dict)  # each stage's scores
    lexical_passes: list[int] = field(default_factory=list)  # which pass found each lexical hit
    truncated: bool = False
    qvec: np.ndarray | None = None
    pending: Future | None = None  # the query's embedding, under way beside the lexical stage
    exact: list[fusion.Fused] = field(default_factory=list)
    fused: list[fusion.Fused] = field(default_factory=list)
    moved: dict[int, int] = field(default_factory=dict)  # chunk id -> successor document id
    below_floor: int = 0  # candidates the learned ranking left out as implausible
    document_p: dict[int, float] = field(default_factory=dict)  # document -> P(it answers)
    answer_p: float | None = None  # P(the vault answers at all): the answer model's, if it has one
    rows: dict[int, sqlite3.Row] = field(default_factory=dict)  # chunk id -> its row
    successor_paths: dict[int, str] = field(default_factory=dict)
    stale: set[str] = field(default_factory=set)
    rank_scores: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CandidateTrace:
    """The candidates as the fuse stage ranked them: what training learns from."""

    chunk_ids: list[int]
    features: np.ndarray  # one row a candidate, `ranking.FEATURES`'s columns
    tiers: list[int]  # the promise tiers (`stages.fuse.promise_tiers`)


@dataclass
class SearchTrace:
    """How the answer was found: which stages ran or why not, their times, the fusion and the
    ranker; with `candidates` asked for, the fuse stage's candidates and their features (training
    passes a trace in and reads it back: `bench/train_ranking.py`)."""

    capture: bool = False  # record the fuse stage's candidates and the answer inputs
    performed: list[protocol.StageName] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    engines: dict[str, str] = field(default_factory=dict)  # retrieval stage -> its store
    timings: dict[str, float] = field(default_factory=dict)
    fusion: protocol.FusionRecord | None = None
    rank_record: protocol.RankRecord | None = None
    candidates: CandidateTrace | None = None
    answer_inputs: np.ndarray | None = None  # `ranking.ANSWER_INPUTS` (learned fusion, read)

    @contextmanager
    def timed(self, key: str) -> Iterator[None]:
        """Milliseconds spent in the block, added to `key`'s (a stage may time its work in
        parts, around a wait it does not count)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            spent = (time.perf_counter() - t0) * 1000
            self.timings[key] = round(self.timings.get(key, 0.0) + spent, 2)


@dataclass
class QueryContext:
    """One search: the request, what the stages leave, and the trace of how."""

    request: SearchRequest
    results: StageResults = field(default_factory=StageResults)
    trace: SearchTrace = field(default_factory=SearchTrace)

    def absent_words(self) -> list[str]:
        """The content words no chunk holds: the lexical stage's look (it searches the words
        the query holds and corrects them from these), else one look here; once a search."""
        if self.results.absent is None:
            self.results.absent = self.request.lexical.missing(self.request.content_words)
        return self.results.absent


class StageDefaults:
    """What most stages do for the optional steps: always available, nothing to prepare,
    nothing to say when they did not run."""

    def unavailable(self, ctx: QueryContext) -> Skip | None:
        return None

    def prepare(self, ctx: QueryContext) -> Skip | None:
        return None

    def describe(self, ctx: QueryContext, conn: sqlite3.Connection | None, ran: bool) -> None:
        return None


class Stage(Protocol):
    """One step of the pipeline: registered once, in order, in `stages/__init__.py`."""

    name: ClassVar[str]
    toggle: ClassVar[bool]  # a client may leave it out (the picker's <M-l>, <M-s>, <M-r>)
    retriever: ClassVar[bool]  # it finds candidates, which fusion combines
    phase: ClassVar[Phase]  # inside the store snapshot, or after it (on the rows read there)

    def unavailable(self, ctx: QueryContext) -> Skip | None:
        """Why it cannot run for this search (None: it can)."""
        ...

    def prepare(self, ctx: QueryContext) -> Skip | None:
        """Work before the snapshot opens (embedding the query); a Skip if that failed."""
        ...

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        """Do the stage's work; `conn` is the snapshot for a `snapshot` stage, None after. A
        Skip when it could not after all (a ranker that failed: the fused order stands)."""
        ...

    def describe(self, ctx: QueryContext, conn: sqlite3.Connection | None, ran: bool) -> None:
        """For every stage, run or not, at the end of its phase (inside the snapshot for a
        `snapshot` stage): what the answer says about it."""
        ...
