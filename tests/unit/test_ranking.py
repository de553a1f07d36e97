"""The learned ranking (issue 41): one calibrated probability is the order, the relevance shown
and the confidence; rules keep only the promises a user can see (exact names and codes first,
a superseded record below its successor, never above a hit that outranked it)."""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from autodoc.query import confidence, fusion, ranking
from autodoc.query.stages import SearchTrace
from autodoc.query.stages.fuse import SPARED_DOCUMENTS
from autodoc.wire import protocol

from ..conftest import EXAMPLE_VAULT, write

FIXTURES = Path(__file__).parents[1] / "fixtures"
GARDEN = FIXTURES / "garden-vault"
KAFKA_ADR = FIXTURES / "event-bus-adr.md"


def search(rpc, ws: str, query: str, **opts):
    return rpc.call("search.query", [ws, query, opts])


def indexed_copy(rpc, source: Path, root: Path, name: str):
    """`source` copied to `root`, added as workspace `name` and indexed (the bundled model)."""
    shutil.copytree(source, root)
    rpc.call("workspace.add", [name, str(root)])
    rpc.call("index.run", [name])
    return rpc


@pytest.fixture
def garden(rpc, tmp_path):
    return indexed_copy(rpc, GARDEN, tmp_path / "garden", "garden")


@pytest.fixture
def sample(rpc, tmp_path):
    return indexed_copy(rpc, EXAMPLE_VAULT, tmp_path / "vault", "kb")


# -- the model file ------------------------------------------------------------------------------


def test_the_shipped_model_covers_every_feature_and_stage_set():
    model = ranking.shipped_model()
    assert model.version.startswith("lr-")
    assert set(model.models) == {"hybrid", "lexical", "semantic"}
    for m in model.models.values():
        assert m.weights.shape == (len(ranking.FEATURES),) and np.isfinite(m.weights).all()
    assert 0 <= model.floor < model.doubtful <= model.confident < 1


def test_a_model_for_features_this_code_does_not_compute_is_refused():
    data = json.loads(
        (Path(ranking.__file__).parent / ranking.MODEL_FILE).read_text(encoding="utf-8")
    )
    data["features"] = [*data["features"], "moon_phase"]
    for spec in data["models"].values():
        spec["coef"] = [*spec["coef"], 1.0]
    with pytest.raises(ValueError, match="moon_phase"):
        ranking.parse_model(data)


def test_probability_rises_with_each_stages_evidence():
    """Calibrated and sane: more of either stage's evidence never lowers the probability."""
    model = ranking.shipped_model().models["hybrid"]
    col = {n: i for i, n in enumerate(ranking.FEATURES)}
    x = np.zeros((2, len(ranking.FEATURES)))
    x[:, col["lex_found"]] = x[:, col["sem_found"]] = 1
    x[:, col["q_top_cos"]] = 0.6
    x[0, col["sem_cos"]], x[1, col["sem_cos"]] = 0.3, 0.6
    x[0, col["sem_gap"]], x[1, col["sem_gap"]] = 0.3, 0.0
    x[:, col["lex_norm"]] = 0.5
    ranking.derive(x)
    p = model.probability(x)
    assert p[1] > p[0]


def test_the_terms_are_looked_up_only_for_a_model_that_weighs_them(
    sample, engine, tmp_path, monkeypatch
):
    """Which candidates hold which query term costs an index search a query: the fuse stage
    runs it for a model that weighs a term feature, and not for one that weighs none."""
    lexical = engine.lexical(engine.workspace("kb"))
    calls = []
    real = lexical.held_terms
    monkeypatch.setattr(lexical, "held_terms", lambda *a: calls.append(a) or real(*a))
    data = json.loads((Path(ranking.__file__).parent / ranking.MODEL_FILE).read_text("utf-8"))
    for name, reads in (("none", False), ("idf_cover", True)):
        for spec in data["models"].values():
            spec["coef"] = [
                (1.0 if f == name else 0.0) if f in ranking.TERM_FEATURES else c
                for f, c in zip(data["features"], spec["coef"], strict=True)
            ]
        path = tmp_path / f"model-{name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        monkeypatch.setenv(ranking.MODEL_ENV, str(path))
        assert ranking.active_model().models["hybrid"].reads_terms is reads
        calls.clear()
        search(sample, "kb", "storage decision", limit=5)
        assert bool(calls) is reads


