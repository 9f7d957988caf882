//! The revocation commitment, its proofs and signed snapshots.
//!
//! Two independent references are used: `reference_root` rebuilds the root with
//! `rs_merkle::MerkleTree` only (one tree per bucket, then the top tree), and `doc_verify`
//! re-implements the verification algorithm of `docs/revocation-proofs.md` without
//! `rs_merkle`. Every proof checked here must get the same answer from both verifiers.

// Makes manager keys and signs: needs the `sign` feature (on by default).
#![cfg(feature = "sign")]

use std::collections::BTreeSet;

use dgsp_core::revocation::{
    bucket_of, empty_root, verify_proof, verify_revocation, FormatError, InclusionProof,
    LeafOpening, Membership, NonMembershipProof, ProofError, RevocationProof, RevocationSet,
    SetError, SignedSnapshot, SnapshotError, SnapshotRecord, BUCKET_COUNT, RECORD_LEN,
    SNAPSHOT_PREFIX,
};
use dgsp_core::{Manager, ParamSet, Zeta, CERT_PREFIX};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha3::{Digest, Sha3_256};

// ---------------------------------------------------------------------------------------
// Helpers and independent references
// ---------------------------------------------------------------------------------------

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn random_zeta(rng: &mut impl RngCore) -> Zeta {
    let mut z = [0u8; 16];
    rng.fill_bytes(&mut z);
    Zeta(z)
}

fn random_zetas(rng: &mut impl RngCore, n: usize) -> Vec<Zeta> {
    (0..n).map(|_| random_zeta(rng)).collect()
}

/// A zeta in bucket `bucket` whose remaining bits come from `tail`.
fn zeta_in(bucket: u16, tail: u8) -> Zeta {
    let mut z = [tail; 16];
    z[0] = (bucket >> 4) as u8;
    z[1] = ((bucket & 0xf) as u8) << 4 | (tail & 0x0f);
    Zeta(z)
}

