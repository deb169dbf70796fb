//! The network set-ups users' traffic really crosses: TLS with the system's roots or a
//! private CA, client certificates (mTLS), an explicit opt-out of verification, and HTTP
//! proxies from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`).
//!
//! Everything here is resolved once, before the run, into values the connector uses on the
//! hot path; a bad certificate file or proxy URL is a configuration error with a message,
//! never a failure in the middle of a run.

use crate::client::{BaseUrl, Secret};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use thiserror::Error;

/// TLS choices from the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TlsOptions {
    /// PEM file of extra trusted CA certificates (`--ca-cert`), added to the system's roots.
    pub ca_cert: Option<PathBuf>,
    /// PEM certificate chain and key for mutual TLS (`--client-cert`, `--client-key`).
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    /// Accept any server certificate (`--insecure`): for testing only, warned about loudly.
    pub insecure: bool,
}

/// A proxy the target is reached through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Proxy {
    /// The proxy's address (credentials removed; they are in `auth`).
    pub url: BaseUrl,
    /// `true`: a CONNECT tunnel (https targets); `false`: requests in absolute form (http).
    pub tunnel: bool,
    /// `Proxy-Authorization` value from the proxy URL's credentials.
    #[serde(skip)]
    #[schemars(skip)]
    pub auth: Option<Secret>,
    /// The variable it came from, for the report.
    pub from: String,
}

#[derive(Debug, Error)]
pub enum NetworkError {
    #[error("cannot read {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no PEM {what}")]
    Pem { what: &'static str, path: PathBuf },
    #[error("--client-cert and --client-key go together: give both")]
    ClientPair,
    #[error("the client certificate or key was refused: {0}")]
    ClientAuth(String),
    #[error("`{value}` in {var} is not a proxy URL ({detail}); example: http://proxy.corp:3128")]
    ProxyUrl {
        var: String,
        value: String,
        detail: String,
    },
    #[error("TLS set-up failed: {0}")]
    Tls(String),
}

fn read_pem_certs(
    what: &'static str,
    path: &PathBuf,
) -> Result<Vec<CertificateDer<'static>>, NetworkError> {
    let bytes = std::fs::read(path).map_err(|source| NetworkError::Read {
        what,
        path: path.clone(),
        source,
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(NetworkError::Pem {
            what,
            path: path.clone(),
        });
    }
    Ok(certs)
}

/// The TLS client configuration for `opts`.
pub fn client_config(opts: &TlsOptions) -> Result<rustls::ClientConfig, NetworkError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| NetworkError::Tls(e.to_string()))?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnything(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        // The system's trust store, as curl and browsers use; Mozilla's bundle when the
        // system has none (minimal containers).
        let native = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(native.certs);
        if added == 0 {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        if let Some(path) = &opts.ca_cert {
            for c in read_pem_certs("CA certificate (--ca-cert)", path)? {
                roots
                    .add(c)
                    .map_err(|e| NetworkError::Tls(format!("{}: {e}", path.display())))?;
            }
        }
        builder.with_root_certificates(roots)
    };
    match (&opts.client_cert, &opts.client_key) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some(cert), Some(key)) => {
            let chain = read_pem_certs("client certificate (--client-cert)", cert)?;
            let bytes = std::fs::read(key).map_err(|source| NetworkError::Read {
                what: "client key (--client-key)",
                path: key.clone(),
                source,
            })?;
            let key_der = PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| NetworkError::Pem {
                what: "private key (--client-key)",
                path: key.clone(),
            })?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| NetworkError::ClientAuth(e.to_string()))
        }
        _ => Err(NetworkError::ClientPair),
    }
}

