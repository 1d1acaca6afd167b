#!/usr/bin/env bash
# The fleet of deploy/compose.yaml on a real container engine: etcd, three
# control-plane nodes, two executors, two edges (MCP on 127.0.0.1:8081 and
# :8082) and the demo upstreams. Works with no container registry: base
# images are made from Debian's packages with debootstrap, and the image
# carries a `quiver` built on this host.
#
#   scripts/compose.sh up       install what is missing, build the images, start the fleet,
#                               wait until every control-plane node, executor and edge is ready
#   scripts/compose.sh status   the fleet's containers and what each one's /readyz says
#   scripts/compose.sh down     remove the fleet: containers, network and volumes
#   scripts/compose.sh build    only make the images
#   scripts/compose.sh install  only install and configure the container engine
#
# Environment:
#   QUIVER_ENGINE       docker or podman (default: docker when `docker info` answers,
#                       else podman, installed from Debian's packages when missing)
#   QUIVER_BIN          the binary to put in the image (default target/release/quiver,
#                       built when missing); stripped on the way in
#   QUIVER_IMAGE        the image's tag (default quiver:0.1.0)
#   QUIVER_BASE_IMAGE   the runtime base (default: localhost/debian:bookworm-slim,
#                       made with debootstrap when missing)
#   QUIVER_ETCD_IMAGE   etcd (default: localhost/quiver-etcd:bookworm, Debian's
#                       etcd-server on the base, made when missing)
#   QUIVER_DEBIAN_MIRROR  debootstrap's mirror (default: the first of /etc/apt's)
set -euo pipefail
cd "$(dirname "$0")/.."

PROJECT=quiver
FILE=deploy/compose.yaml
export QUIVER_IMAGE=${QUIVER_IMAGE:-quiver:0.1.0}
BASE_IMAGE=${QUIVER_BASE_IMAGE:-localhost/debian:bookworm-slim}
export QUIVER_ETCD_IMAGE=${QUIVER_ETCD_IMAGE:-localhost/quiver-etcd:bookworm}
BIN=${QUIVER_BIN:-target/release/quiver}
# Every service that serves /readyz (the image's admin listener, 0.0.0.0:9090).
READY_SERVICES="cp1 cp2 cp3 executor1 executor2 edge1 edge2"

die() { echo "compose.sh: $*" >&2; exit 1; }
say() { echo "compose.sh: $*" >&2; }
as_root() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi; }

pick_engine() {
  if [[ -n ${QUIVER_ENGINE:-} ]]; then
    ENGINE=$QUIVER_ENGINE
  elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    ENGINE=docker
  else
    ENGINE=podman
  fi
  case $ENGINE in
    docker | podman) ;;
    *) die "QUIVER_ENGINE must be docker or podman, not $ENGINE" ;;
  esac
}

compose() {
  if [[ $ENGINE == podman ]]; then
    podman-compose -p "$PROJECT" -f "$FILE" "$@"
  elif docker compose version >/dev/null 2>&1; then
    docker compose -p "$PROJECT" -f "$FILE" "$@"
  else
    docker-compose -p "$PROJECT" -f "$FILE" "$@"
  fi
}

