//! Images and audio end to end against the simulator: every record's image count, bytes,
//! body size and input tokens agree with what the simulator received and charged (tiles
//! counted here by hand from the sizes the workload drew), TTFT holds the analytic prefill
//! of those tiles, and the summary and the reports say how much of TTFT was the upload.
//! Datasets that name files and URLs, image folders, refusals and `workload export` too.

use crate::common::{config, run, servebench, temp_dir, truth_by_id};
use servebench::record::{InputTokenSource, Phase, RequestRecord};
use servebench::sim::{SimConfig, SimServer, TruthRecord};
use servebench::tokenizer::TiktokenTokenizer;
use servebench::workload::{Generator, RequestSpec};
use std::collections::HashMap;

/// Fixed timing: TTFT = 20 ms + 0.05 ms per prompt token (image tokens included), then a
/// token every 2 ms; the simulator's default vision model (512-px tiles of 256 tokens).
fn sim_config() -> SimConfig {
    let mut c = SimConfig::fixed(20.0, 2.0);
    c.fixed.as_mut().unwrap().prefill_ms_per_token = 0.05;
    c
}

/// Tiles of a `w` × `h` image, by hand: 512-pixel tiles, at most 12.
fn tiles(w: u32, h: u32) -> u32 {
    (w.div_ceil(512) * h.div_ceil(512)).min(12)
}

/// Runs `args` against `sim`; the measured records, the summary and the truth by id.
fn drive(
    sim: &SimServer,
    tag: &str,
    args: &[&str],
) -> (
    servebench::config::RunConfig,
    Vec<RequestRecord>,
    servebench::metrics::RunSummary,
    HashMap<String, TruthRecord>,
) {
    let cfg = config(&sim.base_url(), args, &temp_dir(&format!("images-{tag}")));
    let (out, summary) = run(&cfg);
    let truth = truth_by_id(sim, out.records.len());
    let records = out
        .records
        .into_iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    (cfg, records, summary, truth)
}

/// The requests the run's workload drew, by index (the same seed regenerates them).
fn specs(cfg: &servebench::config::RunConfig, n: usize) -> Vec<RequestSpec> {
    let tok = TiktokenTokenizer::cl100k();
    let mut g = Generator::new(&cfg.workload, cfg.seed, &tok, cfg.dataset.clone()).unwrap();
    (0..n).map(|_| g.next_request(&tok).unwrap()).collect()
}

