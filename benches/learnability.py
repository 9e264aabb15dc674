#!/usr/bin/env python3
"""The learnability table of a sweep folder (benches/learnability.sh): per cell, the mean training
reward of the first and last quarter of steps and the rise; the held-out SAGE score (mean final
emotion, fixed moderate user) of the base model and of the trained policy on the same profiles;
then mean +- std across cells. Standard library only."""
import csv
import os
import statistics as st
import sys


def quarter_means(metrics):
    """Steps, mean reward of the first and the last quarter of steps, and the mean share of groups
    whose rewards were all equal (they teach GRPO nothing)."""
    with open(metrics, newline="") as f:
        rows = list(csv.DictReader(f))
    rewards = [float(r["reward_mean"]) for r in rows]
    flat = st.mean(float(r["frac_reward_zero_std"]) for r in rows)
    q = max(1, len(rewards) // 4)
    return len(rewards), st.mean(rewards[:q]), st.mean(rewards[-q:]), flat


def sage(csv_path, model):
    """Mean final emotion per profile of `model` in an eval-empathy empathy.csv."""
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["model"] == model]
    return {r["profile"]: float(r["final_emotion"]) for r in rows}


def main(out):
    base_root = os.path.join(out, "base")
    base = {}
    for model in sorted(os.listdir(base_root)) if os.path.isdir(base_root) else []:
        path = os.path.join(base_root, model, "eval-empathy", "empathy.csv")
        if os.path.isfile(path):
            base = sage(path, "base")
    cells_root = os.path.join(out, "cells")
    rows = []
    for cell in sorted(os.listdir(cells_root)):
        d = os.path.join(cells_root, cell)
        if not os.path.isfile(os.path.join(d, "done")):
            print(f"(cell {cell} is not finished; run the bench again to finish it)")
            continue
        steps, first, last, flat = quarter_means(os.path.join(d, "metrics.csv"))
        trained = sage(os.path.join(d, "eval-empathy", "empathy.csv"), "trained")
        common = sorted(set(trained) & set(base))
        before = st.mean(base[p] for p in common) if common else float("nan")
        after = st.mean(trained[p] for p in common) if common else float("nan")
        rows.append((cell, steps, first, last, last - first, before, after, len(common), flat))
    print("| cell | steps | reward, first quarter | reward, last quarter | rise | groups without spread | held-out score before | after | profiles |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for cell, steps, first, last, rise, before, after, n, flat in rows:
        print(f"| {cell} | {steps} | {first:.3f} | {last:.3f} | {rise:+.3f} | {flat:.0%} | {before:.1f} | {after:.1f} | {n} |")
    groups = {}
    for r in rows:
        groups.setdefault(r[0].rsplit(",seed=", 1)[0], []).append(r)
    print()
    print("| setting | seeds | rise of the training reward | rose in | held-out score before | after | change |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, rs in groups.items():
        def ms(xs, fmt):
            if len(xs) < 2:  # one seed: no spread to report
                return f"{st.mean(xs):{fmt}}"
            return f"{st.mean(xs):{fmt}} ± {st.stdev(xs):{fmt.lstrip('+')}}"
        rises = [r[4] for r in rs]
        print(f"| {name} | {len(rs)} | {ms(rises, '+.3f')} | {sum(x > 0 for x in rises)} of {len(rs)} "
              f"| {ms([r[5] for r in rs], '.1f')} | {ms([r[6] for r in rs], '.1f')} "
              f"| {ms([r[6] - r[5] for r in rs], '+.1f')} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/learnability/quickstart")
