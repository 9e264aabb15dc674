#!/usr/bin/env python3
"""The analysis of the algorithm-vs-environment sweep (results/experiments/algorithm-vs-environment), after
`empathy-gym sweep collect DIR`: which factor moved the held-out score more, the algorithm or the
training difficulty, with the statistics that back it. Reads DIR/summary.csv and each finished
cell's metrics.csv; writes its markdown into DIR/summary.md between its own marks (the text around
them and `sweep collect`'s part are kept) and prints it. Standard library only.

    python3 scripts/algorithm-vs-environment.py results/experiments/algorithm-vs-environment

Sections:
- paired comparisons against the reference cell (GRPO at moderate): per seed, the cell's value
  minus the reference's at the same seed (same training profiles and sampling seeds); mean and 95%
  Student-t interval across seeds;
- factors: the share of the variance between cells explained by the algorithm, the difficulty,
  their interaction and the seeds (two-way layout, eta squared), and permutation p-values for each
  main effect (its labels shuffled among cells within each level of the other factor, 10,000
  times, seed 0; the statistic is the factor's sum of squares);
- stability: seed-to-seed spread of the final reward, steps flagged as collapse, KL drift
  (kl_sample, the sampled KL to the base policy, mean over the last quarter of steps) and the
  policy tokens each cell trained on (the budget check).
"""
import csv
import os
import random
import statistics as st
import sys

BEGIN = "<!-- algorithm-vs-environment.py: begin (written by the script; edits here are replaced) -->"
END = "<!-- algorithm-vs-environment.py: end -->"
REFERENCE = ("grpo", "moderate")
# The order tables list values in (the sweep file's); values not listed here come after, sorted.
PREFERRED = {"algorithm": ["grpo", "ppo", "lite_ppo", "rloo"], "difficulty": ["moderate", "hard", "auto"]}
# Two-sided 95% quantiles of Student's t by degrees of freedom (any statistics table).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}
METRICS = [("sage_score", "held-out SAGE score", "{:+.1f}"),
           ("final_reward", "final training reward", "{:+.3f}"),
           ("factual_error", "factual error rate (points)", "{:+.1f}")]


def t95(df):
    """The 95% t quantile for `df` degrees of freedom (the next smaller tabulated df: wider)."""
    return T95[max(k for k in T95 if k <= df)] if df >= 1 else float("nan")


def mean_ci(xs):
    """Mean and half-width of its 95% Student-t interval (nan with fewer than 2 values)."""
    m = st.mean(xs)
    if len(xs) < 2:
        return m, float("nan")
    return m, t95(len(xs) - 1) * st.stdev(xs) / len(xs) ** 0.5


def fmt_ci(m, h, f):
    if h != h:  # nan: one seed
        return f.format(m) + " (one seed)"
    return f"{f.format(m)} ({f.format(m - h)} to {f.format(m + h)})"


