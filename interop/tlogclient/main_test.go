package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func runT(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// The RFC 6962 test leaves and the roots every implementation publishes for them
// (e.g. transparency-dev/merkle's testonly/constants.go).
func TestVectorsKnownAnswers(t *testing.T) {
	in := "\n00\n10\n2021\n3031\n40414243\n5051525354555657\n606162636465666768696a6b6c6d6e6f\n"
	code, stdout, stderr := runT(t, in, "vectors")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v vectorsOut
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{
		1: "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		2: "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		8: "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	}
	for _, r := range v.Roots {
		if w, ok := want[r.Size]; ok && r.Root != w {
			t.Errorf("root(%d) = %s, want %s", r.Size, r.Root, w)
		}
	}
	if v.Count != 8 || len(v.Roots) != 8 || v.EmptyRoot != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("count %d, roots %d, empty root %s", v.Count, len(v.Roots), v.EmptyRoot)
	}
	if len(v.Inclusion) != 36 || len(v.Consistency) != 36 {
		t.Errorf("%d inclusion and %d consistency proofs, want 36 and 36", len(v.Inclusion), len(v.Consistency))
	}
	// Deterministic.
	if _, again, _ := runT(t, in, "vectors"); again != stdout {
		t.Error("two runs differ")
	}
	if code, _, _ := runT(t, "zz\n", "vectors"); code != exitMismatch {
		t.Errorf("non-hex input: exit %d, want 1", code)
	}
}

func gen(t *testing.T, args ...string) (string, genOut) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	code, stdout, stderr := runT(t, "", append([]string{"gen", "--dir", dir}, args...)...)
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	var g genOut
	if err := json.Unmarshal([]byte(stdout), &g); err != nil {
		t.Fatal(err)
	}
	return dir, g
}

func client(t *testing.T, wantCode int, args ...string) clientOut {
	t.Helper()
	code, stdout, stderr := runT(t, "", append([]string{"client"}, args...)...)
	if code != wantCode {
		t.Fatalf("client %v: exit %d, want %d: %s%s", args, code, wantCode, stderr, stdout)
	}
	var c clientOut
	if code == 0 {
		if err := json.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatal(err)
		}
	} else if stderr == "" {
		t.Fatal("no message on failure")
	}
	return c
}

func TestClientOnGeneratedLogs(t *testing.T) {
	for _, n := range []string{"0", "1", "2", "255", "256", "257", "511", "513", "65536", "65793"} {
		t.Run(n, func(t *testing.T) {
			dir, g := gen(t, "--n", n)
			args := []string{"--dir", dir, "--all"}
			if g.Entries > 0 {
				args = append(args, "--index", "0", "--index", strconv.FormatInt(g.Entries-1, 10))
			}
			c := client(t, 0, args...)
			if c.Size != g.Entries || c.Root != g.Root || c.RootFromTiles != g.Root || c.EntriesRead != g.Entries {
				t.Fatalf("client %+v, gen %+v", c, g)
			}
			if g.Entries > 0 && (c.RootFromEntries != g.Root || len(c.Verified) != 2) {
				t.Fatalf("client %+v", c)
			}
			if c.Signature != "not checked (SPHINCS+)" || len(c.SignatureLines) != 1 || c.TimeUnixMs == nil || c.Snapshot == nil {
				t.Fatalf("checkpoint fields %+v", c)
			}
		})
	}
}

func TestClientOverHTTP(t *testing.T) {
	dir, g := gen(t, "--n", "1000")
	srv := httptest.NewServer(http.StripPrefix("/log", http.FileServer(http.Dir(dir))))
	defer srv.Close()
	c := client(t, 0, "--url", srv.URL+"/log", "--index", "999,3", "--all", "--origin", g.Origin)
	if c.Root != g.Root || c.EntriesRead != 1000 || len(c.Verified) != 2 || c.Verified[0].Index != 999 {
		t.Fatalf("%+v", c)
	}
	client(t, exitMismatch, "--url", srv.URL+"/log", "--origin", "someone/else")
	client(t, exitFetch, "--url", srv.URL+"/nothing", "--timeout", "5s")
}

