//! Images and audio of a workload: the same seed gives the same bytes (pinned), the
//! encoders' output is valid and as large as drawn, text is unchanged by adding images,
//! folders cycle in a seeded order, datasets name files and URLs.

use super::*;
use crate::tokenizer::TiktokenTokenizer;
use crate::workload::{Generator, RequestSpec, Scenario};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn with_images(images: ImageSpec) -> Scenario {
    Scenario {
        images: Some(images),
        ..Scenario::fixed(32, 8)
    }
}

fn take(s: &Scenario, seed: u64, n: usize) -> Vec<RequestSpec> {
    let tok = TiktokenTokenizer::cl100k();
    let mut g = Generator::new(s, seed, &tok, None).unwrap();
    (0..n).map(|_| g.next_request(&tok).unwrap()).collect()
}

fn bytes_of(p: &MediaPart) -> &[u8] {
    match &p.data {
        MediaData::Bytes(b) => b,
        other => panic!("not in memory: {other:?}"),
    }
}

#[test]
fn same_seed_same_image_bytes_and_the_text_stays_as_it_was() {
    let spec = ImageSpec {
        count: LengthDist::Uniform { min: 0, max: 3 },
        width: LengthDist::Uniform { min: 16, max: 96 },
        height: LengthDist::Uniform { min: 16, max: 96 },
        ..ImageSpec::default()
    };
    let s = with_images(spec);
    let a = take(&s, 42, 12);
    assert_eq!(a, take(&s, 42, 12), "same seed, same parts and bytes");
    let b = take(&s, 43, 12);
    let fp = |r: &[RequestSpec]| -> Vec<String> {
        r.iter()
            .flat_map(|q| q.media.iter().map(|m| m.fingerprint.clone()))
            .collect()
    };
    assert_ne!(fp(&a), fp(&b), "another seed, other pixels");
    // The text is the text-only workload's, request by request.
    let text = take(&Scenario::fixed(32, 8), 42, 12);
    for (with, without) in a.iter().zip(&text) {
        assert_eq!(with.messages, without.messages);
        assert_eq!(with.input_tokens, without.input_tokens);
    }
    for m in a.iter().flat_map(|r| &r.media) {
        let p = probe::probe(bytes_of(m)).unwrap();
        assert_eq!((p.width, p.height), (m.width, m.height));
        assert_eq!(m.bytes, bytes_of(m).len() as u64);
    }
    let counts: Vec<usize> = a.iter().map(|r| r.media.len()).collect();
    assert!(
        counts.contains(&0) && counts.iter().all(|&n| n <= 3),
        "{counts:?}"
    );
    // The first request's parts, pinned: a change here changes every published image.
    let first: Vec<(u32, u32, u64, String)> = a
        .iter()
        .flat_map(|r| &r.media)
        .take(2)
        .map(|m| (m.width, m.height, m.bytes, m.fingerprint.clone()))
        .collect();
    assert_eq!(first, pinned_first_parts(), "{first:?}");
}

/// The sizes and fingerprints of the first two images of `same_seed_...` at seed 42.
fn pinned_first_parts() -> Vec<(u32, u32, u64, String)> {
    // The pixels moved to a stream of the prompt salt's (salt 0 here); the sizes did not.
    vec![
        (63, 70, 13_368, "86dc65b2f8ac6af0".into()),
        (37, 40, 4_548, "62ded5773384fa2d".into()),
    ]
}

#[test]
fn png_and_jpeg_are_valid_and_of_the_drawn_size() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let png = encode::png(&mut rng, 37, 21);
    let mut reader = png::Decoder::new(std::io::Cursor::new(&png))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (37, 21));
    assert_eq!(info.buffer_size(), 37 * 21 * 3);
    let p = probe::probe(&png).unwrap();
    assert_eq!((p.format, p.width, p.height), (MediaFormat::Png, 37, 21));
    let jpeg = encode::jpeg(&mut rng, 300, 17, 90);
    let p = probe::probe(&jpeg).unwrap();
    assert_eq!((p.format, p.width, p.height), (MediaFormat::Jpeg, 300, 17));
    assert!(jpeg.ends_with(&[0xFF, 0xD9]), "ends with EOI");
    let wav = encode::wav(&mut rng, 2_500, 16_000);
    assert_eq!(wav.len(), 44 + 2 * 40_000);
    let p = probe::probe(&wav).unwrap();
    assert_eq!((p.format, p.duration_ms), (MediaFormat::Wav, 2_500));
}

