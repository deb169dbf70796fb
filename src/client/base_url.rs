//! Where the server under test is: its base URL, parsed once, and the secrets (API key,
//! credentials in the URL) that are never printed or written.

use serde::{Serialize, Serializer};
use std::fmt;
use thiserror::Error;

/// A value that must never be printed or written.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

impl schemars::JsonSchema for Secret {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Secret".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A credential: always written as \"<redacted>\".",
            "const": "<redacted>"
        })
    }
}

/// A secret read back from a run folder is the placeholder it was written as: run folders
/// never hold credentials, so a reloaded configuration cannot send any.
impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let _ = String::deserialize(d)?;
        Ok(Secret("<redacted>".into()))
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// A parsed base URL such as `http://127.0.0.1:8000/v1` (the base path is kept).
///
/// Parsed with the `url` crate (WHATWG rules: IPv6 literals, percent-encoding, default
/// ports). Credentials in the URL (`https://user:pass@host/v1`) become HTTP Basic auth; they
/// never appear when the URL is printed or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    pub tls: bool,
    /// Host as written in a URL (`[::1]` for IPv6 literals).
    pub host: String,
    pub port: u16,
    /// Path prefix without a trailing slash (`/v1`, `/openai/v1`, or empty).
    pub base_path: String,
    /// `user:password` from the URL, sent as Basic auth.
    pub basic_auth: Option<Secret>,
}

#[derive(Debug, Error, PartialEq)]
pub enum UrlError {
    #[error("`{0}` is not an http:// or https:// URL (example: http://127.0.0.1:8000/v1)")]
    Scheme(String),
    #[error("`{0}` has no host (example: http://127.0.0.1:8000/v1)")]
    Host(String),
    #[error("`{url}` is not a valid URL: {detail} (example: http://127.0.0.1:8000/v1)")]
    Invalid { url: String, detail: String },
}

impl BaseUrl {
    pub fn parse(s: &str) -> Result<Self, UrlError> {
        let u = url::Url::parse(s.trim()).map_err(|e| match e {
            url::ParseError::RelativeUrlWithoutBase => UrlError::Scheme(s.into()),
            url::ParseError::EmptyHost => UrlError::Host(s.into()),
            other => UrlError::Invalid {
                url: s.into(),
                detail: other.to_string(),
            },
        })?;
        let tls = match u.scheme() {
            // ws:// and wss:// name the same servers (a WebSocket starts as HTTP/1.1).
            "http" | "ws" => false,
            "https" | "wss" => true,
            _ => return Err(UrlError::Scheme(s.into())),
        };
        let host = match u.host() {
            Some(url::Host::Ipv6(a)) => format!("[{a}]"),
            Some(h) => h.to_string(),
            None => return Err(UrlError::Host(s.into())),
        };
        let port = u
            .port_or_known_default()
            .ok_or_else(|| UrlError::Host(s.into()))?;
        let basic_auth = (!u.username().is_empty()).then(|| {
            let decode = |v: &str| {
                url::form_urlencoded::parse(format!("x={v}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            Secret::new(format!(
                "{}:{}",
                decode(u.username()),
                decode(u.password().unwrap_or(""))
            ))
        });
        Ok(BaseUrl {
            tls,
            host,
            port,
            base_path: u.path().trim_end_matches('/').to_owned(),
            basic_auth,
        })
    }

    /// `host:port` for connecting (brackets removed from IPv6 literals).
    pub fn socket_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    /// The `Host` header value.
    pub fn host_header(&self) -> String {
        let default_port = if self.tls { 443 } else { 80 };
        if self.port == default_port {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The request path for an API path such as `/chat/completions`.
    pub fn path(&self, api_path: &str) -> String {
        format!("{}{}", self.base_path, api_path)
    }

    /// The base path without a trailing `/v1`: where an engine's native routes live.
    pub fn native_base_path(&self) -> &str {
        self.base_path
            .strip_suffix("/v1")
            .unwrap_or(&self.base_path)
    }

    /// The server root (base path removed), for `/health`, `/metrics`, `/tokenize`.
    pub fn root(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.host_header()
        )
    }

    /// The `Authorization` header value for credentials given in the URL.
    pub fn basic_auth_header(&self) -> Option<String> {
        use base64::Engine;
        let creds = self.basic_auth.as_ref()?;
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(creds.expose())
        ))
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.root(), self.base_path)
    }
}

impl schemars::JsonSchema for BaseUrl {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BaseUrl".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Base URL of the server, credentials removed.",
            "type": "string",
            "pattern": "^https?://"
        })
    }
}

impl<'de> serde::Deserialize<'de> for BaseUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        BaseUrl::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Serialize for BaseUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}
