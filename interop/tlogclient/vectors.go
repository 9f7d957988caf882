package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/tlog"
)

// The vectors: every root, and inclusion and consistency proofs for a deterministic
// spread of sizes, computed with transparency-dev/merkle and cross-checked against
// golang.org/x/mod/sumdb/tlog (the two must agree byte for byte, or the command fails).
type vectorsOut struct {
	Hasher          string           `json:"hasher"`
	Implementations []string         `json:"implementations"`
	Count           int              `json:"count"`
	EmptyRoot       string           `json:"empty_root"`
	LeafHashes      []string         `json:"leaf_hashes"`
	Roots           []rootVec        `json:"roots"`
	Inclusion       []inclusionVec   `json:"inclusion"`
	Consistency     []consistencyVec `json:"consistency"`
}

type rootVec struct {
	Size uint64 `json:"size"`
	Root string `json:"root"`
}

type inclusionVec struct {
	Index uint64   `json:"index"`
	Size  uint64   `json:"size"`
	Proof []string `json:"proof"`
}

type consistencyVec struct {
	OldSize uint64   `json:"old_size"`
	NewSize uint64   `json:"new_size"`
	Proof   []string `json:"proof"`
}

// readLeaves reads one hex-encoded entry per line; an empty line is an empty entry,
// a final newline ends the last line (it does not add an entry).
func readLeaves(r io.Reader) ([][]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	var leaves [][]byte
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSuffix(sc.Text(), "\r")
		b, err := hex.DecodeString(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("stdin line %d: not hex: %v", line, err)
		}
		leaves = append(leaves, b)
	}
	if err := sc.Err(); err != nil {
		return nil, &fetchError{fmt.Errorf("reading stdin: %w", err)}
	}
	return leaves, nil
}

func runVectors(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("vectors", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return &usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	leaves, err := readLeaves(stdin)
	if err != nil {
		return err
	}
	out, err := computeVectors(leaves)
	if err != nil {
		return err
	}
	return writeJSON(stdout, out)
}

// sumdbTree is the same log in golang.org/x/mod/sumdb/tlog's stored-hash layout.
type sumdbTree struct{ stored []tlog.Hash }

func (t *sumdbTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(t.stored)) {
			return nil, fmt.Errorf("stored hash %d not present", x)
		}
		out[i] = t.stored[x]
	}
	return out, nil
}

func (t *sumdbTree) append(n int64, leafHash tlog.Hash) error {
	hs, err := tlog.StoredHashesForRecordHash(n, leafHash, t)
	if err != nil {
		return err
	}
	t.stored = append(t.stored, hs...)
	return nil
}

func hexAll(hs [][]byte) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = hex.EncodeToString(h)
	}
	return out
}

func sameHashes(a [][]byte, b []tlog.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i][:]) {
			return false
		}
	}
	return true
}

func computeVectors(leaves [][]byte) (*vectorsOut, error) {
	h := rfc6962.DefaultHasher
	tree := testonly.New(h)
	sumdb := &sumdbTree{}
	out := &vectorsOut{
		Hasher: "RFC 6962 / RFC 9162 SHA-256 (leaf 0x00, node 0x01)",
		Implementations: []string{
			"github.com/transparency-dev/merkle v0.0.2 (testonly.Tree, proof)",
			"golang.org/x/mod/sumdb/tlog (TreeHash, ProveRecord, ProveTree): cross-checked",
		},
		Count:       len(leaves),
		EmptyRoot:   hex.EncodeToString(h.EmptyRoot()),
		LeafHashes:  []string{},
		Roots:       []rootVec{},
		Inclusion:   []inclusionVec{},
		Consistency: []consistencyVec{},
	}
	if th, err := tlog.TreeHash(0, sumdb); err != nil || !bytes.Equal(th[:], h.EmptyRoot()) {
		return nil, fmt.Errorf("empty root: transparency-dev %x, x/mod tlog %x (%v)", h.EmptyRoot(), th, err)
	}
	for i, data := range leaves {
		lh := h.HashLeaf(data)
		if rh := tlog.RecordHash(data); !bytes.Equal(lh, rh[:]) {
			return nil, fmt.Errorf("leaf %d: transparency-dev %x, x/mod tlog %x", i, lh, rh)
		}
		tree.Append(lh)
		if err := sumdb.append(int64(i), tlog.Hash(lh)); err != nil {
			return nil, err
		}
		out.LeafHashes = append(out.LeafHashes, hex.EncodeToString(lh))
	}

	n := uint64(len(leaves))
	for size := uint64(1); size <= n; size++ {
		root := tree.HashAt(size)
		th, err := tlog.TreeHash(int64(size), sumdb)
		if err != nil || !bytes.Equal(root, th[:]) {
			return nil, fmt.Errorf("root(%d): transparency-dev %x, x/mod tlog %x (%v)", size, root, th, err)
		}
		out.Roots = append(out.Roots, rootVec{size, hex.EncodeToString(root)})
	}

	for _, p := range inclusionPairs(n) {
		index, size := p[0], p[1]
		pf, err := tree.InclusionProof(index, size)
		if err != nil {
			return nil, fmt.Errorf("inclusion(%d, %d): %v", index, size, err)
		}
		if err := proof.VerifyInclusion(h, index, size, tree.LeafHash(index), pf, tree.HashAt(size)); err != nil {
			return nil, fmt.Errorf("inclusion(%d, %d) does not verify: %v", index, size, err)
		}
		rp, err := tlog.ProveRecord(int64(size), int64(index), sumdb)
		if err != nil || !sameHashes(pf, rp) {
			return nil, fmt.Errorf("inclusion(%d, %d): transparency-dev and x/mod tlog differ (%v)", index, size, err)
		}
		out.Inclusion = append(out.Inclusion, inclusionVec{index, size, hexAll(pf)})
	}

	for _, p := range consistencyPairs(n) {
		m, size := p[0], p[1]
		pf, err := tree.ConsistencyProof(m, size)
		if err != nil {
			return nil, fmt.Errorf("consistency(%d, %d): %v", m, size, err)
		}
		if err := proof.VerifyConsistency(h, m, size, pf, tree.HashAt(m), tree.HashAt(size)); err != nil {
			return nil, fmt.Errorf("consistency(%d, %d) does not verify: %v", m, size, err)
		}
		tp, err := tlog.ProveTree(int64(size), int64(m), sumdb)
		if err != nil || !sameHashes(pf, tp) {
			return nil, fmt.Errorf("consistency(%d, %d): transparency-dev and x/mod tlog differ (%v)", m, size, err)
		}
		out.Consistency = append(out.Consistency, consistencyVec{m, size, hexAll(pf)})
	}
	return out, nil
}

