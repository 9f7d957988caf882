#!/usr/bin/env python3
"""Independent known-answer-test (KAT) generator for DGSP v1.

Written only from /work/shared/spec/dgsp-v1.md (sections 1-4 and 7), without reference to
the Rust implementation, so that the vectors it produces are a genuine cross-check.

Usage:
    python3 gen_vectors.py [--out DIR]          write <set-name>.json for all 24 sets
    python3 gen_vectors.py [--out DIR] --check  regenerate in memory, compare byte-for-byte

Dependencies: Python 3.11 standard library, `cryptography` (AES only) and `slh-dsa` 0.2.5
(import name `slhdsa`; FIPS 205 key generation and signing for the "manager" section of the
SLH-DSA sets 13-24): `python3 -m pip install slh-dsa==0.2.5`. The sets are generated in
parallel, one process per CPU (the FIPS 205 "s" sets take seconds each to sign).

Input-derivation rule (every seed, secret and message is deterministic):

    derive(set_name, field, index, length) =
        SHAKE256(b"dgsp-v1 kat|" || set_name || b"|" || field || b"|" || index)[:length]

where set_name, field and index are ASCII strings; index is the decimal spelling of an
integer (e.g. b"0", b"1"). The fields used are:

    hash_secret, aes_key   index = group number (0, 1), length N
    seed_u, wots_seed      index = wots entry number (0, 1, 2), length N
    message                index = wots entry number; used only for the 1000-byte message
    hl_input               index = the label itself (e.g. b"cid*"), length 200
    spx_sk_seed, spx_sk_prf, spx_pk_seed
                           index = b"0", length N (SLH-DSA sets 13-24 only)

Fixed choices:
    labelled hashes:  for each of the 7 labels, inputs b"", b"\\x00" and a 200-byte derived input
    groups:           2 groups; members with ids 0, 1, 2^32+5, 2^64-1;
                      each member has zetas for ctr 0, 1, 1000, 2^63
    wots entries:     entry 0: message b"" (0 bytes),            id 5
                      entry 1: message b"abc" (3 bytes),         id 2^32+5
                      entry 2: message derived (1000 bytes),     id 2^64-1
                      cid for a wots entry uses groups[0].hash_secret and the entry's id.
    manager (ids 13-24 only): the FIPS 205 key pair from the three spx_* seeds
                      (slh_keygen_internal), and one certificate: wots entry 0 (its wots_pk,
                      tau and id), ctr 7, zeta under groups[0].aes_key, message
                      b"DGSP-v1:cert" || wots_pk || zeta || tau, spx_sig = FIPS 205 pure
                      slh_sign(message, ctx = b"") in its deterministic variant
                      (addrnd = opt_rand = PK.seed, recorded as "addrnd").
"""

import argparse
import hashlib
import json
import multiprocessing
import os
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

try:
    import slhdsa
    from slhdsa.lowlevel import parameters as slh_parameters
    from slhdsa.lowlevel.addresses import Address as SlhAddress
    from slhdsa.lowlevel.xmss import XMSS as SlhXMSS
except ImportError:
    slhdsa = None

# ---------------------------------------------------------------------------
# Section 1: parameter sets (id, name, hash family, N)
# ---------------------------------------------------------------------------

PARAM_SETS = [
    (1, "sha2-128s", "sha2", 16),
    (2, "sha2-128f", "sha2", 16),
    (3, "sha2-192s", "sha2", 24),
    (4, "sha2-192f", "sha2", 24),
    (5, "sha2-256s", "sha2", 32),
    (6, "sha2-256f", "sha2", 32),
    (7, "shake-128s", "shake", 16),
    (8, "shake-128f", "shake", 16),
    (9, "shake-192s", "shake", 24),
    (10, "shake-192f", "shake", 24),
    (11, "shake-256s", "shake", 32),
    (12, "shake-256f", "shake", 32),
    # Section 7: FIPS 205 SLH-DSA; same N and hash family as the round-3.1 twin (id - 12).
    (13, "slh-dsa-sha2-128s", "sha2", 16),
    (14, "slh-dsa-sha2-128f", "sha2", 16),
    (15, "slh-dsa-sha2-192s", "sha2", 24),
    (16, "slh-dsa-sha2-192f", "sha2", 24),
    (17, "slh-dsa-sha2-256s", "sha2", 32),
    (18, "slh-dsa-sha2-256f", "sha2", 32),
    (19, "slh-dsa-shake-128s", "shake", 16),
    (20, "slh-dsa-shake-128f", "shake", 16),
    (21, "slh-dsa-shake-192s", "shake", 24),
    (22, "slh-dsa-shake-192f", "shake", 24),
    (23, "slh-dsa-shake-256s", "shake", 32),
    (24, "slh-dsa-shake-256f", "shake", 32),
]
SLH_DSA_PREFIX = "slh-dsa-"

