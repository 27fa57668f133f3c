package messages

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/schema"
)

// msgStore makes a fresh store in a temp dir.
func msgStore(tb testing.TB) *docstore.Store {
	tb.Helper()
	s, _, err := docstore.Init(filepath.Join(tb.TempDir(), ".tavern"), "test")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func setConfig(tb testing.TB, s *docstore.Store, key string, v any) {
	tb.Helper()
	if _, err := s.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.Set(key, v) }); err != nil {
		tb.Fatal(err)
	}
}

func TestChunkRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 1, 24, 10, 0, 0, 123e6, time.UTC)
	msgs := []Message{
		{ID: "0194a7c2-5b1e-7c3d-8e9f-000000000001", Sender: "alice", Time: schema.TimeOf(t0), Text: "hello"},
		{ID: "0194a7c2-5b1e-7c3d-8e9f-000000000002", Sender: "bob", Time: schema.TimeOf(t0.Add(time.Second)), Text: "### not a header\n\\### nor this\n\n\nblank lines\n<!-- id: fake -->"},
		{ID: "0194a7c2-5b1e-7c3d-8e9f-000000000003", Sender: "carol", Time: schema.TimeOf(t0.Add(2 * time.Second)), Text: ""},
		{ID: "0194a7c2-5b1e-7c3d-8e9f-000000000004", Sender: "dave", Time: schema.TimeOf(t0.Add(3 * time.Second)), Text: "\n\nleading blank lines — and a dash"},
	}
	var buf bytes.Buffer
	buf.WriteString("\n# a title someone added\n\n")
	for _, m := range msgs {
		renderMessage(&buf, m)
	}
	got, err := ParseChunkBody(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("got %d messages, want %d:\n%s", len(got), len(msgs), buf.String())
	}
	for i := range msgs {
		if got[i].ID != msgs[i].ID || got[i].Sender != msgs[i].Sender || !got[i].Time.Equal(msgs[i].Time.Time) || got[i].Text != msgs[i].Text {
			t.Errorf("message %d: got %+v, want %+v", i, got[i], msgs[i])
		}
	}
}

func TestChunkParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		line       int
	}{
		{"no sender separator", "\n### 2026-01-01T00:00:00.000Z alice\n<!-- id: x -->\n", 2},
		{"bad time", "\n### yesterday — alice\n<!-- id: x -->\n", 2},
		{"missing id line", "\n### 2026-01-01T00:00:00.000Z — alice\n\ntext\n", 3},
		{"header at end", "### 2026-01-01T00:00:00.000Z — alice", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseChunkBody([]byte(tc.body))
			var ce *ChunkError
			if !errors.As(err, &ce) || !errors.Is(err, ErrBadChunk) {
				t.Fatalf("got %v, want a *ChunkError", err)
			}
			if ce.Line != tc.line {
				t.Errorf("got line %d, want %d", ce.Line, tc.line)
			}
		})
	}
}

// FuzzParseChunkBody: the parser never panics, and whatever it accepts
// renders to a body it parses back to the same messages.
func FuzzParseChunkBody(f *testing.F) {
	f.Add([]byte("\n### 2026-01-24T10:00:00.123Z — alice\n<!-- id: a -->\n\nhello\n\n"))
	f.Add([]byte("### 2026-01-24T10:00:00Z — b — c\n<!-- id: x -->\n\\### esc\n### 2026-01-24T10:00:00Z — d\n<!-- id: y -->"))
	f.Add([]byte("preamble\n\n### 2026-01-24 — x\n<!-- id: z -->\n\n\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, err := ParseChunkBody(body)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		for _, m := range msgs {
			renderMessage(&buf, m)
		}
		again, err := ParseChunkBody(buf.Bytes())
		if err != nil {
			t.Fatalf("re-parse of rendered messages: %v\n%q", err, buf.String())
		}
		if len(again) != len(msgs) {
			t.Fatalf("got %d messages after round trip, want %d", len(again), len(msgs))
		}
		for i := range msgs {
			a, b := msgs[i], again[i]
			// Rendering normalises the time to milliseconds.
			if a.ID != b.ID || a.Sender != b.Sender || a.Text != b.Text || !a.Time.Truncate(time.Millisecond).Equal(b.Time.Time) {
				t.Fatalf("message %d: got %+v, want %+v", i, b, a)
			}
		}
	})
}

