//! Tool vectors by content hash, in memory and in one append-only file per
//! model, so a tool definition is embedded once per model, whatever view or
//! manifest version it appears in, and a restart reads vectors back instead of
//! recomputing them. It stores and finds vectors; it never computes one.
//!
//! File format (`vectors-<model id>.bin`): the line `quiver-vectors 1\n`, the
//! dimension as a little-endian u32, then records of a 32-byte SHA-256 key and
//! `dim` little-endian f32. A torn last record (a crash mid-append) is ignored
//! on load and overwritten by the next append.

use std::{
    collections::HashMap,
    fs::{File, OpenOptions},
    io::{BufWriter, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
};

use sha2::{Digest, Sha256};

const MAGIC: &[u8] = b"quiver-vectors 1\n";

/// Why vectors could not be loaded or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VectorCacheError {
    /// The cache directory could not be created.
    #[error("creating the vector cache directory {}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The cache file could not be opened.
    #[error("opening {}", path.display())]
    Open {
        /// The cache file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The cache file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The cache file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The cache file could not be started afresh.
    #[error("writing {}", path.display())]
    WriteHeader {
        /// The cache file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// New vectors could not be appended to the cache file.
    #[error("appending to {}", path.display())]
    Append {
        /// The cache file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A vector does not have the cache's dimension.
    #[error("vector of length {len} in a cache of dimension {dim}")]
    Dimension {
        /// The vector's length.
        len: usize,
        /// The cache's dimension.
        dim: usize,
    },
}

/// A content hash naming one vector.
pub type VectorKey = [u8; 32];

/// The key of `text` under the model `model_id`.
pub fn vector_key(model_id: &str, text: &str) -> VectorKey {
    let mut hash = Sha256::new();
    hash.update(model_id.as_bytes());
    hash.update([0]);
    hash.update(text.as_bytes());
    hash.finalize().into()
}

/// Vectors of one model, shared by every view (`Send + Sync`).
#[derive(Debug)]
pub struct VectorCache {
    dim: usize,
    vectors: RwLock<HashMap<VectorKey, Arc<[f32]>>>,
    file: Option<Mutex<CacheFile>>,
}

#[derive(Debug)]
struct CacheFile {
    path: PathBuf,
    /// Where the next record goes (after the last whole one).
    end: u64,
}

impl VectorCache {
    /// A cache held in memory only.
    pub fn in_memory(dim: usize) -> VectorCache {
        VectorCache {
            dim,
            vectors: RwLock::default(),
            file: None,
        }
    }

    /// The cache of model `model_id` in `dir` (created if missing), with every
    /// vector already stored there loaded.
    pub fn open(dir: &Path, model_id: &str, dim: usize) -> Result<VectorCache, VectorCacheError> {
        std::fs::create_dir_all(dir).map_err(|source| VectorCacheError::CreateDir {
            dir: dir.to_owned(),
            source,
        })?;
        let path = dir.join(format!("vectors-{model_id}.bin"));
        let mut vectors = HashMap::new();
        let header = MAGIC.len() as u64 + 4;
        let end = match File::open(&path) {
            Ok(mut file) => {
                let mut bytes = Vec::new();
                if let Err(source) = file.read_to_end(&mut bytes) {
                    return Err(VectorCacheError::Read { path, source });
                }
                let stored_dim = bytes
                    .get(MAGIC.len()..MAGIC.len() + 4)
                    .filter(|_| bytes.starts_with(MAGIC))
                    .map(|d| u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize);
                if stored_dim == Some(dim) {
                    let record = 32 + 4 * dim;
                    let body = &bytes[header as usize..];
                    for chunk in body.chunks_exact(record) {
                        let mut key = [0u8; 32];
                        key.copy_from_slice(&chunk[..32]);
                        let vector: Arc<[f32]> = chunk[32..]
                            .chunks_exact(4)
                            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                            .collect();
                        vectors.insert(key, vector);
                    }
                    header + (body.len() / record * record) as u64
                } else {
                    // Another format or dimension: start the file afresh.
                    write_header(&path, dim)?;
                    header
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                write_header(&path, dim)?;
                header
            }
            Err(source) => return Err(VectorCacheError::Open { path, source }),
        };
        Ok(VectorCache {
            dim,
            vectors: RwLock::new(vectors),
            file: Some(Mutex::new(CacheFile { path, end })),
        })
    }

    /// Length of every vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors held.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The vector stored under `key`.
    pub fn get(&self, key: &VectorKey) -> Option<Arc<[f32]>> {
        self.read().get(key).cloned()
    }

    /// Stores vectors (each of length [`VectorCache::dim`]) in memory and
    /// appends them to the file. A failed write leaves them in memory only and
    /// is returned, so the caller can log it.
    pub fn insert(&self, entries: Vec<(VectorKey, Vec<f32>)>) -> Result<(), VectorCacheError> {
        let mut fresh = Vec::with_capacity(entries.len());
        {
            let mut vectors = self.vectors.write().unwrap_or_else(|e| e.into_inner());
            for (key, vector) in entries {
                if vector.len() != self.dim {
                    return Err(VectorCacheError::Dimension {
                        len: vector.len(),
                        dim: self.dim,
                    });
                }
                if let std::collections::hash_map::Entry::Vacant(slot) = vectors.entry(key) {
                    let vector: Arc<[f32]> = vector.into();
                    slot.insert(vector.clone());
                    fresh.push((key, vector));
                }
            }
        }
        match &self.file {
            Some(file) if !fresh.is_empty() => {
                let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                file.append(&fresh)
            }
            _ => Ok(()),
        }
    }

    /// Bytes held by the vectors themselves (not counting the map).
    pub fn vector_bytes(&self) -> usize {
        self.len() * self.dim * 4
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<VectorKey, Arc<[f32]>>> {
        self.vectors.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl CacheFile {
    fn append(&mut self, records: &[(VectorKey, Arc<[f32]>)]) -> Result<(), VectorCacheError> {
        let written = self
            .write_records(records)
            .map_err(|source| VectorCacheError::Append {
                path: self.path.clone(),
                source,
            })?;
        self.end += written;
        Ok(())
    }

    /// Writes `records` from the end of the last whole record; returns the
    /// bytes written.
    fn write_records(&self, records: &[(VectorKey, Arc<[f32]>)]) -> std::io::Result<u64> {
        let file = OpenOptions::new().write(true).open(&self.path)?;
        let mut writer = BufWriter::new(file);
        writer.seek(SeekFrom::Start(self.end))?;
        let mut written = 0u64;
        for (key, vector) in records {
            writer.write_all(key)?;
            for x in vector.iter() {
                writer.write_all(&x.to_le_bytes())?;
            }
            written += 32 + 4 * vector.len() as u64;
        }
        writer.flush()?;
        Ok(written)
    }
}

fn write_header(path: &Path, dim: usize) -> Result<(), VectorCacheError> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&(dim as u32).to_le_bytes());
    std::fs::write(path, bytes).map_err(|source| VectorCacheError::WriteHeader {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_survive_a_reopen_and_a_torn_tail_is_dropped() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let a = vector_key("m", "a");
        let b = vector_key("m", "b");
        assert_ne!(a, b);
        assert_ne!(a, vector_key("other", "a"));
        {
            let cache = VectorCache::open(dir.path(), "m", 2)?;
            assert!(cache.is_empty());
            cache.insert(vec![(a, vec![1.0, 0.0])])?;
            cache.insert(vec![(b, vec![0.0, 1.0]), (a, vec![9.0, 9.0])])?;
            assert_eq!(cache.len(), 2);
            // The first vector stored under a key stays.
            assert_eq!(&*cache.get(&a).unwrap(), &[1.0, 0.0]);
            assert!(cache.insert(vec![(b, vec![1.0])]).is_err());
        }
        let path = dir.path().join("vectors-m.bin");
        let mut bytes = std::fs::read(&path)?;
        bytes.extend_from_slice(&[7; 20]);
        std::fs::write(&path, bytes)?;
        let cache = VectorCache::open(dir.path(), "m", 2)?;
        assert_eq!(cache.len(), 2);
        assert_eq!(&*cache.get(&b).unwrap(), &[0.0, 1.0]);
        let c = vector_key("m", "c");
        cache.insert(vec![(c, vec![0.5, 0.5])])?;
        let cache = VectorCache::open(dir.path(), "m", 2)?;
        assert_eq!(cache.len(), 3);
        assert_eq!(&*cache.get(&c).unwrap(), &[0.5, 0.5]);
        // Another dimension starts afresh rather than misreading.
        assert!(VectorCache::open(dir.path(), "m", 3)?.is_empty());
        Ok(())
    }
}
