"""Dates and recency: ranges on date-typed frontmatter fields, the file's modification time as
the built-in `modified` field, and an optional recency boost that changes nothing when off."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest

from autodoc.wire.errors import RpcError

from ..conftest import lexical_workspace, write

SCHEMA = "common:\n  date: date\n  status: [draft, accepted]\n"
DAY = 86_400


def paths(rpc, query, **opts):
    answer = rpc.call("search.query", ["v", query, {"stages": ["lexical"], **opts}])
    return [h["path"] for h in answer["hits"]], answer


@pytest.fixture
def dated(rpc, vault):
    write(vault, "_schema/frontmatter.yaml", SCHEMA)
    for month in range(1, 7):
        write(vault, f"d{month}.md", f"---\ndate: 2024-0{month}-15\n---\n# D{month}\n\nlease "
              f"notes for month {month}\n")  # fmt: skip
    write(vault, "undated.md", "# Undated\n\nlease notes without a date\n")
    now = time.time()
    ages = {"d1.md": 400, "d2.md": 200, "d3.md": 40, "d4.md": 10, "d5.md": 2, "d6.md": 0,
            "undated.md": 100}  # fmt: skip
    for name, days in ages.items():
        stamp = now - days * DAY
        os.utime(vault / name, (stamp, stamp))
    lexical_workspace(rpc, vault)
    return rpc


def test_ranges_on_a_date_field(dated):
    assert sorted(paths(dated, "lease date:>=2024-03")[0]) == ["d3.md", "d4.md", "d5.md", "d6.md"]
    assert sorted(paths(dated, "lease date:<2024-03")[0]) == ["d1.md", "d2.md"]
    assert sorted(paths(dated, "lease date:<=2024-03")[0]) == ["d1.md", "d2.md", "d3.md"]
    assert sorted(paths(dated, "lease date:>2024-03")[0]) == ["d4.md", "d5.md", "d6.md"]
    assert sorted(paths(dated, "lease date:>=2024-04-15")[0]) == ["d4.md", "d5.md", "d6.md"]
    assert sorted(paths(dated, "lease date:>2024-04-15")[0]) == ["d5.md", "d6.md"]
    # Two ranges on one field: each value ORs, as facet values do; a range and its negation AND.
    found, answer = paths(dated, "lease date:>=2024-05 -date:>=2024-06")
    assert found == ["d5.md"]
    assert answer["filter"] == {"include": {"date": [">=2024-05"]},
                                "exclude": {"date": [">=2024-06"]}}  # fmt: skip
    found, _ = paths(dated, "lease", facets={"date": ["<2024-02"]})
    assert found == ["d1.md"]
    with pytest.raises(RpcError) as err:
        paths(dated, "lease date:>=soon")
    assert err.value.code == -32602 and err.value.data["field"] == "date"


def test_modified_is_the_files_time_without_a_schema_field(dated):
    assert sorted(paths(dated, "lease modified:<30d")[0]) == ["d4.md", "d5.md", "d6.md"]
    assert sorted(paths(dated, "lease modified:30d")[0]) == ["d4.md", "d5.md", "d6.md"]  # within
    assert sorted(paths(dated, "lease modified:>30d")[0]) == ["d1.md", "d2.md", "d3.md",
                                                              "undated.md"]  # fmt: skip
    assert sorted(paths(dated, "lease modified:<1w")[0]) == ["d5.md", "d6.md"]
    assert sorted(paths(dated, "lease modified:>1y")[0]) == ["d1.md"]
    assert sorted(paths(dated, "lease -modified:<30d")[0]) == ["d1.md", "d2.md", "d3.md",
                                                               "undated.md"]  # fmt: skip
    today = dt.date.today()
    found, _ = paths(dated, f"lease modified:{today.isoformat()}")
    assert "d6.md" in found and "d1.md" not in found
    year_ago = (dt.datetime.now() - dt.timedelta(days=400)).date()
    found, _ = paths(dated, f"lease modified:<={year_ago.isoformat()}")
    assert found == ["d1.md"]
    with pytest.raises(RpcError) as err:
        paths(dated, "lease modified:<30 days")  # an age is a number and d, w or y
    assert err.value.code == -32602


def test_a_schema_field_named_modified_is_the_frontmatter_one(rpc, vault):
    write(vault, "_schema/frontmatter.yaml", "common:\n  modified: date\n")
    write(vault, "a.md", "---\nmodified: 2020-01-01\n---\n# A\n\nlease\n")
    write(vault, "b.md", "---\nmodified: 2024-01-01\n---\n# B\n\nlease\n")
    lexical_workspace(rpc, vault)  # both files were written just now
    assert paths(rpc, "lease modified:<2021")[0] == ["a.md"]


def test_recency_boosts_newer_documents_and_changes_nothing_when_off(rpc, vault):
    body = "# Lease\n\nlease recovery after a crash\n"
    write(vault, "a-old.md", "---\ndate: 2019-03-01\n---\n" + body)
    write(vault, "b-new.md", f"---\ndate: {dt.date.today().isoformat()}\n---\n" + body)
    write(vault, "c-file.md", body)  # no date: its file's time (now)
    lexical_workspace(rpc, vault)
    off, answer_off = paths(rpc, "lease recovery")
    again, answer_again = paths(rpc, "lease recovery")
    assert off == again and [h["score"] for h in answer_off["hits"]] == [
        h["score"] for h in answer_again["hits"]
    ]
    assert off[0] == "a-old.md"  # equal text: the tie order
    on, answer_on = paths(rpc, "lease recovery", recency=90)
    assert on[-1] == "a-old.md" and set(on[:2]) == {"b-new.md", "c-file.md"}
    scores = {h["path"]: h["score"] for h in answer_on["hits"]}
    old = {h["path"]: h["score"] for h in answer_off["hits"]}
    assert scores["b-new.md"] == pytest.approx(old["b-new.md"], rel=0.01)  # dated today: ×1
    assert scores["a-old.md"] == pytest.approx(old["a-old.md"] * 0.5, rel=0.01)  # years: the floor
    for bad in (0, -1, True, "90", 40_000):
        with pytest.raises(RpcError) as err:
            paths(rpc, "lease", recency=bad)
        assert err.value.data["field"] == "recency"


def test_a_documents_age_comes_from_its_date_else_its_files_time():
    """Found by mutation testing (issue 56's run): no test read an age from a file's time, or a
    document with no frontmatter at all."""
    from autodoc.query.fusion import document_age_days

    now = time.time()
    ten_days_ago_ns = int((now - 10 * 86_400) * 1e9)
    assert document_age_days(ten_days_ago_ns, None, now) == pytest.approx(10.0, abs=1e-6)
    assert document_age_days(ten_days_ago_ns, "", now) == pytest.approx(10.0, abs=1e-6)
    assert document_age_days(ten_days_ago_ns, '{"title": "x"}', now) == pytest.approx(
        10.0, abs=1e-6
    )
    dated = dt.datetime(2020, 1, 2).timestamp()
    assert document_age_days(ten_days_ago_ns, '{"Date": "2020-01-02"}', dated + 3 * 86_400) == (
        pytest.approx(3.0, abs=1e-9)
    )
    from autodoc.query.fusion import recency_weight

    assert recency_weight(0.0, 90) == 1.0  # dated now: no discount, not a day's
    assert recency_weight(-5.0, 90) == 1.0  # dated in the future: as now
    assert recency_weight(90.0, 90) < recency_weight(45.0, 90) < 1.0
