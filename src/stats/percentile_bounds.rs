//! How far a percentile of one run can be trusted: a confidence interval on each reported
//! percentile, with no assumption on the shape of the distribution.
//!
//! Two constructions, one per kind of sample:
//!
//! * **Independent values** (one TTFT, TPOT or end-to-end latency per request): the
//!   interval between two order statistics. If `K` is the number of values below the true
//!   `p`-quantile ξ, then `K ~ Binomial(n, p)` whatever the distribution, and
//!   `P(X(l) ≤ ξ < X(u)) = F(u−1) − F(l−1)` with `F` the binomial CDF. The lower rank is the
//!   largest `l` with `F(l−1) ≤ α/2`, the upper the smallest `u` with `F(u−1) ≥ 1 − α/2`,
//!   so each side misses at most α/2 of the time (the classic distribution-free interval;
//!   e.g. Hahn and Meeker, *Statistical Intervals*, section 5.2). When no rank qualifies the
//!   side is open: 200 requests bound their P99.9 from below only.
//! * **Values that share their moment or their request** (a batching server: every
//!   sequence in a step waits for the same step, so a slow step lengthens one token of
//!   every running request at once; the tokens of one request share its prompt and pace;
//!   requests sent in a burst share the queue). Woodruff's interval (Woodruff 1952,
//!   "Confidence intervals for medians and other position measures", JASA 47): an interval
//!   on the share of values at or below the estimate, mapped back through the sample's
//!   order statistics. The share's variance is the two-way cluster variance (requests and
//!   blocks of time as the clusters; Cameron, Gelbach and Miller 2011, "Robust inference
//!   with multiway clustering"), never below the independent one, so a mix that happens to
//!   look anti-correlated never narrows the interval; the share's interval is Clopper–
//!   Pearson's at the effective sample size that variance implies (Korn and Graubard 1998),
//!   which stays honest when a tail rests on a handful of clusters. Per-request figures take
//!   the wider of this and the order-statistic interval.
//!
//! Pure: no I/O, no randomness.

use super::dist::{beta_quantile, reg_inc_beta};
use super::distribution::percentile_sorted;
use serde::{Deserialize, Serialize};

/// The confidence of the bounds when none is asked for (`--confidence`).
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// The percentiles a summary reports and bounds (0–100).
pub const REPORTED_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

/// A two-sided interval on one percentile, in the sample's unit. A side is `None` when the
/// sample is too small to bound it at the confidence asked (open).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bound {
    /// Lower bound, in the sample's unit; `null` (JSON) when the sample cannot bound it.
    pub lo: Option<f64>,
    /// Upper bound, in the sample's unit; `null` (JSON) when the sample cannot bound it (a
    /// P99 of fewer than 368 requests at 95 %).
    pub hi: Option<f64>,
}

impl Bound {
    /// The interval's width relative to `estimate` (`None` when a side is open or the
    /// estimate is not positive).
    pub fn relative_width(&self, estimate: f64) -> Option<f64> {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) if estimate > 0.0 => Some((hi - lo) / estimate),
            _ => None,
        }
    }

    /// Whether the interval lies within ±`share` of `estimate` (both sides closed).
    pub fn within(&self, estimate: f64, share: f64) -> bool {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => {
                lo >= estimate * (1.0 - share) && hi <= estimate * (1.0 + share)
            }
            _ => false,
        }
    }

    /// Whether `value` lies inside the interval (an open side holds everything beyond).
    pub fn covers(&self, value: f64) -> bool {
        self.lo.is_none_or(|lo| lo <= value) && self.hi.is_none_or(|hi| value <= hi)
    }
}

/// Bounds on the reported percentiles of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PercentileBounds {
    pub p50: Bound,
    pub p90: Bound,
    pub p95: Bound,
    pub p99: Bound,
    pub p999: Bound,
}

impl PercentileBounds {
    /// The bound of reported percentile `percentile` (one of [`REPORTED_PERCENTILES`]).
    pub fn at(&self, percentile: f64) -> Option<Bound> {
        let i = REPORTED_PERCENTILES
            .iter()
            .position(|&p| (p - percentile).abs() < 1e-9)?;
        Some([self.p50, self.p90, self.p95, self.p99, self.p999][i])
    }

