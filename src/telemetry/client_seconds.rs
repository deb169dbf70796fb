//! The client's columns of the timeline, one second at a time, built as records arrive.
//!
//! A run's timeline has a row per second whatever its number of requests; this tally keeps
//! exactly that (counts, and the TTFTs of the requests sent in each second in a [`Sketch`]
//! that stays exact up to its cap), so a long run's timeline needs no records kept.

use crate::clock::Nanos;
use crate::record::{Phase, RequestRecord};
use crate::stats::sketch::Sketch;

pub(crate) const SECOND: Nanos = 1_000_000_000;
/// Seconds kept at most (a week): a record stamped later (a corrupt line read back) is
/// counted in the last, not allowed to size the timeline.
const MAX_SECONDS: usize = 7 * 24 * 3600;

/// One second of what the client did.
#[derive(Debug, Clone)]
pub struct ClientSecond {
    pub sends: u64,
    pub completions: u64,
    pub failures: u64,
    /// Requests in flight at the end of the second.
    pub in_flight: u64,
    pub output_tokens: u64,
    /// TTFTs of the requests sent in the second that got an answer, ms.
    pub ttft_ms: Sketch,
    /// Requests of each phase in flight in the second (warm-up, probe, profile, measure).
    pub phase_votes: [u64; 4],
}

impl ClientSecond {
    /// A second with nothing in it; its TTFTs kept exactly up to `exact_ttfts`.
    fn empty(exact_ttfts: usize) -> Self {
        Self {
            sends: 0,
            completions: 0,
            failures: 0,
            in_flight: 0,
            output_tokens: 0,
            ttft_ms: Sketch::new(exact_ttfts),
            phase_votes: [0; 4],
        }
    }
}

/// Client activity per second of the run clock.
#[derive(Debug, Clone)]
pub struct ClientSeconds {
    seconds: Vec<ClientSecond>,
    /// TTFT values each second keeps exactly.
    exact_ttfts: usize,
}

impl ClientSeconds {
    /// Seconds whose TTFT median is exact up to `exact_ttfts` requests sent in a second.
    pub fn new(exact_ttfts: usize) -> Self {
        Self {
            seconds: Vec::new(),
            exact_ttfts,
        }
    }

    /// Every record's activity.
    pub fn of(records: &[RequestRecord]) -> Self {
        let mut s = Self::new(usize::MAX);
        for r in records {
            s.add(r);
        }
        s
    }

    fn at(&mut self, t: Nanos) -> &mut ClientSecond {
        let i = ((t / SECOND) as usize).min(MAX_SECONDS - 1);
        if i >= self.seconds.len() {
            let cap = self.exact_ttfts;
            self.seconds.resize_with(i + 1, || ClientSecond::empty(cap));
        }
        &mut self.seconds[i]
    }

    /// Adds one record's sends, end, tokens and time in flight.
    pub fn add(&mut self, r: &RequestRecord) {
        let phase = r.phase as usize;
        if let Some(s) = r.sent_at {
            let second = self.at(s);
            second.sends += 1;
            if let Some(t) = r.derived.as_ref().and_then(|d| d.ttft_ms) {
                second.ttft_ms.add(t);
            }
        }
        let end = self.at(r.finished_at);
        if r.outcome.is_ok() {
            end.completions += 1;
        } else {
            end.failures += 1;
        }
        end.phase_votes[phase] += 1;
        for c in r.chunks.iter().chain(&r.reasoning_chunks) {
            self.at(c.at).output_tokens += c.tokens as u64;
        }
        // In flight at the end of each second from its attempt to its end.
        let (from, to) = (r.attempted_at(), r.finished_at);
        let mut s = (from / SECOND) as usize;
        let to = to.min(MAX_SECONDS as Nanos * SECOND);
        loop {
            let edge = (s as u64 + 1) * SECOND;
            if edge > to {
                break;
            }
            if edge > from {
                let second = self.at(edge - 1);
                second.in_flight += 1;
                second.phase_votes[phase] += 1;
            }
            s += 1;
        }
    }

    /// The seconds up to `seconds` of them: activity after the last is counted in it (its
    /// TTFTs are not: a record cannot end after the run that wrote it, so this only trims
    /// the impossible).
    pub fn seconds(&self, seconds: usize) -> Vec<ClientSecond> {
        let mut out: Vec<ClientSecond> = self.seconds.iter().take(seconds).cloned().collect();
        out.resize_with(seconds, || ClientSecond::empty(0));
        if let Some(last) = out.last_mut() {
            for extra in self.seconds.iter().skip(seconds) {
                last.sends += extra.sends;
                last.completions += extra.completions;
                last.failures += extra.failures;
                last.output_tokens += extra.output_tokens;
                for (v, e) in last.phase_votes.iter_mut().zip(extra.phase_votes) {
                    *v += e;
                }
            }
        }
        out
    }
}

/// The phase most requests in flight in a second belonged to, `None` when none were.
pub fn leading_phase(votes: [u64; 4]) -> Option<Phase> {
    match votes.iter().enumerate().max_by_key(|(_, n)| **n) {
        Some((_, 0)) | None => None,
        Some((p, _)) => Some([Phase::Warmup, Phase::Probe, Phase::Profile, Phase::Measure][p]),
    }
}
