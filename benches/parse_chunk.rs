//! What reading one streamed Chat Completions chunk costs: the fast reader
//! (`client/apis/openai_fast.rs`) against serde's derive, on the chunk shapes of vLLM,
//! llama.cpp and the simulator. `cargo bench --bench parse_chunk`; for instruction counts,
//! immune to a busy machine, run the built binary under `valgrind --tool=callgrind` with
//! `--only serde` and `--only fast` and compare the totals.

use servebench::client::apis::openai::{parse_chunk, parse_chunk_with_serde};
use servebench::client::apis::ApiEvent;
use std::hint::black_box;
use std::time::Instant;

/// Chunks as servers send them (the text tokens vary; the shapes are what cost).
const CHUNKS: [(&str, &str); 3] = [
    (
        "vLLM",
        r#"{"id":"chatcmpl-8c1d3a0e5b7f4e2a9d6c","object":"chat.completion.chunk","created":1767225600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}"#,
    ),
    (
        "llama.cpp",
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" one"}}],"created":1795310488,"id":"chatcmpl-py2QR5jFaBSrGAt5vhrPyXNcb35sQZBt","model":"gemma-3-270m-q4_k_m.gguf","system_fingerprint":"b2-b6433a9","object":"chat.completion.chunk"}"#,
    ),
    (
        "simulator",
        r#"{"id":"sim-000001","object":"chat.completion.chunk","created":1767225600,"model":"sim","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}"#,
    ),
];

const ROUNDS: usize = 200_000;

fn main() {
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    for (name, chunk) in CHUNKS {
        let mut line = format!("{name:>10}:");
        type Reader = for<'a> fn(&'a [u8]) -> Result<ApiEvent<'a>, String>;
        let readers: [(&str, Reader); 2] =
            [("serde", parse_chunk_with_serde), ("fast", parse_chunk)];
        for (reader, parse) in readers {
            if only.as_deref().is_some_and(|o| o != reader) {
                continue;
            }
            let started = Instant::now();
            for _ in 0..ROUNDS {
                let event = parse(black_box(chunk.as_bytes())).expect("a valid chunk");
                black_box(event.content.as_deref().map(str::len));
            }
            let ns = started.elapsed().as_nanos() as f64 / ROUNDS as f64;
            line += &format!("  {reader} {ns:.0} ns");
        }
        println!("{line}");
    }
}
