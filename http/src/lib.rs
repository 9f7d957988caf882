//! The HTTP plumbing the registry and the gateway share (axum): problem+json answers and
//! the extractors that produce them ([`problem`]), the router's fallbacks, body limit and
//! timeout ([`router`]), the one accept loop of both services, where a silent client holds
//! up nobody (a connection cap, handshake and header-read timeouts: [`serve`]), with
//! `TCP_NODELAY` ([`listener`]), HTTPS from certificate and key files, reloaded on SIGHUP
//! ([`tls`]), Prometheus request metrics ([`metrics`]), the OpenAPI parts both documents
//! have ([`openapi`]), logging and shutdown ([`process`]), and the injectable wall clock
//! signed times are read against ([`clock`]).
//!
//! What crosses the wire (bodies, answers, the problem body a client parses) is
//! `dgsp-wire`'s; this crate is only how the services serve it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod clock;
pub mod listener;
pub mod metrics;
pub mod openapi;
pub mod problem;
pub mod process;
pub mod router;
pub mod serve;
pub mod tls;
