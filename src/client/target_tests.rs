//! Tests of the client's configuration (`base_url`, `target`): base URLs and their
//! credentials, and the redaction of secrets and credential headers.

use super::{BaseUrl, Endpoint, Secret, Target, UrlError};

#[test]
fn base_url_keeps_base_path() {
    let u = BaseUrl::parse("http://127.0.0.1:8000/v1/").unwrap();
    assert_eq!(
        (u.tls, u.host.as_str(), u.port, u.base_path.as_str()),
        (false, "127.0.0.1", 8000, "/v1")
    );
    assert_eq!(u.path("/chat/completions"), "/v1/chat/completions");
    assert_eq!(Endpoint::Llamacpp.request_path(&u, None), "/completion");
    assert_eq!(Endpoint::Messages.request_path(&u, None), "/v1/messages");
    let u = BaseUrl::parse("https://api.example.com/openai/v1").unwrap();
    assert_eq!((u.port, u.base_path.as_str()), (443, "/openai/v1"));
    assert_eq!(
        Endpoint::Tgi.request_path(&u, None),
        "/openai/generate_stream"
    );
    assert_eq!(u.host_header(), "api.example.com");
    assert_eq!(u.to_string(), "https://api.example.com/openai/v1");
    let u = BaseUrl::parse("http://[::1]:9000").unwrap();
    assert_eq!(
        (u.socket_host(), u.port, u.base_path.as_str()),
        ("::1", 9000, "")
    );
    assert!(matches!(
        BaseUrl::parse("127.0.0.1:8000"),
        Err(UrlError::Scheme(_))
    ));
    assert!(matches!(
        BaseUrl::parse("http://h:x/v1"),
        Err(UrlError::Invalid { .. })
    ));
    assert!(matches!(
        BaseUrl::parse("ftp://h/v1"),
        Err(UrlError::Scheme(_))
    ));
}

/// `user:pass@` used to be dropped silently; it is Basic auth, and never printed.
#[test]
fn credentials_in_the_url_become_basic_auth_and_stay_hidden() {
    let u = BaseUrl::parse("https://al%40ice:s3cr%3At@api.example.com/v1").unwrap();
    assert_eq!(u.basic_auth.as_ref().unwrap().expose(), "al@ice:s3cr:t");
    // base64("al@ice:s3cr:t")
    assert_eq!(
        u.basic_auth_header().as_deref(),
        Some("Basic YWxAaWNlOnMzY3I6dA==")
    );
    assert_eq!(u.to_string(), "https://api.example.com/v1");
    assert!(!format!("{u:?}").contains("s3cr"));
    assert!(BaseUrl::parse("http://h/v1").unwrap().basic_auth.is_none());
}

#[test]
fn secrets_and_credential_headers_are_redacted() {
    let t = Target {
        url: BaseUrl::parse("http://u:sk-url@h/v1").unwrap(),
        model: "m".into(),
        endpoint: Endpoint::Chat,
        headers: vec![
            ("X-Api-Key".into(), "sk-123".into()),
            ("X-Team".into(), "a".into()),
        ],
        api_key: Some(Secret::new("sk-abc")),
        builtin_simulator: false,
        tls: Default::default(),
        proxy: None,
        websocket: None,
        grpc_backend: None,
        trace_id_prefix: None,
    };
    let s = serde_json::to_string(&t).unwrap();
    assert!(!s.contains("sk-"), "{s}");
    assert!(s.contains("\"X-Team\":\"a\""));
    assert!(!format!("{t:?}").contains("sk-abc"));
}
