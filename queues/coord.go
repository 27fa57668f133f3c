package queues

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Coordinator arbitrates contended state (item claims, token slots) between
// machines that share a store through a git remote. tavern.md names one
// with `coordination: etcd` or `coordination: git`; without it (the default,
// "local") a Broker has none and claims are today's rename + flock.
//
// A key ("items/<queue>/<id>", "tokens/<name>/<slot>") is free, held (by
// one claim, identified by its fence) or finished (done or dead: it can
// never be claimed again, until Reopen). Fences only grow per key; every
// call that changes a held key names the fence it holds and fails with
// ErrLostClaim if the key is no longer held by it. Implementations:
// queues/etcd (transactions on etcd keys bound to leases) and
// queues/gitsync (compare-and-swap pushes of per-key refs).
type Coordinator interface {
	// Engine names the engine ("etcd", "git").
	Engine() string
	// Machine is this machine's name, recorded with every claim.
	Machine() string
	// Claim makes the caller the holder of key if it is free. A held key
	// gives *HeldError (ErrHeld), a finished one ErrFinished.
	Claim(ctx context.Context, key string, req ClaimRequest) (Grant, error)
	// Renew extends the claim's lease by ttl (a Live claim's lease is kept
	// alive by the process and needs no renewal).
	Renew(ctx context.Context, key string, fence int64, ttl time.Duration) error
	// Release frees the key; giveBack returns the attempt (attempts - 1).
	Release(ctx context.Context, key string, fence int64, giveBack bool) error
	// Finish makes the key finished with outcome "done" or "dead"; result
	// is kept with it (a reaper on the holder's machine uses it to finish
	// a completion that crashed between the engine and the file).
	Finish(ctx context.Context, key string, fence int64, outcome, result string) error
	// Reopen makes a finished key free again with attempts reset (retry of
	// a dead item).
	Reopen(ctx context.Context, key string) error
	// State reports the key's current state.
	State(ctx context.Context, key string) (ClaimState, error)
	// Close releases the engine's connections (claims held by a live
	// lease of this process end when its lease runs out).
	Close() error
}

// Hinter is implemented by engines that can use the lease a claim was
// granted with (Grant.Lease, recorded as claim_lease) to skip a round
// trip when another process ends the claim.
type Hinter interface {
	Hint(key, lease string)
}

// Skipper is implemented by engines that remember recent answers: Skip
// reports that key was just seen held by another claim or finished, so a
// Take passes it over without reading the file or asking the engine (a
// clone's pending/ lists items other machines hold or finished until the
// sync brings their copies). A wrong "skip" only delays a claim.
type Skipper interface {
	Skip(key string) bool
}

// coordSkip reports whether the engine already knows item id of q is not
// claimable here.
func (b *Broker) coordSkip(q *Queue, id string, diag *Diagnostics) bool {
	if sk, ok := b.coord.(Skipper); ok && sk.Skip(ItemKey(q.Name, id)) {
		diag.Elsewhere++
		return true
	}
	return false
}

// Lister is implemented by engines that can list the keys under a
// prefix (reservations need every live one, whichever machine made it).
type Lister interface {
	List(ctx context.Context, prefix string) (map[string]ClaimState, error)
}

// LeaseLister is implemented by engines whose List leaves LeaseUntil
// unknown (etcd keeps a claim's end on its lease, not on its key):
// ListLeases is List with LeaseUntil, the lease's current end (renewals
// on any machine included), at the cost of a round trip per lease. Item
// listings do without it; reservations and token slots show it.
type LeaseLister interface {
	ListLeases(ctx context.Context, prefix string) (map[string]ClaimState, error)
}

// FinishedLister is implemented by engines that can say of many keys at
// once which are finished (done or dead), by which machine: `queue ls`
// counts the pending copies of items finished on another machine as done
// or dead there until the sync brings their done/ or dead/ copies. prefix
// is the List prefix the keys are under (git fetches its directory once,
// unless List just did). Keys that are not finished are left out.
type FinishedLister interface {
	Finished(ctx context.Context, prefix string, keys []string) (map[string]ClaimState, error)
}

// listingKey marks the context of a read-only listing (ForListing).
type listingKey struct{}