@pytest.mark.parametrize("fusion_method", ["learned", "rrf"])
def test_a_trace_asked_for_holds_the_candidates_the_answer_was_ranked_from(
    sample, engine, fusion_method
):
    """Training reads the fuse stage's candidates from the search's trace (no global hook):
    one row of every feature a candidate, the listed hits among them, and the promise tiers,
    whichever fusion answers; a search that asks for no capture records none."""
    trace = SearchTrace(capture=True)
    answer = engine.reading.search("kb", "adr 3 storage", {"limit": 5, "fusion": fusion_method},
                           trace=trace)  # fmt: skip
    got = trace.candidates
    assert got is not None
    assert got.features.shape == (len(got.chunk_ids), len(ranking.FEATURES)) and got.chunk_ids
    assert {h["chunk_id"] for h in answer["hits"]} <= set(got.chunk_ids)
    assert len(got.tiers) == len(got.chunk_ids) and min(got.tiers) == 0  # a number's promise
    assert trace.performed == ["lexical", "semantic"] and trace.timings["lexical_ms"] > 0
    if fusion_method == "learned":  # the answer model's inputs, one row
        assert trace.answer_inputs is not None
        assert trace.answer_inputs.shape == (len(ranking.ANSWER_INPUTS),)
    plain = SearchTrace()
    engine.reading.search("kb", "adr 3 storage", {"limit": 5}, trace=plain)
    assert plain.candidates is None and plain.performed == ["lexical", "semantic"]


# -- the defects of issue 41 -------------------------------------------------------------------


def test_meaning_alone_lists_the_nearest_note_first_whatever_links_point_elsewhere(garden):
    """`plants that need watering in the summer`, semantic only: the link-authority boost and
    the decision-in-force reorder once put a storage ADR first and the gardening note seventh."""
    answer = search(garden, "garden", "plants that need watering in the summer",
                    stages=["semantic"], limit=10)  # fmt: skip
    assert answer["hits"][0]["path"] == "garden.md"
    assert answer["fusion"]["method"] == "learned"
    # and the hybrid default agrees
    answer = search(garden, "garden", "plants that need watering in the summer", limit=10)
    assert answer["hits"][0]["path"] == "garden.md"


def test_a_superseded_record_never_rises_above_a_hit_that_outranked_it(garden):
    query = "where do we store notes and chunks"
    plain = search(garden, "garden", query, retrieval={"demote_superseded": False}, limit=20)
    demoted = search(garden, "garden", query, limit=20)
    old = "adr/0001-store-notes-in-postgres.md"
    before = [h["chunk_id"] for h in plain["hits"]]
    after = [h["chunk_id"] for h in demoted["hits"]]
    olds = [h["chunk_id"] for h in plain["hits"] if h["path"] == old]
    assert olds, "the query should find the superseded record"
    for cid in olds:
        outranked_it = set(before[: before.index(cid)])
        assert outranked_it <= set(after[: after.index(cid)])
    new_first = next(i for i, h in enumerate(demoted["hits"]) if h["path"].endswith("sqlite.md"))
    assert all(after.index(c) > new_first for c in olds)
    assert all(h.get("superseded_by") for h in demoted["hits"] if h["path"] == old)


def test_the_rare_word_outranks_a_common_one_lexically(rpc, tmp_path):
    """`choose kafka`, lexical only: the one chunk holding `kafka` first, not the short notes
    that hold only `choose` (their title match once scored higher)."""
    root = tmp_path / "v"
    things = ["a logging library", "a test runner", "an HTTP client", "a config format",
              "a date library", "a linter", "a CI service", "a licence", "a font"]  # fmt: skip
    for n, thing in enumerate(things):
        write(root, f"choose-{n}.md", f"# Choose {thing}\n\nWe choose {thing} we can replace.\n")
    for n in range(30):
        write(root, f"meeting-{n}.md", f"# Meeting {n}\n\nWe went through item {n} of the plan.\n")
    shutil.copy(KAFKA_ADR, root / "0007-event-bus.md")
    rpc.call("workspace.add", ["v", str(root)])
    rpc.call("workspace.configure", ["v", {"embedding": "none"}])
    rpc.call("index.run", ["v"])
    answer = search(rpc, "v", "choose kafka", stages=["lexical"], limit=10)
    assert answer["hits"][0]["path"] == "0007-event-bus.md"
    # the rarer-half pass finds it before the any-word pass lists the `choose` notes, so BM25's
    # own order (plain RRF) has it first too
    rrf = search(rpc, "v", "choose kafka", stages=["lexical"], limit=10, fusion="rrf")
    assert rrf["hits"][0]["path"] == "0007-event-bus.md"


