//! A small seeded random number generator (SplitMix64), so a run's fault
//! schedule and client choices follow from the seed it prints. Not for
//! anything but tests.

/// SplitMix64: one `u64` of state, good enough to pick faults and pauses.
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> SeededRng {
        SeededRng(seed)
    }

    /// An independent generator for stream `n` (a client, the schedule).
    pub fn fork(&self, n: u64) -> SeededRng {
        let mut mixed = SeededRng(self.0 ^ n.wrapping_mul(0xA076_1D64_78BD_642F));
        SeededRng(mixed.next_u64())
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// A duration between `low_ms` and `high_ms` milliseconds.
    pub fn millis(&mut self, low_ms: u64, high_ms: u64) -> std::time::Duration {
        std::time::Duration::from_millis(low_ms + self.below(high_ms - low_ms + 1))
    }

    /// The elements of `items` in a random order.
    pub fn shuffled<T>(&mut self, mut items: Vec<T>) -> Vec<T> {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
        items
    }
}
