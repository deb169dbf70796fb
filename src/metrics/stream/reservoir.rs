//! A uniform sample of a stream of unknown length, in fixed memory, seeded.
//!
//! A long run's charts and the figures that need a request's whole stream at once (the
//! fluidity distribution, fairness across classes, the ITL modes, the start-up transient)
//! are drawn from a sample of its measured requests. Vitter's algorithm R keeps each of
//! the first `capacity` items, then the i-th with probability capacity / i, replacing one
//! kept at random: every item ends in the sample with the same probability. The generator
//! is seeded, so the same records give the same sample.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The sample's seed: fixed, so a summary is reproducible from its records.
const SEED: u64 = 0x5e7e_b0a7;

/// At most `capacity` items, each of those offered equally likely to be among them.
#[derive(Debug, Clone)]
pub struct Reservoir<T> {
    capacity: usize,
    seen: u64,
    items: Vec<T>,
    rng: ChaCha8Rng,
}

impl<T> Reservoir<T> {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            seen: 0,
            items: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(SEED),
        }
    }

    /// Offers one item.
    pub fn offer(&mut self, item: T) {
        self.seen += 1;
        if self.items.len() < self.capacity {
            self.items.push(item);
            return;
        }
        let j = self.rng.random_range(0..self.seen);
        if (j as usize) < self.capacity {
            self.items[j as usize] = item;
        }
    }

    /// Items offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The sample, in no particular order.
    pub fn into_items(self) -> Vec<T> {
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_that_fits_then_samples_uniformly() {
        let mut r = Reservoir::new(10);
        (0..5).for_each(|i| r.offer(i));
        assert_eq!(r.clone().into_items(), vec![0, 1, 2, 3, 4]);
        // 1,000 offers of 0..1000, kept 100 at a time, 200 times: each value's share of
        // the samples is near 1/1000, the first tenth of the stream as likely as the last.
        let mut early = 0;
        for round in 0..200u64 {
            let mut r = Reservoir::new(100);
            r.rng = ChaCha8Rng::seed_from_u64(round);
            (0..1000).for_each(|i| r.offer(i));
            assert_eq!(r.seen(), 1000);
            early += r.into_items().iter().filter(|&&i| i < 100).count();
        }
        // Expected 200 × 100 × 0.1 = 2,000; binomial sd ≈ 42.
        assert!((1_800..=2_200).contains(&early), "{early}");
    }
}
