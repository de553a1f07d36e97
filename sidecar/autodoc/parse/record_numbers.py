"""A record's number as a query or a title writes it: the one definition that the query's
intent, the lexical names pass and the index's name fields share (issue 55).

A number names a record only in a record's context: standing alone (`42`, `0042`, `#42`, and
so `adr 42`, `RFC 7231`), joined to a record series' name (`ADR-0042`, `adr_42`, `rfc7231`), or
as a compiler's, linker's or linter's code (one to three letters, then four digits: `C4996`,
`LNK2019`, `CA1062`). Letters with a digit or a few (`S2`, `v1`, `L2`, `p53`, `sha256`, `x86`,
`ipv6`) name a thing that a page is about, not the page: a query holding one is no lookup of
record 2, and a title holding one is not record 2's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Series whose records are cited by name and number: `ADR-42`, `RFC 7231`, `KEP-1287`, `PEP 8`.
RECORD_SERIES = ("adr", "rfc", "rfd", "dr", "kep", "pep", "jep", "bip", "eip")
_LONE = r"\#?\d+"
_SERIES = rf"\#?(?:{'|'.join(RECORD_SERIES)})[-_]?\d+"
_CODE = r"[A-Za-z]{1,3}\d{4}"
_END = r"[.:]?"  # as pasted from a message: `C4996:`, `ADR 42.`
_NUMBER = re.compile(rf"^(?:{_LONE}|{_SERIES}|{_CODE}){_END}$", re.I)
_LETTERED = re.compile(rf"^(?:{_SERIES}|{_CODE}){_END}$", re.I)
_SERIES_WORD = re.compile(rf"^(?:{'|'.join(RECORD_SERIES)})s?$", re.I)
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_DIGITS = re.compile(r"\d+")


def is_record_number(word: str) -> bool:
    """`42`, `0042`, `#42`, `ADR-0042`, `rfc7231`, `C4996`; not `S2`, `v1`, `sha256`."""
    return bool(_NUMBER.match(word))


def is_lettered_number(word: str) -> bool:
    """A record number that carries its letters (`ADR-42`, `C4996`, `LNK2019`): inside a
    longer query it still names a page, where a bare number (a year, a count) does not."""
    return bool(_LETTERED.match(word))


def record_numbers(words: Sequence[str]) -> list[str]:
    """The words that are record numbers, as typed."""
    return [w for w in words if is_record_number(w)]


def lettered_numbers(words: Sequence[str]) -> list[str]:
    """The record numbers among `words` that name a page wherever they stand: those that carry
    their letters, and a lone number right after a series' name, as the two words (`adr 42`,
    `RFC 7231`)."""
    out = []
    for before, word in zip(["", *words], words, strict=False):
        if is_lettered_number(word):
            out.append(word)
        elif _SERIES_WORD.match(before) and re.fullmatch(rf"{_LONE}{_END}", word):
            out.append(f"{before} {word}")
    return out


def number_of(word: str) -> str:
    """A record number's digits without their zeros (`ADR-0042`: 42, `C4996`: 4996); ""
    when it has none."""
    runs = _DIGITS.findall(word)
    return str(int(runs[-1])) if runs else ""


def joined_numbers(text: str) -> list[str]:
    """The numbers of the codes in `text` written joined to their letters (`C4996`,
    `rfc7231`): a name holding one is that number's too, so `warning 4996` finds the page
    titled C4996. A letter and a digit (`S2`) are no code."""
    return [number_of(w) for w in _ALNUM.findall(text) if is_lettered_number(w)]