// ForListing marks ctx as a read-only listing's (`queue ls`,
// `reservations`, `token ls`): an engine that cannot connect within a
// short time gives up at once (ErrUnavailable) and the listing shows
// local state with a warning, instead of waiting its full dial timeout.
// Claims, renewals and every other call that decides something never
// carry it: they wait as long as the engine's settings say.
func ForListing(ctx context.Context) context.Context {
	return context.WithValue(ctx, listingKey{}, true)
}

// IsListing reports whether ctx is a read-only listing's (ForListing).
func IsListing(ctx context.Context) bool {
	v, _ := ctx.Value(listingKey{}).(bool)
	return v
}

// ViewAge lets a listing accept the engine's view of other machines up
// to MaxAge old instead of asking the engine again (git: the claim refs
// an earlier command fetched, when it was less than MaxAge ago, from the
// same remote), and tells it how old the view it got is: At is when that
// view was fetched (zero: asked now). Only listings shown to a person or
// a script pass it; decisions always ask.
type ViewAge struct {
	MaxAge time.Duration
	At     time.Time
}

type viewAgeKey struct{}

// WithViewAge returns ctx carrying va for the engine to honour and fill.
func WithViewAge(ctx context.Context, va *ViewAge) context.Context {
	return context.WithValue(ctx, viewAgeKey{}, va)
}

// ViewAgeOf returns the ViewAge ctx carries, or nil.
func ViewAgeOf(ctx context.Context) *ViewAge {
	va, _ := ctx.Value(viewAgeKey{}).(*ViewAge)
	return va
}

// ListWithLeases lists the claims under prefix with their LeaseUntil
// where the engine can say it (LeaseLister), else as List does.
func ListWithLeases(ctx context.Context, l Lister, prefix string) (map[string]ClaimState, error) {
	if ll, ok := l.(LeaseLister); ok {
		return ll.ListLeases(ctx, prefix)
	}
	return l.List(ctx, prefix)
}

// ClaimRequest says who claims and what keeps the claim alive.
type ClaimRequest struct {
	Holder string
	// TTL is the claim's lease: it ends TTL after the last renewal.
	TTL time.Duration
	// Live ties the claim to this process: the engine keeps its lease
	// alive while the process (the Coordinator) lives, so a dead machine's
	// claims come back one engine lease (etcd lease_ttl) after it died.
	Live bool
}

// Grant is a successful claim.
type Grant struct {
	Fence    int64  // the fencing token (etcd: the claim key's revision)
	Attempts int    // claims of the key so far, this one included, less those given back
	Lease    string // the engine's lease (etcd lease id), recorded as claim_lease
}

// ClaimState is what an engine knows about a key.
type ClaimState struct {
	Held bool
	// Fence is the current claim's fence, or, not held, the last claim's
	// (0: none known; the git engine's cached view may lag behind).
	Fence      int64
	Holder     string
	Machine    string    // the holder's, the finisher's, or else the last claim's
	LeaseUntil time.Time // when known (git: the claim's own lease_until)
	Finished   string    // "done" or "dead" once finished
	FinishedBy int64     // the fence that finished it
	FinishedAt time.Time // when (the finishing machine's clock)
	Result     string
	Attempts   int
}

var (
	// ErrHeld is returned by Claim for a key another claim holds.
	ErrHeld = errors.New("held by another claim")
	// ErrFinished is returned by Claim for a key that is done or dead.
	ErrFinished = errors.New("already finished")
	// ErrLostClaim is returned by Renew, Release and Finish when the key
	// is no longer held by the given fence (its lease ran out, another
	// machine claimed it since). The Broker reports it as ErrStale.
	ErrLostClaim = errors.New("claim no longer held")
	// ErrUnavailable wraps an engine that cannot be reached: a Take then
	// fails instead of claiming without arbitration.
	ErrUnavailable = errors.New("coordination engine unavailable")
	// ErrNoEngine is returned when tavern.md names an engine this program
	// was built without.
	ErrNoEngine = errors.New("coordination engine not linked")
)

