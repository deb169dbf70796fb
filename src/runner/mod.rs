//! Runs a benchmark: warm-up (draft 4.5), isolated prefill profiling, measurement, drain.
//! (Before it, `preflight` checks with one request that the server speaks the API.)
//!
//! The runner owns the I/O of a run. It builds the client runtime, starts the request feeder
//! and the record writer, drives each phase, and returns every record with the facts only it
//! can observe (its own CPU, the warm-up, the prefill profile). Nothing is summarised here;
//! that is `metrics`' job.

pub mod cpu;
pub mod dashboard;
pub mod feeder;
pub mod host_net;
pub mod media;
pub mod phase;
pub mod plan;
pub mod preflight;
pub mod probe;
pub mod profile;
pub mod progress;
pub mod ready;
mod steps;
pub mod warmup;

use crate::clock::RunClock;
use crate::config::RunConfig;
use crate::metrics::experience::FluidityParams;
use crate::metrics::fluidity::ProfiledCurve;
use crate::metrics::generator::GeneratorFacts;
use crate::record::run::{ProfileReport, ServerInfo, WarmupReport};
use crate::record::RequestRecord;
use crate::tokenizer::SharedTokenizer;
use cpu::ThreadCpu;
use phase::PhaseEnd;
pub use ready::{wait_until_ready, ReadyError};
use steps::Bench;
use thiserror::Error;

/// Why a run could not be carried out.
#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Ready(#[from] ReadyError),
    #[error("could not write the run folder: {0}")]
    Io(#[from] std::io::Error),
    #[error("the workload could not be generated: {0}")]
    Workload(String),
}

/// Everything a run produced.
pub struct RunOutput {
    /// Every record; or, when `streamed` is there, a seeded sample of the measured ones.
    pub records: Vec<RequestRecord>,
    /// The run's figures, streamed past `exact_summary_limit` requests.
    pub streamed: Option<Box<crate::store::kept::StreamedRun>>,
    pub clock: RunClock,
    pub started_unix_us: u64,
    pub finished_unix_us: u64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    pub warmup: WarmupReport,
    pub generator: GeneratorFacts,
    /// The prefill curve used for fluidity (profiled now, or given), with its provenance.
    pub prefill_curve: Option<ProfiledCurve>,
    /// What the isolated prefill profile did, when one ran.
    pub profile: Option<ProfileReport>,
    /// The fluidity parameters the per-request figures used (curve included).
    pub fluidity: FluidityParams,
    /// How the measured phase ended.
    pub measure: PhaseEnd,
    /// Server metrics, GPUs and host samples collected beside the run.
    pub telemetry: crate::telemetry::TelemetryData,
    /// The end of the idle period before any load (for GPU idle power).
    pub idle_until: crate::clock::Nanos,
}

/// Runs the benchmark described by `config` against a server described by `server`,
/// writing `requests.jsonl` into the run folder.
pub fn run(
    config: &RunConfig,
    tokenizer: SharedTokenizer,
    server: &ServerInfo,
) -> Result<RunOutput, RunError> {
    let cpu = ThreadCpu::default();
    let readers = ThreadCpu::default();
    let (cpu_for_threads, readers_for_threads) = (cpu.clone(), readers.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.client_threads.max(1))
        .thread_name("client")
        .on_thread_start(move || {
            cpu_for_threads.register_current();
            readers_for_threads.register_current();
        })
        .enable_all()
        .build()?;
    runtime.block_on(run_async(config, tokenizer, server, cpu, readers))
}

/// Mixed into the seed of the warm-up's request stream ("WARMUP" in ASCII), so it differs
/// from the measured stream of the same seed.
pub const WARMUP_SEED_SALT: u64 = 0x5741_524D_5550;

/// The run's named steps, in order: set-up, warm-up, prefill profile, measurement, then
/// drain and finish (see `steps`).
async fn run_async(
    config: &RunConfig,
    tokenizer: SharedTokenizer,
    server: &ServerInfo,
    cpu: ThreadCpu,
    readers: ThreadCpu,
) -> Result<RunOutput, RunError> {
    let bench = Bench::set_up(config, tokenizer, server, cpu, readers).await?;
    let mut warm = bench.warm_up().await?;
    let prefill = bench.profile_prefill().await;
    let measured = bench.measure(&mut warm).await;
    bench.finish(warm, prefill, measured).await
}
