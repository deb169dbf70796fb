//! The hostile server over TLS 1.2/1.3, with a certificate authority made fresh per server.
//!
//! Why: HTTPS endpoints fail in ways plain HTTP cannot (an unknown CA, a certificate for
//! another name, a required client certificate), and the misbehaviours of [`Behaviour`] must
//! be recorded the same way when they arrive through TLS records. The CA is generated with
//! `rcgen` at start, so no key material lives in the repository.

use super::{retryable, Behaviour, Runtime, SeenRequest, Server, Wire};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection, StreamOwned};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Numbers the CAs made by this process.
static SERIAL: AtomicUsize = AtomicUsize::new(0);

/// How long a client may take over its handshake.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// The PEM of the test CA that signed the server's (and client's) certificate: write it to a
/// file for `--ca-cert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaPem(pub String);

impl CaPem {
    /// The PEM text (`-----BEGIN CERTIFICATE-----` …).
    pub fn pem(&self) -> &str {
        &self.0
    }

    /// The DER of the CA certificate, for a rustls root store.
    pub fn der(&self) -> CertificateDer<'static> {
        pem_der(&self.0)
    }

    /// Writes `dir/ca.pem` and returns its path.
    pub fn write_to(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, &self.0).expect("write ca.pem");
        path
    }
}

/// A client certificate (signed by the test CA, for TLS client authentication) and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub key_pem: String,
}

impl ClientIdentity {
    /// Certificate then key in one PEM text (for tools that take one file).
    pub fn combined_pem(&self) -> String {
        format!("{}{}", self.cert_pem, self.key_pem)
    }

    /// Writes `dir/client.pem` and `dir/client.key`; returns (certificate, key) paths.
    pub fn write_to(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let cert = dir.join("client.pem");
        let key = dir.join("client.key");
        std::fs::write(&cert, &self.cert_pem).expect("write client.pem");
        std::fs::write(&key, &self.key_pem).expect("write client.key");
        (cert, key)
    }

    /// The certificate chain and key as rustls takes them.
    pub fn der(&self) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).expect("a PEM key");
        (vec![pem_der(&self.cert_pem)], key)
    }
}

/// How to start a [`TlsHostile`].
#[derive(Debug, Clone)]
pub struct TlsOptions {
    /// POST number i gets `script[i % len]`.
    pub script: Vec<Behaviour>,
    /// Require a client certificate signed by the test CA (mutual TLS).
    pub require_client_cert: bool,
    /// Serve a certificate for `wrong.example` only (valid chain, wrong name).
    pub wrong_hostname: bool,
    /// Offer TLS 1.2 only (default: 1.2 and 1.3).
    pub tls12_only: bool,
}

impl TlsOptions {
    /// One behaviour for every POST, server authentication only, TLS 1.2 and 1.3.
    pub fn new(behaviour: Behaviour) -> TlsOptions {
        TlsOptions {
            script: vec![behaviour],
            require_client_cert: false,
            wrong_hostname: false,
            tls12_only: false,
        }
    }
}

/// A running hostile server behind TLS, on `127.0.0.1` (random port). Its certificate names
/// `localhost` and `127.0.0.1` (unless `wrong_hostname`).
pub struct TlsHostile {
    server: Server,
    handshakes: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
}

impl TlsHostile {
    /// Every POST gets `behaviour`; returns the server and its CA.
    pub fn start(behaviour: Behaviour) -> (TlsHostile, CaPem) {
        let (server, ca, _) = Self::start_with(TlsOptions::new(behaviour));
        (server, ca)
    }

    /// POST number i gets `script[i % len]`.
    pub fn start_script(script: Vec<Behaviour>) -> (TlsHostile, CaPem) {
        let (server, ca, _) = Self::start_with(TlsOptions {
            script,
            ..TlsOptions::new(Behaviour::ResetBeforeHeaders)
        });
        (server, ca)
    }

    /// Requires a client certificate signed by the CA; returns one that passes.
    pub fn start_mtls(behaviour: Behaviour) -> (TlsHostile, CaPem, ClientIdentity) {
        Self::start_with(TlsOptions {
            require_client_cert: true,
            ..TlsOptions::new(behaviour)
        })
    }

    /// Serves a certificate for `wrong.example`: a verifying client must refuse it.
    pub fn start_wrong_name(behaviour: Behaviour) -> (TlsHostile, CaPem) {
        let (server, ca, _) = Self::start_with(TlsOptions {
            wrong_hostname: true,
            ..TlsOptions::new(behaviour)
        });
        (server, ca)
    }

