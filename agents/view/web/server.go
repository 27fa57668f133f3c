package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// Options configure a Server.
type Options struct {
	// Token, if set, is required on every request: as ?token= once (it is
	// then kept in a cookie) or in the cookie. Serve sets it whenever the
	// address is not loopback.
	Token string
	// Hosts are the Host headers accepted without a token (the loopback
	// names of the listening address). A request naming any other host is
	// refused: a page on another site that rebinds its DNS name to
	// 127.0.0.1 must not reach the store. Empty accepts any (with Token).
	Hosts []string
	// Heartbeat is how often an idle event stream gets a comment, so
	// proxies and browsers keep it open. Default 15s.
	Heartbeat time.Duration
	// AgeRefresh is how often an open page is told ("ages") to fetch its
	// content again although nothing changed, so that its ages ("open
	// for 3m", "2m ago") move on. Default 30s.
	AgeRefresh time.Duration
}

// Server is the browser face: an http.Handler serving the pages, the
// event stream and the actions of one view.
type Server struct {
	v    *view.View
	opt  Options
	csrf string
	mux  *http.ServeMux
}

// FragmentHeader asks for a page's <main> content only: what the page's
// script fetches on every change to swap in without a reload.
const FragmentHeader = "X-Tavern-Fragment"

const tokenCookie = "tavern_token"

// New returns the server of v.
func New(v *view.View, opt Options) *Server {
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = 15 * time.Second
	}
	if opt.AgeRefresh <= 0 {
		opt.AgeRefresh = 30 * time.Second
	}
	s := &Server{v: v, opt: opt, csrf: randomHex(16), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /{$}", s.page("needs"))
	s.mux.HandleFunc("GET /agents", s.page("agents"))
	s.mux.HandleFunc("GET /agents/{name}", s.page("agent"))
	s.mux.HandleFunc("GET /queues", s.page("queues"))
	s.mux.HandleFunc("GET /items/{id}", s.page("item"))
	s.mux.HandleFunc("GET /channels", s.page("channels"))
	s.mux.HandleFunc("GET /channels/{name}", s.page("channel"))
	s.mux.HandleFunc("GET /resources", s.page("resources"))
	s.mux.HandleFunc("GET /journal", s.page("journal"))
	s.mux.HandleFunc("GET /docs/{path...}", s.page("doc"))
	s.mux.HandleFunc("GET /api/snapshot", s.apiSnapshot)
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("POST /action", s.action)
	static, _ := fs.Sub(assets, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(filesOnly{static})))
	return s
}

// filesOnly is an fs.FS whose directories do not exist: http.FileServer
// serves its files and answers 404 for a directory instead of listing it.
type filesOnly struct{ fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}

// RandomToken is a fresh access token for Options.Token.
func RandomToken() string { return randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// LoopbackHosts are the Host headers a server listening on addr (a
// loopback address) answers to.
func LoopbackHosts(addr net.Addr) []string {
	_, port, _ := net.SplitHostPort(addr.String())
	return []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port}
}