    /// Bounds from independent values, sorted ascending ([module documentation](self)).
    pub fn independent(sorted: &[f64], confidence: f64) -> Option<Self> {
        if sorted.is_empty() {
            return None;
        }
        let b = |p: f64| independent(sorted, p, confidence);
        Some(Self::from_fn(b))
    }

    /// Bounds from values clustered by request and by block of time, with `sorted` the
    /// values sorted ascending ([module documentation](self)).
    pub fn two_way(sorted: &[f64], values: &[Clustered], confidence: f64) -> Option<Self> {
        if sorted.is_empty() {
            return None;
        }
        let clusters = Clusters::of(values);
        // Each percentile's design effect (values per effective one) is at least that of
        // every less extreme percentile: a tail is as clustered as the body it lies beyond
        // (a slow step that sets the P99 of the gaps hits every running request, and so do
        // the rarer, slower ones that set the P99.9, which a short run may not have seen
        // at all and so cannot measure the clustering of).
        let mut design_effect = 1.0_f64;
        let bounds = REPORTED_PERCENTILES.map(|p| {
            let (bound, effect) = two_way_of(sorted, &clusters, p, confidence, design_effect);
            design_effect = design_effect.max(effect);
            bound
        });
        let [p50, p90, p95, p99, p999] = bounds;
        Some(Self {
            p50,
            p90,
            p95,
            p99,
            p999,
        })
    }

    /// Each side the further of two bounds' (a side open in either is open).
    pub fn widest(self, other: Self) -> Self {
        let w = |a: Bound, b: Bound| Bound {
            lo: a.lo.zip(b.lo).map(|(x, y)| x.min(y)),
            hi: a.hi.zip(b.hi).map(|(x, y)| x.max(y)),
        };
        Self {
            p50: w(self.p50, other.p50),
            p90: w(self.p90, other.p90),
            p95: w(self.p95, other.p95),
            p99: w(self.p99, other.p99),
            p999: w(self.p999, other.p999),
        }
    }

    fn from_fn(b: impl Fn(f64) -> Bound) -> Self {
        let [p50, p90, p95, p99, p999] = REPORTED_PERCENTILES.map(b);
        Self {
            p50,
            p90,
            p95,
            p99,
            p999,
        }
    }
}

/// `P(K ≤ k)` for `K ~ Binomial(n, p)`, through the regularized incomplete beta function:
/// `P(K ≤ k) = I_{1−p}(n − k, k + 1)`.
pub fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    reg_inc_beta((n - k) as f64, (k + 1) as f64, 1.0 - p)
}

