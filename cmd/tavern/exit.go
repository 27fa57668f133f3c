package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Exit codes of the tavern command. They are a contract for scripts and
// listed in README.md.
const (
	exitOK       = 0
	exitError    = 1 // anything not listed below
	exitUsage    = 2 // bad flags or arguments, unknown kind, unsafe name
	exitNotFound = 3 // not found, nothing matched, timed out
	exitConflict = 4 // stale revision, lost claim, illegal transition, stale attempt
	exitInvalid  = 5 // invalid documents
)

// exitCodes maps library errors to exit codes; the first match wins.
// Command files for other packages add their sentinels with mapExit.
var exitCodes = []struct {
	err  error
	code int
}{
	{errUsage, exitUsage},
	{schema.ErrUnknownKind, exitUsage},
	{schema.ErrInvalidName, exitUsage},
	{docstore.ErrUnsafePath, exitUsage},
	{docstore.ErrBadExpr, exitUsage},
	{docstore.ErrAmbiguous, exitUsage},
	{docstore.ErrConflict, exitConflict},
	{docstore.ErrLost, exitConflict},
	{schema.ErrInvalid, exitInvalid},
	{docstore.ErrParse, exitInvalid},
	{fs.ErrExist, exitConflict}, // create-if-absent lost to an existing document
	{errNothing, exitNotFound},
	{docstore.ErrNoStore, exitNotFound},
	{fs.ErrNotExist, exitNotFound},
	{context.DeadlineExceeded, exitNotFound},
}

// mapExit adds a library error to the exit code table.
func mapExit(err error, code int) {
	exitCodes = append(exitCodes, struct {
		err  error
		code int
	}{err, code})
}

var (
	errUsage   = errors.New("usage")
	errNothing = errors.New("nothing matched")
	// errSilent marks an error already reported in full (e.g. by check);
	// only its exit code is used.
	errSilent = errors.New("already reported")
)

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return errUsage }

func usageErr(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// codedError carries an explicit exit code with an error.
type codedError struct {
	err  error
	code int
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &codedError{err: err, code: code} }

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	// urfave/cli reports these without a typed error; an unknown command
	// even comes as cli.Exit(..., 3), which would read as "not found".
	if msg := err.Error(); strings.HasPrefix(msg, "flag provided but not defined") || strings.HasPrefix(msg, "No help topic") || strings.HasPrefix(msg, "Required flag") {
		return exitUsage
	}
	var ee cli.ExitCoder
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	for _, e := range exitCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return exitError
}

// reportError prints err (as text, or as a JSON object when --json was
// given) and returns the exit code.
func reportError(stderr io.Writer, args []string, err error) int {
	code := exitCode(err)
	if err == nil || errors.Is(err, errSilent) {
		return code
	}
	if wantsJSON(args) {
		fmt.Fprintln(stderr, jsonError(err, code))
		return code
	}
	fmt.Fprintf(stderr, "tavern: %v\n", err)
	if code == exitUsage && errors.Is(err, errUsage) {
		fmt.Fprintln(stderr, "Run `tavern --help` or `tavern COMMAND --help` for usage.")
	}
	return code
}

func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// jsonError renders err as the one-line JSON error object of the CLI
// contract. Every key is always present (path, line and col are null when
// the error has none), so consumers need no existence checks.
func jsonError(err error, code int) string {
	path, line, col := docstore.Position(err)
	obj := map[string]any{"error": err.Error(), "code": code, "path": nil, "line": nil, "col": nil}
	if path != "" {
		obj["path"] = path
	}
	if line > 0 {
		obj["line"], obj["col"] = line, col
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

// warn reports a problem that does not stop the command (a document ls
// could not read): a JSON error object under --json, else a text line.
func warn(c *cli.Context, err error) {
	if c.Bool("json") {
		errf(c, "%s\n", jsonError(err, exitCode(err)))
		return
	}
	errf(c, "tavern: %v\n", err)
}
