#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, unit and integration
# tests (real processes on loopback), and the MCP conformance suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The search model (semantic tests need it; they fail without it in CI).
scripts/install-model.sh >/dev/null
# The offline checkers of deploy/'s Kubernetes manifests and compose file.
scripts/install-deploy-checkers.sh >/dev/null

# CI builds once from scratch: incremental caches would only take disk.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0
fi
report_disk() { echo "   disk: target $(du -sh target 2>/dev/null | cut -f1), free $(df -h . | awk 'NR==2 {print $4}')"; }

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

report_disk
echo "== cargo test"
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
  # nextest does not run doctests
  cargo test --workspace --doc
else
  cargo test --workspace --no-fail-fast
fi

echo "== search without the semantic feature (the lexical fallback build)"
cargo test -p quiver-view --no-default-features --lib

report_disk
echo "== v8 engine type-check (links nothing: rusty_v8's library cannot be fetched here)"
empty_archive="$PWD/target/empty-rusty-v8.a"
mkdir -p target && rm -f "$empty_archive" && ar rc "$empty_archive"
RUSTY_V8_ARCHIVE="$empty_archive" cargo check --no-default-features --features v8 -p quiver-executor --target-dir target/v8-check

report_disk
echo "== the fleet on a container engine (deploy/compose.yaml through scripts/compose.sh)"
if podman info >/dev/null 2>&1 || docker info >/dev/null 2>&1; then
  cargo nextest run -p quiver --run-ignored only -E 'test(/compose_fleet/)'
else
  echo "   skipped: no container engine answers (podman info, docker info); scripts/compose.sh install adds podman"
fi

report_disk
echo "== MCP conformance"
scripts/conformance.sh