# Signature bytes of the round-3.1 sets, by size suffix; section 7: the FIPS 205 twins match.
SPX_SIG_BYTES = {"128s": 7856, "128f": 17088, "192s": 16224, "192f": 35664,
                 "256s": 29792, "256f": 49856}
CERT_PREFIX = b"DGSP-v1:cert"
CERT_WOTS_ENTRY = 0
CERT_CTR = 7

LABELS = ["rho", "wots-sk", "msg", "cid", "cid*", "pi", "tau"]

GROUP_IDS = [0, 1, 2**32 + 5, 2**64 - 1]
GROUP_CTRS = [0, 1, 1000, 2**63]
# (message spec, id) per wots entry; message spec None means "derived 1000 bytes"
WOTS_ENTRIES = [(b"", 5), (b"abc", 2**32 + 5), (None, 2**64 - 1)]

# WOTS+ constants (section 3)
W = 16
LG_W = 4
LEN2 = 3

# ADRS types and fixed fields (section 2.2)
WOTS_HASH = 0
WOTS_PK = 1
WOTS_PRF = 5
LAYER = 73
TREE = 0
KEYPAIR = 0


def be16(x):
    return x.to_bytes(2, "big")


def be32(x):
    return x.to_bytes(4, "big")


def be64(x):
    return x.to_bytes(8, "big")


def derive(set_name, field, index, length):
    data = b"dgsp-v1 kat|" + set_name.encode() + b"|" + field.encode() + b"|" + index.encode()
    return hashlib.shake_256(data).digest(length)


# ---------------------------------------------------------------------------
# Hash functions for one parameter set
# ---------------------------------------------------------------------------


class Params:
    def __init__(self, pid, name, family, n):
        self.id = pid
        self.name = name
        self.family = family
        self.n = n
        self.len1 = 2 * n
        self.len = self.len1 + LEN2
        self.fips205 = name.startswith(SLH_DSA_PREFIX)
        # Optional hook used by the self-test to observe what gets hashed.
        self.trace = None

    # -- 2.1 labelled hash --------------------------------------------------
    def hl(self, label, x):
        prefix = b"DGSP-v1:" + label.encode("ascii") + b"\x00"
        if self.family == "shake":
            return hashlib.shake_256(prefix + x).digest(self.n)
        if self.n == 16:
            return hashlib.sha256(prefix + x).digest()[: self.n]
        return hashlib.sha512(prefix + x).digest()[: self.n]

    # -- 2.2 tweakable hashes ---------------------------------------------
    def _sha2(self, algo, block, rho, adrs, x):
        data = rho + bytes(block - self.n) + adrs_c(adrs) + x
        if self.trace is not None:
            self.trace.append((algo, len(data)))
        return hashlib.new(algo, data).digest()[: self.n]

    def _shake(self, rho, adrs, x):
        data = rho + adrs_full(adrs) + x
        if self.trace is not None:
            self.trace.append(("shake256", len(data)))
        return hashlib.shake_256(data).digest(self.n)

    def F(self, rho, adrs, x):
        assert len(x) == self.n
        if self.family == "shake":
            return self._shake(rho, adrs, x)
        return self._sha2("sha256", 64, rho, adrs, x)

    def T(self, rho, adrs, x):
        assert len(x) % self.n == 0
        if self.family == "shake":
            return self._shake(rho, adrs, x)
        if self.n == 16:
            return self._sha2("sha256", 64, rho, adrs, x)
        return self._sha2("sha512", 128, rho, adrs, x)

    def PRF(self, rho, adrs, seed):
        assert len(seed) == self.n
        if self.family == "shake":
            return self._shake(rho, adrs, seed)
        return self._sha2("sha256", 64, rho, adrs, seed)

    # -- AES by N -----------------------------------------------------------
    def aes_enc(self, key, block):
        assert len(key) == self.n and len(block) == 16
        enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        return enc.update(block) + enc.finalize()

    def aes_dec(self, key, block):
        assert len(key) == self.n and len(block) == 16
        dec = Cipher(algorithms.AES(key), modes.ECB()).decryptor()
        return dec.update(block) + dec.finalize()

    # -- 2.2/3 WOTS+ --------------------------------------------------------
    def digits(self, d):
        assert len(d) == self.n
        m = base_w(d, self.len1)
        c = sum(W - 1 - mi for mi in m)
        c <<= 4  # spec: c = c << 4 (== (8 - len2*lg_w % 8) % 8)
        return m + base_w(be16(c), LEN2)

    def chain(self, rho, x, i, start, steps):
        for j in range(start, start + steps):
            x = self.F(rho, make_adrs(WOTS_HASH, chain=i, hash_=j), x)
        return x

    def sk_i(self, rho, sk_seed, i):
        return self.PRF(rho, make_adrs(WOTS_PRF, chain=i, hash_=0), sk_seed)

    def wots_pk(self, rho, sk_seed):
        ends = b"".join(
            self.chain(rho, self.sk_i(rho, sk_seed, i), i, 0, W - 1) for i in range(self.len)
        )
        return self.T(rho, make_adrs(WOTS_PK, chain=0, hash_=0), ends)

    def wots_sign(self, rho, sk_seed, d):
        digs = self.digits(d)
        return b"".join(
            self.chain(rho, self.sk_i(rho, sk_seed, i), i, 0, digs[i]) for i in range(self.len)
        )

    def wots_pk_from_sig(self, rho, sig, d):
        n = self.n
        assert len(sig) == self.len * n
        digs = self.digits(d)
        ends = b"".join(
            self.chain(rho, sig[i * n : (i + 1) * n], i, digs[i], W - 1 - digs[i])
            for i in range(self.len)
        )
        return self.T(rho, make_adrs(WOTS_PK, chain=0, hash_=0), ends)

    # -- section 4 ----------------------------------------------------------
    def cid(self, hash_secret, id_):
        return self.hl("cid", hash_secret + be64(id_))

    def cid_star(self, cid, id_):
        return self.hl("cid*", cid + be64(id_))

    def zeta(self, aes_key, id_, ctr):
        return self.aes_enc(aes_key, be64(id_) + be64(ctr))


