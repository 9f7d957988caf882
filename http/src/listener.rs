//! How the services accept connections.
//!
//! Every accepted connection gets `TCP_NODELAY`. `axum::serve` leaves Nagle's algorithm on,
//! so the last, partial segment of an answer larger than one segment (a verify answer
//! carries a signed checkpoint note: ~26 KB on sha2-128f, ~70 KB on shake-256f, against
//! ~1.4 KB segments on an Ethernet path) is held back until the client has acknowledged the
//! segments before it: one more round trip per answer, and up to the client's delayed-ACK
//! timeout (40 ms on Linux) when that acknowledgement is delayed. Every answer is written
//! whole by one call, so there are no small writes for Nagle to save. On loopback the
//! difference was not measurable (docs/gateway.md, "Latency").

use axum::serve::{Listener, ListenerExt};
use tokio::net::{TcpListener, TcpStream};

/// `listener`, setting `TCP_NODELAY` on every connection it accepts (a connection where that
/// fails is served anyway, and the failure logged at debug level).
pub fn no_delay(
    listener: TcpListener,
) -> impl Listener<Io = TcpStream, Addr = std::net::SocketAddr> {
    listener.tap_io(|tcp: &mut TcpStream| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a connection");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::no_delay;
    use axum::serve::Listener;

    #[tokio::test]
    async fn accepted_connections_have_nodelay_set() {
        let inner = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = inner.local_addr().unwrap();
        let mut listener = no_delay(inner);
        let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
        let (server_side, _) = listener.accept().await;
        assert!(server_side.nodelay().unwrap());
        // And a plain listener's connection does not have it: the tap is what sets it.
        let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = plain.local_addr().unwrap();
        let _c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (s, _) = plain.accept().await.unwrap();
        assert!(!s.nodelay().unwrap());
        drop(client.await.unwrap().unwrap());
    }
}
