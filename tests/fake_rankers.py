"""Local servers speaking the TEI (`POST /rerank`) and Cohere (`POST /v1/rerank`) protocols,
and a tiny cross-encoder ONNX graph built here with the onnx helper API.

The servers score a passage by how many of the query's words it contains, answer sorted by
score (as the real ones do, so clients must map by `index`), record every request, and can
fail or stall on cue. The tiny graph sums a per-token weight over the pair's tokens: random
small weights, plus large ones for chosen words, so tests can predict its order.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import numpy as np

from .fake_openai import JsonHandler, LocalJsonServer


def overlap(query: str, passage: str) -> float:
    q = set(re.findall(r"\w+", query.lower()))
    return float(len(q & set(re.findall(r"\w+", passage.lower()))))


class FakeRanker(LocalJsonServer):
    def __init__(self, kind: str) -> None:
        self.kind = kind  # tei | cohere
        self.requests: list[dict] = []
        self.mode = "ok"  # ok | fail | slow | partial
        fake = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = self.read_json(fake.requests)
                want = "/rerank" if fake.kind == "tei" else "/v1/rerank"
                if self.path != want:
                    return self._send(404, {"error": "not found"})
                if fake.mode == "fail":
                    return self._send(500, {"error": "model overloaded"})
                if fake.mode == "slow":
                    time.sleep(2)
                texts = body["texts"] if fake.kind == "tei" else body["documents"]
                scored = sorted(
                    ((i, overlap(body["query"], t)) for i, t in enumerate(texts)),
                    key=lambda p: -p[1],
                )
                if fake.mode == "partial":
                    scored = scored[:-1]
                if fake.kind == "tei":
                    return self._send(200, [{"index": i, "score": s} for i, s in scored])
                self._send(
                    200,
                    {
                        "id": "fake",
                        "results": [{"index": i, "relevance_score": s} for i, s in scored],
                        "meta": {"billed_units": {"search_units": 1}},
                    },
                )

        self.serve(Handler)


def bundled_tokenizer() -> Path:
    from autodoc.models.embedders import bundled_files

    return bundled_files()[1]


def tiny_cross_encoder(folder: Path, boosts: dict[str, float], seed: int = 0) -> Path:
    """model.onnx + tokenizer.json in `folder`: logit = sum of weight[token] over the pair."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tok_path = folder / "tokenizer.json"
    shutil.copy(bundled_tokenizer(), tok_path)
    tokenizer = Tokenizer.from_file(str(tok_path))
    vocab = tokenizer.get_vocab_size()
    weights = np.random.default_rng(seed).normal(0, 0.01, size=(vocab, 1)).astype(np.float32)
    for word, w in boosts.items():
        for tid in tokenizer.encode(word, add_special_tokens=False).ids:
            weights[tid, 0] = w
    batch_seq = ["batch", "seq"]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, batch_seq)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["per_token"]),  # [B, S, 1]
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["per_token", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["logits"], keepdims=0),  # [B, 1]
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=[
            numpy_helper.from_array(weights, "table"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return folder
