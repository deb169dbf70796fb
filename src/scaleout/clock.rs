//! How far a shard's wall clock is from the reference clock, so shards start together and
//! their records land on one timeline when merged.
//!
//! Two sources: an offset given by hand (`--clock-offset-ms`, for a known skew or for
//! testing), or the target's HTTP `Date` header. `Date` has one-second resolution, so one
//! response says little; but every response brackets the server's second between the
//! request's send and receive times, and probing across a second boundary narrows the
//! offset to about the probe spacing plus the round trip. [`estimate`] intersects those
//! brackets (pure, tested on hand-made probes); [`probe_date`] takes them.

use crate::client::Target;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// An offset beyond this is flagged in the merged report: at 100 requests/s (10 ms between
/// sends) it moves a shard's requests by several arrivals against the others.
pub const LARGE_OFFSET_MS: f64 = 50.0;

/// One `Date` probe: local Unix µs just before sending and just after the response head,
/// and the server's `Date` in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub sent_us: i64,
    pub received_us: i64,
    pub date_s: i64,
}

/// This machine's clock minus the reference clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// `given` (`--clock-offset-ms`), `date-header` (the target's `Date` header) or `none`.
    pub method: String,
    /// The estimate, ms (positive: this clock is ahead).
    pub offset_ms: f64,
    /// Half-width of the interval the estimate is known to lie in, ms (0 when given).
    pub uncertainty_ms: f64,
    /// The offset applied when starting and merging, ms: the estimate when it is given or
    /// clearly non-zero (larger than its uncertainty), else 0.
    pub applied_ms: f64,
    /// Probes the estimate is made of.
    #[serde(default)]
    pub probes: u32,
}

impl ClockOffset {
    /// An offset given by hand.
    pub fn given(offset_ms: f64) -> Self {
        ClockOffset {
            method: "given".into(),
            offset_ms,
            uncertainty_ms: 0.0,
            applied_ms: offset_ms,
            probes: 0,
        }
    }

    /// No measurement: the clocks are taken as agreeing (NTP).
    pub fn none(why: &str) -> Self {
        ClockOffset {
            method: format!("none ({why})"),
            ..Default::default()
        }
    }

    /// From a `Date` estimate (ms, ms): applied only when it is clearly not zero, so an
    /// NTP-synchronised fleet is never shifted by a coarse header's noise.
    pub fn from_estimate(offset_ms: f64, uncertainty_ms: f64, probes: u32) -> Self {
        ClockOffset {
            method: "date-header".into(),
            offset_ms,
            uncertainty_ms,
            applied_ms: if offset_ms.abs() > uncertainty_ms {
                offset_ms
            } else {
                0.0
            },
            probes,
        }
    }

    /// The applied offset in whole µs.
    pub fn applied_us(&self) -> i64 {
        (self.applied_ms * 1000.0).round() as i64
    }
}

/// The offset interval consistent with every probe: `(offset_ms, uncertainty_ms)`, the
/// interval's midpoint and half-width. `None` without probes or when they contradict each
/// other (the server's clock stepped, or `Date` is not its clock).
///
/// A response stamped second `D` was handled at some server time in `[D, D+1 s)`, at a
/// local time in `[sent, received]`; so the offset (local − server) lies in
/// `(sent − D − 1 s, received − D]`.
pub fn estimate(probes: &[Probe]) -> Option<(f64, f64)> {
    let mut lo = i64::MIN;
    let mut hi = i64::MAX;
    for p in probes {
        let d_us = p.date_s * 1_000_000;
        lo = lo.max(p.sent_us - d_us - 1_000_000);
        hi = hi.min(p.received_us - d_us);
    }
    if probes.is_empty() || lo > hi {
        return None;
    }
    Some((
        (lo + hi) as f64 / 2.0 / 1000.0,
        (hi - lo) as f64 / 2.0 / 1000.0,
    ))
}

