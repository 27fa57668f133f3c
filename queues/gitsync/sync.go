package gitsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Dir is the engine-private directory of the sync, .tavern/.sync/: the
// bare repository (git/), the last state commit the store reflects and
// the paths whose merge waits for the next round (state.json), and the
// hash cache (stat.json). Never synced.
const Dir = ".sync"

// DefaultRef is where Tavern's state lives in the remote: a ref of its
// own, so the project's branches and their history are never touched.
const DefaultRef = "refs/tavern/state"

// Event types this package journals.
const (
	EventConflict = "sync.conflict" // a merge kept one value and dropped another (Data: field, kept, lost, machines, rule)
	EventSynced   = "sync.round"    // one round that exchanged something (Data: head, pushed, applied, conflicts)
)

// testHookBeforeApply runs between the merge and the apply of a round
// (tests change a file there, as a concurrent writer would).
var testHookBeforeApply func()

// testHookBeforeJournal runs between saving a merge's dropped values and
// journaling them (tests: a round killed there).
var testHookBeforeJournal func()

// testHookAfterUnit runs after apply wrote the paths of one lock's unit
// and released the lock (tests write there, as a local writer between
// two units would).
var testHookAfterUnit func(key string, paths []string)

// Options configure Open. The zero value reads everything from tavern.md.
type Options struct {
	// Remote is the git remote (URL or path). Default: $TAVERN_SYNC_REMOTE,
	// else tavern.md sync.remote, else the project repository's origin.
	Remote string
	// Ref is the remote ref (default tavern.md sync.ref, else
	// refs/tavern/state).
	Ref string
	// Journal receives sync events and the `external` events of documents
	// the sync changed (nil: the store's journal, closed by Close).
	Journal *journal.Journal
	// Mergers merge documents of a kind both machines changed (by kind
	// name; e.g. "chunk": messages.MergeChunk). Others use the per-field
	// rule (mergeDoc).
	Mergers map[string]MergeFunc
	// AfterApply, if set, is called once a round has written other
	// machines' changes into the store, with each document of a kind in
	// AfterApplyKinds that it wrote (agents.OpenSyncer: messages.MarkLate
	// sees the chunks and bookmarks that came in). Its error is one of
	// Report.Problems; the round stands.
	AfterApply      func([]Applied) error
	AfterApplyKinds []string
}

// Applied is a document a round wrote into the store from other
// machines, with its content before (nil: absent) and after (nil:
// removed).
type Applied struct {
	Path          string
	Before, After []byte
}

// Syncer is the git sync of one store. Its rounds exclude each other
// across processes (flock sync); it is safe for concurrent use.
type Syncer struct {
	s         *docstore.Store
	repo      *repo
	machine   string
	remote    string
	ref       string
	every     time.Duration
	j         *journal.Journal
	ownJ      bool
	mergers   map[string]MergeFunc
	after     func([]Applied) error
	afterKind map[string]bool
	statFile  string
	stateFile string
	takeOver  bool
}

// Open prepares the sync of s (creating .sync/git on first use).
func Open(s *docstore.Store, opt Options) (*Syncer, error) {
	machine, err := queues.MachineName(s)
	if err != nil {
		return nil, err
	}
	cfg, err := s.Get(docstore.ConfigFile)
	if err != nil {
		return nil, err
	}
	if err := checkSection(s, cfg); err != nil {
		return nil, err
	}
	sec, _ := cfg.Fields()["sync"].(map[string]any)
	var bad error
	get := func(k, want string) string {
		switch v := sec[k].(type) {
		case nil:
			return ""
		case string:
			return v
		default:
			if bad == nil {
				bad = configError(s, cfg, k, fmt.Sprintf("%v: want %s", v, want))
			}
			return ""
		}
	}
	sy := &Syncer{s: s, machine: machine, mergers: opt.Mergers, j: opt.Journal, after: opt.AfterApply,
		statFile: filepath.Join(s.Root(), Dir, "stat.json"), stateFile: filepath.Join(s.Root(), Dir, "state.json")}
	if sy.after != nil {
		sy.afterKind = map[string]bool{}
		for _, k := range opt.AfterApplyKinds {
			sy.afterKind[k] = true
		}
	}
	remote, ref, every := get("remote", "a git URL or path"), get("ref", "a full ref name (refs/...)"), get("every", "a duration such as 10s")
	if bad != nil {
		return nil, bad
	}
	if sy.remote, err = remoteOf(s.Root(), opt.Remote, remote); err != nil {
		return nil, err
	}
	sy.ref = opt.Ref
	if sy.ref == "" {
		sy.ref = ref
	}
	if sy.ref == "" {
		sy.ref = DefaultRef
	}
	if !strings.HasPrefix(sy.ref, "refs/") {
		if opt.Ref == "" {
			return nil, configError(s, cfg, "ref", fmt.Sprintf("%q: want a full ref name (refs/...)", sy.ref))
		}
		return nil, &SyncError{Op: "open", Path: docstore.ConfigFile, Err: fmt.Errorf("sync.ref %q: want a full ref name (refs/...)", sy.ref)}
	}
	sy.every = 10 * time.Second
	if every != "" {
		d, err := time.ParseDuration(every)
		if err != nil || d <= 0 {
			return nil, configError(s, cfg, "every", fmt.Sprintf("%q: want a positive duration", every))
		}
		sy.every = d
	}
	if sy.repo, err = openRepo(filepath.Join(s.Root(), Dir, "git"), machine); err != nil {
		return nil, err
	}
	if sy.j == nil {
		if sy.j, err = journal.Open(s.Root(), journal.Options{}); err != nil {
			return nil, err
		}
		sy.ownJ = true
	}
	return sy, nil
}

// remoteOf resolves the remote: explicit, $TAVERN_SYNC_REMOTE, this
// clone's .sync/remote (written by Clone), tavern.md, then the origin of
// the project repository (the directory holding .tavern/). A relative
// path is relative to the project directory.
func remoteOf(root, explicit, configured string) (string, error) {
	project := filepath.Dir(root)
	r := explicit
	if r == "" {
		r = os.Getenv("TAVERN_SYNC_REMOTE")
	}
	if r == "" {
		if b, err := os.ReadFile(filepath.Join(root, Dir, "remote")); err == nil {
			r = strings.TrimSpace(string(b))
		}
	}
	if r == "" {
		r = configured
	}
	if r == "" {
		cmd := exec.Command("git", "-C", project, "remote", "get-url", "origin")
		cmd.Env = gitEnv(nil)
		if out, err := cmd.Output(); err == nil {
			r = strings.TrimSpace(string(out))
		}
	}
	if r == "" {
		// Not tavern.md's fault: nothing names a remote (Path empty).
		return "", &SyncError{Op: "sync", Err: ErrNoRemote}
	}
	if !strings.Contains(r, "://") && !strings.Contains(r, ":") && !filepath.IsAbs(r) {
		r = filepath.Join(project, r)
	}
	return r, nil
}

// Machine is this clone's machine name.
func (sy *Syncer) Machine() string { return sy.machine }

// AllowTakeOver lets the rounds of sy join, or rename the clone, under
// a machine name the remote has a journal of (refused otherwise with
// ErrMachineTaken): the user says the clone that wrote it, this machine's
// old one, will never sync again.
func (sy *Syncer) AllowTakeOver() { sy.takeOver = true }

// Remote is the remote the sync exchanges with.
func (sy *Syncer) Remote() string { return sy.remote }

// Ref is the remote ref of the state.
func (sy *Syncer) Ref() string { return sy.ref }

// Every is tavern.md's sync.every (default 10s): the background interval.
func (sy *Syncer) Every() time.Duration { return sy.every }

// Close closes the journal if the Syncer opened it.
func (sy *Syncer) Close() error {
	if sy.ownJ {
		return sy.j.Close()
	}
	return nil
}

// Change is one change a round wrote into the store.
type Change struct {
	Path    string `json:"path"`
	Op      string `json:"op"` // created, updated, removed
	Machine string `json:"machine"`
}

