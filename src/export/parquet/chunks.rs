//! `chunks.parquet`: one row per streamed chunk of every request (its `chunks`, then its
//! `reasoning_chunks`, in arrival order), with the time since the request was sent and
//! since the chunk before (from the first token on: the request's ITL samples), so
//! inter-token latencies are one column away.

use super::phase_name;
use super::table::{nullable, required, Column, Kind, Table};
use crate::record::wire::WireRecord;
use crate::record::Phase;
use parquet::data_type::ByteArray;
use std::io::Write;

/// Rows per row group: about 13 MB of buffers.
pub const ROWS_PER_GROUP: usize = 262_144;

/// The columns of `chunks.parquet`, in order.
pub const COLUMNS: &[Column] = &[
    required("record_index", Kind::Int, "", "The request's row in requests.parquet (its `record_index`)"),
    required("request_id", Kind::Int, "", "The request's id within its phase"),
    required("phase", Kind::Text, "", "The request's phase: `measure`, `warmup`, `probe` or `profile`"),
    required("reasoning", Kind::Flag, "", "A reasoning (thinking) chunk rather than answer content"),
    required("chunk_index", Kind::Int, "", "Position among the request's chunks of its kind, from 0"),
    required("arrived_at_us", Kind::Time, "µs since the epoch", "When the chunk's bytes arrived (draft B.1.1)"),
    nullable("since_sent_ms", Kind::Float, "ms", "Arrival − the request's sent_at_us"),
    nullable("gap_ms", Kind::Float, "ms", "Arrival − the previous chunk of its kind; null for the first, and for answer chunks up to the first token (an answer's gap_ms are its ITL samples, option A)"),
    required("tokens", Kind::Int, "tokens", "Tokens the chunk carried (requests.parquet's chunk_tokens_source says how counted)"),
    required("leading_blank", Kind::Flag, "", "A whitespace-only content chunk before the first token: not in TTFT or ITL"),
];

/// The phases' names as Parquet values, made once: every chunk row shares them.
pub struct Phases([ByteArray; 4]);

impl Default for Phases {
    fn default() -> Self {
        let named = |p| ByteArray::from(phase_name(p).as_bytes().to_vec());
        Phases([
            named(Phase::Warmup),
            named(Phase::Probe),
            named(Phase::Profile),
            named(Phase::Measure),
        ])
    }
}

impl Phases {
    fn of(&self, p: Phase) -> ByteArray {
        let i = match p {
            Phase::Warmup => 0,
            Phase::Probe => 1,
            Phase::Profile => 2,
            Phase::Measure => 3,
        };
        self.0[i].clone()
    }
}

/// Adds the chunks of a record, line `index` of requests.jsonl, to `table`: its content
/// chunks, then its reasoning chunks.
pub fn push<W: Write + Send>(
    table: &mut Table<W>,
    phases: &Phases,
    index: u64,
    w: &WireRecord,
) -> parquet::errors::Result<()> {
    // Leading blank chunks: `leading_blank_chunks` of them, or all when it is null (the
    // whole answer was blank).
    let blanks = w
        .leading_blank_chunks
        .map_or(w.chunks.len(), |n| n as usize);
    let streams = [(false, &w.chunks), (true, &w.reasoning_chunks)];
    for (reasoning, chunks) in streams {
        let mut previous: Option<u64> = None;
        for (i, &(at, tokens)) in chunks.iter().enumerate() {
            let since = |t: u64| at.saturating_sub(t) as f64 / 1000.0;
            table.push(|r| {
                r.count(index)
                    .count(w.id)
                    .bytes(Some(phases.of(w.phase)))
                    .flag(reasoning)
                    .count(i as u64)
                    .time(Some(at))
                    .float(w.sent_at_us.map(since))
                    .float(previous.map(since))
                    .count(u64::from(tokens))
                    .flag(!reasoning && i < blanks);
            })?;
            // An answer's gaps start at its first token: the gap before it is no ITL.
            if reasoning || i >= blanks {
                previous = Some(at);
            }
        }
    }
    Ok(())
}
