//! A fixed-memory histogram of durations that many threads can record into at once.
//!
//! The client's hot path records how long received bytes waited in the socket before it
//! read them, once per read, from every worker thread: a lock or an allocation per read
//! would cost more than the figure is worth. Values go into log-linear buckets (each power
//! of two split into 16), so any percentile read back is within 1/16 = 6.25 % of the true
//! value (the bucket's upper edge is reported, so the figure never understates), in 4 KiB
//! of atomics whatever the run's length.

use std::sync::atomic::{AtomicU64, Ordering};

/// Sub-buckets per power of two (the relative error bound is 1/SUB).
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Powers of two covered above the exact range: up to 2^36 ns (68 s); longer values land
/// in the last bucket.
const OCTAVES: u32 = 32;
const BUCKETS: usize = (OCTAVES as usize + 1) * SUB as usize;

/// Relative error of a percentile read back (the bucket width over its lower edge).
pub const RELATIVE_ERROR: f64 = 1.0 / SUB as f64;

/// Durations in nanoseconds, counted into log-linear buckets.
pub struct LogHistogram {
    counts: Box<[AtomicU64]>,
    total: AtomicU64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        Self {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            total: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for LogHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LogHistogram(n={})", self.count())
    }
}

/// The bucket of `ns`: values below SUB are exact; above, the top SUB_BITS+1 bits.
fn bucket_of(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let ns = ns.min((1 << (OCTAVES + SUB_BITS)) - 1);
    let octave = 63 - ns.leading_zeros(); // SUB_BITS ..= OCTAVES + SUB_BITS - 1
    let shift = octave - SUB_BITS;
    let mantissa = ((ns >> shift) & (SUB - 1)) as usize;
    (shift as usize + 1) * SUB as usize + mantissa
}

/// The largest value that falls in bucket `i` (what a percentile reports).
fn upper_edge(i: usize) -> u64 {
    let sub = SUB as usize;
    if i < sub {
        return i as u64;
    }
    let shift = (i / sub - 1) as u32;
    let mantissa = (i % sub) as u64;
    ((SUB + mantissa + 1) << shift) - 1
}

impl LogHistogram {
    /// Counts one value.
    pub fn record(&self, ns: u64) {
        self.counts[bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// The `p`-th percentile (0–100), ns: the upper edge of the bucket holding the value of
    /// rank ceil(p/100 × n), so at most [`RELATIVE_ERROR`] above the true value and never
    /// below it. `None` when empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((p / 100.0 * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c.load(Ordering::Relaxed);
            if seen >= rank {
                return Some(upper_edge(i));
            }
        }
        Some(upper_edge(BUCKETS - 1))
    }

    /// Clears every count (between phases).
    pub fn reset(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
        self.total.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_buckets_tile_the_line() {
        for v in 0..SUB {
            assert_eq!(upper_edge(bucket_of(v)), v);
        }
        // Every value maps into a bucket whose upper edge is >= it and within 1/16.
        for v in [16u64, 17, 31, 32, 33, 1000, 1023, 1024, 999_999, 1 << 31] {
            let edge = upper_edge(bucket_of(v));
            assert!(edge >= v, "{v} -> {edge}");
            assert!(
                (edge - v) as f64 <= v as f64 * RELATIVE_ERROR,
                "{v} -> {edge}"
            );
        }
        // Consecutive buckets meet exactly: the lower edge of i+1 is the upper edge of i + 1.
        for i in SUB as usize..(BUCKETS - 2) {
            assert_eq!(bucket_of(upper_edge(i) + 1), i + 1, "bucket {i}");
        }
    }

    #[test]
    fn percentiles_bound_the_exact_ones() {
        let h = LogHistogram::default();
        // 1..=1000 µs: exact P50 is 500 µs, P99 990 µs (nearest rank).
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let p50 = h.percentile(50.0).unwrap() as f64;
        let p99 = h.percentile(99.0).unwrap() as f64;
        assert!(
            (500_000.0..=500_000.0 * (1.0 + RELATIVE_ERROR)).contains(&p50),
            "{p50}"
        );
        assert!(
            (990_000.0..=990_000.0 * (1.0 + RELATIVE_ERROR)).contains(&p99),
            "{p99}"
        );
        assert_eq!(h.count(), 1000);
        h.reset();
        assert_eq!(h.percentile(50.0), None);
    }
}
