//! `servebench profile-prefill`: Etalon's prefill-deadline curve. Isolated requests (one at a
//! time, one output token) across prompt lengths; TTFT fitted against prompt tokens by least
//! squares (a + bP + cP², R² reported) and saved for `run --prefill-curve`.

use super::args::ProfilePrefillArgs;
use super::exit;
use super::run::{ready, Ready};
use crate::config::{Limits, LoadPattern, Warmup};
use crate::engine;
use crate::metrics::fluidity::PrefillCurve;
use crate::record::Phase;
use crate::workload::WorkloadSpec;
use anyhow::{Context, Result};

pub fn profile(args: ProfilePrefillArgs) -> Result<u8> {
    let Ready {
        sim,
        resolved,
        tokenizer: tok,
    } = match ready(&args.run)? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let base_dir = resolved.config.out_dir.clone();
    let mut points: Vec<(f64, f64)> = Vec::new();
    println!(
        "{:>10} {:>6} {:>12} {:>12}",
        "prompt", "n", "TTFT mean", "TTFT min"
    );
    for &len in &args.lengths {
        let mut cfg = resolved.config.clone();
        cfg.workload = WorkloadSpec::fixed(len, 1);
        cfg.dataset = None;
        cfg.load = LoadPattern::Closed { concurrency: 1 };
        cfg.limits = Limits {
            requests: Some(args.repeats as u64),
            duration: None,
        };
        cfg.warmup = Warmup::None;
        cfg.request.prefix_cache = false;
        cfg.quiet = true;
        cfg.seed = resolved.config.seed.wrapping_add(len as u64);
        cfg.out_dir = base_dir.join(format!("prefill-{len}"));
        let out = engine::run(&cfg, tok.clone())?;
        let mut ttfts = Vec::new();
        for r in out
            .records
            .iter()
            .filter(|r| r.phase == Phase::Measure && r.outcome.is_ok())
        {
            let Some(first) = r.chunks.first() else {
                continue;
            };
            let prompt = r.usage_prompt_tokens().unwrap_or(r.input_tokens as u64) as f64;
            let ttft = (first.at - r.sent_at) as f64 / 1e6;
            points.push((prompt, ttft));
            ttfts.push(ttft);
        }
        if ttfts.is_empty() {
            eprintln!("warning: no request of {len} tokens completed (is it longer than the server's context?)");
            continue;
        }
        let mean = ttfts.iter().sum::<f64>() / ttfts.len() as f64;
        let min = ttfts.iter().copied().fold(f64::MAX, f64::min);
        println!(
            "{len:>10} {:>6} {:>10.1}ms {:>10.1}ms",
            ttfts.len(),
            mean,
            min
        );
    }
    let curve = PrefillCurve::fit(&points).context("no request completed: nothing to fit")?;
    println!(
        "\nTTFT ≈ {:.3} ms + {:.5} ms/token · P + {:.3e} ms/token² · P²   (R² = {:.4}, {} points)",
        curve.a_ms, curve.b_ms_per_token, curve.c_ms_per_token2, curve.r2, curve.n
    );
    let doc = serde_json::json!({
        "schema_version": crate::report::SCHEMA_VERSION,
        "kind": "prefill_curve",
        "target": resolved.config.target.url.to_string(),
        "model": resolved.config.target.model,
        "tokenizer": tok.name(),
        "created_at": crate::clock::iso8601_ms(crate::clock::RunClock::start().unix_us(0)),
        "curve": curve,
        "points": points,
    });
    std::fs::write(&args.save, serde_json::to_vec_pretty(&doc)?)
        .with_context(|| format!("writing {}", args.save.display()))?;
    println!(
        "Saved to {} (use: servebench run --prefill-curve {})",
        args.save.display(),
        args.save.display()
    );
    drop(sim);
    Ok(exit::OK)
}
