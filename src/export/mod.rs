//! Runs in other tools' formats, so existing spreadsheets and dashboards read them: CSV of
//! the requests and of run summaries, the result JSON of vLLM's `bench serve
//! --save-result`, AIPerf's `profile_export_aiperf.json` and `profile_export.jsonl`, and
//! Parquet files of the requests, their chunks and the timeseries for analysts' tools.
//! `requests.jsonl` stays the raw truth; every export is computed from it and `run.json`.
//!
//! Where another tool defines a figure differently from servebench (vLLM's latency runs to
//! the end of the stream, its ITL is the gap between chunks), the export follows the other
//! tool's definition, so a dashboard sees the numbers it expects; docs/history.md lists
//! each such choice. Pure: a report and records in, text (or Parquet's bytes) out.

pub mod aiperf;
pub mod csv;
pub mod otlp;
pub mod parquet;
pub mod vllm;

use crate::record::wire::{WireOutcome, WireRecord};
use crate::record::Phase;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value as Json;

/// A JSON object whose keys keep the order they were pushed in (serde_json's own map
/// sorts them), for formats whose readers are used to a key order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ordered(pub Vec<(String, Entry)>);

/// A value of an [`Ordered`] object: plain JSON, or an object that keeps its own order.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Json(Json),
    Object(Ordered),
}

impl Ordered {
    /// Appends `key: value`.
    pub fn push(&mut self, key: impl Into<String>, value: impl Into<Json>) {
        self.0.push((key.into(), Entry::Json(value.into())));
    }

    /// Appends `key: {…}` with the object's own key order.
    pub fn push_object(&mut self, key: impl Into<String>, value: Ordered) {
        self.0.push((key.into(), Entry::Object(value)));
    }

    /// The plain JSON value of `key`, if pushed.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Entry::Json(j) => Some(j),
                Entry::Object(_) => None,
            })
    }

    /// The keys in order.
    pub fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| k.as_str()).collect()
    }

    /// As a plain JSON value (key order then depends on serde_json's map).
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or(Json::Null)
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            match v {
                Entry::Json(j) => map.serialize_entry(k, j)?,
                Entry::Object(o) => map.serialize_entry(k, o)?,
            }
        }
        map.end()
    }
}

/// A finite number as JSON; `null` for NaN or infinity (JSON has neither).
pub fn num(v: f64) -> Json {
    serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number)
}

/// A measured request with the times the exports need, in seconds.
#[derive(Debug, Clone)]
pub struct Req<'a> {
    pub wire: &'a WireRecord,
    pub ok: bool,
    /// First answer token − T_submit (the last request byte written), s.
    pub ttft_s: Option<f64>,
    /// End of the stream − T_submit, s (vLLM's and AIPerf's request latency).
    pub latency_s: Option<f64>,
    /// Gaps between consecutive answer chunks after the first, s.
    pub chunk_gaps_s: Vec<f64>,
    /// Prompt tokens: the server's count when it gave one.
    pub input_tokens: u64,
}

/// The measured requests of a run, in file order.
pub fn measured(records: &[WireRecord]) -> Vec<Req<'_>> {
    records
        .iter()
        .filter(|w| w.phase == Phase::Measure)
        .map(|w| {
            let sent = w.submitted_at_us();
            let secs = |a: u64, b: u64| a.saturating_sub(b) as f64 / 1e6;
            let first = w.leading_blank_chunks.map(|i| i as usize);
            let answer: &[(u64, u32)] = match first {
                Some(i) if i < w.chunks.len() => &w.chunks[i..],
                _ => &[],
            };
            Req {
                wire: w,
                ok: matches!(w.outcome, WireOutcome::Ok(_)),
                ttft_s: sent.zip(w.first_token_at_us).map(|(s, t)| secs(t, s)),
                latency_s: sent.map(|s| secs(w.finished_at_us, s)),
                chunk_gaps_s: answer.windows(2).map(|p| secs(p[1].0, p[0].0)).collect(),
                input_tokens: w
                    .usage
                    .as_ref()
                    .and_then(|u| u.get("prompt_tokens"))
                    .and_then(Json::as_u64)
                    .unwrap_or(u64::from(w.input_tokens)),
            }
        })
        .collect()
}

/// `p`-th percentiles and moments of a sample, as the exports print them.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub sorted: Vec<f64>,
}

