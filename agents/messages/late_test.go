package messages

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/gitsync"
)

// twoMachines sends a1 on store a, b2 on store b, a3 on a (in that time
// order) to channel dev and copies b's chunk into a, as a sync brings a
// chunk another machine started: a's chunk (a1, a3) and b's (b2) overlap
// in time. It returns a, the three ids and b's chunk as applied.
func twoMachines(t *testing.T) (a *docstore.Store, ids [3]string, arrived gitsync.Applied) {
	t.Helper()
	a, b := msgStore(t), msgStore(t)
	send := func(s *docstore.Store, text string) string {
		t.Helper()
		id, err := SendMessage(s, "dev", "ann", text)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ids[0] = send(a, "a1")
	ids[1] = send(b, "b2")
	ids[2] = send(a, "a3")
	chunks, err := chunkFiles(b, "dev")
	if err != nil || len(chunks) != 1 {
		t.Fatalf("b's chunks: %v %v", chunks, err)
	}
	data, err := os.ReadFile(filepath.Join(b.Root(), chunks[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Root(), chunks[0]), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return a, ids, gitsync.Applied{Path: chunks[0], After: data}
}

func textsOf(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

// Chunks of two machines overlap in time; reads return every message past
// the bookmark once, in id order. Before, a read started at the last
// chunk named at or before the bookmark (missing a3 after b2) and
// returned chunk order (a3 before b2, so the bookmark moved back to b2
// and a3 came again).
func TestReadMessagesOverlappingChunks(t *testing.T) {
	a, ids, _ := twoMachines(t)
	for _, tc := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 0, []string{"a1", "b2", "a3"}},
		{ids[0], 0, []string{"b2", "a3"}},
		{ids[1], 0, []string{"a3"}},
		{ids[2], 0, nil},
		{"", 2, []string{"a1", "b2"}},
		{ids[0], 1, []string{"b2"}},
	} {
		got, err := ReadMessages(a, "dev", tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(textsOf(got), tc.want) {
			t.Errorf("after %s limit %d: got %v, want %v", tc.after, tc.limit, textsOf(got), tc.want)
		}
		n, _, _, err := countAfter(a, "dev", "", tc.after, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.limit == 0 && n != len(tc.want) {
			t.Errorf("countAfter %s = %d, want %d", tc.after, n, len(tc.want))
		}
	}
}

// A message that arrives older than a reader's bookmark is unread for
// that reader (MarkLate): inbox counts it, recv returns it once, and the
// bookmark's late field is gone after. A reader whose bookmark is below
// it, or who has none, is not marked; nor is one whose bookmark came in
// with the same round (read where the message was).
func TestMarkLate(t *testing.T) {
	a, ids, arrived := twoMachines(t)
	// Undo the copy: bob reads a1 and a3 before b2 arrives; carol a1 only.
	if err := os.Remove(filepath.Join(a.Root(), arrived.Path)); err != nil {
		t.Fatal(err)
	}
	if got, err := Recv(a, "bob", "dev", RecvOptions{}); err != nil || len(got) != 2 {
		t.Fatalf("bob's first recv: %v %v", textsOf(got), err)
	}
	if got, err := Recv(a, "carol", "dev", RecvOptions{Limit: 1}); err != nil || len(got) != 1 {
		t.Fatalf("carol's first recv: %v %v", textsOf(got), err)
	}
	ensureBookmarks(a, "dave")
	if err := os.WriteFile(filepath.Join(a.Root(), arrived.Path), arrived.After, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MarkLate(a, []gitsync.Applied{arrived}); err != nil {
		t.Fatal(err)
	}
	unread := func(agent string) int {
		t.Helper()
		in, err := Inbox(a, agent)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range in {
			if u.Channel == "dev" {
				return u.Count
			}
		}
		return 0
	}
	for _, tc := range []struct {
		agent  string
		unread int
		recv   []string
	}{
		{"bob", 1, []string{"b2"}},
		{"carol", 2, []string{"b2", "a3"}},
		{"dave", 3, []string{"a1", "b2", "a3"}},
	} {
		if got := unread(tc.agent); got != tc.unread {
			t.Errorf("%s: inbox says %d unread, want %d", tc.agent, got, tc.unread)
		}
		got, err := Recv(a, tc.agent, "dev", RecvOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(textsOf(got), tc.recv) {
			t.Errorf("%s: recv %v, want %v", tc.agent, textsOf(got), tc.recv)
		}
		if got, err := Recv(a, tc.agent, "dev", RecvOptions{}); err != nil || len(got) != 0 {
			t.Errorf("%s: second recv %v %v", tc.agent, textsOf(got), err)
		}
		if got := unread(tc.agent); got != 0 {
			t.Errorf("%s: inbox after recv says %d unread", tc.agent, got)
		}
	}
	d, err := a.Get("bookmarks/bob.md")
	if err != nil {
		t.Fatal(err)
	}
	if d.Has("late") {
		t.Errorf("bob's bookmark keeps late after reading it:\n%s", d.Bytes())
	}
	if got := bookmarkMap(d)["dev"]; got != ids[2] {
		t.Errorf("bob's bookmark moved: %v", bookmarkMap(d))
	}

	// A bookmark that came with the same round is not marked.
	a2, _, arrived2 := twoMachines(t)
	os.Remove(filepath.Join(a2.Root(), arrived2.Path))
	Recv(a2, "erin", "dev", RecvOptions{})
	os.WriteFile(filepath.Join(a2.Root(), arrived2.Path), arrived2.After, 0o644)
	if err := MarkLate(a2, []gitsync.Applied{arrived2, {Path: "bookmarks/erin.md", Before: nil}}); err != nil {
		t.Fatal(err)
	}
	if got, err := Recv(a2, "erin", "dev", RecvOptions{}); err != nil || len(got) != 0 {
		t.Errorf("erin (bookmark new with the round): recv %v %v", textsOf(got), err)
	}
}

// A reader's own message that arrives older than its bookmark (it sent
// it as itself on the other machine) is not marked late: its own
// messages are never unread for it. Before, MarkLate put it in the late
// list and inbox counted it.
func TestMarkLateOwn(t *testing.T) {
	a, _, arrived := twoMachines(t) // every message is ann's
	if err := os.Remove(filepath.Join(a.Root(), arrived.Path)); err != nil {
		t.Fatal(err)
	}
	if _, err := Recv(a, "ann", "dev", RecvOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Root(), arrived.Path), arrived.After, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MarkLate(a, []gitsync.Applied{arrived}); err != nil {
		t.Fatal(err)
	}
	d, err := a.Get("bookmarks/ann.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := lateMap(d); len(got) != 0 {
		t.Errorf("ann's own message marked late: %v", got)
	}
}

// Two machines' late lists merge against their base: what either side
// read is gone, what either marked stays.
func TestMergeBookmarkLate(t *testing.T) {
	const x, y, z = "0194a7c2-5b1e-7c3d-8e9f-000000000001", "0194a7c2-5b1e-7c3d-8e9f-000000000002", "0194a7c2-5b1e-7c3d-8e9f-000000000003"
	doc := func(late string) []byte {
		return []byte("---\nversion: 1\nid: 0194a7c2-5b1e-7c3d-8e9f-0000000000ff\nagent: bob\nchannels:\n  dev: 0194a7c2-5b1e-7c3d-8e9f-000000000009\n" + late +
			"created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n---\n")
	}
	base := doc("late:\n  dev: [" + x + ", " + y + "]\n")
	ours := doc("late:\n  dev: [" + x + "]\n")
	theirs := doc("late:\n  dev: [" + x + ", " + y + ", " + z + "]\n")
	out, _, err := MergeBookmark("bookmarks/bob.md", base, ours, theirs)
	if err != nil {
		t.Fatal(err)
	}
	d, err := docstore.Parse("bookmarks/bob.md", out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lateMap(d)["dev"], []string{x, z}; !slices.Equal(got, want) {
		t.Errorf("late = %v, want %v\n%s", got, want, out)
	}
	out, _, err = MergeBookmark("bookmarks/bob.md", base, doc(""), doc("late:\n  dev: ["+x+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := docstore.Parse("bookmarks/bob.md", out); d == nil || d.Has("late") {
		t.Errorf("both read on one side each: late kept\n%s", out)
	}
}

// recv --wait wakes for a message a sync marks late: the chunk is there
// before the wait starts (nothing unread: it is older than the
// bookmark), and only the mark in the bookmark, made while the reader
// waits, makes it unread. The safety re-check is out of reach.
func TestRecvWaitWokenByLateMark(t *testing.T) {
	a, _, arrived := twoMachines(t)
	os.Remove(filepath.Join(a.Root(), arrived.Path))
	if _, err := Recv(a, "bob", "dev", RecvOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Root(), arrived.Path), arrived.After, 0o644); err != nil {
		t.Fatal(err)
	}
	done := blockedRecvWait(t, a, "bob", "dev")
	if err := MarkLate(a, []gitsync.Applied{arrived}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !slices.Equal(textsOf(r.msgs), []string{"b2"}) {
		t.Errorf("RecvWait: %v %v, want [b2]", textsOf(r.msgs), r.err)
	}
}

// A late marker written by an older sync (before MarkLate skipped the
// reader's own) may name the reader's own message; Inbox counted every
// late id, so it stayed unread until a Recv. The marker is written here
// as such a sync left it, a file on disk.
func TestInboxOldLateMarkerOwn(t *testing.T) {
	s := msgStore(t)
	send := func(sender, text string) string {
		t.Helper()
		id, err := SendMessage(s, "dev", sender, text)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	other := send("alice", "old from alice")
	own := send("bob", "mine")
	last := send("alice", "newest from alice")
	count := func(late ...string) int {
		t.Helper()
		doc := "---\nschema_version: 1\nagent: bob\nchannels:\n  dev: " + last + "\nlate:\n  dev: [" + strings.Join(late, ", ") + "]\n---\n"
		if err := os.WriteFile(filepath.Join(s.Root(), "bookmarks", "bob.md"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		u, err := Inbox(s, "bob")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range u {
			if c.Channel == "dev" {
				return c.Count
			}
		}
		t.Fatalf("inbox %+v: no dev", u)
		return 0
	}
	if got := count(own); got != 0 {
		t.Errorf("late [own]: %d unread, want 0", got)
	}
	gone := "01a21671-0000-7000-8000-000000000000" // no such message: recv drops it
	if got := count(other, own, gone); got != 1 {
		t.Errorf("late [other, own, gone]: %d unread, want 1", got)
	}
	msgs, err := Recv(s, "bob", "dev", RecvOptions{})
	if err != nil || !slices.Equal(textsOf(msgs), []string{"old from alice"}) {
		t.Errorf("Recv: %v %v, want [old from alice]", textsOf(msgs), err)
	}
}
