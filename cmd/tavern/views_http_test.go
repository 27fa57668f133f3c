package main

// Actions posted to `tavern serve` over HTTP, against the built binary:
// the rules the commands obey hold for a request written by hand too.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// serveClient talks to a running `tavern serve` as a browser would: with
// cookies, without following redirects, with the page's CSRF token.
type serveClient struct {
	t    *testing.T
	u    string
	c    *http.Client
	csrf string
}

func newServeClient(t *testing.T, u string) *serveClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	sc := &serveClient{t: t, u: u, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(sc.get("docs/tavern.md")) // its edit form
	if m == nil {
		t.Fatal("no csrf token on the page")
	}
	sc.csrf = m[1]
	return sc
}

func (sc *serveClient) get(path string) string {
	sc.t.Helper()
	resp, err := sc.c.Get(sc.u + path)
	if err != nil {
		sc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// post posts an action form and returns the response's status and the
// flash it set (the outcome the next page shows).
func (sc *serveClient) post(form url.Values) (int, string) {
	sc.t.Helper()
	form.Set("csrf", sc.csrf)
	resp, err := sc.c.PostForm(sc.u+"action", form)
	if err != nil {
		sc.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == "tavern_flash" {
			v, _ := url.QueryUnescape(c.Value)
			return resp.StatusCode, v
		}
	}
	return resp.StatusCode, string(body)
}

// TestServeReleaseFenced: a release posted to `tavern serve` is fenced as
// `tavern item release` is. Without an attempt (or with one that is no
// number, read as none) it released anyone's claim: the person is not the
// holder, and the CLI refuses that unless the attempt is given. The page's
// button carries the claim's attempt: that release goes ahead, a stale one
// is refused.
func TestServeReleaseFenced(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "alice", "--role", "coder")
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "held by alice")
	var claim struct {
		ID      string `json:"id"`
		Attempt int    `json:"attempt"`
	}
	if err := json.Unmarshal([]byte(p.ok("queue", "take", "build", "--as", "alice", "--json")), &claim); err != nil {
		t.Fatal(err)
	}
	claimed := "queues/build/claimed/" + claim.ID + ".md"
	sc := newServeClient(t, startServe(t, p, "--listen", "127.0.0.1:0"))

	code, flash := sc.post(url.Values{"action": {"release"}, "target": {claim.ID}})
	if !strings.Contains(flash, "held by alice") {
		t.Errorf("a release without the attempt: %d %q, want it refused naming the holder", code, flash)
	}
	p.read(claimed) // still alice's

	code, body := sc.post(url.Values{"action": {"release"}, "target": {claim.ID}, "attempt": {"one"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "attempt") {
		t.Errorf("attempt=one: %d %q, want 400 naming the attempt", code, body)
	}
	p.read(claimed)

	if _, flash := sc.post(url.Values{"action": {"release"}, "target": {claim.ID}, "attempt": {"7"}}); !strings.Contains(flash, "attempt 7") {
		t.Errorf("a stale attempt: %q, want it refused", flash)
	}
	p.read(claimed)

	if _, flash := sc.post(url.Values{"action": {"release"}, "target": {claim.ID}, "attempt": {"1"}}); !strings.Contains(flash, "released") {
		t.Errorf("the claim's attempt: %q, want it released", flash)
	}
	p.read("queues/build/pending/" + claim.ID + ".md")
}

// TestUIConflictKeepsPath: an edit that loses to a change made meanwhile
// is kept in a file, and the status line says where. The line was cut to
// the terminal's width, and the path (the end of the message) was cut
// off: the person's edit was kept where they could not see. An error
// wraps onto the lines below instead.
func TestUIConflictKeepsPath(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "alice", "--role", "coder")
	// A temporary directory with a long name, as macOS's is.
	tmp := filepath.Join(t.TempDir(), "a-rather-long-temporary-directory-name-for-the-kept-edit")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	// The editor: someone else changes the agent while the person edits.
	editor := filepath.Join(t.TempDir(), "editor.sh")
	script := "#!/bin/sh\n" + shellQuote(tavernBin(t)) + " set agents/alice role=tester >/dev/null\nsed -i 's/role: coder/role: reviewer/' \"$1\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p.env = append(p.env, "EDITOR="+editor, "TMPDIR="+tmp)
	ui := startUITmux(t, p)
	ui.waitPane("Needs you")
	ui.keys("2")
	ui.waitPane("alice · idle")
	ui.keys("e")
	ui.waitPane("conflict")
	kept, _ := filepath.Glob(filepath.Join(tmp, "tavern-edit*"))
	if len(kept) != 1 {
		t.Fatalf("kept edits in %s: %q, want one", tmp, kept)
	}
	if b, err := os.ReadFile(kept[0]); err != nil || !strings.Contains(string(b), "role: reviewer") {
		t.Fatalf("the kept edit: %v\n%s", err, b)
	}
	ui.waitScreen("showed where the edit is kept", func(s string) bool {
		return strings.Contains(s, kept[0])
	})
	if got := p.read("agents/alice.md"); !strings.Contains(got, "role: tester") {
		t.Errorf("the change made meanwhile was overwritten:\n%s", got)
	}
}

// TestUIFilterBeyondBoard: the Queues board shows a column's first items
// and "… N more". The filter searched only the items shown: in a queue of
// a few hundred, "/" with the title of the last one found nothing, as if
// it did not exist. The filter searches every item of a column.
func TestUIFilterBeyondBoard(t *testing.T) {
	p := bulkProject(t)
	ui := startUITmux(t, p)
	ui.waitPane("Needs you")
	ui.keys("3")
	ui.waitPane("PENDING (301)")
	ui.keys("/")
	ui.keys("-l", "item 299")
	ui.keys("Enter")
	ui.waitPane("p00 bulk item 299")
	ui.keys("j") // the item's row is selectable: its detail shows
	ui.waitPane("# bulk item 299")
}

// TestServeEditLineEndings: a browser sends a textarea's lines ending in
// CRLF, whatever they ended in. A save from the edit form turned every
// line of the document into a CRLF line: a diff of the whole file for a
// one-word change, and \r at the end of every value read by hand. The
// document keeps its own line endings.
func TestServeEditLineEndings(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)
	browserReplace(t, ctx, u+"docs/agents/alice.md", "role: coder", "role: reviewer")
	got := p.read("agents/alice.md")
	if !strings.Contains(got, "role: reviewer") {
		flash, _ := chromedp.Run(ctx, chromedp.Text(`#flash`))
		t.Fatalf("not saved (shown: %q):\n%s", flash, got)
	}
	if strings.Contains(got, "\r") {
		t.Errorf("the saved document has CRLF line endings, it had LF:\n%q", got)
	}

	// One written with CRLF keeps them.
	p.write("agents/bob.md", strings.ReplaceAll(p.read("agents/bob.md"), "\n", "\r\n"))
	browserReplace(t, ctx, u+"docs/agents/bob.md", "role: tester", "role: reviewer")
	got = p.read("agents/bob.md")
	if !strings.Contains(got, "role: reviewer\r\n") || strings.Count(got, "\n") != strings.Count(got, "\r\n") {
		t.Errorf("a CRLF document saved from the form:\n%q", got)
	}
}

