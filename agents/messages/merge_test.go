package messages_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
)

// Two machines append to the same chunk of a channel; after syncing both
// have every message once, in id order, and the chunk's counters match.
func TestChunkMergeAcrossMachines(t *testing.T) {
	c := newClones(t, nil)
	a, sync := c.a, c.sync
	if _, err := messages.SendMessage(a, "general", "ann", "first"); err != nil {
		t.Fatal(err)
	}
	sync(a)
	b := c.clone("beta")
	var want []string
	for i, s := range []*docstore.Store{a, b, a, b} {
		id, err := messages.SendMessage(s, "general", "x", "msg "+string(rune('0'+i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	sync(a)
	rep := sync(b)
	sync(a)
	if !rep.Merged || len(rep.Conflicts) != 0 {
		t.Fatalf("merge %+v", rep)
	}
	for _, s := range []*docstore.Store{a, b} {
		files, _ := filepath.Glob(filepath.Join(s.Root(), "messages", "general", "*.md"))
		if len(files) != 1 {
			t.Fatalf("chunks %v", files)
		}
		data, _ := os.ReadFile(files[0])
		d, err := s.Get("messages/general/" + filepath.Base(files[0]))
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := messages.ParseChunkBody(d.Body())
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 5 {
			t.Fatalf("%s has %d messages:\n%s", s.Root(), len(msgs), data)
		}
		for i := 1; i < len(msgs); i++ {
			if msgs[i].ID <= msgs[i-1].ID {
				t.Fatalf("out of order:\n%s", data)
			}
		}
		if n, _ := d.Int("message_count"); n != 5 || d.String("last_id") != msgs[4].ID {
			t.Fatalf("counters:\n%s", data)
		}
		if errs := d.Validate(false); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
}
