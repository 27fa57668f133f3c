package gitsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
	"github.com/tavernhq/tavern/schema"
)

// agentSync runs one round as `tavern sync` does (agents' mergers and
// hooks).
func agentSync(t *testing.T, s *docstore.Store) *gitsync.Report {
	t.Helper()
	sy, err := agents.OpenSyncer(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sy.Close()
	rep, err := sy.Sync(context.Background())
	if err != nil || rep.Offline != "" || len(rep.Problems) > 0 {
		t.Fatalf("sync of %s: %v %+v", s.Root(), err, rep)
	}
	return rep
}

// channelOnTwoClones makes channel gen on alpha (a message, a note),
// synced, and clones it on beta.
func channelOnTwoClones(t *testing.T) (a, b *docstore.Store) {
	t.Helper()
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a = newOrigin(t, root, "alpha", url)
	agents.InstallRules(a, "")
	if _, err := messages.CreateChannel(a, "gen", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := messages.Send(a, "gen", "ann", "hello", messages.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := messages.AddNote(a, "gen", "ann", "a note"); err != nil {
		t.Fatal(err)
	}
	agentSync(t, a)
	b = clone(t, root, "beta", url)
	agents.InstallRules(b, "")
	return a, b
}

// channelRemovedOnBeta makes channel gen on alpha (a message, a note),
// clones it on beta, and removes gen there (`tavern rm channels/gen`:
// the document, its messages and notes) and syncs beta: alpha's next
// round takes the removal in.
func channelRemovedOnBeta(t *testing.T) (a *docstore.Store) {
	t.Helper()
	a, b := channelOnTwoClones(t)
	removed, err := b.DeleteAll("channels/gen.md")
	if err != nil || len(removed) != 3 {
		t.Fatalf("rm on beta: %v %v", removed, err)
	}
	agentSync(t, b)
	return a
}

// leftOfGen lists what is left on s of channel gen: its document, and the
// files in its messages and notes directories.
func leftOfGen(t *testing.T, s *docstore.Store) []string {
	t.Helper()
	var left []string
	if _, err := os.Stat(filepath.Join(s.Root(), "channels", "gen.md")); err == nil {
		left = append(left, "channels/gen.md")
	}
	for _, dir := range []string{"messages/gen", "notes/gen"} {
		ents, err := os.ReadDir(filepath.Join(s.Root(), filepath.FromSlash(dir)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, e := range ents {
			left = append(left, dir+"/"+e.Name())
		}
	}
	return left
}

// A channel removed on another machine is taken in as `tavern rm` takes
// it out: its document, messages and notes under the channel's lock in
// one step. The sync applied the messages under the channel's lock and
// the document (and each note) under its document lock, one after the
// other: a send and a note in between (the hook) found the channel still
// there and wrote a chunk and a note that the removal of the document
// then left without their channel (doctor's stray-messages, which --fix
// made a channel of again). Now both are refused as an unknown channel,
// and nothing of gen is left.
func TestSyncChannelRemovalIsOneStep(t *testing.T) {
	a := channelRemovedOnBeta(t)
	// Another process on alpha, with its own Store.
	a2, err := docstore.Open(a.Root())
	if err != nil {
		t.Fatal(err)
	}
	agents.InstallRules(a2, "ann")
	var sendErr, noteErr error
	done := false
	defer gitsync.SetTestHookAfterUnit(func(key string, paths []string) {
		if done || key != schema.ChannelLockKey("gen") {
			return
		}
		done = true
		_, sendErr = messages.Send(a2, "gen", "ann", "between", messages.SendOptions{})
		_, noteErr = messages.AddNote(a2, "gen", "ann", "between")
	})()
	agentSync(t, a)
	if !done {
		t.Fatal("no unit under gen's channel lock")
	}
	var ue *schema.UnknownError
	for what, err := range map[string]error{"send": sendErr, "note": noteErr} {
		if !errors.As(err, &ue) {
			t.Errorf("%s during the removal: got %v, want an unknown channel", what, err)
		}
	}
	if left := leftOfGen(t, a); len(left) > 0 {
		t.Errorf("left of the removed channel: %v", left)
	}
}

// After a channel's removal came in by sync, its emptied messages/gen/
// and notes/gen/ directories go too, as after a local rm: the sync left
// them, and doctor reported messages/gen as stray messages. A directory
// that still holds a file (an editor's, which the sync does not carry)
// is kept.
func TestSyncChannelRemovalLeavesNoDirs(t *testing.T) {
	a := channelRemovedOnBeta(t)
	swap := filepath.Join(a.Root(), "notes", "gen", ".draft.swp")
	if err := os.WriteFile(swap, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	agentSync(t, a)
	for _, dir := range []string{"channels/gen.md", "messages/gen"} {
		if _, err := os.Stat(filepath.Join(a.Root(), filepath.FromSlash(dir))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the removal came in: %v, want gone", dir, err)
		}
	}
	if left := leftOfGen(t, a); len(left) != 1 || left[0] != "notes/gen/.draft.swp" {
		t.Errorf("left of gen: %v, want only the editor's file", left)
	}
	m, err := agents.NewManager(a)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	br, err := queues.Open(a, queues.Options{Journal: m.Journal})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	findings, err := m.Doctor(br, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("doctor: %s %s: %s", f.Kind, f.Path, f.Detail)
	}
}

// A message or note removed alone on another machine (`tavern rm
// messages/gen/ID`), its channel still there, leaves the channel's
// directories as a local rm of it does: there. The sync removed the
// emptied messages/gen/ as if the channel had gone, which a waiter on the
// channel watches (WaitChannel makes it to watch it): its watch went with
// it, and the channel's next message woke nobody until the waiter's safety
// re-check.
func TestSyncMessageRemovalKeepsChannelDirs(t *testing.T) {
	a, b := channelOnTwoClones(t)
	var files []string
	for _, dir := range []string{"messages/gen", "notes/gen"} {
		ents, err := os.ReadDir(filepath.Join(b.Root(), filepath.FromSlash(dir)))
		if err != nil || len(ents) != 1 {
			t.Fatalf("%s on beta: %v %v, want one file", dir, ents, err)
		}
		files = append(files, dir+"/"+ents[0].Name())
	}
	for _, p := range files {
		if err := b.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	agentSync(t, b)
	agentSync(t, a)
	for _, s := range []*docstore.Store{b, a} {
		if left := leftOfGen(t, s); len(left) != 1 || left[0] != "channels/gen.md" {
			t.Errorf("%s: left of gen %v, want its document only", s.Root(), left)
		}
		for _, dir := range []string{"messages/gen", "notes/gen"} {
			if _, err := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(dir))); err != nil {
				t.Errorf("%s: %s after its last file was removed, the channel still there: %v, want kept", s.Root(), dir, err)
			}
		}
	}
}
