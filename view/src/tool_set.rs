//! A set of manifest tools as a bitset with a rank directory: what a view
//! keeps of its own. A view of 10,000 tools costs about 2 KiB here, whatever
//! share of the catalogue it sees, and answers "is tool i visible", "how many
//! visible tools come before i" and "which is the k-th visible tool" without
//! a list of its members. It knows nothing of manifests or policies.

use std::fmt;

/// Manifest indices `0..universe`, some of them members.
///
/// ```
/// use quiver_view::ToolSet;
/// let set = ToolSet::from_sorted(10, [1, 4, 9]);
/// assert!(set.contains(4) && !set.contains(5));
/// assert_eq!(set.rank(9), 2);
/// assert_eq!(set.select(2), Some(9));
/// assert_eq!(set.iter().collect::<Vec<_>>(), [1, 4, 9]);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ToolSet {
    words: Box<[u64]>,
    /// Members in the words before each word (derived from `words`).
    before: Box<[u32]>,
    len: usize,
    universe: usize,
}

impl ToolSet {
    /// Every index of `0..universe`.
    pub fn full(universe: usize) -> ToolSet {
        ToolSet::from_sorted(universe, 0..universe)
    }

    /// No index of `0..universe`.
    pub fn empty(universe: usize) -> ToolSet {
        ToolSet::from_sorted(universe, std::iter::empty())
    }

    /// The given indices (each below `universe`; order and repeats do not
    /// matter, indices out of range are ignored).
    pub fn from_sorted(universe: usize, members: impl IntoIterator<Item = usize>) -> ToolSet {
        let mut words = vec![0u64; universe.div_ceil(64)];
        for i in members {
            if i < universe {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        ToolSet::from_words(universe, words)
    }

    /// The set whose membership is `words` (bit `i % 64` of word `i / 64`).
    pub(crate) fn from_words(universe: usize, mut words: Vec<u64>) -> ToolSet {
        words.resize(universe.div_ceil(64), 0);
        if !universe.is_multiple_of(64)
            && let Some(last) = words.last_mut()
        {
            *last &= (1u64 << (universe % 64)) - 1;
        }
        let mut before = Vec::with_capacity(words.len());
        let mut len = 0usize;
        for word in &words {
            before.push(len as u32);
            len += word.count_ones() as usize;
        }
        ToolSet {
            words: words.into_boxed_slice(),
            before: before.into_boxed_slice(),
            len,
            universe,
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether every index of the universe is a member.
    pub fn is_full(&self) -> bool {
        self.len == self.universe
    }

    /// The size of the universe (the manifest's tool count).
    pub fn universe(&self) -> usize {
        self.universe
    }

    /// Whether `i` is a member.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Members below `i`: the position of member `i` among the members.
    pub fn rank(&self, i: usize) -> usize {
        let word = i / 64;
        match self.words.get(word) {
            Some(w) => {
                let below = w & ((1u64 << (i % 64)) - 1);
                self.before[word] as usize + below.count_ones() as usize
            }
            None => self.len,
        }
    }

    /// The member at position `k` (0-based), if there are more than `k`.
    pub fn select(&self, k: usize) -> Option<usize> {
        if k >= self.len {
            return None;
        }
        // The last word with fewer than k+1 members before it holds it.
        let word = self.before.partition_point(|&b| b as usize <= k) - 1;
        let mut w = self.words[word];
        for _ in 0..k - self.before[word] as usize {
            w &= w - 1;
        }
        Some(word * 64 + w.trailing_zeros() as usize)
    }

    /// The members, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            let mut w = word;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(i * 64 + bit)
            })
        })
    }

    /// The members within `range`, ascending.
    pub fn iter_range(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = usize> + '_ {
        range.filter(|&i| self.contains(i))
    }

    /// Members of both this set and the set whose words are `other`.
    pub(crate) fn count_common(&self, other: &[u64]) -> usize {
        self.words
            .iter()
            .zip(other)
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum()
    }

    /// Whether this set and `other` share a member.
    pub(crate) fn meets_set(&self, other: &ToolSet) -> bool {
        self.meets(&other.words)
    }

    /// Whether this set and the set whose words are `other` share a member.
    pub(crate) fn meets(&self, other: &[u64]) -> bool {
        self.words.iter().zip(other).any(|(a, b)| a & b != 0)
    }

    /// Heap bytes this set holds.
    pub fn heap_bytes(&self) -> usize {
        self.words.len() * 8 + self.before.len() * 4
    }
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ToolSet({} of {})", self.len, self.universe)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn rank_select_and_iteration_agree_with_a_plain_list(
            universe in 0usize..300,
            picks in proptest::collection::vec(any::<u16>(), 0..200),
        ) {
            let mut members: Vec<usize> = picks
                .iter()
                .filter(|_| universe > 0)
                .map(|&p| p as usize % universe.max(1))
                .collect();
            members.sort_unstable();
            members.dedup();
            let set = ToolSet::from_sorted(universe, members.iter().copied());
            prop_assert_eq!(set.len(), members.len());
            prop_assert_eq!(set.iter().collect::<Vec<_>>(), members.clone());
            for (k, &m) in members.iter().enumerate() {
                prop_assert_eq!(set.select(k), Some(m));
                prop_assert_eq!(set.rank(m), k);
            }
            prop_assert_eq!(set.select(members.len()), None);
            for i in 0..universe {
                prop_assert_eq!(set.contains(i), members.binary_search(&i).is_ok());
            }
            prop_assert_eq!(set.rank(universe), members.len());
        }
    }

    #[test]
    fn full_and_empty_sets() {
        let full = ToolSet::full(130);
        assert!(full.is_full());
        assert_eq!(full.len(), 130);
        assert_eq!(full.select(129), Some(129));
        assert!(!full.contains(130));
        let empty = ToolSet::empty(130);
        assert!(empty.is_empty());
        assert_eq!(empty.select(0), None);
        // Bits beyond the universe never count.
        let clipped = ToolSet::from_words(3, vec![u64::MAX]);
        assert_eq!(clipped.len(), 3);
        assert_eq!(ToolSet::from_words(3, vec![0b111]), clipped);
    }
}
