"""Facet filters at query time (spec §6): `type:adr -status:superseded`, `opts.facets`,
`opts.tags` and `opts.paths` as a set of document ids in the reader's snapshot, which both
retrieval stages apply before they rank, so a facet that matches 1% of the chunks still fills
the limit. Values of one field OR together, fields AND, exclusions win.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from autodoc import store
from autodoc.parse.document import meta_target
from autodoc.parse.frontmatter_schema import BOOLEANS, BUILT_IN, TAG_FIELD, Schema, canonical
from autodoc.store import DocumentSet
from autodoc.wire import protocol
from autodoc.wire.errors import invalid_params

_RANGE_OP = re.compile(r"^(>=|<=|>|<)\s*")
_AGE = re.compile(r"^(\d{1,5})\s*([dwy])$")
_AGE_DAYS = {"d": 1, "w": 7, "y": 365}
_DATE_QUERY = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$")
# A kept set larger than this and than half the workspace goes to the stages as the documents
# dropped instead (a Tantivy term set costs by its size: 8,771 ids ~11 ms, 974 ~2 ms).
TERM_SET_SMALL = 4096


@dataclass(frozen=True)
class Match:
    value: str
    prefix: bool = False  # a partial date: the value or anything under it
    op: str = ""  # a range on a date: ">=", ">", "<=", "<" (the value's whole day, month, year)
    between: tuple[int | None, int | None] | None = None  # modified: [low, high) in mtime ns

    def shown(self) -> str:
        return self.op + self.value + ("*" if self.prefix and not self.op else "")


@dataclass
class FacetFilter:
    """Conditions on documents: values of one field OR together, fields AND, exclusions win."""

    include: dict[str, list[Match]] = field(default_factory=dict)
    exclude: dict[str, list[Match]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude or self.paths)

    def add(self, name: str, match: Match, negated: bool) -> None:
        target = self.exclude if negated else self.include
        values = target.setdefault(name, [])
        if match not in values:
            values.append(match)

    def describe(self) -> protocol.FilterRecord:
        def side(d: dict[str, list[Match]]) -> dict[str, list[str]]:
            return {k: [m.shown() for m in v] for k, v in d.items()}

        out = protocol.FilterRecord()
        if self.include:
            out["include"] = side(self.include)
        if self.exclude:
            out["exclude"] = side(self.exclude)
        if self.paths:
            out["paths"] = list(self.paths)
        return out

    def select(self, conn, ws_id: int) -> DocumentSet:
        """The live documents that pass. Each condition is read from its index (the facet
        values, or paths by range) and the sets are combined here, so the cost follows the
        rows that match, not the size of the workspace. Kept as the passing ids, or as the
        failing ones when most pass: the stages get whichever list is shorter."""
        total = store.live_document_count(conn, ws_id)
        keep: set[int] | None = None
        for name, matches in self.include.items():
            ids = self._matching(conn, ws_id, name, matches)
            keep = ids if keep is None else keep & ids
        if self.paths:
            under: set[int] = set()
            for p in self.paths:
                under.update(store.documents_under(conn, ws_id, p))
            keep = under if keep is None else keep & under
        drop: set[int] = set()
        for name, matches in self.exclude.items():
            drop |= self._matching(conn, ws_id, name, matches)
        if keep is None:  # only exclusions: facet rows belong to live documents
            return DocumentSet(total - len(drop), drop=drop)
        keep -= drop
        if len(keep) * 2 > total and len(keep) > TERM_SET_SMALL:
            live = store.live_documents(conn, ws_id)
            return DocumentSet(len(keep), drop={d for d in live if d not in keep})
        return DocumentSet(len(keep), keep=keep)

    @staticmethod
    def _matching(conn, ws_id: int, name: str, matches: list[Match]) -> set[int]:
        exact = [m.value for m in matches if not (m.prefix or m.op or m.between)]
        ids: set[int] = set()
        if exact:
            ids.update(store.documents_with_facet(conn, ws_id, name, exact))
        for m in matches:
            if m.between is not None:  # the file's modification time
                ids.update(store.documents_modified(conn, ws_id, *m.between))
            elif m.op:
                ids.update(store.documents_with_facet_range(conn, ws_id, name, *_text_range(m)))
            elif m.prefix:  # a year or a month: itself or under it
                ids.update(store.documents_with_facet_under(conn, ws_id, name, m.value))
        return ids

    def browse(self, conn, ws_id: int, limit: int) -> tuple[list[int], int]:
        """(the first `limit` passing documents in path order, how many pass)."""
        passing = self.select(conn, ws_id)
        if passing.keep is not None:
            paths = store.document_paths(conn, sorted(passing.keep))
            return sorted(paths, key=lambda d: paths[d])[:limit], passing.size
        ids: list[int] = []
        for doc_id in store.live_documents(conn, ws_id):  # in path order
            if doc_id in passing:
                ids.append(doc_id)
                if len(ids) >= limit:
                    break
        return ids, passing.size


def coerce(schema: Schema, name: str, raw: Any, *, source: str) -> Match:
    """A query value as the declared field stores it; -32602 naming the field when it cannot
    be one (`source`: where the value came from, for the message)."""
    f = schema.facets.get(name.lower())
    if f is None:
        raise invalid_params(
            f"{name!r} is not a declared facet", field=name, facets=sorted(schema.facets)
        )
    where = {"field": f.name, "value": raw, "source": source}
    if isinstance(raw, (dict, list)) or raw is None:
        raise invalid_params(f"{f.name}: a facet value must be a single value", **where)
    kind = f.type
    value: bool | int | float | str | None  # as the field's kind stores it
    if kind == "boolean":
        value = raw if isinstance(raw, bool) else BOOLEANS.get(str(raw).strip().lower())
        if value is None:
            raise invalid_params(f"{f.name} is a boolean: true or false, not {raw!r}", **where)
        return Match("true" if value else "false")
    if kind == "integer":
        try:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(raw) if not isinstance(raw, str) else int(raw.strip(), 10)
        except (TypeError, ValueError):
            raise invalid_params(f"{f.name} is an integer, not {raw!r}", **where) from None
        return Match(str(value))
    if kind == "number":
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
        except (TypeError, ValueError):
            raise invalid_params(f"{f.name} is a number, not {raw!r}", **where) from None
        return Match(canonical(value) or str(raw))
    if kind in ("date", BUILT_IN):
        return _range_match(f.name, kind, str(raw).strip(), where)
    value = canonical(meta_target(raw) if kind == "link" and isinstance(raw, str) else raw)
    if value is None:
        raise invalid_params(f"{f.name}: empty value", **where)
    if kind == "enum" and value not in f.values:
        raise invalid_params(
            f"{f.name} is one of {', '.join(f.values)}, not {raw!r}", **where, allowed=f.values
        )
    return Match(value)


def _range_match(name: str, kind: str, raw: str, where: dict[str, Any]) -> Match:
    """A date, a part of one, or a range: `2025-01`, `>=2025-01`, `<2024`; for the built-in
    `modified` an age too (`<30d`: changed in the last 30 days, `>1y`: not for a year)."""
    m = _RANGE_OP.match(raw)
    op, rest = (m[1], raw[m.end() :]) if m else ("", raw)
    if kind == BUILT_IN and (age := _AGE.match(rest)):
        days = int(age[1]) * _AGE_DAYS[age[2]]
        since = time.time_ns() - days * 86_400 * 10**9
        op = op or "<"  # modified:30d: within 30 days
        between = (since, None) if op in ("<", "<=") else (None, since)
        return Match(f"{age[1]}{age[2]}", op=op, between=between)
    day = _date_match(name, rest, where)
    if kind == BUILT_IN:
        return Match(day.value, day.prefix, op, _mtime_bounds(day, op))
    return Match(day.value, day.prefix, op)


def _text_range(m: Match) -> tuple[str | None, str | None]:
    """[low, high) over ISO date text for a range on a date or a part of one ("~" sorts after
    every digit and "-", so `2025-01~` is past every day of January 2025)."""
    after = m.value + "~"
    return {">=": (m.value, None), ">": (after, None), "<": (None, m.value),
            "<=": (None, after)}[m.op]  # fmt: skip


def _mtime_bounds(day: Match, op: str) -> tuple[int | None, int | None]:
    """[low, high) in mtime ns for a local-time day, month or year and a range operator."""
    parts = [int(x) for x in day.value.split("-")]
    year, month, mday = [*parts, 1, 1][:3]
    start = _dt.datetime(year, month, mday)
    if len(parts) == 1:
        end = start.replace(year=start.year + 1)
    elif len(parts) == 2:
        end = (start.replace(day=28) + _dt.timedelta(days=4)).replace(day=1)
    else:
        end = start + _dt.timedelta(days=1)
    lo, hi = int(start.timestamp() * 10**9), int(end.timestamp() * 10**9)
    return {"": (lo, hi), ">=": (lo, None), ">": (hi, None), "<": (None, lo),
            "<=": (None, hi)}[op]  # fmt: skip


def _date_match(name: str, raw: Any, where: dict[str, Any]) -> Match:
    m = _DATE_QUERY.match(str(raw).strip())
    if m:
        year, month, day = m.group(1), m.group(2), m.group(3)
        try:
            _dt.date(int(year), int(month or 1), int(day or 1))
        except ValueError:
            m = None
        else:
            if day:
                return Match(f"{year}-{int(month):02d}-{int(day):02d}")
            return Match(f"{year}-{int(month):02d}" if month else year, prefix=True)
    raise invalid_params(f"{name} is a date: YYYY-MM-DD, YYYY-MM or YYYY, not {raw!r}", **where)


def build_filter(
    schema: Schema,
    inline: Iterable[tuple[str, str, bool]],
    facets: dict[str, list[Any]] | None = None,
    tags: list[str] | None = None,
    paths: list[str] | None = None,
) -> FacetFilter:
    """The filter from inline tokens (field, value, negated) and the structured options."""
    flt = FacetFilter(paths=list(paths or []))
    for name, value, negated in inline:
        flt.add(name.lower(), coerce(schema, name, value, source="query"), negated)
    for key, values in (facets or {}).items():
        negated = key.startswith("-")
        name = key[1:] if negated else key
        for value in values if isinstance(values, list) else [values]:
            flt.add(name.lower(), coerce(schema, name, value, source="opts.facets"), negated)
    for tag in tags or []:
        negated = tag.startswith("-")
        value = tag[1:] if negated else tag
        flt.add(
            TAG_FIELD, coerce(schema, TAG_FIELD, value.lstrip("#"), source="opts.tags"), negated
        )
    return flt


def validate_options(facets: Any, tags: Any) -> tuple[dict[str, list[Any]], list[str]]:
    """Shape checks for opts.facets / opts.tags (the values are coerced against the schema)."""
    if facets is None:
        facets = {}
    if not isinstance(facets, dict) or not all(isinstance(k, str) and k for k in facets):
        raise invalid_params("facets must be an object of field: [values]", field="facets")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip("#-") for t in tags):
        raise invalid_params("tags must be a list of tag names", field="tags")
    return facets, tags