// Report says what one round did.
type Report struct {
	Committed bool             `json:"committed"` // local changes were committed
	Fetched   bool             `json:"fetched"`   // the remote answered
	Merged    bool             `json:"merged"`    // both sides had changes: a merge commit
	Pushed    bool             `json:"pushed"`
	Head      string           `json:"head"`     // the state commit the store reflects now
	Applied   []Change         `json:"applied"`  // changes from other machines written into .tavern/
	Deferred  []string         `json:"deferred"` // changed locally during the round: merged next round
	Conflicts []Loss           `json:"conflicts"`
	Problems  []string         `json:"problems,omitempty"` // files that cannot travel (symlinks, ...)
	Warnings  []string         `json:"warnings,omitempty"` // the round ran, but something around it puts the store at risk
	Offline   string           `json:"offline,omitempty"`  // the remote could not be reached (local changes are committed)
	Adopted   string           `json:"adopted,omitempty"`  // this store, made by init and holding no documents, became the remote's store of this name
	Started   schema.Timestamp `json:"started"`            // when the round began (before waiting for another round of this clone)
	Duration  time.Duration    `json:"duration"`

	docs          []Applied // for Options.AfterApply
	pendingLosses []Loss    // of the last mergeCommits, to settle
}

// MarshalJSON writes Duration as a Go duration ("1.2s"), as the tavern
// command's JSON does for every duration.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		Duration string `json:"duration"`
	}{plain(r), r.Duration.String()})
}

type syncState struct {
	Head    string               `json:"head"`
	Pending map[string]entry     `json:"-"`
	PendRaw map[string][2]string `json:"pending,omitempty"` // tree path -> [mode, oid] ("" oid: absent)
	// Merged is a merge commit this clone made on top of Head that the
	// store does not reflect yet: a round killed after merging (and
	// perhaps pushing) left it. The next round builds on it instead of
	// merging the same two sides again, which would drop (and journal)
	// the same values a second time, with this machine's own commits
	// taken for the other side.
	Merged string `json:"merged,omitempty"`
	// Machine is the name this clone synced as. A round under another
	// name (TAVERN_MACHINE changed) hands the journal written so far to
	// the old name first (renameJournal): pushed under the new name it
	// would be on the remote twice.
	Machine string `json:"machine,omitempty"`
	// Names are the names this clone has synced as: a rename back to one
	// of them takes back a journal of its own, not another clone's
	// (ErrMachineTaken).
	Names []string `json:"names,omitempty"`
	// Losses are the values the round's merges dropped, each with the
	// commit that dropped it, saved before they are journaled: those a
	// killed round did not journal are journaled by the next (once).
	Losses []mergeLoss `json:"losses,omitempty"`
}

// mergeLoss is a Loss and the commit whose merge dropped the value.
type mergeLoss struct {
	Loss
	Merge string           `json:"merge"`
	At    schema.Timestamp `json:"at"`
}

func (sy *Syncer) loadState() syncState {
	var st syncState
	if b, err := os.ReadFile(sy.stateFile); err == nil {
		_ = json.Unmarshal(b, &st)
	}
	if len(st.Names) == 0 && st.Machine != "" {
		st.Names = []string{st.Machine} // a state saved before Names
	}
	st.Pending = map[string]entry{}
	for p, v := range st.PendRaw {
		st.Pending[p] = entry{mode: v[0], oid: v[1]}
	}
	return st
}

func (sy *Syncer) saveState(st syncState) error {
	st.Machine = sy.machine
	if !slices.Contains(st.Names, sy.machine) {
		st.Names = append(slices.Clip(st.Names), sy.machine)
	}
	st.PendRaw = map[string][2]string{}
	for p, e := range st.Pending {
		st.PendRaw[p] = [2]string{e.mode, e.oid}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := sy.stateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, sy.stateFile)
}