def base_w(data, out_len):
    out = []
    for b in data:
        out.append(b >> 4)
        out.append(b & 0x0F)
        if len(out) >= out_len:
            break
    assert len(out) >= out_len
    return out[:out_len]


# ADRS is represented as a dict of its fields; both encodings are built from it.
def make_adrs(type_, chain, hash_):
    return {"layer": LAYER, "tree": TREE, "type": type_, "keypair": KEYPAIR,
            "chain": chain, "hash": hash_}


def adrs_full(a):
    """32-byte SPHINCS+ ADRS: layer, tree[0..3] (96-bit BE), type, keypair, chain, hash."""
    out = (be32(a["layer"]) + a["tree"].to_bytes(12, "big") + be32(a["type"])
           + be32(a["keypair"]) + be32(a["chain"]) + be32(a["hash"]))
    assert len(out) == 32
    return out


def adrs_c(a):
    """22-byte compressed ADRSc: layer(1) tree(8, low 64 bits BE) type(1) keypair chain hash (be32)."""
    out = (bytes([a["layer"] & 0xFF]) + (a["tree"] & (2**64 - 1)).to_bytes(8, "big")
           + bytes([a["type"] & 0xFF]) + be32(a["keypair"]) + be32(a["chain"]) + be32(a["hash"]))
    assert len(out) == 22
    return out


# ---------------------------------------------------------------------------
# Vector generation
# ---------------------------------------------------------------------------


