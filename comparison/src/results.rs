//! What a run produces: one [`Row`] per contender, the sweeps, the member's side, and the
//! machine. Everything here is plain data (serialized to `results.json`).

use serde::Serialize;

use crate::measure::Estimate;

/// Which kind of scheme a row is (the plots colour by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Kind {
    /// Ed25519, ECDSA P-256, BLS12-381: neither anonymous nor post-quantum.
    Classical,
    /// BBS: anonymous (unlinkable presentations), not post-quantum.
    ClassicalAnonymous,
    /// ML-DSA (FIPS 204).
    Lattice,
    /// Raw SPHINCS+ round 3.1 (PQClean).
    Sphincs,
    /// Raw FIPS 205 SLH-DSA (RustCrypto `slh-dsa`).
    SlhDsa,
    /// DGSP on a SPHINCS+ round 3.1 set (ids 1-12).
    DgspRound3,
    /// DGSP on a FIPS 205 SLH-DSA set (ids 13-24).
    DgspFips205,
    /// The published `dgsp` 0.1.2 (the reference implementation).
    Reference,
}

impl Kind {
    /// A short description for tables and legends.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Classical => "classical",
            Kind::ClassicalAnonymous => "classical, anonymous",
            Kind::Lattice => "post-quantum (lattice)",
            Kind::Sphincs => "post-quantum (hash), SPHINCS+ 3.1",
            Kind::SlhDsa => "post-quantum (hash), FIPS 205",
            Kind::DgspRound3 => "post-quantum group signature, SPHINCS+ 3.1",
            Kind::DgspFips205 => "post-quantum group signature, FIPS 205",
            Kind::Reference => "post-quantum group signature (reference dgsp 0.1.2)",
        }
    }
}

/// Key and signature sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sizes {
    /// What a verifier needs.
    pub public_key: usize,
    /// What the signer keeps (for DGSP: the member key; per signature also a wallet slot).
    pub secret_key: usize,
    /// One signature (for BBS: one presentation proof).
    pub signature: usize,
}

/// A timed operation beyond keygen / sign / verify.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Extra {
    /// What was timed, in words (e.g. `batch verify, 64 signatures (per signature)`).
    pub name: String,
    /// The time.
    pub estimate: Estimate,
}

/// A size beyond the three of [`Sizes`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExtraSize {
    /// What was measured.
    pub name: String,
    /// Bytes.
    pub bytes: usize,
}

/// One contender on one parameter set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The scheme (`DGSP`, `Ed25519`, ...).
    pub scheme: String,
    /// The parameter set or variant (`sha2-128f`, `ML-DSA-65`, `min-pk`).
    pub variant: String,
    /// Its kind.
    pub kind: Kind,
    /// The security level in words (`NIST 1`, `~128-bit, classical`).
    pub security: String,
    /// The library and version measured.
    pub library: String,
    /// Sizes.
    pub sizes: Sizes,
    /// Key generation (DGSP: the group manager's).
    pub keygen: Estimate,
    /// Signing (DGSP: the online part, one signature from an imported certificate; BBS: a
    /// presentation proof on the message).
    pub sign: Estimate,
    /// Verification of one signature.
    pub verify: Estimate,
    /// More operations.
    pub extra: Vec<Extra>,
    /// More sizes.
    pub extra_sizes: Vec<ExtraSize>,
    /// Notes on what exactly was measured.
    pub notes: Vec<String>,
}

impl Row {
    /// `scheme variant`, e.g. `DGSP sha2-128f`.
    pub fn label(&self) -> String {
        format!("{} {}", self.scheme, self.variant)
    }

    /// The extra operation called `name`, if measured.
    pub fn extra(&self, name: &str) -> Option<&Estimate> {
        self.extra
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.estimate)
    }

    /// The extra size called `name`, if measured.
    pub fn extra_size(&self, name: &str) -> Option<usize> {
        self.extra_sizes
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.bytes)
    }
}

/// One point of a sweep: the swept value and the operations timed there.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The group size or the number of revoked zetas.
    pub at: u64,
    /// `(operation, time)` pairs.
    pub ops: Vec<Extra>,
    /// `(quantity, value)` pairs that are not times (bytes, members).
    pub values: Vec<(String, f64)>,
}

impl SweepPoint {
    /// The time of `op` at this point.
    pub fn op(&self, op: &str) -> Option<&Estimate> {
        self.ops.iter().find(|e| e.name == op).map(|e| &e.estimate)
    }

    /// The value called `name` at this point.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// A sweep over group size or revoked-list size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sweep {
    /// The parameter set it ran on.
    pub params: String,
    /// The points, in increasing order.
    pub points: Vec<SweepPoint>,
    /// What exactly was measured.
    pub notes: Vec<String>,
}
