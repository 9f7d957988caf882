//! The contract of [`TileStore`], one function run against both backends: a local temporary
//! directory and a real S3 server (`test_server`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::test_server::s3_env;
use crate::{Created, Error, LocalDir, Precondition, TileStore, S3};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn contents(store: &dyn TileStore, key: &str) -> Option<Bytes> {
    store.get(key).await.unwrap().map(|o| o.bytes)
}

/// Everything a tile store promises. `store` must be empty; `racers`: concurrent writers in
/// each race.
async fn contract(store: Arc<dyn TileStore>, racers: usize) {
    let what = store.describe();
    let s = store.as_ref();

    // A missing key.
    assert_eq!(s.get("tile/0/000").await.unwrap(), None, "{what}");
    assert_eq!(s.list("").await.unwrap(), Vec::<String>::new(), "{what}");

    // Create-if-absent: new, then the same bytes again, then other bytes.
    let tile = "tile/0/x001/234.p/5";
    let created = s.put_new(tile, b("hash tile")).await.unwrap();
    let Created::New(v1) = created.clone() else {
        panic!("{what}: {created:?}")
    };
    let obj = s.get(tile).await.unwrap().expect("stored");
    assert_eq!(obj.bytes, b("hash tile"), "{what}");
    assert_eq!(
        obj.version, v1,
        "{what}: the version of put_new is the one get reports"
    );
    assert_eq!(
        s.put_new(tile, b("hash tile")).await.unwrap(),
        Created::AlreadySame(v1.clone()),
        "{what}"
    );
    match s.put_new(tile, b("another tile")).await {
        Err(Error::Conflict { key }) => assert_eq!(key, tile),
        other => panic!("{what}: {other:?}"),
    }
    assert_eq!(contents(s, tile).await, Some(b("hash tile")), "{what}");

    // An empty object is an object.
    assert!(matches!(
        s.put_new("tile/entries/000", Bytes::new()).await.unwrap(),
        Created::New(_)
    ));
    assert_eq!(contents(s, "tile/entries/000").await, Some(Bytes::new()));
    assert!(matches!(
        s.put_new("tile/entries/000", Bytes::new()).await.unwrap(),
        Created::AlreadySame(_)
    ));

    // Compare-and-swap.
    let lease = "lease";
    let l1 = s
        .put_if(lease, b("holder A"), Precondition::Absent)
        .await
        .unwrap();
    assert!(
        matches!(
            s.put_if(lease, b("holder B"), Precondition::Absent).await,
            Err(Error::PreconditionFailed { .. })
        ),
        "{what}: Absent on an existing key"
    );
    let l2 = s
        .put_if(
            lease,
            b("holder A, renewed"),
            Precondition::Matches(l1.clone()),
        )
        .await
        .unwrap();
    assert_ne!(l1, l2, "{what}");
    let got = s.get(lease).await.unwrap().unwrap();
    assert_eq!(
        (got.bytes, got.version),
        (b("holder A, renewed"), l2.clone())
    );
    assert!(
        matches!(
            s.put_if(lease, b("holder B"), Precondition::Matches(l1.clone()))
                .await,
            Err(Error::PreconditionFailed { .. })
        ),
        "{what}: a stale version"
    );
    assert_eq!(contents(s, lease).await, Some(b("holder A, renewed")));
    assert!(
        matches!(
            s.put_if("checkpoint", b("x"), Precondition::Matches(l2.clone()))
                .await,
            Err(Error::PreconditionFailed { .. })
        ),
        "{what}: Matches on a missing key"
    );
    assert_eq!(s.get("checkpoint").await.unwrap(), None);

    // Concurrent compare-and-swap: exactly one winner per round.
    let cp = "checkpoint";
    let mut version = s
        .put_if(cp, b("checkpoint 0"), Precondition::Absent)
        .await
        .unwrap();
    for round in 1..=3 {
        let tasks: Vec<_> = (0..racers)
            .map(|i| {
                let store = Arc::clone(&store);
                let pre = Precondition::Matches(version.clone());
                tokio::spawn(async move {
                    let bytes = b(&format!("checkpoint {round} by {i}"));
                    (i, store.put_if(cp, bytes, pre).await)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                (i, Ok(v)) => winners.push((i, v)),
                (_, Err(Error::PreconditionFailed { .. })) => {}
                (_, Err(e)) => panic!("{what}: round {round}: {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "{what}: round {round}: {winners:?}");
        let (i, v) = winners.pop().unwrap();
        let got = s.get(cp).await.unwrap().unwrap();
        assert_eq!(
            got.bytes,
            b(&format!("checkpoint {round} by {i}")),
            "{what}"
        );
        assert_eq!(got.version, v, "{what}");
        version = v;
    }

    // Concurrent create-if-absent: one creates; the same bytes are AlreadySame, other bytes
    // Conflict. And concurrent put_if(Absent): one winner.
    for same in [true, false] {
        let key = if same {
            "tile/1/race-same"
        } else {
            "tile/1/race-diff"
        };
        let tasks: Vec<_> = (0..racers)
            .map(|i| {
                let store = Arc::clone(&store);
                let bytes = if same {
                    b("same")
                } else {
                    b(&format!("bytes {i}"))
                };
                tokio::spawn(async move { store.put_new(key, bytes).await })
            })
            .collect();
        let (mut new, mut same_n, mut conflict) = (0, 0, 0);
        for t in tasks {
            match t.await.unwrap() {
                Ok(Created::New(_)) => new += 1,
                Ok(Created::AlreadySame(_)) => same_n += 1,
                Err(Error::Conflict { .. }) => conflict += 1,
                Err(e) => panic!("{what}: {e}"),
            }
        }
        assert_eq!(new, 1, "{what}: {key}");
        if same {
            assert_eq!((same_n, conflict), (racers - 1, 0), "{what}");
        } else {
            assert_eq!((same_n, conflict), (0, racers - 1), "{what}");
        }
    }
    let tasks: Vec<_> = (0..racers)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                store
                    .put_if("lease2", b(&format!("holder {i}")), Precondition::Absent)
                    .await
            })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::PreconditionFailed { .. }) => {}
            Err(e) => panic!("{what}: {e}"),
        }
    }
    assert_eq!(won, 1, "{what}: put_if(Absent) race");

    // Unconditional put and delete.
    let v = s.put(cp, b("overwritten")).await.unwrap();
    let got = s.get(cp).await.unwrap().unwrap();
    assert_eq!((got.bytes, got.version), (b("overwritten"), v));
    s.put("fresh", b("new")).await.unwrap();
    assert_eq!(contents(s, "fresh").await, Some(b("new")));
    s.delete("fresh").await.unwrap();
    assert_eq!(s.get("fresh").await.unwrap(), None);
    s.delete("fresh").await.unwrap();
    s.delete("never/was/here").await.unwrap();

    // List.
    for k in [
        "tile/0/000",
        "tile/0/001",
        "tile/0/x001/000",
        "tile/2/000.p/7",
    ] {
        s.put_new(k, b(k)).await.unwrap();
    }
    let all = s.list("").await.unwrap();
    assert_eq!(
        all,
        [
            "checkpoint",
            "lease",
            "lease2",
            "tile/0/000",
            "tile/0/001",
            "tile/0/x001/000",
            "tile/0/x001/234.p/5",
            "tile/1/race-diff",
            "tile/1/race-same",
            "tile/2/000.p/7",
            "tile/entries/000",
        ],
        "{what}"
    );
    assert_eq!(
        s.list("tile/0/").await.unwrap(),
        [
            "tile/0/000",
            "tile/0/001",
            "tile/0/x001/000",
            "tile/0/x001/234.p/5"
        ],
        "{what}"
    );
    assert_eq!(
        s.list("tile/0/x0").await.unwrap(),
        ["tile/0/x001/000", "tile/0/x001/234.p/5"],
        "{what}"
    );
    assert_eq!(
        s.list("lease").await.unwrap(),
        ["lease", "lease2"],
        "{what}"
    );
    assert_eq!(s.list("tile/9/").await.unwrap(), Vec::<String>::new());
    assert_eq!(s.list("nothing").await.unwrap(), Vec::<String>::new());

    // Bounded reads: the object within its cap, a larger one refused (TooLarge), a missing
    // one None; streamed reads give the same bytes as `get`, in more than one chunk when
    // the object is large.
    let big: Bytes = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    s.put("tile/entries/001", big.clone()).await.unwrap();
    assert_eq!(
        s.get_bounded("tile/entries/001", big.len()).await.unwrap(),
        Some(big.clone()),
        "{what}"
    );
    match s.get_bounded("tile/entries/001", big.len() - 1).await {
        Err(Error::TooLarge { key, max }) => {
            assert_eq!((key.as_str(), max), ("tile/entries/001", big.len() - 1))
        }
        other => panic!("{what}: {other:?}"),
    }
    assert_eq!(s.get_bounded("tile/entries/009", 10).await.unwrap(), None);
    let mut r = s.read("tile/entries/001").await.unwrap().expect("stored");
    assert_eq!(r.size(), Some(big.len() as u64), "{what}");
    let mut streamed = Vec::new();
    while let Some(c) = r.chunk().await.unwrap() {
        streamed.extend_from_slice(&c);
    }
    assert_eq!(streamed, big, "{what}");
    s.delete("tile/entries/001").await.unwrap();

    // Bad keys are refused by every operation, before any I/O.
    for bad in [
        "",
        "/abs",
        "../up",
        "tile/../../etc/passwd",
        "a//b",
        "tile/",
        ".lock",
        "a b",
    ] {
        let refused = |r: Result<(), Error>| {
            assert!(
                matches!(r, Err(Error::InvalidKey { .. })),
                "{what}: {bad:?}: {r:?}"
            )
        };
        refused(s.get(bad).await.map(|_| ()));
        refused(s.get_bounded(bad, 10).await.map(|_| ()));
        refused(s.put_new(bad, b("x")).await.map(|_| ()));
        refused(
            s.put_if(bad, b("x"), Precondition::Absent)
                .await
                .map(|_| ()),
        );
        refused(s.put(bad, b("x")).await.map(|_| ()));
        refused(s.delete(bad).await);
    }
    for bad in ["/", "../", "a//", "a/./b"] {
        assert!(
            matches!(s.list(bad).await, Err(Error::InvalidKey { .. })),
            "{what}: list {bad:?}"
        );
    }

    // Clean up (S3 prefixes are shared storage).
    for k in s.list("").await.unwrap() {
        s.delete(&k).await.unwrap();
    }
    assert_eq!(s.list("").await.unwrap(), Vec::<String>::new(), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_local_dir() {
    let dir = tempfile::tempdir().unwrap();
    contract(
        Arc::new(LocalDir::open(dir.path().join("tiles")).unwrap()),
        16,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_s3() {
    let Some(env) = s3_env("contract_s3") else {
        return;
    };
    // Few racers: SeaweedFS serialises conditional writes of one key through a lock that it
    // polls once a second, so each racer costs up to a second.
    contract(Arc::new(S3::open(env.config("contract")).unwrap()), 6).await;
}

/// A `Cache-Control` policy as the registry's (`dgsp_wire::tiles::cache_control`, which
/// this crate does not depend on): public for the published layout, `no-store` for the rest.
fn test_cache_control(key: &str) -> &'static str {
    match key {
        "checkpoint" => "public, max-age=2",
        _ if key.starts_with("tile/") => "public, max-age=31536000, immutable",
        _ => "no-store",
    }
}

/// Every write stores the `Cache-Control` the configuration chooses for its key, and the
/// server (SeaweedFS) answers a plain signed GET with it: create-if-absent, an overwrite,
/// both compare-and-swap modes. Without a policy the server adds none of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_objects_carry_their_cache_control() {
    let Some(env) = s3_env("s3_objects_carry_their_cache_control") else {
        return;
    };
    let mut cfg = env.config("cachecontrol");
    cfg.cache_control = Some(test_cache_control);
    let prefix = cfg.prefix.clone();
    let store = S3::open(cfg).unwrap();
    let cc = |key: &str| env.get_header(&format!("{prefix}/{key}"), "cache-control");

    let tile = "tile/entries/x001/002.p/7";
    store.put_new(tile, b("bundle")).await.unwrap();
    store.put("checkpoint", b("note 1")).await.unwrap();
    store.put("checkpoint", b("note 2")).await.unwrap();
    let v = store
        .put_if("private/lease", b("holder A"), Precondition::Absent)
        .await
        .unwrap();
    store
        .put_if(
            "private/lease",
            b("holder A, renewed"),
            Precondition::Matches(v),
        )
        .await
        .unwrap();
    store
        .put_new("private/journal/00000000000000000001", b("segment"))
        .await
        .unwrap();
    for (key, want) in [
        (tile, "public, max-age=31536000, immutable"),
        ("checkpoint", "public, max-age=2"),
        ("private/lease", "no-store"),
        ("private/journal/00000000000000000001", "no-store"),
    ] {
        assert_eq!(cc(key).as_deref(), Some(want), "{key}");
    }

    let mut plain = env.config("nocachecontrol");
    plain.cache_control = None;
    let plain_prefix = plain.prefix.clone();
    let plain = S3::open(plain).unwrap();
    plain.put_new(tile, b("bundle")).await.unwrap();
    assert_eq!(
        env.get_header(&format!("{plain_prefix}/{tile}"), "cache-control"),
        None,
        "no policy, no header"
    );

    for s in [&store, &plain] {
        for k in s.list("").await.unwrap() {
            s.delete(&k).await.unwrap();
        }
    }
}

/// Two handles on one directory (as two processes would have) racing compare-and-swap:
/// the `flock` serialises them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_cas_across_handles() {
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<Arc<dyn TileStore>> = (0..4)
        .map(|_| Arc::new(LocalDir::open(dir.path()).unwrap()) as Arc<dyn TileStore>)
        .collect();
    let mut v = stores[0]
        .put_if("lease", b("0"), Precondition::Absent)
        .await
        .unwrap();
    for round in 1..=20 {
        let tasks: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let s = Arc::clone(s);
                let pre = Precondition::Matches(v.clone());
                tokio::spawn(
                    async move { s.put_if("lease", b(&format!("{round}/{i}")), pre).await },
                )
            })
            .collect();
        let mut wins = Vec::new();
        for t in tasks {
            if let Ok(nv) = t.await.unwrap() {
                wins.push(nv);
            }
        }
        assert_eq!(wins.len(), 1, "round {round}");
        v = wins.pop().unwrap();
    }
}

