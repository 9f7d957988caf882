//! How the services accept connections.
//!
//! Every accepted connection gets `TCP_NODELAY`. An accepted socket has Nagle's algorithm on,
//! so the last, partial segment of an answer larger than one segment (a verify answer
//! carries a signed checkpoint note: ~26 KB on sha2-128f, ~70 KB on shake-256f, against
//! ~1.4 KB segments on an Ethernet path) is held back until the client has acknowledged the
//! segments before it: one more round trip per answer, and up to the client's delayed-ACK
//! timeout (40 ms on Linux) when that acknowledgement is delayed. Every answer is written
//! whole by one call, so there are no small writes for Nagle to save. On loopback the
//! difference was not measurable (docs/gateway.md, "Latency").

use tokio::net::TcpStream;

/// Sets `TCP_NODELAY` on `tcp`, an accepted connection ([`crate::serve`] does, on every
/// one). A connection where that fails is served anyway, and the failure logged at debug
/// level.
pub fn no_delay(tcp: &TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY on a connection");
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::{TcpListener, TcpStream};

    #[tokio::test]
    async fn no_delay_sets_tcp_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        assert!(!accepted.nodelay().unwrap());
        super::no_delay(&accepted);
        assert!(accepted.nodelay().unwrap());
    }
}
