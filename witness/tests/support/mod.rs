//! What the witness crate's integration tests share: the clock in POSIX seconds and a test
//! log (an ML-DSA-44 key whose name is its origin) that signs three-line checkpoints.
#![allow(dead_code)]

use std::time::{SystemTime, UNIX_EPOCH};

use dgsp_wire::note::{witnessed_note, MlDsaCosigner};
use sha2::{Digest, Sha256};

/// Now, in POSIX seconds.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A test log: an ML-DSA-44 key whose name is its origin.
pub struct Log {
    pub origin: String,
    pub key: MlDsaCosigner,
}

impl Log {
    /// The log `origin`, its key from `seed`.
    pub fn new(origin: &str, seed: &[u8; 32]) -> Log {
        let key = MlDsaCosigner::from_seed(origin, seed).unwrap();
        Log {
            origin: origin.into(),
            key,
        }
    }

    /// A log no witness has seen: its origin names `tag`, this process and this moment
    /// (the real witnesses keep their state between tests of one run).
    pub fn unique(tag: &str) -> Log {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let origin = format!(
            "dgsp-test.invalid/witness-test/{tag}-{}-{nanos}",
            std::process::id()
        );
        let seed: [u8; 32] = Sha256::digest(origin.as_bytes()).into();
        Log::new(&origin, &seed)
    }

    /// The log's signature line (with its newline), timestamped now.
    pub fn line(&self, size: u64, root: &[u8; 32]) -> String {
        self.key.cosign(&self.origin, size, root, now()).unwrap()
    }

    /// The three-line checkpoint note with the log's ML-DSA-44 signature line.
    pub fn note(&self, size: u64, root: &[u8; 32]) -> String {
        witnessed_note(&self.origin, size, root, &self.line(size, root), &[])
    }
}
