//! Real tool catalogues as search documents, for the evaluation and the
//! benchmark: the livemcpbench and oslook files of `../shared/datasets`, read
//! with [`Catalog`] so that tools are named as a running edge names them:
//! `server/tool`, the server id being the catalogue's sanitised server name.

use std::path::{Path, PathBuf};

use quiver_proto::catalog::{Catalog, CatalogError};

use super::{SearchDoc, SearchParam};

/// The catalogues the evaluation knows, by the name queries use.
pub const CORPORA: [&str; 2] = ["livemcpbench", "oslook"];

/// Why a catalogue could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// The name is none of [`CORPORA`].
    #[error("unknown corpus `{name}`; expected one of {CORPORA:?}")]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The catalogue file could not be read or parsed.
    #[error("loading corpus {name}")]
    Load {
        /// The corpus.
        name: String,
        /// What was wrong with the file.
        #[source]
        source: CatalogError,
    },
}

/// The tools of one catalogue.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// `livemcpbench` or `oslook`.
    pub name: String,
    /// One document per tool, in catalogue order.
    pub docs: Vec<SearchDoc>,
}

impl Corpus {
    /// Loads the catalogue `name` (one of [`CORPORA`]) from `dataset_dir`.
    pub fn load(dataset_dir: &Path, name: &str) -> Result<Corpus, CorpusError> {
        let path = Corpus::path(dataset_dir, name)?;
        Corpus::load_file(&path, name)
    }

    /// Loads a catalogue file of any shape [`Catalog`] reads, named `name`.
    pub fn load_file(path: &Path, name: &str) -> Result<Corpus, CorpusError> {
        let catalog = Catalog::load(path, name).map_err(|source| CorpusError::Load {
            name: name.to_owned(),
            source,
        })?;
        Ok(Corpus {
            name: name.to_owned(),
            docs: docs_of(&catalog),
        })
    }

    /// Where the catalogue `name` lives under `dataset_dir`.
    pub fn path(dataset_dir: &Path, name: &str) -> Result<PathBuf, CorpusError> {
        Ok(match name {
            "livemcpbench" => dataset_dir.join("livemcpbench/tools.json"),
            "oslook" => dataset_dir.join("oslook-mcp-servers-schemas/schemas_by_server.json"),
            other => {
                return Err(CorpusError::Unknown {
                    name: other.to_owned(),
                });
            }
        })
    }

    /// The `server/tool` id of each document, in order.
    pub fn ids(&self) -> Vec<String> {
        self.docs
            .iter()
            .map(|d| format!("{}/{}", d.server, d.name))
            .collect()
    }
}

/// One search document per tool of `catalog`.
pub fn docs_of(catalog: &Catalog) -> Vec<SearchDoc> {
    catalog
        .servers
        .iter()
        .flat_map(|server| {
            server.tools.iter().map(|tool| SearchDoc {
                name: tool.name.clone(),
                server: server.id.clone(),
                server_description: server.description.clone(),
                description: tool.description.clone(),
                params: SearchParam::from_schema(&tool.input_schema),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_follow_the_catalogue() -> anyhow::Result<()> {
        let text = r#"[{"name": "Weather Server (free)", "description": "Weather data.",
            "tools": {"weather": {"server_name": "weather", "tools": [
                {"name": "get_weather", "description": "Now",
                 "inputSchema": {"properties": {"city": {"description": "City name"}}}}]}}}]"#;
        let docs = docs_of(&Catalog::parse(text, "inline", "default")?);
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].server, "Weather-Server-free");
        assert_eq!(docs[0].name, "get_weather");
        assert_eq!(docs[0].params[0].description, "City name");
        assert!(Corpus::path(Path::new("."), "nope").is_err());
        Ok(())
    }
}
