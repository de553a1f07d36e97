"""Readers never see a mix of two generations of one document, across SQLite and Tantivy."""

from __future__ import annotations

import re
import threading

from ..conftest import write

SECTIONS = 6


def body(marker: int) -> str:
    parts = [
        f"## Section {i}\nmk{marker} sentinel text for section {i}.\n" for i in range(SECTIONS)
    ]
    return "# Doc\n\n" + "\n".join(parts)


def test_no_answer_mixes_generations_while_a_writer_edits(engine, vault):
    write(vault, "doc.md", body(0))
    write(vault, "other.md", "# Other\n\nsentinel elsewhere\n")
    engine.workspaces.workspace_add("v", str(vault))
    engine.indexing.index_run("v")
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for marker in range(1, 31):
                (vault / "doc.md").write_text(body(marker))
                engine.indexing.index_run("v")
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    answers = mixed = 0
    per_stage = {"lexical": 0, "semantic": 0, "lexical+semantic": 0}
    while not stop.is_set() or answers < 60:
        # every stage set in turn: retired chunks must stay out of each (issue 19)
        stages = list(per_stage)[answers % 3].split("+")
        answer = engine.reading.search(
            "v", "sentinel text for section", {"limit": 20, "stages": stages}
        )
        hits = answer["hits"]
        per_stage["+".join(answer["stages"]["performed"])] += bool(hits)
        doc_hits = [h for h in hits if h["path"] == "doc.md"]
        markers = {m for h in doc_hits for m in re.findall(r"mk(\d+)", h["snippet"])}
        generations = {h["generation"] for h in doc_hits}
        answers += 1
        if len(markers) > 1 or len(generations) > 1:
            mixed += 1
        if stop.is_set() and answers >= 60:
            break
    thread.join()
    assert not errors
    assert answers >= 60
    assert mixed == 0
    assert all(n >= 10 for n in per_stage.values()), per_stage  # each stage answered
