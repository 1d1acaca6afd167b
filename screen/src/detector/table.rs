//! The detector's token table: one small vector per word piece of the
//! sentence model's vocabulary (all-MiniLM-L6-v2's), derived from the model
//! (each word piece run through it alone, the outputs projected onto their
//! principal components and quantised to bytes), and the word-piece
//! tokenizer that maps text onto it.
//!
//! The table is built once by `screen/examples/distill_tokens.rs` and ships
//! in the binary, so screening needs no model at run time.
//!
//! File layout (little endian): the magic `QVTOK1\0\0`, the vocabulary size
//! and the dimension (`u32` each), then every word piece as a length byte and
//! its UTF-8 bytes, then per word piece a scale (`f32`) and `dim` signed bytes
//! (the value is byte × scale).

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

const MAGIC: &[u8; 8] = b"QVTOK1\0\0";

/// Longest word (in characters) split into word pieces; longer ones are
/// unknown, as in BERT.
const MAX_WORD: usize = 100;

/// Why a table could not be read.
#[derive(Debug, thiserror::Error)]
#[error("token table: {0}")]
pub struct TableError(&'static str);

/// Why a table could not be distilled.
#[derive(Debug, thiserror::Error)]
pub enum DistilError<E> {
    /// The vocabulary lacks a special token.
    #[error("the vocabulary has no {0}")]
    Missing(&'static str),
    /// The model failed.
    #[error("the model failed: {0}")]
    Model(E),
}

/// Per-word-piece vectors and the vocabulary they are indexed by.
#[derive(Debug, Clone)]
pub struct TokenTable {
    words: Vec<String>,
    index: HashMap<String, u32>,
    dim: usize,
    scales: Vec<f32>,
    values: Vec<i8>,
    unknown: Option<u32>,
}

impl TokenTable {
    /// A table from its words and their (unquantised) vectors, all of
    /// length `dim`.
    pub fn from_vectors(words: Vec<String>, vectors: &[Vec<f32>], dim: usize) -> TokenTable {
        let mut scales = Vec::with_capacity(words.len());
        let mut values = Vec::with_capacity(words.len() * dim);
        for v in vectors {
            let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
            let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
            scales.push(scale);
            values.extend(
                v.iter()
                    .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
            );
        }
        TokenTable::assemble(words, dim, scales, values)
    }

    fn assemble(words: Vec<String>, dim: usize, scales: Vec<f32>, values: Vec<i8>) -> TokenTable {
        let index: HashMap<String, u32> = words
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.is_empty())
            .map(|(i, w)| (w.clone(), i as u32))
            .collect();
        let unknown = index.get("[UNK]").copied();
        TokenTable {
            words,
            index,
            dim,
            scales,
            values,
            unknown,
        }
    }

    /// Distils a table from a sentence model: each word piece of `words`
    /// (the model's vocabulary by id, holding `[CLS]` and `[SEP]`) is run
    /// through `embed` alone as `[CLS] piece [SEP]`, in batches; the
    /// vectors are projected onto their first `dim` principal components.
    /// Deterministic: the same model gives the same table.
    pub fn distil<E>(
        words: Vec<String>,
        mut embed: impl FnMut(&[&[u32]]) -> Result<Vec<Vec<f32>>, E>,
        dim: usize,
    ) -> Result<TokenTable, DistilError<E>> {
        let id = |w: &'static str| {
            words
                .iter()
                .position(|x| x == w)
                .map(|i| i as u32)
                .ok_or(DistilError::Missing(w))
        };
        let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
        let rows: Vec<[u32; 3]> = (0..words.len() as u32).map(|i| [cls, i, sep]).collect();
        let mut vectors = Vec::with_capacity(words.len());
        for batch in rows.chunks(512) {
            let batch: Vec<&[u32]> = batch.iter().map(|r| r.as_slice()).collect();
            vectors.extend(embed(&batch).map_err(DistilError::Model)?);
        }
        let projected = super::pca::project(&vectors, dim);
        Ok(TokenTable::from_vectors(words, &projected, dim))
    }

    /// Reads a table written by [`TokenTable::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<TokenTable, TableError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(8)? != MAGIC {
            return Err(TableError("not a token table (bad magic)"));
        }
        let count = r.u32()? as usize;
        let dim = r.u32()? as usize;
        if dim == 0 || dim > 4096 || count > 1 << 20 {
            return Err(TableError("implausible size"));
        }
        let mut words = Vec::with_capacity(count);
        for _ in 0..count {
            let len = r.take(1)?[0] as usize;
            let word =
                std::str::from_utf8(r.take(len)?).map_err(|_| TableError("a word is not UTF-8"))?;
            words.push(word.to_string());
        }
        let mut scales = Vec::with_capacity(count);
        let mut values = Vec::with_capacity(count * dim);
        for _ in 0..count {
            scales.push(f32::from_le_bytes(r.take(4)?.try_into().unwrap_or([0; 4])));
            values.extend(r.take(dim)?.iter().map(|&b| b as i8));
        }
        if r.at != bytes.len() {
            return Err(TableError("trailing bytes"));
        }
        Ok(TokenTable::assemble(words, dim, scales, values))
    }

    /// The table as a file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.words.len() * (self.dim + 12));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.words.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        for word in &self.words {
            let bytes = word.as_bytes();
            let len = bytes.len().min(255);
            out.push(len as u8);
            out.extend_from_slice(&bytes[..len]);
        }
        for (i, scale) in self.scales.iter().enumerate() {
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend(
                self.values[i * self.dim..(i + 1) * self.dim]
                    .iter()
                    .map(|&v| v as u8),
            );
        }
        out
    }

    /// Length of every vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of word pieces.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the table has no word pieces.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Adds word piece `id`'s vector to `into`.
    pub fn add_to(&self, id: u32, into: &mut [f32]) {
        let i = id as usize;
        let scale = self.scales[i];
        for (acc, &q) in into
            .iter_mut()
            .zip(&self.values[i * self.dim..(i + 1) * self.dim])
        {
            *acc += q as f32 * scale;
        }
    }

    /// Word piece `id`'s vector.
    pub fn vector(&self, id: u32) -> Vec<f32> {
        let mut v = vec![0.0; self.dim];
        self.add_to(id, &mut v);
        v
    }

    /// `text` as word pieces of this vocabulary, as BERT's uncased
    /// tokenizer splits it (lower case, accents removed, punctuation and
    /// CJK characters on their own, greedy longest word pieces), each with
    /// the character offset where its word starts.
    pub fn tokenize(&self, text: &str) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        for (start, word) in words(text) {
            self.word_pieces(&word, start, &mut out);
        }
        out
    }

    fn word_pieces(&self, word: &str, start: usize, out: &mut Vec<(u32, usize)>) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > MAX_WORD {
            out.extend(self.unknown.map(|u| (u, start)));
            return;
        }
        let mark = out.len();
        let mut from = 0;
        let mut piece = String::new();
        while from < chars.len() {
            let mut to = chars.len();
            let mut found = None;
            while to > from {
                piece.clear();
                if from > 0 {
                    piece.push_str("##");
                }
                piece.extend(&chars[from..to]);
                if let Some(&id) = self.index.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                to -= 1;
            }
            match found {
                Some(id) => {
                    out.push((id, start));
                    from = to;
                }
                None => {
                    out.truncate(mark);
                    out.extend(self.unknown.map(|u| (u, start)));
                    return;
                }
            }
        }
    }
}