QUERIES = [
    "why did we pick SQLite",
    "sqlite",
    "storage decision",
    "store* notes",
    '"change log"',
    "adr 2",
    "plants that need watering in the summer",
    "passport",
    "zzqx unrelated nonsense",
]


@pytest.mark.parametrize("stages", [["lexical", "semantic"], ["lexical"], ["semantic"]])
@pytest.mark.parametrize("method", list(protocol.FUSIONS))
def test_relevance_never_rises_down_an_answer(garden, stages, method):
    for query in QUERIES:
        answer = search(garden, "garden", query, stages=stages, fusion=method, limit=20)
        values = [h["relevance"] for h in answer["hits"]]
        assert values == sorted(values, reverse=True), (query, values)
        assert all(0.0 <= v <= 1.0 for v in values)


def test_learned_relevance_is_the_probability_and_the_floor_leaves_out_the_implausible(
    garden, monkeypatch, tmp_path
):
    floor = ranking.active_model().floor
    query = "plants that need watering in the summer"
    answer = search(garden, "garden", query, limit=50)
    assert answer["below_floor"] >= 1  # ten notes: most are no answer to this
    # Below the floor only what the floor spares (a stage's best hit of one of its first
    # documents, tests/unit/test_query_shapes.py): all that a floor no hit reaches lists.
    data = json.loads((Path(ranking.__file__).parent / ranking.MODEL_FILE).read_text("utf-8"))
    (tmp_path / "strict.json").write_text(json.dumps({**data, "floor": 0.999999}), "utf-8")
    monkeypatch.setenv(ranking.MODEL_ENV, str(tmp_path / "strict.json"))
    spared = {h["chunk_id"] for h in search(garden, "garden", query, limit=50)["hits"]}
    assert 0 < len(spared) <= 2 * SPARED_DOCUMENTS
    assert all(h["score"] >= floor or h["chunk_id"] in spared for h in answer["hits"])
    monkeypatch.delenv(ranking.MODEL_ENV)
    version = ranking.active_model().version
    assert answer["fusion"] == {"method": "learned", "k": 0, "model": version,
                                "weights": {"lexical": 1.0, "semantic": 1.0},
                                "intent": "words"}  # fmt: skip
    rrf = search(garden, "garden", "plants that need watering in the summer", limit=50,
                 fusion="rrf")  # fmt: skip
    assert rrf["fusion"]["method"] == "rrf" and rrf["below_floor"] == 0
    assert len(rrf["hits"]) > len(answer["hits"])


def test_confidence_is_the_band_of_the_top_hits_relevance(garden):
    """The answer's confidence and its top hit's relevance are one scale: below 0.3 `none`,
    from 0.7 `high`, between `low`; the model's thresholds on the top document's probability
    are the bands' edges."""
    model = ranking.active_model()
    for query in QUERIES:
        answer = search(garden, "garden", query, limit=10)
        if not answer["hits"]:
            assert answer["confidence"] == "none", query
            continue
        top = answer["hits"][0]["relevance"]
        band = "none" if top < ranking.LOW_FROM else "high" if top >= ranking.HIGH_FROM else "low"
        assert answer["confidence"] == band, (query, top)
    assert ranking.confidence_level(model, None) == "none"
    assert ranking.confidence_level(model, model.confident) == "high"
    assert ranking.confidence_score(model, model.confident) == ranking.HIGH_FROM
    assert ranking.confidence_score(model, model.doubtful) == ranking.LOW_FROM
    assert ranking.confidence_level(model, (model.doubtful + model.confident) / 2) == "low"
    assert ranking.confidence_level(model, 1.0, missing=True) == "low"  # a rare word nowhere


