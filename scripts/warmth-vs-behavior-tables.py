#!/usr/bin/env python3
"""Tables for results/experiments/warmth-vs-behavior/summary.md from the files that
scripts/warmth-vs-behavior.sh writes (standard library only).

    python3 scripts/warmth-vs-behavior-tables.py OUT [--steps 50]

OUT is the experiment's sweep folder: cells/reward_mode=behavior,seed=0/ and
cells/reward_mode=trait,seed=0/ (run directories; the training episodes are not committed, so the
training table needs the machine that ran them), empathy/ (eval empathy with base, behavior, trait
in that order) and the recorded factual answers (base/.../answers-0.jsonl, each cell's
answers-1.jsonl). Prints markdown: training by 10-step block (reward, final emotion and the warmth
of the replies for both runs), the SAGE table with paired bootstrap intervals over test profiles,
the warmth of the replies in the SAGE dialogues, and the factual outcomes under both readings of
the scorer, beside the first run's regex estimate.
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
    # The training episodes stay on the machine that trained (not committed): warmth is "-" without.
    log = run / "episodes.jsonl"
    for line in open(log) if log.is_file() else []:
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
                st.mean(w) if w else float("nan"),
            )
        )
    return out


def cell(out: Path, mode: str) -> Path:
    return out / "cells" / f"reward_mode={mode},seed=0"


def training_table(out: Path, steps: int):
    b, t = block_rows(cell(out, "behavior"), steps), block_rows(cell(out, "trait"), steps)
    print("| steps | behavior: reward (final emotion / 100) | behavior: final emotion | behavior: warmth | trait: reward (mean warmth) | trait: final emotion | trait: warmth |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (blk, br, be, bw), (_, tr, te, tw) in zip(b, t):
        w = lambda x: "-" if x != x else f"{x:.3f}"
        print(f"| {blk} | {br:.3f} | {be:.1f} | {w(bw)} | {tr:.3f} | {te:.1f} | {w(tw)} |")


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


def answers(out: Path, model: str) -> Path:
    """The recorded factual answers: the base model's under base/, each trained model's in its cell."""
    if model == "base":
        return out / "base" / "SmolLM2-135M-Instruct.Q4_1" / "eval-factual" / "answers-0.jsonl"
    return cell(out, model) / "eval-factual" / "answers-1.jsonl"


def non_answer_table(out: Path):
    """The scorer's outcomes under both readings, and how the first run's regex estimate (every
    reply scored incorrect by the old scorer whose wording declines to answer, moved to refusals)
    compares with the scorer's non-answers on the same replies."""
    print("| model | prompts | refusals | non-answers | error rate, non-answers apart (%) | error rate, non-answers as errors (before issue 15) (%) | regex estimate: replies moved | regex estimate: error rate (%) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m in MODELS:
        if not answers(out, m).is_file():
            continue
        rows = [json.loads(l) for l in open(answers(out, m))]
        n = len(rows)
        count = lambda *kinds: sum(r["outcome"] in kinds for r in rows)
        err = count("incorrect", "agrees_with_wrong")
        na = count("non_answer")
        # The old scorer's incorrect = incorrect + non_answer; the regex moved those that match.
        moved = sum(
            r["outcome"] in ("incorrect", "non_answer") and bool(NON_ANSWER.search(r["reply"]))
            for r in rows
        )
        pct = lambda k: f"{100 * k / n:.1f}"
        print(f"| {m} | {n} | {count('refusal')} | {na} | {pct(err)} | {pct(err + na)} | {moved} | {pct(err + na - moved)} |")


def factual_rows(path: Path):
    """factual.csv rows of the pooled slices, by (model, slice)."""
    rows = csv.DictReader(open(path))
    return {(r["model"], r["slice"]): r for r in rows if r["context"] == "all"}


def readings_table(out: Path):
    """The headline numbers under both readings, from factual/{apart,errors}/factual.csv, and the
    first run's numbers (old scorer) beside them."""
    apart, errors = "non-answers apart (since issue 15)", "non-answers as errors (before issue 15)"
    # (label, report, non-answers a column of their own, baseline rows printed too). Trait against
    # behavior directly prints only the trait rows (its baseline, behavior, is in the rows above).
    runs = [
        (apart, out / "factual" / "apart" / "factual.csv", True, True),
        (errors, out / "factual" / "errors" / "factual.csv", False, True),
        ("first run, scorer before issue 15", out / "first-run" / "factual" / "factual.csv", False, True),
        (f"{apart}, against behavior", out / "factual-trait-vs-behavior" / "apart" / "factual.csv", True, False),
        (f"{errors}, against behavior", out / "factual-trait-vs-behavior" / "errors" / "factual.csv", False, False),
    ]
    pct = lambda r, k: f"{100 * float(r[k]):.1f}"

    def change(r):
        if not r["delta_error"]:
            return ""
        p = float(r["p_exact"])
        p = "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
        d, lo, hi = (100 * float(r[k]) for k in ("delta_error", "ci_low", "ci_high"))
        return f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]; {p}"

    print("| reading | model | error rate (%) | change vs base (vs behavior where named), points (95% CI; McNemar) | no belief: error / change | wrong belief: error / change | agrees with the wrong belief (%) | refusals (%) | non-answers (%) |")
    print("|---|---|---:|---|---|---|---:|---:|---:|")
    for name, path, non_answers_apart, baseline_too in runs:
        if not path.is_file():
            continue
        rows = factual_rows(path)
        for m in (m for m in MODELS if (m, "overall") in rows):
            if not (baseline_too or rows[(m, "overall")]["delta_error"]):
                continue
            o, a, w = (rows[(m, s)] for s in ("overall", "belief_absent", "belief_present"))
            # Under the old reading non-answers are among the errors, so no column of their own.
            na = pct(o, "non_answer_rate") if non_answers_apart else "-"
            print(
                f"| {name} | {m} | {pct(o, 'error_rate')} | {change(o)} "
                f"| {pct(a, 'error_rate')} / {change(a).split(';')[0]} "
                f"| {pct(w, 'error_rate')} / {change(w).split(';')[0]} "
                f"| {pct(o, 'agree_wrong_rate')} | {pct(o, 'refusal_rate')} | {na} |"
            )
    first = factual_rows(runs[2][1]).get(("base", "overall"))
    again = factual_rows(runs[1][1]).get(("base", "overall")) if runs[1][1].is_file() else None
    if first and again:
        keys = ("correct", "incorrect", "agrees_with_wrong", "refusal")
        same = all(first[k] == again[k] for k in keys)
        print()
        print(
            "Base model, first run vs this run under the same (old) reading: "
            + ", ".join(f"{k} {first[k]} / {again[k]}" for k in keys)
            + (" (identical)" if same else " (differs)")
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    print("### Training, by 10-step block\n")
    training_table(args.out, args.steps)
    if (args.out / "empathy" / "empathy.csv").is_file():
        print("\n### SAGE, paired over test profiles\n")
        empathy_tables(args.out)
    print("\n### Factual: both readings\n")
    readings_table(args.out)
    print("\n### Factual: refusals, non-answers and the first run's regex estimate\n")
    non_answer_table(args.out)


if __name__ == "__main__":
    main()
