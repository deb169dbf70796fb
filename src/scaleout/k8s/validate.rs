//! Checks on [`K8sOptions`]: everything the API server would reject, or a shard would
//! trip over minutes into a run, is refused before any manifest is written, with the
//! option's name in the message.

use serde_json::Value;

use super::{
    K8sError, K8sOptions, Storage, JOB_INDEX_ENV, MAX_NAME_LEN, MAX_PLAN_BYTES, MAX_SHARDS,
    UPLOAD_URL_ENV,
};

fn invalid(what: &'static str, value: &str, reason: &str) -> K8sError {
    K8sError::Invalid {
        what,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// Checks every option of `o`.
pub(super) fn validate(o: &K8sOptions) -> Result<(), K8sError> {
    dns_label("--name", &o.name, MAX_NAME_LEN)?;
    if let Some(ns) = &o.namespace {
        dns_label("--namespace", ns, 63)?;
    }
    image_ref("--image", &o.image)?;
    if let Some(img) = &o.wait_image {
        image_ref("wait image", img)?;
    }
    if let Some(cmd) = &o.command {
        if cmd.first().is_none_or(|c| c.trim().is_empty()) {
            return Err(invalid("command", &cmd.join(" "), "must name a program"));
        }
    }
    if o.shards == 0 || o.shards > MAX_SHARDS {
        return Err(K8sError::Shards(o.shards));
    }
    validate_plan(o)?;
    for (what, q) in [
        ("cpu request", &o.cpu_request),
        ("memory request", &o.memory_request),
    ] {
        quantity(what, q)?;
    }
    for (what, q) in [
        ("cpu limit", &o.cpu_limit),
        ("memory limit", &o.memory_limit),
    ] {
        if let Some(q) = q {
            quantity(what, q)?;
        }
    }
    match &o.storage {
        Storage::Pvc {
            claim_name,
            size,
            storage_class,
        } => {
            match claim_name {
                Some(claim) => dns_subdomain("claim name", claim)?,
                None => quantity("volume size", size)?,
            }
            if let Some(class) = storage_class {
                dns_subdomain("storage class", class)?;
            }
        }
        Storage::EmptyDirWithUpload { upload_url } => validate_upload_url(upload_url)?,
    }
    validate_env(o)?;
    validate_run_args(&o.extra_run_args)?;
    for (key, value) in &o.node_selector {
        label_key(key)?;
        label_value(value)?;
    }
    if o.active_deadline_s == Some(0) {
        return Err(invalid("active deadline", "0", "must be at least 1 second"));
    }
    if o.backoff_limit > i32::MAX as u32 {
        return Err(invalid(
            "backoff limit",
            &o.backoff_limit.to_string(),
            "too large",
        ));
    }
    Ok(())
}

fn validate_plan(o: &K8sOptions) -> Result<(), K8sError> {
    if o.plan_json.len() > MAX_PLAN_BYTES {
        return Err(K8sError::PlanTooLarge(o.plan_json.len()));
    }
    let plan: Value =
        serde_json::from_str(&o.plan_json).map_err(|e| K8sError::PlanNotJson(e.to_string()))?;
    // A plan that records its shard count must agree with the Job, or some ordinals would
    // never be sent (or be sent twice).
    if let Some(n) = plan.get("shards").and_then(Value::as_u64) {
        if n != u64::from(o.shards) {
            return Err(K8sError::ShardsMismatch {
                plan: n,
                options: o.shards,
            });
        }
    }
    Ok(())
}

fn validate_env(o: &K8sOptions) -> Result<(), K8sError> {
    let mut seen: Vec<&str> = vec![JOB_INDEX_ENV];
    if matches!(o.storage, Storage::EmptyDirWithUpload { .. }) {
        seen.push(UPLOAD_URL_ENV);
    }
    let names = o
        .env
        .iter()
        .map(|(n, _)| n)
        .chain(o.secret_env.iter().map(|(n, _, _)| n));
    for name in names {
        env_name(name)?;
        if seen.contains(&name.as_str()) {
            return Err(invalid(
                "environment variable",
                name,
                "defined twice or reserved",
            ));
        }
        seen.push(name);
    }
    for (name, _) in &o.env {
        if looks_like_credential_env(name) {
            return Err(K8sError::InlineCredential(format!(
                "environment variable {name}"
            )));
        }
    }
    for (_, secret, key) in &o.secret_env {
        dns_subdomain("secret name", secret)?;
        let key_ok = !key.is_empty()
            && key.len() <= 253
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
        if !key_ok {
            return Err(invalid(
                "secret key",
                key,
                "use letters, digits, '-', '_' or '.'",
            ));
        }
    }
    Ok(())
}

/// Names such as `OPENAI_API_KEY` or `HF_TOKEN`: one `_`-separated word is a credential word.
fn looks_like_credential_env(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
    ];
    name.to_ascii_uppercase()
        .split('_')
        .any(|word| WORDS.contains(&word))
}

fn validate_run_args(args: &[String]) -> Result<(), K8sError> {
    for (i, arg) in args.iter().enumerate() {
        for owned in ["--plan", "--shard", "--out"] {
            if arg == owned || arg.starts_with(&format!("{owned}=")) {
                return Err(invalid("extra run argument", arg, "set by the manifests"));
            }
        }
        // `--header 'Authorization: Bearer ...'` would put a key into the Job's text; a
        // reference such as `$(API_TOKEN)` (expanded by the kubelet) is fine.
        let header = match arg.strip_prefix("--header=") {
            Some(h) => Some(h),
            None if i > 0 && args[i - 1] == "--header" => Some(arg.as_str()),
            None => None,
        };
        if let Some(h) = header {
            let name = h.split(':').next().unwrap_or("").to_ascii_lowercase();
            let sensitive = ["authorization", "key", "token", "secret", "cookie"]
                .iter()
                .any(|w| name.contains(w));
            if sensitive && !h.contains("$(") {
                return Err(K8sError::InlineCredential(format!("header {name}")));
            }
        }
        if url_has_userinfo(arg) && !arg.contains("$(") {
            return Err(K8sError::InlineCredential(
                "a URL with user:password@".into(),
            ));
        }
    }
    Ok(())
}

fn url_has_userinfo(s: &str) -> bool {
    let Some((_, rest)) = s.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.contains('@')
}

fn validate_upload_url(url: &str) -> Result<(), K8sError> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            "upload URL",
            url,
            "must be an http:// or https:// URL",
        ));
    }
    if url.contains(['?', '#']) {
        return Err(invalid(
            "upload URL",
            url,
            "must be a prefix (no query or fragment)",
        ));
    }
    if url_has_userinfo(url) {
        return Err(K8sError::InlineCredential("the upload URL".into()));
    }
    Ok(())
}

