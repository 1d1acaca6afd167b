//! Tenant ids as small numbers ([`IdNames`]) and sets of them as bits
//! ([`IdSet`]): a read returns the whole set, so a history holds one set per
//! read, and a long run would not fit in memory as sets of strings.

use std::collections::HashMap;

/// A set of small numbers, one bit each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct IdSet {
    /// No trailing zero words, so equal sets are equal vectors.
    words: Vec<u64>,
}

impl IdSet {
    /// The empty set.
    pub fn new() -> IdSet {
        IdSet::default()
    }

    /// Whether `id` is in.
    pub fn contains(&self, id: u32) -> bool {
        let (word, bit) = (id as usize / 64, id % 64);
        self.words.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// Adds `id`; whether it was absent.
    pub fn insert(&mut self, id: u32) -> bool {
        let (word, bit) = (id as usize / 64, id % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        let fresh = self.words[word] & (1 << bit) == 0;
        self.words[word] |= 1 << bit;
        fresh
    }

    /// Takes `id` out.
    pub fn remove(&mut self, id: u32) {
        let (word, bit) = (id as usize / 64, id % 64);
        if let Some(w) = self.words.get_mut(word) {
            *w &= !(1 << bit);
        }
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// How many ids are in.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The ids, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, w)| {
            (0..64)
                .filter(move |bit| w & (1 << bit) != 0)
                .map(move |bit| (i * 64 + bit) as u32)
        })
    }

    /// The ids in `self` and not in `other`.
    pub fn difference(&self, other: &IdSet) -> IdSet {
        let mut words: Vec<u64> = self
            .words
            .iter()
            .enumerate()
            .map(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0))
            .collect();
        while words.last() == Some(&0) {
            words.pop();
        }
        IdSet { words }
    }

    /// The smallest number from `from` on that is not in the set.
    pub fn first_absent_from(&self, from: u32) -> u32 {
        (from..).find(|id| !self.contains(*id)).unwrap_or(u32::MAX)
    }

    /// A compact key for a set known to hold every number below `lowest_absent`:
    /// the words from the one holding `lowest_absent` on (those before are all
    /// ones), so a long run's memo holds small keys.
    pub fn key_above(&self, lowest_absent: u32) -> (u32, Vec<u64>) {
        let start = lowest_absent as usize / 64;
        (
            start as u32,
            self.words.get(start..).unwrap_or_default().to_vec(),
        )
    }
}

impl FromIterator<u32> for IdSet {
    fn from_iter<T: IntoIterator<Item = u32>>(ids: T) -> IdSet {
        let mut set = IdSet::new();
        for id in ids {
            set.insert(id);
        }
        set
    }
}

/// Names ↔ numbers, in the order names were first met.
#[derive(Debug, Clone, Default)]
pub struct IdNames {
    index: HashMap<String, u32>,
    names: Vec<String>,
}

impl IdNames {
    /// No names yet.
    pub fn new() -> IdNames {
        IdNames::default()
    }

    /// The number of `name`, given a fresh one the first time.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.index.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.index.insert(name.to_string(), id);
        self.names.push(name.to_string());
        id
    }

    /// The name of number `id`.
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("?", String::as_str)
    }

    /// The set of these names' numbers (interning new ones).
    pub fn set_of<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) -> IdSet {
        names.into_iter().map(|n| self.intern(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_compare_by_content_and_keys_skip_the_full_prefix() {
        let mut a: IdSet = [1, 70, 130].into_iter().collect();
        let b: IdSet = [1, 70].into_iter().collect();
        assert_ne!(a, b);
        a.remove(130);
        assert_eq!(a, b, "trailing empty words do not count");
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 70]);
        assert_eq!(a.len(), 2);

        let full: IdSet = (0..130).chain([140]).collect();
        assert_eq!(full.first_absent_from(0), 130);
        assert_eq!(full.first_absent_from(131), 131);
        let (start, tail) = full.key_above(130);
        assert_eq!(start, 2);
        assert_eq!(tail, vec![((1u64 << 2) - 1) | (1 << 12)]);
    }
}
