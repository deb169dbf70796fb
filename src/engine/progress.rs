//! The live progress line (stderr, only on a terminal).

use crate::store::writer::Counters;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Draws the progress line until dropped.
pub struct Progress {
    bar: ProgressBar,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Progress {
    pub fn start(
        quiet: bool,
        counters: Arc<Counters>,
        sent: Arc<AtomicU64>,
        in_flight: Arc<AtomicU64>,
        phase_label: Arc<std::sync::Mutex<String>>,
    ) -> Self {
        let target = if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr_with_hz(4)
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (b, s) = (bar.clone(), stop.clone());
        std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let start = Instant::now();
                let mut last_tokens = 0u64;
                let mut last_t = start;
                while !s.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    let m = &counters.measure;
                    let tokens = m.output_tokens.load(Ordering::Relaxed)
                        + counters.warmup.output_tokens.load(Ordering::Relaxed);
                    let now = Instant::now();
                    let dt = now.duration_since(last_t).as_secs_f64();
                    if dt >= 1.0 {
                        let rate = (tokens - last_tokens) as f64 / dt;
                        last_tokens = tokens;
                        last_t = now;
                        let label = phase_label.lock().map(|l| l.clone()).unwrap_or_default();
                        b.set_message(format!(
                            "{label}: sent {} · in flight {} · done {} · failed {} · {:.0} tok/s",
                            sent.load(Ordering::Relaxed),
                            in_flight.load(Ordering::Relaxed),
                            m.completed.load(Ordering::Relaxed),
                            m.failed.load(Ordering::Relaxed),
                            rate
                        ));
                    }
                    b.tick();
                }
            })
            .ok();
        Self { bar, stop }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.bar.finish_and_clear();
    }
}
