//! The one clock of a run.
//!
//! Every timestamp in a run is a nanosecond offset from a single monotonic anchor
//! (`Instant`), taken once when the run starts, together with the wall-clock time of that
//! same moment. Offsets never go backwards (NTP slews cannot move them) and convert to
//! Unix-epoch microseconds only when they are written out (draft 4.2.1 and 4.7.4).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Nanoseconds since the run's anchor.
pub type Nanos = u64;

/// A monotonic clock anchored to the wall clock once.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    anchor: Instant,
    /// Unix-epoch nanoseconds at `anchor`.
    anchor_unix_ns: u64,
}

impl RunClock {
    /// Anchors a new clock at this instant.
    pub fn start() -> Self {
        // Read the wall clock between two monotonic reads and take the midpoint, so the
        // anchor pairing is off by at most half the (tiny) time between the reads.
        let before = Instant::now();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let after = Instant::now();
        let anchor = before + (after - before) / 2;
        Self {
            anchor,
            anchor_unix_ns: wall.as_nanos() as u64,
        }
    }

    /// A clock with a given anchor; used by tests to get exact, reproducible exports.
    pub fn with_anchor(anchor: Instant, anchor_unix_ns: u64) -> Self {
        Self {
            anchor,
            anchor_unix_ns,
        }
    }

    /// Nanoseconds elapsed since the anchor.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.anchor.elapsed().as_nanos() as u64
    }

    /// The offset of an `Instant` taken elsewhere (0 when it precedes the anchor).
    #[inline]
    pub fn offset_of(&self, at: Instant) -> Nanos {
        at.saturating_duration_since(self.anchor).as_nanos() as u64
    }

    /// The `Instant` at an offset, for sleeping until a planned time.
    pub fn instant_at(&self, at: Nanos) -> Instant {
        self.anchor + Duration::from_nanos(at)
    }

    /// Unix-epoch microseconds of an offset.
    pub fn unix_us(&self, at: Nanos) -> u64 {
        (self.anchor_unix_ns + at) / 1_000
    }

    /// Unix-epoch nanoseconds of the anchor.
    pub fn anchor_unix_ns(&self) -> u64 {
        self.anchor_unix_ns
    }
}

/// Formats Unix-epoch microseconds as ISO 8601 UTC with milliseconds (`2026-11-22T01:02:03.456Z`).
pub fn iso8601_ms(unix_us: u64) -> String {
    let secs = unix_us / 1_000_000;
    let ms = (unix_us / 1_000) % 1_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a (year, month, day) civil date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_format_is_exact() {
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000Z");
        // 2026-11-22T01:02:03.456789Z
        assert_eq!(
            iso8601_ms(1_795_309_323_456_789),
            "2026-11-22T01:02:03.456Z"
        );
        assert_eq!(iso8601_ms(951_782_400_000_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn offsets_convert_to_unix_micros() {
        let anchor = Instant::now();
        let clock = RunClock::with_anchor(anchor, 1_000_000_000_000);
        assert_eq!(clock.unix_us(1_500), 1_000_000_001);
        assert_eq!(clock.offset_of(anchor + Duration::from_micros(7)), 7_000);
        assert_eq!(clock.offset_of(anchor - Duration::from_micros(7)), 0);
    }
}
