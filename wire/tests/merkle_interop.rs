//! `dgsp_wire::merkle` and `dgsp_wire::tiles` against independent Go implementations:
//! the program `interop/tlogclient` (built by `scripts/go-interop.sh build`), whose vectors
//! come from `github.com/transparency-dev/merkle` cross-checked against
//! `golang.org/x/mod/sumdb/tlog`, and whose tiles client is `filippo.io/torchwood`'s.
//!
//! Needs `go` (1.26) and the Go module proxy (or a warm module cache). Without them these
//! tests FAIL, saying why: they never pass by skipping.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use base64::Engine as _;
use dgsp_wire::merkle::{self, Hash, Leaves, Nodes};
use dgsp_wire::tiles::{self, Tile};
use serde_json::Value;

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("wire/ is inside the workspace")
}

/// The Go program, built once per test binary (the script rebuilds only on changes).
fn go_program() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let script = workspace_root().join("scripts/go-interop.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg("build")
            .output()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "`scripts/go-interop.sh build` failed, so the Go interop check cannot run (it needs \
             `go` 1.26 on PATH and the Go module proxy or a warm module cache; this test fails \
             rather than skip):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = PathBuf::from(String::from_utf8(out.stdout).expect("a UTF-8 path").trim());
        assert!(path.is_file(), "the script printed {path:?}, not a file");
        path
    })
}

/// Runs the Go program with `stdin`, returning its output (whatever its exit status).
fn go(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(go_program())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dgsp-tlogclient");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || pipe.write_all(&input));
    let out = child.wait_with_output().expect("dgsp-tlogclient runs");
    writer.join().expect("writer").expect("stdin written");
    out
}

/// Runs the Go program and parses its JSON, failing on a non-zero exit.
fn go_json(args: &[&str], stdin: &[u8]) -> Value {
    let out = go(args, stdin);
    assert!(
        out.status.success(),
        "dgsp-tlogclient {args:?} exited {}:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("dgsp-tlogclient prints JSON")
}

/// splitmix64: the same pseudo-random leaves on every run and machine.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// 300 entries of 0 to 120 bytes (entry 1 empty).
fn entries() -> Vec<Vec<u8>> {
    (0..300u64)
        .map(|i| {
            let len = if i == 1 { 0 } else { mix(i) % 121 };
            (0..len).map(|j| mix(i << 16 | j) as u8).collect()
        })
        .collect()
}

fn hash(v: &Value) -> Hash {
    let s = v.as_str().expect("a hex string");
    hex::decode(s).expect("hex").try_into().expect("32 bytes")
}

fn hashes(v: &Value) -> Vec<Hash> {
    v.as_array().expect("an array").iter().map(hash).collect()
}

fn num(v: &Value) -> u64 {
    v.as_u64().expect("a number")
}

/// Every variant of `proof` with one bit flipped (a different bit in each hash).
fn flipped(proof: &[Hash]) -> impl Iterator<Item = Vec<Hash>> + '_ {
    (0..proof.len()).map(move |k| {
        let mut p = proof.to_vec();
        p[k][k % 32] ^= 1 << (k % 8);
        p
    })
}

fn flip(h: &Hash) -> Hash {
    let mut h = *h;
    h[31] ^= 0x80;
    h
}

