package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBigListingGrowsPipe: the built binary writing a listing of more
// than 64 KiB into a pipe first raises the pipe to hold it (the reader
// sees the new size on its end) but never lowers one its reader made
// bigger, and what comes through is what the same command writes into a
// file.
func TestBigListingGrowsPipe(t *testing.T) {
	p := newProject(t)
	for i := range 400 {
		p.write(fmt.Sprintf("agents/a%03d.md", i), fmt.Sprintf("---\nname: a%03d\nrole: r\nstate: idle\n---\n", i))
	}
	p.env = append(p.env, "TAVERN_DAEMON=off")
	toFile := p.ok("ls", "agents", "--json")
	if len(toFile) <= 64<<10 {
		t.Fatalf("listing of %d bytes: too short to need a bigger pipe", len(toFile))
	}
	grown := lsThroughPipe(t, p, 0, toFile)
	if want := min(len(toFile), 1<<20); grown < want {
		t.Errorf("pipe size after the listing: %d, want at least %d", grown, want)
	}
	// A pipe its reader made bigger stays so.
	if got := lsThroughPipe(t, p, 1<<20, toFile); got != 1<<20 {
		t.Errorf("a pipe of 1 MiB: %d after the listing, want it kept", got)
	}
}

// lsThroughPipe runs ls agents --json into a pipe (of size bytes, when
// not 0), checks that what comes through is want, and returns the pipe's
// size afterwards.
func lsThroughPipe(t *testing.T, p *project, size int, want string) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if size > 0 {
		if _, err := unix.FcntlInt(r.Fd(), unix.F_SETPIPE_SZ, size); err != nil {
			t.Fatal(err)
		}
	}
	cmd := p.tavern("ls", "agents", "--json")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ls: %v\n%s", err, stderr.String())
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("through a pipe: %d bytes, into a file: %d, and they differ", len(got), len(want))
	}
	after, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	return after
}
