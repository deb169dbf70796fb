//! `selfbench --summary-requests N`: the time and memory a summary of N requests takes,
//! streamed (as a run past `--exact-summary-limit` makes it), read back from a
//! `requests.jsonl` (as `servebench report` does) and exact (every record in memory).

use super::peak_rss_kib;
use crate::metrics::{summarize, SummaryParams};
use anyhow::Result;

/// One synthetic request of `tokens` one-token chunks (a seeded mix of latencies, some
/// failures and classes), the `id`-th of a run of one request per ms.
fn synthetic_request(
    id: u64,
    tokens: u32,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> crate::record::RequestRecord {
    use crate::record::{Chunk, FailureKind, Outcome, RequestRecord};
    use rand::RngExt;
    let start = id * 1_000_000; // one request per ms
    let ttft = rng.random_range(20_000_000..400_000_000u64);
    let mut at = start + ttft;
    let chunks = (0..tokens)
        .map(|_| {
            let c = Chunk {
                at,
                tokens: 1,
                bytes: 4,
            };
            at += rng.random_range(5_000_000..40_000_000u64);
            c
        })
        .collect::<Vec<_>>();
    let failed = id.is_multiple_of(97);
    RequestRecord {
        id,
        class: Some(
            if id.is_multiple_of(3) {
                "long"
            } else {
                "short"
            }
            .into(),
        ),
        scheduled_at: Some(start),
        queued_at: start,
        sent_at: Some(start),
        finished_at: chunks.last().map_or(start, |c| c.at),
        first_content: Some(0),
        output_tokens: tokens,
        max_tokens: tokens,
        input_tokens: 512,
        http_status: Some(200),
        outcome: if failed {
            Outcome::failed(FailureKind::StreamCut, "cut")
        } else {
            Outcome::Ok
        },
        chunks,
        ..Default::default()
    }
}

/// Time and memory to summarise `n` synthetic requests of `tokens` tokens, three ways: as
/// a run past `--exact-summary-limit` streams them (nothing kept), read back from a
/// `requests.jsonl` as `servebench report` does, and exactly with every record in memory.
/// The streamed ways run first, so the process's peak resident set after each is theirs.
pub(super) fn summary_speed(n: u64, tokens: u32) -> Result<()> {
    use crate::metrics::stream::StreamSummary;
    use crate::store::kept::{Keeper, DEFAULT_EXACT_SUMMARY_LIMIT};
    use rand::SeedableRng;
    let rng = || rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mib = |kib: Option<u64>| kib.map_or("?".into(), |k| format!("{:.0}", k as f64 / 1024.0));
    let before = peak_rss_kib();

    let t = std::time::Instant::now();
    let mut streamed = StreamSummary::new(SummaryParams::default());
    let mut g = rng();
    for id in 0..n {
        streamed.add(synthetic_request(id, tokens, &mut g));
    }
    let s = streamed.finish();
    println!(
        "summary, streamed: {n} requests of {tokens} tokens ({} ITL samples) in {:.2} s; peak RSS {} MiB (before: {} MiB)",
        s.itl_ms.map_or(0, |d| d.n),
        t.elapsed().as_secs_f64(),
        mib(peak_rss_kib()),
        mib(before),
    );

    let path = std::env::temp_dir().join(format!(
        "servebench-selfbench-{}-requests.jsonl",
        std::process::id()
    ));
    {
        use std::io::Write;
        let clock = crate::clock::RunClock::start();
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let mut g = rng();
        for id in 0..n {
            let r = synthetic_request(id, tokens, &mut g);
            serde_json::to_writer(
                &mut out,
                &crate::record::wire::WireRecord::from_record(&r, &clock),
            )?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
    }
    let bytes = std::fs::metadata(&path)?.len();
    let t = std::time::Instant::now();
    let mut keeper = Keeper::new(crate::store::kept::KeepLimits::requests(
        DEFAULT_EXACT_SUMMARY_LIMIT,
    ));
    keeper.judge_by(SummaryParams::default());
    let anchor = crate::store::run_dir::earliest_us(&path)?;
    crate::store::run_dir::for_each_request(&path, anchor, |r| keeper.add(r))?;
    let kept = keeper.finish();
    let _ = std::fs::remove_file(&path);
    let summary = match &kept.streamed {
        Some(s) => s.summary.clone().finish(),
        None => summarize(&kept.records, &SummaryParams::default()),
    };
    println!(
        "summary, from requests.jsonl ({:.0} MiB): {} requests in {:.2} s; peak RSS {} MiB",
        bytes as f64 / (1024.0 * 1024.0),
        summary.requests.total,
        t.elapsed().as_secs_f64(),
        mib(peak_rss_kib()),
    );

    let mut g = rng();
    let built = std::time::Instant::now();
    let records: Vec<_> = (0..n)
        .map(|id| synthetic_request(id, tokens, &mut g))
        .collect();
    let build_s = built.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let s = summarize(&records, &SummaryParams::default());
    println!(
        "summary, exact: {n} requests summarised in {:.2} s (building them took {build_s:.2} s); peak RSS {} MiB",
        t.elapsed().as_secs_f64(),
        mib(peak_rss_kib()),
    );
    drop(s);
    Ok(())
}
