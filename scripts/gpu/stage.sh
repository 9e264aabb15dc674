#!/usr/bin/env bash
# Device side: keep the chunk carried in .gpu/ (see scripts/gpu/README.md) in /root/stage.
set -euo pipefail
mkdir -p /root/stage
for d in .gpu-*; do cp -v "$d"/* /root/stage/; done
ls -la /root/stage
