//! The HTML report in a real browser: a run against the built-in simulator writes
//! `report.html`; headless Chromium opens it from a `file://` URL and the test checks, from
//! inside the browser, that every chart is there with its data points (with JavaScript on
//! and off), that nothing was requested from the network, that the console stayed free of
//! errors, and saves a full-page screenshot under `target/artifacts/` for a person to look
//! at.
//!
//! Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
//! NUL-separated JSON on the browser's file descriptors 3 and 4, which a shell wrapper
//! points at the child's stdin and stdout), so no port, WebSocket or extra crate is needed.
//!
//! `#[ignore]`d in a plain `cargo test`; `.ci/run` installs Chromium with
//! `scripts/install-browser.sh` and runs it with `--include-ignored`. Run without Chromium,
//! it fails and says how to install it.

use crate::common::{servebench, temp_dir};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// The browser: `SERVEBENCH_CHROMIUM`, else Debian's `/usr/bin/chromium`.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("SERVEBENCH_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

fn require_chromium() -> PathBuf {
    chromium().unwrap_or_else(|| {
        panic!(
            "Chromium is not installed: run scripts/install-browser.sh (Debian's chromium \
             package, /usr/bin/chromium), or point SERVEBENCH_CHROMIUM at a Chromium binary"
        )
    })
}

/// CI sets `SERVEBENCH_REQUIRE_BROWSER`: then a missing browser fails even a run that
/// forgot `--include-ignored`.
#[test]
fn the_browser_is_installed_when_ci_requires_it() {
    if std::env::var_os("SERVEBENCH_REQUIRE_BROWSER").is_some() {
        require_chromium();
    }
}

/// Where CI keeps files for people to look at.
fn artifacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A headless Chromium on the other end of a DevTools pipe.
struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    /// Events received while waiting for replies, in order.
    events: Vec<Value>,
    session: Option<String>,
}

/// Longest wait for any one answer from the browser.
const PATIENCE: Duration = Duration::from_secs(60);

