use super::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[test]
fn the_binomial_cdf_matches_hand_sums() {
    // Σ_{i≤3} C(10, i) 0.3^i 0.7^(10−i) = 0.6496107184.
    assert!((binomial_cdf(3, 10, 0.3) - 0.649_610_718_4).abs() < 1e-9);
    assert!((binomial_cdf(0, 2, 0.5) - 0.25).abs() < 1e-12);
    assert!((binomial_cdf(1, 2, 0.5) - 0.75).abs() < 1e-12);
    assert_eq!(binomial_cdf(10, 10, 0.3), 1.0);
}

#[test]
fn ranks_match_the_classic_tables() {
    // The median of 10 at 95 %: X(2)..X(9) (coverage 0.9785), the textbook answer.
    assert_eq!(order_statistic_ranks(10, 0.5, 0.95), (Some(2), Some(9)));
    // P99 of 1,000: X(983)..X(997), from summing the binomial by hand.
    assert_eq!(
        order_statistic_ranks(1000, 0.99, 0.95),
        (Some(983), Some(997))
    );
    // P99 of 200 has no upper bound (P(K ≤ 199) = 1 − 0.99^200 = 0.866 < 0.975): the
    // sample cannot say how bad the tail is, only that it is at least X(195).
    assert_eq!(order_statistic_ranks(200, 0.99, 0.95), (Some(195), None));
    // P99.9 of 200: F(198) = 0.0175 ≤ 0.025 < F(199) = 0.1814, so X(199) from below only.
    assert_eq!(order_statistic_ranks(200, 0.999, 0.95), (Some(199), None));
    // Too few for any side.
    assert_eq!(order_statistic_ranks(3, 0.5, 0.95), (None, None));
}

#[test]
fn a_bound_holds_its_estimate_and_reads_its_sides() {
    let sorted: Vec<f64> = (1..=10).map(f64::from).collect();
    let b = independent(&sorted, 50.0, 0.95);
    assert_eq!(
        b,
        Bound {
            lo: Some(2.0),
            hi: Some(9.0)
        }
    );
    assert!(b.covers(5.5) && !b.covers(9.5));
    assert_eq!(b.relative_width(5.5), Some(7.0 / 5.5));
    assert!(!b.within(5.5, 0.1));
    let open = Bound {
        lo: Some(3.0),
        hi: None,
    };
    assert!(open.covers(1e9) && open.relative_width(4.0).is_none());
}

fn exponential(rng: &mut ChaCha8Rng) -> f64 {
    -(1.0 - rng.random::<f64>()).ln()
}

#[test]
fn order_statistic_bounds_cover_at_their_nominal_rate() {
    // 2,000 samples of 200 from the unit exponential, whose p-quantile is −ln(1 − p). The
    // interval is exact-or-conservative: each percentile is covered at least 95 % of the
    // time (less a Monte Carlo allowance of three standard errors, 0.015).
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut covered = [0usize; 5];
    let trials = 2000;
    for _ in 0..trials {
        let mut v: Vec<f64> = (0..200).map(|_| exponential(&mut rng)).collect();
        v.sort_by(f64::total_cmp);
        let b = PercentileBounds::independent(&v, 0.95).unwrap();
        for (i, p) in REPORTED_PERCENTILES.iter().enumerate() {
            let truth = -(1.0 - p / 100.0).ln();
            covered[i] += b.at(*p).unwrap().covers(truth) as usize;
        }
    }
    for (i, c) in covered.iter().enumerate() {
        let rate = *c as f64 / trials as f64;
        assert!(
            rate >= 0.935,
            "P{}: covered {rate}",
            REPORTED_PERCENTILES[i]
        );
    }
}

/// Requests whose tokens share a request-level pace: token j of request i is
/// `pace_i × (0.8 + 0.4 u)`, `pace_i` exponential. Strongly clustered.
fn clustered_requests(rng: &mut ChaCha8Rng, requests: usize, tokens: usize) -> Vec<Vec<f64>> {
    (0..requests)
        .map(|_| {
            let pace = 10.0 * (0.2 + exponential(rng));
            (0..tokens)
                .map(|_| pace * (0.8 + 0.4 * rng.random::<f64>()))
                .collect()
        })
        .collect()
}

/// Each value in its request's cluster and a block of its own (no shared moments).
fn by_request_only(groups: &[Vec<f64>]) -> Vec<Clustered> {
    let mut block = 0;
    let mut out = Vec::new();
    for (request, g) in groups.iter().enumerate() {
        for &value in g {
            block += 1;
            out.push(Clustered {
                value,
                request: request as u32,
                block,
            });
        }
    }
    out
}

#[test]
fn clustered_bounds_cover_where_independent_ones_do_not() {
    // The pooled distribution's true percentiles, from a million tokens.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut pool: Vec<f64> = clustered_requests(&mut rng, 20_000, 50)
        .into_iter()
        .flatten()
        .collect();
    pool.sort_by(f64::total_cmp);
    let truth = [50.0, 90.0].map(|p| percentile_sorted(&pool, p));
    let (mut by_request, mut as_if_independent) = ([0usize; 2], [0usize; 2]);
    let trials = 400;
    for _ in 0..trials {
        let groups = clustered_requests(&mut rng, 100, 50);
        let values = by_request_only(&groups);
        let mut sorted: Vec<f64> = groups.iter().flatten().copied().collect();
        sorted.sort_by(f64::total_cmp);
        for (i, p) in [50.0, 90.0].into_iter().enumerate() {
            by_request[i] += two_way(&sorted, &values, p, 0.95).covers(truth[i]) as usize;
            as_if_independent[i] += independent(&sorted, p, 0.95).covers(truth[i]) as usize;
        }
    }
    for i in 0..2 {
        let rate = |c: usize| c as f64 / trials as f64;
        // 400 trials: three standard errors of a 95 % rate are 0.033.
        assert!(
            rate(by_request[i]) >= 0.917,
            "by request: {}",
            rate(by_request[i])
        );
        // Treating 5,000 tokens of 100 requests as 5,000 independent values is far too
        // narrow: it misses most of the time.
        assert!(
            rate(as_if_independent[i]) < 0.6,
            "{}",
            rate(as_if_independent[i])
        );
    }
}

#[test]
fn one_value_per_cluster_is_the_independent_case() {
    // Woodruff with clusters of one and Clopper–Pearson on the share is the order-statistic
    // interval within a few ranks.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let values: Vec<f64> = (0..1000).map(|_| exponential(&mut rng)).collect();
    let groups: Vec<Vec<f64>> = values.iter().map(|&v| vec![v]).collect();
    let clustered = by_request_only(&groups);
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let rank = |v: f64| sorted.iter().position(|&x| x == v).unwrap() as i64;
    let (c, i) = (
        two_way(&sorted, &clustered, 99.0, 0.95),
        independent(&sorted, 99.0, 0.95),
    );
    // Clopper–Pearson on the share is a little wider than the exact ranks (983 and 997).
    assert!((rank(c.lo.unwrap()) - rank(i.lo.unwrap())).abs() <= 3);
    assert!((rank(c.hi.unwrap()) - rank(i.hi.unwrap())).abs() <= 3);
}