#[test]
fn roots_and_proofs_match_go() {
    let entries = entries();
    let leaves: Vec<Hash> = entries.iter().map(|e| merkle::leaf_hash(e)).collect();
    let stdin: String = entries.iter().map(|e| hex::encode(e) + "\n").collect();
    let v = go_json(&["vectors"], stdin.as_bytes());

    assert_eq!(num(&v["count"]), 300);
    assert_eq!(hash(&v["empty_root"]), merkle::empty_root());
    assert_eq!(hash(&v["empty_root"]), merkle::root(&[]));
    assert_eq!(hashes(&v["leaf_hashes"]), leaves, "leaf hashes");

    // Every root, sizes 1..=300.
    let roots = v["roots"].as_array().expect("roots");
    assert_eq!(roots.len(), 300);
    let mut root_of = vec![merkle::empty_root()];
    for (k, r) in roots.iter().enumerate() {
        let size = num(&r["size"]) as usize;
        assert_eq!(size, k + 1);
        let ours = merkle::root(&leaves[..size]);
        assert_eq!(hash(&r["root"]), ours, "root({size})");
        root_of.push(ours);
    }

    // Inclusion proofs: equal to ours, accepted by our verifier, and refused with any bit
    // of them flipped, another leaf, another index, or a hash added or taken away.
    let inclusion = v["inclusion"].as_array().expect("inclusion");
    let mut sizes = BTreeSet::new();
    for p in inclusion {
        let (index, size) = (num(&p["index"]), num(&p["size"]));
        sizes.insert(size);
        let proof = hashes(&p["proof"]);
        let what = format!("inclusion({index}, {size})");
        let leaf = leaves[index as usize];
        let root = root_of[size as usize];
        assert_eq!(
            merkle::inclusion_proof(index, &leaves[..size as usize]),
            proof,
            "{what}"
        );
        merkle::verify_inclusion(&leaf, index, size, &proof, &root)
            .unwrap_or_else(|e| panic!("{what}: Go's proof refused: {e}"));
        for bad in flipped(&proof) {
            assert!(
                merkle::verify_inclusion(&leaf, index, size, &bad, &root).is_err(),
                "{what}: a flipped bit was accepted"
            );
        }
        assert!(merkle::verify_inclusion(&flip(&leaf), index, size, &proof, &root).is_err());
        assert!(merkle::verify_inclusion(&leaf, index, size, &proof, &flip(&root)).is_err());
        let mut longer = proof.clone();
        longer.push(leaf);
        assert!(merkle::verify_inclusion(&leaf, index, size, &longer, &root).is_err());
        if let Some((_, shorter)) = proof.split_last() {
            assert!(merkle::verify_inclusion(&leaf, index, size, shorter, &root).is_err());
            let other = index ^ 1;
            if other < size && leaves[other as usize] != leaf {
                assert!(
                    merkle::verify_inclusion(&leaf, other, size, &proof, &root).is_err(),
                    "{what}: accepted for index {other}"
                );
            }
        }
        assert!(merkle::verify_inclusion(&leaf, size, size, &proof, &root).is_err());
    }
    assert!(
        inclusion.len() > 1000,
        "{} inclusion proofs",
        inclusion.len()
    );
    assert!(
        (1..=40).all(|s| sizes.contains(&s)) && sizes.contains(&256) && sizes.contains(&300),
        "sizes covered: {sizes:?}"
    );

    // Consistency proofs, the same way.
    let consistency = v["consistency"].as_array().expect("consistency");
    for p in consistency {
        let (old, new) = (num(&p["old_size"]), num(&p["new_size"]));
        let proof = hashes(&p["proof"]);
        let what = format!("consistency({old}, {new})");
        let (old_root, new_root) = (root_of[old as usize], root_of[new as usize]);
        assert_eq!(
            merkle::consistency_proof(old, &leaves[..new as usize]),
            proof,
            "{what}"
        );
        merkle::verify_consistency(old, new, &old_root, &new_root, &proof)
            .unwrap_or_else(|e| panic!("{what}: Go's proof refused: {e}"));
        for bad in flipped(&proof) {
            assert!(
                merkle::verify_consistency(old, new, &old_root, &new_root, &bad).is_err(),
                "{what}: a flipped bit was accepted"
            );
        }
        assert!(
            merkle::verify_consistency(old, new, &flip(&old_root), &new_root, &proof).is_err(),
            "{what}: another old root accepted"
        );
        assert!(
            merkle::verify_consistency(old, new, &old_root, &flip(&new_root), &proof).is_err(),
            "{what}: another new root accepted"
        );
        let mut longer = proof.clone();
        longer.push(new_root);
        assert!(merkle::verify_consistency(old, new, &old_root, &new_root, &longer).is_err());
    }
    assert!(
        consistency.len() > 1000,
        "{} consistency proofs",
        consistency.len()
    );
}