// TestServeAnswerLines: an answer of two lines typed in the browser
// reached the asker with "\r" at the end of the first (a browser sends a
// textarea's lines ending in CRLF): `tavern ask --wait` printed it so, and
// a script comparing lines saw "SQLite\r". Text from a form is stored with
// "\n" line endings.
func TestServeAnswerLines(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)
	// Accept confirm() dialogs, as a person clicking OK would.
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ask, askOut := startAsk(t, p, "Which database?")
	sel := `li.k-question textarea[name=text]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u),
		chromedp.WaitVisible(sel),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("`+sel+`").value = "SQLite\nfor the cache";
			document.querySelector("li.k-question button[type=submit]").click()`),
	); err != nil {
		t.Fatalf("answering: %v", err)
	}
	if code := waitExit(t, ask, 60*time.Second); code != 0 {
		t.Fatalf("tavern ask --wait exited %d", code)
	}
	if got, want := strings.TrimSpace(askOut.String()), "SQLite\nfor the cache"; got != want {
		t.Errorf("the asker got %q, want %q", got, want)
	}
}

// TestUIEditorMissing: with $EDITOR naming no program, e said "editor
// failed: exit status 127; your edit is kept in /tmp/…": there was no
// edit, the temporary copy stayed behind, and nothing said which editor
// was tried. It names the editor, says nothing was edited and leaves no
// file.
func TestUIEditorMissing(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "alice", "--role", "coder")
	tmp := t.TempDir()
	p.env = append(p.env, "EDITOR=no-such-editor-xyz", "TMPDIR="+tmp)
	ui := startUITmux(t, p)
	ui.waitPane("Needs you")
	ui.keys("2")
	ui.waitPane("alice · idle")
	ui.keys("e")
	ui.waitPane("no-such-editor-xyz")
	ui.waitPane("nothing was edited")
	if left, _ := filepath.Glob(filepath.Join(tmp, "tavern-edit*")); len(left) != 0 {
		t.Errorf("left behind: %q", left)
	}
}

