package main

// End-to-end tests of the human views through the built binary, with
// several processes: tavern ui in a real terminal (tmux), tavern serve in
// a real browser (headless Chromium through chromedp) and over HTTP. The
// single-process contracts (the refusal without a terminal, --json,
// export) are testdata/script/views.txtar.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// waitUntil polls cond (cheap, local) until it holds or the deadline
// passes: the condition is the outcome, never a sleep.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// viewsProject is a project with a queue, a dead item, a failed agent and
// an agent that will ask the user a question.
func viewsProject(t *testing.T) *project {
	t.Helper()
	p := newProject(t)
	p.ok("agent", "new", "alice", "--role", "coder")
	p.ok("agent", "new", "bob", "--role", "tester")
	p.ok("queue", "create", "build", "--max-attempts", "1")
	p.ok("queue", "add", "build", "--title", "flaky integration test")
	id := strings.TrimSpace(p.ok("queue", "take", "build", "--as", "bob", "--json"))
	var claim struct {
		ID      string `json:"id"`
		Attempt int    `json:"attempt"`
	}
	if err := json.Unmarshal([]byte(id), &claim); err != nil {
		t.Fatalf("queue take --json: %v\n%s", err, id)
	}
	p.ok("item", "fail", claim.ID, "--attempt", fmt.Sprint(claim.Attempt), "--reason", "segfault in the linker")
	p.ok("agent", "state", "bob", "failed") // after its take: a failed agent claims nothing
	p.ok("queue", "add", "build", "--title", "compile the parser", "--priority", "2")
	return p
}

// startAsk starts `tavern ask --wait` as alice: a real agent process
// blocked on the user's answer.
func startAsk(t *testing.T, p *project, question string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := p.tavern("ask", "--as", "alice", "--to", "user", "--wait", "2m", question)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &out
}

// waitExit waits for cmd to exit within d and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		t.Fatalf("%s did not exit within %s", cmd.Args, d)
	}
	return -1
}

func startServe(t *testing.T, p *project, args ...string) string {
	t.Helper()
	u, stderr := startServeLine(t, p, args...)
	if !strings.HasPrefix(u, "http://") {
		t.Fatalf("serve printed %q; stderr:\n%s", u, stderr.String())
	}
	return u
}

// startServeLine starts tavern serve and returns its first line of
// output (the ready signal) and its stderr so far and to come.
func startServeLine(t *testing.T, p *project, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	cmd := p.tavern(append([]string{"serve", "--as", "pat"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("tavern serve did not stop on SIGINT within 10s")
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-line:
		return u, stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("serve printed no URL; stderr:\n%s", stderr.String())
	}
	return "", stderr
}

func TestServeTokenOffLoopback(t *testing.T) {
	p := newProject(t)
	u := startServe(t, p, "--listen", "0.0.0.0:0")
	if !strings.Contains(u, "?token=") {
		t.Fatalf("a non-loopback serve printed no token: %s", u)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	token := pu.Query().Get("token")
	// The server is reached on 127.0.0.1 here, but it listens everywhere:
	// without the token nothing is served.
	local := "http://127.0.0.1:" + pu.Port()
	resp, err := http.Get(local + "/api/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: got %d, want 401", resp.StatusCode)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err = browser.Get(local + "/api/snapshot?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with the token (and the cookie it sets): got %d", resp.StatusCode)
	}
}

func TestServeRefusesForeignHost(t *testing.T) {
	p := newProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	req, _ := http.NewRequest("GET", u+"api/snapshot", nil)
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: got %d, want 403", resp.StatusCode)
	}
	p.fails(exitUsage, "serve", "--listen", "nonsense")
}

// chromium finds a browser for chromedp, or skips: .ci/run installs
// Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no chromium: install Debian's chromium package (.ci/run does) to run the browser test")
	return ""
}

