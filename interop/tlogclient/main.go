// Command dgsp-tlogclient checks the registry's RFC 6962 / C2SP tlog-tiles log with
// independent Go implementations (filippo.io/torchwood, golang.org/x/mod/sumdb/tlog,
// github.com/transparency-dev/merkle). See interop/README.md.
//
//	dgsp-tlogclient vectors < leaves.hex          roots and proofs as JSON
//	dgsp-tlogclient client (--url BASE | --dir DIR) [--index I]... [--all]
//	dgsp-tlogclient gen --dir DIR --n N           writes a valid tiles layout
//
// Exit codes: 0 ok, 1 a check failed (mismatch, malformed data), 2 usage,
// 3 a resource could not be fetched or read.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

const (
	exitOK       = 0
	exitMismatch = 1
	exitUsage    = 2
	exitFetch    = 3
)

// usageError is a command line the program does not accept (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// fetchError is a resource that could not be fetched or read (exit 3); every other
// error is a failed check (exit 1).
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

const usage = `usage:
  dgsp-tlogclient vectors                       read hex leaf data, one a line, on stdin;
                                                print roots and proofs as JSON
  dgsp-tlogclient client (--url BASE | --dir DIR) [--index I]... [--all] [--origin O] [--timeout D]
                                                fetch BASE/checkpoint and the tiles, verify, print JSON
  dgsp-tlogclient gen --dir DIR --n N [--seed S] [--checkpoint-size K] [--no-partial] [--origin O]
                                                write a valid C2SP tlog-tiles layout of N entries
exit codes: 0 ok, 1 a check failed, 2 usage, 3 fetch or read error
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "vectors":
		err = runVectors(args[1:], stdin, stdout)
	case "client":
		err = runClient(args[1:], stdout)
	case "gen":
		err = runGen(args[1:], stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = &usageError{fmt.Sprintf("unknown subcommand %q", args[0])}
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "dgsp-tlogclient %s: %v\n", args[0], err)
	var ue *usageError
	var fe *fetchError
	switch {
	case errors.As(err, &ue):
		fmt.Fprint(stderr, usage)
		return exitUsage
	case errors.As(err, &fe):
		return exitFetch
	default:
		return exitMismatch
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}
