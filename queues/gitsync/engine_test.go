package gitsync_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
)

// gitEngine opens coordination: git on a fresh store of its own (one per
// machine).
func gitEngine(t *testing.T, root, machine, url string) queues.Coordinator {
	t.Helper()
	s := newOrigin(t, root, machine, url)
	if _, err := s.Update(docstore.ConfigFile, func(d *docstore.Doc) error {
		if err := d.Set("coordination", "git"); err != nil {
			return err
		}
		return d.SetYAML("sync", "{remote: '"+url+"', claim_ttl: 2s}")
	}); err != nil {
		t.Fatal(err)
	}
	c, err := queues.OpenCoordinator(s)
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine() != "git" {
		t.Fatalf("engine %s", c.Engine())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRefEngineRaceExactlyOne(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	const n = 4
	var es []queues.Coordinator
	for i := 0; i < n; i++ {
		es = append(es, gitEngine(t, root, "m"+string(rune('a'+i)), url))
	}
	for round := 0; round < 3; round++ {
		key := "items/q/k" + string(rune('0'+round))
		var wg sync.WaitGroup
		errs := make([]error, n)
		grants := make([]queues.Grant, n)
		for i, e := range es {
			wg.Add(1)
			go func(i int, e queues.Coordinator) {
				defer wg.Done()
				grants[i], errs[i] = e.Claim(context.Background(), key, queues.ClaimRequest{Holder: "w", TTL: time.Minute})
			}(i, e)
		}
		wg.Wait()
		won := 0
		for i := range es {
			switch {
			case errs[i] == nil:
				won++
			case !errors.Is(errs[i], queues.ErrHeld):
				t.Fatalf("engine %d: %v", i, errs[i])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d winners", round, won)
		}
	}
}

func TestRefEngineFenceAndLease(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := gitEngine(t, root, "alpha", url)
	b := gitEngine(t, root, "beta", url)
	ctx := context.Background()
	key := "items/q/x"
	g1, err := a.Claim(ctx, key, queues.ClaimRequest{Holder: "wa", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, key, queues.ClaimRequest{Holder: "wb", TTL: time.Second}); !errors.Is(err, queues.ErrHeld) {
		t.Fatalf("claim of a held key: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var g2 queues.Grant
	for {
		g2, err = b.Claim(ctx, key, queues.ClaimRequest{Holder: "wb", TTL: time.Minute})
		if err == nil {
			break
		}
		if !errors.Is(err, queues.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("claim after the lease: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if g2.Fence != g1.Fence+1 || g2.Attempts != 2 {
		t.Fatalf("grants %+v then %+v", g1, g2)
	}
	if err := a.Finish(ctx, key, g1.Fence, "done", "late"); !errors.Is(err, queues.ErrLostClaim) {
		t.Fatalf("late finish: %v", err)
	}
	if err := b.Renew(ctx, key, g2.Fence, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(ctx, key, g2.Fence, "done", "ok"); err != nil {
		t.Fatal(err)
	}
	// a's view of the refs is up to a second old: it may still say held.
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, err := a.Claim(ctx, key, queues.ClaimRequest{Holder: "wa", TTL: time.Second})
		if errors.Is(err, queues.ErrFinished) {
			break
		}
		if !errors.Is(err, queues.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("claim of a finished key: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The record chain is the key's history, readable with plain git.
	out, err := exec.Command("git", "ls-remote", url, gitsync.ClaimRefs+"*").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refs/tavern/claims/items/q/x") {
		t.Fatalf("ls-remote: %v %s", err, out)
	}
	// A Live claim is renewed by its process past its TTL (2s here).
	g3, err := a.Claim(ctx, "items/q/live", queues.ClaimRequest{Holder: "wa", Live: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if st, err := b.State(ctx, "items/q/live"); err != nil || !st.Held || st.Fence != g3.Fence {
		t.Fatalf("live claim after 3s: %+v %v", st, err)
	}
	a.Close() // renewals stop, as if the machine died
	deadline = time.Now().Add(20 * time.Second)
	for {
		st, err := b.State(ctx, "items/q/live")
		if err == nil && !st.Held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead machine's live claim still held: %+v %v", st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A reaper whose view of the claim refs predates a claim made by another
// process of the same clone must not take that claim for a dead one (it
// did: the holder's completion was then refused and the item ran twice).
func TestRefEngineStaleViewDoesNotReap(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	s := newOrigin(t, root, "alpha", url)
	if _, err := s.Update(docstore.ConfigFile, func(d *docstore.Doc) error {
		return d.Set("coordination", "git")
	}); err != nil {
		t.Fatal(err)
	}
	b1, err := queues.Open(s, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b1.Close()
	b2, err := queues.Open(s, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if _, err := b1.CreateQueue("q", queues.QueueOptions{Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	first, err := b1.Add("q", queues.AddOptions{Title: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c0, err := b2.Take(ctx, queues.TakeOptions{Queues: []string{"q"}}) // b2 reads the claim refs now
	if err != nil || c0.ID != first.ID {
		t.Fatal(c0, err)
	}
	it, err := b1.Add("q", queues.AddOptions{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b1.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
	if err != nil || c.ID != it.ID {
		t.Fatal(c, err)
	}
	rep, err := b2.Reap("q") // within a second: b2's view has not seen c
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Returned {
		if r.ID == it.ID {
			t.Fatalf("a live claim was reaped from a stale view")
		}
	}
	if _, err := c.Complete("ok"); err != nil {
		t.Fatalf("the holder's completion: %v", err)
	}
}

// A git killed while it updated a fetched claim ref (a drone SIGKILLed
// mid-claim) leaves the ref's .lock file; the next fetch of that queue's
// claims must not fail on it for as long as the clone lives (it did:
// every claim of the queue on that machine was "unavailable").
func TestRefEngineStaleRefLock(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := gitEngine(t, root, "alpha", url)
	b := gitEngine(t, root, "beta", url)
	ctx := context.Background()
	key := "items/q/x"
	g, err := b.Claim(ctx, key, queues.ClaimRequest{Holder: "wb", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(root, "alpha", ".tavern", gitsync.Dir, "git", "refs", "tavern", "rclaims", "items", "q", "x.lock")
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := a.State(ctx, key)
	if err != nil {
		t.Fatalf("state with a killed fetch's lock left: %v", err)
	}
	if !st.Held || st.Fence != g.Fence {
		t.Fatalf("state %+v, want held at fence %d", st, g.Fence)
	}
	if _, err := os.Stat(lock); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale lock still there: %v", err)
	}
}

// TestRefEngineUnresponsiveRemote: a remote that accepts the connection
// and never answers (here an ssh command that hangs) holds no engine
// call past its context's deadline: the call fails as unavailable, and
// git and the command it started are killed, not left running.
func TestRefEngineUnresponsiveRemote(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "ssh.pid")
	hang := filepath.Join(dir, "hang-ssh")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_SSH_COMMAND", hang)
	e := gitEngine(t, t.TempDir(), "alpha", "ssh://git.invalid/p")
	for _, call := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"list", func(ctx context.Context) error {
			_, err := e.(queues.Lister).List(ctx, "items/q/")
			return err
		}},
		{"claim", func(ctx context.Context) error {
			_, err := e.Claim(ctx, "items/q/x", queues.ClaimRequest{Holder: "w", TTL: time.Minute})
			return err
		}},
	} {
		os.Remove(pidFile)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		errc := make(chan error, 1)
		go func() { errc <- call.run(ctx) }()
		var err error
		select {
		case err = <-errc:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still waits on the remote 30s past a 1s deadline", call.name)
		}
		cancel()
		if !errors.Is(err, queues.ErrUnavailable) {
			t.Errorf("%s: err = %v, want ErrUnavailable", call.name, err)
		}
		pid, rerr := os.ReadFile(pidFile)
		if rerr != nil {
			t.Logf("%s: git was stopped before it started ssh: %v", call.name, rerr)
			continue
		}
		// Killed with its group: /proc/PID goes once init reaps it, and a
		// zombie's state is Z. A SIGKILLed process may take a moment to be
		// scheduled and die on a loaded machine: poll for that.
		state := func() string {
			stat, _ := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
			if f := strings.Fields(string(stat)); len(f) > 2 && f[2] != "Z" {
				return f[2]
			}
			return ""
		}
		for end := time.Now().Add(10 * time.Second); state() != "" && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		if st := state(); st != "" {
			t.Errorf("%s: the hung ssh command (pid %s) still runs 10s on: state %s", call.name, strings.TrimSpace(string(pid)), st)
		}
	}
}
