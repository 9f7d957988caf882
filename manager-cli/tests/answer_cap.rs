//! The client reads answers with a cap: a tiny server on loopback that answers too much
//! (an announced length past the cap, or a body without a length that never ends) gets a
//! typed refusal, and the client never reads it whole; an answer within the cap is read.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dgsp_manager::client::{Client, ClientError, MAX_GATEWAY_ANSWER, MAX_REGISTRY_ANSWER};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the server sends after the request.
#[derive(Clone, Copy)]
enum Answer {
    /// `Content-Length: n` and that many bytes of a JSON string.
    Sized(usize),
    /// A JSON string, chunked, without end.
    Endless,
}

/// Serves every connection with `answer`; counts the body bytes it managed to write.
async fn server(answer: Answer) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    tokio::spawn(async move {
        loop {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let count = count.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = tcp.read(&mut request).await;
                let chunk = vec![b'a'; 64 * 1024];
                match answer {
                    Answer::Sized(n) => {
                        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {n}\r\n\r\n\"");
                        if tcp.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        let mut left = n - 2;
                        while left > 0 {
                            let k = left.min(chunk.len());
                            if tcp.write_all(&chunk[..k]).await.is_err() {
                                return;
                            }
                            count.fetch_add(k, Ordering::Relaxed);
                            left -= k;
                        }
                        let _ = tcp.write_all(b"\"").await;
                    }
                    Answer::Endless => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n1\r\n\"\r\n";
                        if tcp.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        let framed =
                            [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
                        while tcp.write_all(&framed).await.is_ok() {
                            count.fetch_add(chunk.len(), Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    (url, written)
}

fn client(url: &str) -> Client {
    Client::new(url, None, Duration::from_secs(20), 0).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_answer_past_the_cap_is_refused_without_reading_it() {
    // Announced: refused before a byte of the body is read, however large it claims to be.
    let (url, _) = server(Answer::Sized(1 << 40)).await;
    let gateway = client(&url).with_max_answer(MAX_GATEWAY_ANSWER);
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        gateway.get_json::<Value>("/v1/group", &[]),
    )
    .await
    .expect("refused at once")
    .unwrap_err();
    assert!(
        matches!(err, ClientError::TooLarge { limit, .. } if limit == MAX_GATEWAY_ANSWER),
        "{err:?}"
    );
    assert_eq!(err.kind(), "answer_too_large");
    assert!(
        err.to_string()
            .contains(&format!("larger than {MAX_GATEWAY_ANSWER} bytes")),
        "{err}"
    );

    // Not announced, never ending: read up to the cap, then dropped.
    let (url, written) = server(Answer::Endless).await;
    let gateway = client(&url).with_max_answer(MAX_GATEWAY_ANSWER);
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        gateway.get_json::<Value>("/v1/group", &[]),
    )
    .await
    .expect("refused once the cap is passed")
    .unwrap_err();
    assert!(matches!(err, ClientError::TooLarge { .. }), "{err:?}");
    // What the server got out before the client hung up: the cap and the socket buffers.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = written.load(Ordering::Relaxed);
    assert!(sent >= MAX_GATEWAY_ANSWER / 2, "{sent}");
    assert!(sent < MAX_GATEWAY_ANSWER + (32 << 20), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_within_the_cap_is_read_and_the_registry_cap_is_larger() {
    // Larger than a gateway answer may be, within a registry's (an issuance of 1024 large
    // certificates is ~68 MB).
    let n = MAX_GATEWAY_ANSWER + 1024;
    let (url, _) = server(Answer::Sized(n)).await;
    let got: Value = client(&url).get_json("/v1/group", &[]).await.unwrap();
    assert_eq!(got.as_str().unwrap().len(), n - 2);
    let err = client(&url)
        .with_max_answer(MAX_GATEWAY_ANSWER)
        .get_json::<Value>("/v1/group", &[])
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::TooLarge { .. }), "{err:?}");
    let (url, _) = server(Answer::Sized(MAX_REGISTRY_ANSWER + 1)).await;
    let err = client(&url)
        .get_json::<Value>("/v1/group", &[])
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::TooLarge { limit, .. } if limit == MAX_REGISTRY_ANSWER),
        "{err:?}"
    );
}