fn sha3(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha3_256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// An `rs_merkle` hasher written here, not taken from the library.
#[derive(Clone)]
struct TestHasher;

impl rs_merkle::Hasher for TestHasher {
    type Hash = [u8; 32];
    fn hash(data: &[u8]) -> [u8; 32] {
        sha3(&[data])
    }
    fn concat_and_hash(left: &[u8; 32], right: Option<&[u8; 32]>) -> [u8; 32] {
        match right {
            Some(r) => sha3(&[&[1], left, r]),
            None => *left,
        }
    }
}

fn leaf(z: &Zeta) -> [u8; 32] {
    sha3(&[&[0], &z.0])
}

fn node(l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    sha3(&[&[1], l, r])
}

fn top_leaf(b: u16, start: u64, count: u64, root: &[u8; 32]) -> [u8; 32] {
    sha3(&[
        &[2],
        &b.to_be_bytes(),
        &start.to_be_bytes(),
        &count.to_be_bytes(),
        root,
    ])
}

/// The set root computed with `rs_merkle::MerkleTree` only.
fn reference_root(zetas: &BTreeSet<Zeta>) -> [u8; 32] {
    let mut per_bucket = vec![Vec::new(); BUCKET_COUNT];
    for z in zetas {
        per_bucket[bucket_of(z) as usize].push(leaf(z));
    }
    let mut start = 0u64;
    let mut top = Vec::with_capacity(BUCKET_COUNT);
    for (b, leaves) in per_bucket.iter().enumerate() {
        let root = rs_merkle::MerkleTree::<TestHasher>::from_leaves(leaves)
            .root()
            .unwrap_or([0u8; 32]);
        top.push(top_leaf(b as u16, start, leaves.len() as u64, &root));
        start += leaves.len() as u64;
    }
    rs_merkle::MerkleTree::<TestHasher>::from_leaves(&top)
        .root()
        .unwrap()
}

/// The path walk of the docs: returns the root, or `None` if the path has the wrong length.
fn doc_walk(mut h: [u8; 32], mut i: u64, mut n: u64, path: &[[u8; 32]]) -> Option<[u8; 32]> {
    let mut k = 0;
    while n > 1 {
        if i % 2 == 1 {
            h = node(path.get(k)?, &h);
            k += 1;
        } else if i + 1 < n {
            h = node(&h, path.get(k)?);
            k += 1;
        }
        i /= 2;
        n = n.div_ceil(2);
    }
    (k == path.len()).then_some(h)
}

/// Docs, "Verification", step 1 for one opening: its global position, or `None`.
fn doc_opening(root: &[u8; 32], count: u64, o: &LeafOpening) -> Option<u64> {
    let b = ((o.zeta.0[0] as u16) << 4) | (o.zeta.0[1] >> 4) as u16;
    if o.bucket != b || o.local_index >= o.bucket_count {
        return None;
    }
    if o.bucket_start.checked_add(o.bucket_count)? > count {
        return None;
    }
    let bucket_root = doc_walk(leaf(&o.zeta), o.local_index, o.bucket_count, &o.bucket_path)?;
    let tl = top_leaf(o.bucket, o.bucket_start, o.bucket_count, &bucket_root);
    let top_root = doc_walk(tl, o.bucket as u64, 4096, &o.top_path)?;
    (top_root == *root).then_some(o.bucket_start + o.local_index)
}

/// The docs' verification algorithm, independent of the library's verifier.
fn doc_verify(
    root: &[u8; 32],
    count: u64,
    z: &Zeta,
    proof: &RevocationProof,
) -> Option<Membership> {
    match proof {
        RevocationProof::Inclusion(p) => (p.leaf.zeta == *z
            && doc_opening(root, count, &p.leaf).is_some())
        .then_some(Membership::Revoked),
        RevocationProof::NonMembership(p) => {
            let ok = match (&p.predecessor, &p.successor) {
                (None, None) => count == 0 && *root == empty_root(),
                (Some(pr), None) => {
                    doc_opening(root, count, pr) == Some(count.wrapping_sub(1)) && pr.zeta < *z
                }
                (None, Some(su)) => doc_opening(root, count, su) == Some(0) && *z < su.zeta,
                (Some(pr), Some(su)) => {
                    match (doc_opening(root, count, pr), doc_opening(root, count, su)) {
                        (Some(a), Some(b)) => pr.zeta < *z && *z < su.zeta && a + 1 == b,
                        _ => false,
                    }
                }
            };
            ok.then_some(Membership::NotRevoked)
        }
    }
}

/// Verifies with the library and with the docs' algorithm; both must agree.
fn check(
    root: &[u8; 32],
    count: u64,
    z: &Zeta,
    proof: &RevocationProof,
) -> Result<Membership, ProofError> {
    let lib = verify_proof(root, count, z, proof);
    let doc = doc_verify(root, count, z, proof);
    assert_eq!(
        lib.as_ref().ok().copied(),
        doc,
        "library and docs disagree: {lib:?}"
    );
    lib
}

/// Proves `z`, round-trips the bytes, verifies: the answer must match `contains`.
fn prove_and_check(set: &RevocationSet, z: &Zeta) -> Membership {
    let proof = set.prove(z);
    let decoded = RevocationProof::from_bytes(&proof.to_bytes()).expect("own proof decodes");
    assert_eq!(decoded, proof);
    let m = check(&set.root(), set.len(), z, &decoded).expect("own proof verifies");
    let expected = if set.contains(z) {
        Membership::Revoked
    } else {
        Membership::NotRevoked
    };
    assert_eq!(m, expected, "{z:?}");
    m
}

fn non_membership(set: &RevocationSet, z: &Zeta) -> NonMembershipProof {
    set.prove_non_membership(z).expect("zeta is absent")
}

fn opening_at(set: &RevocationSet, z: &Zeta) -> LeafOpening {
    set.prove_inclusion(z).expect("zeta is present").leaf
}

// ---------------------------------------------------------------------------------------
// Roots
// ---------------------------------------------------------------------------------------

#[test]
fn roots_match_an_rs_merkle_reference() {
    let mut r = rng(1);
    let mut zetas = BTreeSet::new();
    assert_eq!(RevocationSet::new().root(), reference_root(&zetas));
    assert_eq!(RevocationSet::new().root(), empty_root());
    for n in [1usize, 2, 3, 5, 100, 5000, 40_000] {
        zetas.extend(random_zetas(&mut r, n));
        let set: RevocationSet = zetas.iter().copied().collect();
        assert_eq!(set.len(), zetas.len() as u64);
        assert_eq!(set.root(), reference_root(&zetas), "{n}");
    }
}

#[test]
fn bucket_paths_match_rs_merkle_for_every_shape() {
    // All zetas in one bucket: sizes 1..=70 and a few larger, every leaf's path.
    for n in (1..=70usize).chain([127, 128, 129, 1000]) {
        let zetas: Vec<Zeta> = (0..n)
            .map(|i| {
                let mut z = zeta_in(0x123, 0).0;
                z[8..].copy_from_slice(&(i as u64).to_be_bytes());
                Zeta(z)
            })
            .collect();
        let set = RevocationSet::from_sorted(&zetas).unwrap();
        let leaves: Vec<[u8; 32]> = zetas.iter().map(leaf).collect();
        let tree = rs_merkle::MerkleTree::<TestHasher>::from_leaves(&leaves);
        for (i, z) in zetas.iter().enumerate() {
            let o = opening_at(&set, z);
            assert_eq!(o.local_index, i as u64);
            assert_eq!(o.bucket_count, n as u64);
            assert_eq!(
                o.bucket_path,
                tree.proof(&[i]).proof_hashes(),
                "n={n} i={i}"
            );
        }
    }
}

#[test]
fn from_sorted_requires_strictly_ascending() {
    let (a, b) = (Zeta([1; 16]), Zeta([2; 16]));
    assert!(RevocationSet::from_sorted(&[a, b]).is_ok());
    assert_eq!(
        RevocationSet::from_sorted(&[b, a]).unwrap_err(),
        SetError::NotSorted { index: 1 }
    );
    assert_eq!(
        RevocationSet::from_sorted(&[a, b, b]).unwrap_err(),
        SetError::NotSorted { index: 2 }
    );
    let set: RevocationSet = [b, a, b].into_iter().collect();
    assert_eq!(set.len(), 2);
}

#[test]
fn incremental_inserts_equal_bulk_construction() {
    let mut r = rng(2);
    let mut set = RevocationSet::from_zetas(random_zetas(&mut r, 20_000));
    let mut all: BTreeSet<Zeta> = set.iter().copied().collect();
    for (round, batch) in [1usize, 1, 10, 100, 3, 5000, 100, 1, 20_000]
        .iter()
        .enumerate()
    {
        let mut new = random_zetas(&mut r, *batch);
        // Duplicates inside the batch and already revoked zetas are ignored.
        new.push(new[0]);
        new.extend(all.iter().step_by(997).copied());
        let fresh: BTreeSet<Zeta> = new.iter().filter(|z| !all.contains(z)).copied().collect();
        let before_root = set.root();
        assert_eq!(set.insert(&new), fresh.len(), "round {round}");
        all.extend(fresh);
        let bulk = RevocationSet::from_sorted(&all.iter().copied().collect::<Vec<_>>()).unwrap();
        assert_eq!(set.len(), all.len() as u64);
        assert_eq!(set.root(), bulk.root(), "round {round}");
        assert_ne!(set.root(), before_root);
        // Inserting the same zetas again changes nothing.
        assert_eq!(set.insert(&new), 0);
        assert_eq!(set.root(), bulk.root());
    }
    assert_eq!(set.root(), reference_root(&all));
    assert!(set.iter().copied().eq(all.iter().copied()));
}

#[test]
fn later_snapshots_never_drop_a_zeta() {
    let mut r = rng(3);
    let mut set = RevocationSet::new();
    let mut inserted: Vec<Zeta> = Vec::new();
    for round in 0..12 {
        let batch = random_zetas(&mut r, 1 + round * 37);
        set.insert(&batch);
        inserted.extend(&batch);
        let (root, count) = (set.root(), set.len());
        for z in &inserted {
            let proof = set.prove(z);
            assert_eq!(check(&root, count, z, &proof), Ok(Membership::Revoked));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Proofs: edges, middle, bucket boundaries
// ---------------------------------------------------------------------------------------

#[test]
fn empty_set() {
    let set = RevocationSet::new();
    let z = Zeta([0x55; 16]);
    assert!(set.prove_inclusion(&z).is_none());
    let proof = set.prove(&z);
    assert_eq!(
        proof,
        RevocationProof::NonMembership(NonMembershipProof {
            predecessor: None,
            successor: None
        })
    );
    assert_eq!(prove_and_check(&set, &z), Membership::NotRevoked);
    assert_eq!(
        check(&set.root(), 1, &z, &proof),
        Err(ProofError::SetNotEmpty(1))
    );
    assert_eq!(
        check(&[7; 32], 0, &z, &proof),
        Err(ProofError::RootMismatch)
    );
}

#[test]
fn single_element() {
    let x = zeta_in(2000, 0x77);
    let mut set = RevocationSet::new();
    assert_eq!(set.insert(&[x]), 1);
    assert_eq!(prove_and_check(&set, &x), Membership::Revoked);
    assert_eq!(set.position(&x), Some(0));

    let below = Zeta([0; 16]);
    let p = non_membership(&set, &below);
    assert!(p.predecessor.is_none() && p.successor.as_ref().unwrap().zeta == x);
    assert_eq!(prove_and_check(&set, &below), Membership::NotRevoked);

    let above = Zeta([0xff; 16]);
    let p = non_membership(&set, &above);
    assert!(p.successor.is_none() && p.predecessor.as_ref().unwrap().zeta == x);
    assert_eq!(prove_and_check(&set, &above), Membership::NotRevoked);

    // Same bucket, just around x.
    let mut lo = x.0;
    lo[15] -= 1;
    let mut hi = x.0;
    hi[15] += 1;
    assert_eq!(prove_and_check(&set, &Zeta(lo)), Membership::NotRevoked);
    assert_eq!(prove_and_check(&set, &Zeta(hi)), Membership::NotRevoked);
}

#[test]
fn edges_and_middle_of_a_random_set() {
    let mut r = rng(4);
    let set = RevocationSet::from_zetas(random_zetas(&mut r, 3000));
    let sorted: Vec<Zeta> = set.iter().copied().collect();
    for (i, z) in sorted.iter().enumerate() {
        assert_eq!(prove_and_check(&set, z), Membership::Revoked);
        assert_eq!(opening_at(&set, z).position(), Some(i as u64));
        assert_eq!(set.position(z), Some(i as u64));
    }
    // Below the smallest and above the largest.
    let (first, last) = (sorted[0], *sorted.last().unwrap());
    let p = non_membership(&set, &Zeta([0; 16]));
    assert_eq!((p.predecessor, p.successor.unwrap().zeta), (None, first));
    let p = non_membership(&set, &Zeta([0xff; 16]));
    assert_eq!((p.predecessor.unwrap().zeta, p.successor), (last, None));
    for z in [Zeta([0; 16]), Zeta([0xff; 16])] {
        assert_eq!(prove_and_check(&set, &z), Membership::NotRevoked);
    }
    // Random absent zetas in the middle: neighbours are the sorted neighbours.
    for _ in 0..500 {
        let z = random_zeta(&mut r);
        let p = non_membership(&set, &z);
        let i = sorted.partition_point(|x| x < &z);
        assert_eq!(
            p.predecessor.map(|o| o.zeta),
            i.checked_sub(1).map(|j| sorted[j])
        );
        assert_eq!(p.successor.map(|o| o.zeta), sorted.get(i).copied());
        assert_eq!(prove_and_check(&set, &z), Membership::NotRevoked);
    }
}

#[test]
fn across_bucket_boundaries_and_empty_buckets() {
    // Buckets 7 and 8 adjacent; 100 and 4000 with empty buckets between; 0 and 4095 at
    // the ends of the bucket range.
    let zetas = [
        zeta_in(0, 0x30),
        zeta_in(7, 0x10),
        zeta_in(7, 0xe0),
        zeta_in(8, 0x20),
        zeta_in(100, 0x40),
        zeta_in(4000, 0x50),
        zeta_in(4095, 0x60),
    ];
    let set = RevocationSet::from_zetas(zetas);
    for z in &zetas {
        assert_eq!(prove_and_check(&set, z), Membership::Revoked);
    }
    let cases = [
        (zeta_in(7, 0xf0), zetas[2], zetas[3]), // end of bucket 7 -> start of 8
        (zeta_in(8, 0x00), zetas[2], zetas[3]), // start of bucket 8
        (zeta_in(9, 0x00), zetas[3], zetas[4]), // empty bucket 9
        (zeta_in(2048, 0x00), zetas[4], zetas[5]), // across ~3900 empty buckets
        (zeta_in(4000, 0x00), zetas[4], zetas[5]),
        (zeta_in(4095, 0x00), zetas[5], zetas[6]),
        (zeta_in(1, 0x00), zetas[0], zetas[1]),
    ];
    for (z, pred, succ) in cases {
        let p = non_membership(&set, &z);
        let (po, so) = (p.predecessor.clone().unwrap(), p.successor.clone().unwrap());
        assert_eq!((po.zeta, so.zeta), (pred, succ), "{z:?}");
        assert_eq!(po.position().unwrap() + 1, so.position().unwrap());
        assert_eq!(prove_and_check(&set, &z), Membership::NotRevoked);
    }
    // Edges inside the first and last buckets.
    let below = zeta_in(0, 0x00);
    assert!(non_membership(&set, &below).predecessor.is_none());
    assert_eq!(prove_and_check(&set, &below), Membership::NotRevoked);
    let above = zeta_in(4095, 0xff);
    assert!(non_membership(&set, &above).successor.is_none());
    assert_eq!(prove_and_check(&set, &above), Membership::NotRevoked);
}

// ---------------------------------------------------------------------------------------
// Proofs: what must be rejected
// ---------------------------------------------------------------------------------------

/// A set with several zetas per bucket and some empty buckets, plus interesting queries.
fn tamper_fixture() -> (RevocationSet, Vec<Zeta>) {
    let mut r = rng(5);
    let mut zetas = random_zetas(&mut r, 6000);
    zetas.extend([zeta_in(300, 0x10), zeta_in(300, 0x80), zeta_in(310, 0x20)]);
    zetas.retain(|z| !(301..310).contains(&bucket_of(z)));
    let set = RevocationSet::from_zetas(zetas);
    let queries = vec![
        zeta_in(300, 0x80), // revoked
        zeta_in(300, 0x40), // absent, same-bucket neighbours
        zeta_in(305, 0x40), // absent, neighbours across empty buckets
        Zeta([0; 16]),      // below the smallest
        Zeta([0xff; 16]),   // above the largest
    ];
    (set, queries)
}

#[test]
fn every_flipped_byte_is_rejected() {
    let (set, queries) = tamper_fixture();
    let (root, count) = (set.root(), set.len());
    for z in &queries {
        let bytes = set.prove(z).to_bytes();
        for i in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut t = bytes.clone();
                t[i] ^= mask;
                if let Ok(p) = RevocationProof::from_bytes(&t) {
                    let res = check(&root, count, z, &p);
                    assert!(res.is_err(), "byte {i} ^ {mask:#x} accepted for {z:?}");
                }
            }
        }
    }
}

#[test]
fn wrong_root_count_or_zeta_is_rejected() {
    let (set, queries) = tamper_fixture();
    let (root, count) = (set.root(), set.len());
    let mut other_root = root;
    other_root[0] ^= 1;
    for z in &queries {
        let proof = set.prove(z);
        assert!(check(&root, count, z, &proof).is_ok());
        assert_eq!(
            check(&other_root, count, z, &proof),
            Err(ProofError::RootMismatch)
        );
    }
    // The upper-edge proof depends on the count: one more and the predecessor is not last.
    let top = Zeta([0xff; 16]);
    let p = set.prove(&top);
    assert_eq!(
        check(&root, count + 1, &top, &p),
        Err(ProofError::NotLast {
            position: count - 1,
            count: count + 1
        })
    );
    // A smaller count than the openings claim.
    let inc = set.prove(&queries[0]);
    assert!(matches!(
        check(&root, 1, &queries[0], &inc),
        Err(ProofError::BucketBeyondCount { .. })
    ));
    // An inclusion proof does not prove another zeta, revoked or not.
    let other = set.iter().nth(17).copied().unwrap();
    assert_eq!(
        check(&root, count, &other, &inc),
        Err(ProofError::ZetaMismatch)
    );
    assert_eq!(
        check(&root, count, &queries[1], &inc),
        Err(ProofError::ZetaMismatch)
    );
    // A non-membership proof for one absent zeta does not cover one outside its gap, nor a
    // revoked zeta.
    let gap = set.prove(&queries[1]);
    assert_eq!(
        check(&root, count, &queries[2], &gap),
        Err(ProofError::NotOrdered)
    );
    let pred = non_membership(&set, &queries[1]).predecessor.unwrap().zeta;
    assert_eq!(
        check(&root, count, &pred, &gap),
        Err(ProofError::NotOrdered)
    );
}

#[test]
fn forged_non_membership_proofs_are_rejected() {
    let (set, queries) = tamper_fixture();
    let (root, count) = (set.root(), set.len());
    let sorted: Vec<Zeta> = set.iter().copied().collect();
    let open = |i: usize| opening_at(&set, &sorted[i]);
    let nm = |p: Option<LeafOpening>, s: Option<LeafOpening>| {
        RevocationProof::NonMembership(NonMembershipProof {
            predecessor: p,
            successor: s,
        })
    };
    let z = queries[1];
    let honest = non_membership(&set, &z);
    let (pred, succ) = (honest.predecessor.unwrap(), honest.successor.unwrap());
    let pi = pred.position().unwrap() as usize;

    // Swapped predecessor and successor.
    assert_eq!(
        check(
            &root,
            count,
            &z,
            &nm(Some(succ.clone()), Some(pred.clone()))
        ),
        Err(ProofError::NotOrdered)
    );
    // Non-adjacent leaves around the zeta (one gap too wide on either side).
    assert_eq!(
        check(
            &root,
            count,
            &z,
            &nm(Some(open(pi - 1)), Some(succ.clone()))
        ),
        Err(ProofError::NotAdjacent {
            predecessor: pi as u64 - 1,
            successor: pi as u64 + 1
        })
    );
    assert_eq!(
        check(
            &root,
            count,
            &z,
            &nm(Some(pred.clone()), Some(open(pi + 2)))
        ),
        Err(ProofError::NotAdjacent {
            predecessor: pi as u64,
            successor: pi as u64 + 2
        })
    );
    // Only one neighbour, away from the edges.
    assert_eq!(
        check(&root, count, &z, &nm(Some(pred.clone()), None)),
        Err(ProofError::NotLast {
            position: pi as u64,
            count
        })
    );
    assert_eq!(
        check(&root, count, &z, &nm(None, Some(succ.clone()))),
        Err(ProofError::NotFirst(pi as u64 + 1))
    );
    assert_eq!(
        check(&root, count, &z, &nm(None, None)),
        Err(ProofError::SetNotEmpty(count))
    );
    // A revoked zeta cannot be proven absent with the leaves around it.
    let x = queries[0];
    let xi = set.position(&x).unwrap() as usize;
    assert_eq!(
        check(
            &root,
            count,
            &x,
            &nm(Some(open(xi - 1)), Some(open(xi + 1)))
        ),
        Err(ProofError::NotAdjacent {
            predecessor: xi as u64 - 1,
            successor: xi as u64 + 1
        })
    );
    assert_eq!(
        check(&root, count, &x, &nm(Some(open(xi - 1)), Some(open(xi)))),
        Err(ProofError::NotOrdered)
    );
    assert_eq!(
        check(&root, count, &x, &nm(Some(open(xi)), Some(open(xi + 1)))),
        Err(ProofError::NotOrdered)
    );
    // Lying about positions inside an opening.
    let mut o = pred.clone();
    o.local_index += 1;
    assert!(check(&root, count, &z, &nm(Some(o), Some(succ.clone()))).is_err());
    let mut o = pred.clone();
    o.bucket_start += 1;
    assert_eq!(
        check(&root, count, &z, &nm(Some(o), Some(succ.clone()))),
        Err(ProofError::RootMismatch)
    );
    let mut o = succ.clone();
    o.bucket_count += 1;
    assert!(check(&root, count, &z, &nm(Some(pred.clone()), Some(o))).is_err());
    let mut o = pred.clone();
    o.local_index = o.bucket_count;
    assert!(matches!(
        check(&root, count, &z, &nm(Some(o), Some(succ.clone()))),
        Err(ProofError::LocalIndexOutOfRange { .. })
    ));
    let mut o = pred.clone();
    o.bucket = (o.bucket + 1) % 4096;
    assert!(matches!(
        check(&root, count, &z, &nm(Some(o), Some(succ.clone()))),
        Err(ProofError::BucketMismatch { .. })
    ));
    let mut o = pred.clone();
    o.bucket_path.push([0; 32]);
    assert!(matches!(
        check(&root, count, &z, &nm(Some(o), Some(succ.clone()))),
        Err(ProofError::WrongPathLength { .. })
    ));
    let mut o = pred.clone();
    o.top_path.swap(0, 1);
    assert_eq!(
        check(&root, count, &z, &nm(Some(o), Some(succ))),
        Err(ProofError::RootMismatch)
    );
    // A proof from an older root does not verify against a newer one.
    let mut newer = set.clone();
    newer.insert(&[zeta_in(4095, 0x33)]);
    let old = set.prove(&x);
    assert_eq!(
        check(&newer.root(), newer.len(), &x, &old),
        Err(ProofError::RootMismatch)
    );
}

// ---------------------------------------------------------------------------------------
// Proof bytes
// ---------------------------------------------------------------------------------------

#[test]
fn proof_bytes_round_trip_and_bad_bytes_give_typed_errors() {
    let (set, queries) = tamper_fixture();
    let mut proofs: Vec<RevocationProof> = queries.iter().map(|z| set.prove(z)).collect();
    proofs.push(RevocationSet::new().prove(&queries[0]));
    for p in &proofs {
        let bytes = p.to_bytes();
        assert_eq!(&RevocationProof::from_bytes(&bytes).unwrap(), p);
        for cut in 0..bytes.len() {
            let err = RevocationProof::from_bytes(&bytes[..cut]).unwrap_err();
            assert!(
                matches!(err, FormatError::Truncated { .. }),
                "cut {cut}: {err:?}"
            );
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(
            RevocationProof::from_bytes(&long).unwrap_err(),
            FormatError::TrailingBytes {
                what: "revocation proof",
                extra: 1
            }
        );
    }
    let inc = proofs[0].to_bytes();
    let nm = proofs[1].to_bytes();
    let with = |b: &[u8], i: usize, v: u8| {
        let mut t = b.to_vec();
        t[i] = v;
        RevocationProof::from_bytes(&t).unwrap_err()
    };
    assert!(matches!(with(&inc, 0, b'X'), FormatError::BadMagic { .. }));
    assert!(matches!(
        with(&inc, 4, 2),
        FormatError::UnsupportedVersion { version: 2, .. }
    ));
    assert_eq!(with(&inc, 5, 3), FormatError::UnknownProofType(3));
    assert_eq!(with(&nm, 6, 0x07), FormatError::BadFlags(0x07));
    // Bucket 0xffff (offset: header 6 + zeta 16).
    let mut t = inc.clone();
    t[22] = 0xff;
    t[23] = 0xff;
    assert_eq!(
        RevocationProof::from_bytes(&t).unwrap_err(),
        FormatError::BucketOutOfRange(0xffff)
    );
    // Path length byte at offset 6 + 16 + 2 + 24.
    assert_eq!(with(&inc, 48, 65), FormatError::PathTooLong(65));
    // Random garbage, with and without a valid header: an error, never a panic.
    let mut r = rng(6);
    for len in 0..600 {
        let mut g = vec![0u8; len % 200 + len / 3];
        r.fill_bytes(&mut g);
        if len % 2 == 1 && g.len() >= 7 {
            g[..4].copy_from_slice(b"DGRP");
            g[4] = 1;
            g[5] = 1 + (len % 4 == 1) as u8;
        }
        let _ = RevocationProof::from_bytes(&g);
        let _ = SnapshotRecord::from_bytes(&g);
        let _ = SignedSnapshot::from_bytes(&g);
    }
}

// ---------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------

fn manager(seed: u64) -> Manager {
    Manager::generate(ParamSet::Sha2_128f, &mut rng(seed))
}

/// Signs `prefix || record` with the manager's raw SPHINCS+ key (bypassing the library).
fn raw_sign(manager: &Manager, prefix: &[u8], record: &SnapshotRecord) -> Vec<u8> {
    use pqcrypto_sphincsplus::sphincssha2128fsimple as spx;
    use pqcrypto_traits::sign::{DetachedSignature as _, SecretKey as _};
    let sk_bytes = manager.secret_key().to_bytes();
    let spx_sk = &sk_bytes[sk_bytes.len() - spx::secret_key_bytes()..];
    let sk = spx::SecretKey::from_bytes(spx_sk).unwrap();
    let mut msg = prefix.to_vec();
    msg.extend_from_slice(&record.to_bytes());
    spx::detached_sign(&msg, &sk).as_bytes().to_vec()
}

#[test]
fn signed_snapshots_verify_and_reject_forgeries() {
    let m = manager(7);
    let group = m.public_key();
    let mut r = rng(8);
    let set = RevocationSet::from_zetas(random_zetas(&mut r, 500));
    let record = SnapshotRecord::genesis(
        group.fingerprint(),
        41,
        set.len(),
        set.root(),
        1_700_000_000_123,
    );
    let signed = m.sign_snapshot(&record);
    signed.verify(group).unwrap();

    // Bytes round trip.
    let bytes = signed.to_bytes();
    assert_eq!(SignedSnapshot::from_bytes(&bytes).unwrap(), signed);
    assert_eq!(record.to_bytes().len(), RECORD_LEN);
    assert_eq!(
        SnapshotRecord::from_bytes(&record.to_bytes()).unwrap(),
        record
    );
    assert_eq!(record.hash(), sha3(&[&record.to_bytes()]));

    // Offline verification of revoked / not revoked zetas.
    let revoked = *set.iter().next().unwrap();
    let fine = random_zeta(&mut r);
    assert_eq!(
        verify_revocation(group, &signed, &revoked, &set.prove(&revoked)).unwrap(),
        Membership::Revoked
    );
    assert_eq!(
        verify_revocation(group, &signed, &fine, &set.prove(&fine)).unwrap(),
        Membership::NotRevoked
    );
    let wrong = set.prove(&revoked);
    assert!(matches!(
        verify_revocation(group, &signed, &fine, &wrong),
        Err(SnapshotError::Proof(ProofError::ZetaMismatch))
    ));

    // Another group's key.
    let other = manager(9);
    assert!(matches!(
        signed.verify(other.public_key()),
        Err(SnapshotError::WrongGroup)
    ));
    assert!(matches!(
        verify_revocation(other.public_key(), &signed, &revoked, &set.prove(&revoked)),
        Err(SnapshotError::WrongGroup)
    ));
    // A record naming the other group but signed by this manager.
    let mut theirs = record.clone();
    theirs.group = other.public_key().fingerprint();
    assert!(matches!(
        m.sign_snapshot(&theirs).verify(other.public_key()),
        Err(SnapshotError::BadSignature)
    ));

    // Flipped signature bytes.
    for i in [0, 1, signed.signature.len() / 2, signed.signature.len() - 1] {
        let mut s = signed.clone();
        s.signature[i] ^= 0x01;
        assert!(
            matches!(s.verify(group), Err(SnapshotError::BadSignature)),
            "sig byte {i}"
        );
    }
    let mut s = signed.clone();
    s.signature.pop();
    assert!(matches!(s.verify(group), Err(SnapshotError::BadSignature)));

    // Every record field changed.
    let changes: [fn(&mut SnapshotRecord); 6] = [
        |r| r.number = 2,
        |r| r.log_seq += 1,
        |r| r.count += 1,
        |r| r.root[31] ^= 1,
        |r| r.time_unix_ms += 1,
        |r| r.group[0] ^= 1,
    ];
    for (k, change) in changes.iter().enumerate() {
        let mut s = signed.clone();
        change(&mut s.record);
        assert!(s.verify(group).is_err(), "field change {k} accepted");
    }
    // prev_hash of snapshot 1 must be zero; on a later snapshot, changing it breaks the
    // signature.
    let mut s = signed.clone();
    s.record.prev_hash[0] = 1;
    assert!(matches!(
        s.verify(group),
        Err(SnapshotError::Format(FormatError::InvalidRecord(_)))
    ));
    let second = m.sign_snapshot(&record.next(42, set.len(), set.root(), 1_700_000_000_999));
    second.verify(group).unwrap();
    let mut s = second.clone();
    s.record.prev_hash[0] ^= 1;
    assert!(matches!(s.verify(group), Err(SnapshotError::BadSignature)));

    // The certificate prefix is not the snapshot prefix.
    assert_ne!(CERT_PREFIX, SNAPSHOT_PREFIX);
    let good_raw = SignedSnapshot {
        record: record.clone(),
        signature: raw_sign(&m, SNAPSHOT_PREFIX, &record),
    };
    good_raw.verify(group).unwrap();
    let cert_prefixed = SignedSnapshot {
        record: record.clone(),
        signature: raw_sign(&m, CERT_PREFIX, &record),
    };
    assert!(matches!(
        cert_prefixed.verify(group),
        Err(SnapshotError::BadSignature)
    ));
    let unprefixed = SignedSnapshot {
        record: record.clone(),
        signature: raw_sign(&m, b"", &record),
    };
    assert!(matches!(
        unprefixed.verify(group),
        Err(SnapshotError::BadSignature)
    ));
}

#[test]
fn snapshot_chain_and_record_rules() {
    let m = manager(10);
    let fp = m.public_key().fingerprint();
    let mut set = RevocationSet::new();
    let first = SnapshotRecord::genesis(fp, 0, 0, set.root(), 1);
    first.validate().unwrap();
    assert_eq!(first.prev_hash, [0; 32]);
    set.insert(&[Zeta([9; 16])]);
    let second = first.next(5, set.len(), set.root(), 2);
    assert_eq!((second.number, second.prev_hash), (2, first.hash()));
    first.check_successor(&second).unwrap();
    assert!(second.check_successor(&first).is_err());
    let mut skip = second.clone();
    skip.number = 3;
    assert!(first.check_successor(&skip).is_err());
    let big = second.next(6, 10, [3; 32], 3);
    second.check_successor(&big).unwrap();
    assert!(matches!(
        big.check_successor(&big.next(7, 9, [4; 32], 4)),
        Err(SnapshotError::NotSuccessor("count decreased"))
    ));
    assert!(matches!(
        big.check_successor(&big.next(5, 10, [4; 32], 4)),
        Err(SnapshotError::NotSuccessor("log sequence decreased"))
    ));
    let mut other_hash = second.clone();
    other_hash.prev_hash[5] ^= 1;
    assert!(first.check_successor(&other_hash).is_err());

    // Record rules, also enforced when decoding.
    let mut zero = first.clone();
    zero.number = 0;
    assert!(zero.validate().is_err());
    assert!(matches!(
        SnapshotRecord::from_bytes(&zero.to_bytes()),
        Err(FormatError::InvalidRecord(_))
    ));
    let mut empty_wrong_root = first.clone();
    empty_wrong_root.root = [1; 32];
    assert!(SnapshotRecord::from_bytes(&empty_wrong_root.to_bytes()).is_err());

    // Truncated and padded encodings.
    let bytes = second.to_bytes();
    for cut in 0..bytes.len() {
        assert!(matches!(
            SnapshotRecord::from_bytes(&bytes[..cut]),
            Err(FormatError::Truncated { .. })
        ));
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(matches!(
        SnapshotRecord::from_bytes(&long),
        Err(FormatError::TrailingBytes { .. })
    ));
    let signed = m.sign_snapshot(&second).to_bytes();
    for cut in [0, 10, RECORD_LEN, RECORD_LEN + 3, signed.len() - 1] {
        assert!(SignedSnapshot::from_bytes(&signed[..cut]).is_err());
    }
    let mut huge = second.to_bytes();
    huge.extend_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(
        SignedSnapshot::from_bytes(&huge).unwrap_err(),
        FormatError::SignatureTooLong(u32::MAX)
    );
}

// ---------------------------------------------------------------------------------------
// The worked example of docs/revocation-proofs.md
// ---------------------------------------------------------------------------------------

/// The three-zeta example of the docs; run with `--nocapture` to print its values.
#[test]
fn docs_worked_example() {
    let zetas = [
        Zeta(hex16("00112233445566778899aabbccddeeff")),
        Zeta(hex16("0011ffeeddccbbaa9988776655443322")),
        Zeta(hex16("8000000000000000000000000000002a")),
    ];
    let set = RevocationSet::from_sorted(&zetas).unwrap();
    let inc = set.prove(&zetas[1]);
    let absent = Zeta(hex16("40000000000000000000000000000000"));
    let nm = set.prove(&absent);
    println!("root      {}", hex::encode(set.root()));
    println!("empty     {}", hex::encode(empty_root()));
    println!("leaf(z1)  {}", hex::encode(leaf(&zetas[1])));
    println!("inclusion {}", hex::encode(inc.to_bytes()));
    println!("absent    {}", hex::encode(nm.to_bytes()));
    assert_eq!(
        check(&set.root(), 3, &zetas[1], &inc),
        Ok(Membership::Revoked)
    );
    assert_eq!(
        check(&set.root(), 3, &absent, &nm),
        Ok(Membership::NotRevoked)
    );
    assert_eq!(
        hex::encode(set.root()),
        include_str!("../../docs/revocation-proofs.md")
            .lines()
            .find_map(|l| l.strip_prefix("set root: "))
            .map(|s| s.trim_matches('`').to_string())
            .unwrap_or_default(),
        "the docs' worked example is out of date"
    );
}

fn hex16(s: &str) -> [u8; 16] {
    hex::decode(s).unwrap().try_into().unwrap()
}

#[test]
fn inclusion_proof_struct_is_plain() {
    // The proof types are plain data: a verifier can build them from its own parser.
    let set = RevocationSet::from_zetas([Zeta([3; 16])]);
    let o = opening_at(&set, &Zeta([3; 16]));
    let p = RevocationProof::Inclusion(InclusionProof { leaf: o.clone() });
    assert_eq!(p.claim(), Membership::Revoked);
    assert_eq!(
        check(&set.root(), 1, &Zeta([3; 16]), &p),
        Ok(Membership::Revoked)
    );
    assert!(o.bucket_path.is_empty());
}

#[test]
fn a_clone_is_copy_on_write_and_never_changes_the_original() {
    let mut r = rng(77);
    let base = random_zetas(&mut r, 5000);
    let original = RevocationSet::from_zetas(base.iter().copied());
    let (root, count) = (original.root(), original.len());
    let absent = random_zeta(&mut r);
    let before = original.prove(&absent).to_bytes();

    let mut next = original.clone();
    let added = random_zetas(&mut r, 300);
    assert_eq!(next.insert(&added), 300);
    assert_eq!(next.insert(&[absent]), 1);

    // The original still answers exactly as before, proofs included.
    assert_eq!((original.root(), original.len()), (root, count));
    assert_eq!(original.prove(&absent).to_bytes(), before);
    assert_eq!(prove_and_check(&original, &absent), Membership::NotRevoked);
    let all: BTreeSet<Zeta> = base.iter().copied().collect();
    assert_eq!(original.root(), reference_root(&all));

    // The clone is the set of everything, as if built from scratch.
    let everything: BTreeSet<Zeta> = base
        .iter()
        .chain(&added)
        .chain([&absent])
        .copied()
        .collect();
    assert_eq!(next.root(), reference_root(&everything));
    assert_eq!(next.len(), everything.len() as u64);
    assert_eq!(prove_and_check(&next, &absent), Membership::Revoked);

    // Inserting into the original afterwards does not leak into the clone either.
    let mut original = original;
    let other = random_zeta(&mut r);
    original.insert(&[other]);
    assert!(!next.contains(&other));
    assert_eq!(next.root(), reference_root(&everything));
}

// ---------------------------------------------------------------------------------------
// Compact storage (issue 30, item 3): the bytes of format v1 are those of the full storage
// ---------------------------------------------------------------------------------------

/// Folds what format v1 shows of `set` into `h`: its root, its count, and the proof bytes of
/// every probe (length-prefixed), in order.
fn fold_set(h: &mut Sha3_256, set: &RevocationSet, probes: &[Zeta]) {
    h.update(set.root());
    h.update(set.len().to_be_bytes());
    for z in probes {
        let p = set.prove(z).to_bytes();
        h.update((p.len() as u64).to_be_bytes());
        h.update(&p);
    }
}

/// Zetas of bucket `bucket`, random below the 12 bucket bits.
fn random_in(r: &mut impl RngCore, bucket: u16, n: usize) -> Vec<Zeta> {
    (0..n)
        .map(|_| {
            let mut z = random_zeta(r).0;
            z[0] = (bucket >> 4) as u8;
            z[1] = ((bucket & 0xf) as u8) << 4 | (z[1] & 0x0f);
            Zeta(z)
        })
        .collect()
}

/// Every root and every proof byte of a run of sets and inserts, folded into one digest.
/// The digest below was computed by the storage that kept every leaf hash and every node
/// (commit `a06f288`); the compact storage (zetas and the bucket-tree levels from 64-leaf
/// blocks up, the rest recomputed) must give exactly the same bytes. The buckets have
/// every shape around 32- and 64-leaf blocks: empty, one leaf, odd, 31/32/33, 63/64/65,
/// 95/96/97, 127/128/129, 1000, 1025 leaves; the inserts land at the start, the middle and
/// the end of buckets, into buckets a clone shares and into buckets nobody else holds.
#[test]
fn compact_storage_gives_the_bytes_of_the_full_storage() {
    const SIZES: [usize; 21] = [
        0, 1, 2, 3, 5, 7, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 257, 1000, 1025,
    ];
    let mut r = rng(303);
    let mut h = Sha3_256::new();
    let mut zetas: Vec<Zeta> = random_zetas(&mut r, 3000);
    let dense: Vec<u16> = (0..SIZES.len() as u16).map(|i| 0x100 + 7 * i).collect();
    for (&b, &n) in dense.iter().zip(&SIZES) {
        zetas.retain(|z| bucket_of(z) != b);
        zetas.extend(random_in(&mut r, b, n));
    }
    let mut set = RevocationSet::from_zetas(zetas.iter().copied());
    let mut all: BTreeSet<Zeta> = zetas.iter().copied().collect();
    let mut probes: Vec<Zeta> = all
        .iter()
        .copied()
        .filter(|z| dense.contains(&bucket_of(z)))
        .collect();
    probes.extend(random_zetas(&mut r, 100));
    for &b in &dense {
        probes.extend(random_in(&mut r, b, 3));
    }
    probes.extend([Zeta([0; 16]), Zeta([0xff; 16])]);
    fold_set(&mut h, &set, &probes);

    for (round, batch) in [1usize, 2, 7, 33, 300, 1, 64, 2000].into_iter().enumerate() {
        let mut new = random_zetas(&mut r, batch);
        for &b in dense.iter().skip(round % 3).step_by(2) {
            new.extend(random_in(&mut r, b, 1 + round));
        }
        // The lowest and highest zeta of a bucket move every position of it, or none.
        new.push(zeta_in(dense[5], 0));
        new.push(zeta_in(dense[8], 0xff));
        // Even rounds insert beside a clone (shared zetas: side slices, compaction), and the
        // clone still shows its own bytes afterwards; odd rounds fold the clone first and
        // drop it, so the insert merges into buckets nobody else holds. Same bytes either way.
        let clone = set.clone();
        let probes_of_clone = &new[..new.len().min(50)];
        let kept = if round % 2 == 0 {
            Some(clone)
        } else {
            fold_set(&mut h, &clone, probes_of_clone);
            None
        };
        set.insert(&new);
        all.extend(new.iter().copied());
        if let Some(clone) = kept {
            fold_set(&mut h, &clone, probes_of_clone);
        }
        let bulk = RevocationSet::from_sorted(&all.iter().copied().collect::<Vec<_>>()).unwrap();
        assert_eq!(
            (bulk.root(), bulk.len()),
            (set.root(), set.len()),
            "round {round}"
        );
        let mut round_probes: Vec<Zeta> = new.clone();
        round_probes.extend(probes.iter().step_by(3));
        fold_set(&mut h, &set, &round_probes);
    }
    assert_eq!(set.root(), reference_root(&all));
    assert_eq!(
        hex::encode(h.finalize()),
        "a12ff4bf02a200806b3ec09d80ed8eeae1519619ddfe5f5c90ee2ccfaf652038"
    );
}
