//! Compiles `quiver.v1` with protox (pure Rust), so building Quiver never needs `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/quiver/v1/manifest.proto",
        "proto/quiver/v1/executor.proto",
        "proto/quiver/v1/gateway.proto",
        "proto/quiver/v1/control_plane.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
