package messages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func texts(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func TestBookmarksAndInbox(t *testing.T) {
	s := msgStore(t)
	if _, err := CreateChannel(s, "general", "everything"); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateChannel(s, "quiet", ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := SendMessage(s, "general", "alice", fmt.Sprintf("g%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := SendMessage(s, "@bob", "alice", "psst bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := SendMessage(s, "@carol", "alice", "psst carol"); err != nil {
		t.Fatal(err)
	}

	inbox := func(agent string) map[string]int {
		t.Helper()
		u, err := Inbox(s, agent)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for i, x := range u {
			out[x.Channel] = x.Count
			if i > 0 && u[i-1].Count < x.Count {
				t.Errorf("inbox %s not sorted by count: %+v", agent, u)
			}
		}
		return out
	}
	if got := inbox("bob"); got["general"] != 3 || got["@bob"] != 1 || got["quiet"] != 0 || len(got) != 3 {
		t.Errorf("bob's inbox: got %v, want general 3, @bob 1, quiet 0 and no @carol", got)
	}

	got, err := Recv(s, "bob", "general", RecvOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(texts(got)) != "[g0 g1]" {
		t.Errorf("bob recv limit 2: got %v", texts(got))
	}
	if got := inbox("bob"); got["general"] != 1 {
		t.Errorf("bob's general unread after reading 2: got %d, want 1", got["general"])
	}
	// Carol's bookmark is independent of Bob's.
	if got := inbox("carol"); got["general"] != 3 || got["@carol"] != 1 {
		t.Errorf("carol's inbox: got %v", got)
	}
	if got, _ := Recv(s, "bob", "general", RecvOptions{}); fmt.Sprint(texts(got)) != "[g2]" {
		t.Errorf("bob recv: got %v, want [g2]", texts(got))
	}
	if got, _ := Recv(s, "bob", "general", RecvOptions{}); len(got) != 0 {
		t.Errorf("bob recv again: got %v, want nothing", texts(got))
	}
	if got, _ := Recv(s, "bob", "general", RecvOptions{All: true}); len(got) != 3 {
		t.Errorf("bob recv --all: got %v, want all 3", texts(got))
	}
	if _, err := SendMessage(s, "general", "carol", "g3"); err != nil {
		t.Fatal(err)
	}
	if got := inbox("bob"); got["general"] != 1 {
		t.Errorf("bob's general unread after a new message: got %d, want 1", got["general"])
	}
	marks, err := Bookmarks(s, "bob")
	if err != nil || marks["general"] == "" {
		t.Errorf("Bookmarks: %v %v", marks, err)
	}
}

func TestNotesOutsideTimeline(t *testing.T) {
	s := msgStore(t)
	if _, err := SendMessage(s, "research", "alice", "proposal"); err != nil {
		t.Fatal(err)
	}
	if _, err := AddNote(s, "research", "alice", "I think the proposal is weak"); err != nil {
		t.Fatal(err)
	}
	if _, err := AddNote(s, "research", "bob", "second thoughts"); err != nil {
		t.Fatal(err)
	}
	notes, err := ListNotes(s, "", "research")
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 2 || notes[0].Agent != "alice" || notes[1].Text != "second thoughts" {
		t.Errorf("notes: got %+v", notes)
	}
	msgs, _ := ReadMessages(s, "research", "", 0)
	if len(msgs) != 1 {
		t.Errorf("timeline: got %d messages, want notes left out", len(msgs))
	}
	if n, _ := ListNotes(s, "", "other"); len(n) != 0 {
		t.Errorf("other channel: got %d notes", len(n))
	}
}

// recvResult is what a RecvWait returned.
type recvResult struct {
	msgs []Message
	err  error
}

// blockedRecvWait starts RecvWait for agent on channel and returns once
// it has checked, found nothing and blocked, with where its result will
// come. The safety re-check is pushed out of reach (an hour), so only an
// event can wake it; the wait gives up after 60 s.
func blockedRecvWait(t *testing.T, s *docstore.Store, agent, channel string) <-chan recvResult {
	t.Helper()
	old := WaitSafetyInterval
	WaitSafetyInterval = time.Hour
	waiting := make(chan struct{})
	waitingHook = func() { close(waiting) }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(func() { cancel(); WaitSafetyInterval = old; waitingHook = nil })
	done := make(chan recvResult, 1)
	go func() {
		msgs, err := RecvWait(ctx, s, agent, channel, RecvOptions{})
		done <- recvResult{msgs, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("RecvWait returned before it blocked: %v %v", r.msgs, r.err)
	}
	return done
}

// recv --wait is woken by a message another process sends: the sender is
// started only once the waiter has checked and found nothing, and the
// safety re-check is pushed out of reach, so only the directory event can
// wake it.
func TestRecvWaitWokenByOtherProcess(t *testing.T) {
	s := msgStore(t)
	if _, err := CreateChannel(s, "news", ""); err != nil {
		t.Fatal(err)
	}
	done := blockedRecvWait(t, s, "bob", "news")
	cmd := helperCmd(t, s, "send", "TAVERN_MSG_CHANNEL=news", "TAVERN_MSG_SENDER=alice", "TAVERN_MSG_N=1")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.msgs) != 1 || r.msgs[0].Text != "alice 0" {
		t.Errorf("got %v, want the other process's message", texts(r.msgs))
	}
	// And a wait with nothing coming times out with the context's error.
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	waitingHook = nil
	if _, err := RecvWait(short, s, "bob", "news", RecvOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("idle wait: got %v, want DeadlineExceeded", err)
	}
}

// A wait on a channel that names nothing fails at once with the unknown
// name and creates nothing: no message directory, no bookmark, no channel
// listed afterwards. The direct channel of an existing agent may be waited
// on before its first message; the wait gives it its document, so no
// message directory is ever left without one.
func TestRecvWaitUnknownChannel(t *testing.T) {
	s := msgStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := RecvWait(ctx, s, "bob", "typo", RecvOptions{})
	if !errors.Is(err, schema.ErrUnknownName) {
		t.Fatalf("RecvWait on an unknown channel: %v, want an unknown name", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refused after %s, want at once", d)
	}
	for _, rel := range []string{"messages/typo", "bookmarks/bob.md", "channels/typo.md"} {
		if _, err := os.Stat(filepath.Join(s.Root(), rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the refused wait: %v, want it absent", rel, err)
		}
	}
	if chs, err := ListChannels(s, true); len(chs) != 0 || err != nil {
		t.Errorf("channels after the refused wait: %+v %v, want none", chs, err)
	}

	// A message directory alone is no channel: not listed, not known,
	// reported by Findings.
	if err := os.MkdirAll(filepath.Join(s.Root(), "messages", "stray"), 0o755); err != nil {
		t.Fatal(err)
	}
	if chs, _ := ListChannels(s, true); len(chs) != 0 {
		t.Errorf("a message directory without a document listed: %+v", chs)
	}
	if err := CheckChannel(s, "stray"); !errors.Is(err, schema.ErrUnknownName) {
		t.Errorf("CheckChannel(stray) = %v, want an unknown name", err)
	}
	f, err := Findings(s)
	if err != nil || len(f) != 1 || f[0].Path != "messages/stray" || f[0].Kind != docstore.FindingStrayDir {
		t.Fatalf("findings: %+v %v", f, err)
	}
	if err := f[0].Repair(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "messages", "stray")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an empty stray directory after its repair: %v", err)
	}

	// @bob, an agent with a document: waited on before any message.
	if err := os.WriteFile(filepath.Join(s.Root(), "agents", "bob.md"), []byte("---\nname: bob\nstate: idle\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := RecvWait(short, s, "bob", "@bob", RecvOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on @bob: %v, want DeadlineExceeded", err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "channels", "@bob.md")); err != nil {
		t.Errorf("@bob's channel document after a wait on it: %v", err)
	}
	if f, err := Findings(s); err != nil || len(f) != 0 {
		t.Errorf("findings after a wait on @bob: %+v %v, want none", f, err)
	}
}

// RecvEach reads several channels under one lock and writes the bookmarks
// once; a channel take stops before keeps its messages unread.
func TestRecvEach(t *testing.T) {
	s := msgStore(t)
	for _, ch := range []string{"a", "b", "c"} {
		if _, err := SendMessages(s, ch, "alice", []string{ch + "1", ch + "2", ch + "3"}); err != nil {
			t.Fatal(err)
		}
	}
	writes := 0
	s.Observe(func(m docstore.Mutation) {
		if m.Path == "bookmarks/bob.md" {
			writes++
		}
	})
	var got []string
	skipped, err := RecvEach(s, "bob", []string{"a", "b", "c"}, RecvOptions{Limit: 2}, func(ch string, msgs []Message) bool {
		got = append(got, texts(msgs)...)
		return ch != "b" // stop after b
	})
	if err != nil || len(skipped) != 0 {
		t.Fatal(skipped, err)
	}
	if want := []string{"a1", "a2", "b1", "b2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	if writes > 2 { // the bookmark document's creation, and one update
		t.Errorf("%d writes of the bookmarks, want one update", writes)
	}
	marks, _ := Bookmarks(s, "bob")
	if len(marks) != 2 || marks["c"] != "" {
		t.Errorf("bookmarks %v: a and b advanced, c untouched", marks)
	}
	rest, _ := Recv(s, "bob", "a", RecvOptions{})
	if fmt.Sprint(texts(rest)) != "[a3]" {
		t.Errorf("a after RecvEach: %v, want [a3]", texts(rest))
	}
	if rest, _ := Recv(s, "bob", "c", RecvOptions{}); len(rest) != 3 {
		t.Errorf("c after RecvEach: %v, want all three", texts(rest))
	}
}

// A direct channel @bob is bob's: another agent's Recv, RecvWait and
// RecvEach are refused naming both, before any bookmark is made; bob and
// the person read it. Before, alice read it and her bookmark moved.
func TestDirectChannelOthers(t *testing.T) {
	s := msgStore(t)
	if _, err := CreateChannel(s, "@user", ""); err != nil { // an existing channel without an agent document
		t.Fatal(err)
	}
	if _, err := SendMessage(s, "@user", "bob", "for the person"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	refused := func(what string, err error) {
		t.Helper()
		var de *DirectError
		if !errors.As(err, &de) || !errors.Is(err, ErrNotYours) || de.Channel != "@user" || de.Reader != "alice" {
			t.Errorf("%s: %v, want a DirectError for alice on @user", what, err)
		}
	}
	_, err := Recv(s, "alice", "@user", RecvOptions{})
	refused("Recv", err)
	_, err = Recv(s, "alice", "@user", RecvOptions{All: true})
	refused("Recv --all", err)
	_, err = RecvWait(ctx, s, "alice", "@user", RecvOptions{})
	refused("RecvWait", err)
	_, err = RecvEach(s, "alice", []string{"@user"}, RecvOptions{}, func(string, []Message) bool { return true })
	refused("RecvEach", err)
	if _, err := os.Stat(filepath.Join(s.Root(), "bookmarks", "alice.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("alice's bookmark after the refusals: %v, want it absent", err)
	}
	if got, err := Recv(s, "user", "@user", RecvOptions{}); err != nil || len(got) != 1 {
		t.Errorf("the person's own: %v %v", texts(got), err)
	}
	for _, tc := range []struct {
		reader, channel string
		want            bool
	}{
		{"bob", "@bob", true}, {"alice", "@bob", false}, {"user", "@bob", true},
		{"", "@bob", true}, {"alice", "general", true},
	} {
		if got := CanRead(s, tc.reader, tc.channel); got != tc.want {
			t.Errorf("CanRead(%q, %q) = %v, want %v", tc.reader, tc.channel, got, tc.want)
		}
	}
}

// The notes of a direct channel obey CanRead as its messages do: before,
// ListNotes read @user's notes for anyone. Writing one there is anyone's,
// as sending is.
func TestDirectChannelNotes(t *testing.T) {
	s := msgStore(t)
	if _, err := CreateChannel(s, "@user", ""); err != nil { // an existing channel without an agent document
		t.Fatal(err)
	}
	if _, err := AddNote(s, "@user", "user", "the person's own thought"); err != nil {
		t.Fatal(err)
	}
	if _, err := AddNote(s, "@user", "alice", "alice writes to the person"); err != nil {
		t.Errorf("AddNote by alice on @user: %v, want it written", err)
	}
	got, err := ListNotes(s, "alice", "@user")
	var de *DirectError
	if !errors.As(err, &de) || !errors.Is(err, ErrNotYours) || de.Op != "notes" || de.Channel != "@user" || de.Reader != "alice" || len(got) != 0 {
		t.Errorf("ListNotes by alice: %d notes, %v; want a DirectError and none", len(got), err)
	}
	for _, reader := range []string{"user", ""} {
		if got, err := ListNotes(s, reader, "@user"); err != nil || len(got) != 2 {
			t.Errorf("ListNotes by %q: %d notes, %v; want both", reader, len(got), err)
		}
	}
}
