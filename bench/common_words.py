"""Write the list of common English words that `missing` does not report (query/confidence.py).

A content word no chunk holds is news only when it is rare in the language: `rabbitmq` absent
from a vault says the vault does not cover it, `forgot` or `thumbnail` absent says nothing.
The list is every English word at or above ZIPF on wordfreq's `best` list (Zipf 3.0: once per
million words), built here at build time so the sidecar needs no word-frequency package.

wordfreq's data is CC BY-SA 4.0 (Robyn Speer, https://github.com/rspeer/wordfreq); the list is
derived from it and carries that licence (see the header line of the file).

    pip install wordfreq && python bench/common_words.py
"""

from __future__ import annotations

import gzip
import importlib.metadata
from pathlib import Path

import wordfreq

ZIPF = 3.0
TARGET = Path(__file__).resolve().parents[1] / "sidecar/autodoc/query/common_words.txt.gz"


def main() -> None:
    words = []
    for word in wordfreq.iter_wordlist("en", wordlist="best"):
        if wordfreq.zipf_frequency(word, "en", wordlist="best") < ZIPF:
            break
        words.append(word)
    version = importlib.metadata.version("wordfreq")
    header = (f"# English words at Zipf >= {ZIPF} from wordfreq {version}'s 'best' list;"
              " data CC BY-SA 4.0, Robyn Speer, https://github.com/rspeer/wordfreq")  # fmt: skip
    text = "\n".join([header, *sorted(set(words))]) + "\n"
    TARGET.write_bytes(gzip.compress(text.encode("utf-8"), 9, mtime=0))
    print(f"{len(words)} words -> {TARGET}")


if __name__ == "__main__":
    main()
