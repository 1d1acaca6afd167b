//! The best `k` scored documents, kept in a bounded heap; ties go to the lower
//! document index so that results are deterministic. [`SearchHit`], what every
//! ranker returns, is defined here, where hits are made.

use std::{
    cmp::{Ordering, Reverse},
    collections::BinaryHeap,
};

/// One document that matched a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHit {
    /// Index of the document in the slice the index was built from.
    pub doc: usize,
    /// How well the document matches. For [`super::SearchIndex`]: in `0..=1`, the
    /// share of the best score a tool could get for this query, query words
    /// that no tool knows counting as unmatched (so it is absolute, not
    /// relative to the first hit; 1 for a query that names the tool). On the
    /// real catalogues, above ~0.5 is a strong match and below ~0.15 a weak
    /// one. For [`super::Bm25Index`]: the raw BM25 score.
    pub score: f32,
}

/// Collects the `k` best hits of a query.
#[derive(Debug)]
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Ranked>>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1024) + 1),
        }
    }

    /// Offers a document; kept if it is among the best `k` so far.
    pub(crate) fn push(&mut self, doc: u32, score: f32) {
        if self.k == 0 || score.is_nan() {
            return;
        }
        let ranked = Ranked { score, doc };
        if self.heap.len() < self.k {
            self.heap.push(Reverse(ranked));
        } else if self
            .heap
            .peek()
            .is_some_and(|Reverse(worst)| ranked > *worst)
        {
            self.heap.pop();
            self.heap.push(Reverse(ranked));
        }
    }

    /// The kept hits, best first.
    pub(crate) fn into_hits(self) -> Vec<SearchHit> {
        // Ascending order of `Reverse` is descending order of rank.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse(r)| SearchHit {
                doc: r.doc as usize,
                score: r.score,
            })
            .collect()
    }
}

/// A scored document; greater is better.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    score: f32,
    doc: u32,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.doc.cmp(&self.doc))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

#[cfg(test)]
mod tests {
    use super::TopK;

    #[test]
    fn keeps_the_best_with_ties_to_the_lower_index() {
        let mut top = TopK::new(3);
        for (doc, score) in [(5, 1.0), (1, 3.0), (2, 1.0), (9, 2.0), (0, 1.0), (7, 0.5)] {
            top.push(doc, score);
        }
        let hits: Vec<(usize, f32)> = top
            .into_hits()
            .into_iter()
            .map(|h| (h.doc, h.score))
            .collect();
        assert_eq!(hits, [(1, 3.0), (9, 2.0), (0, 1.0)]);
    }

    #[test]
    fn zero_k_keeps_nothing() {
        let mut top = TopK::new(0);
        top.push(1, 1.0);
        assert!(top.into_hits().is_empty());
    }
}
