#!/usr/bin/env bash
# nvcc, then the PTX it wrote declared as ISA $PTX_ISA (scripts/gpu/build.sh): candle-kernels'
# build script calls $NVCC; a driver older than the nvcc JIT-compiles only older PTX ISAs.
set -euo pipefail
"$REAL_NVCC" "$@"
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
case "$out" in
*.ptx) sed -i "0,/^\.version [0-9.]*\$/s//.version $PTX_ISA/" "$out" ;;
esac
