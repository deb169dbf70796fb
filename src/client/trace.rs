//! W3C Trace Context for every request, so a server's own traces (vLLM, SGLang and gateways
//! that speak OpenTelemetry) join the client's records.
//!
//! A request's trace id is the run's 16-hex-digit prefix followed by the record's id in 16
//! hex digits: whoever holds `run.json` (its `target.trace_id_prefix`) and a record can name
//! its trace, and the other way round, with nothing stored per request. The parent span id is
//! a mix of the two, never zero as the recommendation requires. Only the HTTP APIs carry the
//! header (`traceparent: 00-{trace id}-{span id}-01`, sampled).

/// A fresh prefix for a run: the wall clock's nanoseconds mixed, so runs started together on
/// several machines (scale-out shards) still differ. Never zero.
pub fn new_prefix() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    format!(
        "{:016x}",
        mix(now ^ u64::from(std::process::id()).rotate_left(40)) | 1
    )
}

/// The trace id of record `id` in a run with `prefix` (32 lowercase hex digits).
pub fn trace_id(prefix: &str, id: u64) -> String {
    format!("{prefix}{id:016x}")
}

/// The client span's id for record `id` (16 lowercase hex digits, never all zero).
pub fn span_id(prefix: &str, id: u64) -> String {
    let p = u64::from_str_radix(prefix, 16).unwrap_or(0);
    format!("{:016x}", mix(p ^ mix(id)) | 1)
}

/// The `traceparent` header value of record `id`.
pub fn traceparent(prefix: &str, id: u64) -> String {
    format!("00-{}-{}-01", trace_id(prefix, id), span_id(prefix, id))
}

/// Whether `prefix` is one [`new_prefix`] could make: 16 lowercase hex digits, not all zero.
pub fn valid_prefix(prefix: &str) -> bool {
    prefix.len() == 16
        && prefix
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && prefix.bytes().any(|b| b != b'0')
}

/// SplitMix64's finaliser: a fixed, portable bijection of 64-bit words.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_id_is_the_prefix_then_the_record_id() {
        let p = "00f067aa0ba902b7";
        assert_eq!(trace_id(p, 42), "00f067aa0ba902b7000000000000002a");
        let header = traceparent(p, 42);
        let parts: Vec<&str> = header.split('-').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0], "00");
        assert_eq!(parts[1], trace_id(p, 42));
        assert_eq!(parts[2].len(), 16);
        assert_ne!(parts[2], "0000000000000000");
        assert_eq!(parts[3], "01");
        // The same record, the same header; another record, another span.
        assert_eq!(header, traceparent(p, 42));
        assert_ne!(span_id(p, 42), span_id(p, 43));
    }

    #[test]
    fn prefixes_are_valid_and_differ() {
        let (a, b) = (new_prefix(), new_prefix());
        assert!(valid_prefix(&a) && valid_prefix(&b), "{a} {b}");
        assert_ne!(a, b);
        assert!(!valid_prefix("0000000000000000"));
        assert!(!valid_prefix("00F067AA0BA902B7"));
        assert!(!valid_prefix("abc"));
    }
}
