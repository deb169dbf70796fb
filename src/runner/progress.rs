//! What the user sees while a run goes on (stderr).
//!
//! In a terminal: a bar with an ETA when the phase has a known limit (requests or duration),
//! else a spinner, redrawn four times a second. Anywhere else (CI logs, `nohup`, pipes): a
//! plain status line every few seconds, so a long run is never silent. Counters belong to
//! the current phase: `sent`, `done` and `failed` restart at each phase, and the rates are
//! over the last [`crate::metrics::live::RATE_WINDOW_S`] seconds. The token rate is the one
//! `timeseries.csv` records (tokens counted when they arrive, not when their request ends:
//! [`crate::metrics::live`]).
//!
//! The ETA is right from the first second: it starts from the phase's planned length
//! (`plan`, from the server's measured speed) and moves to what the progress so far
//! says as the phase advances ([`eta_s`]).

use super::dashboard::{Dashboard, Snapshot};
use crate::metrics::live::{tokens_per_s, TrailingRate, WINDOW_S};
use crate::record::Phase;
use crate::store::writer::Counters;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the plain (non-terminal) status line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

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
    printer: Printer,
    stop: Arc<AtomicBool>,
    view: Arc<Mutex<PhaseView>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the progress thread reads.
pub struct Sources {
    pub counters: Arc<Counters>,
    pub sent: Arc<AtomicU64>,
    pub in_flight: Arc<AtomicU64>,
    /// Output chunks received so far, all phases, counted as they arrive.
    pub chunks_received: Arc<AtomicU64>,
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
                printer: Printer::default(),
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
            printer: Printer {
                bar: bar.clone(),
                dashboard: dashboard.clone(),
            },
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
        self.printer.println(line);
    }

    /// A handle that prints lines above the display, for tasks that outlive a borrow of it.
    pub fn printer(&self) -> Printer {
        self.printer.clone()
    }
}

/// What starts a line that stays on stderr, printed between runs (a test's level lines):
/// in a terminal, back to the first column and the line erased, so the line never starts
/// where something left the cursor nor mixes with what it left there; elsewhere nothing.
pub fn fresh_line(terminal: bool) -> &'static str {
    if terminal {
        "\r\x1b[2K"
    } else {
        ""
    }
}

/// Prints lines that stay (notes, warnings) while a run's progress is drawn: above the live
/// view or the bar, which are redrawn below them, else plainly. A line printed straight to
/// stderr instead would start wherever the bar left the cursor and be overdrawn by it.
#[derive(Clone, Default)]
pub struct Printer {
    bar: Option<ProgressBar>,
    dashboard: Option<Arc<Mutex<Dashboard>>>,
}