// HeldError says who holds a key.
type HeldError struct {
	Key, Holder, Machine string
	Fence                int64
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s: %s by %s on %s (fence %d)", e.Key, ErrHeld, e.Holder, e.Machine, e.Fence)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// CoordConfig is what an engine is opened with.
type CoordConfig struct {
	Store   *docstore.Store
	Machine string
	// Dir is the store's directory (.tavern), also given to an
	// EngineCheck, which has no Store: what it looks at on this machine
	// (the git engine: .sync/remote, the project's origin) is there.
	Dir string
	// Fields is tavern.md's frontmatter as plain values.
	Fields map[string]any
	// Doc is tavern.md, for the positions of bad settings (Pos).
	Doc *docstore.Doc
}

// Pos returns the path, line and column of a (nested) tavern.md field,
// e.g. Pos("etcd", "endpoints"); the deepest field found is used.
func (c CoordConfig) Pos(keys ...string) (path string, line, col int) {
	path = docstore.ConfigFile
	if c.Store != nil {
		path = filepath.Join(c.Store.Root(), docstore.ConfigFile)
	}
	if c.Doc == nil || c.Doc.Front() == nil {
		return path, 1, 1
	}
	n := c.Doc.Front()
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line, col = 1, 1
	for _, k := range keys {
		var next *yaml.Node
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					line, col = n.Content[i].Line+c.frontOffset(), n.Content[i].Column
					next = n.Content[i+1]
					break
				}
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return path, line, col
}

// frontOffset: yaml.Node lines count from the frontmatter's first line,
// which is line 2 of the file (after "---").
func (c CoordConfig) frontOffset() int { return 1 }

// Section returns tavern.md's map field name, or an empty map.
func (c CoordConfig) Section(name string) map[string]any {
	if m, ok := c.Fields[name].(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// An EngineOpener opens a Coordinator for a store.
type EngineOpener func(CoordConfig) (Coordinator, error)

var (
	enginesMu sync.Mutex
	engines   = map[string]EngineOpener{}
)

// RegisterEngine makes an engine available under name (the value of
// tavern.md's coordination field). Engines register themselves when their
// package is imported (queues/etcd, queues/gitsync), as database/sql
// drivers do: package queues cannot import them (they import it), and a
// Broker must honour tavern.md whoever opens it.
func RegisterEngine(name string, open EngineOpener) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	engines[name] = open
}

// An EngineCheck checks tavern.md's settings of an engine as far as this
// machine can without the network (its files, its environment): what
// opening the engine would refuse. cc has no Store or Machine (Dir is
// set when the store's directory is known). It returns
// the first problem, at its tavern.md position where it has one.
type EngineCheck func(cc CoordConfig) error

var engineChecks = map[string]EngineCheck{}

// RegisterEngineCheck makes `tavern check` (InstallChecks) run check on
// tavern.md when its coordination is name: without it, a setting only
// the engine reads is heard of from the first command that claims.
func RegisterEngineCheck(name string, check EngineCheck) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	engineChecks[name] = check
}

// coordConfigCheck runs the check of the engine tavern.md names. A
// tavern.md the schema refuses for its coordination or that engine's
// section is reported by the schema alone, once.
func coordConfigCheck(dir string, d *docstore.Doc) []error {
	if d.Path != docstore.ConfigFile {
		return nil
	}
	var out []error
	// With tavern.md, as the clone's other settings: a .machine that
	// every sync and engine refuses, whatever the coordination.
	if err := CheckMachineFile(dir); err != nil {
		out = append(out, err)
	}
	name := d.String("coordination")
	enginesMu.Lock()
	check := engineChecks[name]
	enginesMu.Unlock()
	if check == nil {
		return out
	}
	for _, e := range d.Validate(false) {
		if e.Field == "coordination" || e.Field == name || strings.HasPrefix(e.Field, name+".") {
			return out
		}
	}
	if err := check(CoordConfig{Fields: d.Fields(), Doc: d, Dir: dir}); err != nil {
		out = append(out, err)
	}
	return out
}

// Engines lists the registered engines.
func Engines() []string {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	var out []string
	for n := range engines {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// OpenCoordinator returns the engine tavern.md names, or nil for local
// coordination. An engine that is named but not linked into this program
// is an error (ErrNoEngine), never a silent fallback to local claims.
func OpenCoordinator(s *docstore.Store) (Coordinator, error) {
	cfg, err := s.Get(docstore.ConfigFile)
	if err != nil {
		return nil, err
	}
	name := cfg.String("coordination")
	if name == "" || name == "local" {
		return nil, nil
	}
	enginesMu.Lock()
	open := engines[name]
	enginesMu.Unlock()
	if open == nil {
		return nil, &CoordError{Op: "open", Key: "tavern.md: coordination: " + name,
			Err: fmt.Errorf("%w: this program was built without the %s engine (import github.com/tavernhq/tavern/queues/%s)", ErrNoEngine, name, engineImport(name))}
	}
	m, err := MachineName(s)
	if err != nil {
		return nil, err
	}
	return open(CoordConfig{Store: s, Machine: m, Fields: cfg.Fields(), Doc: cfg, Dir: s.Root()})
}

func engineImport(name string) string {
	if name == "git" {
		return "gitsync"
	}
	return name
}

// CoordError is a coordination failure on one key.
type CoordError struct {
	Op, Key string
	Err     error
}

func (e *CoordError) Error() string { return e.Op + " " + e.Key + ": " + e.Err.Error() }
func (e *CoordError) Unwrap() error { return e.Err }

// MachineFile is the engine-private file (never synced) that names this
// clone of the store: .tavern/.machine.
const MachineFile = ".machine"

// MachineName returns the name of this machine (this clone of the store):
// $TAVERN_MACHINE, else the name in .tavern/.machine, which is created on
// first use as <hostname>-<4 random letters> so two clones on one host
// differ too. Names follow schema.ValidMachineName wherever they come
// from (a *MachineNameError otherwise).
func MachineName(s *docstore.Store) (string, error) {
	if m, err := EnvMachine(); m != "" || err != nil {
		return m, err
	}
	path := filepath.Join(s.Root(), MachineFile)
	if b, err := os.ReadFile(path); err == nil {
		if m := strings.TrimSpace(string(b)); m != "" {
			if err := schema.ValidMachineName(m); err != nil {
				return "", &MachineNameError{Op: "machine", Path: MachineFile, Err: err}
			}
			return m, nil
		}
	}
	m := NewMachineName()
	tmp := path + ".tmp" + m[len(m)-4:]
	if err := os.WriteFile(tmp, []byte(m+"\n"), 0o644); err != nil {
		return "", err
	}
	// Link, not rename: a racing process that created it first wins and
	// both use its name.
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		os.Remove(tmp)
		return "", err
	}
	os.Remove(tmp)
	return MachineName(s)
}

// NewMachineName is a new machine's default name: <hostname>-<4 random
// letters>, so two clones on one host differ too.
func NewMachineName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz"[int(b[i])%26]
	}
	return hostPrefix() + "-" + string(b[:])
}