// TestServeBrowser drives `tavern serve` in headless Chromium: a `tavern
// set` in another process shows on the open page without a reload; a
// question raised by a waiting `tavern ask --wait` appears, is answered
// from the page (with its confirmation), and the asker gets the answer.
func TestServeBrowser(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")

	ctx := browserContext(t, bin, 3*time.Minute)

	// Accept confirm() dialogs, as a person clicking OK would.
	dialogs := make(chan string, 4)
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			select {
			case dialogs <- d.Message:
			default:
			}
		}
	}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	var mu sync.Mutex
	var confirmed []string
	go func() {
		for msg := range dialogs {
			mu.Lock()
			confirmed = append(confirmed, msg)
			mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	defer close(dialogs)

	// 1. A change made by another process appears without a reload.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u+"agents"),
		chromedp.WaitVisible(`#agent-alice`),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate[chromedp.Void](`window.__tavernNoReload = 1`),
	); err != nil {
		t.Fatalf("agents page: %v", err)
	}
	p.ok("set", "agents/alice", "role=reviewer")
	if err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.getElementById("agent-alice").textContent.includes("reviewer")`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("tavern set did not appear on the open page: %v", err)
	}
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__tavernNoReload === 1`)); err != nil || !same {
		t.Fatalf("the page was reloaded (%v)", err)
	}

	// 2. A question from a waiting agent arrives on the open Needs page.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u),
		chromedp.WaitVisible(`main#main`),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate[chromedp.Void](`window.__tavernNoReload = 2`),
	); err != nil {
		t.Fatalf("needs page: %v", err)
	}
	ask, askOut := startAsk(t, p, "Postgres or **SQLite** for the cache?")
	sel := `li.k-question textarea[name=text]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(sel)); err != nil {
		t.Fatalf("the question did not appear: %v", err)
	}
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__tavernNoReload === 2`)); err != nil || !same {
		t.Fatalf("the page was reloaded (%v)", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveScreenshot(t, "tavern-serve.png", shot)

	// 3. Answer it from the page; the asker wakes with the answer. A live
	// refresh (the asker's agent going to waiting) can replace the form
	// between finding its textarea and typing into it: the protocol then
	// answers that the node is gone, and the new form is typed into, as
	// a person would. What was typed survives a refresh (it is kept by
	// the textarea's id), so the form is sent from the page as it is
	// then, through its submit button and confirmation.
	for attempt := 1; ; attempt++ {
		err := chromedp.Do(ctx,
			chromedp.WaitVisible(sel),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("`+sel+`").value = ""`),
			chromedp.SendKeys(sel, "SQLite"),
		)
		var gone *cdproto.Error
		if err == nil {
			break
		} else if !errors.As(err, &gone) || attempt == 10 {
			t.Fatalf("typing the answer: %v", err)
		}
		t.Logf("typing the answer, attempt %d: %v", attempt, err)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
		`(function () { var f = document.querySelector("`+sel+`").form; f.requestSubmit(f.querySelector("button[type=submit]")); })()`),
	); err != nil {
		t.Fatalf("answering: %v", err)
	}
	if code := waitExit(t, ask, 60*time.Second); code != 0 {
		t.Fatalf("tavern ask --wait exited %d", code)
	}
	if got := strings.TrimSpace(askOut.String()); got != "SQLite" {
		t.Errorf("the asker got %q, want SQLite", got)
	}
	mu.Lock()
	if len(confirmed) != 1 || !strings.Contains(confirmed[0], "Send this answer to alice?") {
		t.Errorf("confirmations: %q", confirmed)
	}
	mu.Unlock()
	// The POST redirects back to the page, which says what happened.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`#flash .flash`)); err != nil {
		t.Fatalf("no result shown after answering: %v", err)
	}
	if flash, err := chromedp.Run(ctx, chromedp.Text(`#flash .flash`)); err != nil || !strings.Contains(flash, "answered") {
		t.Errorf("result shown: %q, %v", flash, err)
	}
	// The action is journaled with the acting person.
	log := p.ok("log", "--type", "view.action", "--json")
	if !strings.Contains(log, `"agent":"pat"`) || !strings.Contains(log, `"action":"answer"`) {
		t.Errorf("journal:\n%s", log)
	}
}

// TestServeEditAfterChange: a document changes on disk while its edit
// page is open in the browser. The live refresh keeps what the person
// typed, and with it the revision that text is based on: Save is refused
// as a conflict, never a silent revert of the other change.
func TestServeEditAfterChange(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(u+"docs/agents/alice.md"),
		chromedp.WaitVisible(`#edit-text`),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("edit page: %v", err)
	}
	before, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("main").dataset.version`))
	if err != nil {
		t.Fatal(err)
	}
	p.ok("set", "agents/alice", "role=reviewer")
	// The page swaps in the new content (a new version) without a reload.
	// Save is clicked by one script: a change can bring more than one
	// refresh, and one that replaces the button between a query and a
	// click fails the click (the node is gone).
	if err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.getElementById("main").dataset.version !== "`+before+`"`, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("form.edit button[type=submit]").click()`),
		chromedp.WaitVisible(`#flash .flash`),
	); err != nil {
		t.Fatalf("saving: %v", err)
	}
	flash, _ := chromedp.Run(ctx, chromedp.Text(`#flash .flash`))
	if got := p.read("agents/alice.md"); !strings.Contains(got, "role: reviewer") {
		t.Fatalf("the save reverted a change it never saw (shown: %q):\n%s", flash, got)
	}
	if !strings.Contains(flash, "conflict") {
		t.Errorf("shown after the save: %q, want the conflict", flash)
	}
}

