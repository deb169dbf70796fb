//! What the user sees while a run goes on (stderr).
//!
//! In a terminal: a bar with an ETA when the phase has a known limit (requests or duration),
//! else a spinner, redrawn four times a second. Anywhere else (CI logs, `nohup`, pipes): a
//! plain status line every few seconds, so a long run is never silent. Counters belong to
//! the current phase: `sent`, `done` and `failed` restart at each phase, and the token rate
//! is smoothed over the last few seconds.
//!
//! The ETA is right from the first second: it starts from the phase's planned length
//! (`plan`, from the server's measured speed) and moves to what the progress so far
//! says as the phase advances ([`eta_s`]).

use super::dashboard::{Dashboard, Snapshot};
use crate::metrics::live::WINDOW_S;
use crate::record::Phase;
use crate::store::writer::Counters;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the plain (non-terminal) status line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);
/// Weight of the newest one-second sample in the smoothed token rate.
const SMOOTHING: f64 = 0.3;

/// The phase being shown and its limits.
#[derive(Debug, Clone)]
pub struct PhaseView {
    pub label: String,
    pub phase: Phase,
    /// `sent` when the phase started (the counter runs across phases).
    pub sent_base: u64,
    pub max_requests: Option<u64>,
    pub max_duration: Option<Duration>,
    /// How long the phase is expected to take (`plan`), for the ETA of its first seconds.
    pub planned: Option<Duration>,
    pub started: Instant,
}

impl PhaseView {
    pub fn new(label: &str, phase: Phase, sent_base: u64) -> Self {
        Self {
            label: label.into(),
            phase,
            sent_base,
            max_requests: None,
            max_duration: None,
            planned: None,
            started: Instant::now(),
        }
    }
}

/// Draws progress until dropped.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The live view, in a terminal unless `--no-live-view` (it replaces the bar).
    dashboard: Option<Arc<Mutex<Dashboard>>>,
    stop: Arc<AtomicBool>,
    view: Arc<Mutex<PhaseView>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the progress thread reads.
pub struct Sources {
    pub counters: Arc<Counters>,
    pub sent: Arc<AtomicU64>,
    pub in_flight: Arc<AtomicU64>,
    /// The server's waiting queue at the latest scrape (f64 bits, NaN when unknown).
    pub queue_waiting: Option<Arc<AtomicU64>>,
    /// The run's clock (the live window's values are stamped on it).
    pub clock: crate::clock::RunClock,
}

impl Progress {
    /// Starts drawing; nothing is drawn when `quiet`. In a terminal, the live view
    /// (`live_view`) or a one-line bar; elsewhere plain lines.
    pub fn start(quiet: bool, live_view: bool, src: Sources) -> Self {
        let view = Arc::new(Mutex::new(PhaseView::new("starting", Phase::Warmup, 0)));
        let stop = Arc::new(AtomicBool::new(false));
        if quiet {
            return Self {
                bar: None,
                dashboard: None,
                stop,
                view,
                thread: None,
            };
        }
        let terminal = std::io::stderr().is_terminal();
        let dashboard = (terminal && live_view)
            .then(Dashboard::open)
            .flatten()
            .map(|d| Arc::new(Mutex::new(d)));
        let bar = (terminal && dashboard.is_none()).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
            b.set_style(spinner_style());
            b
        });
        let (b, s, v) = (bar.clone(), stop.clone(), view.clone());
        let dash = dashboard.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || Drawer::new(src, b, dash).run(&s, &v))
            .ok();
        Self {
            bar,
            dashboard,
            stop,
            view,
            thread,
        }
    }

    /// Switches to a new phase.
    pub fn phase(&self, view: PhaseView) {
        if let Ok(mut v) = self.view.lock() {
            *v = view;
        }
    }

    /// Prints a line above the bar (or plainly).
    pub fn println(&self, line: &str) {
        if let Some(d) = &self.dashboard {
            if let Ok(mut d) = d.lock() {
                d.println(line);
                return;
            }
        }
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }
}

/// The progress thread: where its figures come from, where they are drawn, and the current
/// phase's smoothed rates.
struct Drawer {
    src: Sources,
    bar: Option<ProgressBar>,
    dash: Option<Arc<Mutex<Dashboard>>>,
    /// Output tokens per second.
    rate: Rate,
    /// Requests sent and completed per second.
    sent_rate: Rate,
    done_rate: Rate,
    last_plain: Instant,
    last_phase_label: String,
}

impl Drawer {
    fn new(src: Sources, bar: Option<ProgressBar>, dash: Option<Arc<Mutex<Dashboard>>>) -> Self {
        Self {
            src,
            bar,
            dash,
            rate: Rate::default(),
            sent_rate: Rate::default(),
            done_rate: Rate::default(),
            last_plain: Instant::now(),
            last_phase_label: String::new(),
        }
    }

