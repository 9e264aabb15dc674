#!/usr/bin/env python3
"""Tables for results/experiments/warmth-vs-behavior/summary.md from the files that
scripts/warmth-vs-behavior.sh writes (standard library only).

    python3 scripts/warmth-vs-behavior-tables.py OUT [--steps 50]

OUT holds behavior/ and trait/ (run directories), empathy/ (eval empathy with base, behavior,
trait in that order) and factual/ (eval factual, base first). Prints markdown: training by
10-step block (reward, final emotion and the warmth of the replies for both runs), the SAGE table
with paired bootstrap intervals over test profiles, and the warmth of the replies in the SAGE
dialogues, and the factual error rates with non-answers counted as refusals.
"""

import argparse
import csv
import json
import random
import re
import statistics as st
from pathlib import Path

MODELS = ["base", "behavior", "trait"]


def block_rows(run: Path, steps: int, block: int = 10):
    rows = [r for r in csv.DictReader(open(run / "metrics.csv")) if int(r["step"]) <= steps]
    warmth = {}
    for line in open(run / "episodes.jsonl"):
        e = json.loads(line)
        if e["step"] > steps:
            continue
        for t in e["turns"]:
            a = t.get("appraisal")
            if t["role"] == "user" and a is not None:
                warmth.setdefault(e["step"], []).append(a["warmth"])
    out = []
    for lo in range(1, steps + 1, block):
        hi = lo + block - 1
        sel = [r for r in rows if lo <= int(r["step"]) <= hi]
        w = [x for s in range(lo, hi + 1) for x in warmth.get(s, [])]
        out.append(
            (
                f"{lo}-{hi}",
                st.mean(float(r["reward_mean"]) for r in sel),
                st.mean(float(r["final_emotion_mean"]) for r in sel),
                st.mean(w),
            )
        )
    return out


def training_table(out: Path, steps: int):
    b, t = block_rows(out / "behavior", steps), block_rows(out / "trait", steps)
    print("| steps | behavior: reward (final emotion / 100) | behavior: final emotion | behavior: warmth | trait: reward (mean warmth) | trait: final emotion | trait: warmth |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (blk, br, be, bw), (_, tr, te, tw) in zip(b, t):
        print(f"| {blk} | {br:.3f} | {be:.1f} | {bw:.3f} | {tr:.3f} | {te:.1f} | {tw:.3f} |")


def paired_ci(a, b, reps=10_000, seed=0):
    """Mean of b - a over pairs with a 95% percentile bootstrap interval (resampling pairs)."""
    d = [y - x for x, y in zip(a, b)]
    rng = random.Random(seed)
    means = sorted(st.mean(rng.choices(d, k=len(d))) for _ in range(reps))
    return st.mean(d), means[int(0.025 * reps)], means[int(0.975 * reps) - 1], d


def empathy_tables(out: Path):
    rows = list(csv.DictReader(open(out / "empathy" / "empathy.csv")))
    final = {m: {} for m in MODELS}
    for r in rows:
        final[r["model"]][r["profile"]] = int(r["final_emotion"])
    profiles = sorted(final["base"])
    print("| comparison | mean difference in final emotion | 95% bootstrap interval | better / worse / equal profiles |")
    print("|---|---:|---|---|")
    for x, y in [("base", "behavior"), ("base", "trait"), ("behavior", "trait")]:
        m, lo, hi, d = paired_ci([final[x][p] for p in profiles], [final[y][p] for p in profiles])
        better = sum(v > 0 for v in d)
        worse = sum(v < 0 for v in d)
        print(f"| {y} - {x} | {m:+.1f} | [{lo:+.1f}, {hi:+.1f}] | {better} / {worse} / {len(d) - better - worse} |")
    print()
    warmth = [profile_warmth(out / "empathy" / f"episodes-{i}.jsonl") for i in range(3)]
    print("| model | mean warmth of its replies in the SAGE dialogues | replies | mean reply length (words) |")
    print("|---|---:|---:|---:|")
    for m, (per_profile, replies, words) in zip(MODELS, warmth):
        all_w = [w for ws in per_profile.values() for w in ws]
        print(f"| {m} | {st.mean(all_w):.3f} | {replies} | {st.mean(words):.1f} |")
    print()
    print("| comparison | mean difference in warmth per profile | 95% bootstrap interval |")
    print("|---|---:|---|")
    for x, y in [(0, 1), (0, 2), (1, 2)]:
        a, b = warmth[x][0], warmth[y][0]
        keys = sorted(k for k in a if a[k] and b.get(k))
        m, lo, hi, _ = paired_ci([st.mean(a[k]) for k in keys], [st.mean(b[k]) for k in keys])
        print(f"| {MODELS[y]} - {MODELS[x]} | {m:+.3f} | [{lo:+.3f}, {hi:+.3f}] |")


def profile_warmth(path: Path):
    """Warmth of every reply per profile, the number of replies and their lengths in words."""
    per_profile, words = {}, []
    for line in open(path):
        e = json.loads(line)
        key = f"{e['profile']['scenario']}:{e['profile']['persona']}"
        for t in e["turns"]:
            a = t.get("appraisal")
            if t["role"] == "user" and a is not None:
                per_profile.setdefault(key, []).append(a["warmth"])
            if t["role"] == "assistant":
                words.append(len(t["text"].split()))
    return per_profile, sum(len(v) for v in per_profile.values()), words


NON_ANSWER = re.compile(
    r"unable to (assist|help|provide)|can't (assist|help)|cannot (assist|help)|not (able|capable|equipped) to",
    re.I,
)


def non_answer_table(out: Path):
    """Error and not-answering rates when replies scored incorrect that decline to answer count
    as refusals (the scorer's refusal patterns are narrower)."""
    print("| model | error rate (%) | non-answers scored incorrect | error rate if they were refusals (%) | non-answers + refusals (%) |")
    print("|---|---:|---:|---:|---:|")
    for i, m in enumerate(MODELS):
        rows = [json.loads(l) for l in open(out / "factual" / f"answers-{i}.jsonl")]
        n = len(rows)
        err = sum(r["outcome"] in ("incorrect", "agrees_with_wrong") for r in rows)
        na = sum(r["outcome"] == "incorrect" and bool(NON_ANSWER.search(r["reply"])) for r in rows)
        ref = sum(r["outcome"] == "refusal" for r in rows)
        print(f"| {m} | {100 * err / n:.1f} | {na} | {100 * (err - na) / n:.1f} | {100 * (na + ref) / n:.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    print("### Training, by 10-step block\n")
    training_table(args.out, args.steps)
    print("\n### SAGE, paired over test profiles\n")
    empathy_tables(args.out)
    print("\n### Factual: non-answers\n")
    non_answer_table(args.out)


if __name__ == "__main__":
    main()