// hostPrefix is the host name made fit for a machine name (lower case,
// any other character '-', at most 95 bytes), "machine" when nothing of
// it is left.
func hostPrefix() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, host)
	if len(host) > 95 {
		host = host[:95]
	}
	host = strings.TrimLeft(host, "-_.")
	if host == "" {
		host = "machine"
	}
	return host
}

// EnvMachine returns $TAVERN_MACHINE ("" when unset), checked as a
// machine name.
func EnvMachine() (string, error) {
	m := os.Getenv(EnvMachineVar)
	if m == "" {
		return "", nil
	}
	if err := schema.ValidMachineName(m); err != nil {
		return "", &MachineNameError{Op: "machine", Err: err}
	}
	return m, nil
}

// CheckMachineFile is `tavern check`'s look at this clone's .machine
// file in store dir: a name there that every sync would refuse (written
// by hand, or by an older tavern). nil when the file is absent or empty.
func CheckMachineFile(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, MachineFile))
	if err != nil {
		return nil
	}
	if m := strings.TrimSpace(string(b)); m != "" {
		if err := schema.ValidMachineName(m); err != nil {
			return &MachineNameError{Op: "check", Path: MachineFile, Err: err}
		}
	}
	return nil
}

// SaveMachineName makes name this clone's name from now on: it writes it
// to .tavern/.machine unless the file names it already. A name given with
// TAVERN_MACHINE to `tavern init` or to a sync would otherwise last only
// while the variable is set: the next command without it would be
// <hostname>-xxxx, a machine of its own, under which the clone's journal
// would be pushed a second time.
func SaveMachineName(s *docstore.Store, name string) error {
	if err := schema.ValidMachineName(name); err != nil {
		return &MachineNameError{Op: "save", Err: err}
	}
	path := filepath.Join(s.Root(), MachineFile)
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == name {
		return nil
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ItemKey is the coordination key of an item.
func ItemKey(queue, id string) string { return "items/" + queue + "/" + id }

// Coordinator returns the Broker's coordination engine (nil: local).
func (b *Broker) Coordinator() Coordinator { return b.coord }

// coordTimeout bounds one engine call made while an item lock is held.
const coordTimeout = 10 * time.Second

func (b *Broker) coordCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), coordTimeout)
}

