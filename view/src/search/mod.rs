//! Tool search: ranks the tools of a view for a natural-language query
//! ("create a github issue", "查询天气"). It owns text analysis and ranking
//! only; which tools a tenant may see is decided before an index is built, and
//! the caller swaps indexes when the manifest or view changes.
//!
//! [`SearchIndex`] is our ranking; [`Bm25Index`] is the plain BM25 baseline it
//! is measured against ([`eval`]: labelled queries over real catalogues in
//! `tests/data/search/queries.json`), and [`bench`](mod@bench) times both at catalogue
//! sizes up to ~10,000 tools.
//!
//! How a query is ranked, in short:
//! - text is split into words (tool names on `_ - .`, camelCase and digits,
//!   keeping the whole word too), Chinese into character unigrams and
//!   bigrams; stopwords go, English words are stemmed (Snowball);
//! - each query word becomes a *concept*: the word plus its counterparts from
//!   a hand-written Chinese↔English table at a lower weight; a tool scores the best member of each concept, by BM25F over its
//!   name, description (and its first sentence), parameters and server;
//! - tools covering more of the query (IDF-weighted) keep more of their score,
//!   and names made of query words, queries naming a tool, and identifiers
//!   naming a parameter (`repo_path`) earn bonuses.

pub mod adapter;
mod analyzer;
pub mod bench;
mod bm25;
pub mod corpus;
mod doc;
pub mod embedder;
pub mod eval;
mod hybrid;
mod index;
mod score_scratch;
pub mod semantic;
pub mod signals;
mod stemmer;
mod stopwords;
mod synonyms;
mod tokenizer;
mod top_k;
pub mod vector_cache;

pub use adapter::{AdapterError, QueryAdapter};
pub use analyzer::Analyzer;
pub use bm25::Bm25Index;
pub use doc::{SearchDoc, SearchParam};
pub use embedder::{Embedder, EmbedderError};
pub use hybrid::{Blend, HybridIndex};
pub use index::{SearchIndex, Subset};
pub use semantic::{SemanticModel, SemanticModelError};
pub use signals::{SignalConfig, SignalStore, TenantStats};
pub use stemmer::stem;
pub use stopwords::is_stopword;
pub use synonyms::SynonymTable;
pub use tokenizer::{TokenKind, Tokenizer};
pub use top_k::SearchHit;
