#!/usr/bin/env bash
# A whole Quiver fleet on this machine, on loopback:
#   3 control-plane nodes (Raft), etcd (the fleet's membership), 2 executors,
#   2 edges, and the demo upstreams.
#
#   scripts/cluster.sh up       build if needed, start everything, print the endpoints
#   scripts/cluster.sh status   which processes run, and `quiver ctl cluster status --etcd`
#   scripts/cluster.sh down     stop everything (executors drain first)
#
# State, logs and pids live in $QUIVER_CLUSTER_DIR (default .quiver/cluster).
# $QUIVER_BIN picks the binary (default target/release/quiver, built if missing).
# Ports: etcd 2379 (clients) and 2380 (peers), control plane 7401-7403, executors 7501-7502, edges 8081-8082 (MCP),
# admin listeners (/healthz, /readyz, /metrics) 9401-9403, 9501-9502 and
# 9601-9602; $QUIVER_CLUSTER_PORT_OFFSET is added to every one.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${QUIVER_CLUSTER_DIR:-.quiver/cluster}
BIN=${QUIVER_BIN:-target/release/quiver}
OFFSET=${QUIVER_CLUSTER_PORT_OFFSET:-0}
port() { echo $(($1 + OFFSET)); }
CP="127.0.0.1:$(port 7401),127.0.0.1:$(port 7402),127.0.0.1:$(port 7403)"
ETCD="127.0.0.1:$(port 2379)"
DEMO_SERVERS="weather github notes maps calendar"

die() { echo "cluster.sh: $*" >&2; exit 1; }

running() { # name: its process exists and is not a zombie
  local pidfile="$DIR/$1.pid" state
  [[ -f $pidfile ]] || return 1
  state=$(awk '/^State:/ {print $2}' "/proc/$(cat "$pidfile")/status" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}

start() { # name, then the quiver arguments
  local name=$1; shift
  run "$name" "$BIN" "$@"
}

run() { # name, then the program and its arguments
  local name=$1; shift
  if running "$name"; then
    echo "  $name already runs (pid $(cat "$DIR/$name.pid"))"
    return
  fi
  "$@" >"$DIR/$name.out" 2>"$DIR/$name.log" &
  echo $! >"$DIR/$name.pid"
}

wait_line() { # name, text: until the process printed it (or died)
  local name=$1 text=$2
  for _ in $(seq 1 600); do
    grep -q "$text" "$DIR/$name.out" 2>/dev/null && return 0
    running "$name" || die "$name stopped; see $DIR/$name.log"
    sleep 0.1
  done
  die "$name did not start within 60 s; see $DIR/$name.log"
}

ctl() { "$BIN" ctl --endpoints "$CP" "$@"; }

up() {
  mkdir -p "$DIR"
  if [[ ! -x $BIN ]]; then
    scripts/install-deps.sh
    cargo build --release --bin quiver
  fi
  command -v etcd >/dev/null 2>&1 || scripts/install-deps.sh
  local fresh=false
  [[ -d $DIR/cp1 ]] || fresh=true

  echo "etcd"
  local peer="http://127.0.0.1:$(port 2380)"
  run etcd etcd --name quiver --data-dir "$DIR/etcd" \
    --listen-client-urls "http://$ETCD" --advertise-client-urls "http://$ETCD" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "quiver=$peer"
  for _ in $(seq 1 300); do
    curl -fsS "http://$ETCD/health" 2>/dev/null | grep -q '"health":"true"' && break
    running etcd || die "etcd stopped; see $DIR/etcd.log"
    sleep 0.1
  done

  echo "control plane"
  for id in 1 2 3; do
    local extra=()
    [[ $id == 1 ]] && extra=(--bootstrap)
    start "cp$id" control-plane --node-id "$id" --listen "127.0.0.1:$(port 740$id)" \
      --data "$DIR/cp$id" --admin-listen "127.0.0.1:$(port 940$id)" "${extra[@]}"
  done
  for id in 1 2 3; do wait_line "cp$id" "serving on"; done
  if $fresh; then
    for id in 2 3; do
      ctl cluster add-learner --node-id "$id" --addr "127.0.0.1:$(port 740$id)" >/dev/null
      ctl cluster promote "$id" >/dev/null
    done
    echo "demo upstreams"
    for server in $DEMO_SERVERS; do
      ctl upstream add "$server" --replace --command "$(realpath "$BIN")" \
        --arg mock-upstream --arg --demo --arg --server --arg "$server" --arg --stdio >/dev/null
    done
  fi

  echo "executors"
  for n in 1 2; do
    start "executor$n" executor --listen "127.0.0.1:$(port 750$n)" --control-plane "$CP" \
      --etcd "$ETCD" --node-name "executor-$n" --admin-listen "127.0.0.1:$(port 950$n)"
  done
  for n in 1 2; do wait_line "executor$n" "quiver executor: serving"; done

  echo "edges"
  for n in 1 2; do
    start "edge$n" edge --listen "127.0.0.1:$(port 808$n)" --control-plane "$CP" \
      --etcd "$ETCD" --node-name "edge-$n" --admin-listen "127.0.0.1:$(port 960$n)"
  done
  for n in 1 2; do wait_line "edge$n" "quiver edge: serving"; done
  # Ready once each edge routes to both executors.
  for n in 1 2; do
    for _ in $(seq 1 100); do
      curl -fsS "http://127.0.0.1:$(port 808$n)/status" 2>/dev/null | grep -o '"state":"ok"' | wc -l | grep -q 2 && break
      sleep 0.1
    done
  done

  cat <<EOF

Quiver cluster up ($DIR):
  MCP, either edge:   http://127.0.0.1:$(port 8081)/mcp   http://127.0.0.1:$(port 8082)/mcp
                      (also /passthrough/mcp /search/mcp /code/mcp on each)
  control plane:      $CP    (quiver ctl --endpoints $CP …)
  etcd (membership):  http://$ETCD   (members under /quiver/members/)
  executors (gRPC):   127.0.0.1:$(port 7501) 127.0.0.1:$(port 7502)
  admin (/readyz, /metrics): control plane 127.0.0.1:$(port 9401)-$(port 9403), executors 127.0.0.1:$(port 9501)-$(port 9502), edges 127.0.0.1:$(port 9601)-$(port 9602)
Check it:  $BIN ctl --endpoints $CP cluster verify
Stop it:   scripts/cluster.sh down
EOF
}

status() {
  for name in etcd cp1 cp2 cp3 executor1 executor2 edge1 edge2; do
    if running "$name"; then
      echo "$name: running (pid $(cat "$DIR/$name.pid"))"
    else
      echo "$name: stopped"
    fi
  done
  ctl cluster status --etcd "$ETCD" || true
}

down() {
  # Edges first (clients move on), then executors (they drain and
  # deregister), then the control plane and etcd.
  for group in "edge1 edge2" "executor1 executor2" "cp1 cp2 cp3" "etcd"; do
    for name in $group; do
      running "$name" && kill -TERM "$(cat "$DIR/$name.pid")"
    done
    for name in $group; do
      for _ in $(seq 1 100); do running "$name" || break; sleep 0.1; done
      running "$name" && kill -KILL "$(cat "$DIR/$name.pid")"
      rm -f "$DIR/$name.pid"
    done
  done
  echo "Quiver cluster stopped (state kept in $DIR; remove it for a fresh cluster)"
}

case ${1:-} in
  up) up ;;
  status) status ;;
  down) down ;;
  *) die "usage: scripts/cluster.sh up|status|down" ;;
esac
