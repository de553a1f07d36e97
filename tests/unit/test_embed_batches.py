"""The bundled embedder's batching and its parallel workers (issue 26): same batches, same
vectors, same order, every text once, the meter exact, a query never waiting on a worker."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from autodoc.models.embedders import (
    BATCH_TOKENS,
    CHECK_TEXTS,
    MAX_BATCH,
    bundled_embedder,
    token_batches,
)

WORDS = (
    "index vault chunk heading store reader writer lease vector query rerank section compiler "
    "error warning linker symbol template exception handler option default value"
)


def varied_texts(n: int = 60, seed: int = 3) -> list[str]:
    """Texts from 3 to ~300 words: short ones share calls, long ones (truncated) run alone."""
    rng = random.Random(seed)
    return [
        " ".join(rng.choices(WORDS.split(), k=rng.choice([3, 8, 20, 45, 90, 300])))
        for _ in range(n)
    ]


@pytest.fixture(scope="module")
def serial():
    return bundled_embedder(threads=2, workers=1)  # the layout before issue 26


@pytest.fixture(scope="module")
def parallel():
    return bundled_embedder(threads=2, workers=2)


def test_token_batches_cover_every_text_once_within_the_limits():
    rng = random.Random(11)
    for _ in range(200):
        lengths = [rng.randint(1, 256) for _ in range(rng.randint(1, 300))]
        batches = token_batches(lengths, BATCH_TOKENS, MAX_BATCH)
        flat = [i for b in batches for i in b]
        assert sorted(flat) == list(range(len(lengths)))
        for b in batches:
            assert len(b) <= MAX_BATCH
            assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= BATCH_TOKENS


def test_defaults_run_one_single_threaded_batch_per_thread(parallel, serial):
    assert parallel.workers == 2 and serial.workers == 1
    assert parallel.batch_session().get_session_options().intra_op_num_threads == 1
    assert bundled_embedder(threads=1).workers == 1


def test_a_query_runs_on_one_thread_that_does_not_spin(parallel, serial):
    """Issue 57: a query's few dozen tokens run fastest on one thread, and threads that spin
    between queries burn a server's CPU; a fill's batches, back to back, spin. A single run
    (`workers` 1) keeps every thread for whatever it embeds."""
    spin = "session.intra_op.allow_spinning"
    query = parallel.session.get_session_options()
    assert query.intra_op_num_threads == 1 and query.get_session_config_entry(spin) == "0"
    batches = parallel.batch_session().get_session_options()
    assert batches.get_session_config_entry(spin) == "1"
    assert serial.session.get_session_options().intra_op_num_threads == 2


def test_parallel_workers_give_the_serial_vectors_in_the_same_order(parallel, serial):
    texts = varied_texts()
    a, b = parallel.embed(texts), serial.embed(texts)
    cos = (a * b).sum(axis=1)
    assert a.shape == (len(texts), 384) and cos.min() >= 0.999, cos.min()
    # order: each row is its own text's vector, not a neighbour's
    assert np.all(cos > (a @ b.T - np.eye(len(texts)) * 2).max(axis=1))


def test_a_text_alone_in_its_batch_matches_embedding_it_alone(parallel):
    texts = varied_texts()
    lengths = [len(e.ids) for e in parallel.tokenizer.encode_batch(texts)]
    alone = [b[0] for b in token_batches(lengths, BATCH_TOKENS, MAX_BATCH) if len(b) == 1]
    assert len(alone) >= 5
    together = parallel.embed(texts)
    for i in alone:
        single = parallel.embed([texts[i]])[0]
        assert float(single @ together[i]) >= 0.999


def test_the_meter_counts_every_call_text_and_token_across_threads(parallel):
    texts = varied_texts()
    enc = parallel.tokenizer.encode_batch(texts)
    lengths = [len(e.ids) for e in enc]
    calls = len(token_batches(lengths, BATCH_TOKENS, MAX_BATCH))
    before = dict(parallel.meter.to_dict())
    callers = [threading.Thread(target=parallel.embed, args=(texts,)) for _ in range(3)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    after = parallel.meter.to_dict()
    assert after["calls"] - before["calls"] == 3 * calls
    assert after["texts"] - before["texts"] == 3 * len(texts)
    assert after["tokens"] - before["tokens"] == 3 * sum(lengths)
    assert after["ms"] > before["ms"]


def test_a_query_runs_on_the_callers_thread_without_the_worker_session(monkeypatch):
    e = bundled_embedder(threads=2, workers=2)
    seen: list[str] = []
    forward = e._forward
    monkeypatch.setattr(
        e,
        "_forward",
        lambda enc, s=None: seen.append(threading.current_thread().name) or forward(enc, s),
    )
    e.embed(["why did we pick SQLite"])
    assert seen == [threading.current_thread().name]
    assert e._batch_session is None  # a search-only process never loads the workers' session
    e.embed(CHECK_TEXTS + varied_texts(20))
    assert e._batch_session is not None and len(set(seen)) > 1


def test_a_failing_worker_raises_in_the_caller(parallel, monkeypatch):
    class Broken:
        def run(self, *_args, **_kwargs):
            raise RuntimeError("inference failed")

    monkeypatch.setattr(parallel, "_batch_session", Broken())
    with pytest.raises(RuntimeError, match="inference failed"):
        parallel.embed(varied_texts())


def test_a_query_embedded_beside_the_lexical_stage_is_the_same_vector(parallel):
    """`embed_beside` (the one-thread session a search uses while its lexical stage runs)
    gives the query session's vector, and counts in the meter."""
    before = parallel.meter.calls
    for text in ["why did we pick SQLite", "std::vector<int> v;", "Error -32069", "x"]:
        alone = parallel.embed([text])[0]
        beside = parallel.embed_beside(text)
        assert beside.shape == alone.shape and float(beside @ alone) >= 0.9999
    assert parallel.meter.calls == before + 8