// Sync runs one round: commit the store's changes since the last round,
// fetch the remote ref, merge (three-way, by the rules of merge.go),
// write what other machines changed into the store, push. A push the
// remote rejects because another machine pushed first is retried after
// merging again (up to 5 times). An unreachable remote is not an error:
// the local commit waits and Report.Offline says why.
func (sy *Syncer) Sync(ctx context.Context) (*Report, error) {
	start := time.Now()
	l, err := sy.s.LockContext(ctx, "sync")
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	rep := &Report{Started: schema.TimeOf(start.UTC()), Applied: []Change{}, Deferred: []string{}, Conflicts: []Loss{}} // lists, never null in JSON
	defer func() { rep.Duration = time.Since(start) }()
	st := sy.loadState()
	names := st.Names
	if st.Machine != "" && st.Machine != sy.machine {
		if err := sy.checkRename(st); err != nil {
			return nil, err
		}
		if err := sy.renameJournal(st.Machine, st.Head); err != nil {
			return nil, err
		}
		if err := sy.saveState(st); err != nil { // under the new name from now on
			return nil, err
		}
	}
	// The name this round syncs under is the clone's from now on, with or
	// without TAVERN_MACHINE (a no-op when it came from .machine).
	if err := queues.SaveMachineName(sy.s, sy.machine); err != nil {
		return nil, err
	}
	if len(st.Losses) > 0 {
		// A round killed while it journaled its merges' losses.
		sy.journalMissing(st.Losses, rep)
		st.Losses = nil
	}
	snap, err := sy.snapshotWork()
	if err != nil {
		return nil, err
	}
	for _, e := range snap.bad {
		rep.Problems = append(rep.Problems, e.Error())
	}
	if w := sy.trackedByProject(); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	work := snap.files // what the worktree holds
	head := st.Head
	if head != "" && sy.repo.treeOf(head) == "" {
		head = "" // the repository was reset: start over
	}
	headFiles, err := sy.repo.readTree(head)
	if err != nil {
		return nil, err
	}
	tree := work
	// Journals are append-only and never removed by a round: one that
	// is gone from this worktree (its machine renamed, a clone re-made)
	// stays as head has it.
	copied := false
	for p, e := range headFiles {
		if _, ok := work[p]; !ok && strings.HasPrefix(p, docstore.JournalDir+"/") {
			if !copied {
				tree, copied = make(map[string]entry, len(work)+1), true
				for k, v := range work {
					tree[k] = v
				}
			}
			tree[p] = e
		}
	}
	var pendLosses []Loss
	if len(st.Pending) > 0 {
		// Paths whose local copy changed during an earlier round descend
		// from that round's local copy, not from head: merge them.
		tree, pendLosses, err = sy.mergePending(st.Pending, work, headFiles, head)
		if err != nil {
			return nil, err
		}
	}
	treeID, err := sy.repo.writeTree(tree)
	if err != nil {
		return nil, err
	}
	S := head
	if treeID != sy.repo.treeOf(head) {
		if S, err = sy.repo.commitTree(treeID, "tavern sync: "+sy.machine+"\n", head); err != nil {
			return nil, err
		}
		rep.Committed = true
	}
	// Until the round ends, the state says the store reflects S (its own
	// snapshot; the deferred paths hold what work has, which S's merge of
	// them descends from) and M, the merge of this round on top of it. A
	// round killed after this point is resumed from there: its commit and
	// merge are not made a second time, so a value dropped by the merge
	// is journaled once, and the commits it pushed are its own, never
	// the other side of the next merge.
	resumed := ""
	if st.Merged != "" && head != "" && st.Merged != head && sy.repo.treeOf(st.Merged) != "" && sy.repo.isAncestor(head, st.Merged) {
		resumed = st.Merged
	}
	inter := syncState{Head: S, Pending: map[string]entry{}, Merged: resumed, Names: names}
	for p := range st.Pending {
		inter.Pending[p] = work[p] // absent: zero entry, oid ""
	}
	// settle saves the state that makes commit c (S, or a merge on it)
	// durable, with the values its merge dropped, then journals those.
	settle := func(c string, losses []Loss) error {
		if c != S {
			inter.Merged = c
		}
		at := schema.TimeOf(time.Now().UTC())
		for _, l := range losses {
			inter.Losses = append(inter.Losses, mergeLoss{Loss: l, Merge: c, At: at})
		}
		if S == st.Head && c == S && len(losses) == 0 {
			return nil // nothing new to make durable
		}
		if err := sy.saveState(inter); err != nil {
			return err
		}
		if testHookBeforeJournal != nil && len(losses) > 0 {
			testHookBeforeJournal()
		}
		rep.Conflicts = append(rep.Conflicts, losses...)
		sy.journalLosses(losses, c)
		return nil
	}
	// S is settled before the first merge or push, or at the end of a
	// round that made neither: not before the remote was read, so that a
	// round refused on what it read (ErrSameMachine) leaves no state.
	settled := false
	settleS := func() error {
		if settled {
			return nil
		}
		settled = true
		return settle(S, pendLosses)
	}
	M := S
	if resumed != "" {
		if err := settleS(); err != nil {
			return nil, err
		}
		if S == head {
			M = resumed
		} else {
			// Local changes since the killed round: merge them into its
			// merge (base: head, from which both descend).
			if M, err = sy.mergeCommits(head, S, resumed, rep); err != nil {
				return nil, err
			}
			if err := settle(M, rep.pendingLosses); err != nil {
				return nil, err
			}
			rep.pendingLosses = nil
		}
	}
	remoteRef := "refs/tavern/remote"
	if err := sy.repo.clearStaleLocks(remoteRef); err != nil { // a killed round's
		return nil, err
	}
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		missing, err := sy.repo.fetch(context.Background(), sy.remote, "+"+sy.ref+":"+remoteRef)
		if err != nil {
			rep.Offline = err.Error()
			break
		}
		rep.Fetched = true
		R := ""
		if !missing {
			R = sy.repo.revParse(remoteRef)
		}
		// A history that shares nothing with the remote's: another
		// store (refused), the team's store whose .sync/ was removed
		// (merged), or one init made and nothing more, which joins the
		// remote's (adopt, the remote store's name) under a name of its
		// own, before its journal is compared with the remote's.
		rInM := R == "" || sy.repo.isAncestor(R, M)
		mInR := !rInM && sy.repo.isAncestor(M, R)
		base, adopt := "", ""
		if !rInM && !mInR {
			base = sy.repo.mergeBase(M, R)
		}
		if !rInM && !mInR && base == "" {
			if adopt, err = sy.checkSameStore(work, R); err != nil {
				return nil, err
			}
			if adopt != "" && !sy.takeOver {
				if err := sy.checkFreeName(R, "join", ""); err != nil {
					return nil, err
				}
			}
		}
		if R != "" && R != M && R != head && adopt == "" {
			if err := sy.checkOwnJournal(work, R); err != nil {
				return nil, err
			}
		}
		switch {
		case rInM:
		case mInR:
			M = R
		default:
			if adopt != "" {
				// Nothing of this store's own to keep: take the
				// remote's as --clone would. The local commit is
				// dropped, not pushed, and so is the journal of the
				// store init made, which no other machine knew.
				if err := sy.adoptJournal(R); err != nil {
					return nil, err
				}
				M, rep.Adopted, rep.Committed = R, adopt, false
				break
			}
			if err := settleS(); err != nil {
				return nil, err
			}
			if M, err = sy.mergeCommits(base, M, R, rep); err != nil {
				return nil, err
			}
			if err := settle(M, rep.pendingLosses); err != nil {
				return nil, err
			}
			rep.pendingLosses = nil
		}
		if M == R {
			break
		}
		if err := settleS(); err != nil {
			return nil, err
		}
		if len(rep.Conflicts) > 0 {
			// Journaled after the snapshot: push them with this round.
			if M, err = sy.withJournal(M); err != nil {
				return nil, err
			}
		}
		res, err := sy.repo.push(context.Background(), sy.remote, M, sy.ref, nil)
		if res == pushOK {
			rep.Pushed = true
			break
		}
		if res == pushRejected {
			if try < pushTries-1 {
				// Another machine pushed first: fetch and merge again,
				// after a random pause that grows with the tries, so
				// machines that keep colliding fall out of step.
				if err := sleepCtx(ctx, pushBackoff(try)); err != nil {
					return nil, err
				}
				continue
			}
			rep.Offline = fmt.Sprintf("other machines pushed first %d times in a row (the next round tries again): %v", pushTries, err)
			break
		}
		rep.Offline = err.Error()
		break
	}
	if err := settleS(); err != nil {
		return nil, err
	}
	if testHookBeforeApply != nil {
		testHookBeforeApply()
	}
	// Write what M has that the worktree lacks.
	mFiles, err := sy.repo.readTree(M)
	if err != nil {
		return nil, err
	}
	pending, err := sy.apply(work, mFiles, sy.attribution(S, M), rep)
	if err != nil {
		return nil, err
	}
	if sy.after != nil && len(rep.docs) > 0 {
		if err := sy.after(rep.docs); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
		rep.docs = nil
	}
	if err := ensureLayout(sy.s.Root(), mFiles); err != nil {
		return nil, err
	}
	st = syncState{Head: M, Pending: pending, Names: names}
	rep.Head = M
	if err := sy.saveState(st); err != nil {
		return nil, err
	}
	// Journaled only when documents came in or a value was dropped: a
	// round that only carried journals (this machine's, or others') must
	// not change the journal again, or every round would have something
	// to commit and machines would push each other's journals forever.
	docs := 0
	for _, a := range rep.Applied {
		if !strings.HasPrefix(a.Path, docstore.JournalDir+"/") {
			docs++
		}
	}
	if docs > 0 || len(rep.Conflicts) > 0 {
		_, _ = sy.j.Append(journal.Event{Type: EventSynced, Data: map[string]any{"head": M, "pushed": rep.Pushed,
			"applied": len(rep.Applied), "conflicts": len(rep.Conflicts), "machine": sy.machine}})
	}
	return rep, nil
}

// mergeCommits merges commit theirs into ours from base by the rules of
// merge.go and commits the result (parents ours, theirs). The values it
// dropped are left in rep.pendingLosses for the caller to settle.
func (sy *Syncer) mergeCommits(base, ours, theirs string, rep *Report) (string, error) {
	bf, err1 := sy.repo.readTree(base)
	of, err2 := sy.repo.readTree(ours)
	tf, err3 := sy.repo.readTree(theirs)
	if err := errors.Join(err1, err2, err3); err != nil {
		return "", err
	}
	merged, losses, err := sy.mergeTrees(bf, of, tf, sy.attribution(ours, theirs))
	if err != nil {
		return "", err
	}
	mt, err := sy.repo.writeTree(merged)
	if err != nil {
		return "", err
	}
	M, err := sy.repo.commitTree(mt, "tavern sync: "+sy.machine+" merges\n", ours, theirs)
	if err != nil {
		return "", err
	}
	rep.Merged = true
	rep.pendingLosses = losses
	return M, nil
}

// mergePending merges the deferred paths: base = the local copy a
// previous round could not overwrite, ours = the local copy now, theirs
// = head's.
func (sy *Syncer) mergePending(pend, work, head map[string]entry, headID string) (map[string]entry, []Loss, error) {
	base := map[string]entry{}
	ours := map[string]entry{}
	theirs := map[string]entry{}
	for p, e := range pend {
		if e.oid != "" {
			base[p] = e
		}
		if w, ok := work[p]; ok {
			ours[p] = w
		}
		if h, ok := head[p]; ok {
			theirs[p] = h
		}
	}
	// theirs is what an earlier round brought from other machines: name
	// the latest other machine that changed each path in head's history
	// (a merge this machine made is not the other side), not "remote".
	who := map[string]string{}
	for p := range theirs {
		if headID == "" {
			break
		}
		b, err := sy.repo.git(nil, "log", "-n", "50", "--format=%an", headID, "--", p)
		if err != nil {
			continue
		}
		for _, n := range strings.Fields(string(b)) {
			if n != sy.machine {
				who[p] = n
				break
			}
		}
	}
	merged, losses, err := sy.mergeTrees(base, ours, theirs, who)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]entry, len(work))
	for p, e := range work {
		out[p] = e
	}
	for p := range pend {
		delete(out, p)
		if e, ok := merged[p]; ok {
			out[p] = e
		}
	}
	return out, losses, nil
}

