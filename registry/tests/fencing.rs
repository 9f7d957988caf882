//! The writer's fence, tested the way it fails: a bucket that answers late, a renewal that
//! hangs, a registry that lost its lease, segments deleted from the bucket. Every test runs
//! a journal over a local directory reached through [`Faulty`], a store wrapper that
//! delays or swallows requests the way a fault proxy in front of S3 does: a delayed
//! request is still carried out when its caller has given up (the bytes were sent).

use crate::support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dgsp_registry::health::Health;
use dgsp_registry::journal::{self, Journal, JournalError, JournalKey, Lease, LeaseError};
use dgsp_registry::store::Store;
use dgsp_registry::writer::{Command, Writer};
use dgsp_tilestore::{Bytes, Created, LocalDir, Object, Precondition, TileStore, Version};
use reqwest::StatusCode;

const TOKEN: &str = "fencing-test-admin-token";

/// Pass-through, or every request delayed by this many milliseconds (`u64::MAX`: never
/// answered, never carried out).
#[derive(Debug)]
struct Faulty {
    inner: Arc<dyn TileStore>,
    delay_ms: AtomicU64,
}

const HANG: u64 = u64::MAX;

type Boxed<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl Faulty {
    fn new(inner: Arc<dyn TileStore>) -> Arc<Faulty> {
        Arc::new(Faulty {
            inner,
            delay_ms: AtomicU64::new(0),
        })
    }

    fn set(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Runs `op` on the inner store after the delay, in a task of its own: the caller may
    /// give up meanwhile, the request still lands.
    async fn via<T: Send + 'static>(
        &self,
        op: impl FnOnce(Arc<dyn TileStore>) -> Boxed<T> + Send + 'static,
    ) -> T {
        let ms = self.delay_ms.load(Ordering::SeqCst);
        if ms == HANG {
            return std::future::pending().await;
        }
        let inner = self.inner.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            op(inner).await
        });
        task.await.expect("the delayed request ran")
    }
}

#[async_trait::async_trait]
impl TileStore for Faulty {
    async fn get(&self, key: &str) -> dgsp_tilestore::Result<Option<Object>> {
        let key = key.to_owned();
        self.via(move |s| Box::pin(async move { s.get(&key).await }))
            .await
    }
    async fn put_new(&self, key: &str, bytes: Bytes) -> dgsp_tilestore::Result<Created> {
        let key = key.to_owned();
        self.via(move |s| Box::pin(async move { s.put_new(&key, bytes).await }))
            .await
    }
    async fn put_if(
        &self,
        key: &str,
        bytes: Bytes,
        pre: Precondition,
    ) -> dgsp_tilestore::Result<Version> {
        let key = key.to_owned();
        self.via(move |s| Box::pin(async move { s.put_if(&key, bytes, pre).await }))
            .await
    }
    async fn put(&self, key: &str, bytes: Bytes) -> dgsp_tilestore::Result<Version> {
        let key = key.to_owned();
        self.via(move |s| Box::pin(async move { s.put(&key, bytes).await }))
            .await
    }
    async fn delete(&self, key: &str) -> dgsp_tilestore::Result<()> {
        let key = key.to_owned();
        self.via(move |s| Box::pin(async move { s.delete(&key).await }))
            .await
    }
    async fn list(&self, prefix: &str) -> dgsp_tilestore::Result<Vec<String>> {
        let prefix = prefix.to_owned();
        self.via(move |s| Box::pin(async move { s.list(&prefix).await }))
            .await
    }
    fn describe(&self) -> String {
        format!("faulty {}", self.inner.describe())
    }
}

/// A writer on a new group whose journal is in `tiles` (through `faulty`), holding the
/// lease; the group's genesis is uploaded.
struct Holder {
    writer: Writer,
    lease: Arc<Lease>,
    key: Arc<JournalKey>,
    manager: Arc<dgsp_core::Manager>,
    _thread: std::thread::JoinHandle<()>,
    _keeper: tokio::task::JoinHandle<LeaseError>,
}

async fn holder(
    db: &std::path::Path,
    seed: u64,
    tiles: Arc<dyn TileStore>,
    ttl: Duration,
) -> Holder {
    let (store, manager) = support::group(db, seed, 1_700_000_000_000);
    let key = Arc::new(JournalKey::derive(manager.secret_key()));
    let lease = Lease::acquire(tiles.clone(), ttl, || async {}).await;
    journal::catch_up(tiles.as_ref(), &key, &store, Some(&lease))
        .await
        .unwrap();
    let keeper = tokio::spawn(lease.clone().keep());
    let j = Arc::new(Journal::new(
        tiles,
        key.clone(),
        lease.clone(),
        tokio::runtime::Handle::current(),
    ));
    let health = Arc::new(Health::fenced(lease.clone()));
    let (writer, thread) =
        Writer::start_journaled(store, manager.clone(), health, Some(j)).unwrap();
    Holder {
        writer,
        lease,
        key,
        manager,
        _thread: thread,
        _keeper: keeper,
    }
}