// coordGrant is a claim the engine granted inside claimOne; undo gives it
// back if the claimed file could not be written.
type coordGrant struct {
	key, machine string
	g            Grant
}

// coordClaim asks the engine for item it of q (claimOne, under the item
// lock, after the local checks passed). A key held elsewhere or finished
// is skipped (errSkip, counted in diag); an unreachable engine fails the
// Take: without arbitration there is no claim.
func (b *Broker) coordClaim(q *Queue, it *Item, h holder, diag *Diagnostics) (*coordGrant, error) {
	key := ItemKey(q.Name, it.ID)
	ctx, cancel := b.coordCtx()
	defer cancel()
	g, err := b.coord.Claim(ctx, key, ClaimRequest{Holder: h.who, TTL: q.Lease, Live: h.kind == "liveness"})
	switch {
	case err == nil:
		return &coordGrant{key: key, machine: b.coord.Machine(), g: g}, nil
	case errors.Is(err, ErrHeld):
		diag.Elsewhere++
		return nil, errSkip{}
	case errors.Is(err, ErrFinished):
		diag.Elsewhere++
		return nil, errFinishedElsewhere{}
	}
	return nil, &ItemError{Op: "claim", ID: it.ID, Path: it.Path, Err: err}
}

// fields are the claim fields a coordinated claim adds; fence and
// attempts replace the local counters (the engine's are the truth
// across machines).
func (g *coordGrant) apply(attempt, attempts *int) []docstore.Field {
	if g == nil {
		return nil
	}
	*attempt = int(g.g.Fence)
	if g.g.Attempts > *attempts {
		*attempts = g.g.Attempts
	}
	out := []docstore.Field{{Key: "claim_machine", Value: g.machine}}
	if g.g.Lease != "" {
		out = append(out, docstore.Field{Key: "claim_lease", Value: g.g.Lease})
	}
	return out
}

// errFinishedElsewhere skips a pending copy the engine says is finished
// (claimOne then considers recovering its done/ or dead/ copy).
type errFinishedElsewhere struct{ errSkip }

func (errFinishedElsewhere) Unwrap() error { return errSkip{} }

// recoverChecks: key -> time before which coordRecover does not ask the
// engine again (a one-shot process asks once; a long-lived Broker at most
// every RecoverAfter/3 per item).
var recoverChecks sync.Map

// coordUndo gives back a grant whose claimed file was not written, and
// after a claim refused because the item is finished elsewhere, writes
// the finished copy here if the machine that finished it has not synced
// it for RecoverAfter (coordRecover).
func (b *Broker) coordUndo(l *docstore.Lock, q *Queue, id string, g *coordGrant, err error) {
	var fe errFinishedElsewhere
	if errors.As(err, &fe) {
		if it, rerr := b.readItem(ItemPath(q.Name, Pending, id)); rerr == nil {
			_ = b.coordRecover(l, it)
		}
		return
	}
	if g == nil || err == nil {
		return
	}
	ctx, cancel := b.coordCtx()
	defer cancel()
	_ = b.coord.Release(ctx, g.key, g.g.Fence, true)
}

