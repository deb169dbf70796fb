//! What the user sees while a run goes on (stderr).
//!
//! In a terminal: a bar with an ETA when the phase has a known limit (requests or duration),
//! else a spinner, redrawn four times a second. Anywhere else (CI logs, `nohup`, pipes): a
//! plain status line every few seconds, so a long run is never silent. Counters belong to
//! the current phase: `sent`, `done` and `failed` restart at each phase, and the token rate
//! is smoothed over the last few seconds.

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
            started: Instant::now(),
        }
    }
}

/// Draws progress until dropped.
pub struct Progress {
    bar: Option<ProgressBar>,
    stop: Arc<AtomicBool>,
    view: Arc<Mutex<PhaseView>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts drawing; nothing is drawn when `quiet`.
    pub fn start(
        quiet: bool,
        counters: Arc<Counters>,
        sent: Arc<AtomicU64>,
        in_flight: Arc<AtomicU64>,
    ) -> Self {
        let view = Arc::new(Mutex::new(PhaseView::new("starting", Phase::Warmup, 0)));
        let stop = Arc::new(AtomicBool::new(false));
        if quiet {
            return Self {
                bar: None,
                stop,
                view,
                thread: None,
            };
        }
        let terminal = std::io::stderr().is_terminal();
        let bar = terminal.then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
            b.set_style(spinner_style());
            b
        });
        let (b, s, v) = (bar.clone(), stop.clone(), view.clone());
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let mut rate = Rate::default();
                let mut last_plain = Instant::now();
                let mut last_phase_label = String::new();
                while !s.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    let view = v
                        .lock()
                        .map(|v| v.clone())
                        .unwrap_or_else(|e| e.into_inner().clone());
                    let c = counters.of(view.phase);
                    let tokens = c.output_tokens.load(Ordering::Relaxed);
                    let new_phase = view.label != last_phase_label;
                    if new_phase {
                        rate = Rate::default();
                        last_phase_label = view.label.clone();
                    }
                    rate.update(tokens);
                    let sent_now = sent.load(Ordering::Relaxed).saturating_sub(view.sent_base);
                    let line = format!(
                        "{}: sent {sent_now} · in flight {} · done {} · failed {} · {:.0} tok/s",
                        view.label,
                        in_flight.load(Ordering::Relaxed),
                        c.completed.load(Ordering::Relaxed),
                        c.failed.load(Ordering::Relaxed),
                        rate.smoothed
                    );
                    let elapsed = view.started.elapsed();
                    let fraction = match (view.max_requests, view.max_duration) {
                        (Some(n), Some(d)) => Some(
                            (sent_now as f64 / n.max(1) as f64)
                                .max(elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9)),
                        ),
                        (Some(n), None) => Some(sent_now as f64 / n.max(1) as f64),
                        (None, Some(d)) => Some(elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9)),
                        (None, None) => None,
                    }
                    .map(|f| f.clamp(0.0, 1.0));
                    match &b {
                        Some(bar) => {
                            match fraction {
                                Some(f) => {
                                    bar.set_style(bar_style());
                                    bar.set_length(1000);
                                    bar.set_position((f * 1000.0) as u64);
                                }
                                None => bar.set_style(spinner_style()),
                            }
                            bar.set_message(line);
                            bar.tick();
                        }
                        None => {
                            // A line at each phase change, then every few seconds.
                            if new_phase || last_plain.elapsed() >= PLAIN_EVERY {
                                last_plain = Instant::now();
                                let eta = fraction
                                    .filter(|f| *f > 0.01)
                                    .map(|f| {
                                        let left = elapsed.as_secs_f64() * (1.0 - f) / f;
                                        format!(" · {:.0} % · ~{left:.0} s left", f * 100.0)
                                    })
                                    .unwrap_or_default();
                                eprintln!(
                                    "[servebench {:>5.0} s] {line}{eta}",
                                    elapsed.as_secs_f64()
                                );
                            }
                        }
                    }
                }
            })
            .ok();
        Self {
            bar,
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
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] ETA {eta} {msg}")
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
