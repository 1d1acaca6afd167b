//! Every metric Quiver exports, named once. The MCP ones follow the
//! OpenTelemetry semantic conventions for MCP; the rest are `quiver.*`.
//! Gauges that read live state (worker pool, breakers, Raft, fleet) are
//! registered by their owners with [`crate::metrics::meter`] under the
//! names in [`names`].

use std::sync::OnceLock;

use opentelemetry::metrics::{Counter, Histogram};

use crate::metrics::meter;

/// Instrument names, as OpenTelemetry spells them (Prometheus replaces `.`
/// with `_` and adds the unit and `_total`, see
/// [`crate::metrics::prometheus_name`]).
pub mod names {
    /// Time the edge took to answer one MCP request (s).
    pub const SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// Time an upstream took to answer one MCP request (s).
    pub const CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// Lifetime of an MCP session at the edge (s).
    pub const SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
    /// Scripts run, by outcome.
    pub const EXECUTIONS: &str = "quiver.executions";
    /// Time one script took in the executor (s).
    pub const EXECUTION_DURATION: &str = "quiver.execution.duration";
    /// Sandbox workers by state (`busy`, `idle`).
    pub const WORKERS: &str = "quiver.worker.pool.workers";
    /// Executions waiting for a worker.
    pub const WORKERS_QUEUED: &str = "quiver.worker.pool.queued";
    /// Time a gRPC server took to answer one call, by `rpc.service`,
    /// `rpc.method` and `rpc.grpc.status_code`.
    pub const RPC_SERVER_DURATION: &str = "rpc.server.duration";
    /// Time scripts waited for a worker, by tenant and outcome (`granted`,
    /// `refused`, `cancelled`).
    pub const WORKERS_QUEUE_WAIT: &str = "quiver.worker.pool.queue.wait";
    /// Bytes of stashed values an executor holds, by tenant.
    pub const STASH_BYTES: &str = "quiver.stash.bytes";
    /// Stashed keys an executor holds, by tenant.
    pub const STASH_KEYS: &str = "quiver.stash.keys";
    /// Stash writes refused, by tenant and the quota that refused them.
    pub const STASH_REFUSALS: &str = "quiver.stash.refusals";
    /// Workers retired and replaced, by reason.
    pub const WORKERS_RECYCLED: &str = "quiver.worker.pool.recycled";
    /// Circuit breaker per upstream: 0 closed, 1 half-open, 2 open.
    pub const BREAKER_STATE: &str = "quiver.upstream.breaker.state";
    /// Calls refused before reaching an upstream, by reason (`rate_limit`,
    /// `tool_rate_limit`, `budget`).
    pub const REFUSALS: &str = "quiver.refusals";
    /// Time one tool search took (s).
    pub const SEARCH_DURATION: &str = "quiver.search.duration";
    /// Searches that found nothing.
    pub const SEARCH_ZERO_HITS: &str = "quiver.search.zero_hits";
    /// Tools that search returned and nobody then called.
    pub const SEARCHED_NEVER_CALLED: &str = "quiver.search.never_called_tools";
    /// Context tokens a mode saved against listing every visible tool.
    pub const TOKENS_SAVED: &str = "quiver.tokens.saved";
    /// The control-plane node's current Raft term.
    pub const RAFT_TERM: &str = "quiver.raft.term";
    /// Times this node saw the leader change.
    pub const RAFT_LEADER_CHANGES: &str = "quiver.raft.leader_changes";
    /// Time from proposing a write to its commit (s).
    pub const RAFT_COMMIT_DURATION: &str = "quiver.raft.commit.duration";
    /// Log entries written but not yet applied on this node.
    pub const RAFT_APPLY_LAG: &str = "quiver.raft.apply_lag";
    /// 1 on the node that is leader, 0 elsewhere.
    pub const RAFT_IS_LEADER: &str = "quiver.raft.is_leader";
    /// Backups the control-plane leader wrote to its backup directory, by
    /// `outcome` (`ok`, `failed`).
    pub const BACKUPS: &str = "quiver.control_plane.backups";
    /// When this node last wrote a backup successfully (s since the epoch).
    pub const BACKUP_LAST_SUCCESS: &str = "quiver.control_plane.backup.last_success";
    /// Bytes of the last backup this node wrote.
    pub const BACKUP_BYTES: &str = "quiver.control_plane.backup.size";
    /// Upstream listings discovery runs now, and those waiting for a turn
    /// (`state`: `running`, `waiting`).
    pub const DISCOVERY_ATTEMPTS: &str = "quiver.discovery.attempts";
    /// Manifest versions a watching node is behind the control plane.
    pub const WATCH_LAG: &str = "quiver.watch.lag";
    /// Entries held by a table a client or tenant can grow, by
    /// `quiver.table` (see `quiver_telemetry::tables`).
    pub const TABLE_ENTRIES: &str = "quiver.table.entries";
    /// The most entries such a table holds, by `quiver.table`.
    pub const TABLE_CAPACITY: &str = "quiver.table.capacity";
    /// Distinct tenant views this node holds for the current manifest (the
    /// view of every tool not counted); bounded by the view cap.
    pub const VIEWS: &str = "quiver.views";
    /// Heap bytes the tenant views hold of their own (the shared index not
    /// counted).
    pub const VIEW_BYTES: &str = "quiver.views.bytes";
    /// Tenants whose view this node has derived for the current manifest.
    pub const VIEW_TENANTS: &str = "quiver.views.tenants";
    /// Views forgotten because the view cap was reached.
    pub const VIEW_EVICTIONS: &str = "quiver.views.evictions";
    /// Tools in the current manifest's search index.
    pub const SEARCH_INDEX_TOOLS: &str = "quiver.search.index.tools";
    /// Heap bytes of the current manifest's search index: postings, names
    /// and, once embedded, tool vectors (one copy, shared by every view).
    pub const SEARCH_INDEX_BYTES: &str = "quiver.search.index.bytes";
    /// 1 once the current search index ranks semantically (its tool vectors
    /// are in), 0 while it ranks lexically.
    pub const SEARCH_INDEX_SEMANTIC: &str = "quiver.search.index.semantic";
    /// Manifest version this node serves.
    pub const MANIFEST_VERSION: &str = "quiver.manifest.version";
    /// Fleet members known to the control plane, by role and state (`ok`,
    /// `fenced`, `stale`).
    pub const FLEET_MEMBERS: &str = "quiver.fleet.members";
    /// Tools with screening findings, by worst severity and status (`held`,
    /// `served`).
    pub const TOOL_FINDINGS: &str = "quiver.tool.findings";
}

