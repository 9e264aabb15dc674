#!/usr/bin/env python3
"""Paired held-out comparison from an `eval empathy` empathy.csv: per profile, the trained model's
final emotion minus the base model's; prints the mean difference with a 95% percentile-bootstrap
interval over profiles (10,000 resamples, seed 0) and how many profiles got better, worse or
stayed equal. Standard library only.

    scripts/paired-sage.py results/runs/RUN/eval/empathy.csv [BASE_NAME] [TRAINED_NAME]
"""
import csv
import random
import statistics as st
import sys


def main(path, base="base", trained=None):
    scores = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            scores.setdefault(r["model"], {})[r["profile"]] = float(r["final_emotion"])
    if base not in scores:
        sys.exit(f"error: {path} has no rows of model {base!r} (models: {', '.join(scores)})")
    trained = trained or next((m for m in scores if m != base), None)
    if trained not in scores:
        sys.exit(f"error: {path} has no trained model to compare with {base!r}")
    common = sorted(set(scores[base]) & set(scores[trained]))
    d = [scores[trained][p] - scores[base][p] for p in common]
    rng = random.Random(0)
    means = sorted(st.mean(rng.choices(d, k=len(d))) for _ in range(10_000))
    lo, hi = means[249], means[9_749]
    print(f"{trained} vs {base} over {len(d)} profiles: mean final emotion "
          f"{st.mean(scores[base][p] for p in common):.1f} -> {st.mean(scores[trained][p] for p in common):.1f}; "
          f"paired difference {st.mean(d):+.1f} (95% bootstrap interval {lo:+.1f} to {hi:+.1f}); "
          f"better on {sum(x > 0 for x in d)}, worse on {sum(x < 0 for x in d)}, equal on {sum(x == 0 for x in d)}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(*sys.argv[1:4])
