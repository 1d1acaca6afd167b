#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server
# scenarios) against Quiver's edge: the requirement sets of MCP 2025-11-25 (sessions)
# and 2026-07-28 (stateless) against passthrough, fronting the fixture upstream
# tests/conformance-upstream over stdio with an empty namespace, and against search and
# code mode the scenarios about the server itself, its prompts, resources and
# completion, calls of a tool by its own name, and tasks. Results are named
# `<mode>/<revision>/<scenario>`; those listed in tests/conformance/baseline.txt may
# fail; any other failure makes this script exit 1.
#
# Then the client scenarios of the same requirement sets run against Quiver's own
# upstream client (`quiver-test-kit conformance-client`, see test-kit/src/conformance_client.rs),
# named `client/<revision>/<scenario>`, with their own baseline
# (tests/conformance/client-baseline.txt); scenarios the suite does not score for a
# revision (extensions, scenarios added after its release) are reported, not counted.
#
# Environment (all optional):
#   QUIVER_CONFORMANCE_URL          test this MCP endpoint; start and build nothing
#   QUIVER_CONFORMANCE_GATEWAY_CMD  command (bash) that serves MCP at
#                                   http://127.0.0.1:$QUIVER_CONFORMANCE_PORT/mcp, instead
#                                   of `quiver dev`; it sees QUIVER_CONFORMANCE_PORT,
#                                   QUIVER_CONFORMANCE_CONFIG and QUIVER_CONFORMANCE_FIXTURE.
#                                   To test the fixture directly:
#                                   '"$QUIVER_CONFORMANCE_FIXTURE" --listen 127.0.0.1:$QUIVER_CONFORMANCE_PORT'
#   QUIVER_CONFORMANCE_PORT         port for the gateway (default: a free one)
#   QUIVER_CONFORMANCE_REQUIREMENTS the revisions whose requirement sets run
#                                   (default "2025-11-25 2026-07-28")
#   QUIVER_CONFORMANCE_EXTRA=0      skip the scenarios outside the requirement sets
#                                   and the search and code mode runs
#   QUIVER_CONFORMANCE_SCENARIO     run only this scenario (at /mcp), as revision
#                                   QUIVER_CONFORMANCE_SPEC (default: the suite's)
#   QUIVER_CONFORMANCE_BASELINE     baseline file (default tests/conformance/baseline.txt)
#   QUIVER_CONFORMANCE_RESULTS      where per-run results go (default target/conformance)
#   QUIVER_CONFORMANCE_STRICT=1     count WARNING checks as failures (the suite's own
#                                   --expected-failures rule)
#   QUIVER_CONFORMANCE_SKIP_BUILD=1 use the binaries already in the target directory
#   QUIVER_CONFORMANCE_CLIENT=0     skip the client scenarios
#   QUIVER_CONFORMANCE_CLIENT_BASELINE  client baseline file
#                                   (default tests/conformance/client-baseline.txt)
#   QUIVER_CONFORMANCE_STARTUP_SECS how long to wait for the server to answer (default 60)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-${repo_root}/target}"
fixture_bin="${target_dir}/debug/quiver-conformance-upstream"
quiver_bin="${target_dir}/debug/quiver"
test_kit_bin="${target_dir}/debug/quiver-test-kit"
baseline="${QUIVER_CONFORMANCE_BASELINE:-${repo_root}/tests/conformance/baseline.txt}"
client_baseline="${QUIVER_CONFORMANCE_CLIENT_BASELINE:-${repo_root}/tests/conformance/client-baseline.txt}"
startup_secs="${QUIVER_CONFORMANCE_STARTUP_SECS:-60}"
results_root="${QUIVER_CONFORMANCE_RESULTS:-${target_dir}/conformance}"

log() { echo "conformance: $*" >&2; }
die() { log "error: $*"; exit 1; }

work_dir="$(mktemp -d -t quiver-conformance.XXXXXX)"
server_pid=""

