package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
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
	question string
	dead     string
	srv      *httptest.Server
	v        *view.View
}

// newFixture is a store with an agent waiting on a question to the user
// (whose text holds markdown and raw HTML), a dead item and a channel,
// served on a loopback test server.
func newFixture(t *testing.T, opt Options) *fixture {
	t.Helper()
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "test")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{s: s}
	f.m = must(agents.NewManager(f.s))
	t.Cleanup(func() { f.m.Close() })
	must(f.m.CreateAgent(agents.AgentSpec{Name: "alice", Role: "coder"}))
	must(f.m.Transition("alice", agents.Working, agents.TransitionOptions{By: "test"}))
	f.question = must(f.m.Ask("alice", "user", 0, "Postgres or **SQLite**? <script>alert(1)</script>")).ID
	b := must(queues.Open(f.s, queues.Options{}))
	defer b.Close()
	must(b.CreateQueue("build", queues.QueueOptions{MaxAttempts: 1}))
	f.dead = must(b.Add("build", queues.AddOptions{Title: "flaky test"})).ID
	c := must(b.Take(context.Background(), queues.TakeOptions{Queues: []string{"build"}}))
	must(c.Fail("segfault"))
	must(messages.SendMessage(f.s, "general", "alice", "hello *team*"))

	vs := must(docstore.Open(f.s.Root()))
	f.v = must(view.Open(vs, view.Options{Person: "pat", Face: "web", Watch: true}))
	t.Cleanup(func() { f.v.Close() })
	f.srv = httptest.NewServer(nil)
	if opt.Hosts == nil && opt.Token == "" {
		opt.Hosts = LoopbackHosts(f.srv.Listener.Addr())
	}
	f.srv.Config.Handler = New(f.v, opt)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) get(t *testing.T, path string, hdr ...string) (int, string) {
	t.Helper()
	req := must(http.NewRequest("GET", f.srv.URL+path, nil))
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp := must(http.DefaultClient.Do(req))
	defer resp.Body.Close()
	return resp.StatusCode, string(must(io.ReadAll(resp.Body)))
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (f *fixture) post(t *testing.T, form url.Values, hdr ...string) *http.Response {
	t.Helper()
	req := must(http.NewRequest("POST", f.srv.URL+"/action", strings.NewReader(form.Encode())))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp := must(noRedirect.Do(req))
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func (f *fixture) csrf(t *testing.T) string {
	t.Helper()
	_, body := f.get(t, "/")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no csrf token on the page")
	}
	return m[1]
}

func TestPages(t *testing.T) {
	f := newFixture(t, Options{})
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/", []string{"Needs you", "alice asks a question", "<strong>SQLite</strong>", `name="action" value="answer"`, "flaky test", "segfault"}},
		{"/agents", []string{`href="/agents/alice"`, "waiting", "coder"}},
		{"/agents/alice", []string{"Questions asked", "Send to @alice", "Inbox", `href="/channels/general"`}},
		{"/queues", []string{"build", "flaky test", `class="col c-dead"`}},
		{"/items/" + f.dead, []string{"flaky test", "History", "item.dead", "segfault"}},
		{"/channels", []string{"general", "Overseer message"}},
		{"/channels/general", []string{"hello <em>team</em>"}},
		{"/resources", []string{"Reservations", "Tokens", "Pools"}},
		{"/journal?type=question.", []string{"question.raised"}},
		{"/journal?kind=questions", []string{"question.raised"}},
		{"/docs/agents/alice.md", []string{"Edit", `name="rev"`, "state: waiting"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, body := f.get(t, tc.path)
			if code != 200 {
				t.Fatalf("got %d: %s", code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			// Raw HTML in a document never reaches the page.
			if strings.Contains(body, "<script>alert") {
				t.Error("raw HTML from a document was rendered")
			}
		})
	}
	if code, body := f.get(t, "/journal?type=agent.state"); code != 200 || strings.Contains(body, "question.raised") {
		t.Errorf("journal filter: got %d, question events in an agent.state filter", code)
	}
	if _, body := f.get(t, "/queues"); strings.Contains(body, `class="card invalid"`) {
		t.Error("a valid item's card is marked invalid")
	}
	// A page that names nothing is 404; a path that can name no document
	// (outside the store, an engine file) is the request's fault: 400.
	// The engine's own files under dot names (locks, the index) are not
	// documents: no page, no edit form (they used to be shown as an
	// invalid document with an Edit form).
	for _, rel := range []string{".locks/t.lock", "agents/.draft.md"} {
		abs := filepath.Join(f.s.Root(), rel)
		must(0, os.MkdirAll(filepath.Dir(abs), 0o755))
		must(0, os.WriteFile(abs, []byte("x\n"), 0o644))
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/items/p00-nope", 404},
		{"/agents/nope", 404},
		{"/docs/agents/nope.md", 404},
		{"/docs/%2e%2e/%2e%2e/etc/passwd", 400},
		{"/docs/.tmp", 400}, // a directory, not a document
		{"/docs/.locks/t.lock", 400},
		{"/docs/agents/.draft.md", 400},
		{"/channels/nope", 404},    // no composer that could only fail
		{"/channels/@nobody", 404}, // no such agent
		{"/channels/@alice", 200},  // an agent's direct channel, messages or not
		// A name too long for the filesystem can name no document (it was a 500).
		{"/docs/agents/" + strings.Repeat("a", 300) + ".md", 400},
	} {
		if code, body := f.get(t, tc.path); code != tc.want {
			t.Errorf("GET %s: got %d, want %d (%.100s)", tc.path, code, tc.want, body)
		}
	}
	code, body := f.get(t, "/", FragmentHeader, "1")
	if code != 200 || strings.Contains(body, "<html") || !strings.Contains(body, `<main id="main"`) {
		t.Errorf("fragment: got %d, %.200q", code, body)
	}
	code, body = f.get(t, "/api/snapshot")
	var snap view.Snapshot
	if code != 200 || json.Unmarshal([]byte(body), &snap) != nil || len(snap.Needs) == 0 || snap.Person != "pat" {
		t.Errorf("api: got %d, %.300s", code, body)
	}
}

func TestHostAndToken(t *testing.T) {
	f := newFixture(t, Options{})
	if code, _ := f.get(t, "/", "Host", "evil.example:80"); code != http.StatusForbidden {
		t.Errorf("foreign Host: got %d, want 403", code)
	}
	g := newFixture(t, Options{Token: "s3cret"})
	if code, _ := g.get(t, "/"); code != http.StatusUnauthorized {
		t.Errorf("no token: got %d, want 401", code)
	}
	resp := must(noRedirect.Get(g.srv.URL + "/agents?token=s3cret"))
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/agents" {
		t.Fatalf("token in the URL: got %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == tokenCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly {
		t.Fatalf("no HttpOnly token cookie: %+v", resp.Cookies())
	}
	if code, _ := g.get(t, "/agents", "Cookie", tokenCookie+"=s3cret"); code != 200 {
		t.Errorf("with the cookie: got %d", code)
	}
	if code, _ := g.get(t, "/agents", "Cookie", tokenCookie+"=wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong cookie: got %d", code)
	}
}

func TestActionsCSRFAndConfirm(t *testing.T) {
	f := newFixture(t, Options{})
	answer := url.Values{"action": {"answer"}, "target": {f.question}, "text": {"SQLite"},
		"confirm": {"Send this answer?"}, "next": {"/"}}
	// No token, a wrong one, or a cross-site request: refused, nothing done.
	for _, tc := range []struct {
		name string
		csrf string
		hdr  []string
	}{
		{"no token", "", nil},
		{"wrong token", "00", nil},
		{"cross-site", f.csrf(t), []string{"Sec-Fetch-Site", "cross-site"}},
		{"foreign origin", f.csrf(t), []string{"Origin", "http://evil.example"}},
	} {
		form := url.Values{}
		for k, v := range answer {
			form[k] = v
		}
		form.Set("csrf", tc.csrf)
		form.Set("confirmed", "1")
		if resp := f.post(t, form, tc.hdr...); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: got %d, want 403", tc.name, resp.StatusCode)
		}
	}
	if q := must(f.m.GetQuestion(f.question)); q.Status != agents.QuestionOpen {
		t.Fatal("a refused POST answered the question")
	}
	// Not confirmed yet: the confirmation page, nothing done.
	answer.Set("csrf", f.csrf(t))
	resp := f.post(t, answer)
	body := string(must(io.ReadAll(resp.Body)))
	if resp.StatusCode != 200 || !strings.Contains(body, "Send this answer?") || !strings.Contains(body, `name="confirmed" value="1"`) {
		t.Fatalf("unconfirmed: got %d\n%s", resp.StatusCode, body)
	}
	if q := must(f.m.GetQuestion(f.question)); q.Status != agents.QuestionOpen {
		t.Fatal("an unconfirmed POST answered the question")
	}
	answer.Set("confirmed", "1")
	resp = f.post(t, answer)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("confirmed: got %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := must(f.m.GetQuestion(f.question))
	if q.Status != agents.QuestionAnswered || q.Answer != "SQLite" || q.AnsweredBy != "pat" {
		t.Fatalf("question: %+v", q)
	}
	// The flash says what happened, once.
	var flash *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == flashCookie {
			flash = c
		}
	}
	if flash == nil {
		t.Fatal("no flash cookie")
	}
	_, page := f.get(t, "/", "Cookie", flash.Name+"="+flash.Value)
	if !strings.Contains(page, "answered "+f.question) {
		t.Error("the page does not show the action's result")
	}
	// An external redirect target is not followed.
	retry := url.Values{"csrf": {f.csrf(t)}, "action": {"retry"}, "target": {f.dead}, "queue": {"build"}, "next": {"//evil.example/"}}
	if resp := f.post(t, retry); resp.Header.Get("Location") != "/" {
		t.Errorf("next=//evil.example: redirected to %q", resp.Header.Get("Location"))
	}
	if st := stateOf(t, f.s, f.dead); st != queues.Pending {
		t.Errorf("retried item: %s", st)
	}
}

