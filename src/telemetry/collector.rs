//! Samples every telemetry source once a second on its own thread, stamping each sample on
//! the run's clock, until told to stop.
//!
//! Its own thread (with a small single-threaded runtime for the HTTP scrapes) keeps scraping
//! off the client's workers: a slow `/metrics` can never delay a request or a timestamp.
//! The runner can ask for an immediate sample at phase boundaries, so counter differences
//! line up with the measurement window rather than with the nearest second.

use super::engines::{read, Engine, ServerSample};
use super::gpu::{from_dcgm_text, GpuSample};
use super::host::{process_cpu_seconds, rss_bytes, Rapl};
use super::nvml::NvmlSource;
use super::prometheus::parse;
use crate::client::simple::call;
use crate::client::{BaseUrl, Target};
use crate::clock::{Nanos, RunClock};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Where GPU figures come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum GpuSource {
    /// NVML on this machine (the generator shares the host with the GPUs).
    Nvml,
    /// A DCGM exporter's Prometheus endpoint.
    Dcgm { url: String },
    /// Not measured (`--no-gpu-metrics`).
    Off,
}

/// What to collect.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct TelemetryConfig {
    /// The server's Prometheus endpoint; `None` turns server metrics off.
    pub metrics_url: Option<String>,
    /// The URL was given (`--metrics-url`): a failure to read it is then worth a warning
    /// from the first scrape; a default URL that does not answer just means "not exposed".
    pub metrics_url_given: bool,
    pub gpu: GpuSource,
    /// Between samples, s.
    pub interval_s: f64,
    /// An OTLP/HTTP collector the run's spans are exported to after it (`--otlp-endpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
}

impl TelemetryConfig {
    /// Server metrics at `{server root}/metrics`, GPUs through NVML, once a second.
    pub fn default_for(url: &BaseUrl) -> Self {
        Self {
            metrics_url: Some(format!("{}/metrics", url.root())),
            metrics_url_given: false,
            gpu: GpuSource::Nvml,
            interval_s: 1.0,
            otlp_endpoint: None,
        }
    }

    /// Nothing collected.
    pub fn off() -> Self {
        Self {
            metrics_url: None,
            metrics_url_given: false,
            gpu: GpuSource::Off,
            interval_s: 1.0,
            otlp_endpoint: None,
        }
    }
}

/// One scrape of the server's metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerPoint {
    pub at: Nanos,
    pub engine: Option<Engine>,
    pub sample: Option<ServerSample>,
    /// Why this scrape failed (the run went on).
    pub error: Option<String>,
}

/// One reading of every GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuPoint {
    pub at: Nanos,
    pub gpus: Vec<GpuSample>,
    pub error: Option<String>,
}

/// One reading of the generator's host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostPoint {
    pub at: Nanos,
    /// This process's CPU seconds so far.
    pub cpu_seconds: Option<f64>,
    pub rss_bytes: Option<u64>,
    /// CPU package energy counter, µJ.
    pub rapl_uj: Option<u64>,
}

/// Everything collected, with what each source was (or why it was not measured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelemetryData {
    pub server: Vec<ServerPoint>,
    pub gpu: Vec<GpuPoint>,
    pub host: Vec<HostPoint>,
    /// "scraped from URL" or "not measured: …".
    pub server_source: String,
    pub gpu_source: String,
    pub rapl_source: String,
    /// The RAPL counter's wrap-around point, µJ.
    pub rapl_max_uj: Option<u64>,
}

enum Command {
    /// Sample now, then answer.
    Sample(Sender<()>),
    Stop,
}

