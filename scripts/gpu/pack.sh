#!/usr/bin/env bash
# Here: pack the CUDA build (target-cuda, see scripts/gpu/README.md) and the models into .gpu-K/
# folders of at most ~55 MiB each, one per device call: .gpu-1 holds the binaries, the others the
# models tarball in pieces. Prints the folders to carry, in order.
set -euo pipefail
cd "$(dirname "$0")/../.."
T=${CARGO_TARGET_DIR:-target-cuda}/release
newest() { ls -t $1 2>/dev/null | grep -v '\.d$' | head -n 1; }
rm -rf .gpu-* /tmp/gpu-pack && mkdir -p /tmp/gpu-pack/bin
cp "$T/empathy-gym" /tmp/gpu-pack/bin/
cp "$(newest "$T/deps/integration-*")" /tmp/gpu-pack/bin/integration
cp "$(newest "$T/deps/model-*")" /tmp/gpu-pack/bin/model-bench
# not stripped: symbols make the backtraces of a failure on the device readable
mkdir -p .gpu-1
XZ_OPT="-6 -T2" tar -cJf .gpu-1/bins.tar.xz -C /tmp/gpu-pack bin
tar -cf /tmp/gpu-pack/models.tar models
split -b 55M -d -a 1 /tmp/gpu-pack/models.tar /tmp/gpu-pack/models.tar.part-
k=2
for p in /tmp/gpu-pack/models.tar.part-*; do
  mkdir -p .gpu-$k && mv "$p" .gpu-$k/
  k=$((k + 1))
done
du -sh .gpu-*