func stateOf(t *testing.T, s *docstore.Store, id string) string {
	t.Helper()
	b := must(queues.Open(s, queues.Options{}))
	defer b.Close()
	return must(b.Get(id)).State
}

func TestEditLoop(t *testing.T) {
	f := newFixture(t, Options{})
	before := must(f.s.ReadFile("agents/alice.md"))
	form := url.Values{"csrf": {f.csrf(t)}, "action": {"edit"}, "target": {"agents/alice.md"}, "rev": {docstore.Revision(before)},
		"text": {"---\nname: alice\nstate: dancing\n---\n"}, "next": {"/docs/agents/alice.md"}}
	resp := f.post(t, form)
	body := string(must(io.ReadAll(resp.Body)))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "dancing") || !strings.Contains(body, "state") {
		t.Fatalf("invalid edit: got %d\n%s", resp.StatusCode, body)
	}
	if got := must(f.s.ReadFile("agents/alice.md")); string(got) != string(before) {
		t.Fatal("a refused edit changed the document")
	}
	form.Set("text", strings.Replace(string(before), "role: coder", "role: reviewer", 1))
	if resp := f.post(t, form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("valid edit: got %d", resp.StatusCode)
	}
	if got := must(f.s.ReadFile("agents/alice.md")); !strings.Contains(string(got), "role: reviewer") {
		t.Fatalf("saved: %s", got)
	}
}