// coordEnd tells the engine that the claim it (fence: its claim_attempt)
// ends: op is "done", "dead", "release" (attempt given back), "fail" or
// "renew". A key the claim no longer holds refuses with ErrStale and the
// file is left as it is. Without an engine it does nothing.
func (b *Broker) coordEnd(op string, it *Item, result string, ttl time.Duration) error {
	if b.coord == nil {
		return nil
	}
	key := ItemKey(it.Queue, it.ID)
	fence := int64(it.ClaimAttempt)
	if h, ok := b.coord.(Hinter); ok && it.Doc != nil {
		h.Hint(key, it.Doc.String("claim_lease"))
	}
	ctx, cancel := b.coordCtx()
	defer cancel()
	var err error
	switch op {
	case "done", "dead":
		err = b.coord.Finish(ctx, key, fence, op, result)
	case "release":
		err = b.coord.Release(ctx, key, fence, true)
	case "fail":
		err = b.coord.Release(ctx, key, fence, false)
	case "renew":
		err = b.coord.Renew(ctx, key, fence, ttl)
	}
	if errors.Is(err, ErrLostClaim) {
		return &ItemError{Op: op, ID: it.ID, Path: it.Path, Err: fmt.Errorf("%w: attempt %d lost its %s claim: %v", ErrStale, fence, b.coord.Engine(), err)}
	}
	if err != nil {
		return &ItemError{Op: op, ID: it.ID, Path: it.Path, Err: err}
	}
	return nil
}

// coordReap decides a claimed item's fate by the engine instead of flocks
// and local leases (which say nothing about other machines): a claim the
// engine still holds under the file's fence is alive; one it no longer
// holds goes back to pending/ (its holder's lease ran out: a dead or
// partitioned machine); a finished one is left for the sync to bring its
// done/ or dead/ copy, unless this machine held it, in which case the
// completion crashed between the engine and the file and is finished here
// with the result the engine kept.
func (b *Broker) coordReap(l *docstore.Lock, q *Queue, it *Item, rep *ReapReport) error {
	key := ItemKey(q.Name, it.ID)
	ctx, cancel := b.coordCtx()
	st, err := b.coord.State(ctx, key)
	cancel()
	if err != nil {
		// Without the engine nothing can be decided: the reap (and a
		// Take that finds nothing else) fails with it.
		return &ItemError{Op: "reap", ID: it.ID, Path: it.Path, Err: err}
	}
	fence := int64(it.ClaimAttempt)
	switch {
	case st.Held && st.Fence == fence:
		if !st.LeaseUntil.IsZero() {
			rep.next(st.LeaseUntil)
		}
		return nil
	case st.Finished != "":
		if st.FinishedBy == fence && it.Doc.String("claim_machine") == b.coord.Machine() {
			// This machine's own completion crashed between the engine
			// and the file: finish it now.
			return b.recoverFinished(l, it, st)
		}
		return b.coordRecover(l, it)
	case st.Held:
		// Claimed again elsewhere since: this copy is stale. Back to
		// pending locally; the sync brings the new claim's copy.
	case st.Fence < fence:
		// The engine's answer predates this claim (a cached view of the
		// git engine that has not seen it yet): nothing to decide now.
		return nil
	}
	why := fmt.Sprintf("claim %d is no longer held on %s (its holder's lease ran out)", fence, b.coord.Engine())
	max := q.MaxAttempts
	if it.MaxAttempts > 0 {
		max = it.MaxAttempts
	}
	if !st.Held && it.Attempts >= max && st.Attempts >= max {
		// The last attempt's holder died: the item is dead everywhere.
		// Claim it to finish it (nobody else may, meanwhile).
		ctx, cancel := b.coordCtx()
		defer cancel()
		g, err := b.coord.Claim(ctx, key, ClaimRequest{Holder: b.who, TTL: time.Minute})
		if err != nil {
			return nil // someone else is on it; the next reap looks again
		}
		if err := b.coord.Finish(ctx, key, g.Fence, "dead", why); err != nil {
			return nil
		}
		out, err := b.toDead(l, it, "", "reaped: "+why, fmt.Sprintf("reaped after %d of %d attempts: %s", it.Attempts, max, why))
		if err != nil {
			return err
		}
		rep.Dead = append(rep.Dead, out)
		return nil
	}
	return b.giveBackLocal(l, q, it, why, rep)
}

// giveBackLocal is giveBack without the dead-letter rule: the engine, not
// this copy, counts attempts across machines (the next claim does).
func (b *Broker) giveBackLocal(l *docstore.Lock, q *Queue, it *Item, why string, rep *ReapReport) error {
	unlimited := *q
	unlimited.MaxAttempts = int(^uint(0) >> 1)
	own := *it
	own.MaxAttempts = 0
	return b.giveBack(l, &unlimited, &own, why, rep)
}

