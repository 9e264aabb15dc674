#!/usr/bin/env python3
"""The rank checks of results/validation/ that `empathy-gym judge` does not print itself, computed
from its output files (standard library only).

    rank_checks.py components JUDGED.jsonl            # each component and move of a judged EPITOME
                                                      #   part against the sum of the levels
    rank_checks.py catalog LOG_DIR JUDGED.jsonl       # `judge score` of logs against the logs
    rank_checks.py survey JUDGED.jsonl                # ESConv-shaped dialogues against the
                                                      #   seekers' survey scores
    rank_checks.py without JUDGED.jsonl [QUANTUM CAP] # the per-reply change re-computed from its
                                                      #   logged components with each one left
                                                      #   out (a dev-part diagnosis: which
                                                      #   components pull its rank agreement down)
    rank_checks.py rates JUDGED.jsonl [MIN_LEVELS]    # how often each detector, each costly
                                                      #   move's charge and "too generic" fire on
                                                      #   judged (honest) replies; with MIN_LEVELS,
                                                      #   only conversations whose level sum
                                                      #   reaches it (EPITOME: 1)

Spearman's rho uses average ranks for ties, as src/report/stats.rs does; intervals are 95%
percentile bootstraps over items (2,000 resamples, Python's random seeded with 0).
"""
import json
import random
import sys
from collections import defaultdict
from pathlib import Path


def ranks(x):
    order = sorted(range(len(x)), key=lambda i: x[i])
    r = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            r[k] = (i + j) / 2 + 1
        i = j + 1
    return r


def pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    saa = sum((x - ma) ** 2 for x in a)
    sbb = sum((y - mb) ** 2 for y in b)
    return sab / (saa * sbb) ** 0.5 if saa and sbb else float("nan")


def spearman(a, b):
    return pearson(ranks(a), ranks(b))


def interval(a, b, resamples=2000):
    rng = random.Random(0)
    n, draws = len(a), []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        s = spearman([a[i] for i in idx], [b[i] for i in idx])
        if s == s:
            draws.append(s)
    draws.sort()
    return draws[int(0.025 * len(draws))], draws[int(0.975 * len(draws)) - 1]


def read_jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def components(judged):
    rows = read_jsonl(judged)
    total = [sum(r["labels"].values()) for r in rows]
    first = [r["replies"][0] for r in rows]
    names = sorted({k for f in first for k in f["components"]})
    print("| component | fires on | rho with the level sum |")
    print("| --- | ---: | ---: |")
    for k in names:
        v = [f["components"].get(k, 0.0) for f in first]
        print(f"| {k} | {sum(1 for x in v if x)} | {spearman(v, total):+.3f} |")
    print("\n| move | rho with the level sum |\n| --- | ---: |")
    for m in first[0]["moves"]:
        print(f"| {m} | {spearman([f['moves'].get(m, 0.0) for f in first], total):+.3f} |")


