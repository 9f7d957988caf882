//! The load generator's HTTP/1.1 client: as little work per request as a client can do, so
//! that on a machine the generator shares with the gateway, the CPU it takes is the
//! gateway's to lose as little as possible (a general-purpose client such as reqwest spent
//! ~60 µs of CPU per verify request here, as much as the gateway's whole HTTP side).
//!
//! Each request is built once, head and body in one buffer, and sent with one write on a
//! keep-alive connection with `TCP_NODELAY`; the answer is read by its `Content-Length`
//! (the gateway always sends one) into a buffer the connection reuses.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One pre-built request: `POST path` with its headers and body.
pub fn request(path: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// A keep-alive connection to the server.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// The status and body of one answer (the body borrowed from the connection's buffer).
pub struct Answer<'a> {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: &'a [u8],
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

impl Conn {
    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::with_capacity(128 << 10),
        })
    }

    /// Sends `request` and reads the answer.
    pub async fn send(&mut self, request: &[u8]) -> io::Result<Answer<'_>> {
        self.stream.write_all(request).await?;
        self.buf.clear();
        // The head, up to the blank line.
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            if self.read_more().await? == 0 {
                return Err(bad("connection closed before the answer's head"));
            }
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).map_err(|_| bad("head"))?;
        let status: u16 = head
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("status line"))?;
        let length: usize = head
            .split("\r\n")
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .ok_or_else(|| bad("no content-length"))?;
        let end = head_end + length;
        while self.buf.len() < end {
            if self.read_more().await? == 0 {
                return Err(bad("connection closed in the answer's body"));
            }
        }
        if self.buf.len() > end {
            return Err(bad("more bytes than the answer"));
        }
        Ok(Answer {
            status,
            body: &self.buf[head_end..end],
        })
    }

    async fn read_more(&mut self) -> io::Result<usize> {
        if self.buf.capacity() - self.buf.len() < 16 << 10 {
            self.buf.reserve(64 << 10);
        }
        self.stream.read_buf(&mut self.buf).await
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Idle connections to one server, shared by the open loop's requests (each takes one, or
/// opens one when none is idle, and gives it back when answered).
#[derive(Clone)]
pub struct Pool {
    addr: SocketAddr,
    idle: Arc<Mutex<Vec<Conn>>>,
}

impl Pool {
    /// No connections yet.
    pub fn new(addr: SocketAddr) -> Pool {
        Pool {
            addr,
            idle: Arc::default(),
        }
    }

    /// An idle connection, or a new one.
    pub async fn take(&self) -> io::Result<Conn> {
        let idle = self.idle.lock().expect("pool lock").pop();
        match idle {
            Some(c) => Ok(c),
            None => Conn::connect(self.addr).await,
        }
    }

    /// Gives `conn` back for reuse.
    pub fn give(&self, conn: Conn) {
        self.idle.lock().expect("pool lock").push(conn);
    }
}
