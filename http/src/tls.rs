//! HTTPS for both services (rustls, its aws-lc-rs provider): a certificate chain and its
//! private key read from PEM files, served to every connection, and read again without a
//! restart on SIGHUP.
//!
//! - The certificate file holds the server's certificate first, then any intermediates
//!   (what certbot calls `fullchain.pem`). The key file holds one PKCS#8, PKCS#1 (RSA) or
//!   SEC1 (EC) private key, and is a secret file ([`dgsp_secrets::file`]): refused when it
//!   is a symbolic link, not a regular file, or readable by other users (`chmod 600`). A
//!   key that does not match the certificate is refused.
//! - [`Tls::reload`] reads both files again and swaps them in for new connections; on any
//!   error the files in force stay in force, and the error is returned (and logged by the
//!   SIGHUP handler of [`Listen::with_tls`]). Connections already open keep the
//!   certificate they were made with.
//! - Each connection's handshake runs in the connection's own task, within the listener's
//!   handshake timeout and handshake slots ([`crate::serve::Limits`]), so a slow or silent
//!   client holds up nobody. A failed handshake (a client that does not trust the
//!   certificate, a port scanner) is logged at debug level and the connection dropped.
//! - TLS 1.2 and 1.3, ALPN `http/1.1`.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::serve::Limits;

/// Where the certificate chain and the private key are (`--tls-cert`, `--tls-key`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM: the server's certificate, then its intermediates
    pub cert: PathBuf,
    /// PEM: its private key (a secret file: mode 0600 or 0400)
    pub key: PathBuf,
}

/// Why the certificate or the key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// the file
        path: PathBuf,
        /// the cause
        #[source]
        source: std::io::Error,
    },
    /// The key file was refused (a link, not a regular file, readable by others) or could
    /// not be read.
    #[error(transparent)]
    Key(#[from] dgsp_secrets::file::SecretFileError),
    /// The file does not hold what it should.
    #[error("{path}: {reason}")]
    Malformed {
        /// the file
        path: PathBuf,
        /// what is wrong
        reason: String,
    },
    /// The key and the certificate do not go together, or rustls refused them.
    #[error("{cert} with {key}: {reason}")]
    Refused {
        /// the certificate file
        cert: PathBuf,
        /// the key file
        key: PathBuf,
        /// rustls' reason
        reason: String,
    },
}

/// The certificate and key in force, swapped whole by [`Tls::reload`].
struct Current(RwLock<Arc<CertifiedKey>>);

impl fmt::Debug for Current {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Current(..)")
    }
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// A service's TLS: its files, the certificate in force and the acceptor that serves it.
pub struct Tls {
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
    current: Arc<Current>,
    acceptor: TlsAcceptor,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").field("files", &self.files).finish()
    }
}

impl Tls {
    /// Reads `files` (the key as a secret file) and checks that they go together.
    pub fn load(files: TlsFiles) -> Result<Arc<Tls>, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let key = certified_key(&files, &provider)?;
        let current = Arc::new(Current(RwLock::new(Arc::new(key))));
        let mut config = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Refused {
                cert: files.cert.clone(),
                key: files.key.clone(),
                reason: e.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(Tls {
            files,
            provider,
            current,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        }))
    }

    /// The files this was loaded from.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }

    /// What accepts a connection's handshake with the certificate in force.
    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// Reads the files again; new connections get the new certificate. On an error the
    /// certificate in force stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let key = certified_key(&self.files, &self.provider)?;
        *self.current.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
        Ok(())
    }

    /// [`reload`](Self::reload), logged: what a SIGHUP does.
    pub fn reload_logged(&self) {
        match self.reload() {
            Ok(()) => tracing::info!(
                cert = %self.files.cert.display(),
                key = %self.files.key.display(),
                "TLS certificate and key reloaded"
            ),
            Err(e) => tracing::error!(
                error = %e,
                "TLS reload failed: the certificate in force is kept"
            ),
        }
    }
}

fn certified_key(files: &TlsFiles, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let cert_pem = std::fs::read(&files.cert).map_err(|source| TlsError::Io {
        path: files.cert.clone(),
        source,
    })?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| malformed(&files.cert, format!("not PEM certificates: {e}")))?;
    if chain.is_empty() {
        return Err(malformed(
            &files.cert,
            "no certificate (expected -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    let key_pem = dgsp_secrets::file::read(&files.key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        malformed(
            &files.key,
            format!("no private key (PKCS#8, PKCS#1 or SEC1 PEM): {e}"),
        )
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| TlsError::Refused {
        cert: files.cert.clone(),
        key: files.key.clone(),
        reason: e.to_string(),
    })
}

fn malformed(path: &Path, reason: String) -> TlsError {
    TlsError::Malformed {
        path: path.to_owned(),
        reason,
    }
}

/// What a service serves on: a TCP listener, plain or with TLS, and what it allows its
/// clients ([`Limits`], the defaults unless [`with_limits`](Listen::with_limits)). A plain
/// [`TcpListener`] converts into one, so that callers without TLS change nothing.
pub struct Listen {
    tcp: TcpListener,
    tls: Option<(Arc<Tls>, Option<tokio::signal::unix::Signal>)>,
    limits: Limits,
}

impl From<TcpListener> for Listen {
    fn from(tcp: TcpListener) -> Self {
        Listen {
            tcp,
            tls: None,
            limits: Limits::default(),
        }
    }
}

