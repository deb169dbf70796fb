//! 5.9 Long Context Scaling: TTFT at context lengths up to the server's limit, closed loop
//! at low concurrency, fixed short output; Table 12 and the linear, quadratic and power-law
//! fits (exponent k of TTFT = a + b·length^k, R², microseconds per input token), beside the
//! draft's literal TTFT ∝ length^k through the origin. The label is the simplest model that
//! fits within the noise of the per-length means (`stats::fit::choice`): the line unless a
//! curve is both significant (F-test) and departs from it by more than twice a length's
//! standard error.
//!
//! Lengths: `--lengths`, else powers of two up to the longest prompt the server takes
//! (its context limit, less the output and a tenth for the chat template), plus that
//! longest prompt itself. Each length is the draft's Long Context workload form: a document
//! filling the length, then a question.

use super::compliance::Checklist;
use super::level::{Bench, LevelSpec, Load, Role, Stop};
use super::report::Finding;
use super::session::Session;
use super::{common_parameters, Options};
use crate::stats::fit::choice::Curvature;
use crate::stats::fit::{scaling_within_noise, Model, ModelKind};
use crate::workload::lengths::LengthDist;
use crate::workload::{Content, Scenario};
use serde::{Deserialize, Serialize};

/// One row of Table 12.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LengthRow {
    pub level: usize,
    /// Requested prompt length, tokens.
    pub context_tokens: u32,
    /// Mean prompt tokens the requests really had (server usage when reported).
    pub input_tokens_mean: Option<f64>,
    pub ttft_mean_ms: Option<f64>,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    /// Standard error of the mean TTFT, ms: the requests' standard deviation over
    /// √(requests − 1) (null with fewer than 2 requests, and in older reports).
    #[serde(default)]
    pub ttft_se_ms: Option<f64>,
    /// Mean TTFT per 1,000 prompt tokens, ms.
    pub ms_per_1k_tokens: Option<f64>,
    pub e2e_mean_ms: Option<f64>,
    /// Output tokens per second at this length and the test's concurrency.
    pub output_tokens_per_s: f64,
    pub requests: u64,
}

/// `result` of a long-context test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LongContextResult {
    pub rows: Vec<LengthRow>,
    /// "linear", "quadratic" or "power_law": the simplest model that fits within the noise
    /// (`stats::fit::choice`: the line unless a curve is significant and departs from it by
    /// more than twice a length's standard error).
    pub best_fit: Option<String>,
    /// k of TTFT = a + b·length^k (power-law fit with an intercept: the fixed overhead a
    /// does not bend k).
    pub scaling_exponent: Option<f64>,
    /// R² of the best fit.
    pub r2: Option<f64>,
    /// k of TTFT = b·length^k through the origin: the draft's literal reading (5.9.4), a
    /// straight line on log-log axes. A fixed overhead bends it below the k above.
    #[serde(default)]
    pub origin_exponent: Option<f64>,
    /// R² (in ms) of that fit through the origin.
    #[serde(default)]
    pub origin_r2: Option<f64>,
    /// The quadratic term against the line and the noise: why the label is or is not
    /// quadratic.
    #[serde(default)]
    pub curvature: Option<Curvature>,
    /// Slope of the linear fit, µs per input token.
    pub us_per_input_token: Option<f64>,
    /// The fitted models (ms against tokens).
    pub fits: Vec<Model>,
    /// Where the longest length came from.
    pub context_limit: String,
    pub output_tokens: u32,
    pub concurrency: u32,
}

/// The prompt lengths the test runs for answers of `output` tokens, and where their limit
/// came from.
pub fn lengths(o: &Options, output: u32) -> (Vec<u32>, String) {
    match (&o.lengths, o.context_tokens) {
        (Some(l), _) => (l.clone(), "--lengths".to_string()),
        (None, Some(ctx)) => {
            // The chat template and special tokens need room: a tenth, at least 32.
            let longest = ((ctx as f64 * 0.9) as u32)
                .saturating_sub(32)
                .saturating_sub(output);
            (
                default_lengths(longest),
                format!("the server's context of {ctx} tokens, less the output and template room: {longest}"),
            )
        }
        (None, None) => (
            default_lengths(32_768),
            "32,768 (the server did not say its context limit; give --context-tokens or --lengths)"
                .to_string(),
        ),
    }
}

