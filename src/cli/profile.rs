//! `servebench profile-prefill`: the prefill curve of Etalon's fluidity-index, on its own.
//!
//! The same isolated profile every `run` does before measuring (one request at a time, one
//! output token, no prefix reuse, the first request per length discarded, the same
//! first-token rule), at the lengths given, saved with where it was profiled for
//! `run --prefill-curve`.

use crate::config::{Limits, PrefillSetup, ProfilePlan, Warmup};
use crate::flags::ProfilePrefillArgs;
use crate::pipeline::exit;
use crate::pipeline::target::{ready, Ready};
use crate::runner::{self, RunError};
use crate::schedule::LoadPattern;
use anyhow::{Context, Result};
use std::time::Duration;

pub fn profile(args: ProfilePrefillArgs) -> Result<u8> {
    let Ready {
        sim,
        resolved,
        server,
        tokenizer: tok,
        ..
    } = ready(&args.run)?;
    let mut cfg = resolved.config;
    cfg.load = LoadPattern::Closed { concurrency: 1 };
    cfg.limits = Limits {
        requests: Some(0),
        duration: None,
    };
    cfg.warmup = Warmup::None;
    cfg.prefill = PrefillSetup::Profile(ProfilePlan {
        lengths: Some(args.lengths.clone()),
        repeats: args.repeats.max(1),
        budget: Duration::from_secs(24 * 3600),
        max_prompt_tokens: server.context_tokens,
    });
    let out = match runner::run(&cfg, tok, &server) {
        Ok(o) => o,
        Err(RunError::Ready(e)) => {
            eprintln!("error: {e}");
            return Ok(exit::USAGE);
        }
        Err(e) => return Err(e.into()),
    };
    let report = out.profile.context("the profile did not run")?;
    println!(
        "{:>10} {:>6} {:>12} {:>12}",
        "prompt", "n", "TTFT mean", "TTFT min"
    );
    for (len, ttfts) in &report.points {
        if ttfts.is_empty() {
            eprintln!("warning: no request of {len} tokens completed (see the run folder's requests.jsonl)");
            continue;
        }
        let mean = ttfts.iter().sum::<f64>() / ttfts.len() as f64;
        let min = ttfts.iter().copied().fold(f64::MAX, f64::min);
        println!("{len:>10} {:>6} {mean:>10.1}ms {min:>10.1}ms", ttfts.len());
    }
    let Some(profiled) = out.prefill_curve else {
        eprintln!(
            "error: no isolated request completed: nothing to fit ({})",
            report.source
        );
        return Ok(exit::FAILED);
    };
    let c = profiled.curve;
    println!(
        "\nTTFT ≈ {:.3} ms + {:.5} ms/token · P + {:.3e} ms/token² · P²   (R² = {:.4}, {} points)",
        c.a_ms, c.b_ms_per_token, c.c_ms_per_token2, c.r2, c.n
    );
    std::fs::write(&args.save, serde_json::to_vec_pretty(&profiled)?)
        .with_context(|| format!("writing {}", args.save.display()))?;
    println!(
        "Saved to {} (profiled on {} {}; use: servebench run --prefill-curve {})",
        args.save.display(),
        server.engine.as_deref().unwrap_or("an unidentified engine"),
        server.version.as_deref().unwrap_or(""),
        args.save.display()
    );
    drop(sim);
    Ok(exit::OK)
}
