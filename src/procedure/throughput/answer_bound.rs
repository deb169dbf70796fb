//! How far the throughput answer can be trusted: one seed's search on a slow server lands
//! anywhere from −25 % to +17 % of the truth, because a level of a few dozen arrivals
//! counts them with an error of about 1/√n. The answer carries its own interval.
//!
//! - **Below:** the sustainable level completed `r × T` requests over its steady span of `T`
//!   seconds at the credited rate `r`; the exact (Garwood) Poisson interval of that count
//!   bounds the rate the server sustains from below.
//! - **Above:** the first failing level, where the server fell behind, completed what it
//!   could: its steady completions' Garwood upper bound bounds the capacity from above
//!   (and the answer itself, when that is higher), provided that bound is below the rate
//!   the level asked. A failing level whose completions may have kept up with its arrivals
//!   failed on latency or on a signal, not on count, and says nothing of how much more the
//!   server could carry: the side is then open, as it is when no level failed (a false
//!   alarm on a short level is how one seed answers 67 % of the truth).

use crate::procedure::level::{LevelOutcome, LevelVerdict, Load};
use crate::stats::interval::poisson_rate;
use crate::stats::percentile_bounds::Bound;

/// The interval of the answer `rate_per_s`, credited at `level`, with the first level that
/// failed above it, if any, at `confidence` (0–1).
pub fn answer_bound(
    rate_per_s: f64,
    level: &LevelOutcome,
    failing: Option<&LevelOutcome>,
    confidence: f64,
) -> Bound {
    let span = |l: &LevelOutcome| l.summary.steady_state.span_s;
    let lo = poisson_rate(rate_per_s * span(level), span(level), confidence).map(|b| b.0);
    let hi = failing.and_then(|f| {
        let completed = f.summary.steady_state.requests_per_s * span(f);
        let asked = match f.load {
            Load::Rate { rate_per_s } => rate_per_s,
            Load::Concurrency { .. } => return None,
        };
        let upper = poisson_rate(completed, span(f), confidence)?.1;
        (upper < asked).then_some(upper.max(rate_per_s))
    });
    Bound {
        lo: lo.map(|l| l.min(rate_per_s)),
        hi,
    }
}

/// The first level at `failing_rate_per_s` that failed, among `levels`.
pub fn failing_level(levels: &[LevelOutcome], failing_rate_per_s: f64) -> Option<&LevelOutcome> {
    levels.iter().find(|l| {
        l.verdict != LevelVerdict::Pass
            && matches!(l.load, Load::Rate { rate_per_s } if (rate_per_s - failing_rate_per_s).abs() < 1e-9)
    })
}