// TestServeUnknownAction: a POST naming no action the server knows (a
// typo in a script, a form of another version) was answered as a done
// action would be, a redirect, with "error:  : unknown action" left for the
// next page. It is a bad request: 400, naming the action and the ones
// there are.
func TestServeUnknownAction(t *testing.T) {
	p := newProject(t)
	sc := newServeClient(t, startServe(t, p, "--listen", "127.0.0.1:0"))
	for _, name := range []string{"", "aprove"} {
		code, body := sc.post(url.Values{"action": {name}, "target": {"x"}})
		if code != http.StatusBadRequest || !strings.Contains(body, strconv.Quote(name)) || !strings.Contains(body, "approve") {
			t.Errorf("action %q: %d %q, want 400 naming it and the actions", name, code, body)
		}
	}
}

// bulkProject is a project with a queue "bulk" of 301 pending items:
// "seed" and "bulk item 001" to "bulk item 300".
func bulkProject(t *testing.T) *project {
	t.Helper()
	p := newProject(t)
	p.ok("queue", "create", "bulk")
	dir := p.path("queues/bulk/pending")
	seed := strings.TrimSpace(p.ok("queue", "add", "bulk", "--title", "seed"))
	data, err := os.ReadFile(filepath.Join(dir, seed+".md"))
	if err != nil {
		t.Fatal(err)
	}
	// Items written as a bulk import would: the same document, new ids.
	for i := 1; i <= 300; i++ {
		id := fmt.Sprintf("%s%012x", seed[:len(seed)-12], i)
		doc := strings.ReplaceAll(string(data), seed, id)
		doc = strings.Replace(doc, "title: seed", fmt.Sprintf("title: bulk item %03d", i), 1)
		if err := os.WriteFile(filepath.Join(dir, id+".md"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestServeQueueSearch: the Queues page shows a column's first items and
// "+N more", and nothing led to the rest: an item beyond them could only
// be reached by typing its id into the address. /queues?q= (the page's
// search form) lists the items of every column that match.
func TestServeQueueSearch(t *testing.T) {
	p := bulkProject(t)
	sc := newServeClient(t, startServe(t, p, "--listen", "127.0.0.1:0"))
	page := sc.get("queues")
	if strings.Contains(page, "bulk item 299") || !strings.Contains(page, `name="q"`) {
		t.Fatalf("the board shows item 299 or has no search form:\n%.300s", page)
	}
	page = sc.get("queues?q=" + url.QueryEscape("ITEM 299"))
	if !strings.Contains(page, "bulk item 299") || strings.Contains(page, "bulk item 298") {
		i := strings.Index(page, "<main")
		t.Fatalf("/queues?q=ITEM+299 does not list just item 299:\n%.1500s", page[max(i, 0):])
	}
}

// TestServeBusyPort: the port is taken, most often by a tavern serve
// already running. The error was Go's alone ("bind: address already in
// use"); it says what to do: exit 1 and a hint at --listen with port 0.
func TestServeBusyPort(t *testing.T) {
	p := newProject(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := p.fails(1, "serve", "--listen", ln.Addr().String())
	if !strings.Contains(r.err, "address already in use") || !strings.Contains(r.err, "--listen 127.0.0.1:0") {
		t.Errorf("stderr: %q, want the cause and the hint at a free port", r.err)
	}
}

// TestServeGoneKeepsTyping: the document of an open edit page is removed
// (or moved: a pending item taken by a worker) while the person types in
// it. The live refresh replaced the page with "This page no longer exists"
// and the person's text went with it. The notice goes above, the text
// stays, to copy.
func TestServeGoneKeepsTyping(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u+"docs/agents/alice.md"),
		chromedp.WaitVisible(`#edit-text`),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("edit-text").value = "half an hour of typing"`),
	); err != nil {
		t.Fatalf("edit page: %v", err)
	}
	p.ok("rm", "agents/alice.md")
	if err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.getElementById("main").textContent.includes("no longer exists")`, chromedp.WithPollingTimeout(15*time.Second)),
	); err != nil {
		t.Fatalf("the page of a removed document does not say so: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("edit-text") || {}).value || ""`))
	if err != nil || text != "half an hour of typing" {
		t.Errorf("the person's text: %q, %v; want it kept", text, err)
	}
}

// TestServeSaveGoneKeepsText: Save is pressed on a document removed since
// the page was loaded. The refusal was a redirect to the document's
// address, a bare 404, and the person's text was lost. The refusal shows
// the text, and the live page keeps it under the notice that the
// document is gone.
func TestServeSaveGoneKeepsText(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u+"docs/agents/alice.md"),
		chromedp.WaitVisible(`#edit-text`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("edit-text").value = "half an hour of typing"`),
	); err != nil {
		t.Fatalf("edit page: %v", err)
	}
	// Removed by another process while the person types; Save is pressed
	// before or after the page hears of it (either way the text stays:
	// the live notice keeps typed text, TestServeGoneKeepsTyping).
	p.ok("rm", "agents/alice.md")
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("form.edit button[type=submit]").click()`),
	); err != nil {
		t.Fatalf("save: %v", err)
	}
	// The click navigates: a script run meanwhile may lose its page, so
	// each look is its own, until the answer to Save (the refused edit,
	// its textarea marked data-kept) is loaded and says the document is
	// gone. The page before the click says so too, once it hears of the
	// removal: a look that took that for the answer read the next page
	// while it was still loading, with no textarea yet (a CI failure).
	waitUntil(t, "the answer to Save to say the document is gone", 30*time.Second, func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && !!document.querySelector("#edit-text[data-kept]") &&
			!!document.getElementById("main") && document.getElementById("main").textContent.includes("no longer exists")`))
		return err == nil && ok
	})
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("edit-text") || {}).value || ""`))
	if err != nil || text != "half an hour of typing" {
		t.Errorf("the person's text: %q, %v; want it kept", text, err)
	}
}

// browserReplace opens a document's edit page, replaces from with to in
// its text and presses Save, as a person would, and waits for the result.
func browserReplace(tb testing.TB, ctx context.Context, page, from, to string) {
	tb.Helper()
	// Edit and Save in one script: the page's first refresh (on
	// connecting) may replace the nodes between two queries.
	script := fmt.Sprintf(`document.getElementById("edit-text").value = document.getElementById("edit-text").value.replace(%q, %q);
		document.querySelector("form.edit button[type=submit]").click()`, from, to)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`#edit-text`),
		chromedp.Evaluate[chromedp.Void](script),
		chromedp.WaitVisible(`#flash .flash`),
	); err != nil {
		tb.Fatalf("save %s: %v", page, err)
	}
}

