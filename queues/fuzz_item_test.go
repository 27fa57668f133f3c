package queues_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/queues"
)

// FuzzTakeHandEdited puts a hand-written item (any frontmatter) at the
// head of a queue, behind it a good item, and runs take+done cycles. The
// hand-written one is either claimed and completed like any item (its
// claimed and done copies valid documents), or skipped and left byte for
// byte where it was. Either way the good item is taken: a bad file never
// blocks the queue.
func FuzzTakeHandEdited(f *testing.F) {
	f.Add("schema_version: 1\nqueue: q\ntitle: by hand\n")
	f.Add("queue: q\nattempts: lots\n")
	f.Add("title: [unclosed\n")
	f.Add("!t\nqueue: q\n")
	f.Add("queue: q\ntitle: \"quoted # not a comment\"\nlease_until: 2026-11-22T01:00:00Z # hand\nhung_since: x\n")
	f.Add("queue: q\ndepends_on: []\nclaimed_by: &a w1\nresult: *a\n")
	f.Add("{queue: q, title: flow}\n")
	f.Fuzz(func(t *testing.T, front string) {
		s := newStore(t, true)
		b := newBroker(t, s, nil)
		mustQueue(t, b, "q", queues.QueueOptions{})
		good := mustAdd(t, b, "q", queues.AddOptions{Priority: 5, Title: "good"})
		hand := filepath.Join(s.Root(), "queues/q/pending/p00-hand.md")
		src := []byte("---\n" + front + "\n---\nbody\n")
		if err := os.WriteFile(hand, src, 0o644); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i := 0; i < 2; i++ {
			c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Liveness: queues.HoldLock})
			if isEmpty(err) {
				break
			}
			if err != nil {
				t.Fatalf("take %d: %v\n%q", i, err, src)
			}
			seen[c.ID] = true
			if _, err := c.Complete("ok"); err != nil {
				t.Fatalf("complete %s: %v\n%q", c.ID, err, src)
			}
			done, err := s.Get("queues/q/done/" + c.ID + ".md")
			if err != nil {
				t.Fatalf("done copy of %s: %v\n%q", c.ID, err, src)
			}
			if errs := done.Validate(false); len(errs) > 0 {
				t.Fatalf("done copy of %s is invalid: %v\n%q", c.ID, errs, done.Bytes())
			}
		}
		if !seen[good.ID] {
			t.Fatalf("the good item was not taken (took %v)\n%q", seen, src)
		}
		if !seen["p00-hand"] {
			got, err := os.ReadFile(hand)
			if err != nil {
				t.Fatalf("skipped hand-written item is gone: %v\n%q", err, src)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("skipped hand-written item changed:\n%q\nto\n%q", src, got)
			}
		}
	})
}
