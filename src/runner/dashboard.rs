//! The live view: a small terminal dashboard (ratatui) drawn on stderr while a run goes on,
//! when stderr is a terminal.
//!
//! A benchmark that prints one line while it runs hides what a user most wants to see early:
//! is the server keeping up, are requests failing, and what latency do users get right now.
//! The view shows the phase with its progress and time left, requests in flight and the
//! rates sent and completed, tokens/s, TTFT and ITL percentiles over the last seconds,
//! failures by kind, the server's own waiting queue, and (for tests) the levels as they
//! finish, printed above it. It is drawn in an inline viewport under the command's earlier
//! output, so nothing scrolls away; logs and CI get the plain status lines instead
//! (`runner/progress.rs`). Rendering is a pure function of a [`Snapshot`], tested on
//! ratatui's test backend.

use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Widget, Wrap};
use ratatui::{Frame, Terminal, TerminalOptions, Viewport};

/// Height of the view, lines.
pub const HEIGHT: u16 = 8;

/// What the view shows at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// The phase, in words ("measuring", "warming up", ...).
    pub label: String,
    pub elapsed_s: f64,
    /// Share of the phase done, when it has a limit.
    pub fraction: Option<f64>,
    pub eta_s: Option<f64>,
    pub sent: u64,
    pub in_flight: u64,
    pub done: u64,
    pub failed: u64,
    /// Requests sent and completed per second, and output tokens per second, over the last
    /// [`crate::metrics::live::RATE_WINDOW_S`] seconds.
    pub sent_per_s: f64,
    pub done_per_s: f64,
    pub tokens_per_s: f64,
    /// P50 and P99 over the last [`crate::metrics::live::WINDOW_S`] seconds, ms.
    pub ttft_ms: Option<(f64, f64)>,
    pub itl_ms: Option<(f64, f64)>,
    /// Failures of this phase by kind.
    pub failures: Vec<(String, u64)>,
    /// The server's waiting queue at its latest metrics scrape.
    pub queue_waiting: Option<f64>,
}

fn ms(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} s", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.1} ms")
    }
}

fn pair(p: Option<(f64, f64)>) -> String {
    p.map_or("-".to_owned(), |(a, b)| {
        format!("P50 {} · P99 {}", ms(a), ms(b))
    })
}