// TestEvents reads the event stream as the page's script does: a hello,
// then a change after a document changes.
func TestEvents(t *testing.T) {
	f := newFixture(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := must(http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/events", nil))
	resp := must(http.DefaultClient.Do(req))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	next := func() string {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if ev, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
				return ev
			}
		}
	}
	if ev := next(); ev != "hello" {
		t.Fatalf("first event %q", ev)
	}
	must(messages.SendMessage(f.s, "general", "alice", "again"))
	if ev := next(); ev != "change" {
		t.Fatalf("after a change: event %q", ev)
	}
}

func TestExport(t *testing.T) {
	f := newFixture(t, Options{})
	dir := t.TempDir()
	files := must(ExportHTML(f.v, dir))
	if len(files) < 8 {
		t.Fatalf("exported %d files: %v", len(files), files)
	}
	index := string(must(os.ReadFile(filepath.Join(dir, "index.html"))))
	for _, w := range []string{"alice asks a question", "<strong>SQLite</strong>", "<style>"} {
		if !strings.Contains(index, w) {
			t.Errorf("index.html lacks %q", w)
		}
	}
	hrefRE := regexp.MustCompile(`href="([^"]*)"`)
	for _, file := range files {
		page := string(must(os.ReadFile(file)))
		if strings.Contains(page, "<form") || strings.Contains(page, "<script") {
			t.Errorf("%s: an export has forms or script", filepath.Base(file))
		}
		for _, m := range hrefRE.FindAllStringSubmatch(page, -1) {
			target, err := url.PathUnescape(m[1])
			if err != nil || target == "" || strings.HasPrefix(target, "/") {
				t.Errorf("%s: link %q is not a relative file", filepath.Base(file), m[1])
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, target)); err != nil {
				t.Errorf("%s: link %q points nowhere", filepath.Base(file), m[1])
			}
		}
	}
	mdDir := t.TempDir()
	mdFiles := must(ExportMarkdown(f.v, mdDir))
	readme := string(must(os.ReadFile(filepath.Join(mdDir, "README.md"))))
	if len(mdFiles) != len(mdSections) || !strings.Contains(readme, "# Needs you") || !strings.Contains(readme, "Postgres or **SQLite**") {
		t.Errorf("markdown export: %v\n%s", mdFiles, readme)
	}
	var one strings.Builder
	if err := WriteMarkdown(&one, must(f.v.Snapshot())); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"# Needs you", "# Agents", "# Queues", "| build |", "# Journal"} {
		if !strings.Contains(one.String(), w) {
			t.Errorf("WriteMarkdown lacks %q", w)
		}
	}
}

