#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, unit and integration
# tests (real processes on loopback), and the MCP conformance suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test"
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
  # nextest does not run doctests
  cargo test --workspace --doc
else
  cargo test --workspace --no-fail-fast
fi

echo "== MCP conformance"
scripts/conformance.sh
