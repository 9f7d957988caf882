package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/tlog"
)

type clientOut struct {
	Source           string        `json:"source"`
	Origin           string        `json:"origin"`
	Size             int64         `json:"size"`
	Root             string        `json:"root"`
	TimeUnixMs       *uint64       `json:"time_unix_ms,omitempty"`
	Snapshot         *snapshotOut  `json:"snapshot,omitempty"`
	Signature        string        `json:"signature"`
	SignatureLines   []sigLine     `json:"signature_lines"`
	RootFromTiles    string        `json:"root_from_tiles"`
	Verified         []verifiedOut `json:"verified"`
	EntriesRead      int64         `json:"entries_read"`
	RootFromEntries  string        `json:"root_from_entries,omitempty"`
	TilesFetched     int64         `json:"tiles_fetched"`
	PartialFallbacks int64         `json:"partial_tile_fallbacks"`
}

type snapshotOut struct {
	Number uint64 `json:"number"`
	Hash   string `json:"hash"`
}

type sigLine struct {
	Name  string `json:"name"`
	KeyID string `json:"key_id"`
	Bytes int    `json:"signature_bytes"`
}

type verifiedOut struct {
	Index       int64    `json:"index"`
	LeafHash    string   `json:"leaf_hash"`
	EntrySHA256 string   `json:"entry_sha256"`
	EntrySize   int      `json:"entry_size"`
	Proof       []string `json:"proof"`
}

type indexList []int64

func (l *indexList) String() string { return fmt.Sprint([]int64(*l)) }
func (l *indexList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		i, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || i < 0 {
			return fmt.Errorf("--index %q: not a non-negative integer", part)
		}
		*l = append(*l, i)
	}
	return nil
}

// note is a parsed signed note in the registry's layout (docs/checkpoints.md).
type note struct {
	cp       torchwood.Checkpoint
	timeMs   *uint64
	snapshot *snapshotOut
	sigs     []sigLine
}

// canonicalUint parses a decimal without sign or leading zeros.
func canonicalUint(s string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && strconv.FormatUint(v, 10) == s
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseNote splits a signed note (c2sp.org/signed-note) into its checkpoint body
// (c2sp.org/tlog-checkpoint, parsed by torchwood) and its signature lines. The
// signatures are SPHINCS+, which no Go library here can check: they are only parsed.
func parseNote(text []byte) (*note, error) {
	if !utf8.Valid(text) {
		return nil, errors.New("checkpoint: not UTF-8")
	}
	split := bytes.LastIndex(text, []byte("\n\n"))
	if split < 0 {
		return nil, errors.New("checkpoint: no blank line between body and signatures: not a signed note")
	}
	body, sigs := string(text[:split+1]), string(text[split+2:])
	cp, err := torchwood.ParseCheckpoint(body)
	if err != nil {
		return nil, fmt.Errorf("checkpoint body: %v (%q)", err, body)
	}
	if cp.Origin == "" {
		return nil, errors.New("checkpoint body: empty origin line")
	}
	n := &note{cp: cp}

	// Extension lines: `time <ms>` then `snapshot <n> <hex>`, each optional, in this
	// order, nothing else (docs/checkpoints.md: any other body line is malformed).
	ext := strings.Split(strings.TrimSuffix(cp.Extension, "\n"), "\n")
	if cp.Extension == "" {
		ext = nil
	}
	if len(ext) > 0 {
		if v, ok := strings.CutPrefix(ext[0], "time "); ok {
			t, ok := canonicalUint(v)
			if !ok {
				return nil, fmt.Errorf("checkpoint body: malformed line %q", ext[0])
			}
			n.timeMs = &t
			ext = ext[1:]
		}
	}
	if len(ext) > 0 {
		if v, ok := strings.CutPrefix(ext[0], "snapshot "); ok {
			f := strings.Split(v, " ")
			num, ok := uint64(0), false
			if len(f) == 2 {
				num, ok = canonicalUint(f[0])
			}
			if !ok || !isLowerHex(f[1], 64) {
				return nil, fmt.Errorf("checkpoint body: malformed line %q", ext[0])
			}
			n.snapshot = &snapshotOut{num, f[1]}
			ext = ext[1:]
		}
	}
	if len(ext) > 0 {
		return nil, fmt.Errorf("checkpoint body: unexpected line %q (only `time`, then `snapshot`, may follow the root)", ext[0])
	}

	// Signature lines: "— <name> <base64(key id (4 bytes) || signature)>\n".
	if sigs == "" || !strings.HasSuffix(sigs, "\n") {
		return nil, errors.New("checkpoint: no signature lines, or the last one has no newline")
	}
	for _, line := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, "\u2014 ")
		f := strings.Split(rest, " ")
		if !ok || len(f) != 2 || f[0] == "" {
			return nil, fmt.Errorf("checkpoint: malformed signature line %q", line)
		}
		sig, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil || len(sig) < 5 {
			return nil, fmt.Errorf("checkpoint: signature line %q: not base64 of a key id and a signature", line)
		}
		n.sigs = append(n.sigs, sigLine{f[0], hex.EncodeToString(sig[:4]), len(sig) - 4})
	}
	return n, nil
}

