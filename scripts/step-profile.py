#!/usr/bin/env python3
"""Where a GRPO step's time goes, from a run's metrics.csv (results/perf/step.md).

  scripts/step-profile.py RUN_DIR [--skip N]

One line per phase: generation (t_rollout_s), simulator (t_simulate_s), stored log-probs
(t_logprob_s), training forward (t_forward_s), backward (t_backward_s), optimizer
(t_optimizer_s), and the rest of the update (t_train_s minus those: batching, masks, bookkeeping);
mean seconds per step over the steps after the first N (default 1, the warm-up step), and the
share of the step. Standard library only.
"""

import csv
import os
import sys

PHASES = [
    ("generation", "t_rollout_s"),
    ("simulator", "t_simulate_s"),
    ("old/ref log-probs", "t_logprob_s"),
    ("forward", "t_forward_s"),
    ("backward", "t_backward_s"),
    ("optimizer", "t_optimizer_s"),
]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    skip = 1
    if "--skip" in sys.argv:
        skip = int(sys.argv[sys.argv.index("--skip") + 1])
        args = [a for a in args if a != str(skip)]
    if not args:
        sys.exit(__doc__)
    path = os.path.join(args[0], "metrics.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))[skip:]
    if not rows:
        sys.exit(f"{path}: no steps after the first {skip}")
    mean = lambda col: sum(float(r[col] or 0) for r in rows) / len(rows)
    values = [(name, mean(col)) for name, col in PHASES]
    rest = mean("t_train_s") - sum(v for name, v in values[2:])
    values.append(("rest of the update", max(rest, 0.0)))
    total = sum(v for _, v in values)
    tokens = mean("policy_tokens")
    print(f"Steps {rows[0]['step']}-{rows[-1]['step']} of {path} ({len(rows)} steps), "
          f"mean {total:.2f} s per step, {tokens:.0f} policy tokens trained per step, "
          f"generation at {mean('tokens_per_s'):.0f} tokens/s.\n")
    print("| phase | s per step | share |")
    print("|---|---:|---:|")
    for name, v in values:
        print(f"| {name} | {v:.3f} | {100 * v / total:.1f}% |")


if __name__ == "__main__":
    main()