func TestNextIDOrdered(t *testing.T) {
	far := "ffffffff-ffff-7fff-bfff-fffffffffffe"
	got := nextID(far)
	if got <= far {
		t.Fatalf("nextID(%s) = %s, want greater", far, got)
	}
	if got != "ffffffff-ffff-7fff-bfff-ffffffffffff" {
		t.Errorf("got %s, want the successor", got)
	}
	// Carry out of the 62 random bits into rand_a, keeping variant bits.
	got = nextID("ffffffff-ffff-7ffe-bfff-ffffffffffff")
	if want := "ffffffff-ffff-7fff-8000-000000000000"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	prev := ""
	for i := 0; i < 1000; i++ {
		id := nextID(prev)
		if id <= prev {
			t.Fatalf("id %s not after %s", id, prev)
		}
		prev = id
	}
}

func TestSendAndRead(t *testing.T) {
	s := msgStore(t)
	setConfig(t, s, "chunk_size", 3)
	var ids []string
	for i := 0; i < 7; i++ {
		id, err := SendMessage(s, "general", "alice", fmt.Sprintf("message %d\n", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	more, err := SendMessages(s, "general", "bob", []string{"b1", "b2", "b3", "b4"})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, more...)
	msgs, err := ReadMessages(s, "general", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 11 {
		t.Fatalf("got %d messages, want 11", len(msgs))
	}
	for i, m := range msgs {
		if m.ID != ids[i] {
			t.Errorf("message %d: got id %s, want %s", i, m.ID, ids[i])
		}
	}
	if msgs[0].Text != "message 0" {
		t.Errorf("got text %q, want trailing newline dropped", msgs[0].Text)
	}
	chunks, _ := chunkFiles(s, "general")
	if len(chunks) != 4 {
		t.Errorf("got %d chunks, want 4 (3+3+3+2)", len(chunks))
	}
	checkChunks(t, s, "general", 3)
	after, err := ReadMessages(s, "general", ids[4], 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 6 || after[0].ID != ids[5] {
		t.Errorf("after %s: got %d messages starting %v, want 6 starting %s", ids[4], len(after), after, ids[5])
	}
	if n, _, _, _ := countAfter(s, "general", "", ids[4], nil); n != 6 {
		t.Errorf("countAfter: got %d, want 6", n)
	}
	// Channel doc created on first send.
	if c, err := GetChannel(s, "general"); err != nil || c.Archived {
		t.Errorf("GetChannel: %v, %+v", err, c)
	}
}

func TestSendRefusals(t *testing.T) {
	s := msgStore(t)
	for _, tc := range []struct {
		channel, sender, text string
		want                  error
	}{
		{"general", "alice", "  \n", ErrEmptyMessage},
		{"general", "alice", strings.Repeat("x", MaxMessageSize+1), ErrMessageTooLarge},
		{"../etc", "alice", "x", schema.ErrInvalidName},
		{"a b", "alice", "x", schema.ErrInvalidName},
		{"a@b", "alice", "x", schema.ErrInvalidName},
		{"@", "alice", "x", schema.ErrInvalidName},
		{"general", "al/ice", "x", schema.ErrInvalidName},
	} {
		if _, err := SendMessage(s, tc.channel, tc.sender, tc.text); !errors.Is(err, tc.want) {
			t.Errorf("send %q from %q: got %v, want %v", tc.channel, tc.sender, err, tc.want)
		}
	}
	if _, err := SendMessage(s, "@bob", "alice", "direct"); err != nil {
		t.Fatalf("direct message: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "messages", "@bob")); err != nil {
		t.Errorf("direct channel dir: %v", err)
	}
	if err := ArchiveChannel(s, "@bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := SendMessage(s, "@bob", "alice", "late"); !errors.Is(err, ErrArchived) {
		t.Errorf("send to archived: got %v, want ErrArchived", err)
	}
	if chs, _ := ListChannels(s, false); len(chs) != 0 {
		t.Errorf("ListChannels: got %v, want archived hidden", chs)
	}
	if chs, _ := ListChannels(s, true); len(chs) != 1 || chs[0].Messages != 1 {
		t.Errorf("ListChannels(all): got %+v", chs)
	}
}

func TestChunkRotatesByHour(t *testing.T) {
	s := msgStore(t)
	if _, err := SendMessage(s, "c", "alice", "first"); err != nil {
		t.Fatal(err)
	}
	// Age the chunk: pretend its message was sent two hours ago.
	chunks, _ := chunkFiles(s, "c")
	data, _ := s.ReadFile(chunks[0])
	old := time.Now().Add(-2 * time.Hour).UTC()
	msgs, _ := ReadMessages(s, "c", "", 0)
	data = bytes.ReplaceAll(data, []byte(schema.FormatTime(msgs[0].Time.Time)), []byte(schema.FormatTime(old)))
	if err := s.WriteFile(chunks[0], data); err != nil {
		t.Fatal(err)
	}
	if _, err := SendMessage(s, "c", "alice", "second"); err != nil {
		t.Fatal(err)
	}
	if chunks, _ := chunkFiles(s, "c"); len(chunks) != 2 {
		t.Errorf("got %d chunks, want a new chunk after an hour", len(chunks))
	}
}

// checkChunks verifies every chunk's frontmatter against its messages and
// that all but the last chunk are full (for a run shorter than an hour).
func checkChunks(tb testing.TB, s *docstore.Store, channel string, size int) []Message {
	tb.Helper()
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		tb.Fatal(err)
	}
	var all []Message
	for i, c := range chunks {
		d, err := s.Get(c)
		if err != nil {
			tb.Fatal(err)
		}
		if errs := d.Validate(true); len(errs) > 0 {
			tb.Errorf("%s: %v", c, errs)
		}
		msgs, err := chunkMessages(d)
		if err != nil {
			tb.Fatal(err)
		}
		n, _ := d.Int("message_count")
		if int(n) != len(msgs) || len(msgs) == 0 {
			tb.Errorf("%s: message_count %d, has %d messages", c, n, len(msgs))
			continue
		}
		if d.String("first_id") != msgs[0].ID || d.String("last_id") != msgs[len(msgs)-1].ID || chunkName(c) != msgs[0].ID {
			tb.Errorf("%s: first/last id fields do not match its messages", c)
		}
		if len(msgs) > size || (i < len(chunks)-1 && len(msgs) != size) {
			tb.Errorf("%s: %d messages, chunk size %d", c, len(msgs), size)
		}
		all = append(all, msgs...)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID || all[i].Time.Before(all[i-1].Time.Time) {
			tb.Fatalf("message %d (%s) not after %s", i, all[i].ID, all[i-1].ID)
		}
	}
	return all
}

// TestMessagingHelperProcess is not a test: it is the worker other tests
// start by re-executing the test binary.
func TestMessagingHelperProcess(t *testing.T) {
	role := storetest.HelperRole()
	if role == "" {
		t.Skip("helper process")
	}
	s, err := docstore.Open(os.Getenv("TAVERN_MSG_DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	switch role {
	case "send":
		name := os.Getenv("TAVERN_MSG_SENDER")
		n, _ := strconv.Atoi(os.Getenv("TAVERN_MSG_N"))
		for i := 0; i < n; i++ {
			id, err := SendMessage(s, os.Getenv("TAVERN_MSG_CHANNEL"), name, fmt.Sprintf("%s %d", name, i))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			// Acknowledged: the id is printed only after the durable write.
			fmt.Println(id)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown helper role", role)
		os.Exit(2)
	}
	os.Exit(0)
}

func helperCmd(tb testing.TB, s *docstore.Store, role string, env ...string) *exec.Cmd {
	tb.Helper()
	return storetest.HelperCommand(tb, "^TestMessagingHelperProcess$", role, append(env, "TAVERN_MSG_DIR="+s.Root())...)
}

// Eight processes send 500 messages each into one channel: exactly 4,000
// messages arrive, each once, in per-sender order, ids strictly increasing
// in file order, chunks full except the last.
func TestConcurrentSendersManyProcesses(t *testing.T) {
	procs, per := 8, 500
	if testing.Short() {
		procs, per = 4, 100
	}
	s := msgStore(t)
	// Exclusion and ordering do not depend on fsync; relaxed durability
	// keeps this test's time for the locking under test (the durable path
	// is the same code plus fsyncs, covered by the other tests).
	setConfig(t, s, "durability", "relaxed")
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for p := range cmds {
		cmds[p] = helperCmd(t, s, "send", "TAVERN_MSG_CHANNEL=busy", fmt.Sprintf("TAVERN_MSG_SENDER=w%d", p), fmt.Sprintf("TAVERN_MSG_N=%d", per))
		outs[p] = &bytes.Buffer{}
		cmds[p].Stdout = outs[p]
		if err := cmds[p].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v", p, err)
		}
	}
	all := checkChunks(t, s, "busy", DefaultChunkSize)
	if len(all) != procs*per {
		t.Fatalf("got %d messages, want %d", len(all), procs*per)
	}
	seen := map[string]bool{}
	next := map[string]int{}
	for _, m := range all {
		if seen[m.Text] {
			t.Fatalf("duplicate message %q", m.Text)
		}
		seen[m.Text] = true
		var name string
		var i int
		if _, err := fmt.Sscanf(m.Text, "%s %d", &name, &i); err != nil || name != m.Sender {
			t.Fatalf("bad message %+v", m)
		}
		if i != next[name] {
			t.Fatalf("%s: got message %d, want %d (per-sender order)", name, i, next[name])
		}
		next[name]++
	}
	byID := map[string]bool{}
	for _, m := range all {
		byID[m.ID] = true
	}
	for p, o := range outs {
		for _, id := range strings.Fields(o.String()) {
			if !byID[id] {
				t.Errorf("worker %d: acknowledged id %s missing", p, id)
			}
		}
	}
	if want := (procs*per + DefaultChunkSize - 1) / DefaultChunkSize; len(all) > 0 {
		if chunks, _ := chunkFiles(s, "busy"); len(chunks) != want {
			t.Errorf("got %d chunks, want %d", len(chunks), want)
		}
	}
}

func BenchmarkSendMessage(b *testing.B) {
	s := msgStore(b)
	for i := 0; i < b.N; i++ {
		if _, err := SendMessage(s, "bench", "alice", "a line of captured output"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSendMessagesBatch100(b *testing.B) {
	s := msgStore(b)
	lines := make([]string, 100)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of captured output", i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SendMessages(s, "bench", "alice", lines); err != nil {
			b.Fatal(err)
		}
	}
}

// TestChunkHandAppended: a message appended to a chunk by hand, the
// markdown way (a blank line before its header), leaves the message
// before it as it was sent. Before, that message's text grew a trailing
// newline ("one\n" in recv --json, a blank indented line in recv --all).
func TestChunkHandAppended(t *testing.T) {
	t0 := time.Date(2026, 1, 24, 10, 0, 0, 123e6, time.UTC)
	var buf bytes.Buffer
	renderMessage(&buf, Message{ID: "0194a7c2-5b1e-7c3d-8e9f-000000000001", Sender: "alice", Time: schema.TimeOf(t0), Text: "one"})
	buf.WriteString("\n### 2026-01-24T10:05:00.000Z — bob\n<!-- id: 0194a7c2-5b1e-7c3d-8e9f-000000000002 -->\n\nhand added\n\n\n")
	got, err := ParseChunkBody(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Text != "one" || got[1].Text != "hand added" {
		t.Errorf("got %+v, want texts one and hand added", got)
	}
}

// TestCheckRead: a read by path (show, ls, edit) of a direct channel's
// notes and messages holds CanRead's rule; other documents, the channel's
// own among them, and the person are never refused.
func TestCheckRead(t *testing.T) {
	s := msgStore(t)
	tests := []struct {
		reader, rel string
		refused     bool
	}{
		{"alice", "notes/@bob/01a2.md", true},
		{"alice", "messages/@bob/01a2.md", true},
		{"alice", "notes/@bob/", true},
		{"bob", "notes/@bob/01a2.md", false},
		{"", "notes/@bob/01a2.md", false},
		{"user", "messages/@bob/01a2.md", false},
		{"alice", "notes/general/01a2.md", false},
		{"alice", "channels/@bob.md", false},
		{"alice", "notes/", false},
	}
	for _, tt := range tests {
		err := CheckRead(s, "show", tt.reader, tt.rel)
		if got := errors.Is(err, ErrNotYours); got != tt.refused {
			t.Errorf("CheckRead(%q, %q) = %v; want refused %v", tt.reader, tt.rel, err, tt.refused)
		}
	}
}
