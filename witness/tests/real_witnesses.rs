//! The client and the submitter against the two real witnesses (omniwitness, litewitness),
//! started by `scripts/witnesses.sh` (`dgsp_witness::test_server`). `DGSP_SKIP_WITNESSES=1`
//! skips, saying so.
//!
//! The log signs its three-line checkpoints with ML-DSA-44 (`subtree/v1`, type 0x06) through a
//! small local helper, until `dgsp_wire::note` signs checkpoints.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use dgsp_wire::merkle;
use dgsp_witness::protocol::cosignature_name;
use dgsp_witness::test_server::TestWitnesses;
use dgsp_witness::{AddCheckpoint, SubmitError, Submitter, WitnessClient};
use ml_dsa::{
    EncodedSignature, EncodedVerifyingKey, Keypair, MlDsa44, Signer, SigningKey, VerifyingKey,
};
use sha2::{Digest, Sha256};

/// The c2sp.org/tlog-cosignature ML-DSA-44 message for a checkpoint (start 0, end = size).
fn subtree_message(
    name: &str,
    timestamp: u64,
    origin: &str,
    size: u64,
    root: &[u8; 32],
) -> Vec<u8> {
    let mut m = b"subtree/v1\n\0".to_vec();
    m.push(u8::try_from(name.len()).unwrap());
    m.extend_from_slice(name.as_bytes());
    m.extend_from_slice(&timestamp.to_be_bytes());
    m.push(u8::try_from(origin.len()).unwrap());
    m.extend_from_slice(origin.as_bytes());
    m.extend_from_slice(&0u64.to_be_bytes());
    m.extend_from_slice(&size.to_be_bytes());
    m.extend_from_slice(root);
    m
}

fn key_id(name: &str, typ: u8, pk: &[u8]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', typ]);
    h.update(pk);
    h.finalize()[..4].try_into().unwrap()
}

/// A test log with an ML-DSA-44 key whose name is its origin.
struct Log {
    origin: String,
    sk: SigningKey<MlDsa44>,
    pk: Vec<u8>,
}

impl Log {
    fn new() -> Log {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let origin = format!(
            "dgsp-test.invalid/witness-test/{}-{nanos}",
            std::process::id()
        );
        let seed: [u8; 32] = Sha256::digest(origin.as_bytes()).into();
        let sk = SigningKey::<MlDsa44>::from_seed(&seed.into());
        let pk = sk.verifying_key().encode().to_vec();
        Log { origin, sk, pk }
    }

    fn vkey(&self) -> String {
        let mut typed = vec![0x06];
        typed.extend_from_slice(&self.pk);
        let id = key_id(&self.origin, 0x06, &self.pk);
        format!("{}+{}+{}", self.origin, hex(&id), STANDARD.encode(typed))
    }

