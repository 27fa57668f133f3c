package docstore

// Multi-process tests: the test binary re-executes itself as workers
// (TestHelperProcess, in the role storetest.HelperCommand gives), so the processes are
// real, share nothing but the store directory, and can be SIGKILLed.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/schema"
)

// TestHelperProcess is not a test: it is the worker body when the test
// binary runs itself as a helper (storetest.HelperCommand).
func TestHelperProcess(t *testing.T) {
	mode := storetest.HelperRole()
	if mode == "" {
		t.Skip("helper process for the multi-process tests")
	}
	err := runHelper(mode, os.Getenv("TAVERN_HELPER_STORE"), os.Getenv("TAVERN_HELPER_DOC"), os.Getenv("TAVERN_HELPER_N"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runHelper(mode, dir, rel, nstr string) error {
	s, err := Open(dir)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(nstr)
	// Start together: the parent closes stdin once every worker runs.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	switch mode {
	case "increment":
		for i := 0; i < n; i++ {
			if _, err := s.Update(rel, func(d *Doc) error {
				v, ok := d.Int("spawns")
				if !ok {
					return fmt.Errorf("spawns is not an integer: %q", d.String("spawns"))
				}
				return d.Set("spawns", v+1)
			}); err != nil {
				return err
			}
		}
	case "grow":
		// Rewrite the document forever with growing, self-validating
		// versions; print each acknowledged sequence number.
		out := bufio.NewWriter(os.Stdout)
		for {
			d, err := s.Update(rel, func(d *Doc) error {
				seq, _ := d.Int("seq")
				return setVersion(d, seq+1)
			})
			if err != nil {
				return err
			}
			seq, _ := d.Int("seq")
			fmt.Fprintln(out, seq)
			out.Flush()
		}
	case "lockremove":
		// Hold the document lock (every acquisition path in turn), prove
		// no one else holds it (a marker only a holder creates, O_EXCL),
		// then release it or remove its file under it, as rm, a move and
		// doctor --fix do.
		key := DocLockKey(rel)
		marker := filepath.Join(dir, "holder")
		for i := 0; i < n; i++ {
			var l *Lock
			var err error
			switch i % 3 {
			case 0:
				l, err = s.Lock(key) // the Store's cached descriptor
			case 1:
				ctx, cancel := context.WithCancel(context.Background())
				l, err = s.LockContext(ctx, key) // a descriptor of its own
				cancel()
			default:
				for ok := false; !ok && err == nil; {
					l, ok, err = s.TryLock(key)
				}
			}
			if err != nil {
				return err
			}
			f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
			if err != nil {
				return fmt.Errorf("iteration %d: two holders of %s: %w", i, key, err)
			}
			f.Close()
			if err := os.Remove(marker); err != nil {
				return err
			}
			if i%2 == 0 {
				err = l.Remove()
			} else {
				err = l.Unlock()
			}
			if err != nil {
				return err
			}
		}
	case "dropper":
		// doctor --fix's and a move's way: take the lock without waiting
		// if free and remove its file.
		for i := 0; i < n; i++ {
			if _, err := s.RemoveLock(DocLockKey(rel)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown helper mode %q", mode)
	}
	return nil
}

// payload is version seq's body: its size grows with seq (and wraps), so
// successive versions differ in length and a torn file cannot pass for one.
func payload(seq int64) []byte {
	size := int(seq*7919) % 65_536
	line := fmt.Sprintf("version %d line\n", seq)
	b := bytes.Repeat([]byte(line), size/len(line)+1)
	return b[:size]
}

func setVersion(d *Doc, seq int64) error {
	body := payload(seq)
	sum := sha256.Sum256(body)
	d.SetBody(body)
	for _, kv := range []Field{{Key: "seq", Value: seq}, {Key: "size", Value: len(body)}, {Key: "sha256", Value: hex.EncodeToString(sum[:])}} {
		if err := d.Set(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	return nil
}

// checkVersion verifies a version against its own length and hash.
func checkVersion(d *Doc) (int64, error) {
	seq, ok := d.Int("seq")
	if !ok {
		return 0, fmt.Errorf("no seq field")
	}
	size, _ := d.Int("size")
	sum := sha256.Sum256(d.Body())
	if int(size) != len(d.Body()) || hex.EncodeToString(sum[:]) != d.String("sha256") {
		return seq, fmt.Errorf("version %d is torn: size field %d, body %d bytes, hash match %v",
			seq, size, len(d.Body()), hex.EncodeToString(sum[:]) == d.String("sha256"))
	}
	if !bytes.Equal(d.Body(), payload(seq)) {
		return seq, fmt.Errorf("version %d has the wrong body", seq)
	}
	return seq, nil
}

// helper starts the test binary as a worker. Workers block until their
// stdin is closed (release).
func helper(t *testing.T, mode, dir, rel string, n int) (cmd *exec.Cmd, release func(), stdout io.Reader) {
	t.Helper()
	cmd = storetest.HelperCommand(t, "^TestHelperProcess$", mode, "TAVERN_HELPER_STORE="+dir, "TAVERN_HELPER_DOC="+rel,
		"TAVERN_HELPER_N="+strconv.Itoa(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("worker %d stderr:\n%s", cmd.Process.Pid, stderr.String())
		}
	})
	return cmd, func() { stdin.Close() }, out
}

func newTestStore(tb testing.TB) *Store {
	tb.Helper()
	s, _, err := Init(filepath.Join(tb.TempDir(), DirName), "test")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func createAgent(tb testing.TB, s *Store, name string, fields ...Field) string {
	tb.Helper()
	rel, err := schema.Agent.Path(name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := New(schema.Agent, append([]Field{{Key: "schema_version", Value: 1}, {Key: "name", Value: name}}, fields...), []byte("\nbody\n"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Create(rel, d); err != nil {
		tb.Fatal(err)
	}
	return rel
}

// Lock files removed under their lock never let two processes hold the
// "same" lock (the flock+unlink race: a waiter locking the unlinked
// inode while a newcomer locks the new file). Processes take a document
// lock by every path (the Store's cached descriptor, LockContext's own,
// TryLock), check they are alone, and half the time remove the lock file
// as they let go; others only remove it (doctor --fix), and others
// increment a field through Update, which must lose nothing. It catches
// an acquirer that trusts its descriptor: with the cache's link check
// disabled it finds two holders at once.
func TestDocLockRemovalProcesses(t *testing.T) {
	const lockers, droppers, incrementers, each = 4, 2, 2, 300
	s := newTestStore(t)
	rel := createAgent(t, s, "counter", Field{Key: "spawns", Value: 0})
	var cmds []*exec.Cmd
	var releases []func()
	start := func(mode string, n int) {
		cmd, release, _ := helper(t, mode, s.Root(), rel, n)
		cmds = append(cmds, cmd)
		releases = append(releases, release)
	}
	for range lockers {
		start("lockremove", each)
	}
	for range droppers {
		start("dropper", each)
	}
	for range incrementers {
		start("increment", each/3)
	}
	for _, r := range releases {
		r()
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v", c.Process.Pid, err)
		}
	}
	d, err := s.Get(rel)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.String("spawns"), strconv.Itoa(incrementers*(each/3)); got != want {
		t.Fatalf("spawns = %s after %s increments: updates were lost", got, want)
	}
}

// 8 processes × 200 read-modify-write Updates of one field end at exactly
// 1600: Update's lock serialises writers across processes.
func TestLostUpdateProcesses(t *testing.T) {
	const workers, each = 8, 200
	s := newTestStore(t)
	rel := createAgent(t, s, "counter", Field{Key: "spawns", Value: 0})
	var cmds []*exec.Cmd
	var releases []func()
	for range workers {
		cmd, release, _ := helper(t, "increment", s.Root(), rel, each)
		cmds = append(cmds, cmd)
		releases = append(releases, release)
	}
	for _, r := range releases {
		r()
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v", c.Process.Pid, err)
		}
	}
	d, err := s.Get(rel)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Int("spawns"); got != workers*each {
		t.Fatalf("spawns = %d after %d×%d increments, want %d (lost updates)", got, workers, each, workers*each)
	}
	if errs := d.Validate(true); len(errs) > 0 {
		t.Fatalf("counter document invalid: %v", errs)
	}
}

// A writer SIGKILLed at random points leaves the old or the new version of
// the document, never a torn or empty one; no acknowledged version is
// lost; temp files never show up as documents; the lock is released.
func TestCrashDuringWrites(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	s := newTestStore(t)
	rel := createAgent(t, s, "crash")
	if _, err := s.Update(rel, func(d *Doc) error { return setVersion(d, 1) }); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	acked := int64(1)
	for round := range rounds {
		cmd, release, out := helper(t, "grow", s.Root(), rel, 0)
		release()
		lines := bufio.NewScanner(out)
		// Kill after a random number of acknowledged writes, then a random
		// delay of up to 2 ms, which lands inside the next write (read,
		// temp write, fsync, rename, dir fsync) at a random point. The delay
		// picks the kill point; nothing waits on it for correctness.
		want := 1 + rng.IntN(12)
		for i := 0; i < want; i++ {
			if !lines.Scan() {
				cmd.Wait()
				t.Fatalf("round %d: worker exited after %d writes: %v", round, i, lines.Err())
			}
			seq, err := strconv.ParseInt(lines.Text(), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			acked = seq
		}
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Drain the acknowledgements printed before the kill first: Wait
		// closes the pipe, dropping whatever was not read yet.
		for lines.Scan() {
			if seq, err := strconv.ParseInt(lines.Text(), 10, 64); err == nil {
				acked = seq
			}
		}
		cmd.Wait()

		d, err := s.Get(rel)
		if err != nil {
			t.Fatalf("round %d: after SIGKILL the document does not parse: %v", round, err)
		}
		seq, err := checkVersion(d)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if seq != acked && seq != acked+1 {
			t.Fatalf("round %d: document is version %d, last acknowledged %d: want it or the next", round, seq, acked)
		}
		acked = seq
		assertOnlyDocs(t, s, rel)
		// The dead worker's lock is free again.
		l, ok, err := s.TryLock(DocLockKey(rel))
		if err != nil || !ok {
			t.Fatalf("round %d: lock still held after the writer died (ok=%v, err=%v)", round, ok, err)
		}
		l.Unlock()
	}
}

// assertOnlyDocs checks that the store lists exactly the config and rel,
// whatever temp files the killed writers left behind.
func assertOnlyDocs(t *testing.T, s *Store, rel string) {
	t.Helper()
	var all []string
	for _, k := range schema.Kinds() {
		paths, err := s.ListFiles(k)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, paths...)
		docs, errs := s.List(k)
		if len(errs) > 0 {
			t.Fatalf("List(%s): %v", k.Name, errs)
		}
		if len(docs) != len(paths) {
			t.Fatalf("List(%s) returned %d docs for %d files", k.Name, len(docs), len(paths))
		}
	}
	if want := []string{ConfigFile, rel}; strings.Join(all, " ") != strings.Join(want, " ") && strings.Join(all, " ") != rel+" "+ConfigFile {
		t.Fatalf("store lists %q, want exactly %q", all, want)
	}
}

// Open removes temp files a killed writer left in .tmp/ once they are
// older than StaleTemp, and keeps younger ones (a live writer's).
func TestOpenRemovesStaleTemps(t *testing.T) {
	s := newTestStore(t)
	tmp := filepath.Join(s.Root(), tmpDir)
	old := filepath.Join(tmp, "4242-1.tmp")
	young := filepath.Join(tmp, "4242-2.tmp")
	other := filepath.Join(tmp, "notes.txt") // not ours: never touched
	for _, p := range []string{old, young, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-StaleTemp - time.Minute)
	for _, p := range []string{old, other} {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(s.Root()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("stale temp file still there (err=%v)", err)
	}
	for _, p := range []string{young, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
