package tui

import (
	"image/color"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/charmbracelet/x/vt"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// must returns v or panics (a call's two results can only be a whole
// argument list, so no testing.TB can come along).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

type fixture struct {
	s        *docstore.Store
	m        *agents.Manager
	v        *view.View
	question string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "test")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{s: s, m: must(agents.NewManager(s))}
	t.Cleanup(func() { f.m.Close() })
	must(f.m.CreateAgent(agents.AgentSpec{Name: "alice", Role: "coder"}))
	must(f.m.Transition("alice", agents.Working, agents.TransitionOptions{By: "test"}))
	f.question = must(f.m.Ask("alice", "user", 0, "Postgres or SQLite?")).ID
	b := must(queues.Open(s, queues.Options{}))
	defer b.Close()
	must(b.CreateQueue("build", queues.QueueOptions{}))
	must(b.Add("build", queues.AddOptions{Title: "compile the thing"}))
	f.v = must(view.Open(must(docstore.Open(s.Root())), view.Options{Person: "pat", Face: "tui", Watch: true}))
	t.Cleanup(func() { f.v.Close() })
	return f
}

func (f *fixture) start(t *testing.T, opt Options) *screen {
	t.Helper()
	opt.Glamour = "notty"
	// Plain text frames: the tests look for words, not colours.
	tm := teatest.NewTestModel(t, New(f.v, opt), teatest.WithInitialTermSize(160, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	t.Cleanup(func() { tm.Quit() })
	term := vt.NewEmulator(160, 40)
	// The emulator answers the program's queries on a pipe; nobody reads
	// the answers (the program's input is the test's), but the pipe must
	// not block the emulator.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(io.Discard, term)
	}()
	t.Cleanup(func() {
		// End the pipe first (the reader sees EOF), then the emulator:
		// Close and Read share an unguarded flag.
		if c, ok := term.InputPipe().(io.Closer); ok {
			c.Close()
			<-drained
			term.Close()
		}
	})
	return &screen{TestModel: tm, term: term}
}

// screen is the program under test and the terminal it draws on. Bubble
// Tea redraws only the cells that changed, so the words a person sees are
// read off an emulated screen, never out of the byte stream.
type screen struct {
	*teatest.TestModel
	term *vt.Emulator
}

// waitOutput waits until the screen shows want.
func waitOutput(t *testing.T, tm *screen, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := io.ReadAll(tm.Output())
		if err != nil {
			t.Fatal(err)
		}
		tm.term.Write(b)
		shown := tm.term.String()
		if strings.Contains(shown, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q within 20s; it shows:\n%s", want, shown)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func typeText(tm *screen, s string) { tm.Type(s) }

func key(tm *screen, k rune) { tm.Send(tea.KeyPressMsg{Code: k}) }

// waitCond waits for a condition on the store, with a deadline.
func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNeedsLiveAndAnswer(t *testing.T) {
	f := newFixture(t)
	tm := f.start(t, Options{})
	waitOutput(t, tm, "alice asks a question")

	// A question raised by another writer shows up without a key press.
	other := must(agents.NewManager(must(docstore.Open(f.s.Root()))))
	defer other.Close()
	must(other.CreateAgent(agents.AgentSpec{Name: "bob"}))
	must(other.Transition("bob", agents.Working, agents.TransitionOptions{By: "test"}))
	must(other.Ask("bob", "user", 5, "May I delete the cache?"))
	waitOutput(t, tm, "bob asks a question")

	// Answer alice's (first: priority 0): a, the text, enter, y.
	typeText(tm, "a")
	waitOutput(t, tm, "your answer")
	typeText(tm, "SQLite")
	key(tm, tea.KeyEnter)
	waitOutput(t, tm, "[y/N]")
	typeText(tm, "y")
	waitCond(t, "alice's question answered", func() bool {
		q, err := f.m.GetQuestion(f.question)
		return err == nil && q.Status == agents.QuestionAnswered
	})
	q := must(f.m.GetQuestion(f.question))
	if q.Answer != "SQLite" || q.AnsweredBy != "pat" {
		t.Errorf("answer: %+v", q)
	}
	waitOutput(t, tm, "answered "+f.question)
	typeText(tm, "q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

func TestConfirmNo(t *testing.T) {
	f := newFixture(t)
	tm := f.start(t, Options{})
	waitOutput(t, tm, "alice asks a question")
	typeText(tm, "a")
	waitOutput(t, tm, "your answer")
	typeText(tm, "no way")
	key(tm, tea.KeyEnter)
	waitOutput(t, tm, "[y/N]")
	typeText(tm, "n")
	waitOutput(t, tm, "cancelled")
	if q := must(f.m.GetQuestion(f.question)); q.Status != agents.QuestionOpen {
		t.Fatal("a declined confirmation answered the question")
	}
}

func TestTabsAndFilter(t *testing.T) {
	f := newFixture(t)
	must(f.m.CreateAgent(agents.AgentSpec{Name: "zoe"}))
	tm := f.start(t, Options{})
	waitOutput(t, tm, "alice asks a question")
	typeText(tm, "3")
	waitOutput(t, tm, "compile the thing")
	typeText(tm, "2")
	waitOutput(t, tm, "zoe")
	typeText(tm, "/")
	typeText(tm, "zo")
	key(tm, tea.KeyEnter)
	waitOutput(t, tm, "/zo (esc clears)")
	typeText(tm, "q")
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	var names []string
	for _, r := range fm.list {
		names = append(names, strings.Fields(r.text)[0])
	}
	if fm.tab != tabAgents || len(names) != 1 || names[0] != "zoe" {
		t.Errorf("filtered agents tab %d: got %v, want [zoe]", fm.tab, names)
	}
}

// TestEditLoop drives the validate-and-re-edit loop with an "editor" that
// writes an invalid document first and a valid one the second time.
func TestEditLoop(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	bad := filepath.Join(dir, "bad.md")
	good := filepath.Join(dir, "good.md")
	os.WriteFile(bad, []byte("---\nname: alice\nstate: dancing\n---\n"), 0o644)
	orig := string(must(f.s.ReadFile("agents/alice.md")))
	os.WriteFile(good, []byte(strings.Replace(orig, "role: coder", "role: reviewer", 1)), 0o644)
	editor := func(file string) *exec.Cmd {
		// First call: the invalid text; then the valid one.
		return exec.Command("sh", "-c", `if [ -e "$2" ]; then cp "$4" "$1"; else touch "$2"; cp "$3" "$1"; fi`, "editor", file, calls, bad, good)
	}
	tm := f.start(t, Options{Editor: editor})
	waitOutput(t, tm, "alice asks a question")
	typeText(tm, "2") // Agents
	waitOutput(t, tm, "coder")
	typeText(tm, "e")
	waitOutput(t, tm, "Edit again? [Y/n]")
	if got := string(must(f.s.ReadFile("agents/alice.md"))); got != orig {
		t.Fatalf("an invalid edit was saved:\n%s", got)
	}
	typeText(tm, "y")
	waitCond(t, "the valid edit saved", func() bool {
		b, err := f.s.ReadFile("agents/alice.md")
		return err == nil && strings.Contains(string(b), "role: reviewer")
	})
	waitOutput(t, tm, "saved agents/alice.md")
}

// TestStaleSnapshotIgnored: snapshots are taken in commands that may
// finish out of order; an older one must not replace a newer one (the
// selection would jump to what the older list had).
func TestStaleSnapshotIgnored(t *testing.T) {
	f := newFixture(t)
	m := New(f.v, Options{Glamour: "notty"})
	newer := &view.Snapshot{Version: 5, Needs: []view.Need{{Key: "question:q", Kind: view.NeedQuestion, What: "new"}}}
	older := &view.Snapshot{Version: 3}
	m.Update(snapMsg{s: newer})
	m.Update(snapMsg{s: older})
	if m.snap != newer || len(m.list) != 1 {
		t.Fatalf("got version %d with %d rows, want the newer snapshot", m.snap.Version, len(m.list))
	}
}

// TestBackgroundColour: the markdown colours follow the terminal's answer
// to Init's background query, unless the style was chosen.
func TestBackgroundColour(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, style string
		bg          color.Color
		want        string
	}{
		{"dark terminal", "", color.Black, "dark"},
		{"light terminal", "", color.White, "light"},
		{"chosen style kept", "dark", color.White, "dark"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New(f.v, Options{Glamour: tc.style})
			m.Update(tea.BackgroundColorMsg{Color: tc.bg})
			got, want := m.md.st.heading.GetForeground(), newMarkdown(tc.want).st.heading.GetForeground()
			if got != want {
				t.Errorf("heading colour %v, want %v (the %s style)", got, want, tc.want)
			}
		})
	}
}

// TestArchivedChannel: the Messages tab marks an archived channel (as the
// browser face does) and m on it says it is closed instead of opening a
// composer whose message is then refused. Before, an archived channel
// looked like any other: a person typed a message, confirmed it, and got
// "send channels/dev.md: archived".
func TestArchivedChannel(t *testing.T) {
	f := newFixture(t)
	must(messages.CreateChannel(f.s, "dev", ""))
	must(messages.CreateChannel(f.s, "ops", ""))
	if err := messages.ArchiveChannel(f.s, "dev"); err != nil {
		t.Fatal(err)
	}
	tm := f.start(t, Options{})
	waitOutput(t, tm, "alice asks a question")
	typeText(tm, "4")
	waitOutput(t, tm, "(archived)")
	typeText(tm, "m")
	waitOutput(t, tm, "dev is archived")
	typeText(tm, "q")
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	if fm.mode != modeList {
		t.Errorf("m on an archived channel: mode %v, want the list", fm.mode)
	}
	var lines []string
	for _, r := range fm.list {
		lines = append(lines, r.text)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "dev") || !strings.Contains(lines[0], "(archived)") || strings.Contains(lines[1], "archived") {
		t.Errorf("channel rows: %q", lines)
	}
}

// TestInvalidMarked: an agent or item whose document is invalid is marked
// so on its tab, as the web's lists do; its state is only what could be
// salvaged from a file nothing uses until it is fixed.
func TestInvalidMarked(t *testing.T) {
	f := newFixture(t)
	must(f.m.CreateAgent(agents.AgentSpec{Name: "zoe"}))
	abs := filepath.Join(f.s.Root(), "agents", "zoe.md")
	b := must(os.ReadFile(abs))
	must(0, os.WriteFile(abs, []byte(strings.Replace(string(b), "---\n", "---\nstate: [broken\n", 1)), 0o644))
	tm := f.start(t, Options{})
	waitOutput(t, tm, "alice asks a question")
	typeText(tm, "2")
	waitOutput(t, tm, "zoe")
	typeText(tm, "q")
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	for _, r := range fm.list {
		if strings.HasPrefix(strings.TrimSpace(r.text), "zoe") || strings.Contains(r.text, " zoe ") {
			if !strings.Contains(r.text, "invalid") {
				t.Errorf("the row of an invalid agent: %q, want it marked invalid", r.text)
			}
			return
		}
	}
	t.Fatal("no row for zoe")
}

// TestAgesMoveOn: a screen left open says how long a question has been
// waiting as time goes by, not the age it had when the view last changed
// ("open for 2s" for minutes). The view's clock moves on twice; no
// document changes.
func TestAgesMoveOn(t *testing.T) {
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "test")
	if err != nil {
		t.Fatal(err)
	}
	m := must(agents.NewManager(s))
	defer m.Close()
	must(m.CreateAgent(agents.AgentSpec{Name: "alice"}))
	must(m.Transition("alice", agents.Working, agents.TransitionOptions{By: "test"}))
	must(m.Ask("alice", "user", 0, "Postgres or SQLite?"))
	var skew atomic.Int64
	v := must(view.Open(must(docstore.Open(s.Root())), view.Options{Person: "pat", Face: "tui", Watch: true,
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}))
	t.Cleanup(func() { v.Close() })
	f := &fixture{s: s, m: m, v: v}
	tm := f.start(t, Options{AgeRefresh: 20 * time.Millisecond})
	waitOutput(t, tm, "open for 0s")
	// Twice: a change the view announces once after it starts (which
	// would refresh the screen either way) cannot answer both.
	skew.Store(int64(40 * time.Second))
	waitOutput(t, tm, "open for 4")
	skew.Store(int64(3 * time.Minute))
	waitOutput(t, tm, "open for 3m")
}
