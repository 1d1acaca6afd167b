//! Shorthands for the signal store's unit tests.

pub(crate) const DAY: u64 = 86_400;

pub(crate) fn shown(tools: &[&str]) -> Vec<String> {
    tools.iter().map(|t| (*t).to_owned()).collect()
}

/// A unit vector along `axis` tilted towards `other` by `tilt`.
pub(crate) fn unit(axis: usize, other: usize, tilt: f32) -> Vec<f32> {
    let mut v = [0.0f32; 8];
    v[axis] = 1.0;
    v[other] += tilt;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}
