package queues_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// Files in pending/ that are named like items but are not documents (a
// FIFO, a directory, symlinks inside and outside the store) are skipped
// and reported by Take and Stats, exactly like files that do not parse;
// the FIFO is never opened (a writer blocked on it stays blocked) and
// nothing is moved or removed.
func TestOddFilesDoNotBlockQueue(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	good := mustAdd(t, b, "q", queues.AddOptions{Priority: 5})
	pend := filepath.Join(s.Root(), "queues/q/pending")
	fifo := filepath.Join(pend, "p00-a-fifo.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(pend, "p00-b-dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink to a valid item elsewhere in the store, and one to a file
	// outside it.
	other := mustAdd(t, b, "q", queues.AddOptions{Priority: 9})
	inside := filepath.Join(s.Root(), "queues/q/elsewhere.md")
	if err := os.Rename(filepath.Join(pend, other.ID+".md"), inside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inside, filepath.Join(pend, "p00-c-link.md")); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "x.md")
	os.WriteFile(outside, []byte("---\nqueue: q\n---\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(pend, "p00-d-outlink.md")); err != nil {
		t.Fatal(err)
	}
	// A writer blocked opening the FIFO would be released by any reader
	// that opens it: its open must still be blocked at the end.
	opened := make(chan struct{})
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		close(opened)
	}()

	st, err := b.Stats("q")
	if err != nil {
		t.Fatalf("Stats failed for the whole queue: %v", err)
	}
	if got, want := len(st.Invalid), 4; got != want {
		t.Errorf("Stats reported %d odd files, want %d: %v", got, want, st.Invalid)
	}
	c, err := b.Take(context.Background(), take1("q"))
	if err != nil {
		t.Fatalf("Take failed for the whole queue: %v", err)
	}
	if c.ID != good.ID {
		t.Fatalf("took %s, want %s", c.ID, good.ID)
	}
	if got, want := len(c.Notes.Invalid), 4; got != want {
		t.Fatalf("Take reported %d odd files, want %d: %v", got, want, c.Notes.Invalid)
	}
	for _, e := range c.Notes.Invalid {
		if !errors.Is(e, docstore.ErrOddFile) || !strings.Contains(e.Error(), "queues/q/pending/p00-") {
			t.Errorf("report %q: want an odd-file error naming the path", e)
		}
	}
	for _, want := range []string{"a FIFO", "a directory", "a symbolic link"} {
		found := false
		for _, e := range c.Notes.Invalid {
			found = found || strings.Contains(e.Error(), want)
		}
		if !found {
			t.Errorf("no report says %q: %v", want, c.Notes.Invalid)
		}
	}
	select {
	case <-opened:
		t.Error("the FIFO was opened for reading (a blocked writer was released)")
	default:
	}
	for _, n := range []string{"p00-a-fifo.md", "p00-b-dir.md", "p00-c-link.md", "p00-d-outlink.md"} {
		if _, err := os.Lstat(filepath.Join(pend, n)); err != nil {
			t.Errorf("%s was moved or removed: %v", n, err)
		}
	}
	// Release the blocked writer.
	if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		<-opened
		f.Close()
	}
}

// A take that fails after writing the claimed copy (pending/ is
// immutable, so the pending copy cannot go) undoes the claim before
// returning: the item is left pending, not claimed until its lease runs
// out.
func TestFailedTakeUndoesClaim(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{})
	pend := filepath.Join(s.Root(), "queues/q/pending")
	if out, err := exec.Command("chattr", "+i", pend).CombinedOutput(); err != nil {
		t.Skipf("chattr +i is not possible here (%v: %s); the test needs an immutable directory", err, out)
	}
	defer exec.Command("chattr", "-i", pend).Run()
	_, err := b.Take(context.Background(), take1("q"))
	if err == nil {
		t.Fatal("take from an immutable pending/ succeeded")
	}
	if got := ls(t, s, "q", queues.Claimed); len(got) != 0 {
		t.Errorf("claimed/ holds %v after a failed take, want nothing", got)
	}
	if got := ls(t, s, "q", queues.Pending); len(got) != 1 || got[0] != it.ID {
		t.Errorf("pending/ = %v, want [%s]", got, it.ID)
	}
	if evs := events(t, s, queues.EventClaimed); len(evs) != 0 {
		t.Errorf("a failed take journaled %d item.claimed", len(evs))
	}
}