# Podman and podman-compose from Debian's packages when missing; then the
# engine's defaults changed only where they fail on this machine: crun
# cannot run here ("cgroups in hybrid mode not supported") and containers
# may not raise their open-files or process limits above the host's.
install_engine() {
  if [[ $ENGINE == docker ]]; then
    command -v docker >/dev/null 2>&1 || die "QUIVER_ENGINE=docker but there is no docker; install Docker, or leave QUIVER_ENGINE unset for podman"
    return
  fi
  local need=()
  command -v podman >/dev/null 2>&1 || need+=(podman)
  command -v podman-compose >/dev/null 2>&1 || need+=(podman-compose)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
  if ((${#need[@]})); then
    say "installing ${need[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

# Writes /etc/containers/containers.conf's runtime and limits when the
# defaults cannot start a container (asked with the base image).
configure_podman() {
  [[ $ENGINE == podman ]] || return 0
  if podman run --rm "$BASE_IMAGE" true >/dev/null 2>&1; then
    return
  fi
  local conf=/etc/containers/containers.conf
  if [[ -s $conf ]]; then
    die "containers cannot start with $conf as it is; podman run --rm $BASE_IMAGE true says: $(podman run --rm "$BASE_IMAGE" true 2>&1 | tail -1)"
  fi
  # Limits a container may set here: 20000 open files and 32768 processes,
  # or the host's hard limits when those are lower.
  local nofile=20000 nproc=32768 hard
  hard=$(ulimit -Hn); [[ $hard == unlimited || $hard -ge $nofile ]] || nofile=$hard
  hard=$(ulimit -Hu); [[ $hard == unlimited || $hard -ge $nproc ]] || nproc=$hard
  say "writing $conf: runtime runc, ulimits nofile=$nofile nproc=$nproc"
  as_root mkdir -p /etc/containers
  printf '%s\n' '# Written by scripts/compose.sh: the defaults cannot start containers here.' \
    '[engine]' 'runtime = "runc"' '' '[containers]' \
    "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]" |
    as_root tee "$conf" >/dev/null
  podman run --rm "$BASE_IMAGE" true || die "containers still cannot start; see the error above"
}

image_exists() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

# A minimal Debian bookworm root filesystem imported as an image: what
# debian:bookworm-slim is, made from Debian's packages instead of pulled.
make_base_image() {
  image_exists "$BASE_IMAGE" && return
  [[ $BASE_IMAGE == localhost/debian:bookworm-slim ]] ||
    die "base image $BASE_IMAGE is not there; pull it, or unset QUIVER_BASE_IMAGE to make one"
  local mirror=${QUIVER_DEBIAN_MIRROR:-}
  if [[ -z $mirror ]]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk '/^(URIs:|deb) / && !/security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' || true)
  fi
  [[ -n $mirror ]] || die "no Debian mirror in /etc/apt; set QUIVER_DEBIAN_MIRROR"
  local root
  root=$(mktemp -d)
  say "making $BASE_IMAGE with debootstrap from $mirror"
  as_root debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
  # What debian:bookworm-slim leaves out too.
  as_root rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
    "$root"/usr/share/locale/*
  as_root tar -C "$root" -c . | "$ENGINE" import --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
  as_root rm -rf "$root"
}

make_etcd_image() {
  image_exists "$QUIVER_ETCD_IMAGE" && return
  [[ $QUIVER_ETCD_IMAGE == localhost/quiver-etcd:bookworm ]] ||
    die "etcd image $QUIVER_ETCD_IMAGE is not there; pull it, or unset QUIVER_ETCD_IMAGE to make one"
  say "making $QUIVER_ETCD_IMAGE (Debian's etcd-server)"
  printf '%s\n' "FROM $BASE_IMAGE" \
    'RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin' \
    'ENTRYPOINT []' |
    "$ENGINE" build -q -t "$QUIVER_ETCD_IMAGE" -f - . >/dev/null
}

# The image from the Dockerfile's `prebuilt` stage, with a context holding
# only the stripped binary and the search model.
make_quiver_image() {
  if [[ ! -x $BIN ]]; then
    [[ $BIN == target/release/quiver ]] || die "QUIVER_BIN=$BIN is not an executable"
    say "building $BIN"
    cargo build --release --bin quiver
  fi
  local model context digest
  model=$(scripts/install-model.sh)
  # The same binary and model as the image's: nothing to do.
  digest=$(cat "$BIN" "$model"/* | sha256sum | cut -c1-16)
  if [[ $("$ENGINE" image inspect --format '{{index .Config.Labels "quiver.contents"}}' "$QUIVER_IMAGE" 2>/dev/null) == "$digest" ]]; then
    return
  fi
  context=$(mktemp -d)
  cp "$BIN" "$context/quiver"
  strip "$context/quiver" 2>/dev/null || say "strip is missing; the image carries debug line tables"
  cp -r "$model" "$context/search-model"
  say "building $QUIVER_IMAGE from $BIN on $BASE_IMAGE"
  "$ENGINE" build -q --target prebuilt $([[ $ENGINE == podman ]] && echo --format docker) --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "quiver.contents=$digest" \
    -f deploy/Dockerfile -t "$QUIVER_IMAGE" "$context" >/dev/null
  rm -rf "$context"
  say "$QUIVER_IMAGE: $(image_size "$QUIVER_IMAGE")"
}

image_size() {
  "$ENGINE" image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB\n", $1 / 1000000}'
}

build() {
  install_engine
  make_base_image
  configure_podman
  make_etcd_image
  make_quiver_image
}

# The container of a service of the fleet (its id), if it exists.
container() {
  "$ENGINE" ps -a -q --filter "label=com.docker.compose.project=$PROJECT" \
    --filter "label=com.docker.compose.service=$1" | head -1
}

readyz() { # service: what its /readyz says; fails when not ready
  local id
  id=$(container "$1")
  [[ -n $id ]] || { echo "no container"; return 1; }
  "$ENGINE" exec "$id" quiver probe 2>&1 | tail -1
  return "${PIPESTATUS[0]}"
}

wait_ready() {
  local pending=$READY_SERVICES
  for _ in $(seq 1 180); do
    local still=""
    for service in $pending; do
      readyz "$service" >/dev/null 2>&1 || still+=" $service"
    done
    pending=$still
    [[ -z $pending ]] && return 0
    sleep 1
  done
  for service in $pending; do say "$service not ready: $(readyz "$service")"; done
  die "not ready within 180 s:$pending; see \`$ENGINE logs\` of those containers"
}

up() {
  build
  local started=$SECONDS
  # Podman without systemd cannot schedule healthchecks and says so for
  # every container (podman-compose adds two more harmless lines);
  # `compose.sh status` and the wait below ask /readyz.
  local said ok=1
  said=$(mktemp)
  compose up -d >/dev/null 2>"$said" || ok=0
  grep -v -e 'systemd connection' -e 'no such volume' -e 'connect to syslog' "$said" >&2 || true
  rm -f "$said"
  ((ok)) || die "bringing the fleet up failed (above); \`scripts/compose.sh down\` removes what started"
  wait_ready
  say "fleet ready in $((SECONDS - started)) s; MCP on http://127.0.0.1:8081/mcp and http://127.0.0.1:8082/mcp"
}

status() {
  "$ENGINE" ps -a --filter "label=com.docker.compose.project=$PROJECT" \
    --format '{{.Names}}\t{{.Status}}'
  for service in $READY_SERVICES; do
    echo "$service: $(readyz "$service" || true)"
  done
}

# The fleet's containers, networks and volumes that exist, one per line.
leftovers() {
  local kind
  for kind in "ps -a" "network ls" "volume ls"; do
    # shellcheck disable=SC2086 # the kind is two words on purpose
    "$ENGINE" $kind -q --filter "label=com.docker.compose.project=$PROJECT" | sed "s/^/${kind%% *} /"
  done
}

down() {
  local started=$SECONDS
  compose down -v >/dev/null 2>&1 || true
  # What a compose tool may leave behind: containers of the project, its
  # network and its named volumes. (Podman without systemd complains here
  # that it cannot remove healthcheck timers it never made.)
  local kind id left
  while read -r kind id; do
    case $kind in
      ps) "$ENGINE" rm -f "$id" ;;
      *) "$ENGINE" "$kind" rm -f "$id" ;;
    esac >/dev/null 2>&1 || true
  done < <(leftovers)
  left=$(leftovers)
  [[ -z $left ]] || die "left behind: $left"
  say "fleet removed in $((SECONDS - started)) s"
}

pick_engine
case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  build) build ;;
  install) install_engine ;;
  *) die "usage: scripts/compose.sh up|down|status|build|install" ;;
esac