def gen_set(p):
    n = p.n
    obj = {
        "spec": "dgsp-v1",
        "param_set": p.name,
        "param_id": p.id,
        "n": n,
        "wots_len": p.len,
    }

    lh = []
    for label in LABELS:
        for x in (b"", b"\x00", derive(p.name, "hl_input", label, 200)):
            lh.append({"label": label, "input": x.hex(), "output": p.hl(label, x).hex()})
    obj["labelled_hashes"] = lh

    groups = []
    for g in range(2):
        hash_secret = derive(p.name, "hash_secret", str(g), n)
        aes_key = derive(p.name, "aes_key", str(g), n)
        members = []
        for id_ in GROUP_IDS:
            cid = p.cid(hash_secret, id_)
            zetas = []
            for ctr in GROUP_CTRS:
                z = p.zeta(aes_key, id_, ctr)
                # self-check: AES decryption returns (id, ctr)
                assert p.aes_dec(aes_key, z) == be64(id_) + be64(ctr)
                zetas.append({"ctr": ctr, "zeta": z.hex()})
            members.append({"id": id_, "cid": cid.hex(),
                            "cid_star": p.cid_star(cid, id_).hex(), "zetas": zetas})
        groups.append({"hash_secret": hash_secret.hex(), "aes_key": aes_key.hex(),
                       "members": members})
    obj["groups"] = groups

    hash_secret0 = bytes.fromhex(groups[0]["hash_secret"])
    wots = []
    nonzero_checksum = False
    for k, (msg_spec, id_) in enumerate(WOTS_ENTRIES):
        seed_u = derive(p.name, "seed_u", str(k), n)
        wots_seed = derive(p.name, "wots_seed", str(k), n)
        message = msg_spec if msg_spec is not None else derive(p.name, "message", str(k), 1000)
        rho = p.hl("rho", wots_seed)
        sk_seed = p.hl("wots-sk", seed_u + wots_seed)
        pk = p.wots_pk(rho, sk_seed)
        d = p.hl("msg", rho + message)
        digs = p.digits(d)
        assert len(digs) == p.len and all(0 <= x < W for x in digs)
        if any(digs[p.len1:]):
            nonzero_checksum = True
        sig = p.wots_sign(rho, sk_seed, d)
        assert len(sig) == p.len * n
        # self-check: public key from signature reproduces the public key
        assert p.wots_pk_from_sig(rho, sig, d) == pk, "pk_from_sig mismatch"
        cid = p.cid(hash_secret0, id_)
        pi = p.hl("pi", pk + cid)
        tau = p.hl("tau", pk + pi + be64(id_))
        wots.append({
            "seed_u": seed_u.hex(), "wots_seed": wots_seed.hex(), "rho": rho.hex(),
            "sk_seed": sk_seed.hex(), "wots_pk": pk.hex(), "message": message.hex(),
            "digest": d.hex(), "digits": digs, "wots_sig": sig.hex(), "id": id_,
            "cid": cid.hex(), "pi": pi.hex(), "tau": tau.hex(),
        })
    assert nonzero_checksum, f"{p.name}: all checksum digits zero"
    # distinct ids across entries
    assert len({e["id"] for e in wots}) == len(wots)
    obj["wots"] = wots
    if p.fips205:
        obj["manager"] = gen_manager(p, groups, wots)
    return obj


def gen_manager(p, groups, wots):
    """Section 7: FIPS 205 manager key pair and one certificate, signed by the `slhdsa` package."""
    n = p.n
    par = getattr(slh_parameters, p.name[len(SLH_DSA_PREFIX):].replace("-", "_"))
    assert par.n == n, p.name
    sk_seed = derive(p.name, "spx_sk_seed", "0", n)
    sk_prf = derive(p.name, "spx_sk_prf", "0", n)
    pk_seed = derive(p.name, "spx_pk_seed", "0", n)
    # FIPS 205 slh_keygen_internal: PK.root = xmss_node(SK.seed, 0, h', PK.seed, ADRS{layer d-1}).
    pk_root = SlhXMSS(par).node(sk_seed, 0, par.h_m, pk_seed, SlhAddress(par.d - 1, 0))
    assert len(pk_root) == n

    entry = wots[CERT_WOTS_ENTRY]
    id_ = entry["id"]
    aes_key = bytes.fromhex(groups[0]["aes_key"])
    zeta = p.zeta(aes_key, id_, CERT_CTR)
    assert p.aes_dec(aes_key, zeta) == be64(id_) + be64(CERT_CTR)
    message = CERT_PREFIX + bytes.fromhex(entry["wots_pk"]) + zeta + bytes.fromhex(entry["tau"])
    assert len(message) == len(CERT_PREFIX) + n + 16 + n

    # SecretKey() itself recomputes PK.root from the seeds and refuses a mismatch.
    sk = slhdsa.SecretKey((sk_seed, sk_prf, pk_seed, pk_root), par)
    # Pure mode, empty context; randomize=False is the deterministic variant (opt_rand = PK.seed).
    sig = sk.sign_pure(message, randomize=False, ctx=b"")
    assert len(sig) == SPX_SIG_BYTES[p.name[-4:]], (p.name, len(sig))
    pk = slhdsa.PublicKey((pk_seed, pk_root), par)
    assert pk.verify_pure(message, sig, ctx=b""), f"{p.name}: verify_pure rejects"
    flipped = bytearray(message)
    flipped[-1] ^= 0x01
    assert not pk.verify_pure(bytes(flipped), sig, ctx=b""), f"{p.name}: flipped byte accepted"
    # The string actually signed is 0x00 (pure) || 0x00 (context length) || message.
    assert pk.verify(b"\x00\x00" + message, sig), f"{p.name}: not 00 00 || message"

    return {
        "sk_seed": sk_seed.hex(),
        "sk_prf": sk_prf.hex(),
        "pk_seed": pk_seed.hex(),
        "spx_pk": (pk_seed + pk_root).hex(),
        "spx_sk": (sk_seed + sk_prf + pk_seed + pk_root).hex(),
        "addrnd": pk_seed.hex(),
        "certificate": {
            "wots": CERT_WOTS_ENTRY,
            "ctr": CERT_CTR,
            "zeta": zeta.hex(),
            "message": message.hex(),
            "spx_sig": sig.hex(),
        },
    }


