#!/usr/bin/env bash
# Runs the cells of results/experiments/learnability/sweep.yaml in the order that answers
# the most first: the learning-rate pair at seed 0, the new default's other seeds, then training
# difficulty auto and hard, then the rest. Finished cells are skipped and an interrupted one
# continues from its last checkpoint, so run it again in each session until all are done; then it
# collects the sweep and prints the learnability table. EMPATHY_GYM=path/to/binary to use a copy.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${EMPATHY_GYM:-target/release/empathy-gym}
[ -n "${EMPATHY_GYM:-}" ] || cargo build --release --quiet
sweep=results/experiments/learnability/sweep.yaml
for i in ${CELLS:-3 0 4 5 6 9 7 10 1 2 8 11}; do
  "$bin" sweep cell "$sweep" --index "$i"
done
"$bin" sweep collect results/experiments/learnability
python3 benches/learnability.py results/experiments/learnability | tee results/experiments/learnability/learnability.md
