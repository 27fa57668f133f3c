package gitsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func init() {
	queues.RegisterEngine("git", OpenEngine)
	queues.RegisterEngineCheck("git", checkRemote)
}

// ClaimRefs is the remote namespace of the git engine's claim records:
// refs/tavern/claims/<key>, e.g. refs/tavern/claims/items/build/p05-019a...
const ClaimRefs = "refs/tavern/claims/"

// localClaims mirrors the remote claim refs fetched by this clone.
const localClaims = "refs/tavern/rclaims/"

// record is one claim record: the message of a commit with the empty
// tree, whose parent is the key's previous record. The chain is the
// key's history (`git log refs/tavern/claims/<key>` in any clone).
type record struct {
	State      string           `json:"state"` // held, free, done, dead
	Fence      int64            `json:"fence"`
	Attempts   int              `json:"attempts"`
	Holder     string           `json:"holder,omitempty"`
	Machine    string           `json:"machine,omitempty"`
	LeaseUntil schema.Timestamp `json:"lease_until,omitzero"`
	Result     string           `json:"result,omitempty"`
	At         schema.Timestamp `json:"at,omitzero"` // when it was finished
}

type viewEntry struct {
	oid string
	rec record
}

// RefEngine is coordination: git. Every claim, renewal, release and
// completion is one compare-and-swap push of the key's claim ref
// (--force-with-lease=<ref>:<the record it read>; "" for a ref that must
// not exist yet): the remote accepts exactly one of racing pushes. A
// claim's liveness is its lease_until, written by the holder's clock;
// Live claims are renewed by this process every claim_ttl/3 (default
// 30s/3), so a dead machine's claims come back claim_ttl after its last
// renewal. It is safe for concurrent use.
type RefEngine struct {
	s       *docstore.Store
	repo    *repo
	remote  string
	machine string
	liveTTL time.Duration
	maxAge  time.Duration // a view older than this is fetched again before a decision

	mu     sync.Mutex
	view   map[string]viewEntry // key -> latest known record
	viewAt map[string]time.Time // key directory -> last fetch
	live   map[string]int64     // Live claims of this process: key -> fence
	hinted map[string]bool      // view entries from Hint, not yet tried
	stop   chan struct{}
	once   sync.Once
}

// OpenEngine is the queues.EngineOpener of coordination: git. The remote
// is the sync remote (sync: remote:, $TAVERN_SYNC_REMOTE or the project's
// origin); sync: claim_ttl sets the lease of Live claims.
func OpenEngine(cc queues.CoordConfig) (queues.Coordinator, error) {
	if cc.Doc != nil {
		if err := checkSection(cc.Store, cc.Doc); err != nil {
			return nil, err
		}
	}
	sec := cc.Section("sync")
	get := func(k string) string { v, _ := sec[k].(string); return v }
	remote, err := remoteOf(cc.Store.Root(), "", get("remote"))
	if errors.Is(err, ErrNoRemote) {
		return noRemote{machine: cc.Machine}, nil
	}
	if err != nil {
		return nil, err
	}
	ttl := 30 * time.Second
	if v := get("claim_ttl"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			path, line, col := cc.Pos("sync", "claim_ttl")
			return nil, &SyncError{Op: "open", Path: fmt.Sprintf("%s:%d:%d", path, line, col), Err: fmt.Errorf("sync.claim_ttl %q: want a positive duration", v)}
		}
		ttl = d
	}
	r, err := openRepo(filepath.Join(cc.Store.Root(), Dir, "git"), cc.Machine)
	if err != nil {
		return nil, err
	}
	return &RefEngine{s: cc.Store, repo: r, remote: remote, machine: cc.Machine, liveTTL: ttl, maxAge: time.Second,
		view: map[string]viewEntry{}, viewAt: map[string]time.Time{}, live: map[string]int64{}, hinted: map[string]bool{}, stop: make(chan struct{})}, nil
}

// Engine implements queues.Coordinator.
func (e *RefEngine) Engine() string { return "git" }

// Machine implements queues.Coordinator.
func (e *RefEngine) Machine() string { return e.machine }

// Close stops renewing Live claims (they end claim_ttl later).
func (e *RefEngine) Close() error {
	e.once.Do(func() { close(e.stop) })
	return nil
}