    /// Redraws the phase in `view` four times a second until `stop`.
    fn run(mut self, stop: &AtomicBool, view: &Mutex<PhaseView>) {
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(250));
            let view = view
                .lock()
                .map(|v| v.clone())
                .unwrap_or_else(|e| e.into_inner().clone());
            self.draw(&view);
        }
    }

    /// One redraw: the counters read, the rates updated (restarted at a new phase), then
    /// the live view, the bar or a plain line.
    fn draw(&mut self, view: &PhaseView) {
        let c = self.src.counters.of(view.phase);
        let tokens = c.output_tokens.load(Ordering::Relaxed);
        let new_phase = view.label != self.last_phase_label;
        if new_phase {
            self.rate = Rate::default();
            (self.sent_rate, self.done_rate) = (Rate::default(), Rate::default());
            self.last_phase_label = view.label.clone();
            if let Ok(mut w) = self.src.counters.live.lock() {
                w.new_phase();
            }
        }
        self.rate.update(tokens);
        let sent_now = self
            .src
            .sent
            .load(Ordering::Relaxed)
            .saturating_sub(view.sent_base);
        self.sent_rate.update(sent_now);
        self.done_rate.update(c.completed.load(Ordering::Relaxed));
        let line = format!(
            "{}: sent {sent_now} · in flight {} · done {} · failed {} · {:.0} tok/s",
            view.label,
            self.src.in_flight.load(Ordering::Relaxed),
            c.completed.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
            self.rate.smoothed
        );
        let elapsed = view.started.elapsed();
        let fraction = fraction_done(view, sent_now, elapsed);
        let left = eta_s(
            elapsed.as_secs_f64(),
            fraction,
            view.planned.map(|p| p.as_secs_f64()),
        );
        let eta = match (fraction, left) {
            (Some(f), Some(left)) => {
                format!(" · {:.0} % · ~{left:.0} s left", f * 100.0)
            }
            (None, Some(left)) => format!(" · ~{left:.0} s left"),
            _ => String::new(),
        };
        if let Some(d) = &self.dash {
            let snapshot = snapshot(
                view,
                &self.src.counters,
                [sent_now, self.src.in_flight.load(Ordering::Relaxed)],
                [
                    self.sent_rate.smoothed,
                    self.done_rate.smoothed,
                    self.rate.smoothed,
                ],
                (fraction, left),
                self.src.queue_waiting.as_deref(),
                self.src.clock.now() as f64 / 1e9,
            );
            if let Ok(mut d) = d.lock() {
                d.draw(&snapshot);
            }
            return;
        }
        self.draw_line(&line, &eta, fraction, new_phase, elapsed);
    }

    /// Without the live view: the bar (with the share done when known), or elsewhere a plain
    /// line at each phase change, then every few seconds.
    fn draw_line(
        &mut self,
        line: &str,
        eta: &str,
        fraction: Option<f64>,
        new_phase: bool,
        elapsed: Duration,
    ) {
        match &self.bar {
            Some(bar) => {
                match fraction {
                    Some(f) => {
                        bar.set_style(bar_style());
                        bar.set_length(1000);
                        bar.set_position((f * 1000.0) as u64);
                    }
                    None => bar.set_style(spinner_style()),
                }
                bar.set_message(format!("{line}{eta}"));
                bar.tick();
            }
            None => {
                if new_phase || self.last_plain.elapsed() >= PLAIN_EVERY {
                    self.last_plain = Instant::now();
                    eprintln!("[servebench {:>5.0} s] {line}{eta}", elapsed.as_secs_f64());
                }
            }
        }
    }
}

/// The live view's figures now: `counts` are [sent, in flight] of the phase, `rates`
/// [sent, completed, tokens] per second, `progress` the share done and seconds left.
fn snapshot(
    view: &PhaseView,
    counters: &Counters,
    counts: [u64; 2],
    rates: [f64; 3],
    progress: (Option<f64>, Option<f64>),
    queue: Option<&AtomicU64>,
    now_s: f64,
) -> Snapshot {
    let c = counters.of(view.phase);
    let (ttft_ms, itl_ms, failures) = match counters.live.lock() {
        Ok(w) => (
            w.ttft_ms.p50_p99(now_s - WINDOW_S),
            w.itl_ms.p50_p99(now_s - WINDOW_S),
            w.failures.iter().map(|(k, n)| (k.clone(), *n)).collect(),
        ),
        Err(_) => (None, None, Vec::new()),
    };
    Snapshot {
        label: view.label.clone(),
        elapsed_s: view.started.elapsed().as_secs_f64(),
        fraction: progress.0,
        eta_s: progress.1,
        sent: counts[0],
        in_flight: counts[1],
        done: c.completed.load(Ordering::Relaxed),
        failed: c.failed.load(Ordering::Relaxed),
        sent_per_s: rates[0],
        done_per_s: rates[1],
        tokens_per_s: rates[2],
        ttft_ms,
        itl_ms,
        failures,
        queue_waiting: queue
            .map(|q| f64::from_bits(q.load(Ordering::Relaxed)))
            .filter(|q| q.is_finite()),
    }
}