fn join(name: &str) -> Command {
    Command::Join {
        usernames: vec![name.to_owned()],
    }
}

/// A standby on an empty store takes over `bucket` (catching up while it waits), then
/// checks the journal head the lease records: what `dgsp-registry serve` does.
async fn take_over(
    db: &std::path::Path,
    bucket: Arc<dyn TileStore>,
    key: Arc<JournalKey>,
    ttl: Duration,
) -> Result<Arc<Store>, JournalError> {
    take_over_leased(db, bucket, key, ttl).await.map(|(s, _)| s)
}

/// [`take_over`], keeping the lease.
async fn take_over_leased(
    db: &std::path::Path,
    bucket: Arc<dyn TileStore>,
    key: Arc<JournalKey>,
    ttl: Duration,
) -> Result<(Arc<Store>, Arc<Lease>), JournalError> {
    let store = Arc::new(Store::open(db).unwrap());
    let lease = {
        let (b, s, k) = (bucket.clone(), store.clone(), key.clone());
        Lease::acquire(bucket.clone(), ttl, move || {
            let (b, s, k) = (b.clone(), s.clone(), k.clone());
            async move {
                let _ = journal::catch_up(b.as_ref(), &k, &s, None).await;
            }
        })
        .await
    };
    let done = journal::catch_up(bucket.as_ref(), &key, &store, Some(&lease)).await?;
    journal::check_head(&key, &store, &lease, done.journal_head)?;
    Ok((store, lease))
}

/// Serves `store` in process on loopback, every write journaled in `tiles` under `lease`,
/// with a checkpoint every second.
async fn serve_journaled(
    store: Arc<Store>,
    manager: Arc<dgsp_core::Manager>,
    tiles: Arc<dyn TileStore>,
    key: Arc<JournalKey>,
    lease: Arc<Lease>,
) -> dgsp_registry::server::Running {
    let journal = Journal::new(tiles, key, lease, tokio::runtime::Handle::current());
    let mut config = support::config(TOKEN);
    config.publisher.checkpoint_interval = Duration::from_secs(1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    dgsp_registry::server::start_journaled(
        store,
        manager,
        listener,
        config,
        Some(Arc::new(journal)),
    )
    .await
    .unwrap()
}

/// A write whose segment reaches the bucket only after the writer's lease has lapsed (the
/// proxy in front of the bucket holds it for 6 s; the lease lives 2 s) is not
/// acknowledged, and whatever was acknowledged is in the log of the registry that took over.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_segment_that_lands_after_the_lease_lapsed_is_not_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let bucket: Arc<dyn TileStore> = Arc::new(LocalDir::open(dir.path().join("bucket")).unwrap());
    let faulty = Faulty::new(bucket.clone());
    let ttl = Duration::from_millis(2000);
    let w1 = holder(&dir.path().join("w1"), 1, faulty.clone(), ttl).await;
    let mut acked = Vec::new();
    for name in ["alice", "bob"] {
        acked.push(w1.writer.submit(join(name), None).await.unwrap());
    }
    // From now on everything W1 sends reaches the bucket 6 s late.
    faulty.set(6000);
    let late = tokio::spawn({
        let w = w1.writer.clone();
        async move { w.submit(Command::Revoke { id: 0 }, None).await }
    });
    let w2 = take_over(&dir.path().join("w2"), bucket.clone(), w1.key.clone(), ttl)
        .await
        .expect("the standby takes over");
    let answer = tokio::time::timeout(Duration::from_secs(30), late)
        .await
        .expect("the writer answers")
        .unwrap();
    // Let the late segment land, then read the journal once more as the new writer would.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let head = w2.head().unwrap().seq;
    assert!(
        answer.is_err(),
        "a revocation whose segment landed after the lease lapsed was acknowledged: {answer:?} (the new writer's log ends at {head})"
    );
    for outcome in &acked {
        let seq = match outcome {
            dgsp_registry::writer::Outcome::Joined { seq, .. } => *seq,
            other => panic!("{other:?}"),
        };
        assert!(
            seq <= head,
            "acknowledged entry {seq} is not in the log of the registry that took over (head {head})"
        );
    }
    assert!(
        w1.lease.check().is_err(),
        "the old writer still trusts its lease"
    );
}