// refName encodes a key as a ref name: characters git forbids in ref
// names are %XX-escaped, component by component.
func refName(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		var b strings.Builder
		for j := 0; j < len(p); j++ {
			c := p[j]
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || (c == '.' && j > 0 && p[j-1] != '.')
			if ok {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		s := b.String()
		if strings.HasSuffix(s, ".lock") {
			s = strings.TrimSuffix(s, ".lock") + "%2Elock"
		}
		parts[i] = s
	}
	return strings.Join(parts, "/")
}

func keyDir(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

func (e *RefEngine) unavailable(op, key string, err error) error {
	return &queues.CoordError{Op: op, Key: key, Err: fmt.Errorf("%w: git remote %s: %v", queues.ErrUnavailable, e.remote, err)}
}

// refresh fetches the claim refs of key's directory (one fetch for a
// whole queue) and rebuilds their view.
func (e *RefEngine) refresh(ctx context.Context, key string) error {
	return e.refreshDir(ctx, keyDir(key))
}

// refreshDir fetches the claim refs under dir (every depth) and records
// when (fetchedAt).
func (e *RefEngine) refreshDir(ctx context.Context, dir string) error {
	return e.loadDir(ctx, dir, true)
}

// loadDir rebuilds the view of the claim refs under dir from the local
// copies, fetching them first if fetch.
func (e *RefEngine) loadDir(ctx context.Context, dir string, fetch bool) error {
	key := dir
	// Fetches of one clone update the same local refs: one at a time.
	l, err := e.s.Lock("gitclaims")
	if err != nil {
		return err
	}
	defer l.Unlock()
	src := ClaimRefs + refName(dir) + "/*"
	dst := localClaims + refName(dir) + "/*"
	at := time.Now()
	if fetch {
		if err := e.repo.clearStaleLocks(localClaims + refName(dir) + "/"); err != nil { // a killed fetch's
			return err
		}
		if _, err := e.repo.fetch(ctx, e.remote, "+"+src+":"+dst); err != nil {
			return e.unavailable("fetch", key, err)
		}
		e.recordFetch(dir, at)
	} else if at, err = e.fetchedAt(dir); err != nil {
		return err
	}
	out, err := e.repo.git(nil, "for-each-ref", "--format=%(refname)%09%(objectname)%09%(contents:subject)", localClaims+refName(dir)+"/")
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	prefix := localClaims + refName(dir) + "/"
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		var r record
		if json.Unmarshal([]byte(f[2]), &r) != nil {
			continue
		}
		k := dir + "/" + unescape(strings.TrimPrefix(f[0], prefix))
		if cur, ok := e.view[k]; ok && cur.rec.Fence > r.Fence {
			continue // our own newer push, not fetched back yet
		}
		e.view[k] = viewEntry{oid: f[1], rec: r}
	}
	e.viewAt[dir] = at
	return nil
}

// fetchedFile is where the time of the last fetch of dir's claim refs is
// recorded, with the remote fetched, for commands that come later
// (queues.ViewAge): .tavern/.sync/git/tavern-fetched/<dir>.
func (e *RefEngine) fetchedFile(dir string) string {
	return filepath.Join(e.repo.dir, "tavern-fetched", strings.ReplaceAll(refName(dir), "/", "+"))
}

// recordFetch records a fetch of dir's claim refs that started at at
// (best effort: without the record the next listing fetches).
func (e *RefEngine) recordFetch(dir string, at time.Time) {
	path := e.fetchedFile(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if os.WriteFile(tmp, []byte(at.UTC().Format(time.RFC3339Nano)+"\t"+e.remote+"\n"), 0o644) != nil || os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}

// errNoFetch: no usable record of an earlier fetch (none, another
// remote's, or from the future).
var errNoFetch = errors.New("no recent fetch of the claim refs")

// fetchedAt returns when dir's claim refs were last fetched from this
// engine's remote.
func (e *RefEngine) fetchedAt(dir string) (time.Time, error) {
	b, err := os.ReadFile(e.fetchedFile(dir))
	if err != nil {
		return time.Time{}, errNoFetch
	}
	ts, remote, _ := strings.Cut(strings.TrimSpace(string(b)), "\t")
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || remote != e.remote || at.After(time.Now()) {
		return time.Time{}, errNoFetch
	}
	return at, nil
}

func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err == nil {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Hint tells the engine the claim record a claim was granted with (the
// item's claim_lease, "git:<oid>"), so that a process that did not make
// the claim (`tavern item done` after `tavern queue take`) can
// compare-and-swap against it at once instead of fetching first. The
// record is read from this clone's repository, where the claiming process
// made it; a stale hint only costs a rejected push and a fetch.
func (e *RefEngine) Hint(key, lease string) {
	oid, ok := strings.CutPrefix(lease, "git:")
	if !ok || oid == "" {
		return
	}
	out, err := e.repo.git(nil, "log", "-1", "--format=%s", oid)
	if err != nil {
		return
	}
	var r record
	if json.Unmarshal([]byte(strings.TrimSpace(string(out))), &r) != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur, ok := e.view[key]; !ok || cur.rec.Fence <= r.Fence {
		e.view[key] = viewEntry{oid: oid, rec: r}
		e.hinted[key] = true
	}
}

// lookup returns the key's record, fetching if the view is older than
// maxAge or force (a hinted record is tried once without fetching).
func (e *RefEngine) lookup(ctx context.Context, key string, force bool) (viewEntry, bool, error) {
	e.mu.Lock()
	at := e.viewAt[keyDir(key)]
	if v, ok := e.view[key]; ok && e.hinted[key] && !force {
		delete(e.hinted, key)
		e.mu.Unlock()
		return v, true, nil
	}
	e.mu.Unlock()
	if force || time.Since(at) > e.maxAge {
		if err := e.refresh(ctx, key); err != nil {
			return viewEntry{}, false, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.view[key]
	return v, ok, nil
}

// cas writes rec as key's next record if the remote still has prev
// ("" = no record). It reports false when another push won.
func (e *RefEngine) cas(ctx context.Context, key string, prev viewEntry, hadPrev bool, rec record) (bool, error) {
	msg, _ := json.Marshal(rec)
	parent := ""
	expect := ""
	if hadPrev {
		parent, expect = prev.oid, prev.oid
	}
	oid, err := e.repo.commitTree(emptyTree, string(msg)+"\n", parent)
	if err != nil {
		return false, err
	}
	res, err := e.repo.push(ctx, e.remote, oid, ClaimRefs+refName(key), &expect)
	switch res {
	case pushOK:
		e.mu.Lock()
		e.view[key] = viewEntry{oid: oid, rec: rec}
		e.mu.Unlock()
		return true, nil
	case pushRejected:
		return false, nil
	}
	return false, e.unavailable("push", key, err)
}

// Skip implements queues.Skipper from the view (no fetch): a key whose
// last known record is finished, or held and within its lease.
func (e *RefEngine) Skip(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.view[key]
	if !ok {
		return false
	}
	switch v.rec.State {
	case "done", "dead":
		return true
	case "held":
		return v.rec.Machine != e.machine && time.Now().Before(v.rec.LeaseUntil.Time)
	}
	return false
}

// Claim implements queues.Coordinator.
func (e *RefEngine) Claim(ctx context.Context, key string, req queues.ClaimRequest) (queues.Grant, error) {
	ttl := req.TTL
	if req.Live {
		ttl = e.liveTTL
	}
	if ttl <= 0 {
		ttl = e.liveTTL
	}
	force := false
	for try := 0; try < 3; try++ {
		if err := ctx.Err(); err != nil {
			return queues.Grant{}, err
		}
		cur, ok, err := e.lookup(ctx, key, force)
		if err != nil {
			return queues.Grant{}, err
		}
		next := record{State: "held", Fence: 1, Attempts: 1, Holder: req.Holder, Machine: e.machine, LeaseUntil: schema.TimeOf(time.Now().Add(ttl).UTC())}
		if ok {
			switch r := cur.rec; {
			case r.State == "done" || r.State == "dead":
				return queues.Grant{}, fmt.Errorf("%s: %w (%s)", key, queues.ErrFinished, r.State)
			case r.State == "held" && time.Now().Before(r.LeaseUntil.Time):
				return queues.Grant{}, &queues.HeldError{Key: key, Holder: r.Holder, Machine: r.Machine, Fence: r.Fence}
			default: // free, or held past its lease
				next.Fence, next.Attempts = r.Fence+1, r.Attempts+1
			}
		}
		won, err := e.cas(ctx, key, cur, ok, next)
		if err != nil {
			return queues.Grant{}, err
		}
		if won {
			if req.Live {
				e.keepAlive(key, next.Fence)
			}
			e.mu.Lock()
			oid := e.view[key].oid
			e.mu.Unlock()
			return queues.Grant{Fence: next.Fence, Attempts: next.Attempts, Lease: "git:" + oid}, nil
		}
		force = true // someone pushed first: read again
	}
	return queues.Grant{}, &queues.HeldError{Key: key, Holder: "?", Machine: "?"}
}

// change rewrites a held key's record if fence still holds it.
func (e *RefEngine) change(ctx context.Context, key string, fence int64, edit func(r *record)) error {
	force := false
	for try := 0; try < 3; try++ {
		cur, ok, err := e.lookup(ctx, key, force)
		if err != nil {
			return err
		}
		if !ok || cur.rec.State != "held" || cur.rec.Fence != fence {
			if !force {
				force = true
				continue
			}
			why := "it has no claim record"
			if ok {
				why = fmt.Sprintf("its record is %s, fence %d (%s on %s)", cur.rec.State, cur.rec.Fence, cur.rec.Holder, cur.rec.Machine)
			}
			return fmt.Errorf("%s fence %d: %w: %s", key, fence, queues.ErrLostClaim, why)
		}
		// Past its lease another machine may take it at any moment: the
		// push decides, and a lost race is a lost claim.
		next := cur.rec
		edit(&next)
		won, err := e.cas(ctx, key, cur, true, next)
		if err != nil {
			return err
		}
		if won {
			return nil
		}
		force = true
	}
	return fmt.Errorf("%s fence %d: %w: the record kept changing", key, fence, queues.ErrLostClaim)
}

// Renew implements queues.Coordinator.
func (e *RefEngine) Renew(ctx context.Context, key string, fence int64, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = e.liveTTL
	}
	return e.change(ctx, key, fence, func(r *record) { r.LeaseUntil = schema.TimeOf(time.Now().Add(ttl).UTC()) })
}

// Release implements queues.Coordinator.
func (e *RefEngine) Release(ctx context.Context, key string, fence int64, giveBack bool) error {
	e.forget(key)
	return e.change(ctx, key, fence, func(r *record) {
		r.State, r.LeaseUntil = "free", schema.TimeOf(time.Time{})
		if giveBack && r.Attempts > 0 {
			r.Attempts--
		}
	})
}

// Finish implements queues.Coordinator.
func (e *RefEngine) Finish(ctx context.Context, key string, fence int64, outcome, result string) error {
	e.forget(key)
	if len(result) > 4096 {
		result = result[:4096]
	}
	return e.change(ctx, key, fence, func(r *record) {
		r.State, r.Result, r.LeaseUntil, r.At = outcome, result, schema.TimeOf(time.Time{}), schema.TimeOf(time.Now().UTC())
	})
}

// Reopen implements queues.Coordinator.
func (e *RefEngine) Reopen(ctx context.Context, key string) error {
	force := false
	for try := 0; try < 5; try++ {
		cur, ok, err := e.lookup(ctx, key, force)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		next := record{State: "free", Fence: cur.rec.Fence, Attempts: 0}
		won, err := e.cas(ctx, key, cur, true, next)
		if err != nil || won {
			return err
		}
		force = true
	}
	return fmt.Errorf("reopen %s: the record kept changing", key)
}

// State implements queues.Coordinator.
func (e *RefEngine) State(ctx context.Context, key string) (queues.ClaimState, error) {
	cur, ok, err := e.lookup(ctx, key, false)
	if err != nil || !ok {
		return queues.ClaimState{}, err
	}
	return stateOf(cur.rec), nil
}

func stateOf(r record) queues.ClaimState {
	st := queues.ClaimState{Fence: r.Fence, Holder: r.Holder, Machine: r.Machine, Attempts: r.Attempts, LeaseUntil: r.LeaseUntil.Time}
	switch r.State {
	case "held":
		st.Held = time.Now().Before(r.LeaseUntil.Time)
	case "done", "dead":
		st.Finished, st.FinishedBy, st.Result, st.FinishedAt = r.State, r.Fence, r.Result, r.At.Time
	}
	return st
}

// keepAlive renews a Live claim every liveTTL/3 until it is released,
// finished, lost, or the engine closed.
func (e *RefEngine) keepAlive(key string, fence int64) {
	e.mu.Lock()
	e.live[key] = fence
	e.mu.Unlock()
	go func() {
		t := time.NewTicker(e.liveTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case <-t.C:
			}
			e.mu.Lock()
			f, ok := e.live[key]
			e.mu.Unlock()
			if !ok || f != fence {
				return
			}
			// A renewal that cannot finish before the next is due gives up.
			ctx, cancel := context.WithTimeout(context.Background(), e.liveTTL/3)
			err := e.Renew(ctx, key, fence, e.liveTTL)
			cancel()
			if errors.Is(err, queues.ErrLostClaim) {
				e.forget(key)
				return
			}
		}
	}()
}

func (e *RefEngine) forget(key string) {
	e.mu.Lock()
	delete(e.live, key)
	e.mu.Unlock()
}

// List implements queues.Lister from a fresh fetch of prefix's claim refs.
// A listing that accepts an older view (queues.ViewAge) is answered from
// the claim refs an earlier command fetched, if that is recent enough,
// and is told when they were fetched.
func (e *RefEngine) List(ctx context.Context, prefix string) (map[string]queues.ClaimState, error) {
	dir := strings.TrimSuffix(prefix, "/")
	va := queues.ViewAgeOf(ctx)
	fetch := true
	if va != nil && va.MaxAge > 0 {
		if at, err := e.fetchedAt(dir); err == nil && time.Since(at) < va.MaxAge {
			fetch = false
		}
	}
	// refresh fetches the directory of a key: one below prefix.
	if err := e.loadDir(ctx, dir, fetch); err != nil {
		return nil, err
	}
	if va != nil && !fetch {
		e.mu.Lock()
		va.At = e.viewAt[dir]
		e.mu.Unlock()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]queues.ClaimState{}
	for k, v := range e.view {
		if st := stateOf(v.rec); strings.HasPrefix(k, dir+"/") && st.Held {
			out[k] = st
		}
	}
	return out, nil
}

// Finished implements queues.FinishedLister from the view of prefix's
// claim refs, fetched again unless List (or another fetch) of prefix did
// within maxAge, or within the older view a listing accepts
// (queues.ViewAge, which List then loaded).
func (e *RefEngine) Finished(ctx context.Context, prefix string, keys []string) (map[string]queues.ClaimState, error) {
	dir := strings.TrimSuffix(prefix, "/")
	e.mu.Lock()
	at := e.viewAt[dir]
	e.mu.Unlock()
	maxAge := e.maxAge
	if va := queues.ViewAgeOf(ctx); va != nil && va.MaxAge > maxAge && !at.IsZero() {
		maxAge = va.MaxAge
	}
	if time.Since(at) > maxAge {
		if err := e.refreshDir(ctx, dir); err != nil {
			return nil, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]queues.ClaimState{}
	for _, k := range keys {
		if v, ok := e.view[k]; ok {
			if st := stateOf(v.rec); st.Finished != "" {
				out[k] = st
			}
		}
	}
	return out, nil
}

// noRemote is coordination: git on a clone that names no remote (no
// sync: remote:, no $TAVERN_SYNC_REMOTE, no origin). It opens, so that
// what reads (queue ls, token ls, reservations, doctor) shows this
// machine's state with a warning, as with a remote out of reach; every
// call that would decide something through the remote fails with
// ErrNoRemote, never falling back to local claims. `tavern check` reports
// the missing remote at tavern.md's coordination line (checkRemote).
type noRemote struct{ machine string }

func (n noRemote) err(op, key string) error { return &SyncError{Op: op, Path: key, Err: ErrNoRemote} }

func (n noRemote) Engine() string  { return "git" }
func (n noRemote) Machine() string { return n.machine }
func (n noRemote) Close() error    { return nil }
func (n noRemote) Claim(_ context.Context, key string, _ queues.ClaimRequest) (queues.Grant, error) {
	return queues.Grant{}, n.err("claim", key)
}
func (n noRemote) Renew(_ context.Context, key string, _ int64, _ time.Duration) error {
	return n.err("renew", key)
}
func (n noRemote) Release(_ context.Context, key string, _ int64, _ bool) error {
	return n.err("release", key)
}
func (n noRemote) Finish(_ context.Context, key string, _ int64, _, _ string) error {
	return n.err("finish", key)
}
func (n noRemote) Reopen(_ context.Context, key string) error { return n.err("reopen", key) }
func (n noRemote) State(_ context.Context, key string) (queues.ClaimState, error) {
	return queues.ClaimState{}, n.err("state", key)
}
func (n noRemote) List(_ context.Context, prefix string) (map[string]queues.ClaimState, error) {
	return nil, n.err("list", prefix)
}
func (n noRemote) Finished(_ context.Context, prefix string, _ []string) (map[string]queues.ClaimState, error) {
	return nil, n.err("list", prefix)
}

// checkRemote is `tavern check`'s look at coordination: git on this
// machine: a clone that names no remote cannot claim anything (exit 5,
// at tavern.md's coordination line), where before check said the store
// was valid and the first claim failed.
func checkRemote(cc queues.CoordConfig) error {
	if cc.Dir == "" {
		return nil
	}
	remote, _ := cc.Section("sync")["remote"].(string)
	if _, err := remoteOf(cc.Dir, "", remote); errors.Is(err, ErrNoRemote) {
		path, line, col := cc.Pos("coordination")
		return &ConfigError{Path: path, Line: line, Col: col, Field: "coordination", Msg: "git: " + ErrNoRemote.Error()}
	}
	return nil
}
