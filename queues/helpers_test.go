package queues_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

func isEmpty(err error) bool { return errors.Is(err, queues.ErrEmpty) }

// clock is a test clock: real time plus an offset tests move forward to
// expire leases and backoffs without sleeping.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// newStore makes a store in a temp dir. relaxed skips fsync: the tests
// that use it check claim logic, not durability.
func newStore(tb testing.TB, relaxed bool) *docstore.Store {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), ".tavern")
	s, _, err := docstore.Init(dir, "test")
	if err != nil {
		tb.Fatal(err)
	}
	if relaxed {
		setDurability(tb, s, "relaxed")
		if s, err = docstore.Open(dir); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

func newBroker(tb testing.TB, s *docstore.Store, clk *clock) *queues.Broker {
	tb.Helper()
	opt := queues.Options{Seed: 1}
	if clk != nil {
		opt.Now = clk.Now
	}
	b, err := queues.Open(s, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

func mustQueue(tb testing.TB, b *queues.Broker, name string, opt queues.QueueOptions) {
	tb.Helper()
	if _, err := b.CreateQueue(name, opt); err != nil {
		tb.Fatal(err)
	}
}

func mustAdd(tb testing.TB, b *queues.Broker, q string, opt queues.AddOptions) *queues.Item {
	tb.Helper()
	it, err := b.Add(q, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return it
}

func mustTake(tb testing.TB, b *queues.Broker, opt queues.TakeOptions) *queues.Claim {
	tb.Helper()
	c, err := b.Take(context.Background(), opt)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func take1(q ...string) queues.TakeOptions { return queues.TakeOptions{Queues: q} }

// ls lists the ids in a state directory.
func ls(tb testing.TB, s *docstore.Store, q, state string) []string {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join(s.Root(), "queues", q, state))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".md"))
	}
	return out
}

// events reads the journal's events of the given type.
func events(tb testing.TB, s *docstore.Store, typ string) []journal.Event {
	tb.Helper()
	var out []journal.Event
	_, err := journal.Read(s.Root(), journal.Filter{Types: []string{typ}}, func(e journal.Event, err error) bool {
		if err != nil {
			tb.Errorf("journal: %v", err)
			return true
		}
		out = append(out, e)
		return true
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// readLine reads one line from a helper process's stdout with a deadline.
func readLine(tb testing.TB, r *bufio.Reader, d time.Duration) string {
	tb.Helper()
	ch := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		ch <- strings.TrimSpace(line)
	}()
	select {
	case l := <-ch:
		return l
	case <-time.After(d):
		tb.Fatalf("no line from helper within %v", d)
		return ""
	}
}

func setDurability(tb testing.TB, s *docstore.Store, mode string) {
	tb.Helper()
	if _, err := s.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.Set("durability", mode) }); err != nil {
		tb.Fatal(err)
	}
}

var _ = context.Background

// handEdit changes a document the way a person's editor does: straight to
// the file, past the store's rules (which refuse, e.g., a cycle).
func handEdit(tb testing.TB, s *docstore.Store, rel string, fn func(*docstore.Doc) error) {
	tb.Helper()
	d, err := s.Get(rel)
	if err != nil {
		tb.Fatal(err)
	}
	if err := fn(d); err != nil {
		tb.Fatal(err)
	}
	if err := s.WriteFile(rel, d.Bytes()); err != nil {
		tb.Fatal(err)
	}
}
