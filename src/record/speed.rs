//! How fast the server answered one short request alone, and a few sent together: a fact
//! measured before any load (`runner::preflight`), which the run's configuration carries so
//! the warm-up, the run and the test levels can be sized from it.

/// How fast the server answered the short test request: enough to estimate what a warm-up
/// or a run will cost before it starts (`runner::plan`; measured by `runner::preflight`). Measured on a prompt of a few
/// tokens and a few (`runner::preflight::MAX_TOKENS`) output tokens, so the estimates it gives leave out the
/// workload's prefill and are rough; the progress line corrects them as the run goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// Time to the first token of one request alone, ms.
    pub ttft_ms: f64,
    /// Time per output token after the first, one request alone, ms.
    pub ms_per_token: f64,
    /// Requests' worth of work the server did at once when [`Speed::sent_together`] were
    /// sent together: their count × one request's time alone ÷ the time all of them took
    /// (1: one at a time; `sent_together`: all at once).
    pub served_together: f64,
    /// Requests sent together (1: not measured).
    pub sent_together: u32,
    /// The server closed the connection after an answer although it announced keep-alive
    /// (llama.cpp does after every streamed answer): each request of the run will open one.
    pub closes_connections: bool,
}

impl Speed {
    /// How long one request of `output_tokens` takes alone, ms.
    pub fn request_ms(&self, output_tokens: f64) -> f64 {
        (self.ttft_ms + (output_tokens - 1.0).max(0.0) * self.ms_per_token).max(1e-3)
    }

    /// How many of `streams` requests in flight the server serves at full speed: all of
    /// them when it served (nearly) every one of [`Speed::sent_together`] at once, else as
    /// many as it did.
    pub fn parallel(&self, streams: f64) -> f64 {
        let all_at_once = self.served_together >= 0.75 * f64::from(self.sent_together.max(1));
        let p = if all_at_once {
            streams
        } else {
            self.served_together.min(streams)
        };
        p.max(1.0)
    }

    /// Requests completed per second with `streams` in flight, each of `output_tokens`.
    pub fn rate_per_s(&self, streams: f64, output_tokens: f64) -> f64 {
        self.parallel(streams) * 1000.0 / self.request_ms(output_tokens)
    }
}
