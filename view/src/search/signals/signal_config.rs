//! How much the signal store keeps and how fast what it learned fades. Plain
//! settings with documented defaults; the store reads them, nothing else.

/// Limits and rates of the store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignalConfig {
    /// Seconds after which a signal counts half. Default 14 days.
    pub half_life_secs: f64,
    /// Query → tool associations kept per tenant. Default 512.
    pub max_associations: usize,
    /// Recent searches a call can be matched to. Default 32.
    pub max_pending: usize,
    /// Distinct zero-hit queries kept per tenant. Default 128.
    pub max_zero_hit: usize,
    /// Tools with counts kept per tenant. Default 2048.
    pub max_tools: usize,
    /// Largest adjustment of a tool's score (scores are in `0..=1`). Default 0.15.
    pub max_adjustment: f32,
    /// A call is matched to a search at most this many seconds before it. Default 600.
    pub call_window_secs: u64,
}

impl Default for SignalConfig {
    fn default() -> Self {
        SignalConfig {
            half_life_secs: 14.0 * 86_400.0,
            max_associations: 512,
            max_pending: 32,
            max_zero_hit: 128,
            max_tools: 2048,
            max_adjustment: 0.15,
            call_window_secs: 600,
        }
    }
}