/// The output tokens of every request of the test.
pub fn output_tokens(o: &Options) -> u32 {
    o.output_tokens.unwrap_or(if o.quick { 32 } else { 256 })
}

/// The default lengths: powers of two from `min(1024, longest / 8)` up to `longest`, and
/// `longest` itself.
pub fn default_lengths(longest: u32) -> Vec<u32> {
    let longest = longest.max(16);
    let mut start = 1024u32.min(longest / 8).max(16);
    start = 1 << (31 - start.leading_zeros()); // round down to a power of two
    let mut out = Vec::new();
    let mut l = start;
    while l < longest {
        out.push(l);
        l *= 2;
    }
    out.push(longest);
    out
}

/// The workload at one length: a document then a question, fixed output.
fn at_length(tokens: u32, output: u32) -> Scenario {
    let mut s = Scenario::named("long-context").expect("built in");
    s.name = format!("long-context-{tokens}");
    s.input = LengthDist::fixed(tokens);
    s.output = LengthDist::fixed(output);
    s.content = Content::Document;
    s.question_tokens = (tokens / 4).clamp(8, 100);
    s
}

/// Runs the test.
pub fn run(bench: &mut dyn Bench, o: &Options) -> Finding {
    let mut s = Session::new(bench, o.slo.clone());
    let output = output_tokens(o);
    let concurrency = o.length_concurrency.max(1);
    let requests = o.requests_per_length.unwrap_or(o.count(20, 5));
    let (lengths, limit) = lengths(o, output);
    let mut result = LongContextResult {
        context_limit: limit,
        output_tokens: output,
        concurrency,
        ..Default::default()
    };
    let mut stop: Option<Stop> = None;
    for &len in &lengths {
        match measure_length(&mut s, len, requests, output, concurrency) {
            Ok(row) => result.rows.push(row),
            Err(e) => {
                stop = Some(e);
                break;
            }
        }
    }
    fit_scaling(&mut result);
    let answer = answer(&result);
    let compliance = compliance(&s, o, &result, requests, &lengths);
    Finding {
        answered: result.best_fit.is_some(),
        levels: s.levels,
        result: super::TestResult::LongContext(result),
        answer,
        compliance,
        parameters: serde_json::json!({
            "common": common_parameters(o),
            "lengths": lengths,
            "requests_per_length": requests,
            "concurrency": concurrency,
            "output_tokens": output,
        }),
        stopped: stop.map(|e| e.to_string()),
    }
}

/// One length's level (`requests` requests of `len` prompt tokens, `output` output tokens,
/// at `concurrency`) and its row of Table 12.
fn measure_length(
    s: &mut Session,
    len: u32,
    requests: u64,
    output: u32,
    concurrency: u32,
) -> Result<LengthRow, Stop> {
    let mut spec = LevelSpec::new(
        format!("{len} tokens · {requests} requests"),
        Role::Length,
        Load::Concurrency { concurrency },
        std::time::Duration::ZERO,
    );
    spec.duration = None;
    spec.requests = Some(requests);
    spec.workload = Some(at_length(len, output));
    // The prompt length behind each TTFT: the mean over the completed requests (those
    // TTFT is measured on), from the server's usage when it reports one.
    let completed_input_mean = |records: &[crate::record::RequestRecord]| {
        let lengths: Vec<u64> = records
            .iter()
            .filter(|r| r.phase == crate::record::Phase::Measure && r.outcome.is_ok())
            .map(crate::metrics::summary::input_tokens)
            .collect();
        (!lengths.is_empty()).then(|| lengths.iter().sum::<u64>() as f64 / lengths.len() as f64)
    };
    let (l, input_mean) = s.measure_with(spec, completed_input_mean)?;
    let sm = &l.summary;
    let done = sm.requests.completed;
    let ttft_mean = sm.ttft_ms.map(|d| d.mean);
    Ok(LengthRow {
        level: l.index,
        context_tokens: len,
        input_tokens_mean: input_mean,
        ttft_mean_ms: ttft_mean,
        ttft_p50_ms: sm.ttft_ms.map(|d| d.p50),
        ttft_p95_ms: sm.ttft_ms.map(|d| d.p95),
        ttft_se_ms: sm
            .ttft_ms
            .filter(|d| d.n >= 2)
            .map(|d| d.std / ((d.n - 1) as f64).sqrt()),
        ms_per_1k_tokens: ttft_mean
            .zip(input_mean.or(Some(len as f64)))
            .map(|(t, n)| t / n * 1000.0),
        e2e_mean_ms: sm.e2e_ms.map(|d| d.mean),
        output_tokens_per_s: sm.output_tokens_per_s,
        requests: done,
    })
}