def test_an_exact_title_and_a_record_number_stay_first(sample):
    answer = search(sample, "kb", "Search pipeline", limit=5)
    assert answer["hits"][0]["path"] == "notes/search-pipeline.md"
    assert "exact" in answer["hits"][0]["via"] and answer["hits"][0]["relevance"] == 1.0
    answer = search(sample, "kb", "adr 4", limit=5)
    assert answer["hits"][0]["path"] == "adr/0004-lease-recovery.md"
    assert answer["fusion"]["intent"] == "number"


# -- missing words -----------------------------------------------------------------------------


def test_a_common_word_the_vault_never_uses_is_not_news():
    assert all(map(confidence.is_common, ["forgot", "messed", "thumbnail", "watering"]))
    assert not any(map(confidence.is_common, ["rabbitmq", "kafka", "kubernetes"]))


def test_missing_lists_only_rare_absent_words(garden):
    answer = search(garden, "garden", "forgot rabbitmq thumbnail", limit=5)
    assert answer["missing"] == ["rabbitmq"]


def test_demotion_keeps_each_documents_own_order():
    hits = [fusion.Fused(i, d) for i, d in enumerate([1, 1, 2])]
    fusion.demote_superseded(hits, {1: 2})
    assert [h.chunk_id for h in hits] == [2, 0, 1]


# -- typos -------------------------------------------------------------------------------------


def test_a_misspelt_word_is_answered_with_did_you_mean(garden):
    answer = search(garden, "garden", "lavendre rosemary", stages=["lexical"], limit=5)
    assert answer["did_you_mean"] == "lavender rosemary"
    assert answer["hits"][0]["path"] == "garden.md"
    assert "lavendre" in answer["missing"]  # what was typed is still found nowhere
    # two edits for a long word, the surface form the vault writes, case kept elsewhere
    answer = search(garden, "garden", "Tomatoes and cucumbrs rossemarry", limit=5)
    assert answer["did_you_mean"] == "Tomatoes and cucumbers rosemary"


def test_a_word_the_vault_holds_or_a_short_one_is_never_corrected(garden):
    assert "did_you_mean" not in search(garden, "garden", "lavender", limit=5)
    assert "did_you_mean" not in search(garden, "garden", "basl", limit=5)  # four letters
    assert "did_you_mean" not in search(garden, "garden", "zzqxwv", limit=5)  # nothing near
    assert "did_you_mean" not in search(garden, "garden", "lavend*", limit=5)  # a prefix


def test_edit_distance_counts_a_swap_as_one_and_stops_past_its_cap():
    from autodoc.bm25.analyzer import edit_distance

    assert edit_distance("lavender", "lavendre", 2) == 1
    assert edit_distance("kitten", "sitting", 3) == 3
    assert edit_distance("kitten", "sitting", 1) == 2
    assert edit_distance("abc", "abc", 0) == 0


# -- markup ------------------------------------------------------------------------------------

SYNTAX_PAGES = {
    "comments.md": ("# Comments", "Text between `%%` pairs is hidden in preview: `%%a comment%%`."),
    "highlights.md": ("# Highlights", "Mark text with `==` on both sides: `==highlighted==`."),
    "block-links.md": (
        "# Linking to a block",
        "Append `#^id` to a note's name: `[[note#^block]]`.",
    ),
    "callouts.md": ("# Callouts", "Start a quote with a type: `> [!note]` or `> [!warning]`."),
    "fences.md": (
        "# Code blocks",
        "Open a fence with three backticks and a language: ```` ```lang ````.",
    ),
}
# Pages that say the same words in prose, more often: without the markup they would tie or win.
DISTRACTORS = {
    "comment.md": "# Comment\n\nA comment on a comment: comment early, comment often.\n",
    "highlight.md": "# Highlight\n\nHighlight the highlight of the week, then highlight it.\n",
    "note-block.md": "# Note block\n\nA note block: note the block, block the note.\n",
    "note.md": "# Note\n\nA note about a note: note it.\n",
    "lang.md": "# Lang\n\nLang, the lang list: each lang we use.\n",
}


