"""An answer says how sure it is: under the learned ranking from the top hit's calibrated
probability; under a fixed fusion from absolute evidence (words found nowhere, how near the
nearest meaning is), never from the per-query normalised relevance."""

from __future__ import annotations

import pytest

from autodoc.parse.query_parser import parse_query
from autodoc.query import ranking
from autodoc.query.confidence import FAR_COSINE, NEAR_COSINE, content_words, level

from ..conftest import lexical_workspace, write


@pytest.fixture
def kb(rpc, vault):
    write(vault, "adr/0001-kafka.md", "# Use Kafka\n\nEvents go through Kafka; retries back off.\n")
    write(vault, "adr/0002-postgres.md", "# Use Postgres\n\nOne database for the orders.\n")
    lexical_workspace(rpc, vault, "kb")
    return rpc


def ask(rpc, query):
    return rpc.call("search.query", ["kb", query, {"stages": ["lexical"]}])


def test_content_words_leave_stopwords_out_and_keep_phrases_and_the_prefix():
    words = content_words(parse_query('why is the "kafka of it" Kafka retr*'))
    assert words == [("kafka", False), ("of", False), ("it", False), ("retr", True)]
    # A question's frame is not content: a vault that never says "did" can still answer it.
    assert content_words(parse_query("why did we pick sqlite")) == [("pick", False),
                                                                     ("sqlite", False)]  # fmt: skip


@pytest.mark.parametrize(
    "query, missing, confidence",
    [
        ("kafka retries", [], "high"),
        ("kafka rabbitmq", ["rabbitmq"], None),  # found by one word; the other is nowhere
        ("rabbitmq", ["rabbitmq"], "none"),  # nothing found at all
        # `dead` and `letters` occur nowhere too, but they are common English: no news
        ("RabbitMQ dead letters", ["rabbitmq"], "none"),
        ("orders in kaf*", [], "high"),
        ("orders in zzq*", ["zzq"], None),
        ("orders kafka-zzq*", ["kafka-zzq"], None),  # the prefix is the last part only
        ("the of", [], "high"),  # stopwords only: nothing to be missing
        ("why did we use kafka", [], "high"),  # "why", "did", "we" occur nowhere: the frame
        ("why did we choose rabbitmq", ["rabbitmq"], "none"),
    ],
)
def test_every_answer_names_the_rare_words_found_nowhere_and_its_confidence(
    kb, query, missing, confidence
):
    """`missing` lists the absent words rare in English; the confidence is the band the top
    hit's relevance reads in (the relevance's scale tops out at the answer's confidence; None:
    whatever that reading is)."""
    answer = ask(kb, query)
    assert (answer["missing"], answer["cosine"]) == (missing, None)
    top = answer["hits"][0]["relevance"] if answer["hits"] else None
    expected = (
        "none" if top is None or top < ranking.LOW_FROM
        else "high" if top >= ranking.HIGH_FROM else "low"
    )  # fmt: skip
    assert answer["confidence"] == expected
    if confidence is not None:
        assert answer["confidence"] == confidence, query
    plain = kb.call("search.query", ["kb", query, {"stages": ["lexical"], "fusion": "rrf"}])
    assert plain["missing"] == missing  # the same words, whatever the fusion


def test_a_deleted_word_stops_counting_once_its_chunk_is_gone(kb, vault):
    (vault / "adr" / "0002-postgres.md").write_text("# Use Postgres\n\nOne store.\n")
    kb.call("index.run", ["kb"])
    kb.engine.indexing.index_run("kb")
    answer = ask(kb, "orders")
    assert answer["hits"] == [] and answer["confidence"] == "none"


@pytest.mark.parametrize(
    "hits, words, missing, cosine, lexical_hits, expected",
    [
        (0, 2, 0, 0.9, 0, "none"),  # nothing to show
        (5, 2, 2, None, 0, "none"),  # every word missing, no meaning to go by
        (5, 2, 2, FAR_COSINE - 0.01, 0, "none"),
        (5, 2, 2, FAR_COSINE, 0, "low"),  # the nearest meaning is not far
        (5, 2, 1, NEAR_COSINE - 0.01, 3, "low"),  # a word missing, meaning not close
        (5, 2, 1, NEAR_COSINE, 3, "high"),  # a word missing, but a section close in meaning
        (5, 2, 0, FAR_COSINE - 0.01, 0, "low"),  # only meaning found anything, and it is far
        (5, 2, 0, FAR_COSINE - 0.01, 1, "high"),  # the words found it
        (5, 0, 0, None, 3, "high"),
    ],
)
def test_the_levels_follow_the_evidence(hits, words, missing, cosine, lexical_hits, expected):
    assert level(hits, words, missing, cosine, lexical_hits) == expected
