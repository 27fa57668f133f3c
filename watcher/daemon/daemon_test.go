package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/daemon"
)

func newStore(t *testing.T) *docstore.Store {
	t.Helper()
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "test")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openProjection(t *testing.T, s *docstore.Store, opt watcher.Options) *watcher.Projection {
	t.Helper()
	p, err := watcher.Open(s, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// getHandler answers a document's seq field as the projection has it.
var getHandler = map[string]daemon.Handler{
	"get": func(_ context.Context, p *watcher.Projection, args json.RawMessage) (any, []byte, error) {
		var path string
		if err := json.Unmarshal(args, &path); err != nil {
			return nil, nil, err
		}
		e, ok := p.Get(path)
		if !ok {
			return nil, nil, nil
		}
		return e.Fields["seq"], nil, nil
	},
}

func agentText(name string, seq int) string {
	return fmt.Sprintf("---\nschema_version: 1\nname: %s\nstate: idle\nseq: %d\n---\n", name, seq)
}

func start(t *testing.T, p *watcher.Projection, opt daemon.Options) *daemon.Server {
	t.Helper()
	srv, err := daemon.Start(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestCallSeesEveryWrite: goroutines write documents (in place, and by
// rename as editors and the engine do) and at once ask the daemon; every
// answer has the write. Run it under -race.
func TestCallSeesEveryWrite(t *testing.T) {
	s := newStore(t)
	const writers, rounds = 6, 40
	for w := range writers {
		if err := os.WriteFile(filepath.Join(s.Root(), "agents", fmt.Sprintf("w%d.md", w)), []byte(agentText(fmt.Sprintf("w%d", w), 0)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := openProjection(t, s, watcher.Options{Watch: true})
	srv := start(t, p, daemon.Options{Who: "test", Handlers: getHandler})
	if !srv.Serving() {
		t.Fatal("not serving")
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", w)
			rel := "agents/" + name + ".md"
			full := filepath.Join(s.Root(), rel)
			for i := 1; i <= rounds; i++ {
				var err error
				if i%2 == 0 {
					err = os.WriteFile(full, []byte(agentText(name, i)), 0o644)
				} else {
					tmp := full + ".tmp~"
					if err = os.WriteFile(tmp, []byte(agentText(name, i)), 0o644); err == nil {
						err = os.Rename(tmp, full)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				info, _, err := daemon.Call(context.Background(), s.Root(), "get", rel, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				if got := string(info); got != strconv.Itoa(i) {
					errs <- fmt.Errorf("%s: the daemon answers seq %s right after writing %d", rel, got, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, err := daemon.GetStatus(context.Background(), s.Root(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if st.Served < writers*rounds || st.Gen < uint64(writers*rounds) || st.PID != os.Getpid() || st.Who != "test" {
		t.Errorf("status %+v after %d queries", st, writers*rounds)
	}
}

func TestNotServable(t *testing.T) {
	s := newStore(t)
	for _, opt := range []watcher.Options{
		{},                                       // one-shot
		{Watch: true, Kinds: []string{"agents"}}, // scoped
		{Watch: true, Poll: time.Hour},           // polling
	} {
		p := openProjection(t, s, opt)
		if _, err := daemon.Start(p, daemon.Options{}); !errors.Is(err, daemon.ErrNotServable) {
			t.Errorf("Start on %+v: %v, want ErrNotServable", opt, err)
		}
	}
}

// TestUnavailable: no socket, a socket nobody listens on (a killed
// daemon's), and a daemon that does not answer in time.
func TestUnavailable(t *testing.T) {
	s := newStore(t)
	call := func(what string, timeout time.Duration) {
		t.Helper()
		start := time.Now()
		_, _, err := daemon.Call(context.Background(), s.Root(), "get", "x", timeout)
		if !errors.Is(err, daemon.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", what, err)
		}
		if d := time.Since(start); d > timeout+5*time.Second {
			t.Errorf("%s: took %s", what, d)
		}
	}
	call("no socket", time.Second)

	sock := filepath.Join(s.Root(), daemon.SocketName)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	call("listening, never answering", 200*time.Millisecond)
	ln.Close()
	call("dead socket", time.Second)
}

// TestTakeover: a second process's server takes over when the first one
// stops; the socket is replaced, not left to the first.
func TestTakeover(t *testing.T) {
	s := newStore(t)
	p1 := openProjection(t, s, watcher.Options{Watch: true})
	p2 := openProjection(t, s, watcher.Options{Watch: true})
	first := start(t, p1, daemon.Options{Who: "first", Handlers: getHandler, Retry: 10 * time.Millisecond})
	second := start(t, p2, daemon.Options{Who: "second", Handlers: getHandler, Retry: 10 * time.Millisecond})
	if !first.Serving() || second.Serving() {
		t.Fatalf("serving: first %v, second %v", first.Serving(), second.Serving())
	}
	first.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := daemon.GetStatus(context.Background(), s.Root(), time.Second)
		if err == nil && st.Who == "second" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second server did not take over: %v %+v", err, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStoppedLeavesNoSocket: once a stopped daemon no longer answers, its
// socket is gone (`tavern daemon stop` returns when it stops answering, and
// a script checks .daemon.sock right after). The socket used to be removed
// after the listener closed, so for a moment nothing answered and the
// socket was still there.
func TestStoppedLeavesNoSocket(t *testing.T) {
	s := newStore(t)
	p := openProjection(t, s, watcher.Options{Watch: true})
	sock := filepath.Join(s.Root(), daemon.SocketName)
	for round := range 40 {
		var srv *daemon.Server
		srv, err := daemon.Start(p, daemon.Options{Who: "t", Explicit: true, Retry: 5 * time.Millisecond, OnStop: func() { srv.Close() }})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for !srv.Serving() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: not serving", round)
			}
			time.Sleep(time.Millisecond) // polling a condition, with a deadline
		}
		if err := daemon.Stop(context.Background(), s.Root(), time.Second); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := daemon.GetStatus(context.Background(), s.Root(), time.Second); err != nil {
				break
			}
		}
		if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: socket after the daemon stopped answering: %v", round, err)
		}
		srv.Close()
	}
}
