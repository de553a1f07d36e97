"""What an agent reads of each answer: the fields it needs to cite a section and read it, and
the evidence of how sure the answer is; ids, byte offsets and highlights stay out (agents pay
per token)."""

from __future__ import annotations

from typing import Any

# Hit fields an agent needs to cite and read a hit; the rest (bytes, ids, highlights) stay out.
HIT_FIELDS = ("path", "line_start", "line_end", "breadcrumb", "snippet", "relevance", "via")


def compact_related(answer: dict[str, Any]) -> dict[str, Any]:
    """What an agent reads of `related`: where each section is, why, and how near."""
    keep = ("path", "line_start", "line_end", "breadcrumb", "snippet", "similarity", "reasons")
    return {
        "path": answer["path"],
        "line_start": answer["line_start"],
        "line_end": answer["line_end"],
        "semantic": answer["semantic"],
        "hits": [{k: h[k] for k in keep} for h in answer["hits"]],
    }


def compact_search(answer: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workspace": answer["workspace"],
        "query": answer["query"],
        "mode_used": answer["mode_used"],
        "hits": [{k: hit[k] for k in HIT_FIELDS} for hit in answer["hits"]],
        "stages": {
            "performed": answer["stages"]["performed"],
            "skipped": answer["stages"]["skipped"],
            "engines": answer["stages"]["engines"],  # which store answered (issue 57)
        },
    }
    if answer.get("filter"):
        out["filter"] = answer["filter"]
    if "matched" in answer:
        out["matched"] = answer["matched"]
    if answer["semantic"] not in ("ready", "off"):
        out["semantic"] = answer["semantic"]
    # An agent must tell "no answer" from "an answer": the evidence, never a normalised score.
    out["confidence"] = answer["confidence"]
    if answer["missing"]:
        out["missing"] = answer["missing"]
    return out
