#!/usr/bin/env bash
# Installs the MCP Python SDK the README's Python example uses (`pip install
# mcp`, pinned here) into a virtual environment, and prints the directory of
# its `python3`. The README's doc test (tests/doc_blocks.rs) runs that example
# with it. Idempotent: does nothing when the pinned version is there; several
# callers at once wait for one install.
#
#   QUIVER_PYTHON_CLIENT_DIR  where to install (default:
#                             ${XDG_CACHE_HOME:-$HOME/.cache}/quiver/python-client)
set -euo pipefail

package="mcp==2.3.0"
dir="${QUIVER_PYTHON_CLIENT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/quiver/python-client}"
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9

if [ -x "$dir/bin/python3" ] && [ -f "$dir/installed" ] && [ "$(cat "$dir/installed")" = "$package" ]; then
  echo "$dir/bin"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "install-python-client: python3 is missing (apt-get install python3 python3-venv)" >&2; exit 1; }
echo "installing $package into $dir" >&2
rm -rf "$dir"
python3 -m venv "$dir" >&2 || { echo "install-python-client: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
"$dir/bin/python3" -m pip install --quiet --disable-pip-version-check "$package" >&2
echo "$package" > "$dir/installed"
echo "$dir/bin"
