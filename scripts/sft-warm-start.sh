#!/usr/bin/env bash
# The supervised warm start of results/experiments/sft-warm-start: SFT on EPITOME's dev part, then
# the SAGE-style evaluation of the base model and the fine-tuned one on the same held-out users.
# Usage: scripts/sft-warm-start.sh PATH/EPITOME/dataset [PROFILES]
# Resumable: a finished SFT is not re-run (its checkpoints stay out of git).
set -euo pipefail
cd "$(dirname "$0")/.."
epitome="${1:?usage: scripts/sft-warm-start.sh PATH/EPITOME/dataset [PROFILES]}"
limit="${2:-12}"
dir=results/experiments/sft-warm-start
bin=target/release/empathy-gym
cargo build --release
if [ -f "$dir/run/sft.svg" ]; then
  echo "the SFT run is complete: $dir/run"
elif [ -f "$dir/run/sft.csv" ]; then
  "$bin" sft --resume "$dir/run" --quiet
else
  "$bin" sft --config "$dir/config.yaml" --set "sft.epitome=$epitome" --quiet
fi
"$bin" eval empathy --split test --limit "$limit" --seed 0 --checkpoint "sft=$dir/run" --out "$dir/eval"
