//! Per-thread score accumulators, reused across queries so that a query
//! allocates nothing in proportion to the corpus. Only the entries a query
//! touched are reset afterwards.

use std::cell::RefCell;

/// Dense accumulators indexed by document, plus the lists of touched documents.
#[derive(Debug, Default)]
pub(crate) struct ScoreScratch {
    /// Accumulated score per document.
    pub(crate) score: Vec<f32>,
    /// Accumulated query coverage per document.
    pub(crate) coverage: Vec<f32>,
    /// Best contribution of the current query concept per document.
    pub(crate) best: Vec<f32>,
    /// Share of the concept covered by that best contribution (no reset
    /// needed: it is only read where `best` is set).
    pub(crate) best_share: Vec<f32>,
    /// Documents with a non-zero `score`/`coverage`.
    pub(crate) touched: Vec<u32>,
    /// Documents with a non-zero `best`.
    pub(crate) touched_now: Vec<u32>,
}

impl ScoreScratch {
    /// Runs `f` with this thread's scratch, grown to at least `docs` entries
    /// and clean (a query that panicked midway is cleaned up here).
    pub(crate) fn with<R>(docs: usize, f: impl FnOnce(&mut ScoreScratch) -> R) -> R {
        thread_local! {
            static SCRATCH: RefCell<ScoreScratch> = RefCell::new(ScoreScratch::default());
        }
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                scratch.reset();
                scratch.grow(docs);
                f(&mut scratch)
            }
            // Re-entered from inside `f` (not done today): use a fresh one.
            Err(_) => {
                let mut scratch = ScoreScratch::default();
                scratch.grow(docs);
                f(&mut scratch)
            }
        })
    }

    fn grow(&mut self, docs: usize) {
        if self.score.len() < docs {
            self.score.resize(docs, 0.0);
            self.coverage.resize(docs, 0.0);
            self.best.resize(docs, 0.0);
            self.best_share.resize(docs, 0.0);
        }
    }

    /// Zeroes every touched entry.
    pub(crate) fn reset(&mut self) {
        for &doc in &self.touched {
            self.score[doc as usize] = 0.0;
            self.coverage[doc as usize] = 0.0;
        }
        for &doc in &self.touched_now {
            self.best[doc as usize] = 0.0;
        }
        self.touched.clear();
        self.touched_now.clear();
    }
}
