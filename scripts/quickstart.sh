#!/usr/bin/env bash
# Quickstart: fetch the models if missing, build in release, and train SmolLM2-135M-Instruct (LoRA)
# with GRPO against the simulated user for a few steps (configs/quickstart.yaml: 16 steps, 3 minutes
# on a 2-core AMD EPYC with the build of 2026-11-24, longer on slower CPUs; 15 minutes when it was
# sized, on an older build). Run it again after an interruption and it resumes from the last
# checkpoint.
# Extra arguments go to `empathy-gym train`, e.g. scripts/quickstart.sh --set grpo.steps=4
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh
cargo build --release --quiet
BIN="${CARGO_TARGET_DIR:-target}/release/empathy-gym"
RUN_DIR=results/quickstart
if [ -f "$RUN_DIR/metrics.csv" ]; then
  echo "== $RUN_DIR exists: resuming it from its last checkpoint"
  "$BIN" train --resume "$RUN_DIR" "$@"
else
  "$BIN" train --config configs/quickstart.yaml "$@"
fi
cat <<MSG

What this means:
- Each step drew 2 training profiles (a scenario played by a persona) and let the policy talk with
  each simulated user 4 times (a GRPO group). The reward is the user's final emotion / 100 (start 40);
  a dialogue ends at 100 (resolved), below 10 (the user left) or after 3 replies.
- Replies that moved the user more than their group's average were made more likely (GRPO on LoRA
  adapters). A handful of steps on a 135M model shows the machinery working; expect noisy curves,
  not a trained listener: a real run is 100+ steps (configs/quickstart.yaml, --set grpo.steps=N).
- Read the dialogues with:  $BIN replay show $RUN_DIR/episodes.jsonl
- Plots: $RUN_DIR/reward.svg, $RUN_DIR/emotion.svg   Per-step numbers: $RUN_DIR/metrics.csv
- Export the trained policy: $BIN export $RUN_DIR --out results/quickstart-model
MSG
