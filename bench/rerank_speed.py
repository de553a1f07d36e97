"""Milliseconds per scored text for a local ONNX cross-encoder, by window and batch shape.

Two graphs, both built here (no registry ships a real cross-encoder, see verified-facts.md):
- tiny: the tests' graph (a per-token weight summed over the pair);
- MiniLM-L6 size: the bundled all-MiniLM-L6-v2 encoder (6 layers, 384 wide, int8 weights)
  with a random linear head on the [CLS] vector: the architecture and size of
  ms-marco-MiniLM-L-6-v2, so its timing is what a real ranker of that family costs.

Each window scores the top-N chunks of a real query over real chunks (breadcrumb + body, as
the stage sends them); median of `--runs` after one warm-up.

    python bench/rerank_speed.py --corpus ../shared/corpora/adr --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.fake_rankers builds the tiny graph

QUERY = "how do we recover when the writer process crashes"


def minilm_cross_encoder(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from autodoc.models.embedders import bundled_files

    model_path, tokenizer = bundled_files()
    model = onnx.load(str(model_path))
    graph = model.graph
    hidden = graph.output[0].name  # last_hidden_state [batch, seq, 384]
    rng = np.random.default_rng(0)
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(0, dtype=np.int64), "cls_index"),
            numpy_helper.from_array(rng.normal(0, 0.05, (384, 1)).astype(np.float32), "head_w"),
            numpy_helper.from_array(np.zeros(1, np.float32), "head_b"),
        ]
    )
    graph.node.extend(
        [
            helper.make_node("Gather", [hidden, "cls_index"], ["cls"], axis=1),  # [B, 384]
            helper.make_node("MatMul", ["cls", "head_w"], ["cls_w"]),
            helper.make_node("Add", ["cls_w", "head_b"], ["logits"]),  # [B, 1]
        ]
    )
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]))
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    (folder / "tokenizer.json").write_bytes(Path(tokenizer).read_bytes())
    return folder


def passages(corpus: Path, n: int) -> list[str]:
    from autodoc.parse.chunking import Chunker
    from autodoc.parse.document import parse_document
    from autodoc.wire import workspace_options

    options = workspace_options.defaults()
    chunker = Chunker(options["section_tokens"], options["abstract_chunk"])
    out: list[str] = []
    for path in sorted(corpus.rglob("*.md")):
        doc = parse_document(path.read_bytes(), path.relative_to(corpus).as_posix())
        out.extend(f"{c.breadcrumb}\n{c.text}" for c in chunker.chunk(doc))
        if len(out) >= n:
            break
    return out[:n]


def time_window(ranker, texts: list[str], runs: int) -> float:
    ranker.score(QUERY, texts[:5])  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        ranker.score(QUERY, texts)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpora" / "adr"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--windows", default="10,20,40,100")
    args = p.parse_args()
    from autodoc.models.rankers import OnnxRanker
    from tests.fake_rankers import tiny_cross_encoder

    work = Path(tempfile.mkdtemp(prefix="autodoc-rerank-"))
    texts = passages(Path(args.corpus), 100)
    graphs = {
        "tiny (tests)": tiny_cross_encoder(work / "tiny", {"writer": 1.0}),
        "MiniLM-L6 size": minilm_cross_encoder(work / "minilm"),
    }
    windows = [int(w) for w in args.windows.split(",")]
    print(f"{len(texts)} passages from {args.corpus}; cpus={os.cpu_count()}; median of {args.runs}")
    print(f"{'graph':16} {'tokens/call':>11} " + " ".join(f"{'w=' + str(w):>14}" for w in windows))
    for label, folder in graphs.items():
        for batch_tokens in (512, 2048):
            ranker = OnnxRanker(folder / "model.onnx", folder / "tokenizer.json")
            ranker.batch_tokens = batch_tokens
            cells = []
            for w in windows:
                ms = time_window(ranker, texts[:w], args.runs)
                cells.append(f"{ms:7.0f} ({ms / w:4.1f})")
            print(f"{label:16} {batch_tokens:>11} " + " ".join(f"{c:>14}" for c in cells))
    print("cells: window total ms (ms per text)")


if __name__ == "__main__":
    main()
