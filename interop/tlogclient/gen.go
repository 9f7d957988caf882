package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"
)

type genOut struct {
	Dir            string `json:"dir"`
	Origin         string `json:"origin"`
	Entries        int64  `json:"entries"`
	CheckpointSize int64  `json:"checkpoint_size"`
	Root           string `json:"root"`
	Files          int    `json:"files"`
}

// genEntry is entry i of a generated log: 0 to 299 pseudo-random bytes (entry 1 is
// empty, so the zero-length case is always there once n > 1).
func genEntry(seed string, i int64) []byte {
	size := int(mix(uint64(i)^0x5eed) % 300)
	if i == 1 {
		size = 0
	}
	var out []byte
	for block := uint64(0); len(out) < size; block++ {
		h := sha256.New()
		h.Write([]byte(seed))
		_ = binary.Write(h, binary.BigEndian, uint64(i))
		_ = binary.Write(h, binary.BigEndian, block)
		out = h.Sum(out)
	}
	return out[:size]
}

// genCheckpoint is a note in the registry's layout (docs/checkpoints.md): the C2SP
// checkpoint body, the `time` and `snapshot` extension lines, a blank line and one
// signature line whose bytes are NOT a signature (nobody can check them here either).
func genCheckpoint(origin string, size int64, root tlog.Hash, seed string) string {
	snap := sha256.Sum256([]byte("snapshot " + seed))
	body := torchwood.Checkpoint{
		Origin:    origin,
		Tree:      tlog.Tree{N: size, Hash: root},
		Extension: fmt.Sprintf("time %d\nsnapshot %d %x\n", 1764000000123+size, 1+size/100, snap),
	}.String()
	fake := sha256.Sum256([]byte("not a signature " + body))
	sig := append([]byte{0xab, 0xcd, 0x00, 0x01}, fake[:]...)
	return body + "\n\u2014 " + origin + " " + base64.StdEncoding.EncodeToString(sig) + "\n"
}

func runGen(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "", "directory to write the layout into (created)")
	n := fs.Int64("n", -1, "number of entries")
	seed := fs.String("seed", "dgsp-interop", "seed of the pseudo-random entries")
	cpSize := fs.Int64("checkpoint-size", -1, "size the checkpoint covers (default: n)")
	noPartial := fs.Bool("no-partial", false, "with --checkpoint-size < n: leave out that size's partial tiles whose full tile exists (a log that deleted them)")
	origin := fs.String("origin", "", "checkpoint origin (default: dgsp/<hex of the seed's hash>)")
	if err := fs.Parse(args); err != nil {
		return &usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *dir == "" || *n < 0 {
		return &usageError{"gen needs --dir and --n"}
	}
	if *cpSize < 0 {
		*cpSize = *n
	}
	if *cpSize > *n {
		return &usageError{"--checkpoint-size must not exceed --n"}
	}
	if *origin == "" {
		s := sha256.Sum256([]byte(*seed))
		*origin = "dgsp/" + hex.EncodeToString(s[:16])
	}
	if strings.ContainsAny(*origin, "\n ") {
		return &usageError{"--origin must not contain spaces or newlines"}
	}

	entries := make([][]byte, *n)
	tree := &sumdbTree{}
	for i := range entries {
		entries[i] = genEntry(*seed, int64(i))
		if err := tree.append(int64(i), tlog.RecordHash(entries[i])); err != nil {
			return err
		}
	}
	root, err := tlog.TreeHash(*cpSize, tree)
	if err != nil {
		return err
	}

	// Every tile of the tree of size n, and, unless told not to, the partial tiles of
	// the checkpoint's size as well (a log keeps those until the full tiles exist).
	// With --no-partial, only those whose full tile exists are left out (the spec lets
	// a log delete a partial tile once the full one is available, not before).
	tiles := tlog.NewTiles(torchwood.TileHeight, 0, *n)
	have := map[tlog.Tile]bool{}
	for _, t := range tiles {
		have[t] = true
	}
	if *cpSize < *n {
		for _, t := range tlog.NewTiles(torchwood.TileHeight, 0, *cpSize) {
			full := t
			full.W = torchwood.TileWidth
			if t.W < torchwood.TileWidth && !(*noPartial && have[full]) {
				tiles = append(tiles, t)
			}
		}
	}
	files := 0
	write := func(rel string, data []byte) error {
		p := filepath.Join(*dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		files++
		return os.WriteFile(p, data, 0o644)
	}
	for _, t := range tiles {
		data, err := tlog.ReadTileData(t, tree)
		if err != nil {
			return err
		}
		if err := write(torchwood.TilePath(t), data); err != nil {
			return err
		}
		if t.L != 0 {
			continue
		}
		// The entry bundle beside each level-0 tile.
		var bundle []byte
		for i := t.N * torchwood.TileWidth; i < t.N*torchwood.TileWidth+int64(t.W); i++ {
			if bundle, err = torchwood.AppendTileEntry(bundle, entries[i]); err != nil {
				return err
			}
		}
		dt := t
		dt.L = -1
		if err := write(torchwood.TilePath(dt), bundle); err != nil {
			return err
		}
	}
	if err := write("checkpoint", []byte(genCheckpoint(*origin, *cpSize, root, *seed))); err != nil {
		return err
	}
	return writeJSON(stdout, genOut{
		Dir: *dir, Origin: *origin, Entries: *n, CheckpointSize: *cpSize,
		Root: hex.EncodeToString(root[:]), Files: files,
	})
}