/// The S3 store against a server that is not there: a typed error, in bounded time.
#[tokio::test]
async fn s3_unreachable_is_a_typed_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = crate::S3Config::new("nobucket");
    cfg.endpoint = Some(format!("http://127.0.0.1:{port}"));
    cfg.credentials = Some(crate::S3Credentials {
        access_key_id: "a".into(),
        secret_access_key: "s".into(),
        session_token: None,
    });
    cfg.max_retries = 2;
    cfg.retry_timeout = std::time::Duration::from_secs(5);
    let store = S3::open(cfg).unwrap();
    let t0 = std::time::Instant::now();
    let res = store.get("checkpoint").await;
    assert!(matches!(res, Err(Error::S3 { .. })), "{res:?}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(30));
}

/// Wrong credentials: refused with a typed error, never a panic, the secret not in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_wrong_credentials_are_a_typed_error() {
    let Some(env) = s3_env("s3_wrong_credentials_are_a_typed_error") else {
        return;
    };
    let mut cfg = env.config("badcreds");
    cfg.credentials = Some(crate::S3Credentials {
        access_key_id: "dgsptestkey".into(),
        secret_access_key: "WRONG-SECRET-VALUE".into(),
        session_token: None,
    });
    let store = S3::open(cfg).unwrap();
    let res = store.put("checkpoint", b("x")).await;
    match res {
        Err(e @ Error::S3 { .. }) => assert!(!format!("{e} {e:?}").contains("WRONG-SECRET")),
        other => panic!("{other:?}"),
    }
}

