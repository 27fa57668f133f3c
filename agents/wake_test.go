package agents

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

func writeDoc(tb testing.TB, s *docstore.Store, rel, text string) {
	tb.Helper()
	if err := s.WriteFile(rel, []byte(text)); err != nil {
		tb.Fatal(err)
	}
}

func TestWakeSleepRoundTrip(t *testing.T) {
	s := msgStore(t)
	now := time.Now()
	if _, err := Wake(s, "zealot", now); err == nil {
		t.Fatal("wake of an unknown agent: got nil error")
	}
	writeDoc(t, s, "agents/zealot.md", "---\nname: zealot\nrole: coder\nspawns: 2\n---\n")
	writeDoc(t, s, "queues/build/claimed/01J0000000000000000000ITEM.md", "---\nqueue: build\ntitle: fix the parser\nclaimed_by: zealot\n---\n")
	writeDoc(t, s, "queues/build/claimed/01J0000000000000000000OTHR.md", "---\nqueue: build\ntitle: not mine\nclaimed_by: other\n---\n")
	writeDoc(t, s, "questions/01J00000000000000000000QQQ.md", "---\nfrom: boss\nto: zealot\nstatus: open\n---\nWhich parser?\n")
	writeDoc(t, s, "questions/01J00000000000000000000QQR.md", "---\nfrom: boss\nto: zealot\nstatus: answered\n---\nold\n")
	if _, err := recall.AddMemory(s, "zealot", "identity", "I write parsers", true); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.AddMemory(s, "zealot", "parser", "goldmark is fine", false); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.AddKnowledge(s, "architecture", "boss", "", "one package per concern"); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.AddKnowledge(s, "gossip", "boss", "", "not in the briefing"); err != nil {
		t.Fatal(err)
	}
	messages.SendMessage(s, "general", "boss", "hello")
	messages.SendMessage(s, "@zealot", "boss", "one")
	messages.SendMessage(s, "@zealot", "boss", "two")

	b, err := Wake(s, "zealot", now)
	if err != nil {
		t.Fatal(err)
	}
	if b.Spawns != 3 {
		t.Errorf("spawns: got %d, want 3", b.Spawns)
	}
	if len(b.Core) != 1 || len(b.Recent) != 1 || b.Recent[0].Text != "goldmark is fine" {
		t.Errorf("memories: core %v recent %v", b.Core, b.Recent)
	}
	if b.Suggested != "@zealot" || len(b.Unread) != 2 {
		t.Errorf("unread: %+v suggested %q, want @zealot first", b.Unread, b.Suggested)
	}
	if len(b.Knowledge) != 1 || b.Knowledge[0].Domain != "architecture" {
		t.Errorf("knowledge: %+v", b.Knowledge)
	}
	if len(b.Items) != 1 || b.Items[0].Title != "fix the parser" {
		t.Errorf("items: %+v", b.Items)
	}
	if len(b.Questions) != 1 || b.Questions[0].Text != "Which parser?" {
		t.Errorf("questions: %+v", b.Questions)
	}
	text := b.Text()
	for _, want := range []string{"# zealot (wake 3)", "[identity] I write parsers", "@zealot 2, general 1; start with: tavern recv @zealot", "fix the parser", "Which parser?"} {
		if !strings.Contains(text, want) {
			t.Errorf("briefing lacks %q:\n%s", want, text)
		}
	}
	if len(text) > 2000 {
		t.Errorf("briefing is %d bytes; keep it small", len(text))
	}

	later := now.Add(time.Minute)
	if _, err := Sleep(s, "zealot", "parsed half the grammar; next: lists", later); err != nil {
		t.Fatal(err)
	}
	b, err = Wake(s, "zealot", later.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if b.Spawns != 4 || b.LastSleep == nil || !b.LastSleep.Equal(later.Truncate(time.Millisecond)) {
		t.Errorf("after sleep: spawns %d last_sleep %v", b.Spawns, b.LastSleep)
	}
	found := false
	for _, m := range b.Core {
		found = found || (m.Topic == "summary" && strings.Contains(m.Text, "next: lists"))
	}
	if !found {
		t.Errorf("sleep summary not among core memories: %+v", b.Core)
	}
	// Old memories fall out of "recent".
	b, _ = Wake(s, "zealot", now.Add(8*24*time.Hour))
	if len(b.Recent) != 0 || len(b.Knowledge) != 0 {
		t.Errorf("8 days later: recent %v knowledge %v, want none", b.Recent, b.Knowledge)
	}
}

// Sleep summaries are core memories too, and there is one per sleep; they
// must never push the agent's own core memories out of the briefing.
func TestWakeKeepsCoreMemories(t *testing.T) {
	s := msgStore(t)
	writeDoc(t, s, "agents/zealot.md", "---\nname: zealot\n---\n")
	for _, text := range []string{"I write parsers", "never touch the vendored code", "ask bob about grammars"} {
		if _, err := recall.AddMemory(s, "zealot", "identity", text, true); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for i := range 25 {
		if _, err := Sleep(s, "zealot", fmt.Sprintf("session %d done", i), now); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Wake(s, "zealot", now)
	if err != nil {
		t.Fatal(err)
	}
	var identity, summaries []string
	for _, m := range b.Core {
		if m.Topic == "identity" {
			identity = append(identity, m.Text)
		} else {
			summaries = append(summaries, m.Text)
		}
	}
	if len(identity) != 3 {
		t.Errorf("core memories after 25 sleeps: got %v, want all 3", identity)
	}
	if len(summaries) != WakeSummaryMax || summaries[0] != "session 24 done" {
		t.Errorf("summaries: got %v, want the newest %d", summaries, WakeSummaryMax)
	}
}

// A session started by a process holding the agent's liveness lock (the
// spawn wrapper) was counted by that process: wake must not count it
// again.
func TestWakeUnderLiveLockCountsOnce(t *testing.T) {
	s := msgStore(t)
	writeDoc(t, s, "agents/zealot.md", "---\nname: zealot\nspawns: 1\n---\n")
	l, err := s.Lock(schema.AgentLockKey("zealot"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Wake(s, "zealot", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b.Spawns != 1 {
		t.Errorf("wake under a held liveness lock: spawns %d, want 1", b.Spawns)
	}
	l.Unlock()
	if b, _ = Wake(s, "zealot", time.Now()); b.Spawns != 2 {
		t.Errorf("wake of a free agent: spawns %d, want 2", b.Spawns)
	}
}

func TestContextAcrossSubsystems(t *testing.T) {
	s := msgStore(t)
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(journal.Event{Type: "item.failed", Agent: "zealot", Path: "queues/build/pending/x.md", Data: map[string]any{"error": "stateless assembly crashed"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(journal.Event{Type: "item.failed", Agent: "other", Data: map[string]any{"error": "stateless elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	recall.AddMemory(s, "zealot", "ideas", "Stateless context assembly is the plan", false)
	recall.AddMemory(s, "bob", "ideas", "bob's private stateless note", false)
	recall.AddKnowledge(s, "architecture", "bob", "", "Context assembly must be stateless")
	messages.SendMessage(s, "research", "zealot", "Proposal: stateless context assembly. Thoughts?")
	messages.SendMessage(s, "research", "bob", "Proposal: stateless context assembly. Thoughts?")
	messages. // other agent: kept
			SendMessage(s, "research", "zealot", "Proposal: stateless context assembly. Thoughts?")
	messages. // duplicate: once
			SendMessage(s, "@carol", "bob", "stateless secret for carol")
	writeDoc(t, s, "queues/build/pending/01J0000000000000000000ITEM.md", "---\nqueue: build\ntitle: make assembly stateless\n---\n")
	messages.SendMessage(s, "research", "zealot", "unrelated")

	r, err := Context(s, "STATELESS assembly", "zealot")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for src, hits := range r.State {
		count[src] = len(hits)
	}
	want := map[string]int{"event": 1, "memory": 1, "knowledge": 1, "message": 2, "item": 1}
	for src, n := range want {
		if count[src] != n {
			t.Errorf("%s: got %d hits, want %d (%+v)", src, count[src], n, r.State[src])
		}
	}
	if len(r.Timeline) != 6 {
		t.Errorf("timeline: got %d, want 6", len(r.Timeline))
	}
	for i := 1; i < len(r.Timeline); i++ {
		if r.Timeline[i].Time.Before(r.Timeline[i-1].Time.Time) {
			t.Errorf("timeline out of order at %d", i)
		}
	}
	// Without an agent: no memory at all, every event, every channel.
	r, _ = Context(s, "stateless", "")
	if len(r.State["memory"]) != 0 || len(r.State["event"]) != 2 || len(r.State["message"]) != 3 {
		t.Errorf("anonymous context: %+v", r.State)
	}
}

// Context finds by stem and prefix, includes questions and notes, and
// renders no section it has nothing for.
func TestContextQuestionsNotesStems(t *testing.T) {
	m := newManager(t)
	s := m.Store
	for _, name := range []string{"zealot", "carol"} {
		if _, err := m.CreateAgent(AgentSpec{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Ask("zealot", "user", 0, "Which PostgreSQL version do we target?"); err != nil {
		t.Fatal(err)
	}
	if _, err := messages.CreateChannel(s, "research", ""); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
	if _, err := messages.CreateChannel(s, "@carol", ""); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
	if _, err := messages.AddNote(s, "research", "zealot", "the databases need a vacuum schedule"); err != nil {
		t.Fatal(err)
	}
	if _, err := messages.AddNote(s, "@carol", "bob", "carol's database note"); err != nil {
		t.Fatal(err)
	}
	r, err := Context(s, "postgres", "zealot")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.State["question"]) != 1 {
		t.Errorf("postgres: got questions %+v, want the PostgreSQL question", r.State["question"])
	}
	r, err = Context(s, "database", "zealot")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.State["note"]) != 1 || r.State["note"][0].Where != "research" {
		t.Errorf("database: got notes %+v, want the research note only (carol's channel is private)", r.State["note"])
	}
	text := r.Text()
	if !strings.Contains(text, "## timeline") || !strings.Contains(text, "note:") || strings.Contains(text, "question:") || strings.Contains(text, "event:") {
		t.Errorf("text: sections without hits are shown, or hits missing:\n%s", text)
	}
	r, err = Context(s, "zebra", "zealot")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Text(); got != "" {
		t.Errorf("no match: got text %q, want none", got)
	}
}

// A backup taken while writers run restores to a valid store holding every
// message acknowledged before it began.
func TestBackupWhileWritersRun(t *testing.T) {
	s := msgStore(t)
	setConfig(t, s, "chunk_size", 20)
	recall.AddMemory(s, "alice", "x", "a memory", true)
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	var cmds []*osCmd
	for p := 0; p < 3; p++ {
		c := helperCmd(t, s, "send", "TAVERN_MSG_CHANNEL=busy", "TAVERN_MSG_SENDER=w"+string(rune('a'+p)), "TAVERN_MSG_N=150")
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, &osCmd{c})
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				mu.Lock()
				acked[sc.Text()] = true
				mu.Unlock()
			}
		}()
	}
	// Start the backup once writers are mid-flight (some acks seen).
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 100 || time.Now().After(deadline) {
			break
		}
		waitAck(s)
	}
	mu.Lock()
	before := make([]string, 0, len(acked))
	for id := range acked {
		before = append(before, id)
	}
	mu.Unlock()
	res, err := Backup(s, filepath.Join(t.TempDir(), "backups"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if len(before) == 0 {
		t.Fatal("no acknowledged messages before the backup")
	}
	for _, name := range []string{".locks", ".tmp", ".trash"} {
		if _, err := os.Stat(filepath.Join(res.Dir, name)); err == nil {
			t.Errorf("backup contains engine-private %s", name)
		}
	}

	// Restore refuses a non-empty store, then restores into a new one.
	if _, err := Restore(res.Dir, s.Root(), false, time.Now()); !errorsIsNotEmpty(err) {
		t.Errorf("restore over a non-empty store: got %v, want ErrNotEmpty", err)
	}
	target := filepath.Join(t.TempDir(), ".tavern")
	if _, err := Restore(res.Dir, target, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	r, err := docstore.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	checkAllDocs(t, r)
	msgs, err := messages.ReadMessages(r, "busy", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, m := range msgs {
		have[m.ID] = true
	}
	for _, id := range before {
		if !have[id] {
			t.Errorf("message %s acknowledged before the backup is missing", id)
		}
	}
	if m, _ := recall.ListMemory(r, "alice", recall.MemoryFilter{}); len(m) != 1 {
		t.Errorf("restored memory: got %d entries", len(m))
	}
	// --force replaces and keeps the old store aside.
	rr, err := Restore(res.Dir, s.Root(), true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rr.Previous, "tavern.md")); err != nil {
		t.Errorf("previous store not kept: %v", err)
	}
}

// checkAllDocs is what `tavern check` does: parse and validate every
// document, and parse every chunk's messages.
func checkAllDocs(tb testing.TB, s *docstore.Store) {
	tb.Helper()
	filepath.WalkDir(s.Root(), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			tb.Fatal(err)
		}
		if e.IsDir() && strings.HasPrefix(e.Name(), ".") && p != s.Root() {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		rel, _ := s.Rel(p)
		d, err := s.Get(rel)
		if err != nil {
			tb.Errorf("%s: %v", rel, err)
			return nil
		}
		if errs := d.Validate(false); len(errs) > 0 {
			tb.Errorf("%s: %v", rel, errs)
		}
		if strings.HasPrefix(rel, "messages/") {
			if _, err := messages.ParseChunkBody(d.Body()); err != nil {
				tb.Errorf("%s: %v", rel, err)
			}
		}
		return nil
	})
}

type osCmd struct{ *exec.Cmd }

func errorsIsNotEmpty(err error) bool { return errors.Is(err, ErrNotEmpty) }

// waitAck blocks until the busy channel's directory changes (or a second
// passes): the condition is re-checked by the caller.
func waitAck(s *docstore.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	first := true
	messages.WaitChannel(ctx, s, "busy", func() (bool, error) {
		done := !first
		first = false
		return done, nil
	})
}

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

// TestSendHelperProcess is not a test: it is the sender other tests start
// by re-executing the test binary in role "send".
func TestSendHelperProcess(t *testing.T) {
	if storetest.HelperRole() != "send" {
		t.Skip("helper process")
	}
	s, err := docstore.Open(os.Getenv("TAVERN_MSG_DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	name := os.Getenv("TAVERN_MSG_SENDER")
	n, _ := strconv.Atoi(os.Getenv("TAVERN_MSG_N"))
	for i := range n {
		id, err := messages.SendMessage(s, os.Getenv("TAVERN_MSG_CHANNEL"), name, fmt.Sprintf("%s %d", name, i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(id) // acknowledged: printed only after the durable write
	}
	os.Exit(0)
}

func helperCmd(tb testing.TB, s *docstore.Store, role string, env ...string) *exec.Cmd {
	tb.Helper()
	return storetest.HelperCommand(tb, "^TestSendHelperProcess$", role, append(env, "TAVERN_MSG_DIR="+s.Root())...)
}