def step(points, quantum, cap):
    """The appraiser's step: points rounded to the quantum (under half of one moves nothing),
    clamped to the cap (docs/REWARD.md, "The emotion model", step 6)."""
    q = quantum * int((abs(points) + quantum / 2 - 1e-9) // quantum)
    return (1 if points >= 0 else -1) * min(cap, q)


def without(judged, quantum=5, cap=10):
    quantum, cap = float(quantum), float(cap)
    rows = read_jsonl(judged)
    total = [sum(r["labels"].values()) for r in rows]
    first = [r["replies"][0] for r in rows]
    # An unsafe reply ends the dialogue at the floor: it keeps its logged change.
    kept = [f["delta"] if "unsafe" in f["components"] else None for f in first]

    def changes(leave_out):
        return [k if k is not None else step(sum(v for c, v in f["components"].items() if c not in leave_out), quantum, cap)
                for f, k in zip(first, kept)]

    logged = [f["delta"] for f in first]
    print(f"{len(rows)} replies; logged change rho {spearman(logged, total):+.3f}, "
          f"re-computed from the components {spearman(changes(set()), total):+.3f}\n")
    print("| left out | fires on | mean level sum where it fires / elsewhere | rho of the change without it |")
    print("| --- | ---: | ---: | ---: |")
    for k in sorted({c for f in first for c in f["components"]} - {"unsafe"}):
        on = [t for f, t in zip(first, total) if f["components"].get(k, 0.0)]
        off = [t for f, t in zip(first, total) if not f["components"].get(k, 0.0)]
        mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
        print(f"| {k} | {len(on)} | {mean(on):.2f} / {mean(off):.2f} | {spearman(changes({k}), total):+.3f} |")
    earned = {"fit", "generic", "rapport"}
    costs = {c for f in first for c in f["components"]} - earned - {"unsafe"}
    print(f"| every cost (only what the reply earned) | | | {spearman(changes(costs), total):+.3f} |")
    fit = [sum(f["components"].get(c, 0.0) for c in earned) for f in first]
    print(f"| the same, not rounded | | | {spearman(fit, total):+.3f} |")


def catalog(log_dir, judged):
    logged = {}
    for f in sorted(Path(log_dir).glob("*.jsonl")):
        for n, line in enumerate(open(f), 1):
            if line.strip():
                rec = json.loads(line)
                deltas = [t["delta"] for t in rec["turns"] if t["role"] == "user" and t.get("delta") is not None]
                logged[(f.name, n)] = deltas
    per_reply_j, per_reply_l, final_j, final_l = [], [], [], []
    by_policy = defaultdict(lambda: ([], []))
    for r in read_jsonl(judged):
        name, rest = r["id"].split(":", 1)
        deltas = logged[(name, int(rest.split()[0]))]
        for a, b in zip((x["delta"] for x in r["replies"]), deltas):
            per_reply_j.append(a)
            per_reply_l.append(b)
        final_j.append(r["trajectory"][-1])
        final_l.append(r["labels"]["logged.final_emotion"])
        by_policy[name][0].append(final_j[-1])
        by_policy[name][1].append(final_l[-1])
    print(f"per reply: rho {spearman(per_reply_j, per_reply_l):.3f} over {len(per_reply_j)} replies")
    print(f"per dialogue (final emotion): rho {spearman(final_j, final_l):.3f} over {len(final_j)}")
    print("| log | judged from the text | logged with the scenario |\n| --- | ---: | ---: |")
    for name, (j, l) in sorted(by_policy.items()):
        print(f"| {name} | {sum(j) / len(j):.1f} | {sum(l) / len(l):.1f} |")


def survey(judged):
    rows = [r for r in read_jsonl(judged) if "seeker.empathy" in r["labels"]]
    final = [r["trajectory"][-1] for r in rows]
    print(f"{len(rows)} dialogues with the seeker's ratings; mean replies "
          f"{sum(len(r['replies']) for r in rows) / len(rows):.1f}, mean final emotion "
          f"{sum(final) / len(final):.1f}, would have left: "
          f"{sum(1 for r in rows if r['would_end'].startswith('left'))}")
    for k in ["seeker.empathy", "seeker.relevance"]:
        y = [r["labels"][k] for r in rows]
        lo, hi = interval(final, y)
        print(f"final emotion ~ {k}: rho {spearman(final, y):.3f} [{lo:.3f}, {hi:.3f}]")
    both = [r for r in rows if "seeker.final_emotion_intensity" in r["labels"]]
    drop = [r["labels"]["seeker.initial_emotion_intensity"] - r["labels"]["seeker.final_emotion_intensity"] for r in both]
    print(f"final emotion ~ intensity drop: rho {spearman([r['trajectory'][-1] for r in both], drop):.3f} over {len(both)}")


def rates(judged, min_levels=None):
    rows = read_jsonl(judged)
    if min_levels is not None:
        rows = [r for r in rows if sum(r["labels"].values()) >= float(min_levels)]
    replies = [x for r in rows for x in r["replies"]]
    n = len(replies)
    # What every reply earns or pays whatever it says is not a finding.
    names = sorted({k for x in replies for k in x["components"]} - {"fit", "generic", "rapport", "resistance"})
    print(f"{n} replies of {len(rows)} conversations\n")
    print("| component | replies | share |\n| --- | ---: | ---: |")
    for k in names:
        c = sum(1 for x in replies if x["components"].get(k, 0.0) != 0.0)
        print(f"| {k} | {c} | {100 * c / n:.1f}% |")
    for reason in ["too generic to land", "my words dropped where they don't belong"]:
        c = sum(1 for x in replies if reason in x["reasons"])
        print(f"| {reason} (reason) | {c} | {100 * c / n:.1f}% |")


if __name__ == "__main__":
    commands = {"components": components, "without": without, "catalog": catalog, "survey": survey, "rates": rates}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