#[test]
fn sessions_send_their_images_with_every_turn_on_the_first_message() {
    let s = Scenario {
        images: Some(ImageSpec {
            width: LengthDist::fixed(8),
            height: LengthDist::fixed(8),
            ..ImageSpec::default()
        }),
        ..Scenario::named("multi-turn-chat").unwrap()
    };
    let tok = TiktokenTokenizer::cl100k();
    let mut g = Generator::new(&s, 3, &tok, None).unwrap();
    let session = g.next_session(&tok).unwrap();
    assert!(session.len() >= 2);
    for turn in &session {
        assert_eq!(turn.media.len(), 1);
        assert_eq!(turn.media[0].user_turn, 0);
        assert_eq!(turn.media[0].fingerprint, session[0].media[0].fingerprint);
    }
}

#[test]
fn a_folder_is_cycled_in_a_seeded_order() {
    let files: Vec<PathBuf> = (0..5)
        .map(|i| PathBuf::from(format!("/f/{i}.png")))
        .collect();
    let s = with_images(ImageSpec {
        count: LengthDist::fixed(1),
        files: files.clone(),
        dir: Some("/f".into()),
        ..ImageSpec::default()
    });
    let reqs = take(&s, 9, 10);
    let names: Vec<&str> = reqs.iter().map(|r| r.media[0].source.as_str()).collect();
    let first: std::collections::BTreeSet<&str> = names[..5].iter().copied().collect();
    assert_eq!(first.len(), 5, "every file once per cycle: {names:?}");
    assert_eq!(names[..5], names[5..], "then again in the same order");
    assert!(matches!(reqs[0].media[0].data, MediaData::File(_)));
    assert_eq!(
        names,
        take(&s, 9, 10)
            .iter()
            .map(|r| r.media[0].source.as_str())
            .collect::<Vec<_>>()
    );
}

#[test]
fn ranges_parse_and_specs_validate() {
    assert_eq!(
        parse_range("0..2", 0),
        Ok(LengthDist::Uniform { min: 0, max: 2 })
    );
    assert_eq!(parse_range("3", 1), Ok(LengthDist::fixed(3)));
    assert!(parse_range("0", 1).is_err());
    assert!(parse_range("5..2", 0).is_err());
    assert!(ImageSpec::default().validate().is_ok());
    let huge = ImageSpec {
        width: LengthDist::fixed(20_000),
        ..ImageSpec::default()
    };
    assert!(huge.validate().unwrap_err().contains("images.width"));
    assert!(AudioSpec::default().validate().is_ok());
}

#[test]
fn dataset_paths_resolve_against_the_dataset_and_urls_pass() {
    let dir = std::env::temp_dir().join(format!("servebench-media-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.png"), b"x").unwrap();
    let ds = dir.join("d.jsonl");
    let refs = dataset_refs(
        &["a.png".into(), "https://example.invalid/b.jpg".into()],
        &[],
        &ds,
    )
    .unwrap();
    assert_eq!(refs[0].location, dir.join("a.png").to_string_lossy());
    assert_eq!(refs[1].location, "https://example.invalid/b.jpg");
    let err = dataset_refs(&["missing.png".into()], &[], &ds).unwrap_err();
    assert!(
        err.contains("image file") && err.contains("missing.png"),
        "{err}"
    );
    let url = MediaPart::named(MediaKind::Image, "https://example.invalid/b.jpg");
    assert!(matches!(url.data, MediaData::Url(_)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run's images are its own, as its words are: another prompt salt keeps every request's
/// image count and sizes (the seed's) and draws other pixels, so a server's multimodal
/// cache cannot answer a new run from an earlier one's images.
#[test]
fn a_prompt_salt_draws_other_pixels_of_the_same_sizes() {
    let s = with_images(ImageSpec {
        count: LengthDist::Uniform { min: 0, max: 3 },
        width: LengthDist::Uniform { min: 16, max: 96 },
        height: LengthDist::Uniform { min: 16, max: 96 },
        ..ImageSpec::default()
    });
    let tok = TiktokenTokenizer::cl100k();
    let salted = |salt: u64| -> Vec<RequestSpec> {
        let mut g = Generator::new(&s, 42, &tok, None)
            .unwrap()
            .with_prompt_salt(salt);
        (0..12).map(|_| g.next_request(&tok).unwrap()).collect()
    };
    let (a, b) = (salted(1), salted(2));
    let sizes = |r: &[RequestSpec]| -> Vec<usize> {
        r.iter()
            .flat_map(|q| q.media.iter().map(|m| bytes_of(m).len()))
            .collect()
    };
    assert_eq!(sizes(&a), sizes(&b), "the same counts and sizes");
    assert!(!sizes(&a).is_empty());
    let pixels = |r: &[RequestSpec]| -> Vec<String> {
        r.iter()
            .flat_map(|q| q.media.iter().map(|m| m.fingerprint.clone()))
            .collect()
    };
    let (pa, pb) = (pixels(&a), pixels(&b));
    assert!(pa.iter().all(|f| !pb.contains(f)), "other pixels");
    assert_eq!(pa, pixels(&salted(1)), "the same salt, the same images");
}