    /// Starts with every option; the client identity is signed by the CA whether or not
    /// the server asks for one.
    pub fn start_with(options: TlsOptions) -> (TlsHostile, CaPem, ClientIdentity) {
        let pki = Pki::generate(options.wrong_hostname);
        let config = Arc::new(pki.server_config(&options));
        let handshakes = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicUsize::new(0));
        let (ok, bad) = (handshakes.clone(), failed.clone());
        let upgrade = move |tcp: TcpStream, rt: &Runtime| -> io::Result<Box<dyn Wire>> {
            match handshake(config.clone(), tcp, rt) {
                Ok(stream) => {
                    ok.fetch_add(1, Ordering::SeqCst);
                    Ok(Box::new(stream))
                }
                Err(e) => {
                    bad.fetch_add(1, Ordering::SeqCst);
                    Err(e)
                }
            }
        };
        let server = Server::start(options.script, Arc::new(upgrade));
        let tls = TlsHostile {
            server,
            handshakes,
            failed,
        };
        (tls, CaPem(pki.ca_pem), pki.client)
    }

    /// `https://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        self.url_for_host("127.0.0.1")
    }

    /// `https://HOST:PORT/v1`, e.g. with `localhost` (both names are in the certificate).
    pub fn url_for_host(&self, host: &str) -> String {
        format!("https://{host}:{}/v1", self.server.addr().port())
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Requests of any method whose head was fully read.
    pub fn requests_seen(&self) -> usize {
        self.server.shared.requests.load(Ordering::SeqCst)
    }

    /// `POST`s whose head was fully read (the script index).
    pub fn posts_seen(&self) -> usize {
        self.server.shared.posts.load(Ordering::SeqCst)
    }

    /// Every request read so far, in order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.server.shared.log.lock().unwrap().clone()
    }

    /// Connections still open on the server side.
    pub fn connections_open(&self) -> usize {
        self.server.connections_open()
    }

    /// Handshakes completed.
    pub fn handshakes_done(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }

    /// Handshakes that failed (the client refused the certificate, sent none when one was
    /// required, or left).
    pub fn handshakes_failed(&self) -> usize {
        self.failed.load(Ordering::SeqCst)
    }

    /// Closes the listener and every connection and joins every thread (as does drop).
    pub fn stop(self) {}
}

impl Wire for StreamOwned<ServerConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    fn close_notify(&mut self) {
        self.conn.send_close_notify();
        while self.conn.wants_write() {
            if self.conn.write_tls(&mut self.sock).is_err() {
                break;
            }
        }
    }
}

/// Runs the server side of the handshake to its end (the socket has I/O time-outs).
fn handshake(
    config: Arc<ServerConfig>,
    mut tcp: TcpStream,
    rt: &Runtime,
) -> io::Result<StreamOwned<ServerConnection, TcpStream>> {
    let mut conn = ServerConnection::new(config).map_err(io::Error::other)?;
    let start = Instant::now();
    while conn.is_handshaking() {
        match conn.complete_io(&mut tcp) {
            Ok(_) => {}
            Err(e) if retryable(&e) => {}
            Err(e) => return Err(e),
        }
        if rt.stopping() || start.elapsed() > HANDSHAKE_LIMIT {
            return Err(io::ErrorKind::TimedOut.into());
        }
    }
    Ok(StreamOwned::new(conn, tcp))
}

/// The test PKI: a CA, the server's certificate and a client identity, all fresh.
struct Pki {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: PrivateKeyDer<'static>,
    client: ClientIdentity,
}

impl Pki {
    fn generate(wrong_hostname: bool) -> Pki {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
            IsCa, KeyPair, KeyUsagePurpose,
        };
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        // A name of its own, so that another server's CA is an unknown issuer, not a
        // bad signature.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = SERIAL.fetch_add(1, Ordering::SeqCst);
        let cn = format!("servebench hostile test CA {nanos}-{n}");
        ca.distinguished_name.push(DnType::CommonName, cn);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key"))
            .expect("self-signed CA");

        let names = if wrong_hostname {
            vec!["wrong.example".to_owned()]
        } else {
            vec!["localhost".to_owned(), "127.0.0.1".to_owned()]
        };
        let mut server = CertificateParams::new(names).expect("server params");
        server
            .distinguished_name
            .push(DnType::CommonName, "hostile server");
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate().expect("server key");
        let server_cert = server.signed_by(&server_key, &ca).expect("server cert");

        let mut client =
            CertificateParams::new(vec!["hostile-client".to_owned()]).expect("client params");
        client
            .distinguished_name
            .push(DnType::CommonName, "hostile client");
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate().expect("client key");
        let client_cert = client.signed_by(&client_key, &ca).expect("client cert");

        Pki {
            ca_pem: ca.pem(),
            ca_der: ca.der().clone(),
            server_chain: vec![server_cert.der().clone()],
            server_key: PrivatePkcs8KeyDer::from(server_key.serialize_der()).into(),
            client: ClientIdentity {
                cert_pem: client_cert.pem(),
                key_pem: client_key.serialize_pem(),
            },
        }
    }

    fn server_config(&self, options: &TlsOptions) -> ServerConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: &[&rustls::SupportedProtocolVersion] = if options.tls12_only {
            &[&rustls::version::TLS12]
        } else {
            rustls::DEFAULT_VERSIONS
        };
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .expect("protocol versions");
        let builder = if options.require_client_cert {
            let mut roots = RootCertStore::empty();
            roots.add(self.ca_der.clone()).expect("CA as a root");
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        builder
            .with_single_cert(self.server_chain.clone(), self.server_key.clone_key())
            .expect("server certificate and key")
    }
}

/// The DER of the first certificate in a PEM text.
fn pem_der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("a PEM certificate")
}
