//! Shorthands for the signal store's unit tests.

pub(super) use super::{SignalConfig, SignalStore, UncalledTool, ZeroHitQuery};

pub(super) const DAY: u64 = 86_400;

pub(super) fn shown(tools: &[&str]) -> Vec<String> {
    tools.iter().map(|t| (*t).to_owned()).collect()
}

/// A unit vector along `axis` tilted towards `other` by `tilt`.
pub(super) fn unit(axis: usize, other: usize, tilt: f32) -> Vec<f32> {
    let mut v = [0.0f32; 8];
    v[axis] = 1.0;
    v[other] += tilt;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}
