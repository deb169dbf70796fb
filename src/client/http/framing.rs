//! What comes back on a connection: the response head parsed, and the body decoded in
//! place whatever its framing (`Content-Length`, chunked, until close).

use super::HttpError;

/// The parts of a response head the client acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub body: BodyFraming,
    /// The server allows reusing the connection.
    pub keep_alive: bool,
    pub retry_after: Option<String>,
    pub content_type: Option<String>,
    /// The `Server` header (engines name themselves there).
    pub server: Option<String>,
    /// The `Date` header (the server's clock, one-second resolution; scale-out's clock
    /// check reads it).
    pub date: Option<String>,
}

/// How the end of the body is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    Length(u64),
    Chunked,
    UntilClose,
}

/// Parses a response head; `None` when more bytes are needed.
pub fn parse_head(bytes: &[u8]) -> Result<Option<(ResponseHead, usize)>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(HttpError::Invalid(e.to_string())),
    };
    let status = resp.code.unwrap_or(0);
    let http10 = resp.version == Some(0);
    let mut content_length = None;
    let mut chunked = false;
    let mut keep_alive = !http10;
    let mut retry_after = None;
    let mut content_type = None;
    let mut server = None;
    let mut date = None;
    for h in resp.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            content_length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| HttpError::Invalid(format!("bad content-length `{value}`")))?,
            );
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .to_ascii_lowercase()
                .split(',')
                .any(|t| t.trim() == "chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = value.to_ascii_lowercase();
            if v.contains("close") {
                keep_alive = false;
            } else if v.contains("keep-alive") {
                keep_alive = true;
            }
        } else if h.name.eq_ignore_ascii_case("retry-after") {
            retry_after = Some(value.to_owned());
        } else if h.name.eq_ignore_ascii_case("content-type") {
            content_type = Some(value.to_owned());
        } else if h.name.eq_ignore_ascii_case("server") {
            server = Some(value.to_owned());
        } else if h.name.eq_ignore_ascii_case("date") {
            date = Some(value.to_owned());
        }
    }
    let body = if chunked {
        BodyFraming::Chunked
    } else if let Some(n) = content_length {
        BodyFraming::Length(n)
    } else if status == 204 || status == 304 || (100..200).contains(&status) {
        BodyFraming::Length(0)
    } else {
        keep_alive = false;
        BodyFraming::UntilClose
    };
    Ok(Some((
        ResponseHead {
            status,
            body,
            keep_alive,
            retry_after,
            content_type,
            server,
            date,
        },
        len,
    )))
}

/// Streaming decoder of a response body, whatever its framing.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk with this many bytes left.
    Data(u64),
    /// Expecting the CRLF after chunk data.
    DataEnd,
    /// Reading trailer lines after the last chunk.
    Trailer,
    /// `Content-Length` body with this many bytes left.
    Length(u64),
    UntilClose,
    Done,
}

impl BodyDecoder {
    pub fn new(framing: BodyFraming) -> Self {
        let state = match framing {
            BodyFraming::Chunked => State::Size,
            BodyFraming::Length(0) => State::Done,
            BodyFraming::Length(n) => State::Length(n),
            BodyFraming::UntilClose => State::UntilClose,
        };
        Self { state }
    }

    /// The whole body has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The body ends at connection close, so EOF is its normal end.
    pub fn ends_at_close(&self) -> bool {
        self.state == State::UntilClose
    }

    /// Decodes `input`, passing payload bytes to `on_data`; returns bytes consumed.
    pub fn decode(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<usize, HttpError> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Done => break,
                State::UntilClose => {
                    on_data(&input[pos..]);
                    pos = input.len();
                }
                State::Length(left) => {
                    let take = (left as usize).min(input.len() - pos);
                    on_data(&input[pos..pos + take]);
                    pos += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::Done
                    } else {
                        State::Length(left)
                    };
                }
                State::Data(left) => {
                    let take = (left as usize).min(input.len() - pos);
                    on_data(&input[pos..pos + take]);
                    pos += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                }
                State::DataEnd => match self.data_end(&input[pos..])? {
                    Some(used) => pos += used,
                    None => break,
                },
                State::Size => match self.chunk_size(&input[pos..])? {
                    Some(used) => pos += used,
                    None => break,
                },
                State::Trailer => match self.trailer_line(&input[pos..]) {
                    Some(used) => pos += used,
                    None => break,
                },
            }
        }
        Ok(pos)
    }

    /// The CRLF after a chunk's data (a bare LF accepted), at the start of `rest` (never
    /// empty): the bytes it used, or `None` until it has come whole.
    #[inline]
    fn data_end(&mut self, rest: &[u8]) -> Result<Option<usize>, HttpError> {
        if rest.len() < 2 {
            if rest == b"\n" {
                self.state = State::Size;
                return Ok(Some(1));
            }
            // One byte (normally the \r): wait for the next.
            return Ok(None);
        }
        let used = if &rest[..2] == b"\r\n" {
            2
        } else if rest[0] == b'\n' {
            1
        } else {
            return Err(HttpError::Invalid("missing CRLF after chunk data".into()));
        };
        self.state = State::Size;
        Ok(Some(used))
    }

    /// A chunk-size line at the start of `rest`, which leads to the chunk's data (or to the
    /// trailer after the last, empty chunk): the bytes it used, or `None` until it has come
    /// whole.
    #[inline]
    fn chunk_size(&mut self, rest: &[u8]) -> Result<Option<usize>, HttpError> {
        let (used, size) = match httparse::parse_chunk_size(rest) {
            Ok(httparse::Status::Complete(done)) => done,
            Ok(httparse::Status::Partial) => {
                if rest.len() > 1024 {
                    return Err(HttpError::Invalid("chunk-size line too long".into()));
                }
                return Ok(None);
            }
            Err(_) => {
                let shown = String::from_utf8_lossy(&rest[..rest.len().min(20)]);
                return Err(HttpError::Invalid(format!("bad chunk size `{shown}`")));
            }
        };
        self.state = if size == 0 {
            State::Trailer
        } else {
            State::Data(size)
        };
        Ok(Some(used))
    }

    /// One trailer line at the start of `rest` (an empty one ends the body): the bytes it
    /// used, or `None` until a whole line has come.
    #[inline]
    fn trailer_line(&mut self, rest: &[u8]) -> Option<usize> {
        let nl = memchr::memchr(b'\n', rest)?;
        let line = &rest[..nl];
        if line.is_empty() || line == b"\r" {
            self.state = State::Done;
        }
        Some(nl + 1)
    }
}