// IsLoopback reports whether a listen address ("host:port") only accepts
// connections from this machine.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	if len(s.opt.Hosts) > 0 && !contains(s.opt.Hosts, r.Host) {
		http.Error(w, "tavern: unexpected Host header "+strconv.Quote(r.Host)+" (open the address tavern serve printed)", http.StatusForbidden)
		return
	}
	if s.opt.Token != "" {
		if q := r.URL.Query().Get("token"); q != "" && equal(q, s.opt.Token) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			qs := u.Query()
			qs.Del("token")
			u.RawQuery = qs.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(tokenCookie)
		if err != nil || !equal(c.Value, s.opt.Token) {
			http.Error(w, "tavern: this server needs the token tavern serve printed at start-up (open the URL with ?token=...)", http.StatusUnauthorized)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// page serves one page, whole or (with FragmentHeader) its main content.
func (s *Server) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.build(name, r)
		if err != nil {
			http.Error(w, err.Error(), pageStatus(err))
			return
		}
		p.CSRF, p.Here = s.csrf, r.URL.RequestURI()
		p.Flash = takeFlash(w, r)
		var buf bytes.Buffer
		tmpl := "layout"
		if r.Header.Get(FragmentHeader) != "" {
			tmpl = "app"
		}
		if err := render(&buf, tmpl, p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(buf.Bytes())
	}
}

// pageStatus is the HTTP status of a page that could not be built: a path
// or name that can name no document is the request's fault (400), one that
// names none is 404, the rest the server's (500).
func pageStatus(err error) int {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound
	case errors.Is(err, docstore.ErrUnsafePath), errors.Is(err, docstore.ErrOddFile),
		errors.Is(err, docstore.ErrEngineFile), errors.Is(err, schema.ErrInvalidName),
		errors.Is(err, schema.ErrBadAgentName), errors.Is(err, schema.ErrUnknownKind),
		errors.Is(err, syscall.ENAMETOOLONG):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func (s *Server) build(name string, r *http.Request) (*Page, error) {
	snap, err := s.v.Snapshot()
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	switch name {
	case "agent":
		return agentPage(s.v, snap, r.PathValue("name"))
	case "item":
		return itemPage(s.v, snap, r.PathValue("id"))
	case "channel":
		return channelPage(s.v, snap, r.PathValue("name"))
	case "doc":
		return docPage(s.v, snap, r.PathValue("path"))
	case "queues":
		return queuesPage(s.v, snap, strings.TrimSpace(q.Get("q"))), nil
	case "journal":
		f := JournalFilter{Type: q.Get("type"), Agent: q.Get("agent"), Kind: q.Get("kind"), Text: q.Get("q")}
		return journalPage(snap, f), nil
	}
	return listPage(name, snap), nil
}

func (s *Server) apiSnapshot(w http.ResponseWriter, r *http.Request) {
	snap, err := s.v.Snapshot()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(snap)
}

// events is the server-sent event stream: "change" with the view's version
// whenever something changed, "ages" every AgeRefresh (the view announces
// no change for ages). The page refetches its main content on either.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ups, stop := s.v.Updates()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	fmt.Fprintf(w, "retry: 1000\nevent: hello\ndata: %d\n\n", s.v.Version())
	fl.Flush()
	tick := time.NewTicker(s.opt.Heartbeat)
	defer tick.Stop()
	ages := time.NewTicker(s.opt.AgeRefresh)
	defer ages.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ver, ok := <-ups:
			if !ok {
				return
			}
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", ver)
			fl.Flush()
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
			fl.Flush()
		case <-ages.C:
			fmt.Fprintf(w, "event: ages\ndata: %d\n\n", s.v.Version())
			fl.Flush()
		}
	}
}