/// Draws `s` into `area` of `frame`.
pub fn render(frame: &mut Frame, area: Rect, s: &Snapshot) {
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        format!(" servebench · {} · {:.0} s ", s.label, s.elapsed_s),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = Layout::vertical([Constraint::Length(1); 6]).split(inner);
    let ratio = s.fraction.unwrap_or(0.0).clamp(0.0, 1.0);
    let gauge_label = match (s.fraction, s.eta_s) {
        (Some(f), Some(left)) => format!("{:.0} % · ~{left:.0} s left", f * 100.0),
        (Some(f), None) => format!("{:.0} %", f * 100.0),
        (None, Some(left)) => format!("~{left:.0} s left"),
        (None, None) => "no limit: Ctrl-C stops".to_owned(),
    };
    frame.render_widget(Gauge::default().ratio(ratio).label(gauge_label), rows[0]);
    let lines = [
        format!(
            "requests  sent {} ({:.1}/s) · in flight {} · done {} ({:.1}/s) · failed {}",
            s.sent, s.sent_per_s, s.in_flight, s.done, s.done_per_s, s.failed
        ),
        format!(
            "tokens    {:.0} tok/s output   (last {:.0} s)",
            s.tokens_per_s,
            crate::metrics::live::RATE_WINDOW_S
        ),
        format!("TTFT      {}   (last 10 s)", pair(s.ttft_ms)),
        format!("ITL       {}   (last 10 s)", pair(s.itl_ms)),
        format!(
            "failures  {} · server queue {}",
            if s.failures.is_empty() {
                "none".to_owned()
            } else {
                s.failures
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            s.queue_waiting
                .map_or("- (no metrics)".to_owned(), |q| format!("{q:.0} waiting"))
        ),
    ];
    for (row, text) in rows[1..].iter().zip(lines) {
        frame.render_widget(Paragraph::new(Line::from(text)), *row);
    }
}

/// The view on the terminal (stderr; a test's backend in tests).
pub struct Dashboard<B: Backend = CrosstermBackend<std::io::Stderr>> {
    terminal: Terminal<B>,
}

impl Dashboard {
    /// Opens the view below the cursor; `None` when the terminal cannot host it.
    pub fn open() -> Option<Self> {
        Self::on(CrosstermBackend::new(std::io::stderr()))
    }
}

impl<B: Backend> Dashboard<B> {
    /// Opens the view below `backend`'s cursor, on lines cleared first: a redraw writes
    /// only the cells that changed, so text already there would show through its blanks.
    pub fn on(backend: B) -> Option<Self> {
        let mut terminal = Terminal::with_options(
            backend,
            TerminalOptions {
                viewport: Viewport::Inline(HEIGHT),
            },
        )
        .ok()?;
        terminal.clear().ok()?;
        Some(Self { terminal })
    }

    /// Redraws the view.
    pub fn draw(&mut self, s: &Snapshot) {
        let _ = self.terminal.draw(|f| render(f, f.area(), s));
    }

    /// Prints a line above the view (it stays in the scrollback), wrapped to the
    /// terminal's width.
    pub fn println(&mut self, line: &str) {
        let width = self.terminal.size().map_or(100, |s| s.width).max(20) as usize;
        let height = line.chars().count().div_ceil(width).max(1) as u16;
        let text = line.to_owned();
        let _ = self.terminal.insert_before(height, |buf| {
            Paragraph::new(text)
                .wrap(Wrap { trim: false })
                .render(buf.area, buf);
        });
    }

    /// Clears the view and leaves the cursor at its first column, top line: what is
    /// printed next (the final report, a test's level line) starts there, in the cleared
    /// space. (Clearing alone puts the cursor back where the last redraw left it, in the
    /// middle of a line: the next line began at that column.)
    pub fn close(&mut self) {
        let origin = self.terminal.get_frame().area().as_position();
        let _ = self.terminal.clear();
        let _ = self.terminal.set_cursor_position(origin);
        let _ = self.terminal.show_cursor();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;

    /// The view shows every figure the live view promises, within 100 columns.
    #[test]
    fn the_view_shows_the_run_as_it_goes() {
        let snap = Snapshot {
            label: "measuring".into(),
            elapsed_s: 12.0,
            fraction: Some(0.4),
            eta_s: Some(18.0),
            sent: 480,
            in_flight: 32,
            done: 448,
            failed: 3,
            sent_per_s: 40.0,
            done_per_s: 38.5,
            tokens_per_s: 5210.0,
            ttft_ms: Some((101.2, 350.0)),
            itl_ms: Some((20.1, 31.0)),
            failures: vec![("timeout".into(), 2), ("http_status".into(), 1)],
            queue_waiting: Some(7.0),
        };
        let mut t = Terminal::new(TestBackend::new(100, HEIGHT)).unwrap();
        t.draw(|f| render(f, f.area(), &snap)).unwrap();
        let screen: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect::<Vec<_>>()
            .chunks(100)
            .map(|row| row.concat())
            .collect::<Vec<_>>()
            .join("\n");
        for expected in [
            "servebench · measuring · 12 s",
            "40 % · ~18 s left",
            "sent 480 (40.0/s) · in flight 32 · done 448 (38.5/s) · failed 3",
            "5210 tok/s output",
            "TTFT      P50 101 ms · P99 350 ms",
            "ITL       P50 20.1 ms · P99 31.0 ms",
            "failures  timeout 2, http_status 1 · server queue 7 waiting",
        ] {
            assert!(
                screen.contains(expected),
                "missing `{expected}` in\n{screen}"
            );
        }
    }

    /// Issue 36: after a level's view closed, the test's level line began at whatever
    /// column the last redraw left the cursor in. Closing leaves it at the first column of
    /// the view's top line, below what was printed before the view.
    #[test]
    fn closing_leaves_the_cursor_at_the_start_of_a_line() {
        let mut backend = TestBackend::new(100, 20);
        backend.set_cursor_position((0, 5)).unwrap();
        let mut d = Dashboard::on(backend).expect("a view");
        d.draw(&Snapshot::default());
        // Where a real terminal's cursor is after a redraw: past the last cell written.
        d.terminal.set_cursor_position((37, 11)).unwrap();
        d.close();
        let at = d.terminal.backend_mut().get_cursor_position().unwrap();
        assert_eq!((at.x, at.y), (0, 5));
    }

    /// Text left on the lines the view opens on (a line that began mid-screen) does not
    /// show through the view's blank cells.
    #[test]
    fn the_view_opens_on_cleared_lines() {
        let mut backend = TestBackend::new(100, 20);
        let x = ratatui::buffer::Cell::new("X");
        let cells: Vec<(u16, u16, &ratatui::buffer::Cell)> = (0..100)
            .flat_map(|c| (5..13).map(move |r| (c, r)))
            .map(|(c, r)| (c, r, &x))
            .collect();
        backend.draw(cells.into_iter()).unwrap();
        backend.set_cursor_position((0, 5)).unwrap();
        let mut d = Dashboard::on(backend).expect("a view");
        d.draw(&Snapshot::default());
        let left = d
            .terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .filter(|c| c.symbol() == "X")
            .count();
        assert_eq!(left, 0, "cells of the earlier text still show");
    }
}