// mix is a fixed 64-bit mixer (splitmix64's finaliser): the spread is the same on
// every run and every machine.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// interestingSizes: every size up to 40, powers of two and their neighbours, every 37th,
// and the last two.
func interestingSizes(n uint64) []uint64 {
	set := map[uint64]bool{}
	for s := uint64(1); s <= n && s <= 40; s++ {
		set[s] = true
	}
	for p := uint64(1); p <= 2*n; p *= 2 {
		for _, s := range []uint64{p - 1, p, p + 1} {
			if s >= 1 && s <= n {
				set[s] = true
			}
		}
	}
	for s := uint64(37); s <= n; s += 37 {
		set[s] = true
	}
	for _, s := range []uint64{n - 1, n} {
		if s >= 1 && s <= n {
			set[s] = true
		}
	}
	return sortedKeys(set)
}

func sortedKeys(set map[uint64]bool) []uint64 {
	out := make([]uint64, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// edgeValues are the values in [lo, hi] worth testing against a tree of size n: the
// ends, the middle, powers of two and their neighbours, and three pseudo-random ones.
func edgeValues(lo, hi, n uint64) []uint64 {
	set := map[uint64]bool{}
	add := func(v uint64) {
		if v >= lo && v <= hi {
			set[v] = true
		}
	}
	for _, v := range []uint64{lo, lo + 1, lo + 2, hi / 2, hi/2 + 1, hi - 2, hi - 1, hi} {
		add(v)
	}
	for p := uint64(1); p <= hi; p *= 2 {
		add(p - 1)
		add(p)
		add(p + 1)
	}
	for k := uint64(0); k < 3; k++ {
		add(lo + mix(n*1000+k)%(hi-lo+1))
	}
	return sortedKeys(set)
}

// inclusionPairs: (index, size) with every index for sizes up to 40, a spread above.
func inclusionPairs(n uint64) [][2]uint64 {
	var out [][2]uint64
	for _, size := range interestingSizes(n) {
		var idx []uint64
		if size <= 40 {
			for i := uint64(0); i < size; i++ {
				idx = append(idx, i)
			}
		} else {
			idx = edgeValues(0, size-1, size)
		}
		for _, i := range idx {
			out = append(out, [2]uint64{i, size})
		}
	}
	return out
}

// consistencyPairs: (old, new) with 1 <= old <= new, every old for new up to 24, a
// spread above.
func consistencyPairs(n uint64) [][2]uint64 {
	var out [][2]uint64
	for _, size := range interestingSizes(n) {
		var olds []uint64
		if size <= 24 {
			for m := uint64(1); m <= size; m++ {
				olds = append(olds, m)
			}
		} else {
			olds = edgeValues(1, size, size+7)
		}
		for _, m := range olds {
			out = append(out, [2]uint64{m, size})
		}
	}
	return out
}