// dirReader reads the tiles layout from a directory, as a static server would serve it.
type dirReader struct{ dir string }

func (d dirReader) ReadTiles(ctx context.Context, tiles []tlog.Tile) ([][]byte, error) {
	data := make([][]byte, len(tiles))
	for i, t := range tiles {
		var err error
		if data[i], err = d.ReadEndpoint(ctx, torchwood.TilePath(t)); err != nil {
			return nil, err
		}
	}
	return data, nil
}

func (d dirReader) SaveTiles([]tlog.Tile, [][]byte) {}

func (d dirReader) ReadEndpoint(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(path)))
}

// reader wraps the HTTP or directory reader: it counts tiles, marks every read
// failure as a fetchError (exit 3), and falls back to the full tile when a partial
// tile is gone (c2sp.org/tlog-tiles: a log MAY delete a partial tile once the full
// one exists; clients MAY fetch the full tile instead).
type reader struct {
	tr        torchwood.TileReader
	fetched   atomic.Int64
	fallbacks atomic.Int64
}

func (r *reader) ReadTiles(ctx context.Context, tiles []tlog.Tile) ([][]byte, error) {
	r.fetched.Add(int64(len(tiles)))
	if data, err := r.tr.ReadTiles(ctx, tiles); err == nil {
		return data, nil
	}
	data := make([][]byte, len(tiles))
	for i, t := range tiles {
		d, err := r.tr.ReadTiles(ctx, []tlog.Tile{t})
		if err == nil {
			data[i] = d[0]
			continue
		}
		if t.W == torchwood.TileWidth {
			return nil, &fetchError{err}
		}
		full := t
		full.W = torchwood.TileWidth
		d, ferr := r.tr.ReadTiles(ctx, []tlog.Tile{full})
		if ferr != nil {
			return nil, &fetchError{fmt.Errorf("%w (and the full tile %s: %v)", err, torchwood.TilePath(full), ferr)}
		}
		r.fallbacks.Add(1)
		if data[i], err = truncateTile(t, d[0]); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// truncateTile cuts the first t.W hashes or entries out of the full tile.
func truncateTile(t tlog.Tile, full []byte) ([]byte, error) {
	if t.L >= 0 {
		if len(full) != torchwood.TileWidth*tlog.HashSize {
			return nil, fmt.Errorf("full tile %s: %d bytes, want %d", torchwood.TilePath(t), len(full), torchwood.TileWidth*tlog.HashSize)
		}
		return full[:t.W*tlog.HashSize], nil
	}
	rest := full
	for i := 0; i < t.W; i++ {
		var err error
		if _, rest, err = torchwood.ReadTileEntry(rest); err != nil {
			return nil, fmt.Errorf("full entry bundle for %s: entry %d: %v", torchwood.TilePath(t), i, err)
		}
	}
	return full[:len(full)-len(rest)], nil
}

func (r *reader) SaveTiles(tiles []tlog.Tile, data [][]byte) { r.tr.SaveTiles(tiles, data) }

func (r *reader) ReadEndpoint(ctx context.Context, path string) ([]byte, error) {
	d, err := r.tr.ReadEndpoint(ctx, path)
	if err != nil {
		return nil, &fetchError{err}
	}
	return d, nil
}

func runClient(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("url", "", "base URL: BASE/checkpoint and BASE/tile/...")
	dir := fs.String("dir", "", "directory with the same layout (instead of --url)")
	var indexes indexList
	fs.Var(&indexes, "index", "entry to prove (repeatable, or comma-separated)")
	all := fs.Bool("all", false, "read and verify every entry, and recompute the root from them")
	origin := fs.String("origin", "", "fail unless the checkpoint's origin is this")
	timeout := fs.Duration("timeout", 2*time.Minute, "limit for the whole run")
	if err := fs.Parse(args); err != nil {
		return &usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if (*base == "") == (*dir == "") {
		return &usageError{"give exactly one of --url and --dir"}
	}
	out := &clientOut{Signature: "not checked (SPHINCS+)", Verified: []verifiedOut{}}
	var inner torchwood.TileReader
	if *base != "" {
		u, err := url.Parse(*base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &usageError{fmt.Sprintf("--url %q: not an http(s) URL", *base)}
		}
		tf, err := torchwood.NewTileFetcher(*base, torchwood.WithUserAgent("dgsp-tlogclient"),
			torchwood.WithConcurrencyLimit(8))
		if err != nil {
			return &usageError{err.Error()}
		}
		inner, out.Source = tf, *base
	} else {
		if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
			return &usageError{fmt.Sprintf("--dir %q: not a directory", *dir)}
		}
		inner, out.Source = dirReader{*dir}, *dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	r := &reader{tr: inner}
	err := check(ctx, r, out, indexes, *all, *origin, *timeout)
	out.TilesFetched, out.PartialFallbacks = r.fetched.Load(), r.fallbacks.Load()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return &fetchError{fmt.Errorf("gave up after --timeout %v: %w", *timeout, err)}
		}
		return err
	}
	return writeJSON(stdout, out)
}

func check(ctx context.Context, r *reader, out *clientOut, indexes []int64, all bool, wantOrigin string, timeout time.Duration) error {
	raw, err := r.ReadEndpoint(ctx, "checkpoint")
	if err != nil {
		return err
	}
	n, err := parseNote(raw)
	if err != nil {
		return err
	}
	tree := n.cp.Tree
	out.Origin, out.Size, out.Root = n.cp.Origin, tree.N, hex.EncodeToString(tree.Hash[:])
	out.TimeUnixMs, out.Snapshot, out.SignatureLines = n.timeMs, n.snapshot, n.sigs
	if wantOrigin != "" && n.cp.Origin != wantOrigin {
		return fmt.Errorf("checkpoint origin %q, want %q", n.cp.Origin, wantOrigin)
	}

	// The root, recomputed from the hash tiles of the tree's right edge (torchwood's
	// tile hash reader authenticates every tile it returns against the checkpoint).
	th, err := tlog.TreeHash(tree.N, torchwood.TileHashReaderWithContext(ctx, tree, r))
	if err != nil {
		return fmt.Errorf("hash tiles for size %d do not give the checkpoint's root: %w", tree.N, err)
	}
	out.RootFromTiles = hex.EncodeToString(th[:])
	if th != tree.Hash {
		return fmt.Errorf("root from the tiles %s, checkpoint says %s", out.RootFromTiles, out.Root)
	}

	c, err := torchwood.NewClient(r, torchwood.WithTimeout(timeout))
	if err != nil {
		return err
	}
	for _, idx := range indexes {
		if idx >= tree.N {
			return fmt.Errorf("--index %d: outside the checkpoint's tree of size %d", idx, tree.N)
		}
		entry, rp, err := c.Entry(ctx, tree, idx)
		if err != nil {
			return fmt.Errorf("entry %d: %w", idx, err)
		}
		// A second, independent check of the proof torchwood built and checked.
		lh := tlog.RecordHash(entry)
		pf := make([][]byte, len(rp))
		for i := range rp {
			pf[i] = rp[i][:]
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(idx), uint64(tree.N), lh[:], pf, tree.Hash[:]); err != nil {
			return fmt.Errorf("entry %d: inclusion proof rejected by transparency-dev/merkle: %v", idx, err)
		}
		sum := sha256.Sum256(entry)
		out.Verified = append(out.Verified, verifiedOut{
			Index: idx, LeafHash: hex.EncodeToString(lh[:]), EntrySHA256: hex.EncodeToString(sum[:]),
			EntrySize: len(entry), Proof: hexAll(pf),
		})
	}

	if all {
		// Every entry through torchwood's verified iterator (each entry's hash checked
		// against authenticated level-0 tiles), and the root recomputed from them.
		mt := testonly.New(rfc6962.DefaultHasher)
		next := int64(0)
		for next < tree.N {
			before := next
			for i, entry := range c.Entries(ctx, tree, next) {
				if i != next {
					return fmt.Errorf("entry iterator yielded entry %d, want %d", i, next)
				}
				mt.AppendData(entry)
				next++
			}
			if err := c.Err(); err != nil {
				return fmt.Errorf("reading entries from %d: %w", next, err)
			}
			if next == before {
				return fmt.Errorf("entry iterator stopped at entry %d of %d", next, tree.N)
			}
		}
		out.EntriesRead = next
		out.RootFromEntries = hex.EncodeToString(mt.Hash())
		if !bytes.Equal(mt.Hash(), tree.Hash[:]) {
			return fmt.Errorf("root recomputed from all %d entries %s, checkpoint says %s", next, out.RootFromEntries, out.Root)
		}
	}
	return nil
}
