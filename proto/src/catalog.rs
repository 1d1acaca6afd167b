//! Tool catalogue files: the livemcpbench format, the oslook format, and a plain
//! list of `{name, description, inputSchema}`.

use std::path::Path;

use crate::tool::ToolDef;

/// One server of a catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogServer {
    /// Server id (sanitised to `[a-zA-Z0-9_-]`, unique within the catalogue).
    pub id: String,
    /// One-line description (may be empty).
    pub description: String,
    /// Its tools.
    pub tools: Vec<ToolDef>,
}

/// A whole catalogue.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    /// Servers, in file order.
    pub servers: Vec<CatalogServer>,
}

/// Why a catalogue could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The file could not be read.
    #[error("reading catalog {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not JSON or not in a known shape.
    #[error("catalog {path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong and what was expected.
        message: String,
    },
}

impl Catalog {
    /// Reads a catalogue file; `default_server` names the server of a plain tool list.
    pub fn load(path: &Path, default_server: &str) -> Result<Catalog, CatalogError> {
        todo!("{} {default_server}", path.display())
    }

    /// Parses catalogue text (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str, default_server: &str) -> Result<Catalog, CatalogError> {
        todo!("{} {origin} {default_server}", text.len())
    }

    /// Total number of tools.
    pub fn tool_count(&self) -> usize {
        self.servers.iter().map(|s| s.tools.len()).sum()
    }
}