impl Browser {
    fn launch(binary: &Path, profile: &Path) -> Self {
        let mut child = Command::new("sh")
            .arg("-c")
            // fd 3: what the browser reads (our commands); fd 4: what it writes.
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 </dev/null >&2"#)
            .arg(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting Chromium");
        let input = child.stdin.take().unwrap();
        let mut output = child.stdout.take().unwrap();
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 64 * 1024];
            loop {
                let n = match output.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|&b| b == 0) {
                    let msg: Value = serde_json::from_slice(&buf[..end]).expect("DevTools JSON");
                    buf.drain(..=end);
                    if tx.send(msg).is_err() {
                        return;
                    }
                }
            }
        });
        Browser {
            child,
            input,
            messages,
            next_id: 1,
            events: Vec::new(),
            session: None,
        }
    }

    /// Sends a command (to the attached page when there is one) and waits for its reply.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.input.write_all(&bytes).expect("writing to Chromium");
        self.input.flush().unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("Chromium did not answer {method} in time"));
            if m.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(e) = m.get("error") {
                    panic!("{method} failed: {e}");
                }
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    /// Waits until an event named `method` has arrived (it may have already).
    fn wait_for(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("Chromium never sent {method}"));
            let done = m["method"] == method;
            self.events.push(m);
            if done {
                return;
            }
        }
    }

    /// Opens a tab and attaches to it; every later command goes to the page.
    fn open_page(&mut self) {
        let target = self.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = self.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        self.session = Some(attached["sessionId"].as_str().unwrap().to_string());
        for domain in [
            "Page.enable",
            "Network.enable",
            "Runtime.enable",
            "Log.enable",
        ] {
            self.call(domain, json!({}));
        }
        // A wide desktop window, as a reader would have.
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// Loads `url` and waits for its load event.
    fn navigate(&mut self, url: &str) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        let r = self.call("Page.navigate", json!({"url": url}));
        assert!(r.get("errorText").is_none(), "navigation failed: {r}");
        self.wait_for("Page.loadEventFired");
    }

    /// Evaluates `expr` in the page and returns its value (JSON-serialisable results).
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    /// Chart id → (declared `data-points`, elements carrying data) from the DOM, through
    /// DevTools' DOM domain: it works with page scripts disabled too.
    fn charts_in_dom(&mut self) -> BTreeMap<String, (usize, usize)> {
        let root = self.call("DOM.getDocument", json!({"depth": 0}));
        let root_id = root["root"]["nodeId"].clone();
        let svgs = self.call(
            "DOM.querySelectorAll",
            json!({"nodeId": root_id, "selector": "svg[data-chart]"}),
        );
        let mut out = BTreeMap::new();
        for id in svgs["nodeIds"].as_array().unwrap().clone() {
            let attrs = self.call("DOM.getAttributes", json!({"nodeId": id}));
            let attrs: Vec<String> = attrs["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            let get = |name: &str| {
                attrs
                    .chunks(2)
                    .find(|kv| kv[0] == name)
                    .map(|kv| kv[1].clone())
                    .unwrap_or_default()
            };
            let points = self.call(
                "DOM.querySelectorAll",
                json!({"nodeId": id, "selector": ".pt[data-x], .bar[data-x], .tok[data-x]"}),
            );
            out.insert(
                get("data-chart"),
                (
                    get("data-points").parse().unwrap_or(0),
                    points["nodeIds"].as_array().unwrap().len(),
                ),
            );
        }
        out
    }

    /// Every network request the page made, as URLs.
    fn requests(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .map(|e| {
                e["params"]["request"]["url"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    /// Console errors, exceptions and error-level log entries (CSP violations among them).
    fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| {
                let p = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.consoleAPICalled"
                        if matches!(p["type"].as_str(), Some("error" | "assert")) =>
                    {
                        Some(format!("console.{}: {}", p["type"], p["args"]))
                    }
                    "Runtime.exceptionThrown" => {
                        Some(format!("exception: {}", p["exceptionDetails"]))
                    }
                    "Log.entryAdded" if p["entry"]["level"] == "error" => {
                        Some(format!("log: {}", p["entry"]["text"]))
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// A PNG of the page's region `(x, y, width, height)` in CSS pixels.
    fn screenshot(&mut self, clip: (f64, f64, f64, f64)) -> Vec<u8> {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": {"x": clip.0, "y": clip.1, "width": clip.2, "height": clip.3, "scale": 1}
            }),
        );
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap()
    }

    /// The whole page's size in CSS pixels.
    fn page_size(&mut self) -> (f64, f64) {
        let m = self.call("Page.getLayoutMetrics", json!({}));
        let size = &m["cssContentSize"];
        (
            size["width"].as_f64().unwrap(),
            size["height"].as_f64().unwrap(),
        )
    }

    fn close(mut self) {
        self.session = None;
        let _ = self.call("Browser.close", json!({}));
        let _ = self.child.wait();
    }
}

/// What the file itself must hold: a CSP that forbids loads, and nothing that loads.
fn static_checks(html: &str) {
    assert!(
        html.contains(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src &#39;none&#39;;"
        ),
        "no CSP meta forbidding loads"
    );
    // No attribute or style may name a resource: no src, no link element, no CSS @import,
    // no http(s) URL in any attribute value.
    for bad in [
        " src=", "<link", "<iframe", "<object", "<embed", "@import", "srcset=",
    ] {
        assert!(!html.contains(bad), "report.html contains {bad:?}");
    }
    // `url(` only for references inside the page (an SVG clip path: `url(#id)`).
    for (at, _) in html.match_indices("url(") {
        assert!(
            html[at + 4..].starts_with('#'),
            "report.html loads {}",
            &html[at..(at + 60).min(html.len())]
        );
    }
    for attr in html.split('"').skip(1).step_by(2) {
        assert!(!attr.contains("://"), "an attribute names a URL: {attr}");
    }
}

#[test]
#[ignore = "needs Chromium: scripts/install-browser.sh"]
fn the_html_report_renders_offline_in_chromium() {
    let binary = require_chromium();
    // A real run against the built-in simulator: request classes (fairness), the
    // simulator's /metrics (telemetry series), the isolated prefill profile (fluidity).
    let dir = temp_dir("browser");
    let out = servebench(&[
        "run",
        "--workload",
        "fairness-mix",
        "--rate",
        "12",
        "--requests",
        "150",
        "--warmup",
        "none",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("reports were not written"), "{stderr}");
    let path = dir.join("report.html");
    let html = std::fs::read_to_string(&path).expect("the run wrote report.html");
    assert!(dir.join("report.md").exists());
    static_checks(&html);

    // Which charts the run has data for: the page must show every one of them.
    let expected = [
        "ttft-cdf",
        "ttft-hist",
        "itl-hist",
        "token-timeline",
        "throughput-over-time",
        "latency-over-time",
        "concurrency-over-time",
        "kv-cache-over-time",
        "fluidity-vs-tbt",
        "fairness-ttft",
        "fairness-tpot",
    ];

    check_in_browser(
        &binary,
        &path,
        &expected,
        ("#ttft-cdf .pt", "TTFT"),
        "report",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Opens the page at `path` in Chromium and checks it: every chart in `expected` (and no
/// other without data) is in the DOM with the data points it declares, laid out at a real
/// size, hovering `hover.0` shows a read-out containing `hover.1`, the charts are the same
/// without JavaScript, nothing was requested and the console stayed clean. Saves
/// `target/artifacts/{name}-html.png` (the whole page), `{name}.html` and each chart under
/// `{name}-figures/`.
fn check_in_browser(
    binary: &Path,
    path: &Path,
    expected: &[&str],
    hover: (&str, &str),
    name: &str,
) {
    let profile = temp_dir("browser-profile");
    let mut b = Browser::launch(binary, &profile);
    b.open_page();
    let url = format!("file://{}", path.canonicalize().unwrap().display());
    b.navigate(&url);

    // 1. Every chart is in the DOM with the data points it declares.
    let charts = b.charts_in_dom();
    for id in expected {
        let (declared, found) = charts
            .get(*id)
            .unwrap_or_else(|| panic!("chart {id} missing; charts: {charts:?}"));
        assert!(*declared > 0, "chart {id} has no data points");
        assert_eq!(
            declared, found,
            "chart {id}: data-points disagrees with the DOM"
        );
    }
    for (id, (declared, _)) in &charts {
        assert!(*declared > 0, "chart {id} is on the page without data");
    }
    // The browser laid the charts out: each has a real size on screen.
    let sizes = b.eval(
        "Array.from(document.querySelectorAll('svg[data-chart]')).map(s => \
         [s.id, Math.round(s.getBoundingClientRect().width), Math.round(s.getBoundingClientRect().height)])",
    );
    for s in sizes.as_array().unwrap() {
        assert!(
            s[1].as_i64().unwrap() > 300 && s[2].as_i64().unwrap() > 150,
            "{s}"
        );
    }
    // The hover read-out works: hovering a point shows its values.
    let tip = b.eval(&format!(
        "(() => {{ const p = document.querySelector('{}'); \
         p.dispatchEvent(new MouseEvent('mouseover', {{bubbles: true}})); \
         const t = document.querySelector('.sb-tip'); return t.hidden ? '' : t.textContent; }})()",
        hover.0
    ));
    assert!(
        tip.as_str().unwrap().contains(hover.1),
        "hover read-out: {tip}"
    );

    // 2. Screenshots, for people (CI keeps target/artifacts/): the whole page, and each
    //    chart on its own at full size.
    let (w, h) = b.page_size();
    let png = b.screenshot((0.0, 0.0, w, h));
    assert!(png.starts_with(b"\x89PNG"));
    let shot = artifacts().join(format!("{name}-html.png"));
    std::fs::write(&shot, &png).unwrap();
    std::fs::copy(path, artifacts().join(format!("{name}.html"))).unwrap();
    let figures = artifacts().join(format!("{name}-figures"));
    let _ = std::fs::remove_dir_all(&figures);
    std::fs::create_dir_all(&figures).unwrap();
    let boxes = b.eval(
        "Array.from(document.querySelectorAll('figure')).map(f => { const r = \
         f.getBoundingClientRect(); return [f.id, r.x + scrollX, r.y + scrollY, r.width, r.height]; })",
    );
    for fig in boxes.as_array().unwrap() {
        let n = |i: usize| fig[i].as_f64().unwrap();
        let png = b.screenshot((n(1) - 8.0, n(2) - 8.0, n(3) + 16.0, n(4) + 16.0));
        std::fs::write(
            figures.join(format!("{}.png", fig[0].as_str().unwrap())),
            png,
        )
        .unwrap();
    }
    println!(
        "screenshot of {name}.html: {} (each chart: {})",
        shot.display(),
        figures.display()
    );

    // 3. Without JavaScript the page still has every chart.
    b.call(
        "Emulation.setScriptExecutionDisabled",
        json!({"value": true}),
    );
    b.navigate(&url);
    let no_js = b.charts_in_dom();
    assert_eq!(no_js, charts, "charts differ without JavaScript");

    // 4. Nothing but the page itself was requested, and the console stayed clean.
    let requests = b.requests();
    assert!(
        requests.iter().all(|u| u == &url),
        "the page made requests: {requests:?}"
    );
    assert_eq!(requests.len(), 2, "{requests:?}");
    let errors = b.errors();
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    b.close();
    let _ = std::fs::remove_dir_all(&profile);
}

/// One short simulator run for the comparison page: few requests, no extras.
fn sim_run(config: &Path, seed: u64, out: &Path) {
    let o = servebench(&[
        "run",
        "--sim-config",
        config.to_str().unwrap(),
        "--seed",
        &seed.to_string(),
        "--concurrency",
        "4",
        "--requests",
        "16",
        "--warmup",
        "none",
        "--no-fluidity",
        "--input-tokens",
        "64",
        "--output-tokens",
        "16",
        "--no-server-metrics",
        "--no-gpu-metrics",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "run {} seed {seed}: {}",
        config.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
#[ignore = "needs Chromium: scripts/install-browser.sh"]
fn the_comparison_page_renders_offline_in_chromium() {
    let binary = require_chromium();
    // Two simulator presets, three seeds each (enough for intervals and verdicts),
    // interleaved; each system is a folder of its run folders.
    let dir = temp_dir("browser-compare");
    let (fast, slow) = (dir.join("fast.toml"), dir.join("slow.toml"));
    std::fs::write(&fast, "preset = \"h100-llama3-8b\"\ntime_scale = 4.0\n").unwrap();
    std::fs::write(
        &slow,
        "preset = \"a100-llama3-70b-tp4\"\ntime_scale = 4.0\n",
    )
    .unwrap();
    for seed in 1..=3 {
        sim_run(
            &fast,
            seed,
            &dir.join("h100-8b").join(format!("seed-{seed}")),
        );
        sim_run(
            &slow,
            seed,
            &dir.join("a100-70b").join(format!("seed-{seed}")),
        );
    }
    let (md, path) = (dir.join("compare.md"), dir.join("compare.html"));
    let out = servebench(&[
        "compare",
        dir.join("h100-8b").to_str().unwrap(),
        dir.join("a100-70b").to_str().unwrap(),
        "--md",
        md.to_str().unwrap(),
        "--html",
        path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The terminal tables still print; the files are written besides.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Key metrics: mean over runs"), "{stdout}");
    let markdown = std::fs::read_to_string(&md).expect("compare wrote the Markdown page");
    assert!(
        markdown.contains("## Fair-comparison checklist"),
        "{markdown}"
    );
    assert!(
        markdown.contains("in compare.html, 8 data points"),
        "{markdown}"
    );
    let html = std::fs::read_to_string(&path).expect("compare wrote the HTML page");
    static_checks(&html);

    // A chart per key metric the runs have (no SLO: no goodput), three runs and a mean
    // per system each.
    let expected = [
        "compare-output-tokens-per-s",
        "compare-requests-per-s",
        "compare-ttft-p50-ms",
        "compare-ttft-p99-ms",
        "compare-tpot-p50-ms",
        "compare-tpot-p99-ms",
        "compare-e2e-p99-ms",
        "compare-success-rate",
    ];
    check_in_browser(
        &binary,
        &path,
        &expected,
        ("#compare-ttft-p50-ms .pt", "run 1 (seed 1)"),
        "compare",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs Chromium: scripts/install-browser.sh"]
fn the_curve_tests_report_renders_offline_in_chromium() {
    let binary = require_chromium();
    // A short throughput–latency sweep (draft 5.3) on the simulator's small CPU engine,
    // ten times faster than real time: an estimate level and four sweep levels.
    let dir = temp_dir("browser-curve");
    let sim = dir.join("sim.toml");
    std::fs::write(&sim, "preset = \"cpu-tiny\"\ntime_scale = 10.0\n").unwrap();
    let test_dir = dir.join("curve");
    let out = servebench(&[
        "test",
        "curve",
        "--quick",
        "--levels",
        "4",
        "--level-duration",
        "2s",
        "--sim-config",
        sim.to_str().unwrap(),
        "--input-tokens",
        "64",
        "--output-tokens",
        "32",
        "--quiet",
        "--out",
        test_dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("reports were not written"), "{stderr}");
    let path = test_dir.join("report.html");
    let html = std::fs::read_to_string(&path).expect("the test wrote report.html");
    static_checks(&html);
    let md = std::fs::read_to_string(test_dir.join("report.md")).unwrap();
    assert!(md.contains("Table 5: Throughput-latency"), "{md}");
    assert!(md.contains("Compliance with draft 5.3"), "{md}");

    let profile = temp_dir("browser-curve-profile");
    let mut b = Browser::launch(&binary, &profile);
    b.open_page();
    let url = format!("file://{}", path.canonicalize().unwrap().display());
    b.navigate(&url);
    let charts = b.charts_in_dom();
    for id in ["load-curve-ttft", "load-curve-throughput"] {
        let (declared, found) = charts
            .get(id)
            .unwrap_or_else(|| panic!("chart {id} missing; charts: {charts:?}"));
        // Four sweep levels: at least four points per chart.
        assert!(*declared >= 4, "chart {id}: {declared} data points");
        assert_eq!(
            declared, found,
            "chart {id}: data-points disagrees with the DOM"
        );
    }
    // The knee (or the peak, where throughput never fell) is marked on the curve.
    let marks = b.eval(
        "Array.from(document.querySelectorAll('#load-curve-ttft g.mk')).map(m => m.getAttribute('class'))",
    );
    assert!(
        !marks.as_array().unwrap().is_empty(),
        "no knee, saturation or peak marked: {marks}"
    );
    let (w, h) = b.page_size();
    let png = b.screenshot((0.0, 0.0, w, h));
    assert!(png.starts_with(b"\x89PNG"));
    std::fs::write(artifacts().join("curve-test-html.png"), &png).unwrap();
    b.call(
        "Emulation.setScriptExecutionDisabled",
        json!({"value": true}),
    );
    b.navigate(&url);
    assert_eq!(
        b.charts_in_dom(),
        charts,
        "charts differ without JavaScript"
    );
    let requests = b.requests();
    assert!(
        requests.iter().all(|u| u == &url),
        "the page made requests: {requests:?}"
    );
    let errors = b.errors();
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    b.close();
    let _ = std::fs::remove_dir_all(&profile);
    let _ = std::fs::remove_dir_all(&dir);
}
