//! 5.7 Prefix Cache Effectiveness: the identical workload with the cache off, then on from
//! empty (cold), then on again with the cache holding the workload's prefixes (warm);
//! Table 10, TTFT reduction, hit rate and throughput change.
//!
//! Three ways to switch the cache, in order of preference:
//! - per request, where the server has a switch (llama.cpp's `cache_prompt`, the
//!   simulator): one target, three levels;
//! - labelled targets (`--target off=URL --target on=URL`): the same server started with
//!   and without caching;
//! - earlier runs (`--from off=RUN --from on=RUN`): composed without running anything.
//!
//! "Identical workload": every level has the same seed and request count, and warm-up
//! requests come from a separate stream, so each level sends the same requests in the same
//! order. The cold level first asks the server to drop its cache (vLLM
//! `/reset_prefix_cache`, SGLang `/flush_cache`, llama.cpp slot erase); the report says
//! whether that worked. Reduction = (TTFT off − TTFT on) / TTFT off, at the P50.

use super::compliance::Checklist;
use super::level::{Bench, LevelOutcome, LevelSpec, Load, Role, Stop};
use super::report::Finding;
use super::session::Session;
use super::{common_parameters, Options};
use serde::{Deserialize, Serialize};

/// One row of Table 10.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheRow {
    /// "Cache Disabled", "Cache (Cold)", "Cache (Warm)" or "Cache Enabled".
    pub configuration: String,
    pub level: usize,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub output_tokens_per_s: f64,
    /// Cached ÷ prompt tokens from the responses, 0-1.
    pub hit_rate: Option<f64>,
    /// The server's own counters, 0-1.
    pub server_hit_rate: Option<f64>,
}

/// `result` of a prefix-cache test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrefixCacheResult {
    /// How the cache was switched.
    pub mode: String,
    pub rows: Vec<CacheRow>,
    /// (P50 TTFT off − P50 TTFT warm) / P50 TTFT off, 0-1 (the warm level, or the only
    /// cache-on level).
    pub ttft_reduction: Option<f64>,
    /// The same for the cold level.
    pub ttft_reduction_cold: Option<f64>,
    /// Share of prompt tokens served from the cache at the warm level, 0-1.
    pub hit_rate: Option<f64>,
    /// "responses" (usage cached tokens) or "server counters".
    pub hit_rate_source: Option<String>,
    /// Output throughput with the cache ÷ without, minus 1.
    pub throughput_improvement: Option<f64>,
}