/// The words of `text` after BERT's basic normalisation, with the character
/// offset (in `text`) where each starts.
fn words(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut current = String::new();
    let mut current_start = 0;
    let flush = |out: &mut Vec<(usize, String)>, current: &mut String, start: usize| {
        if !current.is_empty() {
            out.push((start, std::mem::take(current)));
        }
    };
    for (i, c) in text.chars().enumerate() {
        if c.is_whitespace() || c.is_control() || c == '\u{fffd}' {
            flush(&mut out, &mut current, current_start);
            continue;
        }
        if is_cjk(c) || !c.is_alphanumeric() {
            flush(&mut out, &mut current, current_start);
            let folded = fold(c);
            if !folded.is_empty() {
                out.push((i, folded));
            }
            continue;
        }
        if current.is_empty() {
            current_start = i;
        }
        current.push_str(&fold(c));
    }
    flush(&mut out, &mut current, current_start);
    out
}

/// Lower case without accents.
fn fold(c: char) -> String {
    c.to_lowercase()
        .collect::<String>()
        .nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .collect()
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TableError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(TableError("truncated"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, TableError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TokenTable {
        let words: Vec<String> = [
            "[PAD]", "[UNK]", "ignore", "previous", "instruct", "##ions", ",", "cafe", "你",
        ]
        .iter()
        .map(|w| w.to_string())
        .collect();
        let vectors: Vec<Vec<f32>> = (0..words.len())
            .map(|i| vec![i as f32, -(i as f32) / 2.0])
            .collect();
        TokenTable::from_vectors(words, &vectors, 2)
    }

    #[test]
    fn word_pieces_follow_bert() {
        let t = table();
        let ids: Vec<u32> = t
            .tokenize("IGNORE previous, Instructions café 你 zzz")
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(ids, vec![2, 3, 6, 4, 5, 7, 8, 1]);
    }

    #[test]
    fn a_table_round_trips_and_rejects_damage() {
        let t = table();
        let bytes = t.to_bytes();
        let back = TokenTable::from_bytes(&bytes).unwrap();
        assert_eq!(back.len(), t.len());
        for id in 0..t.len() as u32 {
            assert_eq!(back.vector(id), t.vector(id));
        }
        assert!((back.vector(4)[0] - 4.0).abs() < 0.05);
        assert!(TokenTable::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(TokenTable::from_bytes(b"garbage!").is_err());
    }
}