impl Stats {
    /// The finite values of `values`, sorted.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut sorted: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        sorted.sort_unstable_by(f64::total_cmp);
        Self { sorted }
    }

    pub fn count(&self) -> usize {
        self.sorted.len()
    }

    pub fn sum(&self) -> f64 {
        self.sorted.iter().sum()
    }

    /// Arithmetic mean; 0 for no values (numpy's `np.mean(values or 0)` as vLLM writes it).
    pub fn mean(&self) -> f64 {
        if self.sorted.is_empty() {
            0.0
        } else {
            self.sum() / self.sorted.len() as f64
        }
    }

    /// Linear-interpolation percentile (numpy's default, type 7); 0 for no values.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.sorted.is_empty() {
            0.0
        } else {
            crate::stats::distribution::percentile_sorted(&self.sorted, p)
        }
    }

    /// Population standard deviation (numpy's `np.std`).
    pub fn std_population(&self) -> f64 {
        crate::stats::distribution::std_dev(&self.sorted)
    }

    /// Sample standard deviation (n − 1); 0 for fewer than two values.
    pub fn std_sample(&self) -> f64 {
        crate::stats::interval::sample_variance(&self.sorted)
            .map(f64::sqrt)
            .unwrap_or(0.0)
    }

    pub fn min(&self) -> f64 {
        self.sorted.first().copied().unwrap_or(0.0)
    }

    pub fn max(&self) -> f64 {
        self.sorted.last().copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    //! A real run folder from the built-in simulator (`tests/fixtures/run-sim`), read once.

    use crate::artifacts::RunReport;
    use crate::record::wire::WireRecord;

    pub const RUN_JSON: &str = include_str!("../../tests/fixtures/run-sim/run.json");
    pub const REQUESTS: &str = include_str!("../../tests/fixtures/run-sim/requests.jsonl");

    pub fn report() -> RunReport {
        serde_json::from_str(RUN_JSON).expect("the fixture run.json reads back")
    }

    pub fn records() -> Vec<WireRecord> {
        REQUESTS
            .lines()
            .map(|l| serde_json::from_str(l).expect("a fixture record"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_objects_keep_their_order() {
        let mut o = Ordered::default();
        o.push("zeta", 1);
        o.push("alpha", "x");
        o.push("mid", Json::Null);
        let mut inner = Ordered::default();
        inner.push("z", 2);
        inner.push("a", 3);
        o.push_object("obj", inner);
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"zeta":1,"alpha":"x","mid":null,"obj":{"z":2,"a":3}}"#
        );
        assert_eq!(o.keys(), ["zeta", "alpha", "mid", "obj"]);
        assert_eq!(o.get("obj"), None);
        assert_eq!(o.to_json()["obj"]["a"], 3);
        assert_eq!(num(f64::NAN), Json::Null);
    }

    #[test]
    fn stats_by_hand() {
        let s = Stats::of([4.0, 1.0, 3.0, 2.0, f64::NAN]);
        assert_eq!(s.count(), 4);
        assert_eq!((s.min(), s.max(), s.sum(), s.mean()), (1.0, 4.0, 10.0, 2.5));
        // Type 7: rank 0.5 × 3 = 1.5 → between 2 and 3.
        assert_eq!(s.percentile(50.0), 2.5);
        assert!((s.percentile(99.0) - 3.97).abs() < 1e-12);
        // Population: sqrt(1.25); sample: sqrt(5/3).
        assert!((s.std_population() - 1.25f64.sqrt()).abs() < 1e-12);
        assert!((s.std_sample() - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        let empty = Stats::of([]);
        assert_eq!((empty.mean(), empty.percentile(99.0)), (0.0, 0.0));
    }

    #[test]
    fn measured_requests_from_the_fixture() {
        let records = fixture::records();
        let reqs = measured(&records);
        assert!(!reqs.is_empty());
        for r in &reqs {
            let w = r.wire;
            assert_eq!(w.phase, Phase::Measure);
            if r.ok {
                // TTFT from the file's own timestamps, and one gap per answer chunk after
                // the first.
                let ttft =
                    (w.first_token_at_us.unwrap() - w.submitted_at_us().unwrap()) as f64 / 1e6;
                assert_eq!(r.ttft_s, Some(ttft));
                let answer = w.chunks.len() - w.leading_blank_chunks.unwrap() as usize;
                assert_eq!(r.chunk_gaps_s.len(), answer - 1);
                let total: f64 = r.chunk_gaps_s.iter().sum();
                let span = (w.chunks.last().unwrap().0 - w.first_token_at_us.unwrap()) as f64 / 1e6;
                assert!((total - span).abs() < 1e-9);
            }
        }
    }
}