@pytest.mark.parametrize(
    ("query", "page"),
    [("%%comment%%", "comments.md"), ("==highlight==", "highlights.md"),
     ("[[note#^block]]", "block-links.md"), ("> [!note]", "callouts.md"),
     ("```lang", "fences.md")],
)  # fmt: skip
def test_a_markup_query_finds_the_page_that_documents_it(rpc, tmp_path, query, page):
    root = tmp_path / "v"
    for name, (title, body) in SYNTAX_PAGES.items():
        write(root, name, f"{title}\n\n{body}\n")
    for name, text in DISTRACTORS.items():
        write(root, name, text)
    rpc.call("workspace.add", ["v", str(root)])
    rpc.call("workspace.configure", ["v", {"embedding": "none"}])
    rpc.call("index.run", ["v"])
    assert search(rpc, "v", query, limit=5)["hits"][0]["path"] == page


def test_the_top_hit_of_a_sure_answer_reads_as_a_good_match(sample):
    """The relevance shown is the calibrated probability that the hit's document answers (a
    section's own probability is low wherever several sections share an answer: the README's
    first question showed 0.11 beside the right section of a `high` answer): a `high` answer's
    top hit reads at least 0.5, and the column never rises down the list."""
    for query in ("why did we pick sqlite", "how does the writer lease recover after a crash"):
        answer = search(sample, "kb", query, limit=10)
        shown = [h["relevance"] for h in answer["hits"]]
        assert answer["confidence"] == "high", query
        assert shown[0] >= 0.5, (query, shown)
        assert shown == sorted(shown, reverse=True)


def test_a_documents_sections_trade_places_within_its_own():
    """The section model reorders only a document's own candidates of one tier: every
    document keeps the places it had, its likeliest section takes the first."""
    order = [0, 1, 2, 3, 4, 5]
    docs = ["a", "b", "a", "c", "a", "b"]
    tiers = [1, 1, 1, 1, 1, 1]
    section = np.array([0.1, 0.5, 0.9, 0.0, 0.3, 0.7])
    got = ranking.within_documents(order, docs, tiers, section)
    assert [docs[i] for i in got] == docs  # the documents' places are kept
    assert got == [2, 5, 4, 3, 0, 1]
    named = [0, 1, 1, 1, 1, 1]  # a promise (tier 0) is no section to trade with
    assert ranking.within_documents(order, docs, named, section) == [0, 5, 2, 3, 4, 1]


def test_the_section_model_reads_a_questions_place_in_the_record():
    """Shipped, the section model prefers a record's later section for a question and its
    earlier one otherwise (fitted on the golden sets' judged sections, retrieval.md)."""
    model = ranking.shipped_model().section
    assert model is not None
    col = {n: i for i, n in enumerate(ranking.FEATURES)}
    x = np.zeros((2, len(ranking.FEATURES)))
    x[:, col["position"]] = [0.1, 0.8]
    p = np.array([0.3, 0.3])
    early, late = model.scores(x, p)
    assert early > late  # words: the opening section
    x[:, col["q_question"]] = 1
    early, late = model.scores(x, p)
    assert late > early  # a question: the section further down


# -- whether the vault answers at all (the answer model) -------------------------------------


def _with_answer_model(tmp_path, monkeypatch, coef: dict[str, float], intercept: float):
    """The shipped model file with an answer model of these weights, made the active model."""
    data = json.loads((Path(ranking.__file__).parent / ranking.MODEL_FILE).read_text("utf-8"))
    data["answer"] = {"coef": coef, "intercept": intercept, "confidence": {"low": 0.3}}
    path = tmp_path / f"with-answer-{intercept}.json"  # a model is read once a path
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv(ranking.MODEL_ENV, str(path))
    return ranking.active_model()


