//! Response heads and bodies split anywhere, and arbitrary bytes, through the parser and the
//! decoder.

use super::*;

fn decode_all(framing: BodyFraming, parts: &[&[u8]]) -> (Vec<u8>, bool) {
    let mut d = BodyDecoder::new(framing);
    let mut out = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    for p in parts {
        pending.extend_from_slice(p);
        let n = d.decode(&pending, |b| out.extend_from_slice(b)).unwrap();
        pending.drain(..n);
    }
    (out, d.is_done())
}

#[test]
fn head_framing_and_keep_alive() {
    let (h, len) = parse_head(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nxx")
        .unwrap()
        .unwrap();
    assert_eq!(
        (h.status, h.body, h.keep_alive, len),
        (200, BodyFraming::Chunked, true, 80)
    );
    let (h, _) = parse_head(b"HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\nContent-Length: 5\r\nConnection: close\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(
        (h.status, h.body, h.keep_alive),
        (429, BodyFraming::Length(5), false)
    );
    assert_eq!(h.retry_after.as_deref(), Some("2"));
    let (h, _) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
    assert_eq!((h.body, h.keep_alive), (BodyFraming::UntilClose, false));
    assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le")
        .unwrap()
        .is_none());
    assert!(parse_head(b"garbage\r\n\r\n").is_err());
}

#[test]
fn chunked_body_split_anywhere() {
    let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n";
    let (whole, done) = decode_all(BodyFraming::Chunked, &[body]);
    assert_eq!((whole.as_slice(), done), (&b"hello, world"[..], true));
    for cut in 0..body.len() {
        for cut2 in cut..body.len() {
            let (out, done) = decode_all(
                BodyFraming::Chunked,
                &[&body[..cut], &body[cut..cut2], &body[cut2..]],
            );
            assert_eq!(out, whole, "cuts {cut} {cut2}");
            assert!(done);
        }
    }
}

#[test]
fn length_body_stops_at_length() {
    let mut d = BodyDecoder::new(BodyFraming::Length(3));
    let mut out = Vec::new();
    let n = d.decode(b"abcdef", |b| out.extend_from_slice(b)).unwrap();
    assert_eq!((n, out.as_slice(), d.is_done()), (3, &b"abc"[..], true));
}

use proptest::prelude::*;

fn chunked(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in payloads.iter().filter(|p| !p.is_empty()) {
        out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

proptest! {
    /// Any valid chunked body, split anywhere into any number of reads, decodes to the
    /// same payload and is complete.
    #[test]
    fn chunked_bodies_split_anywhere(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..8),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let body = chunked(&payloads);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
        points.sort_unstable();
        points.dedup();
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut prev = 0;
        for p in points {
            parts.push(&body[prev..p]);
            prev = p;
        }
        parts.push(&body[prev..]);
        let (out, done) = decode_all(BodyFraming::Chunked, &parts);
        prop_assert_eq!(out, payloads.concat());
        prop_assert!(done);
    }

    /// Arbitrary bytes never panic the decoder or the head parser; they decode or fail.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut d = BodyDecoder::new(BodyFraming::Chunked);
        let _ = d.decode(&bytes, |_| {});
        let _ = parse_head(&bytes);
    }
}

#[test]
fn bad_chunk_size_is_an_error() {
    let mut d = BodyDecoder::new(BodyFraming::Chunked);
    assert!(d.decode(b"zz\r\n", |_| {}).is_err());
}