/// RFC 1123 label: lowercase letters, digits and '-', starting and ending alphanumeric.
fn dns_label(what: &'static str, s: &str, max: usize) -> Result<(), K8sError> {
    let reason = if s.is_empty() || s.len() > max {
        Some(format!("must be 1 to {max} characters"))
    } else if !s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        Some("use lowercase letters, digits and '-' only".to_string())
    } else if s.starts_with('-') || s.ends_with('-') {
        Some("must start and end with a letter or digit".to_string())
    } else {
        None
    };
    match reason {
        Some(r) => Err(invalid(what, s, &r)),
        None => Ok(()),
    }
}

/// RFC 1123 subdomain: dot-separated labels, 253 characters in all.
fn dns_subdomain(what: &'static str, s: &str) -> Result<(), K8sError> {
    if s.is_empty() || s.len() > 253 {
        return Err(invalid(what, s, "must be 1 to 253 characters"));
    }
    s.split('.')
        .try_for_each(|part| dns_label(what, part, 63))
        .map_err(|_| {
            invalid(
                what,
                s,
                "use lowercase letters, digits, '-' and '.' between labels",
            )
        })
}

fn image_ref(what: &'static str, s: &str) -> Result<(), K8sError> {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(what, s, "must be a non-empty image reference"));
    }
    Ok(())
}

/// Portable variable names: a shell can read them and `$(NAME)` can reference them.
fn env_name(s: &str) -> Result<(), K8sError> {
    let mut bytes = s.bytes();
    let ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "environment variable",
            s,
            "use letters, digits and '_'",
        ))
    }
}

/// A label value: up to 63 of `[A-Za-z0-9-_.]`, alphanumeric at both ends, or empty.
fn label_value(s: &str) -> Result<(), K8sError> {
    let chars_ok = s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    let ends_ok = s.is_empty()
        || (s.as_bytes()[0].is_ascii_alphanumeric()
            && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric());
    if s.len() <= 63 && chars_ok && ends_ok {
        Ok(())
    } else {
        Err(invalid("node selector value", s, "not a valid label value"))
    }
}

/// A label key: an optional DNS subdomain prefix and '/', then a non-empty name.
fn label_key(s: &str) -> Result<(), K8sError> {
    let (prefix, name) = match s.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        dns_subdomain("node selector key prefix", p)?;
    }
    if name.is_empty() || label_value(name).is_err() {
        return Err(invalid("node selector key", s, "not a valid label key"));
    }
    Ok(())
}

/// A resource quantity: a non-negative decimal number, then a binary suffix (Ki..Ei), a
/// decimal suffix (m, k, M..E) or an exponent (e3, E-2).
pub(super) fn quantity(what: &'static str, s: &str) -> Result<(), K8sError> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let number_ok = number.bytes().any(|b| b.is_ascii_digit()) && number.matches('.').count() <= 1;
    let suffix_ok = matches!(
        suffix,
        "" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
    ) || suffix
        .strip_prefix(['e', 'E'])
        .map(|exp| exp.strip_prefix(['+', '-']).unwrap_or(exp))
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
    if number_ok && suffix_ok {
        Ok(())
    } else {
        Err(invalid(
            what,
            s,
            "not a Kubernetes quantity (e.g. 500m, 2, 1Gi)",
        ))
    }
}
