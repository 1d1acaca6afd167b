#!/usr/bin/env bash
# Installs the offline checkers of deploy/'s manifests, from PyPI, into a cache
# directory, and prints that directory:
#   - kubernetes-validate (checks Kubernetes objects against the API schemas
#     of a Kubernetes release, strictly: unknown fields are errors), in a venv;
#   - the Compose specification's JSON schema (compose_spec.json, from the
#     docker-compose 1.29.2 wheel, Apache-2.0), checked with the venv's
#     jsonschema.
# Idempotent: does nothing when both are there.
#
#   QUIVER_DEPLOY_CHECK_DIR  where to install (default:
#                            ${XDG_CACHE_HOME:-$HOME/.cache}/quiver/deploy-check)
set -euo pipefail

validator="kubernetes-validate==1.37.0"
compose="docker-compose==1.29.2"
dir="${QUIVER_DEPLOY_CHECK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/quiver/deploy-check}"

if [ -x "$dir/venv/bin/kubernetes-validate" ] && [ -f "$dir/compose_spec.json" ]; then
  echo "$dir"
  exit 0
fi

echo "installing $validator and the Compose schema into $dir" >&2
mkdir -p "$dir"
python3 -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet "$validator" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps -d "$work" "$compose" >&2
python3 - "$work" "$dir" <<'PY'
import glob, os, sys, zipfile
work, target = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(work, "*.whl"))[0]
with zipfile.ZipFile(wheel) as w:
    data = w.read("compose/config/compose_spec.json")
tmp = os.path.join(target, "compose_spec.json.part")
with open(tmp, "wb") as f:
    f.write(data)
os.replace(tmp, os.path.join(target, "compose_spec.json"))
PY
echo "$dir"
