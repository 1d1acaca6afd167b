#!/usr/bin/env bash
# Builds Quiver (release) and runs `quiver dev`. Arguments are passed through,
# e.g. `scripts/dev.sh --catalog examples/catalogs/livemcpbench/tools.json`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Every role ranks search hybrid with it, from its default directory, with no
# flag; `quiver dev`'s start-up line says `search hybrid (…)`.
scripts/install-model.sh >/dev/null
cargo build --release --bin quiver
exec target/release/quiver dev "$@"
