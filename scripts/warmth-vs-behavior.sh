#!/usr/bin/env bash
# The warmth-vs-behavior experiment: two LoRA runs of SmolLM2-135M-Instruct with the same budget
# and seed, one rewarded for the user's emotion in context (behavior) and one for the warmth of
# every reply (trait), then the factual-reliability suite and the SAGE empathy eval on base,
# behavior and trait. Results: results/experiments/warmth-vs-behavior/summary.md.
#
#   scripts/warmth-vs-behavior.sh            # STEPS=50 ITEMS=300 OUT=results/warmth-vs-behavior
#
# On 2 CPU cores: about 35 min per 50-step run, 20-25 min per model for 300 factual items,
# about 9 min per model for SAGE on the 37 test profiles.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-50}
ITEMS=${ITEMS:-300}
OUT=${OUT:-results/warmth-vs-behavior}

scripts/fetch-models.sh
cargo build --release --quiet
eg=target/release/empathy-gym

for mode in behavior trait; do
  "$eg" train --config configs/quickstart.yaml --quiet \
    --set run="$mode" --set results_dir="$OUT" --set env.reward_mode="$mode" \
    --set grpo.steps="$STEPS" --set checkpoint.every=10
done

# Base, behavior and trait answer every item under the 18 conditions; both are compared with base.
"$eg" eval factual --limit "$ITEMS" --baseline base \
  --checkpoint behavior="$OUT/behavior" --checkpoint trait="$OUT/trait" --out "$OUT/factual"
# The same answers, re-scored (nothing generated), with behavior as the baseline.
"$eg" eval factual --limit "$ITEMS" --baseline behavior="$OUT/factual/answers-1.jsonl" \
  --checkpoint trait="$OUT/factual/answers-2.jsonl" --out "$OUT/factual-trait-vs-behavior"

"$eg" eval empathy --split test --seed 0 \
  --checkpoint behavior="$OUT/behavior" --checkpoint trait="$OUT/trait" --out "$OUT/empathy"

echo "done: $OUT/factual/factual.md, $OUT/empathy/empathy.md"