/// The scaling fits over the rows (at least 3): the exponent (with an intercept and through
/// the origin), the cost per input token, every model fitted, and the label with its R². The
/// rows' standard errors are the noise when every row has one.
pub fn fit_scaling(result: &mut LongContextResult) {
    let (points, se): (Vec<(f64, f64)>, Vec<Option<f64>>) = result
        .rows
        .iter()
        .filter_map(|r| {
            Some((
                (
                    r.input_tokens_mean.unwrap_or(r.context_tokens as f64),
                    r.ttft_mean_ms?,
                ),
                r.ttft_se_ms,
            ))
        })
        .unzip();
    if points.len() < 3 {
        return;
    }
    let (xs, ys): (Vec<f64>, Vec<f64>) = points.into_iter().unzip();
    let se: Option<Vec<f64>> = se.into_iter().collect();
    let Some(sc) = scaling_within_noise(&xs, &ys, se.as_deref()) else {
        return;
    };
    result.scaling_exponent = sc.exponent;
    result.origin_exponent = sc.origin_exponent;
    result.origin_r2 = sc.origin_power_law.map(|f| f.r_squared);
    result.curvature = sc.curvature;
    result.us_per_input_token = sc.ms_per_1k_tokens; // ms per 1K = µs per token
    let fits = [sc.linear, sc.quadratic, sc.power_law];
    result.fits = fits.iter().flatten().map(|f| f.model).collect();
    if let Some(best) = sc.best {
        result.best_fit = Some(
            match best {
                ModelKind::Linear => "linear",
                ModelKind::Quadratic => "quadratic",
                ModelKind::PowerLaw => "power_law",
            }
            .into(),
        );
        result.r2 = fits
            .iter()
            .flatten()
            .find(|f| f.model.kind() == best)
            .map(|f| f.r_squared);
    }
}

/// The one-line answer.
fn answer(result: &LongContextResult) -> String {
    match (&result.best_fit, result.scaling_exponent) {
        (Some(best), Some(k)) => format!(
            "best fit {} (R² = {:.4}), TTFT = a + b·length^{k:.2}{}{}{}; {} lengths from {} to {} tokens",
            best.replace('_', " "),
            result.r2.unwrap_or(f64::NAN),
            exponent_note(best, k),
            result
                .origin_exponent
                .map(|k0| format!(" (through the origin, the draft's TTFT ∝ length^k: k = {k0:.2})"))
                .unwrap_or_default(),
            // A per-token cost is a fair summary only when the cost is linear; otherwise the
            // linear slope hides a marginal cost that grows with length, so say which it is.
            result
                .us_per_input_token
                .map(|u| per_token_cost(result, u))
                .unwrap_or_default(),
            result.rows.len(),
            result.rows.first().map_or(0, |r| r.context_tokens),
            result.rows.last().map_or(0, |r| r.context_tokens)
        ),
        (Some(best), None) => format!(
            "best fit {} (R² = {:.4}){}; {} lengths measured: 4 are needed for the exponent",
            best.replace('_', " "),
            result.r2.unwrap_or(f64::NAN),
            result
                .us_per_input_token
                .map(|u| per_token_cost(result, u))
                .unwrap_or_default(),
            result.rows.len(),
        ),
        _ => format!(
            "{} lengths measured: too few to fit the scaling models (3 needed for a line, 4 for the exponent)",
            result.rows.len()
        ),
    }
}

/// Within this of 1, an exponent reads as a straight line (the conformance tolerance).
const NEAR_ONE: f64 = 0.05;

