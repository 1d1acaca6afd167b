//! The parts of the adversarial suite (`tests/sandbox_adversarial.rs`): the
//! case table, the canaries, the recording host, the runner and the one
//! expectation check both of its tests apply.

pub mod canaries;
pub mod case;
pub mod cases;
pub mod expectation_check;
pub mod layer_summary;
pub mod recording_context;
pub mod suite;
