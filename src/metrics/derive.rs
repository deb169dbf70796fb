//! The per-request figures written with each record when it settles: TTFT, TPOT, E2E, user
//! idle latency, deadline misses and fluidity. Their parameters are known before the measured
//! phase starts, so each record is written once, complete.

use super::experience::FluidityParams;
use super::request::latencies;
use super::ux::{evaluate, UxParams};
use crate::record::{Derived, RequestRecord};

/// What the per-request figures need.
#[derive(Debug, Clone, Default)]
pub struct DeriveParams {
    pub ux: UxParams,
    pub fluidity: FluidityParams,
    /// The SLO a streamed summary judges each record by (not a per-record figure).
    pub slo: Option<crate::metrics::slo::SloSpec>,
}

/// The per-request figures of a settled record.
pub fn derive(r: &RequestRecord, p: &DeriveParams) -> Derived {
    let lat = latencies(r);
    let deadlines = evaluate(r, &p.ux.scheme);
    Derived {
        // A non-generative request (items, answered whole) has no first token.
        ttft_ms: lat.filter(|_| r.items == 0).map(|l| l.0),
        e2e_ms: lat.map(|l| l.1),
        tpot_ms: lat.and_then(|l| l.2),
        user_idle_ms: deadlines.user_idle_ms,
        deadline_misses: deadlines.deadline_misses,
        fluidity: p
            .fluidity
            .input(r)
            .map(|i| i.index(p.fluidity.tbt_deadline_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::fluidity::PrefillCurve;
    use crate::metrics::ux::DeadlineScheme;
    use crate::record::{FailureKind, Outcome};

    #[test]
    fn figures_of_a_completed_and_a_failed_request() {
        let p = DeriveParams {
            ux: UxParams {
                scheme: DeadlineScheme::TtftTbt {
                    ttft_ms: 150.0,
                    tbt_ms: 30.0,
                },
                ..UxParams::default()
            },
            fluidity: FluidityParams {
                curve: Some(PrefillCurve {
                    a_ms: 50.0,
                    b_ms_per_token: 0.0,
                    c_ms_per_token2: 0.0,
                    r2: 1.0,
                    n: 2,
                }),
                tbt_deadline_ms: 30.0,
                slack_ms: 50.0,
                ..FluidityParams::default()
            },
            slo: None,
        };
        // Sent at 0; tokens at 100, 120, 200 ms.
        let r = RequestRecord::completed_for_tests(0, 0, &[100, 120, 200], 10);
        let d = derive(&r, &p);
        assert_eq!(
            (d.ttft_ms, d.e2e_ms, d.tpot_ms),
            (Some(100.0), Some(200.0), Some(50.0))
        );
        // Third token due 120 + 30 = 150, came at 200: 50 ms idle, one miss.
        assert_eq!((d.user_idle_ms, d.deadline_misses), (50.0, 1));
        // D_p = 100: first token on time (no slack), 20 ≤ 30 (10 ms slack), 80 > 30 + 10:
        // floor((80 − 10 − 30) / 30) + 1 = 2 misses; 2 met of 4.
        assert_eq!(d.fluidity, Some(0.5));
        let mut f = r.clone();
        f.outcome = Outcome::failed(FailureKind::StreamCut, "cut");
        f.chunks.truncate(1);
        f.max_tokens = 3;
        f.finished_at = 400 * 1_000_000;
        let d = derive(&f, &p);
        assert_eq!((d.ttft_ms, d.tpot_ms), (None, None));
        // The 2nd token was due at 130 ms; the stream ended at 400 ms.
        assert_eq!((d.user_idle_ms, d.deadline_misses), (270.0, 1));
        // 1 met, 2 tokens never came: 1 of 3.
        assert_eq!(d.fluidity, Some(1.0 / 3.0));
    }
}
