//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

mod every_mode_prompts_resources;
mod fleet_tasks;
mod support;

mod bench_revocation;
mod bench_tenants;
mod catalog_livemcpbench;
mod cluster_script;
mod cluster_status_readiness;
mod code_mode_execute;
mod completions;
mod compose_fleet;
mod concurrent_sessions_share_upstream;
mod control_plane_cluster;
mod control_plane_ctl;
mod control_plane_full_outage;
mod control_plane_linearizability;
mod control_plane_reflection;
mod data_dir_in_use;
mod deploy_manifests;
mod dev_demo_modes;
mod dev_upstreams_restart;
mod doc_blocks;
mod engine_no_disk;
mod executor_grpc;
mod executor_metrics;
mod fair_sharing;
mod fleet_control_plane_outage;
mod fleet_etcd;
mod fleet_etcd_soak;
mod fleet_rolling_restart;
mod fleet_routing;
mod fleet_sessions;
mod fleet_stash;
mod fleet_streaming;
mod gateway_grpc;
mod http_hardening;
mod http_upstream_restart_mid_call;
mod import_layering;
mod inspector_cli;
mod json_logs;
mod large_upstream_answers;
mod redaction_planted_secret;
mod reference_servers;
#[path = "sandbox_adversarial.rs"] // beside a directory of the same name
mod sandbox_adversarial;
mod sandbox_isolation;
mod sandbox_pool;
mod sandbox_under_load;
mod sandbox_worker_faults;
mod screening;
mod script_upstream_faults;
mod search_ranking_default;
mod search_signals_ctl;
mod session_end;
mod shutdown_reaps_upstreams;
mod stateless_protocol;
mod stdio_session;
mod tasks;
mod telemetry_export;
mod telemetry_prometheus;
mod telemetry_traces;
mod tenant_audit;
mod tenant_isolation;
mod tenant_limits;
mod tenant_secrets;
mod tenant_tokens;
mod tls_certificate_errors;
mod tls_edge;
mod upstream_faults;
mod upstream_oauth_ctl;
mod upstream_oauth_grant;
mod upstream_oauth_service_account;
