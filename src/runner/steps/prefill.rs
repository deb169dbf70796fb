//! The prefill-profile step: the prefill deadline of the fluidity-index, from isolated
//! requests (or a given curve, or none), then set as the per-request figures' parameters.

use super::{Bench, Prefill};
use crate::config::PrefillSetup;
use crate::metrics::derive::DeriveParams;
use crate::metrics::fluidity::ProfiledCurve;
use crate::record::Phase;
use crate::runner::profile;
use crate::runner::progress::PhaseView;
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Bench<'_> {
    /// Profiles prefill when asked to (and not stopped); sets the writer's derive
    /// parameters with the curve it ends with.
    pub(in crate::runner) async fn profile_prefill(&self) -> Prefill {
        let config = self.config;
        let clock = self.clock;
        // The prefill deadline of the fluidity-index, from isolated requests.
        let mut fluidity = config.fluidity.clone();
        let (prefill_curve, profile_report) = match &config.prefill {
            PrefillSetup::Off => {
                fluidity.curve_source = "off (--no-fluidity)".into();
                (None, None)
            }
            PrefillSetup::Curve(c) => {
                fluidity.curve_source = format!(
                    "given (--prefill-curve): profiled on {} ({}) at {}",
                    c.target, c.model, c.created_at
                );
                (Some(c.clone()), None)
            }
            PrefillSetup::Profile(plan) if !self.controls.stop_sending.load(Ordering::Acquire) => {
                let lengths = profile::lengths(config, plan, &self.tokenizer);
                let mut view = PhaseView::new(
                    &format!("profiling prefill at {} lengths", lengths.len()),
                    Phase::Profile,
                    self.shared.sent.load(Ordering::Acquire),
                );
                view.max_duration = Some(plan.budget);
                view.planned = crate::runner::plan::profile_plan(config)
                    .and_then(|(expected, _)| expected)
                    .map(Duration::from_secs_f64);
                self.progress.phase(view);
                let (curve, report, points) =
                    profile::profile(config, plan, &lengths, &self.shared, &self.tokenizer).await;
                fluidity.curve_source = report.source.clone();
                let profiled = curve.map(|curve| ProfiledCurve {
                    curve,
                    target: config.target.url.to_string(),
                    model: config.target.model.clone(),
                    engine: self.server.engine.clone(),
                    engine_version: self.server.version.clone(),
                    created_at: crate::clock::iso8601_ms(clock.unix_us(clock.now())),
                    points,
                });
                (profiled, Some(report))
            }
            PrefillSetup::Profile(_) => (None, None),
        };
        fluidity.curve = prefill_curve.as_ref().map(|c| c.curve);
        let _ = self.writer.derive_params.set(DeriveParams {
            ux: config.ux,
            fluidity: fluidity.clone(),
            slo: config.slo.clone(),
        });
        Prefill {
            fluidity,
            prefill_curve,
            profile_report,
        }
    }
}
