#!/usr/bin/env python3
"""Tokens per second of a running `serve-model` under N concurrent clients.

Usage: python3 benches/serve_model_load.py PORT [CLIENTS=16] [ROUNDS=3]
Each round starts CLIENTS threads at once, each posting one user message (max_tokens 64, seed =
its index) to /v1/chat/completions, and prints the completion tokens over the round's wall time.
Start the server first, e.g. `empathy-gym serve-model --checkpoint RUN --port 8791 --max-batch 16`.
"""
import json
import sys
import threading
import time
import urllib.request


def one(port, i, out):
    text = f"I had a rough day at work, my manager criticised me in front of everyone ({i})."
    body = json.dumps({"messages": [{"role": "user", "content": text}], "max_tokens": 64,
                       "seed": i}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        out[i] = json.load(r)["usage"]["completion_tokens"]


def main():
    port = int(sys.argv[1])
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    print("| round | clients | tokens | s | tokens/s |\n|---:|---:|---:|---:|---:|")
    for r in range(rounds):
        out = {}
        start = time.time()
        threads = [threading.Thread(target=one, args=(port, i, out)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt = time.time() - start
        tokens = sum(out.values())
        print(f"| {r + 1} | {clients} | {tokens} | {dt:.2f} | {tokens / dt:.1f} |")


if __name__ == "__main__":
    main()