    /// The three-line checkpoint note with the log's ML-DSA-44 signature line.
    fn note(&self, size: u64, root: &[u8; 32]) -> String {
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let msg = subtree_message(&self.origin, ts, &self.origin, size, root);
        let sig = self.sk.sign(&msg).encode();
        let mut blob = key_id(&self.origin, 0x06, &self.pk).to_vec();
        blob.extend_from_slice(&ts.to_be_bytes());
        blob.extend_from_slice(&sig);
        format!(
            "{o}\n{size}\n{r}\n\n— {o} {b}\n",
            o = self.origin,
            r = STANDARD.encode(root),
            b = STANDARD.encode(blob)
        )
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// (name, key ID, type byte || key) of a vkey.
fn parse_vkey(vkey: &str) -> (String, Vec<u8>, Vec<u8>) {
    let mut parts = vkey.splitn(3, '+');
    let name = parts.next().unwrap().to_owned();
    let id = parts.next().unwrap();
    let id = (0..8)
        .step_by(2)
        .map(|i| u8::from_str_radix(&id[i..i + 2], 16).unwrap())
        .collect();
    (name, id, STANDARD.decode(parts.next().unwrap()).unwrap())
}

/// Checks a witness's cosignature line against its vkey: the name, the key ID, a non-zero
/// timestamp, and for ML-DSA-44 (0x06) the signature itself over `subtree/v1`.
fn check_cosignature(line: &str, vkey: &str, origin: &str, size: u64, root: &[u8; 32]) {
    let (name, id, typed) = parse_vkey(vkey);
    assert_eq!(cosignature_name(line), Some(name.as_str()), "{line}");
    let blob = STANDARD.decode(line.rsplit(' ').next().unwrap()).unwrap();
    assert_eq!(&blob[..4], &id[..], "key ID");
    let ts = u64::from_be_bytes(blob[4..12].try_into().unwrap());
    assert_ne!(ts, 0, "a witness's timestamp must not be 0");
    match typed[0] {
        0x06 => {
            assert_eq!(blob.len(), 4 + 8 + 2420);
            let pk = VerifyingKey::<MlDsa44>::decode(
                &EncodedVerifyingKey::<MlDsa44>::try_from(&typed[1..]).unwrap(),
            );
            let sig = ml_dsa::Signature::<MlDsa44>::decode(
                &EncodedSignature::<MlDsa44>::try_from(&blob[12..]).unwrap(),
            )
            .unwrap();
            let msg = subtree_message(&name, ts, origin, size, root);
            assert!(
                pk.verify_with_context(&msg, &[], &sig),
                "ML-DSA-44 cosignature of {name} does not verify"
            );
        }
        // Ed25519 cosignature/v1 (litewitness): 4 + 8 + 64 bytes; not verified here.
        0x04 => assert_eq!(blob.len(), 4 + 8 + 64),
        t => panic!("unexpected cosignature type {t:#04x} from {name}"),
    }
}

fn client(name: &str, url: &str) -> WitnessClient {
    WitnessClient::new(name, url, reqwest::Client::new(), Duration::from_secs(10)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_real_witnesses_cosign_refuse_and_resync() {
    let log = Log::new();
    let vkey = log.vkey();
    let t = Instant::now();
    let Some(w) = TestWitnesses::start("both_real_witnesses_cosign_refuse_and_resync", &[&vkey])
    else {
        return;
    };
    eprintln!("witnesses started in {:.2} s", t.elapsed().as_secs_f64());
    let witnesses = [
        (
            "omniwitness",
            client("omniwitness", &w.omni_url),
            w.omni_vkey.clone(),
        ),
        (
            "litewitness",
            client("litewitness", &w.lite_url),
            w.lite_vkey.clone(),
        ),
    ];
    let leaves: Vec<[u8; 32]> = (0..5u8).map(|i| merkle::leaf_hash(&[b'e', i])).collect();
    let root = |n: usize| merkle::root(&leaves[..n]);

    let mut timings = Vec::new();
    for (label, c, wvkey) in &witnesses {
        let mut send = async |req: AddCheckpoint| {
            let t = Instant::now();
            let r = c.add_checkpoint(&req).await;
            timings.push((*label, t.elapsed()));
            r
        };
        // Size 1 from old 0: one cosignature line.
        let note1 = log.note(1, &root(1));
        let lines = send(AddCheckpoint {
            old: 0,
            proof: vec![],
            checkpoint: note1,
        })
        .await
        .unwrap();
        assert_eq!(lines.len(), 1, "{label}: {lines:?}");
        check_cosignature(&lines[0], wvkey, &log.origin, 1, &root(1));
        eprintln!("{label}: cosignature line of {} bytes", lines[0].len() + 1);

        // Size 3 with the consistency proof from 1.
        let proof = merkle::consistency_proof(1, &leaves[..3]);
        let lines = send(AddCheckpoint {
            old: 1,
            proof,
            checkpoint: log.note(3, &root(3)),
        })
        .await
        .unwrap();
        check_cosignature(&lines[0], wvkey, &log.origin, 3, &root(3));

        // Another root at the same size: 422.
        let wrong = merkle::root(&[leaves[0], leaves[1], leaves[4]]);
        let r = send(AddCheckpoint {
            old: 3,
            proof: vec![],
            checkpoint: log.note(3, &wrong),
        })
        .await;
        assert!(
            matches!(r, Err(SubmitError::Unprocessable(_))),
            "{label}: {r:?}"
        );

        // A stale old size: 409 with the size held.
        let r = send(AddCheckpoint {
            old: 1,
            proof: vec![],
            checkpoint: log.note(3, &root(3)),
        })
        .await;
        assert_eq!(r, Err(SubmitError::Conflict { size: 3 }), "{label}");
    }

    // Submitters that know nothing (old 0): a 409, then the retry with the proof from 3.
    let proof = |old: u64| Ok(merkle::consistency_proof(old, &leaves));
    for (label, c, wvkey) in &witnesses {
        let mut s = Submitter::new(c.clone());
        let t = Instant::now();
        let lines = s.cosign(5, &log.note(5, &root(5)), proof).await.unwrap();
        eprintln!(
            "{label}: Submitter 409 + retry in {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        check_cosignature(&lines[0], wvkey, &log.origin, 5, &root(5));
        assert_eq!(s.size(), 5);
        // Cadence: the same size again, one request, a fresh cosignature.
        assert!(s.cosign(5, &log.note(5, &root(5)), proof).await.is_ok());
        assert_eq!(s.status().consecutive_failures, 0);

        // A submitter behind the witness, submitting a smaller tree: WitnessAhead.
        let mut behind = Submitter::new(c.clone());
        let r = behind
            .cosign(4, &log.note(4, &root(4)), |o| {
                Ok(merkle::consistency_proof(o, &leaves[..4]))
            })
            .await;
        assert_eq!(r, Err(SubmitError::WitnessAhead { size: 5 }), "{label}");
    }

    for (label, _, _) in &witnesses {
        let ms: Vec<f64> = timings
            .iter()
            .filter(|(l, _)| l == label)
            .map(|(_, d)| d.as_secs_f64() * 1e3)
            .collect();
        let mean = ms.iter().sum::<f64>() / ms.len() as f64;
        eprintln!("{label}: add-checkpoint {ms:.1?} ms (mean {mean:.1} ms)");
    }
}
