//! A query's vector as the signal store keeps it: quantised to a signed byte
//! per dimension and written as hex, with the cosine against a full vector.

use serde::{Deserialize, Serialize};

/// A unit query vector quantised to one signed byte per dimension (a
/// quarter of the memory, a cosine within about 0.01), kept as hex in files.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueryVector(Vec<i8>);

impl QueryVector {
    pub(crate) fn quantise(v: &[f32]) -> QueryVector {
        QueryVector(
            v.iter()
                .map(|x| (x * 127.0).round().clamp(-127.0, 127.0) as i8)
                .collect(),
        )
    }

    /// Cosine with a unit vector `q`.
    pub(crate) fn cosine(&self, q: &[f32]) -> f32 {
        if self.0.len() != q.len() {
            return 0.0;
        }
        let (dot, norm) = self
            .0
            .iter()
            .zip(q)
            .fold((0.0f32, 0.0f32), |(dot, norm), (&a, &b)| {
                let a = f32::from(a);
                (dot + a * b, norm + a * a)
            });
        if norm == 0.0 { 0.0 } else { dot / norm.sqrt() }
    }
}

impl Serialize for QueryVector {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.0.iter().map(|&x| x as u8).collect();
        serializer.serialize_str(&hex::encode(bytes))
    }
}

impl<'de> Deserialize<'de> for QueryVector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bytes = hex::decode(text).map_err(serde::de::Error::custom)?;
        Ok(QueryVector(bytes.into_iter().map(|b| b as i8).collect()))
    }
}
