#!/usr/bin/env bash
# The test command (README, CI): fetch the models the tests use when they are missing (from the
# PyPI wheels, scripts/fetch-models.sh), then build once and run the workspace's suite in release.
# Without arguments it then runs the tests of the engine's other paths in the same build, chosen at
# run time by EMPATHY_ENGINE_KERNELS (engine/src/kernels/choice.rs): the unit tests with the kernels
# as on a CPU with AVX2 only, and the unit tests and a smoke set of the integration tests (the
# models, LoRA, GRPO; not the bf16 products, which are kernels themselves) without the CPU kernels,
# on the portable composed ops. The tests of 20 s or more and those that need headless Chromium
# (marked `#[ignore = "slow ..."]` or `#[ignore = "needs Chromium ..."]`) and the builds without the
# engine's features run in scripts/test-full.sh. Works on a fresh clone with nothing else done.
# Extra arguments go to `cargo test`, e.g. scripts/test.sh --test integration cli
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: scripts/test.sh needs cargo (Rust); install it with rustup or Debian's cargo package." >&2
  exit 1
fi
scripts/fetch-models.sh
cargo test --release --workspace "$@"
if [ $# -eq 0 ]; then
  echo "== the unit tests with the kernels as on a CPU with AVX2 only (EMPATHY_ENGINE_KERNELS=avx2)"
  EMPATHY_ENGINE_KERNELS=avx2 cargo test --release --workspace --lib
  echo "== the unit tests and a smoke set without the CPU kernels (EMPATHY_ENGINE_KERNELS=portable)"
  EMPATHY_ENGINE_KERNELS=portable cargo test --release --workspace --lib
  EMPATHY_ENGINE_KERNELS=portable cargo test --release --workspace --test integration -- \
    model:: lora:: grpo:: model_families:: --skip model::bf16
fi
