//! The operator API carried by `ControlPlane.Admin`: one request enum
//! ([`AdminRequest`]) and one typed answer per operation ([`AdminAnswer`]),
//! travelling as the protobuf messages of admin.proto ([`wire`]), so
//! `quiver ctl`, the nodes and any other gRPC client agree on every
//! operation by type; failures are one typed [`AdminError`].
//!
//! [`AdminTransport`] is the one way the parts of Quiver reach the control
//! plane: a control-plane node answers in process, the control plane's
//! `RemoteAdmin` over gRPC, and the executor (budget leases, audit records,
//! token renewals) and the edge (task records, OAuth callbacks, the web
//! console) hold one without knowing which. Its methods (on
//! `dyn AdminTransport`) ask for one operation each and check the answer's
//! kind in one place. `quiver ctl`, which renders every answer, sends
//! requests with the admin client directly.
//!
//! This crate depends on `quiver-proto` alone: the types an answer carries
//! (tenants' settings, usage, records of the replicated state) live here or
//! in proto. Serving the requests is the control plane's job; nothing here
//! touches Raft.

mod answer;
pub mod audit;
mod error;
mod findings;
pub mod outcome;
pub mod records;
mod request;
pub mod tenant;
mod transport;
pub mod usage;
pub mod wire;

/// A control-plane node id (operator-chosen, stable for the node's lifetime).
pub type NodeId = u64;

pub use answer::{
    AdminAnswer, AuthorizationLink, ClusterInitialized, ClusterStatus, Committed, DriftReport,
    ElectionSwitch, FleetMember, FleetVerification, GrantSummary, IssuedKey, KeySummary,
    LeaderTransfer, LearnerAdded, ManifestDiff, ManifestHash, ManifestShown, ManifestSummary,
    MemberReach, MemberRemoved, MemberRole, MemberStatus, NodeVerdict, PublicTenant,
    RefreshStarted, ReportedReadiness, Rescreened, SecretList, SecretSummary, ServerSummary,
    ToolSummary, UpstreamDetail, UpstreamSummary, UsageReport, Verdict, VoterPromoted,
};
pub use error::{AdminError, LEADER_METADATA, NOT_LEADER};
pub use findings::{FindingStatus, FindingsReport, ToolFindings};
pub use request::{AdminRequest, KeyRequester};
pub use transport::{AdminFuture, AdminTransport};