// RecoverAfter is how long a machine waits for another machine's done/
// or dead/ copy of an item the engine says is finished before it writes
// one itself from the engine's record: the other machine died (or cannot
// sync) after finishing the item on the engine, and its copy may never
// come. It is 3 × tavern.md's sync.every (default 10s). The recovered
// copy carries the engine's fence, machine, time and result (at most
// 4 KiB of it), written as Complete writes it; should the original
// arrive after all, the sync keeps the original (its updated is later)
// and journals nothing, the recovered copy saying nothing the original
// does not (gitsync: redundantCopy).
func (b *Broker) recoverAfter() time.Duration {
	every := 10 * time.Second
	if cfg, err := b.s.Get(docstore.ConfigFile); err == nil {
		if sec, ok := cfg.Fields()["sync"].(map[string]any); ok {
			if v, ok := sec["every"].(string); ok {
				if d, err := time.ParseDuration(v); err == nil && d > 0 {
					every = d
				}
			}
		}
	}
	return 3 * every
}

// elsewhere says what the engine knows of an item that has no claimed
// copy here when another machine holds or finished it: its copy has not
// synced here yet, and "not claimed, it is pending" would read as if
// nobody held it. "" without an engine, when it cannot be asked, or when
// the state is this machine's own.
func (b *Broker) elsewhere(queue, id string) string {
	if b.coord == nil {
		return ""
	}
	ctx, cancel := b.coordCtx()
	st, err := b.coord.State(ctx, ItemKey(queue, id))
	cancel()
	if err != nil || st.Machine == "" || st.Machine == b.coord.Machine() {
		return ""
	}
	switch {
	case st.Held:
		return fmt.Sprintf("held by %s on %s (attempt %d; its copy has not synced here yet)", st.Holder, st.Machine, st.Fence)
	case st.Finished != "":
		return fmt.Sprintf("%s on %s (its copy has not synced here yet)", st.Finished, st.Machine)
	}
	return ""
}

// coordRecover writes the done/ or dead/ copy of an item the engine says
// is finished by another claim, once that is RecoverAfter old.
func (b *Broker) coordRecover(l *docstore.Lock, it *Item) error {
	key := ItemKey(it.Queue, it.ID)
	if next, ok := recoverChecks.Load(b.s.Root() + "\x00" + key); ok && time.Now().Before(next.(time.Time)) {
		return nil
	}
	recoverChecks.Store(b.s.Root()+"\x00"+key, time.Now().Add(b.recoverAfter()/3))
	ctx, cancel := b.coordCtx()
	st, err := b.coord.State(ctx, ItemKey(it.Queue, it.ID))
	cancel()
	if err != nil || st.Finished == "" || st.FinishedAt.IsZero() || time.Since(st.FinishedAt) < b.recoverAfter() {
		return err
	}
	return b.recoverFinished(l, it, st)
}

