//! Compiles `quiver.v1` with protox (pure Rust), so building Quiver never needs `protoc`,
//! and writes the encoded descriptors of the public `quiver.v1.Gateway` API and of
//! the control plane's `quiver.v1.ControlPlane` (each with the files it imports)
//! for gRPC reflection.

use prost::Message as _;

/// The file whose service the edge offers to other programs, with reflection.
const GATEWAY_FILE: &str = "quiver/v1/gateway.proto";
/// The file whose service the control plane offers operators, with reflection.
const CONTROL_PLANE_FILE: &str = "quiver/v1/control_plane.proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/quiver/v1/manifest.proto",
        "proto/quiver/v1/registry.proto",
        "proto/quiver/v1/admin_cluster.proto",
        "proto/quiver/v1/admin.proto",
        "proto/quiver/v1/executor.proto",
        "proto/quiver/v1/gateway.proto",
        "proto/quiver/v1/control_plane.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    write_descriptors(&descriptors, GATEWAY_FILE, "gateway_descriptor.bin")?;
    write_descriptors(
        &descriptors,
        CONTROL_PLANE_FILE,
        "control_plane_descriptor.bin",
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}

/// `out` in `OUT_DIR`: `file` and the files it imports, nothing else
/// (reflection describes what a client of that file's service needs).
fn write_descriptors(
    all: &prost_types::FileDescriptorSet,
    file: &str,
    out: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut wanted = vec![file.to_string()];
    let mut kept = Vec::new();
    while let Some(name) = wanted.pop() {
        if kept
            .iter()
            .any(|f: &prost_types::FileDescriptorProto| f.name() == name)
        {
            continue;
        }
        let file = all
            .file
            .iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| format!("{name} is imported but was not compiled"))?;
        wanted.extend(file.dependency.iter().cloned());
        kept.push(file.clone());
    }
    // Dependencies first, as descriptor pools expect.
    kept.reverse();
    let set = prost_types::FileDescriptorSet { file: kept };
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join(out);
    std::fs::write(out, set.encode_to_vec())?;
    Ok(())
}
