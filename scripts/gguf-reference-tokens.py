#!/usr/bin/env python3
"""Reference token ids for a GGUF file from llama.cpp itself, for tests/integration/model_real.rs.

Setup (PyPI only):  python3 -m venv /tmp/ref && /tmp/ref/bin/pip install cffi llama-cpp-cffi==0.4.42
The wheel's CPU library was built against GCC 14's libstdc++; on an older system (Debian 12) it
misses the symbol __cxa_call_terminate, which a two-line shim provides:
    printf '#include <exception>\nextern "C" void __cxa_call_terminate(void*) noexcept { std::terminate(); }\n' > shim.cc
    g++ -shared -fPIC -o /tmp/libshim.so shim.cc
Run:  LD_PRELOAD=/tmp/libshim.so /tmp/ref/bin/python scripts/gguf-reference-tokens.py MODEL.gguf strings.json
strings.json is a JSON list of strings; prints one JSON line per string with its ids and whether
llama.cpp's own detokenizer gives the string back.
"""
import json
import os
import sys

os.environ["LLAMA_CPP_BACKEND"] = "cpu"
from llama.llama_cpp import ffi, lib  # noqa: E402

lib.llama_backend_init()
params = lib.llama_model_default_params()
params.vocab_only = True
model = lib.llama_model_load_from_file(sys.argv[1].encode(), params)
vocab = lib.llama_model_get_vocab(model)
for text in json.load(open(sys.argv[2])):
    raw = text.encode("utf-8")
    cap = 4 * len(raw) + 16
    buf = ffi.new("llama_token[]", cap)
    # add_special=False: no BOS; parse_special=True: chat markers are single tokens.
    n = lib.llama_tokenize(vocab, raw, len(raw), buf, cap, False, True)
    ids = [buf[i] for i in range(n)]
    out = b""
    for t in ids:
        piece = ffi.new("char[]", 256)
        k = lib.llama_token_to_piece(vocab, t, piece, 256, 0, True)
        out += ffi.buffer(piece, k)[:]
    print(json.dumps({"text": text, "ids": ids, "roundtrip": out.decode("utf-8", "replace") == text}, ensure_ascii=False))
