//! SHA-256 hashes of stubs: per tool, per server, per manifest version.
//!
//! A tool's hash is the SHA-256 of its rendered declaration; a server's and a
//! manifest's hash combine the ordered hashes below them under a domain tag, so the
//! empty list has a defined hash and a combined hash never equals a leaf hash of
//! the same bytes.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`: Quiver's one way to take a SHA-256 (through
/// `sha2`), for digests of tokens, keys and names as well as of stubs.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Prefix of every [`StubHash::combine`] input.
const COMBINE_TAG: &[u8] = b"quiver.stubhash.v1\n";

/// A SHA-256 digest, shown as lowercase hex.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StubHash(pub [u8; 32]);

impl StubHash {
    /// The hash of `bytes`.
    ///
    /// ```
    /// use quiver_proto::StubHash;
    /// assert_eq!(
    ///     StubHash::of(b"").to_hex(),
    ///     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// );
    /// ```
    pub fn of(bytes: &[u8]) -> Self {
        StubHash(sha256(bytes))
    }

    /// The hash of an ordered sequence of hashes (a server's tools, a manifest's
    /// servers): SHA-256 of `quiver.stubhash.v1\n` followed by each part's 32 bytes.
    pub fn combine<'a>(parts: impl IntoIterator<Item = &'a StubHash>) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(COMBINE_TAG);
        for part in parts {
            hasher.update(part.0);
        }
        StubHash(hasher.finalize().into())
    }

    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for StubHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for StubHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StubHash({})", self.to_hex())
    }
}

/// Why a string is not a [`StubHash`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseStubHashError {
    /// The text is not 64 characters long.
    #[error("a stub hash is 64 hex characters, got {0} characters")]
    Length(usize),
    /// The text has a character that is not a hex digit.
    #[error("a stub hash is hex: {0}")]
    Hex(#[from] hex::FromHexError),
}

impl FromStr for StubHash {
    type Err = ParseStubHashError;

    /// Parses 64 hex digits (either case).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.len() != 64 {
            return Err(ParseStubHashError::Length(text.chars().count()));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes)?;
        Ok(StubHash(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_is_plain_sha256() {
        assert_eq!(
            StubHash::of(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn combine_is_tagged_and_ordered() {
        let a = StubHash::of(b"a");
        let b = StubHash::of(b"b");
        let empty = StubHash::combine([]);
        assert_eq!(empty, StubHash::of(COMBINE_TAG));
        assert_ne!(StubHash::combine([&a, &b]), StubHash::combine([&b, &a]));
        assert_ne!(StubHash::combine([&a]), a);
        let mut concatenated = COMBINE_TAG.to_vec();
        concatenated.extend_from_slice(&a.0);
        concatenated.extend_from_slice(&b.0);
        assert_eq!(StubHash::combine([&a, &b]), StubHash::of(&concatenated));
    }

    #[test]
    fn hex_round_trips() {
        let hash = StubHash::of(b"round trip");
        assert_eq!(hash.to_hex().parse::<StubHash>(), Ok(hash));
        assert_eq!(hash.to_hex().to_uppercase().parse::<StubHash>(), Ok(hash));
        assert_eq!(format!("{hash}"), hash.to_hex());
        assert_eq!(format!("{hash:?}"), format!("StubHash({})", hash.to_hex()));
    }

    #[test]
    fn bad_hex_is_rejected() {
        assert_eq!(
            "abc".parse::<StubHash>(),
            Err(ParseStubHashError::Length(3))
        );
        let wrong_char = format!("{}g", "0".repeat(63));
        assert!(matches!(
            wrong_char.parse::<StubHash>(),
            Err(ParseStubHashError::Hex(_))
        ));
        // 64 bytes but not 64 characters: rejected without slicing mid-character.
        let multibyte = "é".repeat(32);
        assert!(multibyte.parse::<StubHash>().is_err());
    }
}