def load(out):
    """Finished cells: dicts with algorithm, difficulty, seed and the summary's numbers."""
    rows = []
    with open(os.path.join(out, "summary.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "done":
                continue
            cell = {"name": r["cell"], "algorithm": r["algorithm"],
                    "difficulty": r["env.difficulty"], "seed": int(r["seed"])}
            for key, _, _ in METRICS:
                cell[key] = float(r[key]) if r[key] else float("nan")
            cell["factual_error"] *= 100  # percentage points, as in `sweep collect`'s tables
            cell.update(training(os.path.join(out, "cells", r["cell"], "metrics.csv")))
            rows.append(cell)
    return rows


def training(path):
    """Collapse steps, KL drift, policy tokens and the reward rise of one cell's metrics.csv."""
    with open(path, newline="") as f:
        steps = list(csv.DictReader(f))
    q = max(1, len(steps) // 4)
    kl = [float(s["kl_sample"]) for s in steps[-q:] if s["kl_sample"]]
    rewards = [float(s["reward_mean"]) for s in steps]
    return {"collapse": sum(int(s["collapse"] or 0) for s in steps),
            "kl_drift": st.mean(kl) if kl else float("nan"),
            "policy_tokens": sum(int(s["policy_tokens"]) for s in steps),
            "rise": st.mean(rewards[-q:]) - st.mean(rewards[:q])}


def order(rows, factor):
    """The values of `factor` among `rows`, in table order."""
    values, preferred = {r[factor] for r in rows}, PREFERRED[factor]
    return [v for v in preferred if v in values] + sorted(v for v in values if v not in preferred)


def combinations(rows):
    """(algorithm, difficulty) pairs present in `rows`, in table order."""
    return [(a, d) for a in order(rows, "algorithm") for d in order(rows, "difficulty")]


def paired(rows, key, f):
    ref = {r["seed"]: r[key] for r in rows if (r["algorithm"], r["difficulty"]) == REFERENCE}
    lines = []
    for a, d in combinations(rows):
        if (a, d) == REFERENCE:
            continue
        diffs = [r[key] - ref[r["seed"]] for r in rows
                 if (r["algorithm"], r["difficulty"]) == (a, d) and r["seed"] in ref
                 and r[key] == r[key] and ref[r["seed"]] == ref[r["seed"]]]
        if diffs:
            m, h = mean_ci(diffs)
            better = sum(x > 0 for x in diffs)
            lines.append(f"| {a} | {d} | {len(diffs)} | {fmt_ci(m, h, f)} | {better} of {len(diffs)} |")
    return lines


def sums_of_squares(rows, key):
    """Two-way layout over cells (replicates: seeds): SS of algorithm, difficulty, interaction,
    seeds (within combinations) and total."""
    xs = [r[key] for r in rows]
    grand = st.mean(xs)

    def ss_of(label):
        groups = {}
        for r in rows:
            groups.setdefault(label(r), []).append(r[key])
        return sum(len(g) * (st.mean(g) - grand) ** 2 for g in groups.values()), groups

    ss_a, _ = ss_of(lambda r: r["algorithm"])
    ss_d, _ = ss_of(lambda r: r["difficulty"])
    ss_cells, combos = ss_of(lambda r: (r["algorithm"], r["difficulty"]))
    ss_seeds = sum((x - st.mean(g)) ** 2 for g in combos.values() for x in g)
    total = sum((x - grand) ** 2 for x in xs)
    return {"algorithm": ss_a, "difficulty": ss_d, "interaction": ss_cells - ss_a - ss_d,
            "seeds": ss_seeds, "total": total}


def permutation_p(rows, key, factor, other, shuffles=10_000, seed=0):
    """Share of shuffles (the factor's labels permuted within each level of the other factor)
    whose sum of squares for the factor is at least the observed one."""
    observed = sums_of_squares(rows, key)[factor]
    rng = random.Random(seed)
    strata = {}
    for r in rows:
        strata.setdefault(r[other], []).append(r)
    hits = 0
    for _ in range(shuffles):
        shuffled = []
        for group in strata.values():
            labels = [r[factor] for r in group]
            rng.shuffle(labels)
            shuffled += [dict(r, **{factor: l}) for r, l in zip(group, labels)]
        hits += sums_of_squares(shuffled, key)[factor] >= observed - 1e-12
    return (hits + 1) / (shuffles + 1)


def factors(rows, key, f):
    rows = [r for r in rows if r[key] == r[key]]
    if min(len({r["algorithm"] for r in rows}), len({r["difficulty"] for r in rows})) < 2:
        return ["(Not yet: this needs finished cells of at least two algorithms and two difficulties.)"]
    ss = sums_of_squares(rows, key)
    if ss["total"] == 0:
        return ["(no variation)"]
    per_combo = {}
    for r in rows:
        per_combo.setdefault((r["algorithm"], r["difficulty"]), 0)
        per_combo[(r["algorithm"], r["difficulty"])] += 1
    balanced = len(set(per_combo.values())) == 1
    lines = ["| source | share of variance | main-effect means (pooled over the other factor and seeds) | permutation p |",
             "| --- | ---: | --- | ---: |"]
    for factor, other in [("algorithm", "difficulty"), ("difficulty", "algorithm")]:
        means = []
        for v in order(rows, factor):
            xs = [r[key] for r in rows if r[factor] == v]
            means.append(f"{v} {f.format(st.mean(xs)).lstrip('+')}")
        p = permutation_p(rows, key, factor, other)
        p_text = "< 0.001" if p < 0.001 else f"{p:.3f}"
        lines.append(f"| {factor} | {ss[factor] / ss['total']:.0%} | {', '.join(means)} | {p_text} |")
    lines.append(f"| interaction | {ss['interaction'] / ss['total']:.0%} | | |")
    lines.append(f"| seeds (within a combination) | {ss['seeds'] / ss['total']:.0%} | | |")
    if not balanced:
        lines.append("")
        lines.append("(Combinations have different numbers of finished seeds: the shares are approximate.)")
    return lines


def stability(rows):
    lines = ["| algorithm | difficulty | seeds | final reward, seed-to-seed std | reward rise (last - first quarter) | steps flagged collapse | KL drift (last quarter) | policy tokens trained on |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for a, d in combinations(rows):
        rs = [r for r in rows if (r["algorithm"], r["difficulty"]) == (a, d)]
        if not rs:
            continue
        spread = f"{st.stdev([r['final_reward'] for r in rs]):.3f}" if len(rs) > 1 else "(one seed)"
        rise = mean_ci([r["rise"] for r in rs])
        kl = [r["kl_drift"] for r in rs if r["kl_drift"] == r["kl_drift"]]
        kl_text = f"{st.mean(kl):.4f}" if kl else "-"
        tokens = st.mean(r["policy_tokens"] for r in rs)
        lines.append(f"| {a} | {d} | {len(rs)} | {spread} | {fmt_ci(*rise, '{:+.3f}')} | "
                     f"{sum(r['collapse'] for r in rs)} | {kl_text} | {tokens:,.0f} |")
    return lines


def report(rows):
    md = [BEGIN, "", f"## Analysis ({len(rows)} finished cells)", ""]
    md += [f"Reference: {REFERENCE[0]} at {REFERENCE[1]}. Paired by seed: each cell minus the "
           "reference cell of the same seed; mean across seeds with its 95% Student-t interval, "
           "and in how many seeds the cell was higher.", ""]
    for key, name, f in METRICS:
        md += [f"### Paired against {REFERENCE[0]} at {REFERENCE[1]}: {name}", "",
               "| algorithm | difficulty | seeds | difference (95% interval) | higher in |",
               "| --- | --- | ---: | --- | ---: |"]
        md += paired(rows, key, f) or ["| (no pairs yet) | | | | |"]
        md.append("")
    for key, name, f in METRICS[:2]:
        md += [f"### Which factor moved the {name}", ""] + factors(rows, key, f) + [""]
    md += ["### Stability", ""] + stability(rows) + ["", END]
    return "\n".join(md) + "\n"


def main(out):
    rows = load(out)
    if not rows:
        sys.exit(f"error: no finished cells in {out}/summary.csv; run `empathy-gym sweep collect {out}` first")
    text = report(rows)
    path = os.path.join(out, "summary.md")
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END) + 1:]
    else:
        new = old + ("\n" if old else "") + text
    with open(path + ".tmp", "w") as f:
        f.write(new)
    os.replace(path + ".tmp", path)
    print(text, end="")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