// action performs a POSTed action. The form carries the CSRF token of this
// server (pages are only readable by the same origin) and, when the action
// asks for a confirmation, confirmed=1 (set by the page's script after
// confirm(), or by the confirmation page served to browsers without
// script).
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<20)
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !equal(r.PostForm.Get("csrf"), s.csrf) || crossSite(r) {
		http.Error(w, "tavern: cross-site or stale form (reload the page and try again)", http.StatusForbidden)
		return
	}
	a := view.Action{Name: r.PostForm.Get("action"), Target: r.PostForm.Get("target"), Queue: r.PostForm.Get("queue"),
		Rev: r.PostForm.Get("rev"), Text: r.PostForm.Get("text"), Confirm: r.PostForm.Get("confirm")}
	if at := r.PostForm.Get("attempt"); at != "" {
		n, err := strconv.Atoi(at)
		if err != nil || n < 0 {
			// Read as 0, it would be no fence at all.
			http.Error(w, "tavern: attempt "+strconv.Quote(at)+" is not a claim attempt (a number from 1)", http.StatusBadRequest)
			return
		}
		a.Attempt = n
	}
	if a.Name == view.ActEdit {
		a.Text = formLines(s.v.Store(), a.Target, a.Text)
	} else {
		// An answer, a message, a reason: stored, and printed to
		// scripts, as the commands store them.
		a.Text = strings.ReplaceAll(a.Text, "\r\n", "\n")
	}
	if a.Name == view.ActApprove || a.Name == view.ActReject {
		// People only: judge the process that sent the request, not this
		// server (an agent can reach a loopback address too). Beyond
		// loopback the sender is elsewhere, and the token stands for it.
		la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if ra, err := net.ResolveTCPAddr("tcp", r.RemoteAddr); err == nil && la != nil && IsLoopback(la.String()) {
			a.Caller = queues.PeerCaller(la, ra)
		}
	}
	next := safeNext(r.PostForm.Get("next"))
	if a.Confirm != "" && r.PostForm.Get("confirmed") != "1" {
		snap, err := s.v.Snapshot()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		p := confirmPage(snap, a, next)
		p.CSRF, p.Here = s.csrf, next
		var buf bytes.Buffer
		if err := render(&buf, "layout", p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	msg, err := s.v.Do(ctx, a)
	if errors.Is(err, view.ErrUnknownAction) {
		// No page sends it: a script's typo, a form of another version.
		http.Error(w, "tavern: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err != nil && a.Name == view.ActEdit {
		// The edit loop: show the problems with the person's text kept,
		// to edit again.
		snap, serr := s.v.Snapshot()
		if serr == nil {
			p, perr := docPage(s.v, snap, a.Target)
			if errors.Is(perr, fs.ErrNotExist) {
				// Gone since the page was loaded: the refusal still shows
				// the person's text, to copy (a redirect to the document's
				// address was a bare 404 and lost it).
				p, perr = &Page{Name: "doc", Title: a.Target, Snap: snap, Doc: &view.Doc{Path: a.Target, Valid: true}}, nil
			}
			if perr == nil {
				p.CSRF, p.Here, p.Error, p.EditText, p.EditRev = s.csrf, next, err.Error(), a.Text, a.Rev
				var buf bytes.Buffer
				if render(&buf, "layout", p) == nil {
					w.Header().Set("Content-Type", "text/html; charset=utf-8")
					w.WriteHeader(http.StatusUnprocessableEntity)
					w.Write(buf.Bytes())
					return
				}
			}
		}
	}
	if err != nil {
		setFlash(w, "error: "+err.Error())
	} else {
		setFlash(w, msg)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// formLines is a textarea's text with the line endings of the document it
// edits (other form text gets "\n"): a browser sends every line of a textarea ending in CRLF (HTML's
// form encoding), whatever it ended in, and a save turned every line of
// the document into a changed one.
func formLines(st *docstore.Store, rel, text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if data, err := st.ReadFile(rel); err == nil {
		if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
			text = strings.ReplaceAll(text, "\n", "\r\n") // a document written with CRLF keeps them
		}
	}
	return text
}

// crossSite reports a request a browser marks as coming from another site
// (Sec-Fetch-Site, Origin): refused even with a valid token.
func crossSite(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return true
		}
	}
	return false
}

// safeNext keeps redirects on this server.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	return next
}

const flashCookie = "tavern_flash"

// maxFlashCookie bounds the flash cookie's name and value: browsers drop
// a cookie over 4096 bytes without a word, and the person then saw no
// outcome at all (a long error naming many files). Room is left for the
// attributes, which RFC 6265 counts in the same 4096.
const maxFlashCookie = 4000

// flashCut ends a flash cut to fit: the whole message is in the journal,
// in the view.action event of the action (data.error, or data.message).
const flashCut = "… (cut; the whole message: tavern log --type view.action)"

func setFlash(w http.ResponseWriter, msg string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: flashValue(msg), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 60})
}

// flashValue is msg escaped for the cookie, cut on a character boundary
// with flashCut when the cookie would not fit.
func flashValue(msg string) string {
	v := url.QueryEscape(msg)
	if len(flashCookie)+1+len(v) <= maxFlashCookie {
		return v
	}
	tail := url.QueryEscape(flashCut)
	room := maxFlashCookie - len(flashCookie) - 1 - len(tail)
	var b strings.Builder
	for _, r := range msg {
		// Escaping is per character, so the pieces add up.
		e := url.QueryEscape(string(r))
		if b.Len()+len(e) > room {
			break
		}
		b.WriteString(e)
	}
	return b.String() + tail
}

func takeFlash(w http.ResponseWriter, r *http.Request) string {
	if r.Header.Get(FragmentHeader) != "" {
		return "" // the page shows it already; a live refresh keeps it
	}
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1})
	msg, _ := url.QueryUnescape(c.Value)
	return msg
}
