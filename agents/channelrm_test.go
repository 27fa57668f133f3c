package agents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// `tavern rm channels/gen` while other processes (their own Stores) send
// to gen and write notes on it, one after another. rm took the channel
// document without the channel's lock, then its chunks and notes: a send
// that had checked the channel before wrote a chunk after rm listed the
// channel's files (left behind: a messages directory with no channel,
// which doctor reports and --fix made a channel of again) or made the
// channel document again. Now rm holds the channel's lock until all of
// it is in the trash, and a send or note checks the channel under it:
// each lands before the rm, and goes to the trash with it, or after it
// and is refused as an unknown channel. Nothing of gen is left, and
// every message a send acknowledged is in the trash.
func TestRmChannelSerialisesWithSend(t *testing.T) {
	m := newRelaxedManager(t)
	s := m.Store
	if !s.HasRule(RuleAgentState) {
		InstallRules(s, "") // a person's rm
	}
	if _, err := s.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.Set("chunk_size", 1) }); err != nil {
		t.Fatal(err)
	}
	rounds := 20
	if raceEnabled {
		rounds = 8
	}
	for round := range rounds {
		if _, err := messages.CreateChannel(s, "gen", ""); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		type result struct {
			ids []string
			err error
		}
		started := make(chan struct{}, 2)
		rmDone := make(chan struct{})
		results := make(chan result, 2)
		for _, write := range []func(s *docstore.Store) (string, error){
			func(s *docstore.Store) (string, error) {
				return messages.Send(s, "gen", "ann", "hello", messages.SendOptions{})
			},
			func(s *docstore.Store) (string, error) {
				n, err := messages.AddNote(s, "gen", "ann", "a note")
				if err != nil {
					return "", err
				}
				return n.ID, nil
			},
		} {
			s2, err := docstore.Open(s.Root()) // another process's view
			if err != nil {
				t.Fatal(err)
			}
			InstallRules(s2, "ann")
			go func() {
				var r result
				// Until a write fails, or one more after the rm returned
				// (which must: a channel made again would take writes
				// for ever).
				for last := false; !last; {
					select {
					case <-rmDone:
						last = true
					default:
					}
					id, err := write(s2)
					if err != nil {
						r.err = err
						break
					}
					if len(r.ids) == 0 {
						started <- struct{}{}
					}
					r.ids = append(r.ids, id)
				}
				if len(r.ids) == 0 {
					started <- struct{}{}
				}
				results <- r
			}()
		}
		<-started
		<-started
		_, rmErr := s.DeleteAll("channels/gen.md")
		close(rmDone)
		var acked []string
		for range 2 {
			r := <-results
			if rmErr != nil {
				continue
			}
			var ue *schema.UnknownError
			if !errors.As(r.err, &ue) || ue.What != "channel" {
				t.Errorf("round %d: a write after the rm: %v, want an unknown channel", round, r.err)
			}
			acked = append(acked, r.ids...)
		}
		if rmErr != nil {
			t.Fatalf("round %d: rm: %v", round, rmErr)
		}
		for _, rel := range []string{"channels/gen.md", "messages/gen", "notes/gen"} {
			if _, err := os.Lstat(filepath.Join(s.Root(), rel)); err == nil {
				t.Errorf("round %d: %s is there after the rm", round, rel)
			}
		}
		trash := trashText(t, s)
		for _, id := range acked {
			if !strings.Contains(trash, id) {
				t.Errorf("round %d: %s was written, and is neither in gen nor in the trash", round, id)
			}
		}
		if t.Failed() {
			return
		}
	}
}

// trashText is every file in .trash/, concatenated.
func trashText(tb testing.TB, s *docstore.Store) string {
	tb.Helper()
	dir := filepath.Join(s.Root(), ".trash")
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// `tavern doctor --fix` while `tavern rm channels/gen` runs: doctor sees
// messages/gen without its channel document (the rm has moved the
// document, not yet the chunks) and its repair makes the document, after
// the rm has moved the rest. The repair made it from what doctor had
// seen: the rm undone, a channel with none of its messages. It now looks
// again under the channel's lock, which the rm holds until it is done,
// and finds nothing to repair.
func TestDoctorRepairAfterRmChannel(t *testing.T) {
	m := newManager(t)
	s := m.Store
	if _, err := messages.Send(s, "gen", "ann", "hello", messages.SendOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	s2, err := docstore.Open(s.Root()) // doctor: another process
	if err != nil {
		t.Fatal(err)
	}
	InstallRules(s2, "")
	var found []docstore.Finding
	var findErr error
	armed := true
	s.Observe(func(mu docstore.Mutation) {
		if armed && mu.Op == "delete" && mu.Path == "channels/gen.md" {
			armed = false
			found, findErr = messages.Findings(s2)
		}
	})
	if _, err := s.DeleteAll("channels/gen.md"); err != nil {
		t.Fatal(err)
	}
	if armed || findErr != nil || len(found) != 1 {
		t.Fatalf("doctor during the rm: %v, %v; want the messages of gen without their channel", found, findErr)
	}
	if err := found[0].Repair(); err != nil {
		t.Fatalf("repair: %v", err)
	}
	for _, rel := range []string{"channels/gen.md", "messages/gen"} {
		if _, err := os.Lstat(filepath.Join(s.Root(), rel)); err == nil {
			t.Errorf("%s is there after the rm and the repair", rel)
		}
	}
}
