//! The steps of a run, named: set-up (record writer, connection pool, telemetry), warm-up,
//! prefill profile, measurement, drain and finish. `run_async` calls them in that order;
//! they live here, one file each, so that no step runs past 80 lines, and share what the
//! set-up started through [`Bench`].

mod finish;
mod measure;
mod prefill;
mod set_up;
mod warm_up;

use super::cpu::ThreadCpu;
use super::feeder::Feed;
use super::phase::{Controls, LeadIn, PhaseEnd, Shared};
use super::progress::Progress;
use super::warmup::Warmed;
use crate::client::http::ReadStamps;
use crate::client::Pool;
use crate::clock::{Nanos, RunClock};
use crate::config::RunConfig;
use crate::metrics::experience::FluidityParams;
use crate::metrics::fluidity::ProfiledCurve;
use crate::record::run::{PortUse, ProfileReport, ServerInfo, WarmupReport};
use crate::schedule::shard::Shard;
use crate::store::writer::Counters;
use crate::store::RecordWriter;
use crate::telemetry::Collector;
use crate::tokenizer::SharedTokenizer;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// What the set-up started, shared by every later step.
///
/// The fields are declared in the reverse of the order the set-up creates them: a struct
/// drops its fields in declaration order, so a run that ends early (an error after the
/// set-up) drops them in the order `run_async`'s locals once were, the progress display
/// before the telemetry and the writer, the request feed first.
pub(super) struct Bench<'a> {
    feed: Feed,
    shard: Option<Shard>,
    ctrl_c: JoinHandle<()>,
    progress: Progress,
    shared: Shared,
    idle_until: Nanos,
    collector: Collector,
    pool: Arc<Pool>,
    stamps: Arc<ReadStamps>,
    counters: Arc<Counters>,
    writer: RecordWriter,
    controls: Controls,
    started_unix_us: u64,
    clock: RunClock,
    readers: ThreadCpu,
    cpu: ThreadCpu,
    server: &'a ServerInfo,
    tokenizer: SharedTokenizer,
    config: &'a RunConfig,
}

/// What the warm-up leaves to the later steps.
pub(super) struct WarmedUp {
    /// Closed loop, one machine: the warm-up's stream carried on into the measured phase;
    /// taken by the measured phase when it runs. (Declared first: dropped before `warmed`.)
    lead_in: Option<LeadIn>,
    warmed: Warmed,
    warmup: WarmupReport,
}

/// The prefill deadline of the fluidity-index, and the profile that gave it.
pub(super) struct Prefill {
    fluidity: FluidityParams,
    prefill_curve: Option<ProfiledCurve>,
    profile_report: Option<ProfileReport>,
}

/// How the measured phase ended, and what the generator observed over it.
pub(super) struct Measured {
    measure: PhaseEnd,
    cpu_seconds: f64,
    client_cpu_seconds: f64,
    wall_seconds: f64,
    connections_opened_measured: u64,
    connections_closed_by_server: u64,
    tcp_segments: Option<(u64, u64)>,
    ephemeral_ports: Option<PortUse>,
    socket_wait_ns: Option<(u64, u64)>,
}