// attribution names, for each path changed in from..to, the machine of
// the newest commit that changed it (commits are authored by machine).
func (sy *Syncer) attribution(from, to string) map[string]string {
	return sy.repo.attribution(from, to)
}

func (r *repo) attribution(from, to string) map[string]string {
	out := map[string]string{}
	if to == "" || from == to {
		return out
	}
	rng := to
	if from != "" {
		rng = from + ".." + to
	}
	b, err := r.git(nil, "log", "--no-renames", "--format=@@%an", "--name-only", rng)
	if err != nil {
		return out
	}
	who := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "@@"):
			who = line[2:]
		case line != "":
			if _, ok := out[line]; !ok {
				out[line] = who
			}
		}
	}
	return out
}

// lockKey is the lock that serialises the engine's writers of a path:
// an item's claim lock, a channel's lock for its document, message
// chunks and notes, the document lock otherwise. A channel's files are
// one unit under its lock, as `tavern rm` holds it: another machine's
// removal of the channel is taken in whole, never with a send between
// its chunks and its document (a chunk left without its channel).
func lockKey(rel string) string {
	if g, _ := itemOf(rel); g != "" {
		q, id, _ := strings.Cut(g, "/")
		return queues.ItemLockKey(q, id)
	}
	if ch := schema.ChannelOfFile(rel); ch != "" {
		return schema.ChannelLockKey(ch)
	}
	return docstore.DocLockKey(rel)
}

// gateLockKey is the lock of gate rel's unit, given the gate as the
// merge has it (data; for a gate the merge removes, the local file): its
// item's lock, which a local rm of the item holds while it takes the item
// and its gates to the trash, and a gate's set, edit, rm and restore hold
// too (queues.LockerItem). An item removed on another machine with its
// gates is so taken in one step: under their document locks, one by one,
// a claim of the item whose gate was gone already fell in between (an
// item that could never be finished). "" for no gate, or one that names
// no item (its document lock, as before).
func gateLockKey(rel string, data []byte) string {
	if !isGate(rel) {
		return ""
	}
	d, err := docstore.Parse(rel, data)
	if err != nil {
		return ""
	}
	queue, id := d.String("queue"), d.String("item")
	if schema.ValidName(queue) != nil || schema.ValidName(id) != nil {
		return ""
	}
	return queues.ItemLockKey(queue, id)
}

// isGate reports whether rel is a gate document (gates/<id>.md).
func isGate(rel string) bool {
	var buf [1]string
	_, ok := schema.Gate.Captures(rel, buf[:0])
	return ok
}

// apply writes into the store every path where m differs from work (what
// the worktree held when the round began), each under the lock its
// engine writers take, and only if the file still holds work's version:
// a path changed locally meanwhile is left alone and returned as
// pending (its merge happens next round, against that base).
func (sy *Syncer) apply(work, m map[string]entry, origin map[string]string, rep *Report) (map[string]entry, error) {
	pending := map[string]entry{}
	var changed, need []string
	seen := map[string]bool{}
	for _, t := range []map[string]entry{work, m} {
		for p := range t {
			if seen[p] || sy.workPath(p) == "" {
				continue
			}
			seen[p] = true
			w, wok := work[p]
			e, mok := m[p]
			if same(w, e, wok, mok) {
				continue
			}
			changed = append(changed, p)
			if mok {
				need = append(need, e.oid)
			}
		}
	}
	if len(changed) == 0 {
		return pending, nil
	}
	data, err := sy.repo.blobs(dedup(need))
	if err != nil {
		return nil, err
	}
	units := map[string][]string{} // lock key -> tree paths changed under it
	join := newKeyGroups()         // lock keys whose units are applied as one
	for _, p := range changed {
		k := lockKey(p)
		var cur []byte // a gate as it is here: its item's lock is its local writers'
		cerr := fs.ErrNotExist
		if isGate(p) {
			cur, cerr = os.ReadFile(filepath.Join(sy.s.Root(), filepath.FromSlash(p)))
		}
		if strings.HasPrefix(p, docstore.JournalDir+"/") {
			k = "" // other machines' journals: only this sync writes them
		} else if e, mok := m[p]; mok {
			if g := gateLockKey(p, data[e.oid]); g != "" {
				k = g
				// A gate another machine moved to another item: the
				// item it leaves is in the same step, under its lock
				// too, which that item's local gate add, approve and rm
				// hold. Apart, the old item listed a gate that gated
				// another in between (or a gate named an item that did
				// not list it).
				if cerr == nil {
					if old := gateLockKey(p, cur); old != "" && old != g {
						join.union(g, old)
					}
				}
			}
		} else if cerr == nil {
			// Removed: the gate as it is here names the item whose lock
			// its local writers hold. One changed since is deferred by
			// applyUnit's check, whatever lock it is under.
			if g := gateLockKey(p, cur); g != "" {
				k = g
			}
		}
		units[k] = append(units[k], p)
	}
	groups := map[string][]string{} // a group's root -> its keys
	for k := range units {
		root := join.find(k)
		groups[root] = append(groups[root], k)
	}
	for k := range join.parent { // a key with no paths of its own: locked all the same
		if root := join.find(k); !slices.Contains(groups[root], k) && len(groups[root]) > 0 {
			groups[root] = append(groups[root], k)
		}
	}
	firsts := make([]string, 0, len(groups))
	byFirst := map[string][]string{}
	for _, keys := range groups {
		sort.Strings(keys)
		firsts = append(firsts, keys[0])
		byFirst[keys[0]] = keys
	}
	sort.Strings(firsts)
	for _, first := range firsts {
		keys := byFirst[first]
		var paths []string
		for _, k := range keys {
			paths = append(paths, units[k]...)
		}
		sort.Strings(paths)
		if err := sy.applyUnit(keys, paths, work, m, data, origin, pending, rep); err != nil {
			return nil, err
		}
		if testHookAfterUnit != nil {
			testHookAfterUnit(strings.Join(keys, " "), paths)
		}
	}
	return pending, nil
}

// keyGroups joins lock keys whose units are applied as one (union-find).
type keyGroups struct{ parent map[string]string }

func newKeyGroups() *keyGroups { return &keyGroups{parent: map[string]string{}} }

func (g *keyGroups) find(k string) string {
	for {
		p, ok := g.parent[k]
		if !ok || p == k {
			return k
		}
		k = p
	}
}