// A dependency cycle made by hand (Add refuses to make one) is named in
// Take's empty report and found by Cycles with each member's depends_on
// line.
func TestDependencyCycleReported(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	a := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	c := mustAdd(t, b, "q", queues.AddOptions{Title: "c", DependsOn: []string{a.ID}})
	// Close the cycle by hand: a depends on c.
	handEdit(t, s, a.Path, func(d *docstore.Doc) error { return d.Set("depends_on", []string{c.ID}) })
	_, err := b.Take(context.Background(), take1("q"))
	var ee *queues.EmptyError
	if !errors.As(err, &ee) {
		t.Fatalf("take: %v, want an empty report", err)
	}
	if !strings.Contains(err.Error(), "dependency cycle") || !strings.Contains(err.Error(), a.ID) || !strings.Contains(err.Error(), c.ID) {
		t.Errorf("empty report %q does not name the cycle", err)
	}
	cs, err := queues.FindCycles(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || len(cs[0].Members) != 2 {
		t.Fatalf("cycles = %+v, want one of two members", cs)
	}
	for i, e := range cs[0].Errors() {
		m := cs[0].Members[i]
		d, _ := s.Get(m.Path)
		if m.Line == 0 || m.Line != d.KeyLine("depends_on") || !strings.HasPrefix(e.Error(), m.Path+":") || !errors.Is(e, queues.ErrCycle) {
			t.Errorf("member %d: %+v, error %q", i, m, e)
		}
	}
}

// Every agent name given to a take goes through the one name rule: a
// newline, a slash, an empty name or "@../x" is refused before anything
// is claimed.
func TestTakeAsChecksTheName(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	mustAdd(t, b, "q", queues.AddOptions{})
	for _, as := range []string{"", "a\nb", "a/b", "@../x", "../x", "Bob"} {
		_, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: as, Liveness: queues.AgentLock})
		if !errors.Is(err, schema.ErrInvalidName) {
			t.Errorf("take as %q: %v, want an invalid name", as, err)
		}
	}
	if got := ls(t, s, "q", queues.Claimed); len(got) != 0 {
		t.Errorf("claimed %v with bad names", got)
	}
}

// A claim records the instance it was made for, and done, fail, renew and
// release from another instance are refused (ErrStale) even under the
// same agent name and attempt; the holding instance's own calls pass.
func TestInstanceFence(t *testing.T) {
	s := newStore(t, true)
	mustQueue(t, newBroker(t, s, nil), "q", queues.QueueOptions{})
	b0 := newBroker(t, s, nil)
	it := mustAdd(t, b0, "q", queues.AddOptions{})
	old, err := queues.Open(s, queues.Options{Instance: "inst-old"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	c := mustTake(t, old, queues.TakeOptions{Queues: []string{"q"}, As: "drone-1"})
	if c.Instance != "inst-old" {
		t.Fatalf("claim instance = %q", c.Instance)
	}
	// The claim moves to a new instance of the same agent (the old one
	// died and its item was re-claimed; here: released and taken again).
	if _, err := c.Release(); err != nil {
		t.Fatal(err)
	}
	nb, err := queues.Open(s, queues.Options{Instance: "inst-new"})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	c2 := mustTake(t, nb, queues.TakeOptions{Queues: []string{"q"}, As: "drone-1"})
	for name, call := range map[string]func() error{
		"done":                    func() error { _, err := old.Complete(it.ID, 0, "late"); return err },
		"fail":                    func() error { _, err := old.Fail(it.ID, 0, "late"); return err },
		"renew":                   func() error { _, err := old.Renew(it.ID, 0); return err },
		"release":                 func() error { _, err := old.Release(it.ID, 0); return err },
		"done, the right attempt": func() error { _, err := old.Complete(it.ID, c2.Attempt, "late"); return err },
	} {
		if err := call(); !errors.Is(err, queues.ErrStale) {
			t.Errorf("%s from the dead instance: %v, want ErrStale", name, err)
		}
	}
	if got := ls(t, s, "q", queues.Claimed); len(got) != 1 {
		t.Fatalf("claimed/ = %v after refused late actions", got)
	}
	// No instance (a person at a shell) passes the fence; the holder too.
	if _, err := nb.Renew(it.ID, c2.Attempt); err != nil {
		t.Errorf("renew by the holding instance: %v", err)
	}
	if _, err := c2.Complete("ok"); err != nil {
		t.Errorf("complete by the holding instance: %v", err)
	}
	if _, err := queues.Open(s, queues.Options{Instance: "../x"}); !errors.Is(err, schema.ErrInvalidName) {
		t.Errorf("instance ../x: %v, want an invalid name", err)
	}
}

// The cycle check of `tavern check` finds the cycles of the run it is in:
// a long-lived store (a pool, serve) checked again after a hand edit
// closes or opens a cycle reports the store as it is now.
func TestCycleCheckIsPerRun(t *testing.T) {
	s := newStore(t, true)
	queues.InstallChecks(s)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	a := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	c := mustAdd(t, b, "q", queues.AddOptions{Title: "c", DependsOn: []string{a.ID}})
	cycleProblems := func() int {
		t.Helper()
		rep, err := s.Check(nil, false)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range rep.Problems {
			if errors.Is(p.Err, queues.ErrCycle) {
				n++
			}
		}
		return n
	}
	if got := cycleProblems(); got != 0 {
		t.Fatalf("before the edit: %d cycle problems, want 0", got)
	}
	handEdit(t, s, a.Path, func(d *docstore.Doc) error { return d.Set("depends_on", []string{c.ID}) })
	if got := cycleProblems(); got != 2 {
		t.Fatalf("after closing the cycle: %d cycle problems, want 2", got)
	}
	handEdit(t, s, a.Path, func(d *docstore.Doc) error { return d.Delete("depends_on") })
	if got := cycleProblems(); got != 0 {
		t.Fatalf("after opening it again: %d cycle problems, want 0", got)
	}
}
