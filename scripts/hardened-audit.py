#!/usr/bin/env python3
"""Audits the held-out replies of the hardened 100-step runs (scripts/hardened-100.sh).

Reads RUNS/seed-N/eval/episodes-*.jsonl (the base model's from the first seed that has them, the
trained model's from every seed) and prints markdown: the SAGE score per seed, paired against the
base with a 95% percentile-bootstrap interval over profiles; the share of replies each detector
flags (docs/REWARD.md); distinct-1 and distinct-2 over all replies; the most common openings (first
three words); the mean reply length in words. Standard library only.

    scripts/hardened-audit.py results/runs/hardened-100 > results/runs/hardened-100/audit.md
"""
import collections
import json
import pathlib
import random
import re
import statistics as st
import sys

DETECTORS = ["copied", "template", "stacked_questions", "meta", "incoherent", "padding",
             "off_topic", "feeling_salad", "flattery", "sycophancy", "repetition", "stuffing",
             "length", "gibberish", "unsafe"]


def episodes(path):
    return [json.loads(line) for line in open(path)]


def model_of(recs):
    return recs[0]["policy"].get("checkpoint") and "trained" or "base"


def final(r):
    return [t for t in r["turns"] if t["role"] == "user"][-1]["emotion"]


def replies(recs):
    return [t["text"] for r in recs for t in r["turns"] if t["role"] == "assistant"]


def flags(recs):
    count, n = collections.Counter(), 0
    for r in recs:
        for t in r["turns"]:
            a = t.get("appraisal")
            if a:
                n += 1
                count.update(k for k in a["components"] if k in DETECTORS)
    return {k: count[k] / max(n, 1) for k in DETECTORS}


def words(text):
    return re.findall(r"[a-z0-9']+", text.lower())


def distinct(texts, n):
    grams = [tuple(w[i:i + n]) for w in map(words, texts) for i in range(len(w) - n + 1)]
    return len(set(grams)) / max(len(grams), 1)


def openings(texts, k=5):
    c = collections.Counter(" ".join(words(t)[:3]) for t in texts)
    return ", ".join(f"\"{o}\" {n}" for o, n in c.most_common(k))


def paired(base, trained):
    b = {f"{r['profile']['scenario']}:{r['profile']['persona']}": final(r) for r in base}
    t = {f"{r['profile']['scenario']}:{r['profile']['persona']}": final(r) for r in trained}
    common = sorted(set(b) & set(t))
    d = [t[p] - b[p] for p in common]
    rng = random.Random(0)
    means = sorted(st.mean(rng.choices(d, k=len(d))) for _ in range(10_000))
    return (st.mean(b[p] for p in common), st.mean(t[p] for p in common), st.mean(d),
            means[249], means[9_749], sum(x > 0 for x in d), sum(x < 0 for x in d), len(d))


def transcript(r, width=300):
    lines = [f"*{r['profile']['scenario']}:{r['profile']['persona']}*, end {r.get('end')}, final {final(r)}", ""]
    for t in r["turns"]:
        text = t["text"].replace("\n", " ")
        if len(text) > width:
            text = text[:width] + " ..."
        if t["role"] == "user":
            flagged = [k for k in (t.get("appraisal") or {}).get("components", {}) if k in DETECTORS]
            tag = f" ({t['emotion']}" + (f"; {', '.join(flagged)}" if flagged else "") + ")"
            lines.append(f"> **user**{tag}: {text}")
        else:
            lines.append(f"> **policy**: {text}")
        lines.append(">")
    return "\n".join(lines[:-1])


def main(root):
    root = pathlib.Path(root)
    base, trained = None, {}
    for seed_dir in sorted(root.glob("seed-*")):
        for f in sorted((seed_dir / "eval").glob("episodes-*.jsonl")):
            recs = episodes(f)
            if model_of(recs) == "base":
                base = base or recs
            else:
                trained[seed_dir.name] = recs
    if base is None or not trained:
        sys.exit(f"error: {root} has no base and trained eval episodes yet")
    out = ["## Held-out SAGE score (37 test profiles, moderate, start 40, 10 turns)", "",
           "| seed | base | trained | paired difference | 95% bootstrap | better / worse |",
           "|---|---:|---:|---:|---|---|"]
    for name, recs in trained.items():
        b, t, d, lo, hi, up, down, n = paired(base, recs)
        out.append(f"| {name} | {b:.1f} | {t:.1f} | {d:+.1f} | {lo:+.1f} to {hi:+.1f} | {up} / {down} of {n} |")
    out += ["", "## Hack audit of the held-out replies", "",
            "Share of replies each detector flags (docs/REWARD.md); a reply can be flagged by several.", ""]
    models = [("base", base)] + list(trained.items())
    out.append("| detector | " + " | ".join(m for m, _ in models) + " |")
    out.append("|---|" + "---:|" * len(models))
    fl = {m: flags(r) for m, r in models}
    for k in DETECTORS:
        if any(fl[m][k] for m, _ in models):
            out.append(f"| {k} | " + " | ".join(f"{fl[m][k]:.0%}" for m, _ in models) + " |")
    out += ["", "| measure | " + " | ".join(m for m, _ in models) + " |", "|---|" + "---:|" * len(models)]
    texts = {m: replies(r) for m, r in models}
    out.append("| replies | " + " | ".join(str(len(texts[m])) for m, _ in models) + " |")
    out.append("| distinct-1 | " + " | ".join(f"{distinct(texts[m], 1):.3f}" for m, _ in models) + " |")
    out.append("| distinct-2 | " + " | ".join(f"{distinct(texts[m], 2):.3f}" for m, _ in models) + " |")
    out.append("| mean words | " + " | ".join(f"{st.mean(len(words(t)) for t in texts[m]):.1f}" for m, _ in models) + " |")
    out += ["", "Most common openings (first three words, count):", ""]
    for m, _ in models:
        out.append(f"- {m}: {openings(texts[m])}")
    out += ["", "## Three held-out dialogues, base and trained (first seed) side by side", ""]
    first = next(iter(trained.values()))
    by_profile = {(r["profile"]["scenario"], r["profile"]["persona"]): r for r in first}
    shown = 0
    for r in base:
        key = (r["profile"]["scenario"], r["profile"]["persona"])
        if key in by_profile and shown < 3 and shown * 12 <= base.index(r):
            out += [f"### {key[0]}:{key[1]}", "", "**base**", "", transcript(r), "",
                    f"**trained ({next(iter(trained))})**", "", transcript(by_profile[key]), ""]
            shown += 1
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