/// A renewal that never answers loses to the lease's deadline: the keeper gives up and the
/// lease stops being trusted, instead of waiting for an answer forever.
#[tokio::test]
async fn a_renewal_that_hangs_loses_to_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = Faulty::new(Arc::new(LocalDir::open(dir.path()).unwrap()));
    let ttl = Duration::from_millis(800);
    let lease = Lease::acquire(faulty.clone(), ttl, || async {}).await;
    lease.check().unwrap();
    let keeper = tokio::spawn(lease.clone().keep());
    faulty.set(HANG);
    let why = tokio::time::timeout(ttl * 5, keeper)
        .await
        .expect("the keeper gave up while the store hung")
        .unwrap();
    assert!(matches!(why, LeaseError::Expired(_)), "{why:?}");
    assert!(matches!(lease.check(), Err(LeaseError::Expired(_))));
    // And the proof asked of a hung store fails within its bound, not never.
    let proof = tokio::time::timeout(ttl * 2, lease.confirm())
        .await
        .expect("the proof is bounded");
    assert!(proof.is_err(), "{proof:?}");
}

/// A registry whose bucket stops answering stops serving its checkpoint as fresh (and
/// `/readyz` fails) once its lease can no longer be trusted, instead of signing fresh
/// checkpoints from a log another registry may be extending.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_registry_that_cannot_prove_its_lease_serves_no_fresh_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = Faulty::new(Arc::new(LocalDir::open(dir.path().join("bucket")).unwrap()));
    let ttl = Duration::from_millis(1500);
    let (store, manager) = support::group(&dir.path().join("db"), 3, 1_700_000_000_000);
    let key = Arc::new(JournalKey::derive(manager.secret_key()));
    let tiles: Arc<dyn TileStore> = faulty.clone();
    let lease = Lease::acquire(tiles.clone(), ttl, || async {}).await;
    journal::catch_up(tiles.as_ref(), &key, &store, Some(&lease))
        .await
        .unwrap();
    let running = serve_journaled(store, manager, tiles, key, lease).await;
    let base = running.url();
    let client = reqwest::Client::new();
    support::wait_covering(&client, &base, 1, support::polls(200, 100)).await;
    let (status, body) = support::readyz(&client, &base).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    faulty.set(HANG);
    // Within a few lifetimes of the lease, nothing fresh is served any more.
    let deadline = tokio::time::Instant::now() + ttl * 6;
    loop {
        let cp = client
            .get(format!("{base}/v1/checkpoint"))
            .send()
            .await
            .unwrap();
        let tiles_cp = client
            .get(format!("{base}/v1/log/checkpoint"))
            .send()
            .await
            .unwrap();
        let (ready, why) = support::readyz(&client, &base).await;
        if cp.status() == StatusCode::SERVICE_UNAVAILABLE
            && tiles_cp.status() == StatusCode::SERVICE_UNAVAILABLE
            && ready == StatusCode::SERVICE_UNAVAILABLE
        {
            assert!(why.contains("lease"), "/readyz names the lease: {why}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still serving a checkpoint as fresh {:?} after the bucket hung: /v1/checkpoint {}, /v1/log/checkpoint {}, /readyz {ready} {why}",
            ttl * 6,
            cp.status(),
            tiles_cp.status()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(running);
}

/// The bucket's `checkpoint` only moves forward: a note of a smaller tree never replaces a
/// larger one's, and a larger one replaces it.
#[tokio::test]
async fn the_buckets_checkpoint_only_moves_forward() {
    use dgsp_registry::mirror::put_forward;
    let dir = tempfile::tempdir().unwrap();
    let tiles = LocalDir::open(dir.path()).unwrap();
    let note = |size: u64| {
        let body = dgsp_wire::note::CheckpointBody::plain("example.invalid/log", size, [7; 32]);
        format!("{}\n\u{2014} example.invalid/log AAAA\n", body.to_body())
    };
    assert!(put_forward(&tiles, "checkpoint", &note(10), 10)
        .await
        .unwrap());
    assert!(!put_forward(&tiles, "checkpoint", &note(7), 7)
        .await
        .unwrap());
    let held = tiles.get("checkpoint").await.unwrap().unwrap();
    assert_eq!(
        held.bytes,
        note(10).as_bytes(),
        "a smaller tree replaced a larger one"
    );
    assert!(put_forward(&tiles, "checkpoint", &note(12), 12)
        .await
        .unwrap());
    let held = tiles.get("checkpoint").await.unwrap().unwrap();
    assert_eq!(held.bytes, note(12).as_bytes());
    // The same note again is a no-op that succeeds.
    assert!(put_forward(&tiles, "checkpoint", &note(12), 12)
        .await
        .unwrap());
}

/// Segments deleted from the end of the journal are refused by the standby that takes
/// over (the lease records the head), and so is a head whose tag was altered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_refuses_a_journal_shorter_than_the_recorded_head() {
    for tamper in ["delete the newest segment", "alter the recorded head"] {
        let dir = tempfile::tempdir().unwrap();
        let bucket: Arc<dyn TileStore> =
            Arc::new(LocalDir::open(dir.path().join("bucket")).unwrap());
        let ttl = Duration::from_millis(1500);
        let w1 = holder(&dir.path().join("w1"), 4, bucket.clone(), ttl).await;
        let mut last = 0;
        for name in ["alice", "bob", "carol"] {
            if let dgsp_registry::writer::Outcome::Joined { seq, .. } =
                w1.writer.submit(join(name), None).await.unwrap()
            {
                last = seq;
            }
        }
        // A renewal records the head (the keeper's, or ours); then the writer dies without
        // releasing the lease.
        let mut record = None;
        for _ in 0..100 {
            w1.lease.renew().await.unwrap();
            let lease_obj = bucket
                .get(journal::lease::LEASE_KEY)
                .await
                .unwrap()
                .unwrap();
            let r: journal::lease::Record = serde_json::from_slice(&lease_obj.bytes).unwrap();
            if r.head.as_ref().map(|h| h.seq) == Some(last) {
                record = Some(r);
                break;
            }
        }
        let record = record.expect("a renewal recorded the journal head");
        w1._keeper.abort();
        match tamper {
            "delete the newest segment" => {
                bucket.delete(&journal::segment_key(last)).await.unwrap();
            }
            _ => {
                let mut r = record.clone();
                let head = r.head.as_mut().unwrap();
                head.seq -= 1;
                bucket
                    .put(
                        journal::lease::LEASE_KEY,
                        Bytes::from(serde_json::to_vec(&r).unwrap()),
                    )
                    .await
                    .unwrap();
            }
        }
        let refused = take_over(&dir.path().join("w2"), bucket.clone(), w1.key.clone(), ttl).await;
        match (tamper, &refused) {
            ("delete the newest segment", Err(JournalError::Truncated { recorded, .. })) => {
                assert_eq!(*recorded, last)
            }
            ("alter the recorded head", Err(JournalError::ForgedHead { .. })) => {}
            _ => panic!("{tamper}: {:?}", refused.map(|s| s.head().unwrap().seq)),
        }
    }
}

/// A registry that took over serves nothing as fresh before its own first segment lands
/// at the seq after everything it read. Here a segment of the previous writer lands there
/// first (as one from a writer paused with its clock, which would acknowledge it): the new
/// writer's claim finds the seq taken and it halts, and never serves a checkpoint that
/// lacks the previous writer's entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_writer_serves_nothing_fresh_before_its_first_segment_lands() {
    use dgsp_wire::events::Event;
    use dgsp_wire::log::Entry;
    let dir = tempfile::tempdir().unwrap();
    let bucket: Arc<dyn TileStore> = Arc::new(LocalDir::open(dir.path().join("bucket")).unwrap());
    let ttl = Duration::from_millis(1500);
    let w1 = holder(&dir.path().join("w1"), 5, bucket.clone(), ttl).await;
    for name in ["alice", "bob"] {
        w1.writer.submit(join(name), None).await.unwrap();
    }
    // W1 stops renewing (paused); W2 takes over and reads the journal.
    w1._keeper.abort();
    let (store, lease) =
        take_over_leased(&dir.path().join("w2"), bucket.clone(), w1.key.clone(), ttl)
            .await
            .unwrap();
    // W1's late segment lands at the seq after W2's head.
    let head = store.head().unwrap();
    let late = Entry::seal(
        head.seq + 1,
        1_700_000_000_000,
        &Event::MemberJoined {
            id: 2,
            username: "carol".into(),
        },
        &head.hash,
    );
    let name = journal::segment_key(head.seq + 1);
    bucket
        .put_new(&name, w1.key.seal(&name, &[late], &[]))
        .await
        .unwrap();
    // W2 serves.
    let running = serve_journaled(
        store,
        w1.manager.clone(),
        bucket.clone(),
        w1.key.clone(),
        lease,
    )
    .await;
    let base = running.url();
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let cp = client
            .get(format!("{base}/v1/checkpoint"))
            .send()
            .await
            .unwrap();
        assert_ne!(
            cp.status(),
            StatusCode::OK,
            "served a checkpoint while the journal holds an entry it lacks: {}",
            cp.text().await.unwrap()
        );
        let (ready, why) = support::readyz(&client, &base).await;
        assert_ne!(ready, StatusCode::OK, "{why}");
        if why.contains("halted") {
            assert!(why.contains("another registry"), "{why}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new writer neither halted nor stayed unready: {why}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(running);
}