#[test]
fn image_counts_bytes_and_input_tokens_match_the_simulators_truth() {
    let sim = SimServer::spawn(sim_config(), 0).unwrap();
    let args = [
        "--images-per-request",
        "0..3",
        "--image-width",
        "200..1100",
        "--image-height",
        "200..1100",
        "--input-tokens",
        "32",
        "--output-tokens",
        "4",
        "--concurrency",
        "4",
        "--requests",
        "16",
        "--warmup",
        "none",
    ];
    let (cfg, records, s, truth) = drive(&sim, "truth", &args);
    assert_eq!(s.requests.completed, 16, "{:?}", records[0].outcome);
    let specs = specs(&cfg, 16);
    let (mut images, mut image_bytes, mut prompt_tokens) = (0u64, 0u64, 0u64);
    for r in &records {
        let t = &truth[r.response_id.as_deref().expect("the answer's id")];
        let spec = &specs[r.id as usize];
        let tiles_by_hand: u32 = spec.media.iter().map(|m| tiles(m.width, m.height)).sum();
        assert_eq!(r.media.images as usize, spec.media.len());
        assert_eq!(
            r.media.images, t.media.images,
            "images sent = images received"
        );
        assert_eq!(t.media.image_tiles, tiles_by_hand, "the simulator's tiles");
        let bytes: u64 = spec.media.iter().map(|m| m.bytes).sum();
        assert_eq!(r.media.image_bytes, bytes);
        assert_eq!(r.body_bytes, t.body_bytes, "body bytes sent = received");
        assert_eq!(t.prompt_tokens, 32 + 256 * tiles_by_hand);
        if r.media.any() {
            assert_eq!(r.input_tokens, t.prompt_tokens, "input tokens from usage");
            assert_eq!(r.input_tokens_source, InputTokenSource::ServerUsage);
            assert_eq!(r.text_input_tokens, Some(32));
        } else {
            assert_eq!(
                (r.input_tokens, r.input_tokens_source),
                (32, InputTokenSource::Workload)
            );
        }
        // The wait from the first byte written holds the analytic prefill of text and
        // tiles: the simulator's first token came that long after it had the whole request,
        // and the client saw it no sooner. (1 µs below it for Duration's rounding to ns.)
        let analytic_ms = 20.0 + 0.05 * f64::from(t.prompt_tokens) - 0.001;
        let first = t.token_times[0].0.duration_since(t.received).as_secs_f64() * 1e3;
        assert!(
            first >= analytic_ms && first < analytic_ms + 100.0,
            "{first} vs {analytic_ms}"
        );
        let ttft = r.derived.as_ref().unwrap().ttft_ms.unwrap();
        let upload = r.upload_ms().expect("the time to send the body");
        assert!(upload >= 0.0, "{upload}");
        // TTFT starts at T_submit, when the client saw its last write return: the upload is
        // before it. That return can come after the server has read the body (a body larger
        // than the socket's buffer: the last write waits for room, and the task is woken
        // late on a loaded machine), so TTFT alone may fall short of the analytic prefill
        // by that delay, measured at up to 1.6 ms here; with the upload it cannot.
        assert!(
            ttft + upload >= analytic_ms,
            "TTFT {ttft} + upload {upload} < {analytic_ms}"
        );
        images += u64::from(r.media.images);
        image_bytes += r.media.image_bytes;
        prompt_tokens += u64::from(t.prompt_tokens);
    }
    let m = s.media.as_ref().expect("the media summary");
    assert_eq!((m.images, m.image_bytes), (images, image_bytes));
    let with_media = records.iter().filter(|r| r.media.any()).count() as u64;
    assert_eq!(
        (m.requests, m.input_tokens_from_usage),
        (with_media, with_media)
    );
    assert_eq!(
        s.total_input_tokens, prompt_tokens,
        "usage counts every tile"
    );
    let (ttft, with_upload) = (m.ttft_ms.unwrap(), m.ttft_with_upload_ms.unwrap());
    assert!(m.upload_ms.is_some() && ttft.p50 >= 20.0 && with_upload.min >= ttft.min);
    sim.shutdown();
}

#[test]
fn audio_and_jpeg_are_charged_by_their_headers() {
    let sim = SimServer::spawn(sim_config(), 0).unwrap();
    let args = [
        "--images-per-request",
        "1",
        "--image-size",
        "1300x500",
        "--image-format",
        "jpeg",
        "--audio-per-request",
        "1",
        "--audio-seconds",
        "1..4",
        "--input-tokens",
        "16",
        "--output-tokens",
        "2",
        "--concurrency",
        "2",
        "--requests",
        "6",
        "--warmup",
        "none",
    ];
    let (cfg, records, s, truth) = drive(&sim, "audio", &args);
    assert_eq!(s.requests.completed, 6);
    let specs = specs(&cfg, 6);
    for r in &records {
        let t = &truth[r.response_id.as_deref().unwrap()];
        let clip = &specs[r.id as usize].media[1];
        assert_eq!(clip.format, servebench::workload::media::MediaFormat::Wav);
        assert_eq!(t.media.audio_ms, clip.duration_ms);
        // 3 × 1 tiles; 25 audio tokens a second, rounded up.
        let audio_tokens = (f64::from(clip.duration_ms) * 25.0 / 1e3).ceil() as u32;
        assert_eq!(t.prompt_tokens, 16 + 3 * 256 + audio_tokens);
        assert_eq!(r.input_tokens, t.prompt_tokens);
        assert_eq!((r.media.images, r.media.audio), (1, 1));
        assert_eq!(r.media.audio_bytes, 44 + u64::from(clip.duration_ms) * 32);
    }
    sim.shutdown();
}

