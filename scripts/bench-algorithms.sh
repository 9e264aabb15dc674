#!/usr/bin/env bash
# Seconds per step and peak memory of each algorithm at the quickstart size on SmolLM2-135M
# (configs/algorithms/*.yaml, STEPS steps each, default 3), written to results/perf/algorithms.md.
# Peak memory is the process's maximum resident set (GNU time), which includes the model (one f32
# copy of the base: policy, critic and reference share it) and the sentence embedder.
# Usage: scripts/bench-algorithms.sh [STEPS] [NOTE]   (NOTE goes under the table, e.g. the load)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS="${1:-3}"
NOTE="${2:-}"
cargo build --release --quiet
BIN="${CARGO_TARGET_DIR:-target}/release/empathy-gym"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
ROWS=""
for a in grpo lite-ppo rloo reinforce-pp ppo; do
  echo "== $a: $STEPS steps" >&2
  /usr/bin/time -f "%M" -o "$OUT/$a.rss" "$BIN" train --config "configs/algorithms/$a.yaml" \
    --set results_dir="$OUT" --set grpo.steps="$STEPS" --set checkpoint.every=1000 --quiet >&2
  ROW=$(python3 - "$OUT/$a/metrics.csv" "$OUT/$a.rss" "$a" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rss_mib = int(open(sys.argv[2]).read().split()[-1]) / 1024
later = rows[1:] or rows  # the first step also pays warm-up costs
f = lambda k: sum(float(r[k]) for r in later) / len(later)
step = f("t_rollout_s") + f("t_simulate_s") + f("t_train_s")
print(f"| {sys.argv[3]} | {step:.1f} | {f('t_rollout_s'):.1f} | {f('t_simulate_s'):.1f} | "
      f"{f('t_train_s'):.1f} | {rss_mib:.0f} | {len(later)} |")
PY
)
  ROWS+="$ROW"$'\n'
done
mkdir -p results/perf
{
  echo "# Seconds per step and peak memory per algorithm"
  echo
  echo "\`scripts/bench-algorithms.sh $STEPS\`: configs/algorithms/*.yaml (the quickstart size: 2 profiles x 4"
  echo "dialogues, at most 3 replies of 40 tokens, LoRA rank 16) on SmolLM2-135M-Instruct, f32 on the CPU."
  echo "Times are means over the steps after the first (the first pays warm-up); step = rollout +"
  echo "simulate + train. Peak memory is the whole process's maximum resident set."
  echo
  echo "| algorithm | s/step | rollout s | simulate s | train s | peak RSS MiB | steps averaged |"
  echo "|---|---|---|---|---|---|---|"
  printf "%s" "$ROWS"
  echo
  echo "$(date -u +%Y-%m-%d), $(nproc) CPU cores. $NOTE"
} > results/perf/algorithms.md
cat results/perf/algorithms.md