// recoverFinished moves a pending or claimed copy to done/ or dead/ as the
// engine finished it.
func (b *Broker) recoverFinished(l *docstore.Lock, it *Item, st ClaimState) error {
	state, typ := Done, EventCompleted
	if st.Finished == "dead" {
		state, typ = Dead, EventDead
	}
	at := st.FinishedAt
	if at.IsZero() {
		at = b.now()
	}
	d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, state, it.ID), func(d *docstore.Doc) error {
		fields := []docstore.Field{{Key: "claim_attempt", Value: int(st.FinishedBy)}, {Key: "updated", Value: at}}
		if st.Machine != "" {
			fields = append(fields, docstore.Field{Key: "claim_machine", Value: st.Machine})
		}
		// Written as Complete and toDead write the finisher's copy, so
		// that the two say the same when that arrives (the sync then has
		// nothing to journal).
		full := ""
		del := []string{"lease_until", "hung_since", "not_before", "liveness_lock", "claim_lease"}
		// The copy's claim (none, or an older one) may not be the claim
		// that finished: its fields would describe the wrong run.
		stale := int64(it.ClaimAttempt) != st.FinishedBy
		holder := it.ClaimedBy
		if stale {
			holder = st.Holder
		}
		if state == Done {
			var summary string
			summary, full = resultText(st.Result)
			fields = append(fields, docstore.Field{Key: "completed", Value: at}, docstore.Field{Key: "result", Value: summary})
			if stale {
				del = append(del, "claim_kind", "started", "instance")
				if holder != "" {
					fields = append(fields, docstore.Field{Key: "claimed_by", Value: holder})
				} else {
					del = append(del, "claimed_by")
				}
			}
		} else {
			// The record's result is the last error; the claim's fields
			// go, as clearClaim's (the record's machine stays).
			fields = append(fields, docstore.Field{Key: "dead_reason", Value: st.Result}, docstore.Field{Key: "last_error", Value: st.Result})
			if holder != "" {
				fields = append(fields, docstore.Field{Key: "last_claimed_by", Value: holder})
			}
			del = append(del, "claimed_by", "claim_kind", "started", "instance")
		}
		if err := editFields(d, fields, del...); err != nil {
			return err
		}
		if full != "" {
			d.SetBody(append(append([]byte(nil), d.Body()...), []byte("\n## Result\n\n"+full+"\n")...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	out, err := itemFromDoc(d)
	if err != nil {
		return err
	}
	_ = b.journal(typ, out, st.Holder, map[string]any{"attempt": st.FinishedBy, "recovered": true, "machine": st.Machine,
		"why": "finished on " + b.coord.Engine() + " by " + st.Machine + "; its copy never arrived"})
	return nil
}

// coordReopen makes a dead item claimable again on the engine (Retry).
func (b *Broker) coordReopen(it *Item) error {
	if b.coord == nil {
		return nil
	}
	ctx, cancel := b.coordCtx()
	defer cancel()
	if err := b.coord.Reopen(ctx, ItemKey(it.Queue, it.ID)); err != nil {
		return &ItemError{Op: "retry", ID: it.ID, Path: it.Path, Err: err}
	}
	return nil
}

// engineDown returns the first diagnostic that says the coordination
// engine could not be reached: a Take that found nothing reports it
// instead of "empty" (it could not tell).
func (d *Diagnostics) engineDown() error {
	for _, e := range d.Invalid {
		if errors.Is(e, ErrUnavailable) {
			return e
		}
	}
	return nil
}

// coordSettle finishes item it on the engine as outcome ("done" or
// "dead") for a state change made outside a claim (Resolve, a rejected
// gate), so that no machine claims it again. A claim held on the engine
// by anyone but the item's own current claim refuses it with ErrState.
func (b *Broker) coordSettle(it *Item, outcome, why string) error {
	if b.coord == nil {
		return nil
	}
	key := ItemKey(it.Queue, it.ID)
	ctx, cancel := b.coordCtx()
	defer cancel()
	st, err := b.coord.State(ctx, key)
	if err != nil {
		return &ItemError{Op: outcome, ID: it.ID, Path: it.Path, Err: err}
	}
	if st.Finished == outcome {
		return nil
	}
	if st.Finished != "" {
		if err := b.coord.Reopen(ctx, key); err != nil {
			return &ItemError{Op: outcome, ID: it.ID, Path: it.Path, Err: err}
		}
		st.Held = false
	}
	fence := st.Fence
	if !st.Held || st.Fence != int64(it.ClaimAttempt) || it.State != Claimed {
		if st.Held {
			return &ItemError{Op: outcome, ID: it.ID, Path: it.Path, Err: fmt.Errorf("%w: held by %s on %s", ErrState, st.Holder, st.Machine)}
		}
		g, err := b.coord.Claim(ctx, key, ClaimRequest{Holder: b.who, TTL: time.Minute})
		if err != nil {
			if errors.Is(err, ErrHeld) {
				err = fmt.Errorf("%w: %v", ErrState, err)
			}
			return &ItemError{Op: outcome, ID: it.ID, Path: it.Path, Err: err}
		}
		fence = g.Fence
	}
	if err := b.coord.Finish(ctx, key, fence, outcome, why); err != nil {
		return &ItemError{Op: outcome, ID: it.ID, Path: it.Path, Err: err}
	}
	return nil
}
