#!/usr/bin/env bash
# The simulated user's words before and after the responsive speaker
# (results/experiments/user-realism/): held-out dialogues of the scripted baselines and of a
# trained policy, played by each side's build against each side's catalog, then measured by
# `replay user` of this checkout (one rule for both sides).
#
#   scripts/user-realism.sh BEFORE_DIR
#
# BEFORE_DIR: a checkout of the commit before the speaker (git worktree add ../before 3bc592f),
# with its release build (cargo build --release there). The trained policies are seeds 2 and 0 of
# results/runs/hardened-100 (100 GRPO steps each; their checkpoints are not in git, so train them
# first with scripts/hardened-100.sh). Each side's logs go to OUT/{before,after}/; a side already
# played is kept (delete it to play again).
set -euo pipefail
cd "$(dirname "$0")/.."
before_dir=$(cd "${1:?usage: scripts/user-realism.sh BEFORE_DIR}" && pwd)
runs=$PWD/results/runs/hardened-100
out=${OUT:-results/experiments/user-realism}
cargo build --release --quiet
after_bin=$PWD/target/release/empathy-gym
mkdir -p "$out"
play() { # side, binary, catalog
  local dir=$PWD/$out/$1
  [ -f "$dir/eval/empathy.csv" ] && { echo "$1: done"; return; }
  mkdir -p "$dir"
  for p in listener advice-first dismissive stuffed; do
    (cd "$3" && "$2" rollout --policy "script:configs/baselines/$p.yaml" --split test --seed 0 \
      --out "$dir/$p.jsonl")
  done
  (cd "$3" && "$2" eval empathy --checkpoint "trained=$runs/seed-2" \
    --checkpoint "trained-seed0=$runs/seed-0" --seed 0 --out "$dir/eval")
}
play before "$before_dir/target/release/empathy-gym" "$before_dir"
play after "$after_bin" "$PWD"
logs=()
for side in before after; do
  for p in listener advice-first dismissive stuffed; do logs+=("$out/$side/$p.jsonl"); done
  logs+=("$out/$side/eval/episodes-0.jsonl" "$out/$side/eval/episodes-1.jsonl" "$out/$side/eval/episodes-2.jsonl")
done
"$after_bin" replay user "${logs[@]}" --csv "$out/realism.csv" | tee "$out/realism.md"
# The dialogues read by hand (after): 8 of the listener, 6 of advice-first, 6 of the base model,
# and 4 of each trained policy.
q() { "$after_bin" replay user "$out/after/$1" --quote "$2" > "$out/quotes-$3.md"; }
q listener.jsonl 8 listener
q advice-first.jsonl 6 advice-first
q eval/episodes-0.jsonl 6 base
q eval/episodes-1.jsonl 4 trained
q eval/episodes-2.jsonl 4 trained-seed0
