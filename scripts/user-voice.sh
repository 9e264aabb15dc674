#!/usr/bin/env bash
# The user's words before and after the one-voice speaker (results/experiments/user-voice/): the
# held-out dialogues of results/experiments/user-realism/after/ (the listener and advice-first
# scripts, the base model, trained seeds 2 and 0) and both honest sets (as logged before the change,
# kept in before/), re-played by this build (`replay rescore`: the same replies, this catalog's
# user), then `replay user` on both sides.
#
#   scripts/user-voice.sh
#
# A side already played is kept (delete results/experiments/user-voice/after/ to play it again).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=$PWD/target/release/empathy-gym
out=results/experiments/user-voice
side=${1:-after}
table=$out/fit
[ "$side" = after ] || table=$out/$side/fit
before=results/experiments/user-realism/after
mkdir -p "$out/$side"
pairs=(
  "listener:$before/listener.jsonl" "advice-first:$before/advice-first.jsonl"
  "base:$before/eval/episodes-0.jsonl" "trained-seed2:$before/eval/episodes-1.jsonl"
  "trained-seed0:$before/eval/episodes-2.jsonl"
  "honest:$out/before/honest.jsonl" "honest-2:$out/before/honest-2.jsonl"
)
logs=()
for pair in "${pairs[@]}"; do
  name=${pair%%:*} file=${pair#*:}
  [ -s "$out/$side/$name.jsonl" ] || "$bin" replay rescore "$file" --out "$out/$side/$name.jsonl" >/dev/null
  logs+=("$file" "$out/$side/$name.jsonl")
done
"$bin" replay user "${logs[@]}" --csv "$table.csv" --stock 5 | tee "$table.md"