/// The share of the phase done: of its request limit sent, or of its duration passed,
/// whichever is further; `None` without a limit.
fn fraction_done(view: &PhaseView, sent: u64, elapsed: Duration) -> Option<f64> {
    let by_time = view
        .max_duration
        .map(|d| elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9));
    let by_count = view.max_requests.map(|n| sent as f64 / n.max(1) as f64);
    match (by_count, by_time) {
        (Some(c), Some(t)) => Some(c.max(t)),
        (c, t) => c.or(t),
    }
    .map(|f| f.clamp(0.0, 1.0))
}

/// Share of the phase after which the ETA is read from its progress alone.
const TRUST_PROGRESS_AFTER: f64 = 0.2;

/// Seconds left in a phase `elapsed_s` in: at first its planned length less what has
/// passed, then more and more what its progress (`fraction` done) extrapolates, alone once
/// [`TRUST_PROGRESS_AFTER`] of it is done or the plan has run out. `None` when neither is
/// known.
pub fn eta_s(elapsed_s: f64, fraction: Option<f64>, planned_s: Option<f64>) -> Option<f64> {
    let by_plan = planned_s.map(|p| p - elapsed_s).filter(|left| *left > 0.0);
    let done = fraction.map(|f| f.clamp(0.0, 1.0));
    let by_progress = done.filter(|f| *f > 0.0).map(|f| elapsed_s * (1.0 - f) / f);
    match (by_plan, by_progress) {
        (Some(p), Some(g)) => {
            let w = (done.unwrap_or(0.0) / TRUST_PROGRESS_AFTER).min(1.0);
            Some((1.0 - w) * p + w * g)
        }
        (p, g) => p.or(g),
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(d) = &self.dashboard {
            if let Ok(mut d) = d.lock() {
                d.close();
            }
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// An exponentially smoothed token rate from cumulative counts sampled every second.
#[derive(Debug, Default)]
struct Rate {
    last: Option<(Instant, u64)>,
    smoothed: f64,
}

impl Rate {
    fn update(&mut self, total: u64) {
        let now = Instant::now();
        match self.last {
            None => self.last = Some((now, total)),
            Some((t, n)) => {
                let dt = now.duration_since(t).as_secs_f64();
                if dt >= 1.0 {
                    let sample = total.saturating_sub(n) as f64 / dt;
                    self.smoothed = if self.smoothed == 0.0 {
                        sample
                    } else {
                        SMOOTHING * sample + (1.0 - SMOOTHING) * self.smoothed
                    };
                    self.last = Some((now, total));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_starts_from_the_plan_and_moves_to_the_progress() {
        // Before anything is done: the plan.
        assert_eq!(eta_s(0.0, Some(0.0), Some(60.0)), Some(60.0));
        assert_eq!(eta_s(5.0, None, Some(60.0)), Some(55.0));
        // 5 % done after 10 s: a quarter of the way to trusting the progress alone
        // (50 s left by the plan, 190 s by the progress).
        let e = eta_s(10.0, Some(0.05), Some(60.0)).unwrap();
        assert!((e - 85.0).abs() < 1e-9, "{e}");
        // Half done after 30 s: the progress alone.
        assert_eq!(eta_s(30.0, Some(0.5), Some(60.0)), Some(30.0));
        // The plan has run out: the progress alone.
        assert_eq!(eta_s(70.0, Some(0.5), Some(60.0)), Some(70.0));
        // Nothing known yet.
        assert_eq!(eta_s(5.0, Some(0.0), None), None);
        assert_eq!(eta_s(5.0, None, None), None);
    }

    #[test]
    fn the_share_done_is_the_further_of_count_and_time() {
        let mut v = PhaseView::new("measuring", Phase::Measure, 0);
        assert_eq!(fraction_done(&v, 10, Duration::from_secs(1)), None);
        v.max_requests = Some(100);
        assert_eq!(fraction_done(&v, 10, Duration::from_secs(1)), Some(0.1));
        v.max_duration = Some(Duration::from_secs(4));
        assert_eq!(fraction_done(&v, 10, Duration::from_secs(1)), Some(0.25));
        assert_eq!(fraction_done(&v, 500, Duration::from_secs(1)), Some(1.0));
    }
}
