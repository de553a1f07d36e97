"""Snippets: about 220 characters of a hit around its first matched word, with the matched
words marked, so a picker's preview and an agent's answer show why the hit matched."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from autodoc.bm25.analyzer import UNSTEMMED, analyze, cjk_runs
from autodoc.parse.query_parser import ParsedQuery

SNIPPET_CHARS = 220

_WORD = re.compile(r"\w+")


class TermMatcher:
    """Which words of a text match the query: stemmed words, or the trailing prefix; and a
    query's Chinese, Japanese or Korean words wherever they occur, since a run of such text
    has no spaces between its words (`数据库` inside `我们选择了数据库检索方案`)."""

    def __init__(self, query: ParsedQuery) -> None:
        self.matches = _term_matcher(query)
        heads = _heads(query)
        # Candidate words start with a stem's first letters; only those reach the analyzer.
        self.candidates = (
            re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(heads))) + r")\w*", re.I)
            if heads
            else None
        )
        runs = {run for item in query.items for run in cjk_runs(item.text)}
        self.cjk = (
            re.compile("|".join(map(re.escape, sorted(runs, key=lambda r: (-len(r), r)))))
            if runs
            else None
        )

    def spans(self, text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
        """Matched spans in order, none overlapping."""
        stop = len(text) if end is None else end
        words = self._words(text, start, stop)
        if self.cjk is None:
            yield from words
            return
        found = sorted(
            [*words, *((m.start(), m.end()) for m in self.cjk.finditer(text, start, stop))]
        )
        last = start
        for a, b in found:
            if a >= last:
                yield a, b
                last = b

    def _words(self, text: str, start: int, stop: int) -> Iterator[tuple[int, int]]:
        if self.candidates is None:
            return
        for m in self.candidates.finditer(text, start, stop):
            word = _WORD.match(text, m.start())
            if word and self.matches(word.group()):
                yield word.start(), word.end()


def _heads(query: ParsedQuery) -> set[str]:
    stems: set[str] = set()
    for item in query.items:
        stems.update(analyze(item.text))
        if item.prefix:
            stems.update(UNSTEMMED.analyze(item.text)[-1:])
    # A Porter stem keeps the start of its word (it rewrites endings), so these must match; a
    # number may be written with leading zeros (`42` finds `0042`).
    heads = {t[: min(3, max(1, len(t) - 1))] for t in stems}
    return heads | ({"0"} if any(t.isdigit() for t in stems) else set())


def _term_matcher(query: ParsedQuery) -> Callable[[str], bool]:
    """Memoised per word: the same words recur across the hits of one answer."""
    stems: set[str] = set()
    prefixes: list[str] = []
    for item in query.items:
        stems.update(analyze(item.text))
        if item.prefix:
            prefixes.extend(UNSTEMMED.analyze(item.text)[-1:])
    memo: dict[str, bool] = {}

    def matches(word: str) -> bool:
        key = word.lower()
        hit = memo.get(key)
        if hit is None:
            hit = any(t in stems for t in analyze(key)) or any(
                r.startswith(p) for r in UNSTEMMED.analyze(key) for p in prefixes
            )
            memo[key] = hit
        return hit

    return matches


def make_snippet(text: str, terms: TermMatcher) -> tuple[str, list[list[int]]]:
    """~220 characters around the first matched word, whitespace collapsed, with highlights."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[0].lstrip().startswith("#") and any(s.strip() for s in lines[1:]):
        text = "\n".join(lines[1:])  # the heading is already in the breadcrumb
    flat = " ".join(text.split())
    first = next(terms.spans(flat), None)
    start = 0
    if first is not None and first[0] > SNIPPET_CHARS // 3:
        start = flat.rfind(" ", 0, first[0] - SNIPPET_CHARS // 4) + 1
    end = min(len(flat), start + SNIPPET_CHARS)
    if end < len(flat):
        cut = flat.rfind(" ", start, end)
        end = cut if cut > start else end
    snippet = ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
    shift = (1 if start else 0) - start
    highlights = [[a + shift, b + shift] for a, b in terms.spans(flat, start, end) if b <= end]
    return snippet, highlights
