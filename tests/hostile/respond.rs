//! The writing side: what each [`Behaviour`] puts on the wire, write by write.

use super::{find, Behaviour, Ending, Runtime, Wire, FIXED_TOKENS, PROMPT_TOKENS, SPLIT_PAUSE};
use super::{retryable, stopped, ENDLESS_GAP, TOKEN};
use std::io;
use std::thread;
use std::time::{Duration, Instant};

const PAUSE_SLICE: Duration = Duration::from_millis(10);
/// The pause before a reset, so the bytes written before it reach the client first.
const RST_SETTLE: Duration = Duration::from_millis(20);
const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nServer: hostile\r\nTransfer-Encoding: chunked\r\n\r\n";

/// The writing side of a connection: every write and pause checks the stop flag.
pub(super) struct Out<'a> {
    pub(super) w: &'a mut dyn Wire,
    pub(super) rt: &'a Runtime,
}

impl Out<'_> {
    /// Writes all of `bytes` and flushes them (one `write` when the socket takes it all).
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            if self.rt.stopping() {
                return Err(stopped());
            }
            match self.w.write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if retryable(&e) => {}
                Err(e) => return Err(e),
            }
        }
        loop {
            match self.w.flush() {
                Ok(()) => return Ok(()),
                Err(e) if retryable(&e) && !self.rt.stopping() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// One HTTP chunk, in one write (nothing for no data: an empty chunk would end the body).
    fn chunk(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.write(&chunked(data))
    }

    /// One SSE event with this JSON payload, as one HTTP chunk.
    fn event(&mut self, json: &str) -> io::Result<()> {
        self.chunk(&sse(json))
    }

    /// The terminating chunk.
    fn end(&mut self) -> io::Result<()> {
        self.write(b"0\r\n\r\n")
    }

    /// A complete response with `Content-Length` (none, and no body, for 1xx, 204 and 304);
    /// the connection stays open.
    pub(super) fn response(
        &mut self,
        code: u16,
        content_type: Option<&str>,
        extra: &[(&str, String)],
        body: &[u8],
    ) -> io::Result<Ending> {
        let mut head = format!("HTTP/1.1 {code} {}\r\nServer: hostile\r\n", reason(code));
        if let Some(ct) = content_type {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        let bodiless = code == 204 || code == 304 || (100..200).contains(&code);
        if !bodiless {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        if !bodiless {
            bytes.extend_from_slice(body);
        }
        self.write(&bytes)?;
        Ok(Ending::KeepAlive)
    }

    /// Sleeps in short slices; fails early if the server stops or the client leaves.
    pub(super) fn pause(&mut self, d: Duration) -> io::Result<()> {
        let start = Instant::now();
        loop {
            if self.rt.stopping() {
                return Err(stopped());
            }
            let left = d.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(());
            }
            thread::sleep(left.min(PAUSE_SLICE));
            if self.client_gone() {
                return Err(io::ErrorKind::ConnectionAborted.into());
            }
        }
    }

    /// The client closed or reset its side (a peek sees end of stream or an error).
    fn client_gone(&self) -> bool {
        let tcp = self.w.tcp();
        if tcp.set_nonblocking(true).is_err() {
            return false;
        }
        let r = tcp.peek(&mut [0u8; 1]);
        let _ = tcp.set_nonblocking(false);
        match r {
            Ok(n) => n == 0,
            Err(e) => !retryable(&e),
        }
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Hostile",
    }
}

fn chunked(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

fn sse(json: &str) -> Vec<u8> {
    format!("data: {json}\n\n").into_bytes()
}

/// The JSON of a chat-completion chunk with this delta and finish reason.
fn chunk_json(id: &str, delta: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        r#"{{"id":"{id}","object":"chat.completion.chunk","created":0,"model":"hostile","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
    )
}

fn content_json(id: &str, text: &str) -> String {
    chunk_json(id, &format!(r#"{{"content":"{text}"}}"#), None)
}

/// The events after the content: finish chunk, usage chunk, `[DONE]`.
fn ending_events(id: &str, completion: u32) -> [Vec<u8>; 3] {
    let usage = format!(
        r#"{{"id":"{id}","object":"chat.completion.chunk","created":0,"model":"hostile","choices":[],"usage":{{"prompt_tokens":{PROMPT_TOKENS},"completion_tokens":{completion},"total_tokens":{}}}}}"#,
        PROMPT_TOKENS + completion
    );
    [
        sse(&chunk_json(id, "{}", Some("stop"))),
        sse(&usage),
        b"data: [DONE]\n\n".to_vec(),
    ]
}

/// Every SSE event of a normal stream of `tokens` content events.
fn normal_events(id: &str, tokens: u32) -> Vec<Vec<u8>> {
    let mut events = vec![sse(&chunk_json(id, r#"{"role":"assistant"}"#, None))];
    events.extend((0..tokens).map(|_| sse(&content_json(id, TOKEN))));
    events.extend(ending_events(id, tokens));
    events
}

/// What happens to a streamed response before content event `at` (0-based).
#[derive(Clone, Copy)]
enum Twist {
    None,
    HeadStall(Duration),
    Reset(u32),
    HalfEventReset(u32),
    Close(u32),
    Stall(u32, Duration),
    Malformed(u32),
}

/// A chunked SSE stream of `tokens` content events, `gap` before each, with a twist.
fn stream(o: &mut Out, id: &str, tokens: u32, gap: Duration, twist: Twist) -> io::Result<Ending> {
    o.write(SSE_HEAD)?;
    if let Twist::HeadStall(d) = twist {
        o.pause(d)?;
    }
    let events = normal_events(id, tokens);
    let (role, rest) = events.split_first().expect("a role event");
    let (content, tail) = rest.split_at(tokens as usize);
    o.chunk(role)?;
    for (i, event) in content.iter().enumerate() {
        let i = i as u32;
        match twist {
            Twist::Reset(at) if at == i => return settle_then(o, Ending::Reset),
            Twist::HalfEventReset(at) if at == i => {
                let mut bytes = format!("{:x}\r\n", event.len()).into_bytes();
                bytes.extend_from_slice(&event[..event.len() / 2]);
                o.write(&bytes)?;
                return settle_then(o, Ending::Reset);
            }
            Twist::Close(at) if at == i => return Ok(Ending::Close),
            Twist::Stall(at, d) if at == i => o.pause(d)?,
            Twist::Malformed(at) if at == i => {
                o.chunk(b"data: {\"choices\":[{\"delta\":{\"content\":\" tok\"}\n\n")?
            }
            _ => {}
        }
        o.pause(gap)?;
        o.chunk(event)?;
    }
    for event in tail {
        o.chunk(event)?;
    }
    o.end()?;
    Ok(Ending::KeepAlive)
}

fn settle_then(o: &mut Out, ending: Ending) -> io::Result<Ending> {
    o.pause(RST_SETTLE)?;
    Ok(ending)
}

/// Carries out `behaviour` for one `POST` whose response id is `id`.
pub(super) fn misbehave(o: &mut Out, behaviour: &Behaviour, id: &str) -> io::Result<Ending> {
    use Behaviour as B;
    let fixed = |o: &mut Out, twist| stream(o, id, FIXED_TOKENS, Duration::ZERO, twist);
    let twisted =
        |o: &mut Out, after: u32, twist| stream(o, id, after + FIXED_TOKENS, Duration::ZERO, twist);
    match behaviour {
        B::Normal { tokens, gap } => stream(o, id, *tokens, *gap, Twist::None),
        B::ResetBeforeHeaders => Ok(Ending::Reset),
        B::ResetMidHeaders => {
            o.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-str")?;
            settle_then(o, Ending::Reset)
        }
        B::ResetMidStream { after_events: n } => twisted(o, *n, Twist::Reset(*n)),
        B::ResetMidEvent { after_events: n } => twisted(o, *n, Twist::HalfEventReset(*n)),
        B::CloseMidStream { after_events: n } => twisted(o, *n, Twist::Close(*n)),
        B::StallMidStream {
            after_events: n,
            stall,
        } => twisted(o, *n, Twist::Stall(*n, *stall)),
        B::MalformedJson { after_events: n } => twisted(o, *n, Twist::Malformed(*n)),
        B::Status {
            code,
            content_type,
            body,
        } => o.response(*code, content_type.as_deref(), &[], body),
        B::RetryAfter { code, seconds } => {
            let body = format!(
                r#"{{"error":{{"message":"hostile: overloaded, retry after {seconds} s","type":"overloaded"}}}}"#
            );
            let extra = [("Retry-After", seconds.to_string())];
            o.response(*code, Some("application/json"), &extra, body.as_bytes())
        }
        B::StallBeforeFirstByte(d) => {
            o.pause(*d)?;
            fixed(o, Twist::None)
        }
        B::StallAfterHead(d) => fixed(o, Twist::HeadStall(*d)),
        B::NoDone => {
            o.write(SSE_HEAD)?;
            let events = normal_events(id, FIXED_TOKENS);
            for event in &events[..=FIXED_TOKENS as usize] {
                o.chunk(event)?;
            }
            o.end()?;
            Ok(Ending::KeepAlive)
        }
        B::DoneThenMore => {
            o.write(SSE_HEAD)?;
            for event in normal_events(id, FIXED_TOKENS) {
                o.chunk(&event)?;
            }
            for _ in 0..2 {
                o.event(&content_json(id, " late"))?;
            }
            o.end()?;
            Ok(Ending::KeepAlive)
        }
        B::InvalidUtf8 => {
            o.write(SSE_HEAD)?;
            o.event(&chunk_json(id, r#"{"role":"assistant"}"#, None))?;
            o.event(&content_json(id, TOKEN))?;
            let json = content_json(id, "bad ## bytes");
            let (before, after) = json.split_once("##").expect("the marker");
            let mut bad = b"data: ".to_vec();
            bad.extend_from_slice(before.as_bytes());
            bad.extend_from_slice(b"\xff\xfe");
            bad.extend_from_slice(after.as_bytes());
            bad.extend_from_slice(b"\n\n");
            o.chunk(&bad)?;
            o.event(&content_json(id, TOKEN))?;
            for event in ending_events(id, 3) {
                o.chunk(&event)?;
            }
            o.end()?;
            Ok(Ending::KeepAlive)
        }
        B::SplitUtf8 => split_utf8(o, id),
        B::HugeLine { bytes } => huge_line(o, id, *bytes),
        B::Endless => {
            o.write(SSE_HEAD)?;
            o.event(&chunk_json(id, r#"{"role":"assistant"}"#, None))?;
            let event = chunked(&sse(&content_json(id, TOKEN)));
            loop {
                o.pause(ENDLESS_GAP)?;
                o.write(&event)?;
            }
        }
        B::SlowDrip { bytes_per_sec } => {
            let mut all = SSE_HEAD.to_vec();
            for event in normal_events(id, FIXED_TOKENS) {
                all.extend_from_slice(&chunked(&event));
            }
            all.extend_from_slice(b"0\r\n\r\n");
            let step = Duration::from_secs(1) / (*bytes_per_sec).max(1);
            for byte in all {
                o.write(&[byte])?;
                o.pause(step)?;
            }
            Ok(Ending::KeepAlive)
        }
        B::ContentLengthBody => {
            let events = normal_events(id, FIXED_TOKENS);
            let len: usize = events.iter().map(Vec::len).sum();
            o.write(format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nServer: hostile\r\nContent-Length: {len}\r\n\r\n").as_bytes())?;
            for event in events {
                o.write(&event)?;
            }
            Ok(Ending::KeepAlive)
        }
        B::UntilClose => {
            o.write(
                b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nServer: hostile\r\n\r\n",
            )?;
            for event in normal_events(id, FIXED_TOKENS) {
                o.write(&event)?;
            }
            Ok(Ending::Close)
        }
    }
}

/// `SplitUtf8`: the first two content events are cut into HTTP chunks inside a character;
/// the last one is a single HTTP chunk written in two TCP writes cut inside a character.
/// Every write is followed by [`SPLIT_PAUSE`].
fn split_utf8(o: &mut Out, id: &str) -> io::Result<Ending> {
    o.write(SSE_HEAD)?;
    o.event(&chunk_json(id, r#"{"role":"assistant"}"#, None))?;
    // Cut points, counted from the start of the text in the event's bytes.
    let texts = ["café", " 日本", " 🎉"];
    for (k, text) in texts.iter().enumerate() {
        let event = sse(&content_json(id, text));
        let at = find(&event, text.as_bytes()).expect("the text is in its event");
        let cuts: Vec<usize> = match k {
            0 => vec![at + 4],         // c a f | 0xC3 | 0xA9
            1 => vec![at + 2, at + 6], // ' ' 0xE6 | 0x97 0xA5 0xE6 0x9C | 0xAC
            _ => vec![at + 3],         // ' ' 0xF0 0x9F | 0x8E 0x89
        };
        if k < 2 {
            let mut from = 0;
            for cut in cuts.into_iter().chain([event.len()]) {
                o.chunk(&event[from..cut])?;
                o.pause(SPLIT_PAUSE)?;
                from = cut;
            }
        } else {
            let whole = chunked(&event);
            let split = cuts[0] + format!("{:x}\r\n", event.len()).len();
            o.write(&whole[..split])?;
            o.pause(SPLIT_PAUSE)?;
            o.write(&whole[split..])?;
            o.pause(SPLIT_PAUSE)?;
        }
    }
    for event in ending_events(id, texts.len() as u32) {
        o.chunk(&event)?;
    }
    o.end()?;
    Ok(Ending::KeepAlive)
}

/// `HugeLine`: one never-ended `data:` line of `bytes` bytes, then silence.
fn huge_line(o: &mut Out, id: &str, bytes: u64) -> io::Result<Ending> {
    o.write(SSE_HEAD)?;
    o.event(&chunk_json(id, r#"{"role":"assistant"}"#, None))?;
    let prefix = br#"data: {"choices":[{"index":0,"delta":{"content":""#;
    let take = prefix.len().min(bytes as usize);
    o.chunk(&prefix[..take])?;
    let mut left = bytes - take as u64;
    let piece = vec![b'x'; 64 * 1024];
    while left > 0 {
        let n = (piece.len() as u64).min(left) as usize;
        o.chunk(&piece[..n])?;
        left -= n as u64;
    }
    Ok(Ending::Hold)
}
