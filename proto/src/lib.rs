//! The contract every Quiver node shares.
//!
//! - [`pb`]: the `quiver.v1` protobuf services and messages (compiled with protox).
//! - The canonical manifest model: tool identity ([`ToolId`]), canonical JSON of a
//!   definition ([`canonical`]), deterministic TypeScript stubs ([`stub`]) and their
//!   SHA-256 hashes ([`hash`]), exposed names ([`naming`]) and whole manifests
//!   ([`manifest`]). The same manifest must give byte-identical stubs and hashes on
//!   every node, platform and run; nothing here may depend on time, locale, hashing
//!   seeds or map iteration order.
//! - Catalog files ([`catalog`]): tool catalogues in the formats Quiver accepts.
//! - Screening findings ([`finding`]): what a rule found in a tool definition.
//! - Audit records ([`audit`]): what every call and execution leaves behind.
//! - Tenants ([`tenant`]): policy, API-key hashes and the directory edges
//!   authenticate against; [`registry`]: tenants as protobuf messages.
//! - Upstreams as configured ([`upstream_config`]), the references their header
//!   and env values may hold ([`references`]) and the secret values those expand
//!   to ([`secret_value`]): what the control plane replicates, the executors
//!   connect with, and operators write, whatever the MCP client does with it.

pub mod apps;
pub mod audit;
pub mod canonical;
pub mod catalog;
pub mod clock;
pub mod delta;
pub mod finding;
pub mod hash;
pub mod manifest;
pub mod mode;
pub mod naming;
pub mod node_role;
pub mod references;
pub mod registry;
pub mod script_error_kind;
pub mod secret_value;
pub mod stub;
pub mod tenant;
pub mod tool;
pub mod upstream_config;
pub mod upstream_state;

pub use hash::{ParseStubHashError, StubHash};
pub use manifest::{Manifest, ManifestTool, ServerEntry};
pub use tool::{ToolDef, ToolId};

/// Generated `quiver.v1` protobuf types and tonic services.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("quiver.v1");

    /// Encoded `FileDescriptorSet` of `quiver/v1/gateway.proto` and the files
    /// it imports: what gRPC reflection serves about `quiver.v1.Gateway`.
    pub const GATEWAY_FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/gateway_descriptor.bin"));

    /// Encoded `FileDescriptorSet` of `quiver/v1/control_plane.proto` and the
    /// files it imports: what gRPC reflection serves about
    /// `quiver.v1.ControlPlane`.
    pub const CONTROL_PLANE_FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/control_plane_descriptor.bin"));
}
