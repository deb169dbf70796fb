//! The time budget of a test (`--budget 30m`): a level starts only if it is expected to end
//! within the budget, so a test never overruns by more than one level's misjudged length.

use std::time::Duration;

/// Seconds a level costs beyond its measured phase: readiness, warm-up probes, the grace
/// for the last requests, writing the folder. A guess that is refined as levels run.
const DEFAULT_OVERHEAD_S: f64 = 5.0;

/// What is spent and what is left.
#[derive(Debug, Clone)]
pub struct Budget {
    /// `None`: unlimited.
    pub limit: Option<Duration>,
    spent_s: f64,
    /// Observed overhead per level (mean), s.
    overhead_s: f64,
    levels: u32,
}

impl Budget {
    pub fn new(limit: Option<Duration>) -> Self {
        Self {
            limit,
            spent_s: 0.0,
            overhead_s: DEFAULT_OVERHEAD_S,
            levels: 0,
        }
    }

    /// Seconds left (`None`: unlimited).
    pub fn left_s(&self) -> Option<f64> {
        self.limit
            .map(|l| (l.as_secs_f64() - self.spent_s).max(0.0))
    }

    pub fn spent_s(&self) -> f64 {
        self.spent_s
    }

    /// Expected length of a level whose measured phase lasts `measure_s`.
    pub fn expected_s(&self, measure_s: f64) -> f64 {
        measure_s + self.overhead_s
    }

    /// Whether a level expected to take `expected_s` fits: `Err((needed, left))` when not.
    pub fn admit(&self, expected_s: f64) -> Result<(), (f64, f64)> {
        match self.left_s() {
            Some(left) if expected_s > left => Err((expected_s, left)),
            _ => Ok(()),
        }
    }

    /// Records time spent outside levels (server start, readiness).
    pub fn spend(&mut self, seconds: f64) {
        self.spent_s += seconds.max(0.0);
    }

    /// Records a level that took `took_s` for a measured phase of `measure_s`.
    pub fn level_done(&mut self, took_s: f64, measure_s: f64) {
        self.spent_s += took_s.max(0.0);
        self.levels += 1;
        let overhead = (took_s - measure_s).max(0.0);
        self.overhead_s += (overhead - self.overhead_s) / self.levels as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_start_only_when_they_fit() {
        let mut b = Budget::new(Some(Duration::from_secs(100)));
        assert_eq!(b.expected_s(60.0), 65.0);
        assert!(b.admit(65.0).is_ok());
        b.level_done(70.0, 60.0);
        // Overhead learned: 10 s. 30 s left; a 60 s level needs 70.
        assert_eq!(b.left_s(), Some(30.0));
        assert_eq!(b.expected_s(60.0), 70.0);
        assert_eq!(b.admit(70.0), Err((70.0, 30.0)));
        assert!(b.admit(25.0).is_ok());
        let unlimited = Budget::new(None);
        assert!(unlimited.admit(1e9).is_ok());
    }
}