impl Printer {
    /// Prints `line` (to stderr).
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
/// phase's rates over the last seconds.
struct Drawer {
    src: Sources,
    bar: Option<ProgressBar>,
    dash: Option<Arc<Mutex<Dashboard>>>,
    /// Output chunks per second (made tokens per second by [`tokens_per_s`]).
    chunk_rate: TrailingRate,
    /// Requests sent and completed per second.
    sent_rate: TrailingRate,
    done_rate: TrailingRate,
    last_plain: Instant,
    last_phase_label: String,
}

impl Drawer {
    fn new(src: Sources, bar: Option<ProgressBar>, dash: Option<Arc<Mutex<Dashboard>>>) -> Self {
        Self {
            src,
            bar,
            dash,
            chunk_rate: TrailingRate::default(),
            sent_rate: TrailingRate::default(),
            done_rate: TrailingRate::default(),
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
        let new_phase = view.label != self.last_phase_label;
        if new_phase {
            self.chunk_rate = TrailingRate::default();
            (self.sent_rate, self.done_rate) = (TrailingRate::default(), TrailingRate::default());
            self.last_phase_label = view.label.clone();
            if let Ok(mut w) = self.src.counters.live.lock() {
                w.new_phase();
            }
        }
        let now_s = self.src.clock.now() as f64 / 1e9;
        let chunks = self.src.chunks_received.load(Ordering::Relaxed);
        self.chunk_rate.update(now_s, chunks);
        let (settled_tokens, settled_chunks) = self.src.counters.settled_tokens_and_chunks();
        let tok_per_s = tokens_per_s(self.chunk_rate.per_s(), settled_tokens, settled_chunks);
        let sent_now = self
            .src
            .sent
            .load(Ordering::Relaxed)
            .saturating_sub(view.sent_base);
        self.sent_rate.update(now_s, sent_now);
        self.done_rate
            .update(now_s, c.completed.load(Ordering::Relaxed));
        let line = format!(
            "{}: sent {sent_now} · in flight {} · done {} · failed {} · {tok_per_s:.0} tok/s",
            view.label,
            self.src.in_flight.load(Ordering::Relaxed),
            c.completed.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
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
                [self.sent_rate.per_s(), self.done_rate.per_s(), tok_per_s],
                (fraction, left),
                self.src.queue_waiting.as_deref(),
                now_s,
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

/// A bar of fixed width and a message cut to what is left of the terminal's line: a line
/// longer than the terminal wraps, and indicatif then clears one line too few at each redraw,
/// so the wrapped half stays on screen under the next (the "bar overprints text" of a long
/// level line). `wide_msg` truncates instead of wrapping.
fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{elapsed_precise} [{bar:24}] {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed_precise} {wide_msg}")
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
    fn a_line_that_stays_starts_at_the_first_column_of_a_clear_line() {
        assert_eq!(fresh_line(true), "\r\x1b[2K");
        assert_eq!(fresh_line(false), "");
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

    /// Issue 36: a llama.cpp server on CPU (4 slots, ~50 tok/s) whose four requests run
    /// together and end together every 16 s. Counted at completion, the live view read
    /// 1-4 tok/s between the bursts (and up to 157 after one) while `timeseries.csv` said
    /// 50. Counted as chunks arrive, the live rate is the timeseries' own, every second.
    #[test]
    fn the_live_token_rate_is_the_timeseries_rate() {
        use crate::metrics::live::RATE_WINDOW_S;
        use crate::record::{Chunk, RequestRecord};
        use crate::telemetry::client_seconds::ClientSeconds;
        const MS: u64 = 1_000_000;
        // Each slot streams 200 chunks of 2 tokens, one every 80 ms (25 tok/s a slot;
        // 100 tok/s in all); requests back to back. No chunk lands on a whole second.
        let mut records = Vec::new();
        for slot in 0..4u64 {
            for k in 0..4u64 {
                let start = k * 16_000 * MS + slot * 20 * MS;
                let chunks: Vec<Chunk> = (0..200)
                    .map(|j| Chunk {
                        at: start + 13 * MS + j * 80 * MS,
                        tokens: 2,
                        bytes: 8,
                    })
                    .collect();
                records.push(RequestRecord {
                    id: slot * 10 + k,
                    sent_at: Some(start),
                    queued_at: start,
                    finished_at: chunks.last().map_or(start, |c| c.at) + MS,
                    output_tokens: 400,
                    chunks,
                    ..Default::default()
                });
            }
        }
        let seconds = ClientSeconds::of(&records).seconds(64);
        let mut rate = TrailingRate::default();
        for tick in 0..=60 * 4u64 {
            let now = tick * 250 * MS;
            let arrived = records
                .iter()
                .flat_map(|r| &r.chunks)
                .filter(|c| c.at <= now)
                .count() as u64;
            let settled = records.iter().filter(|r| r.finished_at <= now);
            let (tokens, chunks) = settled.fold((0, 0), |(t, c), r| {
                (t + u64::from(r.output_tokens), c + r.chunks.len() as u64)
            });
            rate.update(now as f64 / 1e9, arrived);
            let live = tokens_per_s(rate.per_s(), tokens, chunks);
            let s = (now / (1000 * MS)) as usize;
            if now.is_multiple_of(1000 * MS) && s >= RATE_WINDOW_S as usize && chunks > 0 {
                let window = &seconds[s - RATE_WINDOW_S as usize..s];
                let recorded =
                    window.iter().map(|x| x.output_tokens).sum::<u64>() as f64 / RATE_WINDOW_S;
                assert!(
                    (live - recorded).abs() < 1e-9,
                    "at {s} s: live {live} tok/s, timeseries {recorded} tok/s"
                );
                assert!((live - 100.0).abs() <= 2.0, "at {s} s: {live} tok/s");
            }
        }
    }

    /// A terminal of 100 columns that keeps what is drawn on it.
    #[derive(Debug, Default)]
    struct Drawn {
        widest_line: Mutex<usize>,
        moved_up: std::sync::atomic::AtomicUsize,
    }

    #[derive(Debug)]
    struct NarrowTerm(Arc<Drawn>);

    impl indicatif::TermLike for NarrowTerm {
        fn width(&self) -> u16 {
            100
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.0.moved_up.fetch_add(n, Ordering::Relaxed);
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            let width = s.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            if let Ok(mut w) = self.0.widest_line.lock() {
                *w = (*w).max(width);
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_long_status_line_is_cut_to_the_terminal_not_wrapped() {
        // A level's status runs past 100 columns; with `{wide_bar} {msg}` the bar shrank to
        // "[]" and the line wrapped onto a second one that the next redraw did not clear.
        let term = Arc::new(Drawn::default());
        let target = ProgressDrawTarget::term_like(Box::new(NarrowTerm(term.clone())));
        let bar = ProgressBar::with_draw_target(Some(100), target);
        bar.set_style(bar_style());
        let status = "measuring: sent 36 · in flight 4 · done 32 · failed 0 · 102 tok/s · \
                      TTFT P50 1200 ms P99 4900 ms · ITL P50 30 ms · 100 % · ~0 s left";
        for done in [0, 50, 100] {
            bar.set_position(done);
            bar.set_message(status);
            bar.tick();
        }
        let widest = *term.widest_line.lock().unwrap();
        assert!(
            widest <= 100,
            "a line of {widest} columns on a 100-column terminal"
        );
        assert_eq!(
            term.moved_up.load(Ordering::Relaxed),
            0,
            "the bar spans one line"
        );
    }
}
