"""The common-words list (query/confidence.py) looked up in its text, not a set: each lookup
answers as membership in the set of the file's words did, for every word in it and for
strings that are almost words."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

from autodoc.query import confidence

LIST = Path(confidence.__file__).with_name(confidence.COMMON_WORDS_FILE)


def _words_as_a_set() -> frozenset[str]:
    """The set the list was read into before (its whitespace-separated words, past the
    header)."""
    text = gzip.decompress(LIST.read_bytes()).decode("utf-8")
    while text.startswith("#"):
        text = text.partition("\n")[2]
    return frozenset(text.split())


def test_the_list_is_one_word_a_line():
    """What a lookup in the text relies on: the lines are the whitespace-separated words."""
    text = gzip.decompress(LIST.read_bytes()).decode("utf-8").partition("\n")[2]
    assert text.endswith("\n")
    assert text.split("\n")[:-1] == text.split()


def test_a_lookup_answers_as_the_set_did():
    words = _words_as_a_set()
    assert len(words) > 20_000
    assert all(confidence.is_common(w) for w in words)
    near = [w + s for w in sorted(words)[::7] for s in ("zq", "s", "-")]
    near += [w[:-1] for w in sorted(words)[::5] if len(w) > 1]
    near += [w[1:] for w in sorted(words)[::5] if len(w) > 1]
    near += [w.upper() for w in sorted(words)[::11]]
    pairs = sorted(words)[:50]
    near += [f"{a}\n{b}" for a, b in itertools.pairwise(pairs)]
    near += [f"{a} {b}" for a, b in itertools.pairwise(pairs)]
    near += ["", " ", "\n", "the\n", "\nthe", " the", "#", "English", "rabbitmq", "kubernetes"]
    for word in near:
        assert confidence.is_common(word) == (word in words), repr(word)
