"""The embedding graph with its tensors in a file beside it (models/mapped_graph.py): derived
once beside the graph, it gives that graph's vectors to the bit, it is derived again when the
graph changes, and a form that does not give the same vectors is never used."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from autodoc.models.embedders import CHECK_TEXTS, OnnxEmbedder, bundled_embedder, bundled_files
from autodoc.models.mapped_graph import mapped_graph
from autodoc.models.model_files import weights_identity

pytest.importorskip("onnx")  # the form is written with it (as the optimised graph is)

TEXTS = [*CHECK_TEXTS, "how do I reserve capacity in a vector", "a cat", "§ 4.2 — naïve café"]


@pytest.fixture
def graph(tmp_path) -> Path:
    """The shipped graph, copied into a cache folder of the test's own."""
    source, _ = bundled_files()
    target = tmp_path / "models" / "shipped.onnx"
    target.parent.mkdir()
    shutil.copyfile(source, target)
    return target


def _embedder(path: Path, threads: int = 0) -> OnnxEmbedder:
    source, tokenizer = bundled_files()
    weights = weights_identity(source)["sha256"]
    return OnnxEmbedder(source, tokenizer, weights_hash=weights, session_path=path, threads=threads)


def _check(calls: list[Path]):
    def vectors_of(path: Path) -> np.ndarray:
        calls.append(path)
        return _embedder(path).embed(CHECK_TEXTS)

    return vectors_of


def test_the_mapped_form_gives_the_graphs_vectors_to_the_bit(graph):
    mapped = mapped_graph(graph, _check([]))
    assert mapped != graph and mapped.name == "shipped.mapped.onnx"
    assert (graph.parent / "shipped.mapped.data").stat().st_size > 0.9 * graph.stat().st_size
    assert mapped.stat().st_size < 0.05 * graph.stat().st_size  # the tensors are beside it
    assert json.loads((graph.parent / "shipped.mapped.json").read_text())["same"] is True
    mode = graph.stat().st_mode & 0o777  # readable by whoever can read the graph
    assert (graph.parent / "shipped.mapped.data").stat().st_mode & 0o777 == mode
    assert not [p for p in graph.parent.iterdir() if p.name.startswith(".")]  # no work left
    for threads in (1, 2):
        one_file, split = _embedder(graph, threads), _embedder(mapped, threads)
        assert one_file.embed(TEXTS).tobytes() == split.embed(TEXTS).tobytes()  # batched
        for text in TEXTS:  # a query at a time, on the query's session
            assert one_file.embed([text]).tobytes() == split.embed([text]).tobytes()


def test_it_is_derived_once_and_again_when_the_graph_changes(graph):
    calls: list[Path] = []
    first = mapped_graph(graph, _check(calls))
    assert len(calls) == 2  # the graph's vectors and the form's, compared
    assert mapped_graph(graph, _check(calls)) == first and len(calls) == 2  # read, not derived
    stat = graph.stat()
    os.utime(graph, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a graph written again
    assert mapped_graph(graph, _check(calls)) == first and len(calls) == 4


def test_a_form_that_does_not_give_the_same_vectors_is_never_used(graph):
    calls: list[Path] = []

    def differs(path: Path) -> np.ndarray:
        calls.append(path)
        return np.full((2, 3), float(len(calls)), np.float32)

    assert mapped_graph(graph, differs) == graph
    assert json.loads((graph.parent / "shipped.mapped.json").read_text())["same"] is False
    assert not (graph.parent / "shipped.mapped.onnx").exists()
    assert mapped_graph(graph, differs) == graph and len(calls) == 2  # not derived again


def test_the_bundled_embedder_opens_the_mapped_graph():
    e = bundled_embedder()
    assert e.session_path.name.endswith("-q8pc.mapped.onnx")
    assert e.session_path.with_suffix(".data").is_file()


def test_a_form_that_could_not_be_derived_is_not_tried_by_every_process(graph):
    calls: list[Path] = []

    def fails(path: Path) -> np.ndarray:
        calls.append(path)
        raise RuntimeError("planted: the session would not open")

    assert mapped_graph(graph, fails) == graph  # the one-file graph, as before
    assert json.loads((graph.parent / "shipped.mapped.json").read_text())["same"] is False
    assert mapped_graph(graph, fails) == graph and len(calls) == 1  # not tried again
    assert not [p for p in graph.parent.iterdir() if p.name.startswith(".")]  # no work left
