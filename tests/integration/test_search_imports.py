"""What a search imports (issue 45): the indexer, the link checks, completion and note actions
are imported where they are used, so a one-shot search loads none of them. Each search runs in
a process of its own and lists the modules it held at the end (tests/integration/test_startup.py's
probe,
over its embedded_sample sample vault)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_startup import probe

# Loaded by what writes, completes, acts on or checks a note, never by a search.
NOT_SEARCH = (
    "autodoc.index.indexer",
    "autodoc.index.check",
    "autodoc.vectors.embedding_cache",
    "autodoc.links.note_actions",
    "autodoc.links.completion_context",
    "autodoc.links.note_completion",
    "autodoc.links.part_completion",
    "autodoc.links.paragraph_meaning",
    "statistics",  # the lexical stage's median is computed in place
)


def _modules(tmp_path: Path, db: Path, cwd: Path, *args: str) -> list[str]:
    got = probe(tmp_path, ["--db", str(db), *args], cwd=cwd)
    assert got["code"] == 0, args
    return got["modules"]


@pytest.mark.parametrize("stages", [[], ["--stages", "lexical"]], ids=["hybrid", "lexical"])
def test_a_search_loads_no_writing_or_editing_module(embedded_sample, tmp_path, stages):
    root, db = embedded_sample
    modules = _modules(tmp_path, db, root, "search", "why did we pick sqlite", *stages)
    assert ("onnxruntime" in modules) == (not stages)  # the search it is said to be
    assert [m for m in NOT_SEARCH if m in modules] == []


def test_a_lexical_search_reads_its_package_files_without_importlib_resources(
    embedded_sample, tmp_path
):
    """The ranking model and the common-words list are read beside their modules."""
    root, db = embedded_sample
    modules = _modules(tmp_path, db, root, "search", "lease recovery", "--stages", "lexical")
    assert "autodoc.query.ranking" in modules and "importlib.resources" not in modules
