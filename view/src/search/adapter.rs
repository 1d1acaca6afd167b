//! The query adapter: a linear map, learned from public tool-retrieval data,
//! applied to a query's sentence vector before it is compared with tool
//! vectors (`normalise(W q)`).
//!
//! A general sentence model places "what is the weather in Paris" far from
//! "get_forecast: Returns the forecast for a location"; the map moves
//! queries toward the descriptions of the tools that answer them. Tool
//! vectors are untouched, so vectors cached before the adapter stay valid
//! and switching it off needs no re-embedding. It is trained by
//! `cargo run --release -p quiver-view --example train_adapter` (see
//! `view/adapter/README.md`) for one model: it applies only to a model
//! whose [`Embedder::id`](super::Embedder::id) it names.

use std::fmt;

/// The adapter shipped in the binary.
const SHIPPED: &[u8] = include_bytes!("../../adapter/query-adapter.bin");

/// What the first line of an adapter file says.
const FORMAT: &str = "quiver-query-adapter-1";

/// Why bytes are not an adapter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// No header line.
    #[error(
        "not a query adapter: no header line; retrain with `cargo run --release -p quiver-view --example train_adapter`"
    )]
    NoHeader,
    /// The header is not the expected JSON.
    #[error(
        "query adapter header: {0}; retrain with `cargo run --release -p quiver-view --example train_adapter`"
    )]
    Header(#[from] serde_json::Error),
    /// Another format or version.
    #[error(
        "query adapter format `{0}`, expected `{FORMAT}`: retrain with `cargo run --release -p quiver-view --example train_adapter`"
    )]
    Format(String),
    /// The matrix is not `dim × dim` 32-bit floats.
    #[error(
        "query adapter holds {got} bytes of weights, expected {want} (truncated or damaged): retrain with `cargo run --release -p quiver-view --example train_adapter`"
    )]
    Size {
        /// Bytes after the header.
        got: usize,
        /// `dim × dim × 4`.
        want: usize,
    },
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    format: String,
    name: String,
    model: String,
    dim: usize,
}

/// A learned linear map over query vectors.
#[derive(Clone, PartialEq)]
pub struct QueryAdapter {
    name: String,
    model: String,
    dim: usize,
    /// `dim × dim`, row-major: output `i` is row `i` · the query.
    matrix: Vec<f32>,
}

impl fmt::Debug for QueryAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryAdapter")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("dim", &self.dim)
            .finish()
    }
}

impl QueryAdapter {
    /// The adapter built into this binary.
    pub fn shipped() -> Result<QueryAdapter, AdapterError> {
        QueryAdapter::from_bytes(SHIPPED)
    }

    /// A map from its parts: `matrix` is `dim × dim`, row-major.
    pub fn new(name: &str, model: &str, dim: usize, matrix: Vec<f32>) -> QueryAdapter {
        assert_eq!(matrix.len(), dim * dim, "a dim × dim matrix");
        QueryAdapter {
            name: name.to_owned(),
            model: model.to_owned(),
            dim,
            matrix,
        }
    }

    /// Reads an adapter file: a JSON header line, then the matrix as
    /// little-endian `f32`.
    pub fn from_bytes(bytes: &[u8]) -> Result<QueryAdapter, AdapterError> {
        let end = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or(AdapterError::NoHeader)?;
        let header: Header = serde_json::from_slice(&bytes[..end])?;
        if header.format != FORMAT {
            return Err(AdapterError::Format(header.format));
        }
        let body = &bytes[end + 1..];
        let want = header.dim * header.dim * 4;
        if body.len() != want {
            return Err(AdapterError::Size {
                got: body.len(),
                want,
            });
        }
        let matrix = body
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(QueryAdapter {
            name: header.name,
            model: header.model,
            dim: header.dim,
            matrix,
        })
    }

    /// The file [`from_bytes`](Self::from_bytes) reads.
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = Header {
            format: FORMAT.into(),
            name: self.name.clone(),
            model: self.model.clone(),
            dim: self.dim,
        };
        let mut out = serde_json::to_vec(&header).expect("a header serialises");
        out.push(b'\n');
        for v in &self.matrix {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Its name, for start-up lines.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The [`Embedder::id`](super::Embedder::id) of the model it was
    /// trained for.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Length of the vectors it maps.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The matrix, `dim × dim` row-major.
    pub fn matrix(&self) -> &[f32] {
        &self.matrix
    }

    /// `normalise(W q)`; a vector of another length is returned unchanged.
    pub fn apply(&self, query: &[f32]) -> Vec<f32> {
        if query.len() != self.dim {
            return query.to_vec();
        }
        let mut out: Vec<f32> = self
            .matrix
            .chunks_exact(self.dim)
            .map(|row| row.iter().zip(query).map(|(w, q)| w * q).sum())
            .collect();
        let norm = out.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            out.iter_mut().for_each(|v| *v /= norm);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_round_trips_and_damage_is_refused() {
        let adapter = QueryAdapter::new("t", "m", 2, vec![0.0, 1.0, 1.0, 0.0]);
        let bytes = adapter.to_bytes();
        assert_eq!(QueryAdapter::from_bytes(&bytes).unwrap(), adapter);
        assert!(matches!(
            QueryAdapter::from_bytes(&bytes[..bytes.len() - 1]),
            Err(AdapterError::Size { .. })
        ));
        assert!(matches!(
            QueryAdapter::from_bytes(b"no header"),
            Err(AdapterError::NoHeader)
        ));
        let other = String::from_utf8_lossy(&bytes).replace(FORMAT, "other-2");
        assert!(matches!(
            QueryAdapter::from_bytes(other.as_bytes()),
            Err(AdapterError::Format(_)) | Err(AdapterError::Size { .. })
        ));
        // A swap of the two coordinates, normalised.
        assert_eq!(adapter.apply(&[3.0, 4.0]), vec![0.8, 0.6]);
        assert_eq!(adapter.apply(&[1.0]), vec![1.0]);
    }

    #[test]
    fn the_shipped_adapter_loads() {
        let adapter = QueryAdapter::shipped().expect("the shipped adapter");
        assert_eq!(adapter.dim(), 384);
        assert!(adapter.matrix().iter().all(|v| v.is_finite()));
    }
}