// TestServeFilterKeepsTyping: the live refresh keeps what the person
// typed in the inputs that have an id. The Queues page's search box and
// the Journal page's filter had none: a change to the store while the
// person typed a search (on a busy board, every few seconds) emptied it.
func TestServeFilterKeepsTyping(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)
	for _, tc := range []struct{ page, input, title string }{
		{"queues", `form.filter input[name=q]`, "queued while typing a search"},
		{"journal", `form.filter input[name=agent]`, "queued while typing a filter"},
	} {
		sel := strconv.Quote(tc.input)
		if err := chromedp.Do(ctx,
			chromedp.Navigate(u+tc.page),
			chromedp.WaitVisible(tc.input),
			chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
			chromedp.Evaluate[chromedp.Void](`document.querySelector(`+sel+`).value = "half a sear"`),
			// A mark the refresh's swap of the page's content removes.
			chromedp.Evaluate[chromedp.Void](`document.getElementById("main").appendChild(document.createElement("i")).id = "stale"`),
		); err != nil {
			t.Fatalf("%s page: %v", tc.page, err)
		}
		p.ok("queue", "add", "build", "--title", tc.title)
		if err := chromedp.Do(ctx,
			chromedp.Poll[chromedp.Void](`!document.getElementById("stale")`, chromedp.WithPollingTimeout(15*time.Second)),
		); err != nil {
			t.Fatalf("%s page: not refreshed after the change: %v", tc.page, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+sel+`) || {}).value || ""`))
		if err != nil || text != "half a sear" {
			t.Errorf("%s page: the person's text after a refresh: %q, %v; want it kept", tc.page, text, err)
		}
	}
}

// TestServeJSON: under --json the ready line on stdout is one JSON object
// (the address to open, where it listens, the store, the person), not the
// bare URL meant for a person; a script reads the port from it.
func TestServeJSON(t *testing.T) {
	p := newProject(t)
	line, stderr := startServeLine(t, p, "--listen", "127.0.0.1:0", "--json")
	var got struct {
		URL    string  `json:"url"`
		Listen string  `json:"listen"`
		Root   string  `json:"root"`
		Person string  `json:"person"`
		Token  *string `json:"token"`
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("serve --json printed %q, want one JSON object: %v; stderr:\n%s", line, err, stderr)
	}
	if got.URL != "http://"+got.Listen+"/" || got.Person != "pat" || got.Root != p.path("") || got.Token != nil {
		t.Errorf("serve --json: got %+v, want the URL of the listening address, person pat, root %s and no token on loopback", got, p.path(""))
	}
	if body := newServeClient(t, got.URL).get("api/snapshot"); !strings.Contains(body, `"needs_you"`) {
		t.Errorf("/api/snapshot at the printed URL: %.200s", body)
	}
}
