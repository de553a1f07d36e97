"""The question log (issue 58): settled questions only, openings, rotation, off by default, a
log inside a vault refused; the report's joins, grouping and baseline. (Several writing
processes and a SIGKILL mid-write: tests/integration/test_gaps.py.)"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from autodoc.engine import Engine
from autodoc.gaps import gap_report as gr
from autodoc.gaps.question_log import KEEP, LogFile, QuestionLog, log_files, read_records
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire.errors import INVALID_PARAMS, RpcError

pytestmark = pytest.mark.unit


def answer(query: str, *, workspace: str = "v", confidence: str = "high", paths=("a.md",)):
    hits = [{"path": p, "line": 3, "line_end": 9, "breadcrumb": f"{p} › S", "relevance": 0.8}
            for p in paths]  # fmt: skip
    return {"workspace": workspace, "query": query, "confidence": confidence,
            "missing": [], "cosine": 0.5, "hits": hits}  # fmt: skip


def questions(path: Path) -> list[str]:
    records, _ = read_records(path)
    return [r["query"] for r in records if r["kind"] == "question"]


def test_a_pickers_keystrokes_leave_only_the_query_settled_on(tmp_path):
    log = QuestionLog(tmp_path / "q.jsonl", settle_s=0.3)
    for typed in ["l", "le", "lea", "leas", "lease", "lease r", "lease re", "lease rec"]:
        log.asked("ann", answer(typed))
    log.asked("ann", answer("lease re"))  # a backspace is typing too
    log.asked("ann", answer("lease recovery"))
    time.sleep(0.6)  # nothing typed on: settled and written
    assert questions(tmp_path / "q.jsonl") == ["lease recovery"]
    log.asked("ann", answer("vector index"))  # a question of its own
    log.asked("bob", answer("vector"))  # another asker's typing is theirs
    log.close()
    assert questions(tmp_path / "q.jsonl") == ["lease recovery", "vector index", "vector"]


def test_an_opening_writes_the_askers_question_at_once_then_itself(tmp_path):
    path = tmp_path / "q.jsonl"
    log = QuestionLog(path, settle_s=30)  # would wait half a minute
    log.asked("ann", answer("fusion weights"))
    log.opened("ann", "v", "a.md", 3)
    deadline = time.monotonic() + 5
    while len(read_records(path)[0]) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    kinds = [r["kind"] for r in read_records(path)[0]]
    log.close()
    assert kinds == ["question", "opened"]


def test_the_log_rotates_and_keeps_its_bound(tmp_path):
    path = tmp_path / "q.jsonl"
    file = LogFile(path, max_bytes=2000)
    for n in range(300):
        file.append([{"v": 1, "kind": "question", "at": n, "query": f"q{n:04d}" + "x" * 40,
                      "workspace": "v", "asker": "ann"}])  # fmt: skip
    file.close()
    files = log_files(path)
    assert len(files) == KEEP and all(f.stat().st_size < 2200 for f in files)
    records, unreadable = read_records(path)
    ats = [r["at"] for r in records]
    assert unreadable == 0 and ats == sorted(ats) and ats[-1] == 299  # oldest file first
    assert len(records) < 300  # the oldest were dropped with the oldest file
    assert oct(path.stat().st_mode & 0o777) == "0o600"  # what readers asked is private


def test_a_log_whose_folder_was_removed_starts_again_in_a_new_one(tmp_path):
    """A tmp cleaner or an admin removes the log's folder: the next batch writes a new file
    there (the descriptor is swapped only for one already open), nothing else is written to."""
    import shutil

    path = tmp_path / "logs" / "q.jsonl"
    file = LogFile(path)
    file.append([_record("question", 1.0, query="before")])
    shutil.rmtree(tmp_path / "logs")
    file.append([_record("question", 2.0, query="after")])
    file.close()
    assert [r["query"] for r in read_records(path)[0]] == ["after"]


def test_the_log_is_off_by_default(tmp_path):
    engine = Engine(tmp_path / "s.db")
    try:
        assert engine.questions.log_state() is None
        engine.questions.note("search.query", [], answer("x"), "ann")
        assert not any(p.suffix == ".jsonl" for p in tmp_path.rglob("*"))
        with pytest.raises(RpcError) as err:
            Dispatcher(engine).call("gaps.report", [])
        assert err.value.code == INVALID_PARAMS and "--log-questions" in err.value.message
    finally:
        engine.close()


def test_a_log_inside_a_served_folder_is_refused(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    engine = Engine(tmp_path / "s.db", question_log=vault / "logs" / "q.jsonl")
    try:
        with pytest.raises(RpcError) as err:
            engine.questions.refuse_inside(vault)
        assert "outside every vault" in err.value.message
        engine.questions.refuse_inside(tmp_path / "other")
    finally:
        engine.close()


def _record(kind: str, at: float, **fields) -> dict:
    return {"v": 1, "kind": kind, "at": at, "workspace": "v", "asker": "ann", **fields}


def test_a_question_whose_hit_was_opened_soon_after_is_answered():
    q = {"query": "q", "hits": [{"path": "a.md"}, {"path": "b.md"}]}
    records = [
        _record("question", 0, **q),
        _record("opened", 20, path="b.md", line=1),  # its second hit: answered
        _record("question", 30, **q),
        _record("opened", 40, path="c.md", line=1),  # no question of the asker's showed it
        _record("question", 50, **q),
        _record("opened", 50 + gr.OPEN_WINDOW_S + 1, path="a.md", line=1),  # too late
        _record("question", 60_000, **q),
        {**_record("opened", 60_010, path="a.md", line=1), "asker": "bob"},  # another reader
    ]
    assert gr.opened_questions(records) == {0}
    # An agent asks two at once, then reads the first one's hit: that one was answered.
    parallel = [
        _record("question", 0, query="first", hits=[{"path": "a.md"}]),
        _record("question", 1, query="second", hits=[{"path": "b.md"}]),
        _record("opened", 2, path="a.md", line=1),
    ]
    assert gr.opened_questions(parallel) == {0}


def _fake_embed(texts: list[str]) -> np.ndarray:
    """Each text's vector: its first word's axis (the grouping's rules, not the model's)."""
    axes = {"leave": 0, "expenses": 1, "wifi": 2}
    out = np.zeros((len(texts), 4), dtype=np.float32)
    for n, t in enumerate(texts):
        out[n, axes.get(t.split()[0], 3)] = 1.0
        out[n, 3] += 0.05 * n  # distinct, still near their axis
    return out


def _write(path: Path, records: list[dict]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def test_the_report_groups_unanswered_questions_and_records_its_baseline(tmp_path):
    log = tmp_path / "q.jsonl"
    asked = ["leave days", "leave allowance", "leave policy", "expenses form", "expenses claim"]
    now = time.time() - 60
    _write(log, [_record("question", now + n, query=q, confidence="low", missing=["allowance"],
                         hits=[{"path": "h.md", "line": 2, "breadcrumb": "H"}])
                 for n, q in enumerate(asked)])  # fmt: skip
    _write(log, [_record("question", now + 9, query="fusion", confidence="high", cosine=0.6,
                         hits=[{"path": "f.md", "line": 1, "relevance": 0.9}])])  # fmt: skip
    report, centroids = gr.gap_report(log, _fake_embed)
    assert [g["count"] for g in report["groups"]] == [3, 2]
    assert {q.split()[0] for q in report["groups"][0]["questions"]} == {"leave"}
    assert report["groups"][0]["shown"][0] == {"path": "h.md", "line": 2, "breadcrumb": "H",
                                               "times": 3}  # fmt: skip
    assert report["answered"] == 1 and report["answered_well"][0]["question"] == "fusion"
    gr.mark_new(report, centroids, log)
    assert report["new_groups"] == 2 and report["baseline_at"] is None
    gr.record_baseline(report, centroids, log)
    _write(log, [_record("question", time.time() + 1, query="wifi password", confidence="none",
                         hits=[])])  # fmt: skip
    _write(
        log,
        [
            _record(
                "question", time.time() + 2, query="leave entitlement", confidence="none", hits=[]
            )
        ],
    )  # after the report, but a group it reported: not new
    again, centroids = gr.gap_report(log, _fake_embed)
    gr.mark_new(again, centroids, log)
    assert again["new_groups"] == 1
    assert [g["question"] for g in again["groups"] if g["new"]] == ["wifi password"]
    # Only what came after the report: "leave entitlement" is a group of its own now, asked
    # after the report, and still not new (a reported group is within GROUP_COSINE of it).
    later, centroids = gr.gap_report(log, _fake_embed, since=report["until"])
    gr.mark_new(later, centroids, log)
    assert sorted(g["question"] for g in later["groups"]) == ["leave entitlement", "wifi password"]
    assert [g["question"] for g in later["groups"] if g["new"]] == ["wifi password"]
    # A damaged baseline is none (every group new), and the next recorded report replaces it.
    gr.baseline_path(log).write_text("{not json")
    gr.mark_new(later, centroids, log)
    assert later["new_groups"] == 2 and later["baseline_at"] is None
    gr.record_baseline(later, centroids, log)
    assert oct(gr.baseline_path(log).stat().st_mode & 0o777) == "0o600"


def test_group_rows_is_the_same_whatever_order_the_questions_came_in():
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(4, 16))
    rows = np.vstack([c + 0.15 * rng.normal(size=(5, 16)) for c in centres])
    order = rng.permutation(len(rows))
    first = {frozenset(g) for g in gr.group_rows(rows, 0.8)}
    second = {frozenset(int(order[i]) for i in g) for g in gr.group_rows(rows[order], 0.8)}
    assert first == second and len(first) == 4


def test_the_report_groups_a_fixed_set_of_questions_by_meaning_with_the_bundled_model(tmp_path):
    """The shipped grouping (average linkage at GROUP_COSINE) over the real model: each topic's
    wordings one group, a question of its own alone, largest group first."""
    topics = {
        "expenses": ["how do I claim expenses", "expense claim form",
                     "where do I submit receipts for reimbursement"],
        "leave": ["how many days of annual leave do I get", "annual leave allowance per year"],
        "wifi": ["guest wifi password", "what is the wifi password for guests"],
        "certs": ["how do we rotate TLS certificates on staging",
                  "renewing the staging tls certs"],
        "parking": ["parking spaces at the office"],
    }  # fmt: skip
    log = tmp_path / "q.jsonl"
    asked = [(t, q) for t, qs in topics.items() for q in qs]
    _write(log, [_record("question", n * 10, query=q, confidence="none", hits=[])
                 for n, (_, q) in enumerate(asked)])  # fmt: skip
    engine = Engine(tmp_path / "s.db", question_log=log)
    try:
        report = Dispatcher(engine).call("gaps.report", [None, {}])
    finally:
        engine.close()
    groups = [sorted(g["questions"]) for g in report["groups"]]
    assert groups[0] == sorted(topics["expenses"])
    assert sorted(groups) == sorted(sorted(qs) for qs in topics.values())


def test_prefixes_two_workers_each_settled_are_settled_again_in_the_report():
    typed = ["lea", "lease", "lease rec", "lease recovery"]  # alternate workers' last answers
    records = [_record("question", 100 + n * 0.3, query=q) for n, q in enumerate(typed)]
    records.append(_record("question", 105, query="lease recovery steps"))  # 4.7 s later: asked
    records.append(_record("question", 105.5, query="vector index"))  # a question of its own
    records.append({**_record("question", 105.6, query="vector"), "asker": "bob"})
    kept = [r["query"] for r in gr.settled(records)]
    assert kept == ["lease recovery", "lease recovery steps", "vector index", "vector"]
