//! Facts about a run as a whole that the runner observed and later stages report: what the
//! warm-up achieved, how the generator itself behaved, and how the prefill profile went.
//!
//! Plain data, so `metrics` and `report` can read them without depending on the runner.

use crate::stats::Distribution;
use serde::{Deserialize, Serialize};

/// What the warm-up did (draft 4.5), against what the draft asks of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WarmupReport {
    /// The policy, in words.
    pub policy: String,
    /// Requests completed or failed during warm-up.
    pub requests: u64,
    /// Output tokens received during warm-up.
    pub output_tokens: u64,
    /// What the draft requires before measuring (auto policy): at least this many requests…
    pub required_requests: Option<u64>,
    /// …and at least this many output tokens.
    pub required_output_tokens: Option<u64>,
    /// E2E of each verification probe, ms.
    pub probe_e2e_ms: Vec<f64>,
    /// Two consecutive probes differed by < 10 % (draft 4.5.2).
    pub stabilized: bool,
    /// The warm-up stopped at its time cap (`--warmup-max`) before reaching its targets.
    pub capped: bool,
    /// The cap, s.
    pub cap_s: f64,
    /// Who set the cap when not `--warmup-max`: "half the measured phase" (a run's own
    /// proportion) or "a --quick test's level".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_source: Option<String>,
    /// The warm-up met the draft's requirements (false for a cold start or a capped warm-up).
    pub compliant: bool,
}

/// How well the load generator kept up, judged from its own figures only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GeneratorReport {
    /// Open loop: planned send time → the request task started (the generator's own
    /// lateness: its dispatcher thread and runtime), ms.
    pub dispatch_lag_ms: Option<Distribution>,
    /// Attempt → request bytes written: pool wait, TCP and TLS set-up, and the server's
    /// accept queue. Long waits here are the server's (or the network's), not the
    /// generator's, ms.
    pub connection_wait_ms: Option<Distribution>,
    /// Open loop: planned send time → request bytes written (dispatch lag + connection
    /// wait), the draft's send-time accuracy figure, ms.
    pub send_lag_ms: Option<Distribution>,
    /// CPU seconds used by the generator's own threads during the measurement.
    pub cpu_seconds: f64,
    /// Average cores the generator used (CPU seconds / wall seconds).
    pub cpu_cores_used: f64,
    /// Cores the generator could use (its runtime threads, capped by the machine).
    pub cpu_cores_available: f64,
    /// Generator CPU per received chunk, µs; only when the run used enough CPU and chunks
    /// for the figure to mean something (see `cpu_per_chunk_note`).
    pub cpu_us_per_chunk: Option<f64>,
    /// Why the per-chunk figure is absent, when it is.
    pub cpu_per_chunk_note: Option<String>,
    /// Connections opened (TCP and TLS set-ups).
    pub connections_opened: u64,
    /// Which clock timestamped chunk arrivals: `kernel_rx` (the kernel's receive timestamp
    /// of the bytes, `SO_TIMESTAMPNS`) or `read_return` (when `read` returned).
    pub arrival_clock: String,
    /// The client's connections and its machine's network counters.
    #[serde(default)]
    pub connections: ConnectionReport,
    /// How exact the chunk timestamps are, and the error bound they put on TTFT and ITL.
    #[serde(default)]
    pub timestamps: TimestampReport,
    /// The client, not the server, limited the measurement (its threads were saturated or
    /// it read the sockets late): the latency figures then describe the client.
    #[serde(default)]
    pub client_limited: bool,
    /// Verdict: the generator did not distort the measurement.
    pub kept_up: bool,
    /// Why not, when it did not (or what to watch).
    pub notes: Vec<String>,
}

/// Ephemeral ports held towards one server port, against the range the kernel picks from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PortUse {
    /// Local ports in the ephemeral range held by sockets to the server's port (open and
    /// TIME_WAIT alike: both block the port for a new connection there).
    pub in_use: u64,
    /// Ports in the kernel's ephemeral range (`ip_local_port_range`).
    pub range: u64,
}

/// The client's connections during the measured phase, and its machine's network side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectionReport {
    /// Connections opened during the measured phase (TCP and TLS set-ups).
    pub opened: u64,
    /// Connections opened per second of the measured phase.
    pub opened_per_s: f64,
    /// Measured requests that were sent.
    pub sent_requests: u64,
    /// Measured requests sent on a connection that had already carried a whole exchange
    /// (a connection opened ahead of time and used for the first time is not a reuse).
    pub reused_requests: u64,
    /// `reused_requests / sent_requests`.
    pub reuse_share: Option<f64>,
    /// Kept-alive connections the server had closed when they were next used, during the
    /// measured phase (each then cost the request a new connection).
    #[serde(default)]
    pub closed_by_server: u64,
    /// Every request opened its own connection (`--new-connection-per-request`).
    pub new_connection_per_request: bool,
    /// Ephemeral ports in use towards the server at the end of the measured phase (Linux).
    pub ephemeral_ports: Option<PortUse>,
    /// TCP segments retransmitted during the measured phase, by the kernel's system-wide
    /// counter (Linux; other traffic on the machine counts too).
    pub tcp_retransmits: Option<u64>,
    /// TCP segments sent during the measured phase, system-wide (the retransmits' base).
    pub tcp_segments_out: Option<u64>,
}

/// How exact the chunk timestamps are (docs/metrics.md, "How exact the timestamps are").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimestampReport {
    /// Chunks (answer and reasoning) of the measured requests.
    pub chunks: u64,
    /// Of those, chunks that arrived in one read with another chunk of the same request and
    /// so carry that read's stamp (the arrival of its last bytes).
    pub shared_read_chunks: u64,
    /// How long received bytes waited in the socket before the client read them (read
    /// return − the kernel's receive stamp), P50 and P99 over the measured phase's reads,
    /// ms (within 6.25 %, never below).
    pub socket_wait_p50_ms: Option<f64>,
    pub socket_wait_p99_ms: Option<f64>,
    /// Share of the measured phase's wall time the client's reading threads were busy.
    pub client_busy_share: Option<f64>,
    /// Bound (P99) on the error the client adds to one timestamp, and so to a TTFT or an
    /// ITL value, ms: the socket wait P99 for the arrivals it applies to (below).
    pub error_bound_ms: Option<f64>,
    /// Which timestamps the bound applies to, in words.
    pub bound_applies_to: String,
}

/// The isolated prefill profile measured before the run (Etalon's D_p curve).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileReport {
    /// Where the curve came from, in words.
    pub source: String,
    /// Prompt lengths probed, tokens, with the TTFTs kept at each (first request per length
    /// discarded), ms.
    pub points: Vec<(u32, Vec<f64>)>,
    /// Wall time the profile took, s.
    pub duration_s: f64,
}

/// What the server said about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServerInfo {
    /// Model ids from `/v1/models`.
    pub models: Vec<String>,
    /// The serving engine (`llama.cpp`, `vllm`, `sglang`, `tgi`, `ollama`, `servebench-sim`).
    pub engine: Option<String>,
    pub version: Option<String>,
    /// Longest prompt plus output one request may have, tokens (llama.cpp: per slot).
    pub context_tokens: Option<u32>,
    /// The `Server` header of the models response.
    pub server_header: Option<String>,
    /// Requests the server serves at once, as it says (llama.cpp `/props` `total_slots`,
    /// SGLang `/get_server_info` `max_running_requests`); `None` where it does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
}
