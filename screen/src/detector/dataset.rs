//! The data the detector is trained and judged on, read from the repo:
//! the screening corpus (`screen/corpus`: poisoned and benign definitions
//! from four public sources, split by group) and public tool catalogues
//! nobody here wrote (`tests/data/search/public/*/tools.json`), whose tools
//! are benign.

use std::{collections::HashSet, path::Path};

use quiver_proto::{ToolDef, catalog::Catalog};
use serde_json::Value;

use super::{Detector, TokenTable, pieces_of, train::Example};
use crate::text;

/// One labelled definition.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its id in the corpus (or `catalogue/server/tool`).
    pub id: String,
    /// Where it came from (`msb`, `cisco`, …, or the catalogue's name).
    pub source: String,
    /// Cases from one file, template, goal or server.
    pub group: String,
    /// `train` or `test` (catalogue tools are all `train`).
    pub split: String,
    /// The attack (`description-injection`, …), `None` when benign.
    pub attack: Option<String>,
    /// The definition.
    pub tool: ToolDef,
}

impl Case {
    /// Whether it is poisoned.
    pub fn poisoned(&self) -> bool {
        self.attack.is_some()
    }

    /// Whether it is a tool an MCP server serves (the corpus's, the real
    /// catalogues' and azure-mcp's), not an API or plugin description or a
    /// text.
    pub fn from_mcp_server(&self) -> bool {
        matches!(
            self.source.as_str(),
            "cisco" | "getmcpm" | "msb" | "mcpsecbench" | "azure-mcp" | "livemcpbench" | "oslook"
        )
    }

    /// Whether what makes it poisoned is text a model reads: hidden
    /// characters alone and a schema that disagrees with its docstring are
    /// the rules' to find, not the detector's.
    pub fn textual(&self) -> bool {
        !matches!(
            self.attack.as_deref(),
            Some("hidden-characters" | "schema-inconsistency")
        )
    }
}

/// Why a data file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not the JSON its file holds.
    #[error("{path}, line {line}: {source}")]
    Line {
        /// The file.
        path: String,
        /// Its line, from 1.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A tool catalogue could not be loaded.
    #[error("{path}: {source}")]
    Catalogue {
        /// The file.
        path: String,
        /// Why.
        source: quiver_proto::catalog::CatalogError,
    },
}

/// Reads `path` whole.
fn read(path: &Path) -> Result<String, DataError> {
    std::fs::read_to_string(path).map_err(|source| DataError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Parses line `index` (from 0) of `path`.
fn parse_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    index: usize,
    value: impl FnOnce() -> serde_json::Result<T>,
) -> Result<T, DataError> {
    value().map_err(|source| DataError::Line {
        path: path.display().to_string(),
        line: index + 1,
        source,
    })
}

/// Loads the tool catalogue at `path`.
fn load_catalogue(path: &Path, name: &str) -> Result<Catalog, DataError> {
    Catalog::load(path, name).map_err(|source| DataError::Catalogue {
        path: path.display().to_string(),
        source,
    })
}

/// The cases of one corpus file (`poisoned.jsonl`, `benign.jsonl` or
/// `paraphrased.jsonl`).
pub fn corpus_file(path: &Path) -> Result<Vec<Case>, DataError> {
    let text = read(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: Value = parse_line(path, i, || serde_json::from_str(line))?;
        let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let tool: ToolDef = parse_line(path, i, || serde_json::from_value(v["tool"].clone()))?;
        let group = match v["group"].as_str() {
            Some(g) => g.to_string(),
            None => field("of"),
        };
        out.push(Case {
            id: field("id"),
            source: field("source"),
            group,
            split: v["split"].as_str().unwrap_or("test").to_string(),
            attack: v["attack"].as_str().map(str::to_string),
            tool,
        });
    }
    Ok(out)
}

/// The public catalogues whose tools are benign training data.
pub const CATALOGUES: [&str; 5] = [
    "seal-tools",
    "metatool",
    "azure-mcp",
    "apibench-huggingface",
    "apibench-torchhub",
];

/// The tools of the public catalogue `name` under `dir`
/// (`dir/<name>/tools.json`), one group per server.
pub fn catalogue(dir: &Path, name: &str) -> Result<Vec<Case>, DataError> {
    let path = dir.join(name).join("tools.json");
    let catalog = load_catalogue(&path, name)?;
    Ok(catalog
        .servers
        .into_iter()
        .flat_map(|server| {
            let group = format!("{name}/{}", server.id);
            server.tools.into_iter().map(move |tool| Case {
                id: format!("{group}/{}", tool.name),
                source: name.to_string(),
                group: group.clone(),
                split: "train".into(),
                attack: None,
                tool,
            })
        })
        .collect())
}

/// Prompt-injection texts and look-alike benign requests
/// (`screen/corpus/injections/bastioncorpus.jsonl`, MIT): each text, and
/// its stated intent in other words, as the description of a nameless
/// definition; malicious rows are poisoned (`attack` is their category).
pub fn injections(path: &Path) -> Result<Vec<Case>, DataError> {
    let text = read(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: Value = parse_line(path, i, || serde_json::from_str(line))?;
        let id = v["id"].as_str().unwrap_or_default();
        let attack = (v["label"] == "malicious")
            .then(|| v["category"].as_str().unwrap_or("injection").to_string());
        for key in ["text", "intent"] {
            let Some(said) = v[key].as_str().filter(|t| !t.is_empty()) else {
                continue;
            };
            let tool: ToolDef = parse_line(path, i, || {
                serde_json::from_value(serde_json::json!({
                    "name": "",
                    "description": said,
                    "inputSchema": {"type": "object"}
                }))
            })?;
            out.push(Case {
                id: format!("bastioncorpus/{id}/{key}"),
                source: "bastioncorpus".into(),
                group: format!("bastioncorpus/{id}"),
                split: "train".into(),
                attack: attack.clone(),
                tool,
            });
        }
    }
    Ok(out)
}

/// The real MCP tools in `root/examples/catalogs` (LiveMCPBench and oslook,
/// the same files as `../shared/datasets`), one group per server, split by
/// server as the corpus is (`test` when the first hex digit of the SHA-256
/// of the group is below 8): the train half teaches the detector what real
/// servers say to models; the test half is the blind false-positive figure.
pub fn real_tools(root: &Path) -> Result<Vec<Case>, DataError> {
    let mut out = Vec::new();
    for (file, name) in [
        ("examples/catalogs/livemcpbench/tools.json", "livemcpbench"),
        (
            "examples/catalogs/oslook-mcp-servers-schemas/schemas_by_server.json",
            "oslook",
        ),
    ] {
        let path = root.join(file);
        let catalog = load_catalogue(&path, name)?;
        for server in catalog.servers {
            let group = format!("{name}/{}", server.id);
            let split = split_of(&group);
            for tool in server.tools {
                out.push(Case {
                    id: format!("{group}/{}", tool.name),
                    source: name.to_string(),
                    group: group.clone(),
                    split: split.to_string(),
                    attack: None,
                    tool,
                });
            }
        }
    }
    Ok(out)
}

/// The corpus's split rule: `test` when the first hex digit of the SHA-256
/// of `group` is below 8.
pub fn split_of(group: &str) -> &'static str {
    if super::hex_sha256(group.as_bytes()).as_bytes()[0] < b'8' {
        "test"
    } else {
        "train"
    }
}