/// Accepts every certificate: `--insecure` only. Signatures are still checked, so the
/// handshake is a real one; only the chain of trust and the name are not.
#[derive(Debug)]
struct AcceptAnything(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The proxy for `target` from the environment: `HTTPS_PROXY` for https targets,
/// `HTTP_PROXY` for http ones (upper or lower case), unless `NO_PROXY` names the host.
pub fn proxy_from_env(target: &BaseUrl) -> Result<Option<Proxy>, NetworkError> {
    proxy_from(target, |k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

/// As [`proxy_from_env`], with the variables from `get` (testable).
pub fn proxy_from(
    target: &BaseUrl,
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, NetworkError> {
    let var = |name: &str| {
        get(name)
            .map(|v| (name.to_owned(), v))
            .or_else(|| get(&name.to_ascii_lowercase()).map(|v| (name.to_ascii_lowercase(), v)))
    };
    let no_proxy = var("NO_PROXY").map(|(_, v)| v).unwrap_or_default();
    if bypasses(&no_proxy, target.socket_host()) {
        return Ok(None);
    }
    let Some((from, value)) = var(if target.tls {
        "HTTPS_PROXY"
    } else {
        "HTTP_PROXY"
    })
    .or_else(|| var("ALL_PROXY")) else {
        return Ok(None);
    };
    let with_scheme = if value.contains("://") {
        value.clone()
    } else {
        format!("http://{value}")
    };
    let url = BaseUrl::parse(&with_scheme).map_err(|e| NetworkError::ProxyUrl {
        var: from.clone(),
        value: value.clone(),
        detail: e.to_string(),
    })?;
    let auth = url.basic_auth_header().map(Secret::new);
    Ok(Some(Proxy {
        url: BaseUrl {
            basic_auth: None,
            ..url
        },
        tunnel: target.tls,
        auth,
        from,
    }))
}

/// Whether `NO_PROXY` (comma-separated hosts, `.domain` suffixes, `*`) covers `host`.
fn bypasses(no_proxy: &str, host: &str) -> bool {
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|e| {
            let e = e.split(':').next().unwrap_or(e);
            e == "*"
                || host.eq_ignore_ascii_case(e)
                || host.to_ascii_lowercase().ends_with(&format!(
                    ".{}",
                    e.trim_start_matches('.').to_ascii_lowercase()
                ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn proxies_from_the_environment() {
        let https = BaseUrl::parse("https://api.example.com/v1").unwrap();
        let http = BaseUrl::parse("http://10.0.0.5:8000/v1").unwrap();
        let vars = [
            ("HTTPS_PROXY", "http://user:pw@proxy.corp:3128"),
            ("http_proxy", "proxy.corp:8080"),
            ("NO_PROXY", "localhost,.internal.corp"),
        ];
        let p = proxy_from(&https, env(&vars)).unwrap().unwrap();
        assert!(p.tunnel);
        assert_eq!(p.url.to_string(), "http://proxy.corp:3128");
        // base64("user:pw")
        assert_eq!(p.auth.unwrap().expose(), "Basic dXNlcjpwdw==");
        let p = proxy_from(&http, env(&vars)).unwrap().unwrap();
        assert!(!p.tunnel && p.from == "http_proxy");
        assert_eq!(p.url.port, 8080);
        let internal = BaseUrl::parse("https://llm.internal.corp/v1").unwrap();
        assert!(proxy_from(&internal, env(&vars)).unwrap().is_none());
        let local = BaseUrl::parse("http://localhost:8000/v1").unwrap();
        assert!(proxy_from(&local, env(&vars)).unwrap().is_none());
        assert!(proxy_from(&https, env(&[])).unwrap().is_none());
        assert!(matches!(
            proxy_from(&https, env(&[("HTTPS_PROXY", "http://:bad")])),
            Err(NetworkError::ProxyUrl { .. })
        ));
    }

    #[test]
    fn tls_files_are_checked_before_the_run() {
        let dir = std::env::temp_dir().join(format!("servebench-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let opts = TlsOptions {
            ca_cert: Some(junk.clone()),
            ..Default::default()
        };
        assert!(matches!(
            client_config(&opts),
            Err(NetworkError::Pem { .. })
        ));
        let opts = TlsOptions {
            ca_cert: Some(dir.join("missing.pem")),
            ..Default::default()
        };
        let e = client_config(&opts).unwrap_err().to_string();
        assert!(e.contains("missing.pem"), "{e}");
        let opts = TlsOptions {
            client_cert: Some(junk),
            ..Default::default()
        };
        assert!(matches!(
            client_config(&opts),
            Err(NetworkError::ClientPair)
        ));
        assert!(client_config(&TlsOptions::default()).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
