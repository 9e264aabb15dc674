#!/usr/bin/env bash
# The newcomer's check: a fresh clone with no models and no build outputs passes the README's
# test command. Clones this repository's committed HEAD into a temporary folder and runs
# scripts/test.sh there with an empty CARGO_TARGET_DIR, no EMPATHY_GYM_MODELS, an empty per-user
# model cache (XDG_CACHE_HOME) and pip's cache off, so the models are downloaded again. Shared with
# this machine: the Rust toolchain, cargo's crate cache and the system packages (chromium).
# About 20-25 minutes on 2 cores. The log goes to stdout and to $LOG (default
# results/fresh-clone-test.log).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
LOG=${LOG:-$REPO/results/fresh-clone-test.log}
WORK=$(mktemp -d /tmp/empathy-gym-fresh.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
{
  echo "== fresh clone of $(git rev-parse HEAD) ($(git log -1 --format=%s | cut -c1-80))"
  echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores; $(rustc --version)"
  git clone --quiet --no-local "$REPO" "$WORK/clone"
  cd "$WORK/clone"
  test ! -e models && test ! -e target && echo "== no models/ and no target/ in the clone"
  export CARGO_TARGET_DIR="$WORK/target" XDG_CACHE_HOME="$WORK/cache" PIP_NO_CACHE_DIR=1
  unset EMPATHY_GYM_MODELS EMPATHY_GYM_CATALOG
  start=$(date +%s)
  status=0
  scripts/test.sh 2>&1 || status=$?
  echo "== scripts/test.sh exited with $status after $(( $(date +%s) - start )) s"
  exit "$status"
} 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