def test_the_answer_inputs_read_the_ranked_list_as_a_whole():
    """One row a search: the listed top document's probability as a logit and its lead over
    the next, what the first hits hold of the query, whether the words' and the meaning's first
    documents agree, and the query's own columns."""
    col = {name: i for i, name in enumerate(ranking.FEATURES)}
    x = np.zeros((3, len(ranking.FEATURES)))
    x[:, col["idf_cover"]] = (0.2, 0.9, 0.5)
    x[:, col["rare_cover"]] = (0.1, 0.8, 0.4)
    x[:, col["lex_rank"]] = (0.0, 1.0, 0.63)  # the words' first hit: candidate 1 (document 7)
    x[:, col["sem_rank"]] = (1.0, 0.0, 0.5)  # meaning's first: candidate 0 (document 7 too)
    x[:, col["q_top_cos"]] = 0.61
    got = dict(zip(ranking.ANSWER_INPUTS,
                   ranking.answer_inputs(x, [1, 0, 2], [7, 7, 9], {7: 0.8, 9: 0.3}),
                   strict=True))  # fmt: skip
    assert got["top_logit"] == pytest.approx(np.log(0.8 / 0.2))
    assert got["document_gap"] == pytest.approx(0.5)
    assert (got["top_cover"], got["top_rare_cover"], got["best_cover"]) == (0.9, 0.8, 0.9)
    assert got["stages_agree"] == 1.0 and got["q_top_cos"] == 0.61
    disagree = ranking.answer_inputs(x, [1, 0, 2], [7, 8, 9], {7: 0.8, 8: 0.1, 9: 0.3})
    assert disagree[ranking.ANSWER_INPUTS.index("stages_agree")] == 0.0
    assert not ranking.answer_inputs(x, [], [], {}).any()


def test_an_answer_model_file_naming_inputs_this_code_lacks_is_refused():
    data = json.loads((Path(ranking.__file__).parent / ranking.MODEL_FILE).read_text("utf-8"))
    data["answer"] = {"coef": {"moon_phase": 1.0}, "intercept": 0.0, "confidence": {"low": 0.3}}
    with pytest.raises(ValueError, match="moon_phase"):
        ranking.parse_model(data)


def test_the_answer_model_vetoes_a_topical_answer_but_not_a_named_hit(
    sample, tmp_path, monkeypatch
):
    """With an answer model in the file, a probability that the vault answers below its
    threshold makes the answer `none` and brings the relevance scale's top under 0.3 (a topical
    top hit still listed, the column still falling); above it, the top document's reading
    stands. A query that names what its top hit holds (a quoted phrase found, an exact title),
    a search by one stage and a vault far smaller than those it learned from keep the top
    document's reading."""
    question = "why did we pick sqlite"
    assert search(sample, "kb", question, limit=5)["confidence"] == "high"
    alone = search(sample, "kb", question, limit=5, stages=["lexical"])["confidence"]
    _with_answer_model(tmp_path, monkeypatch, {"top_cover": 0.0}, intercept=-4.0)  # "never"
    # a vault far smaller than those it was trained on (52 chunks) is not asked
    assert search(sample, "kb", question, limit=5)["confidence"] == "high"
    monkeypatch.setattr(ranking, "ANSWER_MODEL_MIN_CHUNKS", 50)
    # trained on hybrid searches: one stage alone keeps its top document's reading
    assert search(sample, "kb", question, limit=5, stages=["lexical"])["confidence"] == alone
    answer = search(sample, "kb", question, limit=5)
    shown = [h["relevance"] for h in answer["hits"]]
    assert answer["confidence"] == "none" and shown and shown[0] < ranking.LOW_FROM
    assert shown == sorted(shown, reverse=True)
    assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"  # order unchanged
    phrase = search(sample, "kb", '"embedded relational store"', limit=5)
    assert phrase["fusion"]["intent"] == "phrase" and phrase["confidence"] == "high"
    title = search(sample, "kb", "Search pipeline", limit=5)
    assert title["confidence"] == "high" and title["hits"][0]["relevance"] == 1.0
    _with_answer_model(tmp_path, monkeypatch, {"top_cover": 0.0}, intercept=4.0)  # "always"
    assert search(sample, "kb", question, limit=5)["confidence"] == "high"


