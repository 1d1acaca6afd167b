//! Why a read or write of a node's redb data file failed. openraft sees these
//! wrapped in its `StorageError`; opening a data directory turns them into an
//! operator-facing `OpenError`.

/// A failed read or write of the data file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A read or write transaction could not begin.
    #[error("cannot begin a transaction")]
    Transaction(#[from] redb::TransactionError),
    /// A table could not be opened.
    #[error("cannot open a table")]
    Table(#[from] redb::TableError),
    /// The file could not be read or written.
    #[error("cannot read or write the file")]
    Storage(#[from] redb::StorageError),
    /// A write could not be committed.
    #[error("cannot commit a write")]
    Commit(#[from] redb::CommitError),
    /// A stored value is not the JSON this build writes.
    #[error("`{key}` does not decode")]
    Decode {
        /// Its key.
        key: String,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be encoded.
    #[error("cannot encode `{key}`")]
    Encode {
        /// Its key.
        key: String,
        /// The encoding error.
        #[source]
        source: serde_json::Error,
    },
    /// A log entry is not the JSON this build writes.
    #[error("raft log entry {index} does not decode")]
    Entry {
        /// Where it is stored.
        index: u64,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// A log entry is stored under another index than its own.
    #[error("raft log entry stored at {stored} claims index {claimed}")]
    Misplaced {
        /// Where it is stored.
        stored: u64,
        /// The index it carries.
        claimed: u64,
    },
    /// An entry is missing between two others.
    #[error("raft log has a gap: expected entry {expected}, found {found}")]
    Gap {
        /// The index that should come next.
        expected: u64,
        /// The index found instead.
        found: u64,
    },
}
