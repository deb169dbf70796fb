//! The verdicts on hand-built answers (pages, statuses, bodies, streams), the speed
//! arithmetic, and how a server's words are quoted.

use super::verdict::quote;
use super::*;
use crate::record::FailureKind;
use crate::record::Outcome;

fn route() -> Route {
    Route {
        request: "POST http://127.0.0.1:8000/chat/completions".into(),
        api: "OpenAI chat completions",
        suggest_url: Some("http://127.0.0.1:8000/v1".into()),
        key_env: "OPENAI_API_KEY".into(),
        key_sent: None,
    }
}

fn status(code: u16, content_type: &str, body: &str) -> Seen {
    Seen {
        status: Some(code),
        content_type: Some(content_type.into()),
        outcome: Outcome::failed(FailureKind::HttpStatus, format!("HTTP {code}: {body}")),
        ..Default::default()
    }
}

fn unusable(j: Judged) -> String {
    match j {
        Judged::Unusable(m) => m,
        other => panic!("expected unusable, got {other:?}"),
    }
}

#[test]
fn a_streamed_answer_is_usable() {
    let seen = Seen {
        status: Some(200),
        content_type: Some("text/event-stream".into()),
        tokens: 8,
        finish_reason: true,
        ..Default::default()
    };
    assert_eq!(judge(&seen, &route()), Judged::Usable);
    // An empty answer that still ended in the API's shape (a model that stopped at once).
    let empty = Seen { tokens: 0, ..seen };
    assert_eq!(judge(&empty, &route()), Judged::Usable);
}

#[test]
fn html_pages_are_named_with_their_title_whatever_the_status() {
    let page = "<!DOCTYPE html><html><head><title>Open WebUI</title></head></html>";
    let ok = Seen {
        status: Some(200),
        content_type: Some("text/html; charset=utf-8".into()),
        body_start: page.into(),
        outcome: Outcome::failed(FailureKind::StreamCut, "stream ended without its end event"),
        ..Default::default()
    };
    let m = unusable(judge(&ok, &route()));
    assert!(m.contains("HTML page (HTTP 200, \"Open WebUI\")"), "{m}");
    assert!(m.contains("try --url http://127.0.0.1:8000/v1"), "{m}");
    let m = unusable(judge(&status(501, "text/html", page), &route()));
    assert!(m.contains("HTML page (HTTP 501"), "{m}");
    // Known by its body even without the type.
    let m = unusable(judge(
        &status(404, "text/plain", "<html><body>x</body></html>"),
        &route(),
    ));
    assert!(m.contains("HTML page"), "{m}");
    // A gateway's error page may pass.
    assert!(matches!(
        judge(&status(502, "text/html", page), &route()),
        Judged::Passing(_)
    ));
}

#[test]
fn refused_credentials_say_which_variable_sets_the_key() {
    let body = r#"{"error":{"message":"Invalid API Key","type":"authentication_error"}}"#;
    let m = unusable(judge(&status(401, "application/json", body), &route()));
    assert!(
        m.contains("HTTP 401") && m.contains("Invalid API Key"),
        "{m}"
    );
    assert!(m.contains("export OPENAI_API_KEY=<key>"), "{m}");
    let sent = Route {
        key_sent: Some("the variable MY_KEY".into()),
        ..route()
    };
    let m = unusable(judge(&status(403, "application/json", body), &sent));
    assert!(
        m.contains("from the variable MY_KEY") && m.contains("not accepted"),
        "{m}"
    );
}

#[test]
fn a_missing_route_suggests_the_url_and_the_endpoints() {
    let m = unusable(judge(
        &status(404, "application/json", r#"{"error":"not found"}"#),
        &route(),
    ));
    assert!(
        m.contains("HTTP 404") && m.contains("try --url http://127.0.0.1:8000/v1"),
        "{m}"
    );
    assert!(m.contains("--endpoint") && m.contains("llamacpp"), "{m}");
    let no_v1_hint = Route {
        suggest_url: None,
        ..route()
    };
    let m = unusable(judge(&status(405, "application/json", "{}"), &no_v1_hint));
    assert!(!m.contains("try --url"), "{m}");
}

#[test]
fn server_errors_may_pass_client_errors_do_not() {
    for code in [500, 503, 429, 408] {
        assert!(
            matches!(
                judge(&status(code, "application/json", "{}"), &route()),
                Judged::Passing(_)
            ),
            "{code}"
        );
    }
    let m = unusable(judge(
        &status(
            400,
            "application/json",
            r#"{"error":"model `x` not found"}"#,
        ),
        &route(),
    ));
    assert!(m.contains("HTTP 400") && m.contains("--model"), "{m}");
    let m = unusable(judge(&status(302, "text/plain", ""), &route()));
    assert!(m.contains("redirects"), "{m}");
}

#[test]
fn a_json_document_or_another_body_is_not_a_stream() {
    let json = Seen {
        status: Some(200),
        content_type: Some("application/json".into()),
        body_start: r#"{"choices":[{"message":{"content":"hello"}}]}"#.into(),
        outcome: Outcome::failed(FailureKind::StreamCut, "stream ended without its end event"),
        ..Default::default()
    };
    let m = unusable(judge(&json, &route()));
    assert!(
        m.contains("one JSON document") && m.contains("stream: true"),
        "{m}"
    );
    assert!(
        m.contains("\"content\":\"hello\""),
        "the server's words: {m}"
    );
    let text = Seen {
        content_type: Some("text/plain".into()),
        body_start: "hello".into(),
        ..json.clone()
    };
    let m = unusable(judge(&text, &route()));
    assert!(
        m.contains("with text/plain") && m.contains("--endpoint"),
        "{m}"
    );
    // The API's own stream cut before its first token may pass.
    let cut = Seen {
        content_type: Some("text/event-stream".into()),
        ..json
    };
    assert!(matches!(judge(&cut, &route()), Judged::Passing(_)));
}

#[test]
fn a_stream_in_another_shape_is_unusable() {
    let seen = Seen {
        status: Some(200),
        content_type: Some("text/event-stream".into()),
        ..Default::default()
    };
    let m = unusable(judge(&seen, &route()));
    assert!(m.contains("API's shape") && m.contains("--endpoint"), "{m}");
}

#[test]
fn speed_says_how_many_requests_the_server_serves_at_once() {
    let all = Speed {
        ttft_ms: 100.0,
        ms_per_token: 10.0,
        served_together: 8.0,
        sent_together: 8,
        closes_connections: false,
    };
    assert_eq!(all.request_ms(101.0), 1100.0);
    // All eight sent together were served at once: every stream is taken at full speed.
    assert_eq!(all.parallel(32.0), 32.0);
    // A server of four slots: eight sent, about three requests' worth done at once.
    let slots = Speed {
        served_together: 3.2,
        ..all
    };
    assert_eq!(slots.parallel(32.0), 3.2);
    assert_eq!(slots.parallel(2.0), 2.0);
    assert!((slots.rate_per_s(32.0, 101.0) - 3.2 / 1.1).abs() < 1e-9);
    // Not measured: nothing is known against running every stream at once.
    let unmeasured = Speed {
        served_together: 1.0,
        sent_together: 1,
        ..all
    };
    assert_eq!(unmeasured.parallel(4.0), 4.0);
}

#[test]
fn a_long_body_is_quoted_short_on_one_line() {
    let long = format!("line one\nline two {}", "x".repeat(500));
    let q = quote(&long);
    assert!(!q.contains('\n'));
    assert_eq!(q.chars().count(), QUOTED + 1);
    assert_eq!(quote("  "), "an empty body");
}
