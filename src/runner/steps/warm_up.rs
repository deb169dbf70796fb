//! The warm-up step (draft 4.5): from a stream of its own, at a shard's share of the load in
//! scale-out; it leaves the measured phase its pace and, in a closed loop, a lead-in.

use super::{Bench, WarmedUp};
use crate::config::RunConfig;
use crate::record::Phase;
use crate::runner::feeder::{self, Feed};
use crate::runner::phase::LeadIn;
use crate::runner::progress::PhaseView;
use crate::runner::warmup::{self, Warmed};
use crate::runner::{plan, RunError, WARMUP_SEED_SALT};
use crate::schedule::shard::Shard;
use crate::schedule::LoadPattern;
use std::time::Duration;

impl Bench<'_> {
    /// Warms the server up, having said what it will cost; returns what it achieved and the
    /// lead-in it leaves the measured phase.
    pub(in crate::runner) async fn warm_up(&self) -> Result<WarmedUp, RunError> {
        let config = self.config;
        let shard = self.shard;
        // Scale-out: each shard warms up its own connections at its share of the load (its
        // streams; an N-th of the rate), from the warm-up stream, outside the plan's ordinals.
        let warm_config;
        let warm_cfg = match (shard, config.warmup_load) {
            (Some(s), _) => {
                warm_config = shard_warm_config(config, s);
                &warm_config
            }
            (None, Some(load)) => {
                warm_config = RunConfig {
                    load,
                    ..config.clone()
                };
                &warm_config
            }
            (None, None) => config,
        };

        // Warm-up (draft 4.5), from a stream of its own: the measured requests are then the
        // same sequence whatever the warm-up took (an auto warm-up's length varies), so two
        // runs with one seed measure identical requests in the same order (draft 6.1). What it
        // will cost is said before it starts.
        let warm_plan = plan::warmup_plan(warm_cfg);
        let mut view = PhaseView::new("warming up", Phase::Warmup, 0);
        view.max_duration = Some(config.warmup_max);
        view.max_requests = warm_plan.map(|p| p.requests);
        view.planned = warm_plan
            .and_then(|p| p.seconds)
            .map(Duration::from_secs_f64);
        if let (Some(p), false) = (&warm_plan, config.quiet) {
            self.progress
                .println(&plan::describe_warmup(p, config.warmup));
        }
        self.progress.phase(view);
        let (warmed, warm_feed) = self.warm_from_stream(warm_cfg).await?;
        if let Some(n) = warmed.gave_up_after {
            self.progress.println(&warmup::gave_up_warning(n));
        }
        // Closed loop, one machine: the measured phase carries the warm-up's load on (a
        // lead-in) instead of starting every stream at once on an empty server; not after
        // a warm-up at another load, whose queue drains first.
        let lead_in = match (config.load, shard, warm_feed, warmed.cycle) {
            (LoadPattern::Closed { .. }, None, Some(feed), Some(cycle))
                if config.warmup_load.is_none() =>
            {
                Some(LeadIn { feed, cycle })
            }
            _ => None,
        };
        let warmup = warmed.report.clone();
        Ok(WarmedUp {
            lead_in,
            warmed,
            warmup,
        })
    }

    /// Runs the warm-up of `warm_cfg`: on the measured stream when the warm-up is off,
    /// otherwise on a stream of its own, returned for the lead-in.
    async fn warm_from_stream(
        &self,
        warm_cfg: &RunConfig,
    ) -> Result<(Warmed, Option<Feed>), RunError> {
        let config = self.config;
        let (feed, shared, controls) = (&self.feed, &self.shared, &self.controls);
        let (counters, cpu, tokenizer) = (&self.counters, &self.cpu, &self.tokenizer);
        let (warmed, warm_feed) = if config.warmup == crate::config::Warmup::None {
            let warmed =
                warmup::warm_up(warm_cfg, feed, shared, controls, counters, cpu, tokenizer).await;
            (warmed, None)
        } else {
            let warm_feed = feeder::start(
                &config.workload,
                config.dataset.clone(),
                config.seed ^ WARMUP_SEED_SALT,
                config.prompt_salt,
                &config.target,
                &config.request,
                tokenizer.clone(),
                cpu.clone(),
                None,
                feeder::lookahead_for(config.load),
            )?;
            let warmed = warmup::warm_up(
                warm_cfg, &warm_feed, shared, controls, counters, cpu, tokenizer,
            )
            .await;
            if let Some(e) = warm_feed
                .error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                return Err(RunError::Workload(e));
            }
            (warmed, Some(warm_feed))
        };
        Ok((warmed, warm_feed))
    }
}

/// Scale-out: the configuration a shard warms up with, at its share of the load.
fn shard_warm_config(config: &RunConfig, s: Shard) -> RunConfig {
    let mut c = config.clone();
    c.load = match config.load {
        LoadPattern::Open {
            rate_per_s,
            arrival,
        } => LoadPattern::Open {
            rate_per_s: rate_per_s / f64::from(s.count),
            arrival,
        },
        // A trace replayed in every shard's warm-up: slowed to an N-th of its pace.
        LoadPattern::Trace { speed } => LoadPattern::Trace {
            speed: speed / f64::from(s.count),
        },
        other => s.load_of(other),
    };
    c
}
