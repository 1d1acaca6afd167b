//! `quiver-test-kit`: the mock upstream with test hooks and the client the
//! MCP conformance suite drives (the `quiver-test-kit` crate), for Quiver's
//! own tests; not part of the shipped `quiver`.

fn main() -> std::process::ExitCode {
    quiver_test_kit::main()
}
