//! Short, stable fingerprints of what a run sent, so that "were these runs offered the same
//! requests?" is a comparison of two strings (the fair-comparison checklist of the draft,
//! section 6.4, and the history's `workload_key`).
//!
//! A fingerprint is the FNV-1a 64-bit hash, as 16 lowercase hex digits, of compact JSON with
//! the keys of every object sorted (byte order) at every depth. Sorting by hand keeps the
//! hash the same whatever order a writer used. FNV is tiny, dependency-free and stable
//! across versions, which is all a "same requests?" check needs (it is not meant to resist
//! attack). Pure.

use serde_json::Value as Json;

/// Hash of the workload specification (and the dataset it read, when any), without the
/// seed: two runs with equal hashes drew their requests from the same specification.
pub fn workload_hash(workload: &Json, dataset_info: Option<&Json>) -> String {
    let mut text = String::from("{");
    if let Some(d) = dataset_info.filter(|d| !d.is_null()) {
        text.push_str("\"dataset\":");
        write_canonical(d, &mut text);
        text.push(',');
    }
    text.push_str("\"workload\":");
    write_canonical(workload, &mut text);
    text.push('}');
    hex(fnv1a64(text.as_bytes()))
}

/// Hash of workload, dataset and seed together: two runs with equal keys were offered the
/// same requests in the same order. The text hashed is `{"seed":S,"workload":W}`, with
/// `"dataset":D` first when the run read a dataset.
pub fn workload_key(workload: &Json, dataset_info: Option<&Json>, seed: &Json) -> String {
    let mut text = String::from("{");
    if let Some(d) = dataset_info.filter(|d| !d.is_null()) {
        text.push_str("\"dataset\":");
        write_canonical(d, &mut text);
        text.push(',');
    }
    text.push_str("\"seed\":");
    write_canonical(seed, &mut text);
    text.push_str(",\"workload\":");
    write_canonical(workload, &mut text);
    text.push('}');
    hex(fnv1a64(text.as_bytes()))
}

/// Hash of any JSON value in canonical form.
pub fn hash_value(value: &Json) -> String {
    hex(fnv1a64(canonical(value).as_bytes()))
}

/// Compact JSON with object keys sorted at every depth.
pub fn canonical(value: &Json) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Json, out: &mut String) {
    match value {
        Json::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Json::from(key.as_str()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn hex(hash: u64) -> String {
    format!("{hash:016x}")
}

/// FNV-1a, 64-bit.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// FNV-1a 64 written out independently, for the pinned values.
    fn fnv(bytes: &[u8]) -> u64 {
        let mut hash: u64 = 14695981039346656037;
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(1099511628211);
        }
        hash
    }

    #[test]
    fn known_fnv_values() {
        // Published FNV-1a 64 test vectors: "" and "a".
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn hashes_are_of_the_canonical_text() {
        let w = json!({"b": 2, "a": {"d": [1, {"f": 1, "e": 2}], "c": null}});
        assert_eq!(
            canonical(&w),
            r#"{"a":{"c":null,"d":[1,{"e":2,"f":1}]},"b":2}"#
        );
        assert_eq!(
            workload_hash(&json!({"b": 2, "a": 1}), None),
            format!("{:016x}", fnv(br#"{"workload":{"a":1,"b":2}}"#))
        );
        assert_eq!(
            workload_key(&json!({"b": 2, "a": 1}), None, &json!(1)),
            format!("{:016x}", fnv(br#"{"seed":1,"workload":{"a":1,"b":2}}"#))
        );
        let d = json!({"path": "x.json", "records": 3});
        assert_eq!(
            workload_key(&json!({"a": 1}), Some(&d), &json!(7)),
            format!(
                "{:016x}",
                fnv(br#"{"dataset":{"path":"x.json","records":3},"seed":7,"workload":{"a":1}}"#)
            )
        );
        // A null dataset is no dataset.
        assert_eq!(
            workload_hash(&json!({"a": 1}), Some(&Json::Null)),
            workload_hash(&json!({"a": 1}), None)
        );
        assert_ne!(
            workload_hash(&json!({"a": 1}), None),
            workload_hash(&json!({"a": 2}), None)
        );
        assert_eq!(
            hash_value(&json!({"y": 1, "x": 2})),
            hash_value(&json!({"x": 2, "y": 1}))
        );
    }
}