/// All files under `dir`, as `/`-separated paths relative to it.
fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).expect("under base");
                let parts: Vec<_> = rel.iter().map(|c| c.to_str().expect("UTF-8")).collect();
                out.insert(parts.join("/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("dgsp-merkle-interop-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The checkpoint body's size and root (lines 2 and 3 of the note).
fn checkpoint_size_root(note: &str) -> (u64, Hash) {
    let lines: Vec<&str> = note.lines().collect();
    let root = base64::engine::general_purpose::STANDARD
        .decode(lines[2])
        .expect("base64 root");
    (
        lines[1].parse().expect("size"),
        root.try_into().expect("32 bytes"),
    )
}

/// A tiles layout written by the Go program (torchwood's `TilePath`, `AppendTileEntry`,
/// x/mod's `NewTiles` and `ReadTileData`) is exactly the set of files `tiles::tiles_for`
/// names, and reads back in Rust: bundles, hash tiles and the checkpoint's root.
#[test]
fn go_tiles_layout_reads_in_rust() {
    for n in [1u64, 256, 257, 70_000] {
        let dir = temp_dir(&format!("go-{n}"));
        let d = dir.to_str().expect("UTF-8 temp dir");
        let g = go_json(&["gen", "--dir", d, "--n", &n.to_string()], b"");

        let mut want: BTreeSet<String> = tiles::tiles_for(0, n).iter().map(Tile::path).collect();
        want.insert("checkpoint".into());
        assert_eq!(
            files_under(&dir),
            want,
            "files of a Go layout of {n} entries"
        );

        // Level-0 hashes recomputed from the bundles; higher levels from those.
        let mut leaves: Vec<Hash> = Vec::new();
        let mut stored: Vec<(Tile, Vec<Hash>)> = Vec::new();
        for t in tiles::tiles_for(0, n) {
            assert_eq!(Tile::parse(&t.path()), Ok(t));
            let bytes = std::fs::read(dir.join(t.path())).expect("tile file");
            match t.level {
                None => {
                    let entries = tiles::decode_bundle(&bytes, usize::from(t.width))
                        .unwrap_or_else(|e| panic!("{}: {e}", t.path()));
                    assert_eq!(
                        tiles::encode_bundle(entries.iter().copied()).expect("encodes"),
                        bytes,
                        "{}: our encoding differs",
                        t.path()
                    );
                    leaves.extend(entries.iter().map(|e| merkle::leaf_hash(e)));
                }
                Some(_) => stored.push((
                    t,
                    tiles::decode_hash_tile(&bytes, usize::from(t.width))
                        .unwrap_or_else(|| panic!("{}: wrong length", t.path())),
                )),
            }
        }
        assert_eq!(leaves.len() as u64, n);
        let src = Leaves(&leaves);
        for (t, hs) in &stored {
            let level = t.tree_level().expect("hash tile");
            for (i, h) in hs.iter().enumerate() {
                let index = t.index * tiles::TILE_WIDTH + i as u64;
                assert_eq!(
                    src.node(level, index).expect("node"),
                    *h,
                    "{} hash {i}",
                    t.path()
                );
            }
        }
        let note = std::fs::read_to_string(dir.join("checkpoint")).expect("checkpoint");
        let root = merkle::root(&leaves);
        assert_eq!(checkpoint_size_root(&note), (n, root));
        assert_eq!(hash(&g["root"]), root);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}

/// A tiles layout written with `dgsp_wire::tiles` and `dgsp_wire::merkle`, read by the
/// torchwood client: every entry through its verified iterator, inclusion proofs of some,
/// the root recomputed from the tiles and from the entries.
#[test]
fn rust_tiles_layout_verifies_in_go() {
    for n in [1u64, 256, 300, 70_000] {
        let dir = temp_dir(&format!("rust-{n}"));
        let entries: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                format!(
                    "{{\"seq\":{i},\"kind\":\"interop\",\"pad\":\"{}\"}}",
                    "x".repeat((mix(i) % 300) as usize)
                )
                .into_bytes()
            })
            .collect();
        let leaves: Vec<Hash> = entries.iter().map(|e| merkle::leaf_hash(e)).collect();
        let src = Leaves(&leaves);
        for t in tiles::tiles_for(0, n) {
            let first = t.index * tiles::TILE_WIDTH;
            let range = first..first + u64::from(t.width);
            let bytes = match t.tree_level() {
                None => tiles::encode_bundle(range.map(|i| entries[i as usize].as_slice()))
                    .expect("bundle"),
                Some(level) => range
                    .flat_map(|i| src.node(level, i).expect("node"))
                    .collect(),
            };
            let path = dir.join(t.path());
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, bytes).expect("write tile");
        }
        let root = merkle::root(&leaves);
        let origin = "dgsp/00112233445566778899aabbccddeeff";
        let b64 = base64::engine::general_purpose::STANDARD;
        let note = format!(
            "{origin}\n{n}\n{}\ntime 1764000000123\nsnapshot 3 {}\n\n\u{2014} {origin} {}\n",
            b64.encode(root),
            hex::encode([7u8; 32]),
            b64.encode([1u8; 40]),
        );
        std::fs::write(dir.join("checkpoint"), note).expect("write checkpoint");

        let d = dir.to_str().expect("UTF-8 temp dir");
        let last = (n - 1).to_string();
        let mid = (n / 2).to_string();
        let c = go_json(
            &[
                "client", "--dir", d, "--all", "--index", "0", "--index", &mid, "--index", &last,
                "--origin", origin,
            ],
            b"",
        );
        assert_eq!(num(&c["size"]), n);
        assert_eq!(hash(&c["root"]), root);
        assert_eq!(hash(&c["root_from_tiles"]), root);
        assert_eq!(hash(&c["root_from_entries"]), root);
        assert_eq!(num(&c["entries_read"]), n);
        assert_eq!(c["signature"], "not checked (SPHINCS+)");
        for (k, idx) in [0, n / 2, n - 1].into_iter().enumerate() {
            let got = &c["verified"][k];
            assert_eq!(num(&got["index"]), idx);
            assert_eq!(hash(&got["leaf_hash"]), leaves[idx as usize]);
            assert_eq!(
                hashes(&got["proof"]),
                merkle::inclusion_proof(idx, &leaves),
                "proof of {idx} in {n}"
            );
        }

        // One flipped bit in the right edge's level-0 tile: the Go client reading every entry
        // refuses (exit 1). (Without --all it reads only the tiles the root needs: for 256
        // entries that is tile/1/000.p/1 alone.)
        let edge = tiles::tiles_for(0, n)
            .into_iter()
            .rfind(|t| t.level == Some(0))
            .expect("a level-0 tile");
        let p = dir.join(edge.path());
        let mut bytes = std::fs::read(&p).expect("read");
        *bytes.last_mut().expect("not empty") ^= 1;
        std::fs::write(&p, bytes).expect("write");
        let out = go(&["client", "--dir", d, "--all"], b"");
        assert_eq!(
            out.status.code(),
            Some(1),
            "a tampered tile was not refused: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