def test_a_chunks_place_counts_its_documents_live_chunks_after_edits(rpc, engine, tmp_path):
    """`store.chunk_structure` reads a document's chunk count as its last live ordinal + 1: true
    after the document gains and loses sections (kept chunks renumbered), and each chunk's
    depth is its breadcrumb's headings above its own."""
    from autodoc import store

    root = tmp_path / "v"
    note = write(root, "long.md", "# Long\n\n" + "".join(f"## Part {i}\n\nText {i}.\n\n"
                                                          for i in range(6)))  # fmt: skip
    rpc.call("workspace.add", ["v", str(root)])
    for body in (
        "# Long\n\n## New first\n\nNew.\n\n"
        + "".join(f"## Part {i}\n\nText {i}.\n\n" for i in (0, 2, 5)),
        "# Long\n\n## Only\n\n### Deeper\n\nOne.\n",
    ):
        rpc.call("index.run", ["v"])
        with engine.store.snapshot() as conn:
            live = conn.execute(
                "SELECT id FROM chunks WHERE state = 1 AND document_id ="
                " (SELECT id FROM documents WHERE path = 'long.md')"
            ).fetchall()
            got = store.chunk_structure(conn, [r[0] for r in live])
        assert {count for _, count, _ in got.values()} == {len(live)}
        assert sorted(ordinal for ordinal, _, _ in got.values()) == list(range(len(live)))
        note.write_text(body, encoding="utf-8")
    rpc.call("index.run", ["v"])
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT id, breadcrumb FROM chunks WHERE state = 1 AND breadcrumb LIKE '%Deeper'"
        ).fetchall()
        assert [store.chunk_structure(conn, [rows[0][0]])[rows[0][0]][2]] == [2]


def test_reading_only_the_reorderable_places_changes_no_answer(garden, monkeypatch):
    """The fuse stage reads the places of only the candidates the section model can reorder
    (a document with another candidate) when the ranking model weighs no place: every answer
    is the one it gives reading every candidate's place."""
    from autodoc.query.stages import fuse

    queries = [*QUERIES, "watering schedule", "what grows in shade", "compost"]
    partial = [search(garden, "garden", q, limit=10)["hits"] for q in queries]
    read = fuse.placed
    monkeypatch.setattr(fuse, "placed", lambda fused, every: read(fused, every=True))
    full = [search(garden, "garden", q, limit=10)["hits"] for q in queries]
    assert [[h["chunk_id"] for h in hits] for hits in partial] == [
        [h["chunk_id"] for h in hits] for hits in full
    ]
    assert any(len({h["path"] for h in hits}) < len(hits) for hits in full)  # sections traded


def test_the_confidence_scale_is_linear_between_the_thresholds_and_the_veto_caps_it():
    """`confidence_score`: 0 .. doubtful onto 0 .. 0.3, doubtful .. confident onto 0.3 .. 0.7,
    confident .. 1 onto 0.7 .. 1, never above 1; a rare missing word caps it under 0.7; an answer
    model's probability below its threshold caps it in proportion under 0.3, unless the top is an
    exact name (1.0); without an answer model that probability is not read."""
    base = ranking.shipped_model()
    model = dataclasses.replace(base, doubtful=0.2, confident=0.6, answer=None)
    score = functools.partial(ranking.confidence_score, model)
    assert score(None) == 0.0
    assert [round(score(p), 6) for p in (0.1, 0.2, 0.4, 0.6, 0.8, 1.0)] == [
        0.15,
        0.3,
        0.5,
        0.7,
        0.85,
        1.0,
    ]
    assert score(1.0, missing=True) == pytest.approx(ranking.HIGH_FROM - 0.01)
    assert score(0.4, missing=True) == pytest.approx(0.5)
    assert score(0.8, answered=0.01) == pytest.approx(0.85)  # no answer model: not read
    veto = ranking.AnswerModel(np.zeros(len(ranking.ANSWER_INPUTS)), 0.0, doubtful=0.5)
    vetoing = dataclasses.replace(model, answer=veto)
    assert ranking.confidence_score(vetoing, 0.8, answered=0.25) == pytest.approx(0.15)
    assert ranking.confidence_score(vetoing, 0.8, answered=0.6) == pytest.approx(0.85)
    assert ranking.confidence_score(vetoing, 0.1, answered=0.4) == pytest.approx(0.15)
    assert ranking.confidence_score(vetoing, 1.0, answered=0.1) == 1.0  # an exact name
    assert ranking.confidence_level(vetoing, 0.8, answered=0.25) == "none"
    assert veto.probability(np.ones(len(ranking.ANSWER_INPUTS))) == 0.5