/// A plain HTTP server on loopback that answers every request with an object of `size`
/// bytes (its `Content-Length`), sending it until the client goes away. Returns its URL,
/// the count of body bytes it managed to send, and whether it has stopped sending.
fn endless_object(size: u64) -> (String, Arc<AtomicU64>, Arc<AtomicBool>) {
    use std::io::{BufRead, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let stopped = Arc::new(AtomicBool::new(false));
    let (counter, done) = (sent.clone(), stopped.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nETag: \"abc\"\r\nLast-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n"
            );
            if conn.write_all(head.as_bytes()).is_ok() {
                let block = vec![7u8; 64 << 10];
                let mut left = size;
                while left > 0 {
                    let n = left.min(block.len() as u64) as usize;
                    if conn.write_all(&block[..n]).is_err() {
                        break;
                    }
                    counter.fetch_add(n as u64, Ordering::SeqCst);
                    left -= n as u64;
                }
            }
            done.store(true, Ordering::SeqCst);
        }
    });
    (url, sent, stopped)
}

/// A bounded read of an object over its cap fails without the object being read: the
/// server offers 1 GiB, and once the client has gone away (the server's writes fail) far
/// less of it has left the server than the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_bounded_reads_stop_at_the_cap() {
    const OFFERED: u64 = 1 << 30;
    const CAP: usize = 1 << 20;
    let (url, sent, stopped) = endless_object(OFFERED);
    let mut cfg = crate::S3Config::new("bucket");
    cfg.endpoint = Some(url);
    cfg.credentials = Some(crate::S3Credentials {
        access_key_id: "a".into(),
        secret_access_key: "s".into(),
        session_token: None,
    });
    cfg.max_retries = 0;
    let store = S3::open(cfg).unwrap();
    match store.get_bounded("snapshot/001", CAP).await {
        Err(Error::TooLarge { key, max }) => assert_eq!((key.as_str(), max), ("snapshot/001", CAP)),
        other => panic!("{other:?}"),
    }
    drop(store);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !stopped.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server is still sending: the client did not let go of the answer"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let out = sent.load(Ordering::SeqCst);
    assert!(
        out < 64 << 20,
        "{out} bytes of the 1 GiB object were sent before the read gave up"
    );
}