/// Formats Unix seconds as an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110).
pub fn http_date(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_s / 86_400;
    let rem = unix_s % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into Unix seconds.
pub fn parse_http_date(s: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let d: i64 = day.parse().ok()?;
    let m = MONTHS.iter().position(|x| x == month)? as i64 + 1;
    let y: i64 = year.parse().ok()?;
    let hms: Vec<i64> = time
        .split(':')
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    let [h, mi, se] = hms.as_slice() else {
        return None;
    };
    if !(1..=31).contains(&d) || *h > 23 || *mi > 59 || *se > 60 {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400 + h * 3600 + mi * 60 + se)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn unix_us_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as i64
}

/// Probes the target's `Date` header until the offset is known to within `want_ms` or
/// `budget` is spent (at least one second, so a second boundary is crossed). `Err` says
/// why no estimate could be made (no `Date` header, unreachable).
pub async fn probe_date(
    target: &Target,
    budget: Duration,
    want_ms: f64,
) -> Result<ClockOffset, String> {
    let path = target.url.path("/models");
    let started = Instant::now();
    let mut probes = Vec::new();
    loop {
        let sent_us = unix_us_now();
        let r = crate::client::simple::call(
            &target.url,
            Some(target),
            "GET",
            &path,
            None,
            Duration::from_secs(5),
        )
        .await
        .map_err(|e| format!("probing {path} for its Date header: {e}"))?;
        let received_us = unix_us_now();
        let Some(date) = r.date.as_deref() else {
            return Err(format!("{path} answered without a Date header"));
        };
        let date_s = parse_http_date(date)
            .ok_or_else(|| format!("{path} sent a Date header that is not an HTTP date: {date}"))?;
        probes.push(Probe {
            sent_us,
            received_us,
            date_s,
        });
        let Some((offset, unc)) = estimate(&probes) else {
            return Err(
                "the Date headers contradict each other (the server's clock stepped?)".into(),
            );
        };
        let spent = started.elapsed();
        if (unc <= want_ms && probes.len() > 1) || spent >= budget.max(Duration::from_millis(1100))
        {
            return Ok(ClockOffset::from_estimate(offset, unc, probes.len() as u32));
        }
        // Every 10 ms, so that one probe lands just after the next second boundary.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_round_trip() {
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        for s in [1_767_225_600u64, 951_782_400, 4_102_444_799] {
            assert_eq!(parse_http_date(&http_date(s)), Some(s as i64));
        }
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), None);
    }

    #[test]
    fn probes_across_a_second_boundary_narrow_the_offset() {
        // The local clock is 2.3 s ahead of the server (offset +2300 ms); probes every
        // 20 ms with a 2 ms round trip, handled mid-flight.
        let truth_us = 2_300_000i64;
        let probes: Vec<Probe> = (0..60)
            .map(|j| {
                let sent = 1_000_000_000_000 + j * 20_000;
                let handled_server = sent + 1_000 - truth_us;
                Probe {
                    sent_us: sent,
                    received_us: sent + 2_000,
                    date_s: handled_server.div_euclid(1_000_000),
                }
            })
            .collect();
        let (offset, unc) = estimate(&probes).unwrap();
        assert!((offset - 2300.0).abs() <= unc, "{offset} ± {unc}");
        assert!(unc <= 12.0, "uncertainty {unc} ms");
        // One probe only bounds it to a second.
        let (_, one) = estimate(&probes[..1]).unwrap();
        assert!((500.0..=502.0).contains(&one), "{one}");
        // Contradictory dates: no estimate.
        let mut bad = probes.clone();
        bad[5].date_s += 5;
        assert_eq!(estimate(&bad), None);
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn small_estimates_are_recorded_not_applied() {
        let small = ClockOffset::from_estimate(3.0, 12.0, 50);
        assert_eq!(small.applied_ms, 0.0);
        let big = ClockOffset::from_estimate(-250.0, 12.0, 50);
        assert_eq!((big.applied_ms, big.applied_us()), (-250.0, -250_000));
        assert_eq!(ClockOffset::given(1500.0).applied_us(), 1_500_000);
    }
}