// union joins the groups of a and b.
func (g *keyGroups) union(a, b string) {
	ra, rb := g.find(a), g.find(b)
	if ra == rb {
		return
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	g.parent[ra] = ra
	g.parent[rb] = ra
	g.parent[a], g.parent[b] = ra, ra
}

// applyUnit applies the changes of one lock's paths all or nothing.
//
// keys are the unit's locks, sorted: most units have one; a gate moved
// from one item to another has both items' (taken in key order, as no
// other writer holds two item locks, so no two take them crosswise).
func (sy *Syncer) applyUnit(keys []string, paths []string, work, m map[string]entry, data map[string][]byte, origin map[string]string, pending map[string]entry, rep *Report) error {
	if len(keys) > 0 && keys[0] != "" {
		for _, key := range keys {
			l, err := sy.s.Lock(key)
			if err != nil {
				return err
			}
			defer l.Unlock()
		}
		// A gate under its item's lock: its document lock too, after
		// it (the order of its local set and rm, and of approve and
		// reject, which write the decision under both).
		for _, p := range paths {
			if k := docstore.DocLockKey(p); !slices.Contains(keys, k) && isGate(p) {
				l, err := sy.s.Lock(k)
				if err != nil {
					return err
				}
				defer l.Unlock()
			}
		}
	}
	root := sy.s.Root()
	// Check first: every path must still be as the round saw it.
	before := map[string][]byte{}
	for _, p := range paths {
		w, wok := work[p]
		cur, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err == nil && sy.after != nil {
			before[p] = cur
		}
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		case (err == nil) != wok, wok && blobID(cur) != w.oid:
			for _, q := range paths {
				pending[q] = work[q] // absent: zero entry, oid ""
			}
			rep.Deferred = append(rep.Deferred, paths...)
			return nil
		}
	}
	// Creates and updates first, removals last: an item moved between
	// state directories is never in none of them.
	// Among the removals, an item's gates after the item (a channel's
	// files follow its document in path order): an owner first, as
	// DeleteAll removes them, so a restore of it here finds what went
	// with it, trashed no earlier than it.
	rank := func(p string) int {
		switch _, ok := m[p]; {
		case ok:
			return 0
		case isGate(p):
			return 2
		}
		return 1
	}
	sort.SliceStable(paths, func(i, j int) bool { return rank(paths[i]) < rank(paths[j]) })
	for _, p := range paths {
		e, mok := m[p]
		_, wok := work[p]
		ch := Change{Path: p, Machine: origin[p]}
		if ch.Machine == "" {
			ch.Machine = "remote"
		}
		var rev string
		switch {
		case mok:
			if err := sy.s.WriteFile(p, data[e.oid]); err != nil {
				return err
			}
			rev = docstore.Revision(data[e.oid])
			ch.Op = "updated"
			if !wok {
				ch.Op = "created"
			}
		default:
			if err := sy.remove(p, m); err != nil {
				return err
			}
			ch.Op = "removed"
		}
		rep.Applied = append(rep.Applied, ch)
		if !strings.HasPrefix(p, docstore.JournalDir+"/") && strings.HasSuffix(p, ".md") {
			kind := ""
			if k, _, err := schema.NameOfPath(p); err == nil && k != nil {
				kind = k.Name
			}
			if sy.afterKind[kind] {
				a := Applied{Path: p, Before: before[p]}
				if mok {
					a.After = data[e.oid]
				}
				rep.docs = append(rep.docs, a)
			}
			_, _ = sy.j.Append(journal.Event{Type: journal.TypeExternal, Kind: kind, Path: p, Rev: rev,
				Data: map[string]any{"op": "doc." + ch.Op, "machine": ch.Machine, "via": "sync"}})
		}
	}
	return nil
}

// remove takes a file another machine removed out of the store: an item
// copy that moved to another state directory is unlinked (the move's
// other half is written, movedItem), any other document, an item removed
// too, goes to .trash/ like a delete (never an unlink of user data).
func (sy *Syncer) remove(p string, m map[string]entry) error {
	full := filepath.Join(sy.s.Root(), filepath.FromSlash(p))
	if movedItem(p, m) || strings.HasPrefix(p, docstore.JournalDir+"/") {
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return docstore.SyncDir(filepath.Dir(full))
	}
	trash := filepath.Join(sy.s.Root(), ".trash", time.Now().UTC().Format("20060102T150405.000000000")+"-"+docstore.TrashSyncTag+strings.ReplaceAll(p, "/", "__"))
	if err := os.Rename(full, trash); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(full)
	if err := docstore.SyncDir(dir); err != nil {
		return err
	}
	// A channel's own directory (messages/<channel>/, notes/<channel>/)
	// that its last file left goes too once the channel is gone, as after
	// a local rm of the channel: left, it names a channel that is gone
	// (doctor's stray-messages). Not while the channel is there (a message
	// or note removed alone, as a local rm of it leaves it): a waiter on
	// the channel watches messages/<channel>/, and its watch would go with
	// it. Remove fails on one that is not empty (a file came since): kept.
	// The caller holds the channel's lock, which its writers take, and
	// removes the channel's document before its files (path order).
	if ch := schema.ChannelOfFile(p); ch != "" && path.Dir(p) != schema.Channel.Dir() && !sy.channelExists(ch) {
		if os.Remove(dir) == nil {
			return docstore.SyncDir(filepath.Dir(dir))
		}
	}
	return nil
}

// channelExists reports whether channel ch has its document here.
func (sy *Syncer) channelExists(ch string) bool {
	rel, err := schema.Channel.Path(ch, nil)
	if err != nil {
		return false
	}
	_, err = os.Lstat(filepath.Join(sy.s.Root(), filepath.FromSlash(rel)))
	return !errors.Is(err, fs.ErrNotExist)
}

// movedItem reports whether item path p is a copy the item's move to
// another state left: m, the merge, has the item in another state (that
// copy is written in the same unit, under the item's lock). An item m has
// in no state was removed on another machine (`tavern rm items/ID`), and
// goes to the trash as a local rm takes it.
func movedItem(p string, m map[string]entry) bool {
	var buf [3]string
	caps, ok := schema.Item.Captures(p, buf[:0]) // queue, state, id
	if !ok || len(caps) != 3 {
		return false
	}
	for _, st := range schema.ItemStates {
		if _, ok := m[queues.ItemPath(caps[0], st, caps[2])]; ok && st != caps[1] {
			return true
		}
	}
	return false
}

// journalLosses journals every value the merge of commit merge dropped.
func (sy *Syncer) journalLosses(losses []Loss, merge string) {
	for _, l := range losses {
		kind := ""
		if k, _, err := schema.NameOfPath(l.Path); err == nil && k != nil {
			kind = k.Name
		}
		lost := l.Lost
		if len(lost) > 1<<20 {
			lost = lost[:1<<20]
		}
		_, _ = sy.j.Append(journal.Event{Type: EventConflict, Kind: kind, Path: l.Path, Data: map[string]any{
			"field": l.Field, "kept": l.Kept, "lost": lost, "kept_machine": l.KeptFrom, "lost_machine": l.LostFrom, "rule": l.Rule, "machine": sy.machine, "merge": merge}})
	}
}

// journalMissing journals the losses a killed round saved (syncState.Losses)
// that its journal does not have: each is journaled once, whether the
// round was killed before, while or after journaling them.
func (sy *Syncer) journalMissing(saved []mergeLoss, rep *Report) {
	key := func(merge, path, field, lost string) string {
		return merge + "\x00" + path + "\x00" + field + "\x00" + lost
	}
	since := saved[0].At.Time
	for _, l := range saved {
		if l.At.Before(since) {
			since = l.At.Time
		}
	}
	have := map[string]bool{}
	_, _ = journal.Read(sy.s.Root(), journal.Filter{Types: []string{EventConflict}, Since: since.Add(-time.Minute)}, func(e journal.Event, err error) bool {
		if err == nil {
			m, _ := e.Data["merge"].(string)
			f, _ := e.Data["field"].(string)
			lm, _ := e.Data["lost_machine"].(string)
			have[key(m, e.Path, f, lm)] = true
		}
		return true
	})
	byMerge := map[string][]Loss{}
	var order []string
	for _, l := range saved {
		if have[key(l.Merge, l.Path, l.Field, l.LostFrom)] {
			continue
		}
		if _, ok := byMerge[l.Merge]; !ok {
			order = append(order, l.Merge)
		}
		byMerge[l.Merge] = append(byMerge[l.Merge], l.Loss)
	}
	for _, m := range order {
		rep.Conflicts = append(rep.Conflicts, byMerge[m]...)
		sy.journalLosses(byMerge[m], m)
	}
}

// Run syncs every interval and soon after local changes (events appended
// to the journal by any process of this clone), until ctx ends. report,
// if not nil, sees every round.
func (sy *Syncer) Run(ctx context.Context, every time.Duration, report func(*Report, error)) {
	if every <= 0 {
		every = sy.every
	}
	kick := make(chan struct{}, 1)
	if cur, err := journal.End(sy.s.Root()); err == nil {
		go func() {
			_ = journal.Follow(ctx, sy.s.Root(), cur, journal.Filter{}, 0, func(e journal.Event, err error) bool {
				if err == nil && e.Type != EventSynced && e.Type != EventConflict && e.Type != journal.TypeExternal {
					select {
					case kick <- struct{}{}:
					default:
					}
				}
				return true
			})
		}()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
			// Local changes come in bursts: at most one round per
			// quarter interval for them.
			if wait := every/4 - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		rep, err := sy.Sync(ctx)
		if report != nil {
			report(rep, err)
		}
	}
}

