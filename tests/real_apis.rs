//! The APIs llama.cpp serves besides chat (`/v1/responses`, `/v1/messages`, its native
//! `/completion`) agree with its chat route: lengths, usage and timings within noise.
//!
//! Called from `real_server::llama_cpp_server_end_to_end` (before that test kills the
//! server), so it shares its `#[ignore]` and its server.

use crate::common::{config, run, temp_dir};
use servebench::record::{Phase, TokenSource};

/// Median client decode rate of the measured records, tokens/s, from the first to the last
/// chunk of any text.
fn decode_rate(records: &[servebench::record::RequestRecord]) -> f64 {
    let mut rates: Vec<f64> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure && r.chunks.len() > 1)
        .map(|r| {
            let (first, last) = (r.chunks[0].at, r.chunks.last().unwrap().at);
            (r.output_tokens - 1) as f64 / ((last - first) as f64 / 1e9)
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

pub fn apis_agree_with_chat(url: &str) {
    let mut chat_rate = None;
    for endpoint in ["chat", "responses", "messages", "llamacpp"] {
        let (out, s) = run(&config(
            url,
            &[
                "--warmup",
                "none",
                "--endpoint",
                endpoint,
                "--input-tokens",
                "32",
                "--output-tokens",
                "24",
                "--concurrency",
                "1",
                "--requests",
                "3",
                "--timeout",
                "120s",
            ],
            &temp_dir(&format!("real-api-{endpoint}")),
        ));
        assert_eq!(
            s.requests.completed,
            3,
            "{endpoint}: {:?}",
            out.records.iter().map(|r| &r.outcome).collect::<Vec<_>>()
        );
        for r in &out.records {
            // ignore_eos is honoured on every route, and the server's usage is read.
            assert_eq!(r.output_tokens, 24, "{endpoint}");
            assert_eq!(
                r.output_tokens_source,
                TokenSource::ServerUsage,
                "{endpoint}"
            );
            assert_eq!(r.usage_completion_tokens(), Some(24), "{endpoint}");
            assert!(r.usage_prompt_tokens().unwrap() > 0, "{endpoint}");
            assert_eq!(
                r.chunks.iter().map(|c| c.tokens).sum::<u32>(),
                24,
                "{endpoint}: per-chunk counts add up"
            );
            if endpoint != "llamacpp" {
                assert!(r.response_id.is_some(), "{endpoint}: the server's id");
            }
            if matches!(endpoint, "responses" | "llamacpp") {
                // llama.cpp's own timings ride on these routes: its prompt time fits in the
                // client's time to the first chunk.
                let t = r.server_timing.as_ref().expect("llama.cpp timings");
                assert_eq!(t.predicted_n, Some(24), "{endpoint}");
                let first_ms = (r.chunks[0].at - r.submitted_at().unwrap()) as f64 / 1e6;
                assert!(t.prompt_ms.unwrap() <= first_ms, "{endpoint}");
                // The client's decode span against the server's own, for the same request at
                // the same moment (so whatever else loads the machine slows both alike):
                // 23 gaps between 24 tokens against the server's generation time.
                let span_ms = (r.chunks.last().unwrap().at - r.chunks[0].at) as f64 / 1e6;
                let server_ms = t.predicted_ms.unwrap();
                assert!(
                    (0.5..=2.0).contains(&(span_ms / server_ms)),
                    "{endpoint}: client decode span {span_ms:.1} ms against the server's {server_ms:.1} ms"
                );
            }
            if endpoint == "llamacpp" {
                assert_eq!(
                    r.chunk_tokens_source,
                    servebench::record::ChunkTokenSource::StreamedUsage,
                    "tokens_predicted gives exact tokens per chunk"
                );
            }
        }
        let rate = decode_rate(&out.records);
        match chat_rate {
            None => chat_rate = Some(rate),
            // The same server, seconds apart, but the tests binary runs other tests on the
            // same two cores: a route's decode rate moved by a factor of 3 between two
            // measurements in CI. So only a gross error (time units, the prompt counted as
            // output) is caught here; the routes with llama.cpp's timings are checked against
            // the server's own decode time above, request by request.
            Some(chat) => assert!(
                (0.1..=10.0).contains(&(rate / chat)),
                "{endpoint}: decode rate {rate:.1} tok/s against chat's {chat:.1}"
            ),
        }
    }
}