#[test]
fn datasets_and_folders_name_their_images() {
    let dir = temp_dir("images-files");
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
    let png = servebench::workload::media::encode::png(&mut rng, 1030, 20); // 3 tiles
    std::fs::write(dir.join("a.png"), &png).unwrap();
    let jsonl = "{\"prompt\": \"describe the picture\", \"images\": [\"a.png\"], \"max_tokens\": 3}\n{\"prompt\": \"and this one\", \"images\": [\"https://example.invalid/b.jpg\"], \"max_tokens\": 3}\n";
    std::fs::write(dir.join("d.jsonl"), jsonl).unwrap();
    let sim = SimServer::spawn(sim_config(), 0).unwrap();
    let ds = dir.join("d.jsonl");
    let args = [
        "--dataset",
        ds.to_str().unwrap(),
        "--requests",
        "4",
        "--concurrency",
        "1",
        "--warmup",
        "none",
    ];
    let (_, records, s, truth) = drive(&sim, "dataset", &args);
    assert_eq!(s.requests.completed, 4);
    for r in &records {
        let t = &truth[r.response_id.as_deref().unwrap()];
        let text = r.text_input_tokens.unwrap();
        // The file: its 3 tiles; the URL: not fetched, 1 tile.
        let tiles = if r.media.image_bytes > 0 { 3 } else { 1 };
        assert_eq!(t.prompt_tokens, text + 256 * tiles, "{r:?}");
        assert_eq!(r.input_tokens, t.prompt_tokens);
        if r.media.image_bytes > 0 {
            assert_eq!(r.media.image_bytes, png.len() as u64);
        }
    }
    // A folder: its images in turn, as they are.
    let folder = dir.join("pictures");
    std::fs::create_dir_all(&folder).unwrap();
    for (i, (w, h)) in [(10u32, 10u32), (600, 10), (1100, 1100)].iter().enumerate() {
        let bytes = servebench::workload::media::encode::png(&mut rng, *w, *h);
        std::fs::write(folder.join(format!("{i}.png")), bytes).unwrap();
    }
    std::fs::write(folder.join("notes.txt"), "not an image").unwrap();
    let args = [
        "--image-dir",
        folder.to_str().unwrap(),
        "--input-tokens",
        "8",
        "--output-tokens",
        "2",
        "--requests",
        "6",
        "--concurrency",
        "1",
        "--warmup",
        "none",
    ];
    let (_, records, _, truth) = drive(&sim, "folder", &args);
    let mut charged: Vec<u32> = records
        .iter()
        .map(|r| truth[r.response_id.as_deref().unwrap()].media.image_tiles)
        .collect();
    charged.sort();
    assert_eq!(charged, vec![1, 1, 2, 2, 9, 9], "each file twice");
    sim.shutdown();
}

#[test]
fn endpoints_that_cannot_carry_images_refuse_them_and_export_describes_them() {
    let out = temp_dir("images-refused");
    for (endpoint, flag) in [
        ("completions", "--images-per-request"),
        ("messages", "--audio-per-request"),
        ("embeddings", "--images-per-request"),
    ] {
        let o = servebench(&[
            "run",
            "--endpoint",
            endpoint,
            flag,
            "1",
            "--out",
            out.to_str().unwrap(),
            "--force",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{endpoint}: {err}");
        assert!(err.contains("cannot carry"), "{endpoint}: {err}");
    }
    let export = || {
        servebench(&[
            "workload",
            "export",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
            "--images-per-request",
            "2",
            "--image-size",
            "64x32",
            "--requests",
            "3",
        ])
    };
    let o = export();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let media = first["media"].as_array().unwrap();
    assert_eq!(media.len(), 2);
    assert_eq!(
        (media[0]["width"].as_u64(), media[0]["height"].as_u64()),
        (Some(64), Some(32))
    );
    assert_eq!(media[0]["format"], "png");
    assert_eq!(
        String::from_utf8_lossy(&export().stdout),
        text,
        "the same bytes every time"
    );
}