// ensureLayout creates the directories a store has (those `tavern init`
// makes, and each queue's state directories) that files of the shared
// tree did not bring: git keeps no empty directory, so a clone would
// lack questions/ or a queue's done/ until something is written there,
// and the commands that list them would fail.
func ensureLayout(root string, files map[string]entry) error {
	dirs := append([]string(nil), docstore.InitDirs...)
	for p := range files {
		if q, ok := strings.CutSuffix(p, "/queue.md"); ok && strings.HasPrefix(q, "queues/") && strings.Count(q, "/") == 1 {
			for _, st := range schema.ItemStates {
				dirs = append(dirs, q+"/"+st)
			}
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o777); err != nil {
			return err
		}
	}
	return nil
}

// pushTries bounds the fetch-merge-push attempts of one round.
const pushTries = 8

// pushBackoff is the pause after the try-th push that lost a race: random
// in [0, 50ms << try), at most 2s.
func pushBackoff(try int) time.Duration {
	d := 50 * time.Millisecond << try
	if d > 2*time.Second {
		d = 2 * time.Second
	}
	return time.Duration(rand.Int64N(int64(d)))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Clone creates the store dir (a .tavern directory that must not exist
// yet) from the state on remote: the way a new machine joins. The remote
// is remembered in .sync/remote for later rounds.
func Clone(dir, remote, ref string) (*docstore.Store, error) {
	return CloneWith(dir, remote, ref, CloneOptions{})
}

// CloneOptions are the choices of a clone beyond Clone's.
type CloneOptions struct {
	// TakeOver joins under $TAVERN_MACHINE even when the remote has a
	// journal of that name (refused otherwise, ErrMachineTaken): this
	// machine is that one re-made, and its old clone never syncs again.
	// The clone takes that journal back as its own.
	TakeOver bool
}

// CloneWith is Clone with options. The clone's machine name is
// $TAVERN_MACHINE, else a new default name (queues.NewMachineName) the
// remote has no journal of; it is written to the clone's .machine.
func CloneWith(dir, remote, ref string, opt CloneOptions) (*docstore.Store, error) {
	if ref == "" {
		ref = DefaultRef
	}
	if err := CheckRef(ref); err != nil {
		return nil, err
	}
	// A name given for the clone is checked before anything is made.
	envM, err := queues.EnvMachine()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err == nil {
		return nil, &SyncError{Op: "clone", Path: dir, Err: fmt.Errorf("%w: a store is already here (tavern sync exchanges it with the remote)", fs.ErrExist)}
	}
	if !strings.Contains(remote, "://") && !strings.Contains(remote, ":") && !filepath.IsAbs(remote) {
		if abs, err := filepath.Abs(remote); err == nil {
			remote = abs
		}
	}
	tmp := dir + cloneSuffix + fmt.Sprint(os.Getpid())
	os.RemoveAll(tmp)
	for _, p := range CloneLeftovers(dir) { // killed clones' (a whole copy of the store each)
		os.RemoveAll(p)
	}
	// The directories up to dir that do not exist yet are made for the
	// clone; a clone that fails removes them again (if still empty), as
	// it removes tmp: a failed command leaves things as they were.
	made := ""
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		made = d
	}
	fail := func(err error) (*docstore.Store, error) {
		os.RemoveAll(tmp)
		if made != "" {
			for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
				if os.Remove(d) != nil || d == made {
					break
				}
			}
		}
		return nil, err
	}
	r, err := openRepo(filepath.Join(tmp, Dir, "git"), "clone")
	if err != nil {
		return fail(err)
	}
	missing, err := r.fetch(context.Background(), remote, "+"+ref+":refs/tavern/remote")
	if err != nil {
		return fail(&SyncError{Op: "clone", Path: remote, Err: err})
	}
	if missing {
		return fail(&SyncError{Op: "clone", Path: remote, Err: fmt.Errorf("%w (no %s): run `tavern sync` on a machine that has the store first", ErrNoState, ref)})
	}
	R := r.revParse("refs/tavern/remote")
	files, err := r.readTree(R)
	if err != nil {
		return fail(err)
	}
	// One clone per machine name: a name the remote has a journal of is
	// another clone's, however current this copy of that journal is.
	m := envM
	if m == "" {
		for m = queues.NewMachineName(); hasJournal(files, m); m = queues.NewMachineName() {
		}
	} else if !opt.TakeOver {
		if err := takenIn(files, m, "clone", "", remote); err != nil {
			return fail(err)
		}
	}
	var oids []string
	for _, e := range files {
		oids = append(oids, e.oid)
	}
	data, err := r.blobs(dedup(oids))
	if err != nil {
		return fail(err)
	}
	for p, e := range files {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if private(p) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(full, data[e.oid], 0o644); err != nil {
			return fail(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, Dir, "remote"), []byte(remote+"\n"), 0o644); err != nil {
		return fail(err)
	}
	// The clone's name from now on, not only while the variable is set:
	// a later command without it would otherwise sync as
	// <hostname>-xxxx, a machine of its own.
	if err := os.WriteFile(filepath.Join(tmp, queues.MachineFile), []byte(m+"\n"), 0o644); err != nil {
		return fail(err)
	}
	st := syncState{Head: R, Machine: m, Names: []string{m}}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(tmp, Dir, "state.json"), b, 0o644); err != nil {
		return fail(err)
	}
	if err := ensureLayout(tmp, files); err != nil {
		return fail(err)
	}
	arrived := cloneArrivals(r, R, files, data)
	if err := os.Rename(tmp, dir); err != nil {
		return fail(err)
	}
	s, err := docstore.Open(dir)
	if err != nil {
		return nil, err
	}
	// A machine that joins again under its old name takes its journal
	// back as its own (events/<day>.jsonl), or its next round would
	// replace it.
	if m, err := queues.MachineName(s); err == nil {
		own := filepath.Join(dir, docstore.JournalDir, m)
		if ents, err := os.ReadDir(own); err == nil {
			for _, e := range ents {
				if err := os.Rename(filepath.Join(own, e.Name()), filepath.Join(dir, docstore.JournalDir, e.Name())); err != nil {
					return nil, err
				}
			}
			os.Remove(own)
		}
	}
	// What the clone brought is journaled as a round journals what it
	// applies: otherwise the clone's first watcher would take every
	// document for a hand edit (and its next round push that to every
	// machine). A failure here loses only those records: the store is
	// in place, so it is not the clone's failure.
	if len(arrived) > 0 {
		if j, err := journal.Open(s.Root(), journal.Options{}); err == nil {
			if h, err := journal.LoadHeads(s.Root()); err == nil {
				_, _ = j.AppendIf(h, arrived, func(*journal.Event) bool { return true })
			}
			j.Close()
		}
	}
	return s, nil
}

