#!/usr/bin/env bash
# The warmth-vs-behavior experiment: two LoRA runs of SmolLM2-135M-Instruct with the same budget
# and seed, one rewarded for the user's emotion in context (behavior) and one for the warmth of
# every reply (trait), then the factual-reliability suite and the SAGE empathy eval on base,
# behavior and trait. Results: results/experiments/warmth-vs-behavior/summary.md.
#
#   scripts/warmth-vs-behavior.sh     # resumable: run it again after an interruption
#   env: EMPATHY_GYM=path/to/binary (a copy, so that builds during the run do not replace it)
#
# The training and the factual suite are the sweep results/experiments/warmth-vs-behavior/sweep.yaml
# (finished cells are skipped, interrupted ones continue from their last checkpoint). Everything
# after it only re-scores the recorded answers (seconds), except the SAGE eval, which needs the
# cells' checkpoints (kept on the machine that trained them, not in git) and is skipped without.
# On 2 CPU cores: about 40 min per 50-step run, about 30 min per model for the 300 factual items,
# about 8 min per model for SAGE on the 37 test profiles.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=results/experiments/warmth-vs-behavior
ITEMS=300

scripts/fetch-models.sh
eg=${EMPATHY_GYM:-target/release/empathy-gym}
[ -n "${EMPATHY_GYM:-}" ] || cargo build --release --quiet

"$eg" sweep run "$OUT/sweep.yaml"
"$eg" sweep collect "$OUT" > /dev/null

cell() { echo "$OUT/cells/reward_mode=$1,seed=0"; }
base=$OUT/base/SmolLM2-135M-Instruct.Q4_1/eval-factual/answers-0.jsonl
behavior=$(cell behavior)/eval-factual/answers-1.jsonl
trait=$(cell trait)/eval-factual/answers-1.jsonl
# Both readings of the same answers, nothing generated: non-answers apart (the default
# reading) and counted as errors (the scorer's original reading).
for reading in apart errors; do
  "$eg" eval factual --limit "$ITEMS" --non-answers "$reading" --baseline base="$base" \
    --checkpoint behavior="$behavior" --checkpoint trait="$trait" \
    --out "$OUT/factual/$reading" > /dev/null
  "$eg" eval factual --limit "$ITEMS" --non-answers "$reading" --baseline behavior="$behavior" \
    --checkpoint trait="$trait" --out "$OUT/factual-trait-vs-behavior/$reading" > /dev/null
done

# SAGE needs the trained adapters, which only the machine that trained the cells has (checkpoints
# are not committed); elsewhere this step says so and the tables use what is there.
if [ -f "$OUT/empathy/empathy.md" ]; then
  :
elif [ -d "$(cell behavior)/checkpoints" ] && [ -d "$(cell trait)/checkpoints" ]; then
  "$eg" eval empathy --split test --seed 0 --checkpoint behavior="$(cell behavior)" \
    --checkpoint trait="$(cell trait)" --out "$OUT/empathy"
else
  echo "SAGE skipped: the cells' checkpoints are not on this machine (retrain a cell by deleting it)"
fi

python3 scripts/warmth-vs-behavior-tables.py "$OUT" > "$OUT/tables.md"
echo "done: $OUT/factual/{apart,errors}/factual.md, $OUT/empathy/empathy.md, $OUT/tables.md"