/// The 1-based ranks `(l, u)` of the order statistics that bound the `p`-quantile (`p` in
/// 0–1) of `n` independent values with at least `confidence` (0–1), each side missing at
/// most half of the rest; a side is `None` when no rank qualifies.
pub fn order_statistic_ranks(n: usize, p: f64, confidence: f64) -> (Option<usize>, Option<usize>) {
    let n64 = n as u64;
    let tail = (1.0 - confidence) / 2.0;
    // Largest l ≥ 1 with F(l − 1) ≤ tail: F is non-decreasing in k, so the first k with
    // F(k) > tail is l (k = l − 1 + 1).
    let first_above = |target: f64, strict: bool| -> Option<u64> {
        let pass = |k: u64| {
            let f = binomial_cdf(k, n64, p);
            if strict {
                f > target
            } else {
                f >= target
            }
        };
        // Smallest k in 0..=n with pass(k); pass(n) always holds (F(n) = 1).
        let (mut lo, mut hi) = (0u64, n64);
        if pass(0) {
            return Some(0);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if pass(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    };
    // F(l − 1) ≤ tail < F(l): l is the first k with F(k) > tail.
    let lower = first_above(tail, true)
        .filter(|&k| k >= 1)
        .map(|k| k as usize);
    // Smallest u with F(u − 1) ≥ 1 − tail: u − 1 is the first k with F(k) ≥ 1 − tail.
    let upper = first_above(1.0 - tail, false)
        .map(|k| k as usize + 1)
        .filter(|&u| u <= n);
    (lower, upper)
}

/// The bound on the `percentile` (0–100) of independent values sorted ascending.
pub fn independent(sorted: &[f64], percentile: f64, confidence: f64) -> Bound {
    let (l, u) = order_statistic_ranks(sorted.len(), percentile / 100.0, confidence);
    around_estimate(
        sorted,
        percentile,
        l.map(|l| sorted[l - 1]),
        u.map(|u| sorted[u - 1]),
    )
}

/// A value with the two clusters it belongs to: the request that produced it and the block
/// of time it arrived in (values of one request share its prompt and pace; values of one
/// moment share the server's batch, its queue and its stalls).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clustered {
    /// The value, in the sample's unit.
    pub value: f64,
    /// The request it came from (any number unique to the request).
    pub request: u32,
    /// The block of time it arrived in (any number unique to the block).
    pub block: u32,
}

/// The bound on the `percentile` (0–100) of `values`, each in a request and a block of time:
/// Woodruff's interval with a two-way cluster variance (Cameron, Gelbach and Miller 2011,
/// "Robust inference with multiway clustering": `V = V_request + V_block − V_both`, never
/// below either one-way variance nor the independent one) and Clopper–Pearson's interval
/// at the effective sample size it implies. `sorted` holds the values sorted ascending.
pub fn two_way(sorted: &[f64], values: &[Clustered], percentile: f64, confidence: f64) -> Bound {
    two_way_of(sorted, &Clusters::of(values), percentile, confidence, 1.0).0
}

/// [`two_way`] with the design effect taken at least `design_effect`; also the design
/// effect measured at this percentile.
fn two_way_of(
    sorted: &[f64],
    clusters: &Clusters,
    percentile: f64,
    confidence: f64,
    design_effect: f64,
) -> (Bound, f64) {
    let total = sorted.len();
    if total == 0 || clusters.values.len() != total {
        return (Bound::default(), 1.0);
    }
    let estimate = percentile_sorted(sorted, percentile);
    // Values tied at the estimate (one slow engine step seen by every running request)
    // count below it in one reading and above in the other: the smaller effective sample
    // of the two keeps a tail that rests on one such tie from reading as precise.
    let measured = clusters
        .effective_size(|v| v <= estimate)
        .min(clusters.effective_size(|v| v < estimate));
    let effect = total as f64 / measured.max(1e-9);
    let effective = total as f64 / effect.max(design_effect);
    let share = percentile / 100.0;
    let Some((lo_share, hi_share)) = clopper_pearson(share, effective, confidence) else {
        return (Bound::default(), effect);
    };
    // Order statistics at those shares, outward to whole ranks.
    // One rank further out on each side than Woodruff's own mapping (⌈s·M⌉ and ⌊s·M⌋ + 1):
    // with clustered values the last order statistic is no bound on a tail the run may not
    // have seen (with Woodruff's mapping the P99.9 of 200 requests' gaps was closed at the
    // sample's maximum and held the truth in 75 % of runs; with this one, 99.8 %).
    let lo_rank = (lo_share * total as f64).floor() as i64;
    let hi_rank = (hi_share * total as f64).ceil() as i64 + 1;
    let lo = (lo_share > 0.0 && lo_rank >= 1).then(|| sorted[lo_rank as usize - 1]);
    let hi = (hi_share < 1.0 && hi_rank >= 1 && hi_rank as usize <= total)
        .then(|| sorted[hi_rank as usize - 1]);
    (around_estimate(sorted, percentile, lo, hi), effect)
}

/// The Clopper–Pearson interval of a `share` observed among `n` effective values (`n` need
/// not be whole): Korn and Graubard's interval for a proportion from clustered data (1998,
/// "Confidence intervals for proportions with small expected number of positive counts
/// estimated from survey data", Survey Methodology 24). Where the share rests on a handful
/// of clusters (a P99 set by six slow engine steps) it is as skewed and wide as six
/// observations allow, where a normal interval would be too narrow. A side at 0 or 1 is
/// open.
fn clopper_pearson(share: f64, n: f64, confidence: f64) -> Option<(f64, f64)> {
    let tail = (1.0 - confidence) / 2.0;
    let x = share * n;
    let lo = if x <= 0.0 {
        0.0
    } else {
        beta_quantile(tail, x, n - x + 1.0)?
    };
    let hi = if x >= n {
        1.0
    } else {
        beta_quantile(1.0 - tail, x + 1.0, n - x)?
    };
    Some((lo, hi))
}

/// The fewest blocks of time the time dimension needs for its variance to be read
/// (cluster-robust variances are unreliable with few clusters; Cameron and Miller, "A
/// practitioner's guide to cluster-robust inference", 2015).
const MIN_CLUSTERS: usize = 20;

/// The values with their clusters numbered densely: request, block and (request, block)
/// cell, each an index into its sums.
struct Clusters {
    values: Vec<f64>,
    of: Vec<[u32; 3]>,
    counts: [usize; 3],
}

impl Clusters {
    fn of(values: &[Clustered]) -> Self {
        use std::collections::HashMap;
        let mut ids: [HashMap<u64, u32>; 3] = Default::default();
        let mut number = |kind: usize, key: u64| {
            let next = ids[kind].len() as u32;
            *ids[kind].entry(key).or_insert(next)
        };
        let of = values
            .iter()
            .map(|v| {
                let (r, b) = (u64::from(v.request), u64::from(v.block));
                [number(0, r), number(1, b), number(2, (r << 32) | b)]
            })
            .collect();
        Self {
            values: values.iter().map(|v| v.value).collect(),
            of,
            counts: ids.map(|m| m.len()),
        }
    }

    /// The effective sample size of the share of values for which `below` holds:
    /// `share·(1 − share) / V`, with `V` its two-way cluster variance (the residuals
    /// `1[below] − share` summed within each request, each block and each cell;
    /// `V = (Σ_request S² + Σ_block S² − Σ_cell S²) / M²`, taken no smaller than either
    /// one-way term nor the independent `share·(1 − share) / M`). At most `M`; `M` when
    /// the share is 0 or 1 (no variance to read).
    fn effective_size(&self, below: impl Fn(f64) -> bool) -> f64 {
        let total = self.values.len() as f64;
        let share = self.values.iter().filter(|&&v| below(v)).count() as f64 / total;
        let independent = share * (1.0 - share) / total;
        if independent <= 0.0 {
            return total;
        }
        let mut sums = self.counts.map(|n| vec![0.0; n]);
        for (v, of) in self.values.iter().zip(&self.of) {
            let e = f64::from(u8::from(below(*v))) - share;
            for kind in 0..3 {
                sums[kind][of[kind] as usize] += e;
            }
        }
        let [request, block, cell] = sums.map(|s| squares(&s));
        // A dimension of too few clusters reads no variance worth the name (20 requests
        // sent in one burst all fall in one block of time): it is left out.
        // Requests are always a dimension (the tokens of 10 requests are not 5,000
        // independent values, however few the requests); the blocks of time only with
        // enough of them to read a variance (requests sent in one burst all fall in one or
        // two blocks, whose variance is noise).
        let clustered = if self.counts[1] >= MIN_CLUSTERS {
            (request + block - cell).max(request).max(block)
        } else {
            request
        } / (total * total);
        (share * (1.0 - share) / clustered.max(independent)).min(total)
    }
}

/// The sum of squared cluster sums, with the small-sample factor G / (G − 1) of its G
/// clusters.
fn squares(sums: &[f64]) -> f64 {
    let g = sums.len() as f64;
    let s: f64 = sums.iter().map(|x| x * x).sum();
    if g > 1.0 {
        s * g / (g - 1.0)
    } else {
        s
    }
}

/// The bound with its sides widened, if need be, to hold the type-7 estimate itself (an
/// interval on a percentile that leaves out the printed figure would read as an error).
fn around_estimate(sorted: &[f64], percentile: f64, lo: Option<f64>, hi: Option<f64>) -> Bound {
    let estimate = percentile_sorted(sorted, percentile);
    Bound {
        lo: lo.map(|v| v.min(estimate)),
        hi: hi.map(|v| v.max(estimate)),
    }
}

#[cfg(test)]
mod tests;