// TestServeEditRefused: a save the check refuses shows the problems with
// the person's text (the answer to a POST). That page is the document's
// page again: its address (a reload does not re-post the form) and live
// updates, not "reconnecting" from fetching the form's target.
func TestServeEditRefused(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u+"docs/agents/alice.md"),
		chromedp.WaitVisible(`#edit-text`),
		// Edit and Save in one script: the page's first refresh (on
		// connecting) may replace the nodes between two queries.
		chromedp.Evaluate[chromedp.Void](`document.getElementById("edit-text").value = document.getElementById("edit-text").value.replace("state: idle", "state: dancing");
			document.querySelector("form.edit button[type=submit]").click()`),
		chromedp.WaitVisible(`#flash .error`),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("refused save: %v", err)
	}
	if path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); err != nil || path != "/docs/agents/alice.md" {
		t.Errorf("the refused save's page is at %q (%v), want the document's", path, err)
	}
	before, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("main").dataset.version`))
	if err != nil {
		t.Fatal(err)
	}
	p.ok("set", "agents/bob", "role=reviewer")
	// The change event's refresh has happened when the page shows the
	// new version, and it succeeded when the page says live (a refresh
	// that fails swaps nothing in and says "reconnecting"). One script
	// reads both: a refresh replaces the nodes between two queries.
	if err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.getElementById("main").dataset.version !== "`+before+`" && document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		live, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live").textContent`))
		t.Fatalf("after a change, the page did not refresh and stay live (live: %q): %v", live, err)
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("edit-text").value`)); err != nil || !strings.Contains(text, "state: dancing") {
		t.Errorf("the person's text was not kept: %v\n%s", err, text)
	}
}

// TestServePageGone: the document of an open page is removed (tavern rm).
// The live page says so instead of "reconnecting" over stale content: the
// server answers, the thing is gone.
func TestServePageGone(t *testing.T) {
	bin := chromium(t)
	p := viewsProject(t)
	id := strings.TrimSpace(p.ok("queue", "add", "build", "--title", "doomed item"))
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	ctx := browserContext(t, bin, 2*time.Minute)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u+"items/"+id),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("item page: %v", err)
	}
	p.ok("rm", "queues/build/pending/"+id+".md")
	if err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.getElementById("main").textContent.includes("no longer exists")`, chromedp.WithPollingTimeout(15*time.Second)),
	); err != nil {
		live, _ := chromedp.Run(ctx, chromedp.Text(`#live`))
		main, _ := chromedp.Run(ctx, chromedp.Text(`#main`))
		t.Fatalf("the page of a removed item does not say so (live: %q): %v\n%.300s", live, err, main)
	}
	if live, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live").textContent`)); err != nil || live != "live" {
		t.Errorf("live indicator: %q, %v (the server is up)", live, err)
	}
}