// cloneArrivals are the external events (via clone) of the documents a
// clone of R writes: each from the machine that last changed it.
func cloneArrivals(r *repo, R string, files map[string]entry, data map[string][]byte) []journal.Event {
	origin := r.attribution("", R)
	var out []journal.Event
	for p, e := range files {
		if private(p) || strings.HasPrefix(p, docstore.JournalDir+"/") || !strings.HasSuffix(p, ".md") {
			continue
		}
		kind := ""
		if k, _, err := schema.NameOfPath(p); err == nil && k != nil {
			kind = k.Name
		}
		m := origin[p]
		if m == "" {
			m = "remote"
		}
		out = append(out, journal.Event{Type: journal.TypeExternal, Kind: kind, Path: p, Rev: docstore.Revision(data[e.oid]),
			Data: map[string]any{"op": journal.TypeCreated, "machine": m, "via": "clone"}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// trackedByProject warns when the project's git tracks files of the
// store: a `git checkout` there rewrites documents the sync owns, and the
// next round would push the old copies, and the deletions, to every
// machine as this machine's changes. "" when not (or no project git).
func (sy *Syncer) trackedByProject() string {
	root := sy.s.Root()
	out, err := runGit("", nil, nil, "-C", filepath.Dir(root), "ls-files", "-z", "--", filepath.Base(root))
	if err != nil || len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is tracked by the project's git: a git checkout rewrites documents the sync owns, and the next round pushes that to every machine; "+
		"take it out with `git rm -r --cached %s` and add %s/ to the project's .gitignore", root, filepath.Base(root), filepath.Base(root))
}

// checkRename refuses, before the clone is renamed from st.Machine, a
// round under a name another clone syncs as. A name the remote (or, out
// of reach, the state this clone last synced) has a journal of, which
// this clone never synced as, is another clone's, however current this
// clone's copy of that journal is (ErrMachineTaken, unless taken over).
// And under a name this clone may take, the remote's journal of that
// name must hold nothing this clone's copy does not (the test
// checkOwnJournal makes later in the round, too late: by then the
// refused round had made the name the clone's and handed its journal to
// the old name). An unreachable remote checks only the last synced
// state; checkOwnJournal still does the rest.
func (sy *Syncer) checkRename(st syncState) error {
	old := st.Machine
	const ref = "refs/tavern/remote"
	if err := sy.repo.clearStaleLocks(ref); err != nil {
		return err
	}
	free := slices.Contains(st.Names, sy.machine) || sy.takeOver
	missing, err := sy.repo.fetch(context.Background(), sy.remote, "+"+sy.ref+":"+ref)
	if err != nil || missing {
		if !free && st.Head != "" && sy.repo.treeOf(st.Head) != "" {
			return sy.checkFreeName(st.Head, "rename", old)
		}
		return nil
	}
	R := sy.repo.revParse(ref)
	files, err := sy.repo.readTree(R)
	if err != nil {
		return err
	}
	// A stale copy first: that refusal (ErrSameMachine, exit 1) was
	// there before the name rule, and holds under --takeover too.
	if err := sy.checkStaleCopy(files, old); err != nil {
		return err
	}
	if free {
		return nil
	}
	return takenIn(files, sy.machine, "rename", old, sy.remote)
}

// checkStaleCopy refuses (ErrSameMachine) a rename from old to this
// clone's name when the remote's journal of that name (in its state
// files) holds what this clone's copy does not.
func (sy *Syncer) checkStaleCopy(files map[string]entry, old string) error {
	prefix := docstore.JournalDir + "/" + sy.machine + "/"
	var paths, oids []string
	for p, e := range files {
		if strings.HasPrefix(p, prefix) {
			paths = append(paths, p)
			oids = append(oids, e.oid)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	data, err := sy.repo.blobs(dedup(oids))
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		local, err := os.ReadFile(filepath.Join(sy.s.Root(), filepath.FromSlash(p)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if !bytes.HasPrefix(local, data[files[p].oid]) {
			return &SyncError{Op: "sync", Path: p, Err: fmt.Errorf("%w: another clone syncs as machine %q and has journaled there what this clone has not seen: "+
				"this clone keeps its name %q (give it a name of its own with TAVERN_MACHINE); nothing changed", ErrSameMachine, sy.machine, old)}
		}
	}
	return nil
}

// checkFreeName refuses (ErrMachineTaken) to join or rename under this
// clone's name when state commit c holds a journal of it: another clone
// writes, or wrote, it.
func (sy *Syncer) checkFreeName(c, op, old string) error {
	files, err := sy.repo.readTree(c)
	if err != nil {
		return err
	}
	return takenIn(files, sy.machine, op, old, sy.remote)
}

// takenIn is the *MachineTakenError of joining (op) under name when the
// state files hold a journal of it, nil when they hold none.
func takenIn(files map[string]entry, name, op, old, remote string) error {
	if !hasJournal(files, name) {
		return nil
	}
	free := name
	for i := 2; hasJournal(files, free) || free == name; i++ {
		suffix := "-" + strconv.Itoa(i)
		base := name
		if len(base)+len(suffix) > 100 {
			base = strings.TrimRight(base[:100-len(suffix)], ".")
		}
		free = base + suffix
	}
	return &MachineTakenError{Op: op, Path: docstore.JournalDir + "/" + name + "/", Name: name, Free: free, Old: old, Remote: remote}
}

// hasJournal reports whether the state files hold a journal of machine.
func hasJournal(files map[string]entry, machine string) bool {
	prefix := docstore.JournalDir + "/" + machine + "/"
	for p := range files {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// adoptJournal is the journal's part of an adopt (a store init made
// joining the remote's store R on its first round): this clone's own
// journal so far tells of a store no other machine knew, and it must not
// go out to them. Its day files are moved aside into .sync/adopted/
// (kept, never synced), and the clone's journal starts again: empty, or,
// when the clone takes over a name the remote has a journal of, as that
// journal, as Clone takes it back.
func (sy *Syncer) adoptJournal(R string) error {
	jdir := filepath.Join(sy.s.Root(), docstore.JournalDir)
	aside := filepath.Join(sy.s.Root(), Dir, "adopted")
	files, err := sy.repo.readTree(R)
	if err != nil {
		return err
	}
	prefix := docstore.JournalDir + "/" + sy.machine + "/"
	back := map[string]string{} // day file -> oid of the remote's copy
	var oids []string
	for p, e := range files {
		if name, ok := strings.CutPrefix(p, prefix); ok && !strings.Contains(name, "/") {
			back[name] = e.oid
			oids = append(oids, e.oid)
		}
	}
	data, err := sy.repo.blobs(dedup(oids))
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(jdir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue // day files only
		}
		if err := sy.rewriteDay(filepath.Join(jdir, e.Name()), func(mine []byte) ([]byte, error) {
			if err := appendFile(filepath.Join(aside, e.Name()), mine); err != nil {
				return nil, err
			}
			return data[back[e.Name()]], nil
		}); err != nil {
			return err
		}
		delete(back, e.Name())
	}
	for name, oid := range back { // days only the remote's copy has
		tmp := filepath.Join(jdir, name+".adopt")
		if err := os.WriteFile(tmp, data[oid], 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(jdir, name)); err != nil {
			return err
		}
	}
	return nil
}

// appendFile appends b to path, making it and its directory.
func appendFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// renameJournal is the round's first step when this clone synced as old
// and its name is now another (TAVERN_MACHINE changed). Its own journal
// (events/<day>.jsonl) begins with what it pushed as old, which the
// shared tree keeps in events/<old>/: that part is dropped here, and what
// follows it is the new name's, after what the clone once pushed under
// the new name if it did (events/<new>/, taken back as Clone does).
// Pushed whole under the new name, every event of old would be on the
// remote twice.
func (sy *Syncer) renameJournal(old, head string) error {
	jdir := filepath.Join(sy.s.Root(), docstore.JournalDir)
	ents, err := os.ReadDir(jdir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	files, err := sy.repo.readTree(head)
	if err != nil {
		return err
	}
	pushed := map[string]string{} // day file -> oid under old
	var oids []string
	for p, e := range files {
		if name, ok := strings.CutPrefix(p, docstore.JournalDir+"/"+old+"/"); ok {
			pushed[name] = e.oid
			oids = append(oids, e.oid)
		}
	}
	data, err := sy.repo.blobs(dedup(oids))
	if err != nil {
		return err
	}
	own := filepath.Join(jdir, sy.machine)
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue // day files only (not a .rename a crash left)
		}
		path := filepath.Join(jdir, e.Name())
		if err := sy.rewriteDay(path, func(mine []byte) ([]byte, error) {
			rest := mine
			if oid, ok := pushed[e.Name()]; ok && bytes.HasPrefix(mine, data[oid]) {
				rest = mine[len(data[oid]):]
			}
			back, err := os.ReadFile(filepath.Join(own, e.Name()))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			return append(back, rest...), nil
		}); err != nil {
			return err
		}
		os.Remove(filepath.Join(own, e.Name()))
	}
	// Days the clone wrote under the new name and not since.
	if back, err := os.ReadDir(own); err == nil {
		for _, e := range back {
			dst := filepath.Join(jdir, e.Name())
			if _, err := os.Stat(dst); err == nil {
				continue
			}
			if err := os.Rename(filepath.Join(own, e.Name()), dst); err != nil {
				return err
			}
		}
		os.Remove(own)
	}
	return nil
}

// rewriteDay replaces journal day file path with edit of its content,
// under the file's flock, which appenders take too: an event appended
// before is in what edit sees, one appended after goes to the new file
// (the journal reopens a day file renamed over). Empty: the file goes.
func (sy *Syncer) rewriteDay(path string, edit func([]byte) ([]byte, error)) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != syscall.EINTR {
			if err != nil {
				return err
			}
			break
		}
	}
	mine, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	out, err := edit(mine)
	if err != nil || bytes.Equal(out, mine) {
		return err
	}
	if len(out) == 0 {
		return os.Remove(path)
	}
	// Durable before it replaces the day file: a crash must leave the
	// old journal or the new one, never an empty file in its place.
	tmp := path + ".rename"
	t, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := t.Write(out); err != nil {
		t.Close()
		return err
	}
	if err := t.Sync(); err != nil {
		t.Close()
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// cloneSuffix and the cloning process's pid make the directory next to
// the store where Clone builds it before renaming it into place.
const cloneSuffix = docstore.CloneSuffix

// CloneLeftovers returns the directories next to store dir (dir +
// ".clone-<pid>") that a Clone killed before its rename left: those of
// processes that no longer run. A clone under way (its process lives) is
// not one. A pid reused since by another process keeps its leftover until
// that process ends: never a clone under way removed.
func CloneLeftovers(dir string) []string {
	dir = filepath.Clean(dir)
	ents, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), filepath.Base(dir)+cloneSuffix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			out = append(out, filepath.Join(filepath.Dir(dir), e.Name()))
		}
	}
	return out
}

// ErrSameMachine: another clone writes this machine's journal in the
// shared tree (a .tavern/ copied instead of joined with Clone keeps the
// original's .machine).
var ErrSameMachine = errors.New("machine name clash")

// checkOwnJournal refuses a round when the remote state R holds a copy of
// this machine's journal (events/<machine>/) that this machine did not
// write: only this machine appends to it, so what R has must be a prefix
// of the local file (equal, or older when a round that pushed was killed
// before it saved its state). Anything else is another clone syncing
// under the same name, and merging would overwrite one journal with the
// other, round after round.
func (sy *Syncer) checkOwnJournal(work map[string]entry, R string) error {
	rf, err := sy.repo.readTree(R)
	if err != nil {
		return err
	}
	own := docstore.JournalDir + "/" + sy.machine + "/"
	var paths, oids []string
	for p, e := range rf {
		if w, ok := work[p]; ok && strings.HasPrefix(p, own) && w.oid != e.oid {
			paths = append(paths, p)
			oids = append(oids, e.oid, w.oid)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	data, err := sy.repo.blobs(dedup(oids))
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		if !bytes.HasPrefix(data[work[p].oid], data[rf[p].oid]) {
			return &SyncError{Op: "sync", Path: p, Err: fmt.Errorf("%w: another clone syncs as machine %q and wrote this machine's journal on the remote "+
				"(a .tavern/ copied rather than joined with `tavern sync --clone` keeps the original's name): "+
				"give this clone a name of its own (TAVERN_MACHINE, or a new name in %s) and sync again; nothing was pushed", ErrSameMachine, sy.machine, queues.MachineFile)}
		}
	}
	return nil
}

// checkSameStore refuses to merge the remote state R into a history that
// shares no commit with it when the two are different stores: this one
// was made by `tavern init` rather than joined with `tavern sync --clone`.
// Merging them would fold two stores into one and keep the later
// tavern.md, renaming the team's store (and, under etcd, moving the
// default key prefix /tavern/<name>/ away from every held claim). A
// history with no common commit is also what a clone whose .sync/ was
// removed has: its tavern.md is still the team's (same created, same
// name), so that one merges as before.
//
// A store that holds nothing but what `tavern init` made (tavern.md,
// .gitignore, this machine's journal) has nothing to lose: it adopts the
// remote's store, as `tavern sync --clone` would have made it; the
// returned name is the remote store's then ("" when the round merges).
func (sy *Syncer) checkSameStore(work map[string]entry, R string) (string, error) {
	rf, err := sy.repo.readTree(R)
	if err != nil {
		return "", err
	}
	theirs, ok := rf[docstore.ConfigFile]
	if !ok {
		return "", nil // not a store's state: nothing to be renamed
	}
	mine, ok := work[docstore.ConfigFile]
	if !ok || mine.oid == theirs.oid {
		return "", nil
	}
	data, err := sy.repo.blobs(dedup([]string{mine.oid, theirs.oid}))
	if err != nil {
		return "", err
	}
	md, err1 := docstore.Parse(docstore.ConfigFile, data[mine.oid])
	td, err2 := docstore.Parse(docstore.ConfigFile, data[theirs.oid])
	if err1 != nil || err2 != nil {
		return "", nil // the merge reports a tavern.md it cannot read
	}
	if md.String("created") == td.String("created") && md.String("name") == td.String("name") {
		return "", nil
	}
	initOnly := true
	for p := range work {
		if p != docstore.ConfigFile && p != ".gitignore" && !strings.HasPrefix(p, docstore.JournalDir+"/") {
			initOnly = false
			break
		}
	}
	if initOnly {
		return td.String("name"), nil
	}
	local := filepath.Dir(sy.s.Root())
	line, col := md.KeyLine("name"), 1 // the name that is not the remote's
	if line == 0 {
		col = 0
	}
	return "", &SyncError{Op: "sync", Path: docstore.ConfigFile, File: docstore.ConfigFile, Line: line, Col: col, Err: fmt.Errorf("%w: the remote's store %q (created %s) is not this one, %q (created %s), and their histories share nothing: "+
		"this store was made by `tavern init`, not joined with `tavern sync --clone`. Join the team's store instead: "+
		"move this one aside (mv %s %s.mine), run `tavern sync --clone %s` in %s, then move in any documents of your own "+
		"(from %s.mine/, e.g. agents/ or a queue's items) and `tavern sync`; nothing was pushed or changed",
		ErrUnrelated, td.String("name"), td.String("created"), md.String("name"), md.String("created"),
		sy.s.Root(), sy.s.Root(), sy.remote, local, sy.s.Root())}
}

// ConfigError is a bad sync: setting in tavern.md, with its position
// (path:line:col, as queues/etcd's ConfigError).
type ConfigError struct {
	Path      string
	Line, Col int
	Field     string // e.g. sync.every
	Msg       string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.Path, e.Line, e.Col, e.Field, e.Msg)
}

// Position is where the setting is (docstore.Positioner: the --json error
// object's path, line and col).
func (e *ConfigError) Position() (string, int, int) { return e.Path, e.Line, e.Col }

// syncKeys are the settings of sync: and what each wants.
var syncKeys = map[string]string{"remote": "a git URL or path", "ref": "a full ref name (refs/...)", "every": "a duration such as 10s", "claim_ttl": "a duration such as 30s"}

// checkSection refuses a sync: that is not a mapping, a key it does not
// know and a value that is not text, at their position in tavern.md.
// Each was ignored before: a scalar sync: ran as if no remote were set,
// a misspelt claim_ttl or a bare number left claims at the default.
func checkSection(s *docstore.Store, cfg *docstore.Doc) error {
	v, ok := cfg.Fields()["sync"]
	if !ok || v == nil {
		return nil
	}
	sec, ok := v.(map[string]any)
	if !ok {
		path, line, col := queues.CoordConfig{Store: s, Doc: cfg}.Pos("sync")
		return &ConfigError{Path: path, Line: line, Col: col, Field: "sync", Msg: fmt.Sprintf("%v: want a mapping (remote:, ref:, every:, claim_ttl:)", v)}
	}
	keys := make([]string, 0, len(sec))
	for k := range sec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want, known := syncKeys[k]
		if !known {
			return configError(s, cfg, k, "unknown setting (known: claim_ttl, every, ref, remote)")
		}
		switch sec[k].(type) {
		case nil, string:
		default:
			return configError(s, cfg, k, fmt.Sprintf("%v: want %s", sec[k], want))
		}
	}
	return nil
}

func configError(s *docstore.Store, cfg *docstore.Doc, key, msg string) error {
	path, line, col := queues.CoordConfig{Store: s, Doc: cfg}.Pos("sync", key)
	return &ConfigError{Path: path, Line: line, Col: col, Field: "sync." + key, Msg: msg}
}