/// What keeps the label and the exponent printed beside it from contradicting each other:
/// a line beside a k away from 1 (the power law's bend is within the noise, so the line is
/// named), or a curve beside a k near 1 (the power law cannot follow this curve; the
/// quadratic does). Empty when they agree.
pub fn exponent_note(best: &str, k: f64) -> &'static str {
    let near_one = (k - 1.0).abs() <= NEAR_ONE;
    match (best == "linear", near_one) {
        (true, false) => " (its bend is within the noise: the line is named)",
        (false, true) if best == "quadratic" => {
            " (near 1: a power law cannot follow this curve, the quadratic does)"
        }
        _ => "",
    }
}

/// Why the label is what it is, one line for the report: what the quadratic term is worth
/// against the noise and whether it is significant (`stats::fit::choice`). The draft names
/// a best fit without saying how to choose one; this is servebench's rule, so the report
/// says how it decided. None without both fits.
pub fn label_reason(r: &LongContextResult) -> Option<String> {
    let c = r.curvature?;
    let best = r.best_fit.as_deref()?.replace('_', " ");
    let noise = if c.measured_noise {
        "twice the standard error of that length's mean TTFT"
    } else {
        "twice the quadratic fit's residual standard error: the requests' spread was not measured"
    };
    let worth = if c.worth_ms > c.noise_ms {
        "more than"
    } else {
        "within"
    };
    let significant = if c.f > c.f_critical { "" } else { "not " };
    Some(format!(
        "Why {best}: the quadratic term departs from the line by {:.1} ms at {:.0} tokens, {worth} the noise of {:.1} ms there ({noise}), and is {significant}significant (F = {:.1}, 95 % critical value {:.2}); a curve is named only when it is both",
        c.worth_ms, c.at_tokens, c.noise_ms, c.f, c.f_critical
    ))
}

/// How the cost of one more input token changes with length under the best-fitting model:
/// a power law with k above 1 or a quadratic with a positive square term grows, below
/// shrinks; `None` for a linear best fit (a constant cost per token).
pub fn marginal_cost_trend(r: &LongContextResult) -> Option<&'static str> {
    let best = r.best_fit.as_deref()?;
    let model = r.fits.iter().find(|m| match m {
        Model::Linear { .. } => best == "linear",
        Model::Quadratic { .. } => best == "quadratic",
        Model::PowerLaw { .. } => best == "power_law",
    })?;
    // Within 5 % of linear, a power law's marginal cost is constant for all practical lengths.
    let trend = |curvature: f64, flat: f64| {
        if curvature > flat {
            "grows"
        } else if curvature < -flat {
            "shrinks"
        } else {
            "stays about constant"
        }
    };
    match *model {
        Model::Linear { .. } => None,
        Model::PowerLaw { k, .. } => Some(trend(k - 1.0, 0.05)),
        Model::Quadratic { c, .. } => Some(trend(c, 0.0)),
    }
}

/// The per-token cost in words: the linear slope as the cost per input token when the best
/// fit is linear; otherwise how the marginal cost changes, with the slope as an average.
pub fn per_token_cost(r: &LongContextResult, us_per_token: f64) -> String {
    match marginal_cost_trend(r) {
        None => format!(", ~{us_per_token:.0} µs per input token"),
        Some(trend) => format!(
            ", the marginal cost per input token {trend} with length (a straight line would average {us_per_token:.0} µs per token)"
        ),
    }
}