/// What the shipped classifier is trained on, from the repo's root:
/// the corpus's train split (poisoned cases whose poison is text, and every
/// benign one), the injection texts, the train half of the real MCP tools
/// and every public catalogue's tools.
pub fn training_cases(root: &Path) -> Result<Vec<Case>, DataError> {
    let corpus = root.join("screen/corpus");
    let mut cases: Vec<Case> = corpus_file(&corpus.join("poisoned.jsonl"))?
        .into_iter()
        .chain(corpus_file(&corpus.join("benign.jsonl"))?)
        .filter(|c| c.split == "train" && c.textual())
        .collect();
    cases.extend(injections(&corpus.join("injections/bastioncorpus.jsonl"))?);
    cases.extend(real_tools(root)?.into_iter().filter(|c| c.split == "train"));
    let public = root.join("tests/data/search/public");
    for name in CATALOGUES {
        cases.extend(catalogue(&public, name)?);
    }
    Ok(cases)
}

/// Pieces of one definition: each one's text and vector.
pub type PieceTexts = Vec<(String, Vec<f32>)>;

/// The text of every scored piece of `tool` (as [`pieces`] cuts it over
/// `table`), trimmed, with its vector.
pub fn piece_texts(table: &TokenTable, tool: &ToolDef) -> PieceTexts {
    let mut out = Vec::new();
    let mut pieces = Vec::new();
    for (i, field) in text::fields(tool).iter().enumerate() {
        pieces.clear();
        pieces_of(table, i, &field.text, &mut pieces);
        out.extend(pieces.drain(..).map(|p| {
            let said: String = field
                .text
                .chars()
                .skip(p.start)
                .take(p.end - p.start)
                .collect();
            (said.trim().to_string(), p.vector)
        }));
    }
    out
}

/// The training examples of `cases` over `table`.
pub fn examples(table: &TokenTable, cases: &[Case]) -> Vec<Example> {
    let pieces: Vec<PieceTexts> = cases.iter().map(|c| piece_texts(table, &c.tool)).collect();
    examples_from(cases, pieces)
}

/// Training examples from each case's pieces (text and vector, however the
/// vector was made). A poisoned definition's piece whose text is also in a
/// benign definition (a server's own description, left as it was when the
/// poison was added) cannot be what poisons it and is left out of its
/// example.
pub fn examples_from(cases: &[Case], pieces: Vec<PieceTexts>) -> Vec<Example> {
    let benign: HashSet<String> = cases
        .iter()
        .zip(&pieces)
        .filter(|(c, _)| !c.poisoned())
        .flat_map(|(_, p)| p.iter().map(|(t, _)| t.to_lowercase()))
        .collect();
    cases
        .iter()
        .zip(pieces)
        .map(|(c, all)| {
            let keep = |t: &String| !c.poisoned() || !benign.contains(&t.to_lowercase());
            let kept: PieceTexts = if all.iter().any(|(t, _)| keep(t)) {
                all.into_iter().filter(|(t, _)| keep(t)).collect()
            } else {
                all
            };
            // Identical pieces (a repeated property description) count once:
            // only the highest piece matters.
            let mut vectors: Vec<Vec<f32>> = Vec::new();
            for (_, v) in kept {
                if !vectors.contains(&v) {
                    vectors.push(v);
                }
            }
            Example {
                pieces: vectors,
                poisoned: c.poisoned(),
                group: c.group.clone(),
                mcp: c.from_mcp_server(),
            }
        })
        .collect()
}

/// Whether `detector` holds `case` back on its own (a high finding).
pub fn held(detector: &Detector, case: &Case) -> bool {
    detector.score(&case.tool) >= detector.classifier().high
}
