#!/usr/bin/env python3
"""The tables of results/validation/pmi.md from the probe's per-reply values in
results/validation/pmi/ (written by examples/pmi_probe.rs): how far the PMI reading tells honest
replies from the attackers' templates (AUC, medians), the never-tuned bank's specific replies from
its generic ones, and human dev replies after their own message from after another's.

    python3 scripts/pmi-probe-summary.py
"""
import csv
import statistics
from collections import defaultdict
from pathlib import Path

DIR = Path(__file__).resolve().parent.parent / "results/validation/pmi"
HONEST = ("honest1", "honest2")
ATTACKS = ("search", "prevsearch", "helper-attack", "helper-attack-2", "helper-attack-3")


def auc(pos, neg):
    """P(a positive scores above a negative), ties half."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def paired(rows):
    """Own-message against other-message AUC over the pairs that have both."""
    by = defaultdict(dict)
    for corpus_side, pair, value in rows:
        corpus, side = corpus_side.rsplit("-", 1)
        by[(corpus, pair)][side] = value
    out = {}
    for (corpus, _), sides in by.items():
        if "own" in sides and "other" in sides:
            out.setdefault(corpus, []).append((sides["own"], sides["other"]))
    return out


def table(values, title):
    """values: set -> list of floats (one reading)."""
    honest = [v for s in HONEST for v in values.get(s, [])]
    print(f"\n### {title}\n")
    print("| set | replies | median PMI | AUC, honest above it |")
    print("|---|---:|---:|---:|")
    print(f"| honest (both sets) | {len(honest)} | {statistics.median(honest):.3f} | |")
    for s in ATTACKS:
        if values.get(s):
            v = values[s]
            print(f"| {s} | {len(v)} | {statistics.median(v):.3f} | {auc(honest, v):.3f} |")
    spec, gen = values.get("bank-specific", []), values.get("bank-generic", [])
    if spec and gen:
        print(f"| never-tuned bank: specific above generic | {len(spec)} + {len(gen)} | "
              f"{statistics.median(spec):.3f} / {statistics.median(gen):.3f} | {auc(spec, gen):.3f} |")
    pairs = paired(values.get("_human", []))
    for corpus, ps in sorted(pairs.items()):
        own, other = [p[0] for p in ps], [p[1] for p in ps]
        wins = sum((a > b) + 0.5 * (a == b) for a, b in ps) / len(ps)
        print(f"| {corpus}: own message above another's (paired) | {len(ps)} pairs | "
              f"{statistics.median(own):.3f} / {statistics.median(other):.3f} | {wins:.3f} |")


def read(name, reading):
    values = defaultdict(list)
    with open(DIR / name) as f:
        for row in csv.DictReader(f):
            if row["own_tokens"] in ("", "0"):
                continue
            v = reading(row)
            if row["set"].endswith(("-own", "-other")):
                values["_human"].append((row["set"], row["episode"], v))
            else:
                values[row["set"]].append(v)
    return values


def scale(values):
    """The written rule for the scale: floor at the median of human dev replies read after
    another message, ceiling at the 75th percentile of those read after their own."""
    own = [v for side, _, v in values["_human"] if side.endswith("-own")]
    other = [v for side, _, v in values["_human"] if side.endswith("-other")]
    q75 = statistics.quantiles(own, n=4)[2]
    print(f"\nScale from people ({len(own)} own, {len(other)} other): floor "
          f"{statistics.median(other):.3f}, ceiling {q75:.3f}")


def main():
    table(read("probe-two-generic.csv", lambda r: float(r["pmi_mean_of_two"])),
          "Two generic messages, their mean (probe-two-generic.csv)")
    six = [f"pmi_generic_{k}" for k in range(1, 7)]
    table(read("probe-six-generic.csv", lambda r: statistics.mean(float(r[c]) for c in six)),
          "Six generic messages, their mean (probe-six-generic.csv)")
    best = read("probe-six-generic.csv", lambda r: min(float(r[c]) for c in six))
    table(best, "Six generic messages, the one the reply fits best: the reward's reading "
          "(probe-six-generic.csv)")
    scale(best)


if __name__ == "__main__":
    main()
