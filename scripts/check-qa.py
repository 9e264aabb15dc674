#!/usr/bin/env python3
"""Check data/qa/factual.jsonl: JSON per line, exact field set, unique ids and questions,
`wrong` distinct from the answer and its aliases, counts per topic.

Usage: python3 scripts/check-qa.py [data/qa/factual.jsonl]
Exit status 1 on any error; warnings do not fail the check.
"""
import json
import re
import sys
import unicodedata
from collections import Counter

TOPICS = {"geo", "sci", "math", "hist", "lit", "art", "bio", "lang", "misc", "food",
          "sport", "space", "tech", "body", "unit", "time"}
FIELDS = {"id", "question", "answer", "aliases", "wrong"}
NUMBER_WORDS = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve", "twenty", "hundred", "thousand", "million"}
MIN_ITEMS, MIN_TOPICS = 320, 12


def norm(s):
    s = unicodedata.normalize("NFKD", s)
    s = "".join(c for c in s if not unicodedata.combining(c))
    s = re.sub(r"[^\w\s]", " ", s.lower())
    return " ".join(s.split())


def contains_word(hay, needle):
    return re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", hay) is not None


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "data/qa/factual.jsonl"
    errors, warnings = [], []
    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit(f"{path}: not UTF-8: {e}")
    if not text.endswith("\n"):
        warnings.append("file does not end with a newline")
    ids, questions, topics = set(), set(), Counter()
    for n, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        where = f"line {n}"
        if not line.strip():
            errors.append(f"{where}: blank line")
            continue
        try:
            o = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{where}: invalid JSON: {e}")
            continue
        if not isinstance(o, dict) or set(o) != FIELDS:
            errors.append(f"{where}: fields {sorted(o) if isinstance(o, dict) else type(o)} != {sorted(FIELDS)}")
            continue
        where = f"line {n} ({o['id']})"
        for k in ("id", "question", "answer", "wrong"):
            if not isinstance(o[k], str) or not o[k].strip():
                errors.append(f"{where}: {k} must be a non-empty string")
        if not isinstance(o["aliases"], list) or not all(isinstance(a, str) and a.strip() for a in o["aliases"]):
            errors.append(f"{where}: aliases must be a list of non-empty strings")
            continue
        if errors and errors[-1].startswith(where):
            continue
        m = re.fullmatch(r"([a-z]+)-(\d{3})", o["id"])
        if not m or m.group(1) not in TOPICS:
            errors.append(f"{where}: id must be <topic>-NNN with topic in {sorted(TOPICS)}")
        else:
            topics[m.group(1)] += 1
        if o["id"] in ids:
            errors.append(f"{where}: duplicate id")
        ids.add(o["id"])
        q = norm(o["question"])
        if q in questions:
            errors.append(f"{where}: duplicate question")
        questions.add(q)
        keys = [o["answer"]] + o["aliases"]
        nkeys = [norm(k) for k in keys]
        w = norm(o["wrong"])
        if w in nkeys or o["wrong"].strip().lower() in (k.strip().lower() for k in keys):
            errors.append(f"{where}: wrong {o['wrong']!r} equals the answer or an alias")
        # Aliases that differ only in accents or punctuation ("Brasília"/"Brasilia") are kept on
        # purpose, for scorers that do not normalise.
        for k in nkeys:
            if k and w and k != w and (contains_word(k, w) or contains_word(w, k)):
                warnings.append(f"{where}: wrong {o['wrong']!r} and key {k!r} contain one another as words")
        if norm(o["answer"]) in NUMBER_WORDS:
            errors.append(f"{where}: numeric answer should be digits, not {o['answer']!r}")
        if len(o["answer"].split()) > 4:
            warnings.append(f"{where}: long answer {o['answer']!r}")
    total = sum(topics.values())
    if total < MIN_ITEMS:
        errors.append(f"only {total} items (< {MIN_ITEMS})")
    if len(topics) < MIN_TOPICS:
        errors.append(f"only {len(topics)} topics (< {MIN_TOPICS})")
    for t, c in sorted(topics.items()):
        print(f"{t:6} {c}")
    print(f"total  {total} items, {len(topics)} topics")
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("error:", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