// TestApproveFromAgentRefused: the server runs as a person, but a gate
// decision POSTed by an agent's process is refused as that agent's own
// tavern approve is (people only); the person's browser still decides.
func TestApproveFromAgentRefused(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: the peer process cannot be found")
	}
	if queues.CurrentCaller().Agent() != "" {
		t.Skip("the test runs inside an agent: no request of it is a person's")
	}
	f := newFixture(t, Options{})
	b := must(queues.Open(f.s, queues.Options{}))
	defer b.Close()
	id := must(b.Add("build", queues.AddOptions{Title: "ship it", Gate: queues.GateHuman})).ID
	form := url.Values{"csrf": {f.csrf(t)}, "action": {"approve"}, "target": {id}, "confirmed": {"1"}, "next": {"/"}}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperPost$")
	cmd.Env = append(os.Environ(), "TAVERN_AGENT=mallory", "TAVERN_TEST_POST_URL="+f.srv.URL+"/action", "TAVERN_TEST_POST_FORM="+form.Encode())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "an agent cannot pass a gate") {
		t.Errorf("an agent's approval was not refused; its response:\n%s", out)
	}
	if gs, _ := b.PendingGates(); len(gs) != 1 {
		t.Fatalf("the gate was decided by an agent's request: pending gates %v", gs)
	}

	resp := f.post(t, form)
	flash, _ := url.QueryUnescape(cookie(resp, "tavern_flash"))
	if !strings.Contains(flash, "approved") {
		t.Fatalf("the person's approval: %q", flash)
	}
	if gs, _ := b.PendingGates(); len(gs) != 0 {
		t.Fatalf("the person's approval left the gate pending: %v", gs)
	}
}

func cookie(resp *http.Response, name string) string {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// TestHelperPost is the agent's process of TestApproveFromAgentRefused:
// it POSTs the form and prints the flash the server answered.
func TestHelperPost(t *testing.T) {
	u := os.Getenv("TAVERN_TEST_POST_URL")
	if u == "" {
		t.Skip("a helper process of TestApproveFromAgentRefused")
	}
	form, err := url.ParseQuery(os.Getenv("TAVERN_TEST_POST_FORM"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := noRedirect.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	flash, _ := url.QueryUnescape(cookie(resp, "tavern_flash"))
	fmt.Println(resp.StatusCode, flash)
}

// TestEventDataCutsOnCharacters: the Journal page shortens an event's long
// data values; a cut at byte 119 split "é" and the page showed a broken
// character.
func TestEventDataCutsOnCharacters(t *testing.T) {
	e := journal.Event{Data: map[string]any{"error": strings.Repeat("x", 118) + strings.Repeat("é", 10)}}
	got := eventData(e)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "x…") {
		t.Errorf("eventData = %q, want valid UTF-8 cut before the é at byte 118", got)
	}
}

// /static/ serves the page's files, not a listing of them: a directory
// is 404, as a path that names nothing is.
func TestStaticNoListing(t *testing.T) {
	f := newFixture(t, Options{})
	for _, path := range []string{"/static/", "/static", "/static/.", "/static/nope.css"} {
		if code, body := f.get(t, path); code != http.StatusNotFound {
			t.Errorf("GET %s: got %d, want 404: %.200s", path, code, body)
		}
	}
	for _, path := range []string{"/static/style.css", "/static/app.js"} {
		code, body := f.get(t, path)
		if code != http.StatusOK || body == "" {
			t.Errorf("GET %s: got %d with %d bytes, want 200 and the file", path, code, len(body))
		}
		want := must(assets.ReadFile(strings.TrimPrefix(path, "/")))
		if body != string(want) {
			t.Errorf("GET %s: body is not the file", path)
		}
	}
}

// TestEventsAges: a page left open is told to refetch now and then
// although nothing changed, so that its ages ("open for 3m", "2m ago")
// move on; the view announces no change for them.
func TestEventsAges(t *testing.T) {
	f := newFixture(t, Options{AgeRefresh: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := must(http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/events", nil))
	resp := must(http.DefaultClient.Do(req))
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v; no ages event within 20s", err)
		}
		if strings.TrimSpace(line) == "event: ages" {
			return
		}
	}
}