// A checkpoint older than the tiles, whose partial tiles were deleted: the client
// falls back to the full tiles.
func TestClientFallsBackToFullTiles(t *testing.T) {
	dir, g := gen(t, "--n", "600", "--checkpoint-size", "300", "--no-partial")
	c := client(t, 0, "--dir", dir, "--all", "--index", "299")
	if c.Size != 300 || c.Root != g.Root || c.PartialFallbacks == 0 || c.EntriesRead != 300 {
		t.Fatalf("%+v", c)
	}
	// Size 300's partial level-0 tile 001.p/44 is gone, its full tile 001 is there
	// (600 = 2 full level-0 tiles + 0/002.p/88); without that full tile it fails.
	if err := os.Remove(filepath.Join(dir, "tile", "0", "001")); err != nil {
		t.Fatal(err)
	}
	client(t, exitFetch, "--dir", dir)
}

func TestClientRejectsTampering(t *testing.T) {
	flip := func(t *testing.T, dir, rel string, at int) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if at < 0 {
			at += len(b)
		}
		b[at] ^= 1
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		edit func(t *testing.T, dir string)
		args []string
		code int
	}{
		{"entry byte", func(t *testing.T, d string) { flip(t, d, "tile/entries/001.p/44", 10) }, []string{"--all"}, exitMismatch},
		{"entry byte, by index", func(t *testing.T, d string) { flip(t, d, "tile/entries/000", 2) }, []string{"--index", "0"}, exitMismatch},
		{"entry length", func(t *testing.T, d string) { flip(t, d, "tile/entries/000", 0) }, []string{"--all"}, exitMismatch},
		{"level-0 hash", func(t *testing.T, d string) { flip(t, d, "tile/0/000", 100) }, []string{"--index", "7"}, exitMismatch},
		{"right-edge hash", func(t *testing.T, d string) { flip(t, d, "tile/0/001.p/44", -1) }, nil, exitMismatch},
		{"level-1 hash", func(t *testing.T, d string) { flip(t, d, "tile/1/000.p/1", 5) }, nil, exitMismatch},
		{"checkpoint root", func(t *testing.T, d string) {
			rewrite(t, d, func(s string) string {
				lines := strings.SplitN(s, "\n", 4)
				lines[2] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
				return strings.Join(lines, "\n")
			})
		}, nil, exitMismatch},
		{"checkpoint size", func(t *testing.T, d string) {
			rewrite(t, d, func(s string) string { return strings.Replace(s, "\n300\n", "\n256\n", 1) })
		}, nil, exitMismatch},
		{"unknown extension line", func(t *testing.T, d string) {
			rewrite(t, d, func(s string) string { return strings.Replace(s, "\ntime ", "\nextra\ntime ", 1) })
		}, nil, exitMismatch},
		{"upper-case snapshot hash", func(t *testing.T, d string) {
			rewrite(t, d, func(s string) string {
				i := strings.Index(s, "snapshot ")
				return s[:i] + strings.ToUpper(s[i:i+40]) + s[i+40:]
			})
		}, nil, exitMismatch},
		{"no signature", func(t *testing.T, d string) {
			rewrite(t, d, func(s string) string { return s[:strings.Index(s, "\n\n")+1] })
		}, nil, exitMismatch},
		{"missing tile", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "tile", "0", "000")) }, []string{"--index", "1"}, exitFetch},
		{"index past the end", func(t *testing.T, d string) {}, []string{"--index", "300"}, exitMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := gen(t, "--n", "300")
			client(t, 0, "--dir", dir, "--all", "--index", "0,7,299")
			tc.edit(t, dir)
			client(t, tc.code, append([]string{"--dir", dir}, tc.args...)...)
		})
	}
}

func rewrite(t *testing.T, dir string, f func(string) string) {
	t.Helper()
	p := filepath.Join(dir, "checkpoint")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(f(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{}, {"nope"}, {"client"}, {"client", "--url", "x", "--dir", "y"}, {"client", "--url", "ftp://x"},
		{"client", "--dir", "/", "--index", "-1"}, {"gen", "--dir", "x"}, {"vectors", "extra"},
	} {
		if code, _, _ := runT(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
