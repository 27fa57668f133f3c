package queues_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// A taker (another process: its own Store) tries to claim an item while
// `tavern set` (Update) and `tavern edit` (SaveEdit) write it: the test's
// rule runs inside the write, after it read the pending copy. The writes
// took only the document lock, not the item lock takers hold, so the
// claim went through under them; a claim between the write's last check
// and its rename left the write's pending copy beside the claimed one
// (readers trash the older) and the change lost, though the write had
// reported success. A write of an item
// now holds its item lock: the taker skips the item, and the write ends
// with the item pending and edited.
func TestWriteItemSerialisesWithTake(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(s *docstore.Store, rel string) error
	}{
		{"set", func(s *docstore.Store, rel string) error {
			_, err := s.Update(rel, func(d *docstore.Doc) error { return d.Set("title", "edited") })
			return err
		}},
		{"edit", func(s *docstore.Store, rel string) error {
			d, err := s.Get(rel)
			if err != nil {
				return err
			}
			if err := d.Set("title", "edited"); err != nil {
				return err
			}
			orig, err := s.Get(rel)
			if err != nil {
				return err
			}
			_, err = s.SaveEdit(rel, orig.Rev, d.Bytes())
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, it, rel, b2 := oneItemTwoStores(t)
			var claim *queues.Claim
			var takeErr error
			armed := true
			s.AddRule("test/taker", func(w docstore.Write) error {
				if armed && w.Op == "update" && w.Path == rel {
					armed = false
					claim, takeErr = b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "taker"})
				}
				return nil
			})
			writeErr := tc.write(s, rel)
			if armed {
				t.Fatal("the write never checked its rules")
			}
			if claim != nil || !errors.Is(takeErr, queues.ErrEmpty) {
				t.Fatalf("take during the write: got %v, %v; want nothing claimable (the item is locked)", claim, takeErr)
			}
			if writeErr != nil {
				t.Fatalf("write: %v", writeErr)
			}
			if _, err := os.Stat(filepath.Join(s.Root(), queues.ItemPath("q", queues.Claimed, it.ID))); err == nil {
				t.Error("a claimed copy exists beside the edited pending one")
			}
			d, err := s.Get(rel)
			if err != nil || d.String("title") != "edited" {
				t.Errorf("pending copy: %v, %v; want title edited", d, err)
			}
		})
	}
}
