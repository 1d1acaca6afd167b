#!/usr/bin/env bash
# Installs what building and testing Quiver needs, only when it is missing:
# cmake, the SIMDe headers, protoc, Prometheus (the telemetry test scrapes
# every role with a real one), etcd (the fleet's membership tests start a
# real one), curl and jq (the README's examples), Chromium and chromedriver
# (the console's browser tests) from Debian's packages. Idempotent; safe
# to run on every build. (Node.js 22 and the MCP conformance suite are installed
# by scripts/install-node-tools.sh, which the test script calls.)
set -euo pipefail

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
[ -d /usr/include/simde ] || need+=(libsimde-dev)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
# protoc's well-known types (descriptor.proto, …), which etcd-client's protos import.
[ -f /usr/include/google/protobuf/descriptor.proto ] || need+=(libprotobuf-dev)
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
# The README's examples use them (tests/doc_blocks.rs runs every one).
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v jq >/dev/null 2>&1 || need+=(jq)
# The web console's tests drive a real headless Chromium through chromedriver.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}" >&2
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root (or sudo) to install ${need[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

command -v cargo >/dev/null 2>&1 || { echo "install-deps: cargo is missing; install Rust 1.95 with rustup first" >&2; exit 1; }