stop_server() {
    [[ -n "${server_pid}" ]] || return 0
    if kill -0 "${server_pid}" 2>/dev/null; then
        # The server runs in its own process group (setsid), so this also ends the
        # stdio upstream it spawned.
        kill -TERM -- "-${server_pid}" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "${server_pid}" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-${server_pid}" 2>/dev/null || true
    fi
    wait "${server_pid}" 2>/dev/null || true
    server_pid=""
}

cleanup() {
    stop_server
    rm -rf "${work_dir}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- (a) Node 22 and the conformance suite
node_bin="$("${repo_root}/scripts/install-node-tools.sh")"
conformance_js="${repo_root}/.tools/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -f "${conformance_js}" ]] || die "${conformance_js} is missing; re-run scripts/install-node-tools.sh"

# Polls host:port until a TCP connection succeeds, for at most startup_secs; fails
# early if the server process we started has exited.
wait_for_port() {
    local host="$1" port="$2" deadline=$((SECONDS + startup_secs))
    until (exec 3<>"/dev/tcp/${host}/${port}") 2>/dev/null; do
        if [[ -n "${server_pid}" ]] && ! kill -0 "${server_pid}" 2>/dev/null; then
            log "the server exited before listening; its output:"
            tail -n 50 "${work_dir}/server.log" >&2 || true
            return 1
        fi
        if ((SECONDS >= deadline)); then
            log "nothing answered on ${host}:${port} within ${startup_secs}s"
            [[ -f "${work_dir}/server.log" ]] && tail -n 50 "${work_dir}/server.log" >&2
            return 1
        fi
        sleep 0.2
    done
}

if [[ -n "${QUIVER_CONFORMANCE_URL:-}" ]]; then
    url="${QUIVER_CONFORMANCE_URL}"
    log "testing ${url} (QUIVER_CONFORMANCE_URL is set: nothing is built or started)"
    read -r url_host url_port < <("${node_bin}" -e '
        const u = new URL(process.argv[1]);
        const port = u.port || (u.protocol === "https:" ? "443" : "80");
        console.log(u.hostname.replace(/^\[|\]$/g, ""), port);' "${url}")
    wait_for_port "${url_host}" "${url_port}" || die "${url} does not answer"
else
    # --- (b) build what we start
    if [[ "${QUIVER_CONFORMANCE_SKIP_BUILD:-0}" != 1 ]]; then
        build=(-p quiver-conformance-upstream --bin quiver-conformance-upstream)
        # A custom server command may not need the gateway binary at all.
        [[ -z "${QUIVER_CONFORMANCE_GATEWAY_CMD:-}" || "${QUIVER_CONFORMANCE_CLIENT:-1}" == 1 ]] &&
            build+=(-p quiver --bin quiver --bin quiver-test-kit)
        log "cargo build ${build[*]}"
        (cd "${repo_root}" && cargo build "${build[@]}") >&2 || die "cargo build failed"
    fi
    [[ -x "${fixture_bin}" ]] || die "${fixture_bin} is missing; build quiver-conformance-upstream"

    # --- (c) start the gateway in passthrough mode in front of the fixture
    port="${QUIVER_CONFORMANCE_PORT:-$("${node_bin}" -e '
        const s = require("net").createServer().listen(0, "127.0.0.1", () => {
            console.log(s.address().port);
            s.close();
        });')}"
    config="${work_dir}/quiver.toml"
    # TOML basic strings take JSON string escaping for the characters a path may hold.
    fixture_toml="$("${node_bin}" -e 'console.log(JSON.stringify(process.argv[1]))' "${fixture_bin}")"
    cat >"${config}" <<EOF
[edge]
listen = "127.0.0.1:${port}"
default_mode = "passthrough"

[[upstream]]
id = "conformance"
namespace = ""          # expose the fixture's tool names unprefixed
transport = "stdio"
command = ${fixture_toml}
args = ["--stdio"]
EOF

    export QUIVER_CONFORMANCE_PORT="${port}" QUIVER_CONFORMANCE_CONFIG="${config}" \
        QUIVER_CONFORMANCE_FIXTURE="${fixture_bin}"
    if [[ -n "${QUIVER_CONFORMANCE_GATEWAY_CMD:-}" ]]; then
        server_cmd=(bash -c "exec ${QUIVER_CONFORMANCE_GATEWAY_CMD}")
    else
        [[ -x "${quiver_bin}" ]] || die "${quiver_bin} is missing; build the quiver binary"
        server_cmd=("${quiver_bin}" dev --config "${config}" --listen "127.0.0.1:${port}" --control-plane-listen 127.0.0.1:0 --data "${work_dir}/data")
    fi
    log "starting: ${server_cmd[*]}"
    (cd "${work_dir}" && exec setsid "${server_cmd[@]}") >"${work_dir}/server.log" 2>&1 &
    server_pid=$!
    wait_for_port 127.0.0.1 "${port}" || die "the server did not come up"
    url="http://127.0.0.1:${port}/mcp"
fi

# --- run the suites
# Each run: a label, the path on the server, and the suite's arguments. The
# requirement sets of both revisions run against passthrough (the fixture behind
# it); the scenarios about the server itself (lifecycle, statelessness, headers,
# caching, DNS rebinding, listing) also run against search and code mode.
# Scenarios outside the frozen 2025-11-25 set that it still covers
# (server-session-lifecycle, json-schema-2020-12, server-sse-polling) run too.
base_url="${url%/mcp}"
runs=()
if [[ -n "${QUIVER_CONFORMANCE_SCENARIO:-}" ]]; then
    runs+=("${QUIVER_CONFORMANCE_LABEL:-single}|/mcp|--scenario ${QUIVER_CONFORMANCE_SCENARIO}${QUIVER_CONFORMANCE_SPEC:+ --spec-version ${QUIVER_CONFORMANCE_SPEC}}")
else
    for revision in ${QUIVER_CONFORMANCE_REQUIREMENTS:-2025-11-25 2026-07-28}; do
        runs+=("passthrough/${revision}|/mcp|--requirements ${revision}")
    done
    if [[ "${QUIVER_CONFORMANCE_EXTRA:-1}" == 1 ]]; then
        for scenario in server-session-lifecycle json-schema-2020-12 server-sse-polling; do
            runs+=("passthrough/2025-11-25|/mcp|--scenario ${scenario} --spec-version 2025-11-25")
        done
        for mode in search code; do
            for scenario in server-initialize server-session-lifecycle ping logging-set-level tools-list dns-rebinding-protection; do
                runs+=("${mode}/2025-11-25|/${mode}/mcp|--scenario ${scenario} --spec-version 2025-11-25")
            done
            for scenario in server-stateless tools-list caching http-header-validation dns-rebinding-protection; do
                runs+=("${mode}/2026-07-28|/${mode}/mcp|--scenario ${scenario} --spec-version 2026-07-28")
            done
            # Every mode serves the upstreams' prompts, resources and
            # completion, calls a tool of the view by its own name, and makes
            # long calls tasks. (Of the requirement sets, only the scenarios
            # that look for a fixture tool in tools/list cannot apply to a
            # mode that lists meta tools: json-schema-2020-12 and
            # http-custom-header-server-validation.)
            for scenario in completion-complete resources-list resources-read-text resources-read-binary \
                resources-templates-read sep-2164-resource-not-found prompts-list prompts-get-simple \
                prompts-get-with-args prompts-get-embedded-resource prompts-get-with-image \
                tools-call-simple-text tools-call-error input-required-result-basic-elicitation; do
                runs+=("${mode}/2026-07-28|/${mode}/mcp|--scenario ${scenario} --spec-version 2026-07-28")
            done
            for scenario in tasks-lifecycle tasks-mrtr-input tasks-capability-negotiation; do
                runs+=("${mode}/2026-07-28|/${mode}/mcp|--scenario ${scenario} --spec-version 2026-07-28 --force")
            done
        done
    fi
fi

run_dir="${results_root}/run-$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "${run_dir}"
: >"${run_dir}/suite.log"
: >"${run_dir}/runs.tsv"
n=0
for run in "${runs[@]}"; do
    IFS='|' read -r label path args <<<"${run}"
    n=$((n + 1))
    out="${run_dir}/${n}"
    mkdir -p "${out}"
    only=""
    [[ "${args}" =~ --scenario\ ([^ ]+) ]] && only="${BASH_REMATCH[1]}"
    printf '%s\t%s\t%s\n' "${out}" "${label}" "${only}" >>"${run_dir}/runs.tsv"
    # shellcheck disable=SC2086 # args is a list of words
    suite_args=(server --url "${base_url}${path}" --output-dir "${out}" ${args})
    log "running (${label}): node dist/index.js ${suite_args[*]}"
    # The suite's exit code knows nothing of our baseline; the verdict below is
    # made from the per-scenario checks.json files instead.
    (cd "${out}" && "${node_bin}" "${conformance_js}" "${suite_args[@]}") \
        >"${out}/suite.log" 2>&1 || true
    cat "${out}/suite.log" >>"${run_dir}/suite.log"
done
stop_server

# One line per scenario: label/name, verdict (pass|warn|fail), failed/warned check ids.
"${node_bin}" - "${run_dir}" >"${run_dir}/verdicts.tsv" <<'JS'
const fs = require("fs");
const path = require("path");
const [runDir] = process.argv.slice(2);
const verdicts = new Map();
// The suite names result folders server-<scenario>-<ISO timestamp with - for :.>.
const folder = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const runs = fs.readFileSync(path.join(runDir, "runs.tsv"), "utf8").split("\n").filter(Boolean);
for (const line of runs) {
    const [out, label, only] = line.split("\t");
    for (const entry of fs.readdirSync(out)) {
        const m = folder.exec(entry);
        const file = path.join(out, entry, "checks.json");
        if (!m || !fs.existsSync(file)) continue;
        const key = `${label}/${m[1]}`;
        let checks;
        try { checks = JSON.parse(fs.readFileSync(file, "utf8")); } catch { checks = null; }
        if (!Array.isArray(checks)) { verdicts.set(key, ["fail", "unreadable checks.json", ""]); continue; }
        const notes = (status) => checks
            .filter((c) => c.status === status)
            .map((c) => `${status} ${c.id}` +
                (c.errorMessage ? `: ${String(c.errorMessage).replace(/\s+/g, " ").slice(0, 200)}` : ""));
        const failed = notes("FAILURE"), warned = notes("WARNING");
        const verdict = failed.length ? "fail" : warned.length ? "warn" : "pass";
        const ids = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING")
            .map((c) => `${c.status === "FAILURE" ? "fail" : "warn"}:${c.id}`);
        verdicts.set(key, [verdict, [...failed, ...warned].join("; "), ids.join(",")]);
    }
    // A scenario that threw never writes checks.json; the log still names it.
    const log = fs.readFileSync(path.join(out, "suite.log"), "utf8");
    const attempted = [...log.matchAll(/^=== Running scenario: (.+) ===$/gm)].map((m) => m[1]);
    for (const name of only ? [...attempted, only] : attempted) {
        const key = `${label}/${name}`;
        if (!verdicts.has(key)) verdicts.set(key, ["fail", "no checks.json (scenario crashed)", ""]);
    }
}
for (const [name, [verdict, notes, ids]] of [...verdicts].sort()) {
    console.log(`${name}\t${verdict}\t${ids}\t${notes}`);
}
JS

# --- compare with the baseline
declare -A allowed=()
if [[ -f "${baseline}" ]]; then
    while IFS= read -r line || [[ -n "${line}" ]]; do
        name="${line%%#*}"
        name="${name//[[:space:]]/}"
        [[ -n "${name}" ]] && allowed["${name}"]=1
    done <"${baseline}"
else
    log "warning: no baseline at ${baseline}; every failure counts"
fi

declare -A seen=()
unexpected=0 expected=0 passed=0 total=0
printf '\n%-32s %s\n' "SCENARIO" "RESULT" >&2
# Whether every failing check of scenario $1 (ids "fail:ID,warn:ID,…" in $2) is
# allowed by a `scenario:check-id` baseline entry.
checks_allowed() {
    local name="$1" id any=0
    local -a ids
    IFS=',' read -r -a ids <<<"$2"
    for id in "${ids[@]}"; do
        [[ "${id}" == warn:* && "${QUIVER_CONFORMANCE_STRICT:-0}" != 1 ]] && continue
        id="${id#*:}"
        [[ -n "${allowed[${name}:${id}]:-}" ]] || return 1
        seen["${name}:${id}"]=1
        any=1
    done
    ((any))
}

while IFS=$'\t' read -r name verdict ids notes; do
    [[ -n "${name}" ]] || continue
    seen["${name}"]=1
    total=$((total + 1))
    failing=0
    [[ "${verdict}" == fail ]] && failing=1
    [[ "${verdict}" == warn && "${QUIVER_CONFORMANCE_STRICT:-0}" == 1 ]] && failing=1
    if ((failing)); then
        if [[ -n "${allowed[${name}]:-}" ]] || checks_allowed "${name}" "${ids}"; then
            result="FAIL (in baseline)"
            expected=$((expected + 1))
        else
            result="FAIL"
            unexpected=$((unexpected + 1))
        fi
    else
        passed=$((passed + 1))
        result="pass"
        [[ "${verdict}" == warn ]] && result="pass (with warnings)"
        if [[ -n "${allowed[${name}]:-}" ]]; then
            result="${result}; warning: in baseline but passes, remove it"
        fi
    fi
    printf '%-32s %s%s\n' "${name}" "${result}" "${notes:+  [${notes}]}" >&2
done <"${run_dir}/verdicts.tsv"

for name in "${!allowed[@]}"; do
    [[ -n "${seen[${name}]:-}" ]] && continue
    if [[ "${name}" == *:* && -n "${seen[${name%%:*}]:-}" ]]; then
        log "warning: baseline entry '${name}' names a check that passed; remove it"
    else
        log "warning: baseline entry '${name}' did not run (unknown scenario, or filtered out)"
    fi
done

printf '\n' >&2
log "${passed}/${total} scenarios passed, ${expected} failed as allowed by the baseline, ${unexpected} failed unexpectedly"
log "suite output and checks.json files: ${run_dir}"
if ((total == 0)); then
    log "error: no scenario ran; see ${run_dir}/suite.log"
    tail -n 30 "${run_dir}/suite.log" >&2 || true
    exit 1
fi
server_line="conformance: ${passed} passed, $((total - passed)) failed"
server_unexpected=${unexpected}

# --- client scenarios: Quiver's upstream client against the suite's servers
client_unexpected=0
if [[ "${QUIVER_CONFORMANCE_CLIENT:-1}" == 1 && -z "${QUIVER_CONFORMANCE_SCENARIO:-}" ]]; then
    [[ -x "${test_kit_bin}" ]] || die "${test_kit_bin} is missing; build the quiver-test-kit binary (or QUIVER_CONFORMANCE_CLIENT=0)"
    client_dir="${run_dir}/client"
    for revision in ${QUIVER_CONFORMANCE_REQUIREMENTS:-2025-11-25 2026-07-28}; do
        out="${client_dir}/${revision}"
        mkdir -p "${out}"
        log "running (client/${revision}): node dist/index.js client --requirements ${revision}"
        (cd "${out}" && "${node_bin}" "${conformance_js}" client \
            --command "${test_kit_bin} conformance-client" --requirements "${revision}" \
            --output-dir "${out}") >"${out}/suite.log" 2>&1 || true
    done
    # One line per scenario: client/revision/name, verdict, scored (yes|no), notes.
    "${node_bin}" - "${client_dir}" >"${client_dir}/verdicts.tsv" <<'JS'
const fs = require("fs");
const path = require("path");
const [clientDir] = process.argv.slice(2);
// Result folders are <scenario>-<ISO timestamp with - for :.>, under auth/ for auth/….
const folder = /^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
for (const revision of fs.readdirSync(clientDir).sort()) {
    const out = path.join(clientDir, revision);
    if (!fs.statSync(out).isDirectory()) continue;
    const log = fs.readFileSync(path.join(out, "suite.log"), "utf8");
    // The suite lists what it does not score for the revision under "Not scored".
    const unscored = new Set([...log.matchAll(/^\s+\S+ (\S+) \((?:extension|added-after-release)\)$/gm)].map((m) => m[1]));
    const verdicts = new Map();
    const walk = (dir, prefix) => {
        for (const entry of fs.readdirSync(dir)) {
            const full = path.join(dir, entry);
            const m = folder.exec(entry);
            if (m && fs.existsSync(path.join(full, "checks.json"))) {
                const name = prefix + m[1];
                let checks;
                try { checks = JSON.parse(fs.readFileSync(path.join(full, "checks.json"), "utf8")); } catch { checks = null; }
                if (!Array.isArray(checks)) { verdicts.set(name, ["fail", "unreadable checks.json"]); continue; }
                const failed = checks.filter((c) => c.status === "FAILURE")
                    .map((c) => `fail ${c.id}` + (c.errorMessage ? `: ${String(c.errorMessage).replace(/\s+/g, " ").slice(0, 160)}` : ""));
                verdicts.set(name, [failed.length ? "fail" : "pass", failed.join("; ")]);
            } else if (!m && fs.statSync(full).isDirectory()) {
                walk(full, `${prefix}${entry}/`);
            }
        }
    };
    walk(out, "");
    for (const [name, [verdict, notes]] of [...verdicts].sort()) {
        console.log(`client/${revision}/${name}\t${verdict}\t${unscored.has(name) ? "no" : "yes"}\t${notes}`);
    }
}
JS
    declare -A client_allowed=()
    if [[ -f "${client_baseline}" ]]; then
        while IFS= read -r line || [[ -n "${line}" ]]; do
            name="${line%%#*}"
            name="${name//[[:space:]]/}"
            [[ -n "${name}" ]] && client_allowed["${name}"]=1
        done <"${client_baseline}"
    fi
    client_passed=0 client_total=0 client_expected=0 extra_passed=0 extra_total=0
    printf '\n%-48s %s\n' "CLIENT SCENARIO" "RESULT" >&2
    while IFS=$'\t' read -r name verdict scored notes; do
        [[ -n "${name}" ]] || continue
        if [[ "${scored}" == no ]]; then
            extra_total=$((extra_total + 1))
            [[ "${verdict}" == pass ]] && extra_passed=$((extra_passed + 1))
            printf '%-48s %s (not scored)%s\n' "${name}" "${verdict}" "${notes:+  [${notes}]}" >&2
            continue
        fi
        client_total=$((client_total + 1))
        if [[ "${verdict}" == pass ]]; then
            client_passed=$((client_passed + 1))
            result="pass"
            [[ -n "${client_allowed[${name}]:-}" ]] && result="pass; warning: in the client baseline but passes, remove it"
        elif [[ -n "${client_allowed[${name}]:-}" ]]; then
            result="FAIL (in baseline)"
            client_expected=$((client_expected + 1))
        else
            result="FAIL"
            client_unexpected=$((client_unexpected + 1))
        fi
        printf '%-48s %s%s\n' "${name}" "${result}" "${notes:+  [${notes}]}" >&2
    done <"${client_dir}/verdicts.tsv"
    printf '\n' >&2
    log "client: ${client_passed}/${client_total} scored scenarios passed, ${client_expected} failed as allowed by the client baseline, ${client_unexpected} failed unexpectedly; ${extra_passed}/${extra_total} unscored (extensions, added after the release) passed"
    if ((client_total == 0)); then
        log "error: no client scenario ran; see ${client_dir}/*/suite.log"
        client_unexpected=1
    fi
    client_line="conformance (client): ${client_passed}/${client_total} scenarios passed (extensions and later additions, not scored: ${extra_passed}/${extra_total})"
fi

if ((server_unexpected > 0)); then
    log "error: unexpected failures; details in ${run_dir}/suite.log"
fi
if ((client_unexpected > 0)); then
    log "error: unexpected client failures; details in ${run_dir}/client/*/suite.log"
fi
# The plain closing lines CI reads.
echo "${server_line}"
[[ -n "${client_line:-}" ]] && echo "${client_line}"
((server_unexpected == 0 && client_unexpected == 0))
