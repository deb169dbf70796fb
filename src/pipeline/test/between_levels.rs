//! Between two levels: wait for the server to finish the previous level's requests, and
//! empty its prefix cache when a level starts cold.

use crate::client::{BaseUrl, Target};
use crate::config::RunConfig;
use std::time::{Duration, Instant};

/// Waits (up to 60 s) until the server's `/metrics` shows nothing running or waiting, so a
/// level does not start with the previous level's requests still being served. Without
/// readable metrics there is nothing to wait on.
pub(super) async fn drain(config: &RunConfig) {
    let Some(url) = config.telemetry.metrics_url.as_deref() else {
        return;
    };
    let Ok(base) = BaseUrl::parse(url) else {
        return;
    };
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
        .unwrap_or_else(|| "/metrics".into());
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let resp = crate::client::simple::call(
            &base,
            Some(&config.target),
            "GET",
            &path,
            None,
            Duration::from_secs(5),
        )
        .await;
        let Ok(resp) = resp else { return };
        let Ok(text) = std::str::from_utf8(&resp.body) else {
            return;
        };
        let Ok(scrape) = crate::telemetry::prometheus::parse(text) else {
            return;
        };
        let (_, s) = crate::telemetry::engines::read(&scrape);
        match (s.running, s.waiting) {
            (None, None) => return,
            (r, w) if r.unwrap_or(0.0) + w.unwrap_or(0.0) < 0.5 => return,
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Asks the server to drop its prefix cache: vLLM (and the simulator)
/// `POST /reset_prefix_cache`, SGLang `POST /flush_cache`, llama.cpp erases each slot.
/// Returns what happened, for the level's record.
pub(super) async fn flush_prefix_cache(target: &Target, engine: Option<&str>) -> String {
    let url = &target.url;
    let root = match BaseUrl::parse(&url.root()) {
        Ok(r) => r,
        Err(e) => return format!("could not empty the cache: {e}"),
    };
    let call = |method: &'static str, path: String| {
        let root = root.clone();
        async move {
            crate::client::simple::call(
                &root,
                Some(target),
                method,
                &path,
                None,
                Duration::from_secs(10),
            )
            .await
            .map(|r| r.status)
        }
    };
    if engine == Some("llama.cpp") {
        let slots = crate::client::simple::call(
            &root,
            Some(target),
            "GET",
            "/slots",
            None,
            Duration::from_secs(10),
        )
        .await;
        if let Some(resp) = slots.as_ref().ok().filter(|r| r.status == 200) {
            let ids: Vec<u64> = serde_json::from_slice::<serde_json::Value>(&resp.body)
                .ok()
                .and_then(|v| {
                    v.as_array()
                        .map(|a| a.iter().filter_map(|s| s.get("id")?.as_u64()).collect())
                })
                .unwrap_or_default();
            let mut ok = 0;
            for id in &ids {
                if call("POST", format!("/slots/{id}?action=erase")).await.ok() == Some(200) {
                    ok += 1;
                }
            }
            if ok > 0 && ok == ids.len() {
                return format!("cache emptied: llama.cpp erased {ok} slots");
            }
        }
        return "could not empty the cache (llama.cpp /slots erase refused; start the server with --slots): the cold level may start warm".into();
    }
    for path in ["/reset_prefix_cache", "/flush_cache"] {
        if call("POST", path.into()).await.ok() == Some(200) {
            return format!("cache emptied: POST {path}");
        }
    }
    "could not empty the cache (tried POST /reset_prefix_cache and /flush_cache; vLLM needs VLLM_SERVER_DEV_MODE=1): the cold level may start warm".into()
}