/// Runs the test.
pub fn run(bench: &mut dyn Bench, o: &Options) -> Finding {
    let mut s = Session::new(bench, o.slo.clone());
    let workload = if o.workload_given {
        o.workload.clone()
    } else {
        crate::workload::Scenario::named("code-completion").expect("built in")
    };
    let requests = o.requests.unwrap_or(o.count(500, 40));
    let load = o.load.unwrap_or(Load::Concurrency { concurrency: 4 });
    let mut result = PrefixCacheResult::default();
    let mut stop: Option<Stop> = None;
    let level = |label: &str, role: Role, target: Option<&str>, cache: Option<bool>| {
        let mut spec = LevelSpec::new(
            format!("{label} · {} · {requests} requests", load.describe()),
            role,
            load,
            std::time::Duration::ZERO,
        );
        spec.duration = None;
        spec.requests = Some(requests);
        spec.workload = Some(workload.clone());
        spec.target = target.map(str::to_owned);
        spec.prefix_cache = cache;
        spec.flush_cache = role == Role::CacheCold;
        spec
    };
    let mut plan: Vec<(String, LevelSpec)> = Vec::new();
    let has = |name: &str| o.targets.iter().any(|t| t == name);
    if o.from_runs.contains_key("off") && o.from_runs.contains_key("on") {
        result.mode = "earlier runs (--from)".into();
        for (name, configuration, role) in [
            ("off", "Cache Disabled", Role::CacheOff),
            ("on", "Cache Enabled", Role::CacheWarm),
        ] {
            match s.bench.load_run(&o.from_runs[name]) {
                Ok(run) => {
                    let spec = LevelSpec {
                        label: format!("{configuration} (from {})", o.from_runs[name].display()),
                        ..level(configuration, role, None, None)
                    };
                    let o2 = super::level::outcome(
                        s.levels.len(),
                        &spec,
                        &run,
                        Default::default(),
                        None,
                        super::LevelVerdict::Measured,
                        String::new(),
                    );
                    s.levels.push(o2);
                }
                Err(e) => {
                    stop = Some(e);
                    break;
                }
            }
        }
    } else {
        if has("off") && has("on") {
            result.mode = "labelled targets (--target off=… --target on=…)".into();
            plan.push((
                "Cache Disabled".into(),
                level("cache off", Role::CacheOff, Some("off"), None),
            ));
            plan.push((
                "Cache (Cold)".into(),
                level("cache cold", Role::CacheCold, Some("on"), None),
            ));
            plan.push((
                "Cache (Warm)".into(),
                level("cache warm", Role::CacheWarm, Some("on"), None),
            ));
        } else {
            result.mode = if o.cache_switch {
                "per request (cache_prompt)".into()
            } else {
                "per request (cache_prompt), which this server may ignore: give --target off=URL --target on=URL for a server started each way".into()
            };
            plan.push((
                "Cache Disabled".into(),
                level("cache off", Role::CacheOff, None, Some(false)),
            ));
            plan.push((
                "Cache (Cold)".into(),
                level("cache cold", Role::CacheCold, None, Some(true)),
            ));
            plan.push((
                "Cache (Warm)".into(),
                level("cache warm", Role::CacheWarm, None, Some(true)),
            ));
        }
        for (_, spec) in &plan {
            if let Err(e) = s.measure(spec.clone()) {
                stop = Some(e);
                break;
            }
        }
    }
    for l in &s.levels {
        let configuration = match l.role {
            Role::CacheOff => "Cache Disabled",
            Role::CacheCold => "Cache (Cold)",
            Role::CacheWarm if result.mode.starts_with("earlier") => "Cache Enabled",
            Role::CacheWarm => "Cache (Warm)",
            _ => continue,
        };
        result.rows.push(row(configuration, l));
    }
    let off = s.levels.iter().find(|l| l.role == Role::CacheOff);
    let warm = s.levels.iter().find(|l| l.role == Role::CacheWarm);
    let cold = s.levels.iter().find(|l| l.role == Role::CacheCold);
    let p50 = |l: &LevelOutcome| l.summary.ttft_ms.map(|d| d.p50);
    let reduction = |on: Option<&LevelOutcome>| {
        let (a, b) = (p50(off?)?, p50(on?)?);
        (a > 0.0).then(|| (a - b) / a)
    };
    result.ttft_reduction = reduction(warm);
    result.ttft_reduction_cold = reduction(cold);
    if let Some(w) = warm {
        if let Some(h) = w.cache.hit_rate() {
            result.hit_rate = Some(h);
            result.hit_rate_source = Some("responses (cached prompt tokens)".into());
        } else if let Some(h) = w.server.prefix_cache_hit_rate {
            result.hit_rate = Some(h);
            result.hit_rate_source = Some("server counters".into());
        }
    }
    result.throughput_improvement = match (off, warm) {
        (Some(a), Some(b)) if a.summary.output_tokens_per_s > 0.0 => {
            Some(b.summary.output_tokens_per_s / a.summary.output_tokens_per_s - 1.0)
        }
        _ => None,
    };
    let answer = match result.ttft_reduction {
        Some(r) => format!(
            "prefix caching {} P50 TTFT by {:.0} %{}{}",
            if r >= 0.0 { "cut" } else { "raised" },
            r.abs() * 100.0,
            result
                .ttft_reduction_cold
                .map(|c| format!(" warm ({:.0} % cold)", c * 100.0))
                .unwrap_or_default(),
            result
                .hit_rate
                .map(|h| format!("; {:.0} % of prompt tokens from the cache", h * 100.0))
                .unwrap_or_default()
        ),
        None => "no cache comparison could be made".into(),
    };
    let compliance = compliance(&s, o, &workload, &result);
    Finding {
        answered: result.ttft_reduction.is_some(),
        levels: s.levels,
        result: serde_json::to_value(&result).expect("plain data"),
        answer,
        compliance,
        parameters: serde_json::json!({
            "common": common_parameters(o),
            "workload": workload.name,
            "requests": requests,
            "load": load,
            "mode": result.mode,
        }),
        stopped: stop.map(|e| e.to_string()),
    }
}

fn row(configuration: &str, l: &LevelOutcome) -> CacheRow {
    let t = l.summary.ttft_ms;
    CacheRow {
        configuration: configuration.into(),
        level: l.index,
        ttft_p50_ms: t.map(|d| d.p50),
        ttft_p95_ms: t.map(|d| d.p95),
        ttft_p99_ms: t.map(|d| d.p99),
        output_tokens_per_s: l.summary.output_tokens_per_s,
        hit_rate: l.cache.hit_rate(),
        server_hit_rate: l.server.prefix_cache_hit_rate,
    }
}

fn compliance(
    s: &Session,
    o: &Options,
    w: &crate::workload::WorkloadSpec,
    r: &PrefixCacheResult,
) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    c.guardrails("4.8.1", o.disclosure.guardrails.as_deref(), &s.levels);
    let off = r.rows.iter().any(|x| x.configuration == "Cache Disabled");
    let on = r.rows.iter().any(|x| x.configuration != "Cache Disabled");
    c.must(
        "5.7.2",
        "two configurations: cache disabled (baseline) and enabled",
        off && on,
        r.mode.clone(),
    );
    c.must(
        "5.7.3",
        "the identical workload in each configuration",
        true,
        "same seed and request count; warm-up from a separate stream",
    );
    let off_hits = s
        .levels
        .iter()
        .find(|l| l.role == Role::CacheOff)
        .and_then(|l| l.cache.hit_rate());
    c.must(
        "5.7.3",
        "the cache really off in the baseline",
        off_hits.is_none_or(|h| h < 0.05),
        match off_hits {
            Some(h) => format!(
                "responses report {:.1} % of prompt tokens cached",
                h * 100.0
            ),
            None => "the responses do not report cached tokens".into(),
        },
    );
    c.should(
        "5.7.2",
        "Code Completion workload (RECOMMENDED: high prefix sharing)",
        w.name == "code-completion" || w.prefix_groups.is_some(),
        format!("workload {}", w.name),
    );
    let cold_note = s
        .levels
        .iter()
        .find(|l| l.role == Role::CacheCold)
        .map(|l| l.reason.clone());
    c.should(
        "5.7.3",
        "the cache-on configuration starts empty (cold) before it is measured warm",
        cold_note
            .as_deref()
            .is_some_and(|n| n.contains("cache emptied")),
        cold_note.unwrap_or_else(|| "no cold level".into()),
    );
    c.finish()
}