def render(p):
    return json.dumps(gen_set(p), indent=1) + "\n"


def render_entry(entry):
    """Pool worker: (file name, JSON text) for one PARAM_SETS entry."""
    pid, name, family, n = entry
    return name + ".json", render(Params(pid, name, family, n))


def self_test():
    """Cheap structural checks that run on every invocation."""
    # ADRS encodings of a known address, by hand.
    a = make_adrs(WOTS_HASH, chain=7, hash_=9)
    assert adrs_full(a) == bytes.fromhex(
        "00000049" "000000000000000000000000" "00000000" "00000000" "00000007" "00000009")
    assert adrs_c(a) == bytes.fromhex("49" "0000000000000000" "00" "00000000" "00000007" "00000009")
    # base_w
    assert base_w(b"\x12\x34", 3) == [1, 2, 3]
    # digits of an all-zero digest: checksum 15*len1, shifted by 4
    for n in (16, 24, 32):
        p = Params(0, "t", "shake", n)
        c = (15 * 2 * n) << 4
        assert p.digits(bytes(n))[2 * n:] == [c >> 12, (c >> 8) & 15, (c >> 4) & 15]
        assert p.digits(b"\xff" * n)[2 * n:] == [0, 0, 0]
    # F/T/PRF input lengths and one F value recomputed directly from the spec formula
    rho = bytes(range(32))
    for pid, name, family, n in PARAM_SETS:
        p = Params(pid, name, family, n)
        p.trace = []
        x = bytes([0xAB]) * n
        f = p.F(rho[:n], make_adrs(WOTS_HASH, 3, 4), x)
        p.T(rho[:n], make_adrs(WOTS_PK, 0, 0), x * p.len)
        p.PRF(rho[:n], make_adrs(WOTS_PRF, 3, 0), x)
        if family == "shake":
            adrs = (be32(73) + bytes(12) + be32(0) + be32(0) + be32(3) + be32(4))
            ref = hashlib.shake_256(rho[:n] + adrs + x).digest(n)
            want = [("shake256", n + 32 + n), ("shake256", n + 32 + p.len * n),
                    ("shake256", n + 32 + n)]
        else:
            adrsc = bytes([73]) + bytes(8) + bytes([0]) + be32(0) + be32(3) + be32(4)
            ref = hashlib.sha256(rho[:n] + bytes(64 - n) + adrsc + x).digest()[:n]
            t = ("sha256", 64 + 22 + p.len * n) if n == 16 else ("sha512", 128 + 22 + p.len * n)
            want = [("sha256", 64 + 22 + n), t, ("sha256", 64 + 22 + n)]
        assert f == ref, name
        assert p.trace == want, (name, p.trace, want)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="output directory (default: this script's directory)")
    ap.add_argument("--check", action="store_true",
                    help="compare regenerated vectors with the files in --out; exit 1 on mismatch")
    args = ap.parse_args()

    if slhdsa is None:
        sys.exit("gen_vectors.py: the Python package 'slh-dsa' (import name slhdsa) is missing;"
                 " install it with: python3 -m pip install slh-dsa==0.2.5")

    self_test()
    # One process per CPU; the FIPS 205 "s" sets (seconds each) go first, then the rest.
    order = sorted(PARAM_SETS, key=lambda s: (s[1].startswith(SLH_DSA_PREFIX),
                                              s[1].endswith("s"), s[3]), reverse=True)
    with multiprocessing.Pool(processes=os.cpu_count()) as pool:
        rendered = dict(pool.imap_unordered(render_entry, order, chunksize=1))
    outputs = {name + ".json": rendered[name + ".json"] for _, name, _, _ in PARAM_SETS}

    if args.check:
        bad = []
        for fname, text in outputs.items():
            path = os.path.join(args.out, fname)
            if not os.path.exists(path):
                bad.append(f"missing: {path}")
                continue
            with open(path, "rb") as fh:
                if fh.read() != text.encode():
                    bad.append(f"differs: {path}")
        if bad:
            print("\n".join(bad))
            return 1
        print(f"vectors up to date ({len(outputs)} files)")
        return 0

    os.makedirs(args.out, exist_ok=True)
    for fname, text in outputs.items():
        with open(os.path.join(args.out, fname), "wb") as fh:
            fh.write(text.encode())
    print(f"wrote {len(outputs)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
