//! The operator API carried by `ControlPlane.Admin`: one request enum
//! ([`AdminRequest`]) and one typed answer per operation ([`AdminAnswer`]),
//! travelling as the protobuf messages of admin.proto ([`wire`]), so
//! `quiver ctl`, the nodes and any other gRPC client agree on every
//! operation by type. Serving the requests is
//! `operator.rs`'s job; nothing here touches Raft.

mod answer;
mod error;
mod findings;
mod request;
pub mod wire;

pub use answer::{
    AdminAnswer, AuthorizationLink, ClusterInitialized, ClusterStatus, Committed, DriftReport,
    ElectionSwitch, FleetMember, FleetVerification, GrantSummary, IssuedKey, KeySummary,
    LeaderTransfer, LearnerAdded, ManifestDiff, ManifestHash, ManifestShown, ManifestSummary,
    MemberReach, MemberRemoved, MemberRole, MemberStatus, NodeVerdict, PublicTenant,
    RefreshStarted, ReportedReadiness, Rescreened, SecretList, SecretSummary, ServerSummary,
    ToolSummary, UpstreamDetail, UpstreamSummary, UsageReport, Verdict, VoterPromoted,
};
pub(crate) use error::NOT_LEADER;
pub use error::{AdminError, LEADER_METADATA};
pub use findings::{FindingStatus, FindingsReport, ToolFindings};
pub use request::{AdminRequest, KeyRequester};