/// Duration buckets (s): Quiver answers in well under a millisecond on a
/// cache hit and waits up to minutes on slow upstreams.
pub const DURATION_BUCKETS: [f64; 19] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The instruments recorded from many places.
pub struct Instruments {
    /// [`names::SERVER_OPERATION_DURATION`]
    pub server_operation_duration: Histogram<f64>,
    /// [`names::CLIENT_OPERATION_DURATION`]
    pub client_operation_duration: Histogram<f64>,
    /// [`names::SERVER_SESSION_DURATION`]
    pub server_session_duration: Histogram<f64>,
    /// [`names::EXECUTIONS`]
    pub executions: Counter<u64>,
    /// [`names::EXECUTION_DURATION`]
    pub execution_duration: Histogram<f64>,
    /// [`names::WORKERS_RECYCLED`]
    pub workers_recycled: Counter<u64>,
    /// [`names::WORKERS_QUEUE_WAIT`]
    pub queue_wait: Histogram<f64>,
    /// [`names::RPC_SERVER_DURATION`]
    pub rpc_server_duration: Histogram<f64>,
    /// [`names::STASH_REFUSALS`]
    pub stash_refusals: Counter<u64>,
    /// [`names::REFUSALS`]
    pub refusals: Counter<u64>,
    /// [`names::SEARCH_DURATION`]
    pub search_duration: Histogram<f64>,
    /// [`names::SEARCH_ZERO_HITS`]
    pub search_zero_hits: Counter<u64>,
    /// [`names::TOKENS_SAVED`]
    pub tokens_saved: Counter<u64>,
    /// [`names::RAFT_LEADER_CHANGES`]
    pub raft_leader_changes: Counter<u64>,
    /// [`names::RAFT_COMMIT_DURATION`]
    pub raft_commit_duration: Histogram<f64>,
    /// [`names::BACKUPS`]
    pub backups: Counter<u64>,
}

/// The process's instruments, made on first use.
pub fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = meter();
        let duration = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Instruments {
            server_operation_duration: duration(
                names::SERVER_OPERATION_DURATION,
                "Duration of MCP requests answered by the edge",
            ),
            client_operation_duration: duration(
                names::CLIENT_OPERATION_DURATION,
                "Duration of MCP requests sent to upstream servers",
            ),
            server_session_duration: duration(
                names::SERVER_SESSION_DURATION,
                "Duration of MCP sessions at the edge",
            ),
            executions: meter
                .u64_counter(names::EXECUTIONS)
                .with_description("Scripts run, by outcome")
                .build(),
            execution_duration: duration(
                names::EXECUTION_DURATION,
                "Duration of script executions in the executor",
            ),
            workers_recycled: meter
                .u64_counter(names::WORKERS_RECYCLED)
                .with_description("Sandbox workers retired and replaced, by reason")
                .build(),
            rpc_server_duration: duration(
                names::RPC_SERVER_DURATION,
                "Duration of gRPC calls answered by this process's servers",
            ),
            queue_wait: duration(
                names::WORKERS_QUEUE_WAIT,
                "Time scripts waited for a sandbox worker, by tenant and outcome",
            ),
            stash_refusals: meter
                .u64_counter(names::STASH_REFUSALS)
                .with_description("Stash writes refused, by tenant and the quota that refused them")
                .build(),
            refusals: meter
                .u64_counter(names::REFUSALS)
                .with_description(
                    "Calls refused by rate limits or budgets before any upstream was called",
                )
                .build(),
            search_duration: duration(names::SEARCH_DURATION, "Duration of tool searches"),
            search_zero_hits: meter
                .u64_counter(names::SEARCH_ZERO_HITS)
                .with_description("Tool searches that found nothing")
                .build(),
            tokens_saved: meter
                .u64_counter(names::TOKENS_SAVED)
                .with_description(
                    "Estimated context tokens saved against listing every visible tool, by mode",
                )
                .build(),
            raft_leader_changes: meter
                .u64_counter(names::RAFT_LEADER_CHANGES)
                .with_description("Leader changes this control-plane node observed")
                .build(),
            raft_commit_duration: duration(
                names::RAFT_COMMIT_DURATION,
                "Time from proposing a control-plane write to its commit",
            ),
            backups: meter
                .u64_counter(names::BACKUPS)
                .with_description("Backups the control-plane leader wrote, by outcome")
                .build(),
        }
    })
}
