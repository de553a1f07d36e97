"""A local server speaking the OpenAI embeddings protocol (`POST /v1/embeddings`).

Vectors are deterministic hashed bags of words, so similar texts get similar vectors and tests
can reason about them. It records every request, and can fail, stall or answer garbage on cue.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def bag_of_words(text: str, dim: int) -> list[float]:
    v = np.zeros(dim, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
        v[h % dim] += 1.0 if (h >> 31) & 1 else -1.0
    n = float(np.linalg.norm(v))
    return (v / n if n else v + 1.0 / np.sqrt(dim)).tolist()


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that answers JSON and keeps the test output clean."""

    def log_message(self, *args):
        pass

    def read_json(self, requests: list[dict]):
        """The request's JSON body, recorded with its path and headers."""
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        return body

    def _send(self, code, payload):
        self._raw(code, json.dumps(payload).encode())

    def _raw(self, code, raw):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class LocalJsonServer:
    """A threaded server on a free localhost port, started and stopped by `with`."""

    def serve(self, handler: type[JsonHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeOpenAI(LocalJsonServer):
    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.requests: list[dict] = []
        self.mode = "ok"  # ok | fail | slow | garbage | wrong-count | unauthorized
        self.delay = 0.0  # seconds each answer takes (a remote provider's round trip)
        fake = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = self.read_json(fake.requests)
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "not found"}})
                if fake.mode == "fail":
                    return self._send(500, {"error": {"message": "model overloaded"}})
                if fake.mode == "unauthorized":  # as some providers do: echo the key sent
                    sent = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    message = f"Incorrect API key provided: {sent}"
                    return self._send(401, {"error": {"message": message}})
                if fake.mode == "slow":
                    time.sleep(2)
                time.sleep(fake.delay)
                if fake.mode == "garbage":
                    return self._raw(200, b"not json")
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                dim = body.get("dimensions") or fake.dim
                data = [
                    {"object": "embedding", "index": i, "embedding": bag_of_words(t, dim)}
                    for i, t in enumerate(inputs)
                ]
                if fake.mode == "wrong-count":
                    data = data[:-1]
                data.reverse()  # the protocol orders by `index`, not by position
                tokens = sum(len(t.split()) for t in inputs)
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                    },
                )

        self.serve(Handler)