impl Listen {
    /// `tcp` serving HTTPS with `tls`, reloaded on every SIGHUP while it serves ([`serve`]).
    /// The signal handler is installed here, before anything is served, so a SIGHUP from
    /// then on never ends the process. Needs a Tokio runtime.
    ///
    /// [`serve`]: Listen::serve
    pub fn with_tls(tcp: TcpListener, tls: Arc<Tls>) -> std::io::Result<Listen> {
        let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        Ok(Listen {
            tcp,
            tls: Some((tls, Some(hangup))),
            limits: Limits::default(),
        })
    }

    /// `tcp` serving HTTPS with `tls`, reloaded only by [`Tls::reload`] (tests).
    pub fn with_tls_no_signal(tcp: TcpListener, tls: Arc<Tls>) -> Listen {
        Listen {
            tcp,
            tls: Some((tls, None)),
            limits: Limits::default(),
        }
    }

    /// `tls` given: [`with_tls`](Self::with_tls); else plain.
    pub fn new(tcp: TcpListener, tls: Option<Arc<Tls>>) -> std::io::Result<Listen> {
        match tls {
            Some(tls) => Listen::with_tls(tcp, tls),
            None => Ok(Listen::from(tcp)),
        }
    }

    /// The same listener within `limits` (`--max-connections`, `--header-read-timeout-ms`,
    /// `--tls-handshake-timeout-ms`).
    pub fn with_limits(mut self, limits: Limits) -> Listen {
        self.limits = limits;
        self
    }

    /// What it allows its clients.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// `https` with TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// Serves `app` until `shutdown` completes, then finishes in-flight requests and
    /// returns once every connection has closed ([`crate::serve`]: accepting never waits,
    /// the connection cap, the handshake and header-read timeouts). Every connection gets
    /// `TCP_NODELAY` ([`crate::listener`]).
    pub async fn serve(
        self,
        app: axum::Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let Listen { tcp, tls, limits } = self;
        let Some((tls, hangup)) = tls else {
            return crate::serve::serve(tcp, None, limits, app, shutdown).await;
        };
        let reloader = hangup.map(|mut hangup| {
            let tls = tls.clone();
            tokio::spawn(async move {
                while hangup.recv().await.is_some() {
                    tracing::info!("SIGHUP: reloading the TLS certificate and key");
                    tls.reload_logged();
                }
            })
        });
        let served = crate::serve::serve(tcp, Some(tls), limits, app, shutdown).await;
        if let Some(r) = reloader {
            r.abort();
        }
        served
    }
}

/// Certificates made for tests (feature `test-certs`, rcgen): a CA, server certificates it
/// signs for `localhost`, `127.0.0.1` and `::1` (valid, or expired), written as the files
/// [`Tls::load`] reads (the key with mode 0600).
#[cfg(feature = "test-certs")]
pub mod test_certs {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::Path;

    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
        SanType,
    };

    use super::TlsFiles;

    /// A certificate authority for tests.
    pub struct TestCa {
        pem: String,
        issuer: Issuer<'static, KeyPair>,
    }

    /// When a certificate is valid.
    #[derive(Clone, Copy, Debug)]
    pub enum Validity {
        /// from 1975 to 4096 (rcgen's default)
        Now,
        /// 2020-01-01 to 2021-01-01: expired
        Expired,
    }

    impl TestCa {
        /// A new CA named `name`, with a new P-256 key.
        pub fn new(name: &str) -> TestCa {
            let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
            params.distinguished_name.push(DnType::CommonName, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            let key = KeyPair::generate().expect("CA key");
            let cert = params.self_signed(&key).expect("CA certificate");
            TestCa {
                pem: cert.pem(),
                issuer: Issuer::new(params, key),
            }
        }

        /// The CA's certificate, PEM.
        pub fn pem(&self) -> &str {
            &self.pem
        }

        /// Writes the CA's certificate to `path` (what a client's `--ca-file` names).
        pub fn write_pem(&self, path: &Path) {
            std::fs::write(path, &self.pem).expect("write the CA certificate");
        }

        /// A server certificate and key for `localhost`, `127.0.0.1` and `::1`, valid as
        /// `validity` says: (certificate PEM, key PEM).
        pub fn server(&self, validity: Validity) -> (String, String) {
            let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
            params
                .subject_alt_names
                .push(SanType::IpAddress([127, 0, 0, 1].into()));
            params
                .subject_alt_names
                .push(SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()));
            params
                .distinguished_name
                .push(DnType::CommonName, "dgsp test server");
            if let Validity::Expired = validity {
                params.not_before = rcgen::date_time_ymd(2020, 1, 1);
                params.not_after = rcgen::date_time_ymd(2021, 1, 1);
            }
            let key = KeyPair::generate().expect("server key");
            let cert = params.signed_by(&key, &self.issuer).expect("sign");
            (cert.pem(), key.serialize_pem())
        }

        /// [`server`](Self::server), written to `dir/NAME.pem` and `dir/NAME.key` (mode
        /// 0600, as a secret file must be; both replaced if present).
        pub fn write_server(&self, dir: &Path, name: &str, validity: Validity) -> TlsFiles {
            let (cert, key) = self.server(validity);
            let files = TlsFiles {
                cert: dir.join(format!("{name}.pem")),
                key: dir.join(format!("{name}.key")),
            };
            write_files(&files, &cert, &key);
            files
        }
    }

    /// Writes `cert` and `key` (mode 0600) over `files` (what a certificate renewal does
    /// before its SIGHUP).
    pub fn write_files(files: &TlsFiles, cert: &str, key: &str) {
        std::fs::write(&files.cert, cert).expect("write the certificate");
        let _ = std::fs::remove_file(&files.key);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&files.key)
            .and_then(|mut f| f.write_all(key.as_bytes()))
            .expect("write the key");
    }
}