def test_only_a_query_naming_what_its_top_holds_skips_the_answer_model():
    at = ranking.ANSWER_INPUTS.index
    for lexical_first, all_words, skipped in ((1, 1, True), (1, 0, False), (0, 1, False)):
        inputs = np.zeros(len(ranking.ANSWER_INPUTS))
        inputs[at("q_lexical_first")], inputs[at("top_all_words")] = lexical_first, all_words
        assert ranking.names_what_it_finds(inputs) is skipped


def test_one_document_leads_by_its_whole_probability():
    x = np.zeros((2, len(ranking.FEATURES)))
    got = ranking.answer_inputs(x, [0, 1], [5, 5], {5: 0.9})
    assert got[ranking.ANSWER_INPUTS.index("document_gap")] == pytest.approx(0.9)
    assert got[ranking.ANSWER_INPUTS.index("stages_agree")] == 0.0  # neither stage found one


def test_the_answer_model_file_gives_each_input_its_weight_and_the_rest_none():
    """The shipped file's answer model weighs each input as the file says; a file naming only
    some inputs weighs the others 0."""
    data = json.loads((Path(ranking.__file__).parent / ranking.MODEL_FILE).read_text("utf-8"))
    shipped = ranking.parse_model(data).answer
    assert shipped is not None
    coef = data["answer"]["coef"]
    assert shipped.weights.tolist() == [coef.get(n, 0.0) for n in ranking.ANSWER_INPUTS]
    assert any(shipped.weights) and shipped.doubtful == data["answer"]["confidence"]["low"]
    data["answer"] = {"coef": {"top_cover": 2.0}, "intercept": -1.0, "confidence": {"low": 0.2}}
    only = ranking.parse_model(data).answer
    assert only is not None
    assert only.weights.tolist() == [2.0 if n == "top_cover" else 0.0
                                     for n in ranking.ANSWER_INPUTS]  # fmt: skip


def test_the_section_reorder_is_the_slot_by_slot_exchange_within_each_document_and_tier():
    """`within_documents` against the plain statement of the rule (each (document, tier) group
    keeps its places, its candidates fill them best first, ties in list order), on seeded
    random lists with many documents and mixed tiers."""
    rng = np.random.default_rng(55)

    def by_rule(order, docs, tiers, section):
        slots: dict = {}
        for i in order:
            slots.setdefault((docs[i], tiers[i]), []).append(i)
        best = {k: sorted(held, key=lambda i: -section[i]) for k, held in slots.items()}
        taken: dict = {}
        out = []
        for i in order:
            k = (docs[i], tiers[i])
            out.append(best[k][taken.get(k, 0)])
            taken[k] = taken.get(k, 0) + 1
        return out

    for _ in range(300):
        n = int(rng.integers(1, 40))
        docs = rng.integers(0, 12, n).tolist()
        tiers = rng.integers(0, 3, n).tolist()
        section = rng.choice([0.1, 0.5, 0.9], n) + rng.random(n) * rng.integers(0, 2)
        order = rng.permutation(n).tolist()
        assert ranking.within_documents(order, docs, tiers, section) == by_rule(
            order, docs, tiers, section
        )


def test_the_best_cover_reads_the_first_three_hits_only():
    x = np.zeros((4, len(ranking.FEATURES)))
    x[:, ranking.FEATURES.index("idf_cover")] = (0.1, 0.2, 0.3, 0.9)
    got = ranking.answer_inputs(x, [0, 1, 2, 3], [1, 2, 3, 4], {1: 0.5, 2: 0.4, 3: 0.3, 4: 0.2})
    assert got[ranking.ANSWER_INPUTS.index("best_cover")] == pytest.approx(0.3)


def test_a_certain_or_hopeless_top_document_gives_a_finite_logit():
    x = np.zeros((1, len(ranking.FEATURES)))
    for p in (1.0, 0.0):
        got = ranking.answer_inputs(x, [0], [7], {7: p})
        assert np.isfinite(got).all() and abs(got[0]) < 20