fn compliance(
    s: &Session,
    o: &Options,
    r: &LongContextResult,
    requests: u64,
    lengths: &[u32],
) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    c.guardrails("4.8.1", o.disclosure.guardrails.as_deref(), &s.levels);
    c.must(
        "5.9.2",
        "Long Context workload (REQUIRED)",
        true,
        "its form (a document filling the length, then a question) at each length",
    );
    c.must(
        "5.9.2",
        "closed loop at low concurrency (1-4)",
        (1..=4).contains(&r.concurrency),
        format!("concurrency {}", r.concurrency),
    );
    let fewest = r.rows.iter().map(|x| x.requests).min().unwrap_or(0);
    c.must(
        "5.9.2",
        "at least 20 requests per context length",
        requests >= 20 && fewest >= 20,
        format!("{requests} asked; fewest completed: {fewest}"),
    );
    c.should(
        "5.9.2",
        "fixed short output (256 tokens)",
        r.output_tokens == 256,
        format!("{} tokens", r.output_tokens),
    );
    c.must(
        "5.9.3",
        "lengths in ascending order, warm-up with the shortest",
        lengths.windows(2).all(|w| w[0] < w[1]),
        format!("{lengths:?}"),
    );
    c.should(
        "5.9.4",
        "maximum throughput at each length",
        false,
        format!(
            "throughput measured at concurrency {}, not searched per length",
            r.concurrency
        ),
    );
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marginal_cost_follows_the_best_models_curvature() {
        use super::{marginal_cost_trend, per_token_cost, LongContextResult};
        use crate::stats::fit::Model;
        let with = |best: &str, fits: Vec<Model>| LongContextResult {
            best_fit: Some(best.into()),
            fits,
            ..Default::default()
        };
        let linear = Model::Linear { a: 10.0, b: 0.068 };
        // 100, 200, 400 ms at 1K, 4K, 16K tokens: a power law with k = 0.5, cheaper per
        // token as prompts grow.
        let sublinear = with(
            "power_law",
            vec![
                linear,
                Model::PowerLaw {
                    a: 0.0,
                    b: 3.16,
                    k: 0.5,
                },
            ],
        );
        assert_eq!(marginal_cost_trend(&sublinear), Some("shrinks"));
        let superlinear = with(
            "power_law",
            vec![Model::PowerLaw {
                a: 5.0,
                b: 0.01,
                k: 1.3,
            }],
        );
        assert_eq!(marginal_cost_trend(&superlinear), Some("grows"));
        let nearly = with(
            "power_law",
            vec![Model::PowerLaw {
                a: 5.0,
                b: 0.07,
                k: 0.97,
            }],
        );
        assert_eq!(marginal_cost_trend(&nearly), Some("stays about constant"));
        let quad = with(
            "quadratic",
            vec![
                linear,
                Model::Quadratic {
                    a: 1.0,
                    b: 0.05,
                    c: 1e-6,
                },
            ],
        );
        assert_eq!(marginal_cost_trend(&quad), Some("grows"));
        let lin = with("linear", vec![linear]);
        assert_eq!(marginal_cost_trend(&lin), None);
        assert_eq!(per_token_cost(&lin, 68.2), ", ~68 µs per input token");
        assert_eq!(
            per_token_cost(&sublinear, 20.0),
            ", the marginal cost per input token shrinks with length (a straight line would average 20 µs per token)"
        );
    }

    /// Issue 31, item 3: the label, the exponent and R² printed together never contradict
    /// each other: a line beside k = 1.30 says the bend is within the noise.
    #[test]
    fn the_label_and_the_exponent_agree_in_the_answer() {
        let r = LongContextResult {
            best_fit: Some("linear".into()),
            scaling_exponent: Some(1.3),
            origin_exponent: Some(1.2),
            r2: Some(0.98),
            ..Default::default()
        };
        assert_eq!(
            answer(&r),
            "best fit linear (R² = 0.9800), TTFT = a + b·length^1.30 (its bend is within the noise: the line is named) (through the origin, the draft's TTFT ∝ length^k: k = 1.20); 0 lengths from 0 to 0 tokens"
        );
        assert_eq!(exponent_note("linear", 1.02), "");
        assert_eq!(exponent_note("power_law", 1.5), "");
        assert!(exponent_note("quadratic", 1.01).starts_with(" (near 1"));
    }

    #[test]
    fn default_lengths_double_up_to_the_limit() {
        assert_eq!(
            default_lengths(32_768),
            vec![1024, 2048, 4096, 8192, 16384, 32768]
        );
        // llama.cpp's 2,048-token slot: 2048 × 0.9 − 32 − 32 = 1779.
        assert_eq!(default_lengths(1779), vec![128, 256, 512, 1024, 1779]);
        assert_eq!(default_lengths(3000), vec![256, 512, 1024, 2048, 3000]);
    }
}