// saveScreenshot keeps a screenshot for a person to look at: in the test's
// temp dir always, and with -update as the README's in examples/.
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "tavern-test-"+name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if *update {
		if err := os.WriteFile(filepath.Join("..", "..", "examples", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// uiTmux is `tavern ui` running in a real terminal (tmux), as pat.
type uiTmux struct {
	t      *testing.T
	tmux   func(args ...string) (string, error)
	status string // the file the exit code is written to
}

func startUITmux(t *testing.T, p *project) *uiTmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed (.ci/run installs it)")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) (string, error) {
		cmd := p.cmd(context.Background(), "tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
		cmd.Env = append(cmd.Env, "TAVERN_USER=pat")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	status := filepath.Join(t.TempDir(), "status")
	run := fmt.Sprintf("cd %q && %q ui; echo $? > %q", p.dir, tavernBin(t), status)
	if out, err := tmux("new-session", "-d", "-s", "ui", "-x", "180", "-y", "45", run); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	return &uiTmux{t: t, tmux: tmux, status: status}
}

func (u *uiTmux) pane() string {
	out, _ := u.tmux("capture-pane", "-p", "-t", "ui")
	return out
}

// waitPane polls the screen until it shows want (a deadline, no sleep
// that hopes).
func (u *uiTmux) waitPane(want string) {
	u.t.Helper()
	u.waitScreen(fmt.Sprintf("showed %q", want), func(s string) bool { return strings.Contains(s, want) })
}

// waitScreen polls the screen until cond holds of it.
func (u *uiTmux) waitScreen(what string, cond func(string) bool) {
	u.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond(u.pane()) {
		if time.Now().After(deadline) {
			u.t.Fatalf("the terminal never %s within 30s; it shows:\n%s", what, u.pane())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (u *uiTmux) keys(k ...string) {
	u.t.Helper()
	if out, err := u.tmux(append([]string{"send-keys", "-t", "ui"}, k...)...); err != nil {
		u.t.Fatalf("send-keys: %v\n%s", err, out)
	}
}

// TestUITmux drives `tavern ui` in a real terminal (tmux): the Needs-you
// lens shows a question raised by another process live, the person
// answers it with keys (answer, text, enter, y), and the blocked `tavern
// ask --wait` returns the answer; an item added meanwhile shows on the
// Queues board; q quits.
func TestUITmux(t *testing.T) {
	p := viewsProject(t)
	ui := startUITmux(t, p)
	waitPane, keys := ui.waitPane, ui.keys
	pane := ui.pane
	waitPane("bob failed")
	waitPane("flaky integration test")

	ask, askOut := startAsk(t, p, "Postgres or SQLite for the cache?")
	waitPane("alice asks a question")
	keys("g")                                     // the question is first: questions lead the lens
	waitPane("Postgres or SQLite for the cache?") // its text in the detail pane
	keys("a")
	waitPane("your answer")
	keys("-l", "SQLite")
	keys("Enter")
	waitPane("[y/N]")
	keys("y")
	if code := waitExit(t, ask, 60*time.Second); code != 0 {
		t.Fatalf("tavern ask --wait exited %d", code)
	}
	if got := strings.TrimSpace(askOut.String()); got != "SQLite" {
		t.Fatalf("the asker got %q, want SQLite", got)
	}
	waitPane("answered")

	keys("3")
	waitPane("compile the parser")
	p.ok("queue", "add", "build", "--title", "ship the release")
	waitPane("ship the release")
	if *update {
		if err := os.WriteFile(filepath.Join("..", "..", "examples", "tavern-ui.txt"), []byte(pane()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keys("q")
	waitUntil(t, "tavern ui to exit on q", 30*time.Second, func() bool {
		b, err := os.ReadFile(ui.status)
		return err == nil && len(b) > 0
	})
	if b, _ := os.ReadFile(ui.status); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("tavern ui exited %s", b)
	}
}

// TestUITitleVerbatim: the detail pane shows an item's title as typed. It
// was rendered as markdown: "*not emphasis* [a](b) `x`" read "not emphasis
// a (b) x", not what the person wrote. The body stays markdown.
func TestUITitleVerbatim(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "build")
	title := "*not emphasis* [a](b) `x` __y__"
	body := filepath.Join(t.TempDir(), "body.md")
	if err := os.WriteFile(body, []byte("the **bold** body\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(p.ok("queue", "add", "build", "--title", title, "--body", body))
	ui := startUITmux(t, p)
	ui.waitPane("Needs you")
	ui.keys("3")
	ui.waitPane(id)              // the detail pane shows the item
	ui.waitPane("│ # " + title)  // its title as typed
	ui.waitPane("the bold body") // the body rendered
}

// TestUIStatusClears: a status line message goes: a confirmation after a
// few seconds by itself, any message at the next key press. It stayed for
// ever, so an old "cancelled" or error read as the outcome of what the
// person did last.
func TestUIStatusClears(t *testing.T) {
	p := viewsProject(t)
	ui := startUITmux(t, p)
	ui.waitPane("bob failed")
	ui.keys("3")
	ui.waitPane("compile the parser")
	ui.keys("x") // a pending item: nothing to release, an error
	ui.waitPane("nothing to release here")
	ui.keys("j")
	ui.waitScreen("cleared the error at the next key", func(s string) bool { return !strings.Contains(s, "nothing to release here") })

	ui.keys("2", "m") // a message to the agent, then esc
	ui.waitPane("your message")
	ui.keys("Escape")
	ui.waitPane("cancelled")
	ui.waitScreen("cleared \"cancelled\" by itself", func(s string) bool { return !strings.Contains(s, "cancelled") })
}

// TestServeLongFlash: the outcome of an action travels to the next page in
// a cookie, and a browser drops a cookie over 4096 bytes without a word. A
// long error (here one naming a 5000-character channel) made a cookie of
// some 5 KB, and the person saw no outcome at all. The flash is cut to fit,
// says so, and says where the whole message is.
func TestServeLongFlash(t *testing.T) {
	p := newProject(t)
	u := startServe(t, p, "--listen", "127.0.0.1:0")
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) string {
		t.Helper()
		resp, err := client.Get(u + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(get("docs/tavern.md")) // its edit form
	if m == nil {
		t.Fatal("no csrf token on the page")
	}
	long := "no-such-" + strings.Repeat("é", 2500) // escaped, each is 6 bytes
	resp, err := client.PostForm(u+"action", url.Values{"csrf": {m[1]}, "action": {"send"}, "target": {long}, "text": {"hi"}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /action: %s", resp.Status)
	}
	var flash *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "tavern_flash" {
			flash = c
		}
	}
	if flash == nil {
		t.Fatal("no flash cookie")
	}
	// What browsers keep: name and value up to 4096 bytes (RFC 6265
	// counts the attributes in too).
	if n := len(resp.Header.Get("Set-Cookie")); n > 4096 {
		t.Fatalf("the flash cookie is %d bytes; a browser drops one over 4096", n)
	}
	page := html.UnescapeString(get(""))
	if !strings.Contains(page, "error: send "+long[:20]) || !strings.Contains(page, "… (cut; the whole message: tavern log --type view.action)") {
		i := strings.Index(page, `id="flash"`)
		t.Fatalf("the page after the action does not show the cut flash:\n%.600s", page[max(i, 0):])
	}
	// Where it points: the whole error is there.
	if log := p.ok("log", "--type", "view.action", "--json"); !strings.Contains(log, long) {
		t.Errorf("tavern log --type view.action does not hold the whole message:\n%.300s", log)
	}
}

// TestUIControlChars: a title is anyone's to write, and `tavern ui` drew
// it raw: "\x1b]0;pwned\x07" set the terminal's title, "\x1b[2J" cleared
// the screen, a bare \r moved the cursor. The list and the detail pane
// show such characters escaped (\x1b, \x0d); the terminal's title stays.
func TestUIControlChars(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "evil\x1b]0;pwned\x07 \x1b[2J x\r y")
	ui := startUITmux(t, p)
	ui.waitPane("Needs you")
	ui.keys("3")
	ui.waitPane(`evil\x1b]0;pwned\x07 \x1b[2J x\x0d y`)     // the list
	ui.waitPane(`│ # evil\x1b]0;pwned\x07 \x1b[2J x\x0d y`) // the detail pane
	if title, _ := ui.tmux("display-message", "-p", "-t", "ui", "#{pane_title}"); strings.Contains(title, "pwned") {
		t.Errorf("the title set the terminal's title: %q", strings.TrimSpace(title))
	}
}

// browserContext is a tab of a real headless chromium (bin) with a window
// of 1280x900, in a browser context of its own (cookies, storage and
// cache of its own, disposed with the tab), for at most d; it ends with
// the test. The chromium process is the package's one (sharedBrowser):
// starting one per test cost about a CPU-second each.
func browserContext(t *testing.T, bin string, d time.Duration) context.Context {
	t.Helper()
	browser, err := sharedBrowser(bin)
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, d)
	t.Cleanup(func() { cancelT(); cancel() })
	return ctx
}

var (
	browserOnce sync.Once
	browser     context.Context
	browserErr  error
	// stopBrowser ends the shared chromium and removes its profile; the
	// package's TestMain calls it after the tests.
	stopBrowser = func() {}
)

// sharedBrowser starts chromium (bin) once, with a profile of its own,
// and returns the context of its first tab, from which browserContext
// opens the tests' tabs. Its first run has no deadline: the process
// lives as long as the context of that run (chromedp's allocator).
func sharedBrowser(bin string) (context.Context, error) {
	browserOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tavern-chromium-")
		if err != nil {
			browserErr = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.WindowSize(1280, 900), chromedp.Flag("user-data-dir", dir))
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		stopBrowser = func() { cancel(); cancelA(); os.RemoveAll(dir) }
		if err := chromedp.Do(ctx); err != nil { // starts the browser
			browserErr = err
			return
		}
		browser = ctx
	})
	return browser, browserErr
}
