#!/usr/bin/env bash
# Re-scores every episode log the headline tables cite under today's rules, after a change to
# data/*.yaml (the rules fingerprint): the honest sets from their frozen fixtures, and each
# `rescored:` pair of results/tables.yaml. Then `empathy-gym tables` rewrites the tables; commit the
# re-scored logs, set the honest rows' `commit:` to that commit, and run `tables` again.
#
#   scripts/rescore-cited.sh [BINARY]    # default target/release/empathy-gym; resumable: a log
#                                        # newer than every file of data/ and than BINARY is kept
#                                        # (a rebuilt binary may hold a changed simulator)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/empathy-gym}
pairs=$(python3 - <<'EOF'
import yaml
pairs = {
    "tests/data/honest-listener/episodes.jsonl": "results/redteam/honest/rescored.jsonl",
    "tests/data/honest-listener-2/episodes.jsonl": "results/redteam/honest/rescored-2.jsonl",
}
def walk(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "rescored" and isinstance(v, dict):
                pairs.update(v)
            else:
                walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
walk(yaml.safe_load(open("results/tables.yaml")))
for src, dst in pairs.items():
    print(src, dst)
EOF
)
while read -r src dst; do
    if [[ -f "$dst" && -z "$(find data "$bin" -newer "$dst" -type f | head -1)" ]]; then
        echo "kept      $dst (newer than data/ and $bin)"
        continue
    fi
    echo "rescoring $src -> $dst"
    "$bin" replay rescore "$src" --out "$dst.part" >/dev/null
    mv "$dst.part" "$dst"
done <<<"$pairs"