/// A running collector.
pub struct Collector {
    commands: Sender<Command>,
    thread: Option<JoinHandle<TelemetryData>>,
    /// Set once a GPU source opened (NVML loaded, or a DCGM URL given).
    gpu_live: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The server's waiting queue at the latest scrape (f64 bits; NaN when unknown), for
    /// the live view.
    waiting: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The readers a collector owns.
struct Sources {
    waiting: std::sync::Arc<std::sync::atomic::AtomicU64>,
    target: Target,
    metrics: Option<BaseUrl>,
    metrics_path: String,
    dcgm: Option<(BaseUrl, String)>,
    nvml: Option<NvmlSource>,
    rapl: Option<Rapl>,
    rt: tokio::runtime::Runtime,
}

fn split_url(url: &str) -> Option<(BaseUrl, String)> {
    let u = BaseUrl::parse(url).ok()?;
    let path = if u.base_path.is_empty() {
        "/".to_owned()
    } else {
        u.base_path.clone()
    };
    Some((u, path))
}

impl Collector {
    /// Starts collecting for `target` (its credentials are sent to the metrics URL too).
    pub fn start(config: &TelemetryConfig, target: &Target, clock: RunClock) -> Collector {
        let (tx, rx) = channel::<Command>();
        let config = config.clone();
        let target = target.clone();
        let gpu_live = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let live = gpu_live.clone();
        let waiting = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(f64::NAN.to_bits()));
        let waiting_now = waiting.clone();
        let thread = std::thread::Builder::new()
            .name("telemetry".into())
            .spawn(move || {
                let mut data = TelemetryData::default();
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    data.server_source = "not measured: no runtime for scraping".into();
                    return data;
                };
                let sources = open_sources(&config, target, waiting_now, rt, &live, &mut data);
                let interval = Duration::from_secs_f64(config.interval_s.max(0.05));
                collect(&sources, &clock, &rx, interval, &mut data);
                data
            })
            .ok();
        // Wait for the thread to have opened its sources (NVML loads a library).
        let (ready_tx, ready_rx) = channel();
        let _ = tx.send(Command::Sample(ready_tx));
        let _ = ready_rx.recv_timeout(Duration::from_secs(10));
        Collector {
            commands: tx,
            thread,
            gpu_live,
            waiting,
        }
    }

    /// The server's waiting queue at the latest scrape (f64 bits, NaN when unknown), shared
    /// with the live view.
    pub fn waiting(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        self.waiting.clone()
    }

    /// Whether GPUs are being measured.
    pub fn gpu_live(&self) -> bool {
        self.gpu_live.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Takes a sample of every source now and waits (at most 5 s) until it is recorded.
    pub fn sample_now(&self) {
        let (tx, rx) = channel();
        if self.commands.send(Command::Sample(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(5));
        }
    }

    /// Stops after one last sample; returns everything collected.
    pub fn stop(mut self) -> TelemetryData {
        let _ = self.commands.send(Command::Stop);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

/// One sample of every source.
fn sample_all(s: &Sources, clock: &RunClock, data: &mut TelemetryData) {
    if let Some(url) = &s.metrics {
        let point = scrape_server(s, url, clock);
        let waiting = point
            .sample
            .as_ref()
            .and_then(|x| x.waiting)
            .unwrap_or(f64::NAN);
        s.waiting
            .store(waiting.to_bits(), std::sync::atomic::Ordering::Relaxed);
        data.server.push(point);
    }
    if let Some(n) = &s.nvml {
        let at = clock.now();
        let gpus = n.read().iter().map(|r| r.to_sample()).collect();
        data.gpu.push(GpuPoint {
            at,
            gpus,
            error: None,
        });
    } else if let Some((url, path)) = &s.dcgm {
        let point = scrape_dcgm(s, url, path, clock);
        data.gpu.push(point);
    }
    data.host.push(HostPoint {
        at: clock.now(),
        cpu_seconds: process_cpu_seconds(),
        rss_bytes: rss_bytes(),
        rapl_uj: s.rapl.as_ref().and_then(Rapl::read_uj),
    });
}

/// One scrape of the server's metrics, stamped when it started.
fn scrape_server(s: &Sources, url: &BaseUrl, clock: &RunClock) -> ServerPoint {
    let at = clock.now();
    match s.rt.block_on(call(
        url,
        Some(&s.target),
        "GET",
        &s.metrics_path,
        None,
        Duration::from_secs(2),
    )) {
        Ok(r) if r.status == 200 => match parse(&String::from_utf8_lossy(&r.body)) {
            Ok(scrape) => {
                let (engine, sample) = read(&scrape);
                ServerPoint {
                    at,
                    engine: Some(engine),
                    sample: Some(sample),
                    error: None,
                }
            }
            Err(e) => ServerPoint {
                at,
                engine: None,
                sample: None,
                error: Some(format!("unparseable metrics: {e}")),
            },
        },
        Ok(r) => ServerPoint {
            at,
            engine: None,
            sample: None,
            error: Some(format!("HTTP {}", r.status)),
        },
        Err(e) => ServerPoint {
            at,
            engine: None,
            sample: None,
            error: Some(e.to_string()),
        },
    }
}

/// One reading of the DCGM exporter, stamped when it started.
fn scrape_dcgm(s: &Sources, url: &BaseUrl, path: &str, clock: &RunClock) -> GpuPoint {
    let at = clock.now();
    match s
        .rt
        .block_on(call(url, None, "GET", path, None, Duration::from_secs(2)))
    {
        Ok(r) if r.status == 200 => match from_dcgm_text(&String::from_utf8_lossy(&r.body)) {
            Ok(gpus) => GpuPoint {
                at,
                gpus,
                error: None,
            },
            Err(e) => GpuPoint {
                at,
                gpus: Vec::new(),
                error: Some(format!("unparseable DCGM metrics: {e}")),
            },
        },
        Ok(r) => GpuPoint {
            at,
            gpus: Vec::new(),
            error: Some(format!("HTTP {}", r.status)),
        },
        Err(e) => GpuPoint {
            at,
            gpus: Vec::new(),
            error: Some(e.to_string()),
        },
    }
}

/// Opens every source `config` asks for, noting in `data` what each is (or why it is not
/// measured), and in `gpu_live` whether a GPU source opened.
fn open_sources(
    config: &TelemetryConfig,
    target: Target,
    waiting: Arc<AtomicU64>,
    rt: tokio::runtime::Runtime,
    gpu_live: &AtomicBool,
    data: &mut TelemetryData,
) -> Sources {
    let metrics = config.metrics_url.as_deref().and_then(split_url);
    data.server_source = match &config.metrics_url {
        None => "off (--no-server-metrics)".into(),
        Some(u) => format!("scraped from {u} every {} s", config.interval_s),
    };
    let (nvml, dcgm) = open_gpu(&config.gpu, data);
    gpu_live.store(
        nvml.is_some() || dcgm.is_some(),
        std::sync::atomic::Ordering::Release,
    );
    let rapl = match Rapl::open() {
        Ok(r) => {
            data.rapl_source = "RAPL package 0 (powercap)".into();
            data.rapl_max_uj = Some(r.max_energy_range_uj);
            Some(r)
        }
        Err(why) => {
            data.rapl_source = why;
            None
        }
    };
    let (metrics, metrics_path) = match metrics {
        Some((u, p)) => (Some(u), p),
        None => (None, String::new()),
    };
    Sources {
        waiting,
        target,
        metrics,
        metrics_path,
        dcgm,
        nvml,
        rapl,
        rt,
    }
}

/// The GPU source: NVML, or a DCGM exporter's URL, or none (`data` says which, or why).
fn open_gpu(
    gpu: &GpuSource,
    data: &mut TelemetryData,
) -> (Option<NvmlSource>, Option<(BaseUrl, String)>) {
    match gpu {
        GpuSource::Off => {
            data.gpu_source = "off (--no-gpu-metrics)".into();
            (None, None)
        }
        GpuSource::Dcgm { url } => {
            data.gpu_source = format!("DCGM exporter at {url}");
            (None, split_url(url))
        }
        GpuSource::Nvml => match NvmlSource::open() {
            Ok(n) => {
                data.gpu_source = n.describe();
                (Some(n), None)
            }
            Err(why) => {
                data.gpu_source = why;
                (None, None)
            }
        },
    }
}

/// Samples every `interval`, and at once when asked, until told to stop (after one last
/// sample).
fn collect(
    sources: &Sources,
    clock: &RunClock,
    rx: &Receiver<Command>,
    interval: Duration,
    data: &mut TelemetryData,
) {
    loop {
        sample_all(sources, clock, data);
        match rx.recv_timeout(interval) {
            Ok(Command::Sample(reply)) => {
                sample_all(sources, clock, data);
                let _ = reply.send(());
            }
            Ok(Command::Stop) | Err(RecvTimeoutError::Disconnected) => {
                sample_all(sources, clock, data);
                break;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}
