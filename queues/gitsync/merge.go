package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// MergeFunc merges one document changed on both sides (base is nil for a
// document both sides created). It returns the merged bytes and what
// could not be kept (journaled as sync.conflict).
type MergeFunc func(path string, base, ours, theirs []byte) ([]byte, []Loss, error)

// Loss is a value a merge could not keep: the rule chose another. Every
// Loss is journaled (sync.conflict) with both values, so nothing is lost
// silently: `tavern log --type sync.conflict` lists them.
type Loss struct {
	Path     string `json:"path"`
	Field    string `json:"field"` // a frontmatter key, "body", "(document)", "(item)" or "(deleted)"
	Kept     string `json:"kept"`  // "(absent)": that side has no such key
	Lost     string `json:"lost"`
	KeptFrom string `json:"kept_machine"`
	LostFrom string `json:"lost_machine"`
	Rule     string `json:"rule"`
}

const (
	ruleLWW  = "both machines changed it: the later `updated` wins (ties: the greater machine name)"
	ruleItem = "both machines moved the item: the later claim wins (claim_attempt, then state done > dead > pending > claimed, then updated)"
	// ruleItemInPlace: neither machine moved it (both copies where base
	// had it); items still keep one copy whole.
	ruleItemInPlace = "both machines changed the item where it was: one copy is kept whole, the later claim's (claim_attempt, then state done > dead > pending > claimed, then updated, then the greater machine name)"
	ruleDeleted     = "deleted on one machine, edited on the other: the edit is kept"
	ruleUnion       = "both machines appended: lines of both are kept"
)

// merge is one three-way merge of flat trees.
type merge struct {
	sy                 *Syncer
	base, ours, theirs map[string]entry
	theirsMachine      map[string]string // tree path -> machine of theirs' last change
	out                map[string]entry
	losses             []Loss
	blob               map[string][]byte
	newBlobs           [][]byte
	newPaths           []string
}

func (m *merge) machineOf(path string) string {
	if n := m.theirsMachine[path]; n != "" {
		return n
	}
	return "remote"
}

func same(a, b entry, aok, bok bool) bool {
	if aok != bok {
		return false
	}
	return !aok || a.oid == b.oid
}

// itemOf returns the item group key of an item path ("" if not one).
func itemOf(p string) (group, state string) {
	var buf [3]string
	caps, ok := schema.Item.Captures(p, buf[:0])
	if !ok || len(caps) != 3 {
		return "", ""
	}
	return caps[0] + "/" + caps[2], caps[1]
}

// mergeTrees merges ours and theirs against base.
func (sy *Syncer) mergeTrees(base, ours, theirs map[string]entry, theirsMachine map[string]string) (map[string]entry, []Loss, error) {
	m := &merge{sy: sy, base: base, ours: ours, theirs: theirs, theirsMachine: theirsMachine, out: map[string]entry{}}
	groups := map[string][]string{}
	var conflicts []string
	seen := map[string]bool{}
	for _, t := range []map[string]entry{base, ours, theirs} {
		for p := range t {
			if seen[p] {
				continue
			}
			seen[p] = true
			if g, _ := itemOf(p); g != "" {
				groups[g] = append(groups[g], p)
				continue
			}
			b, bok := base[p]
			o, ook := ours[p]
			th, tok := theirs[p]
			switch {
			case same(o, th, ook, tok):
				if ook {
					m.out[p] = o
				}
			case same(o, b, ook, bok):
				if tok {
					m.out[p] = th
				}
			case same(th, b, tok, bok):
				if ook {
					m.out[p] = o
				}
			default:
				conflicts = append(conflicts, p)
			}
		}
	}
	var groupConflicts [][]string
	for _, paths := range groups {
		sort.Strings(paths)
		eq := func(x, y map[string]entry) bool {
			for _, p := range paths {
				a, aok := x[p]
				b, bok := y[p]
				if !same(a, b, aok, bok) {
					return false
				}
			}
			return true
		}
		take := func(t map[string]entry) {
			for _, p := range paths {
				if e, ok := t[p]; ok {
					m.out[p] = e
				}
			}
		}
		switch {
		case eq(ours, theirs), eq(theirs, base):
			take(ours)
		case eq(ours, base):
			take(theirs)
		default:
			groupConflicts = append(groupConflicts, paths)
		}
	}
	// Read every blob the conflicts need, in one batch.
	var need []string
	add := func(t map[string]entry, p string) {
		if e, ok := t[p]; ok {
			need = append(need, e.oid)
		}
	}
	for _, p := range conflicts {
		add(base, p)
		add(ours, p)
		add(theirs, p)
	}
	for _, ps := range groupConflicts {
		for _, p := range ps {
			add(ours, p)
			add(theirs, p)
		}
	}
	var err error
	if m.blob, err = sy.repo.blobs(dedup(need)); err != nil {
		return nil, nil, err
	}
	sort.Strings(conflicts)
	for _, p := range conflicts {
		if err := m.resolve(p); err != nil {
			return nil, nil, err
		}
	}
	for _, ps := range groupConflicts {
		m.resolveItem(ps)
	}
	ids, err := sy.repo.writeBlobs(m.newBlobs)
	if err != nil {
		return nil, nil, err
	}
	for i, p := range m.newPaths {
		m.out[p] = entry{mode: "100644", oid: ids[i]}
	}
	return m.out, m.losses, nil
}

func dedup(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func (m *merge) data(t map[string]entry, p string) ([]byte, bool) {
	e, ok := t[p]
	if !ok {
		return nil, false
	}
	return m.blob[e.oid], true
}

func (m *merge) put(p string, data []byte) {
	m.newBlobs = append(m.newBlobs, data)
	m.newPaths = append(m.newPaths, p)
}

// resolve merges one path both sides changed differently.
func (m *merge) resolve(p string) error {
	b, bok := m.data(m.base, p)
	o, ook := m.data(m.ours, p)
	t, tok := m.data(m.theirs, p)
	me, them := m.sy.machine, m.machineOf(p)
	if !ook || !tok {
		// Deleted on one side, edited on the other: keep the edit.
		keptE, from, lostFrom := m.ours[p], me, them
		if !ook {
			keptE, from, lostFrom = m.theirs[p], them, me
		}
		m.out[p] = keptE
		m.losses = append(m.losses, Loss{Path: p, Field: "(deleted)", Kept: "the edited copy", Lost: "the deletion", KeptFrom: from, LostFrom: lostFrom, Rule: ruleDeleted})
		return nil
	}
	if !bok {
		b = nil
	}
	if !strings.HasSuffix(p, ".md") {
		m.put(p, unionLines(o, t))
		return nil
	}
	if k, _, err := schema.NameOfPath(p); err == nil && k != nil {
		if fn := m.sy.mergers[k.Name]; fn != nil {
			out, losses, err := fn(p, b, o, t)
			if err == nil {
				for i := range losses {
					if losses[i].KeptFrom == "" {
						losses[i].KeptFrom, losses[i].LostFrom = me, them
					}
				}
				m.losses = append(m.losses, losses...)
				m.put(p, out)
				return nil
			}
		}
	}
	out, losses := mergeDoc(p, b, o, t, me, them)
	m.losses = append(m.losses, losses...)
	m.put(p, out)
	return nil
}

// unionLines keeps ours and appends theirs' lines that ours lacks (append-only files).
func unionLines(o, t []byte) []byte {
	have := map[string]bool{}
	for _, l := range bytes.SplitAfter(o, []byte("\n")) {
		have[string(l)] = true
	}
	out := append([]byte(nil), o...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	for _, l := range bytes.SplitAfter(t, []byte("\n")) {
		if len(l) == 0 || have[string(l)] {
			continue
		}
		out = append(out, l...)
		if l[len(l)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out
}

// valueText is a field's value as comparable text ("\x00" if absent).
func valueText(d *docstore.Doc, k string) string {
	if d == nil {
		return "\x00"
	}
	return nodeText(d.Get(k))
}

func parseOrNil(p string, data []byte) *docstore.Doc {
	if data == nil {
		return nil
	}
	d, err := docstore.Parse(p, data)
	if err != nil {
		return nil
	}
	// Its kind, as the store classifies it: mergeDoc validates the merged
	// document against it (a document of no kind validates as nothing).
	d.Kind, d.Name, _ = schema.NameOfPath(p)
	return d
}

// oursWins decides the last writer: the later `updated`, then the
// greater machine name (so every machine decides the same way).
func oursWins(o, t *docstore.Doc, me, them string) bool {
	var uo, ut time.Time
	if o != nil {
		uo, _ = o.Time("updated")
	}
	if t != nil {
		ut, _ = t.Time("updated")
	}
	if !uo.Equal(ut) {
		return uo.After(ut)
	}
	return me > them
}

// mergeDoc is the per-field rule for a document both machines edited:
// a field changed on one side only takes that change; a field changed on
// both to different values takes the last writer's (later `updated`,
// ties by machine name) and the other value is a Loss; `updated` takes
// the later of the two. The body is merged line by line (git merge-file);
// overlapping edits take the last writer's hunks and the other body is a
// Loss. Nothing ever gets conflict markers.
func mergeDoc(p string, b, o, t []byte, me, them string) ([]byte, []Loss) {
	do, dt, db := parseOrNil(p, o), parseOrNil(p, t), parseOrNil(p, b)
	oWins := oursWins(do, dt, me, them)
	winner, loser, wData, lData, wName, lName := do, dt, o, t, me, them
	if !oWins {
		winner, loser, wData, lData, wName, lName = dt, do, t, o, them, me
	}
	whole := func() ([]byte, []Loss) {
		return wData, []Loss{{Path: p, Field: "(document)", Kept: string(wData), Lost: string(lData), KeptFrom: wName, LostFrom: lName, Rule: ruleLWW}}
	}
	if do == nil || dt == nil {
		return whole() // a side does not parse: keep one whole, journal the other
	}
	res := winner.Clone()
	var losses []Loss
	keys := append(append([]string(nil), winner.Keys()...), loser.Keys()...)
	if db != nil {
		keys = append(keys, db.Keys()...)
	}
	done := map[string]bool{}
	for _, k := range keys {
		if done[k] {
			continue
		}
		done[k] = true
		bv, ov, tv := valueText(db, k), valueText(do, k), valueText(dt, k)
		var from *docstore.Doc // the side whose value wins
		switch {
		case ov == tv, tv == bv:
			from = do
		case ov == bv:
			from = dt
		case k == "updated":
			from = winner
			if ut, _ := loser.Time("updated"); func() bool { wt, _ := winner.Time("updated"); return ut.After(wt) }() {
				from = loser
			}
		default:
			// A map changed on both sides (a plan's tasks:, a bookmark's
			// channels) merges key by key: entries added on two machines
			// are different entries, not rival values of one field.
			if n, kl, fromLoser, ok := mergeMap(nodeOf(db, k), nodeOf(winner, k), nodeOf(loser, k)); ok {
				for _, key := range kl {
					losses = append(losses, Loss{Path: p, Field: k + "." + key, Kept: shown(mapValueText(winner.Get(k), key)), Lost: shown(mapValueText(loser.Get(k), key)), KeptFrom: wName, LostFrom: lName, Rule: ruleLWW})
				}
				if text, ok := mapFieldText(k, winner, loser, n, fromLoser); ok && res.SetFieldText(k, text, n) == nil {
					continue
				}
				if err := res.SetNode(k, n); err != nil {
					return whole()
				}
				continue
			}
			from = winner
			losses = append(losses, Loss{Path: p, Field: k, Kept: shown(valueText(winner, k)), Lost: shown(valueText(loser, k)), KeptFrom: wName, LostFrom: lName, Rule: ruleLWW})
		}
		if valueText(from, k) == valueText(res, k) {
			continue
		}
		var err error
		if n := from.Get(k); n == nil {
			err = res.Delete(k)
		} else if text, _, ok := from.FieldText(k); !ok || res.SetFieldText(k, text, n) != nil {
			// The side's own lines, byte for byte, where they say the
			// same in res; rendered from the node only where they do not.
			err = res.SetNode(k, n)
		}
		if err != nil {
			return whole()
		}
	}
	var bb []byte
	if db != nil {
		bb = db.Body()
	}
	ob, tb := do.Body(), dt.Body()
	switch {
	case bytes.Equal(ob, tb), bytes.Equal(tb, bb):
		res.SetBody(ob)
	case bytes.Equal(ob, bb):
		res.SetBody(tb)
	default:
		merged, clean := mergeFile(bb, ob, tb, oWins)
		res.SetBody(merged)
		if !clean {
			losses = append(losses, Loss{Path: p, Field: "body", Kept: string(winner.Body()), Lost: string(loser.Body()), KeptFrom: wName, LostFrom: lName, Rule: ruleLWW})
		}
	}
	if errs := res.Validate(false); len(errs) > 0 && len(winner.Validate(false)) == 0 {
		return whole()
	}
	return res.Bytes(), losses
}

func nodeOf(d *docstore.Doc, k string) *yaml.Node {
	if d == nil {
		return nil
	}
	return d.Get(k)
}

// mapPairs is a mapping node's keys in order and their values.
func mapPairs(n *yaml.Node) ([]string, map[string]*yaml.Node, bool) {
	keys, _, vals, ok := mapNodes(n)
	return keys, vals, ok
}

// mapNodes is mapPairs with the key nodes (their quoting is kept).
func mapNodes(n *yaml.Node) ([]string, map[string]*yaml.Node, map[string]*yaml.Node, bool) {
	if n == nil {
		return nil, map[string]*yaml.Node{}, map[string]*yaml.Node{}, true
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil, nil, false
	}
	var keys []string
	knodes, vals := map[string]*yaml.Node{}, map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
			knodes[k] = n.Content[i]
		}
		vals[k] = n.Content[i+1]
	}
	return keys, knodes, vals, true
}

// nodeText is a YAML node as comparable text ("\x00" if nil).
func nodeText(n *yaml.Node) string {
	if n == nil {
		return "\x00"
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return "\x01" + n.Value
	}
	return string(b)
}

// absent is what a Loss says for a key one side does not have (removed
// there, or never set).
const absent = "(absent)"

// shown is a value's text as a Loss carries it.
func shown(text string) string {
	if text == "\x00" {
		return absent
	}
	return strings.TrimSpace(text)
}

func mapValueText(n *yaml.Node, key string) string {
	_, vals, _ := mapPairs(n)
	return nodeText(vals[key])
}

// mergeMap merges a mapping field three-way, key by key, by the field
// rule: a key changed (added, removed, edited) on one side takes that
// change; a key changed on both to different values takes the winner's,
// and is returned in lost. ok is false unless winner and loser are both
// mappings (and base a mapping or absent).
func mergeMap(base, winner, loser *yaml.Node) (out *yaml.Node, lost []string, fromLoser map[string]bool, ok bool) {
	if winner == nil || loser == nil {
		return nil, nil, nil, false
	}
	_, bv, okB := mapPairs(base)
	wk, wkn, wv, okW := mapNodes(winner)
	lk, lkn, lv, okL := mapNodes(loser)
	if !okB || !okW || !okL {
		return nil, nil, nil, false
	}
	fromLoser = map[string]bool{}
	out = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: winner.Style}
	seen := map[string]bool{}
	for _, k := range append(wk, lk...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		b, w, l := nodeText(bv[k]), nodeText(wv[k]), nodeText(lv[k])
		v := wv[k]
		switch {
		case w == l, l == b:
		case w == b:
			v = lv[k]
			fromLoser[k] = true
		default:
			lost = append(lost, k)
		}
		if v == nil {
			continue // removed
		}
		key := wkn[k]
		if key == nil {
			key = lkn[k]
		}
		out.Content = append(out.Content, key, v)
	}
	return out, lost, fromLoser, true
}

// mapFieldText writes the block mapping field k that mergeMap merged
// (out) from the lines of the two sides: the winner's line(s) before the
// first key, then each key's lines from the side its value came from,
// byte for byte. ok is false when the sides are not block mappings keyed
// at one column (SetFieldText checks the result in any case).
func mapFieldText(k string, winner, loser *docstore.Doc, out *yaml.Node, fromLoser map[string]bool) ([]byte, bool) {
	type side struct {
		lines [][]byte
		spans map[string][]byte
	}
	col := -1
	read := func(d *docstore.Doc) (*side, bool) {
		text, line, ok := d.FieldText(k)
		n := d.Get(k)
		if !ok || n == nil || n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
			return nil, false
		}
		s := &side{lines: bytes.SplitAfter(text, []byte("\n")), spans: map[string][]byte{}}
		if len(s.lines) > 0 && len(s.lines[len(s.lines)-1]) == 0 {
			s.lines = s.lines[:len(s.lines)-1]
		}
		var starts []int
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn := n.Content[i]
			if col < 0 {
				col = kn.Column
			}
			at := kn.Line - line
			if kn.Column != col || at < 1 || at >= len(s.lines) || (len(starts) > 0 && at <= starts[len(starts)-1]) {
				return nil, false
			}
			starts = append(starts, at)
		}
		for j, at := range starts {
			end := len(s.lines)
			if j+1 < len(starts) {
				end = starts[j+1]
			}
			s.spans[n.Content[2*j].Value] = bytes.Join(s.lines[at:end], nil)
		}
		s.lines = s.lines[:starts[0]] // the key's own line(s)
		return s, true
	}
	w, ok := read(winner)
	if !ok {
		return nil, false
	}
	l, ok := read(loser)
	if !ok {
		return nil, false
	}
	text := bytes.Join(w.lines, nil)
	for i := 0; i+1 < len(out.Content); i += 2 {
		key := out.Content[i].Value
		span, ok := w.spans[key]
		if fromLoser[key] || !ok {
			span, ok = l.spans[key]
		}
		if !ok {
			return nil, false
		}
		text = append(text, span...)
	}
	return text, true
}

// mergeFile is git merge-file on three texts; on overlapping edits the
// favoured side's hunks are taken (--ours/--theirs), never markers.
func mergeFile(base, ours, theirs []byte, favourOurs bool) ([]byte, bool) {
	dir, err := os.MkdirTemp("", "tavern-merge-")
	if err != nil {
		return pick(ours, theirs, favourOurs), false
	}
	defer os.RemoveAll(dir)
	names := []string{filepath.Join(dir, "ours"), filepath.Join(dir, "base"), filepath.Join(dir, "theirs")}
	for i, b := range [][]byte{ours, base, theirs} {
		if err := os.WriteFile(names[i], b, 0o644); err != nil {
			return pick(ours, theirs, favourOurs), false
		}
	}
	run := func(extra ...string) ([]byte, int) {
		args := append([]string{"merge-file", "-p"}, extra...)
		args = append(args, names...)
		cmd := exec.Command("git", args...)
		cmd.Env = gitEnv(nil)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, ee.ExitCode()
		}
		if err != nil {
			return nil, -1
		}
		return out, 0
	}
	out, n := run()
	if n == 0 {
		return out, true
	}
	// Both sides only added lines (each kept every line of base, in
	// order) and the additions overlap, as two boxes appended to one
	// plan: keep both sides' lines, ours first. Taking one side's hunk
	// would drop the other's lines (and a plan's dropped box cancels its
	// item). Edits and deletions still take the favoured side's hunks.
	if n > 0 && onlyAdds(base, ours) && onlyAdds(base, theirs) {
		if out, n := run("--union"); n == 0 && out != nil {
			return out, true
		}
	}
	flag := "--theirs"
	if favourOurs {
		flag = "--ours"
	}
	if out, n = run(flag); n >= 0 && out != nil {
		return out, false
	}
	return pick(ours, theirs, favourOurs), false
}

// onlyAdds reports whether side keeps every line of base in order (its
// changes are insertions only).
func onlyAdds(base, side []byte) bool {
	bl, sl := bytes.SplitAfter(base, []byte("\n")), bytes.SplitAfter(side, []byte("\n"))
	i := 0
	for _, l := range sl {
		if i < len(bl) && bytes.Equal(bytes.TrimRight(bl[i], "\n"), bytes.TrimRight(l, "\n")) {
			i++
		}
	}
	return i == len(bl)
}

func pick(o, t []byte, ours bool) []byte {
	if ours {
		return o
	}
	return t
}

// recordTimes are the fields a copy written from the engine's record
// (queues: recoverFinished, on a machine the finisher's copy had not
// reached) sets by the record's clock or from the copy it moved, not as
// the finisher's file has them.
var recordTimes = map[string]bool{"updated": true, "completed": true, "attempts": true}

// redundantCopy says whether lost, a copy of an item in the same state
// and with the same claim_attempt as kept, holds nothing kept does not:
// every field of lost is in kept with the same value, bar recordTimes;
// claim_machine, which a dead/ copy drops; and texts that the engine's
// record keeps up to 4 KiB (result, dead_reason, the body's result),
// which may be a prefix of kept's. That is a copy recovered from the
// engine's record when the finisher's own copy arrives: the same
// outcome, not a conflict. A copy of a claim run twice (local
// coordination: a claim_attempt per machine) differs in what it alone
// has (started, claimed_by, its result) and is journaled.
func redundantCopy(kept, lost *docstore.Doc) bool {
	if kept == nil || lost == nil {
		return false
	}
	prefix := func(l, k string) bool {
		l, k = strings.TrimRight(l, "\n"), strings.TrimRight(k, "\n")
		return strings.HasPrefix(k, l)
	}
	for _, k := range lost.Keys() {
		switch {
		case recordTimes[k]:
		case k == "claim_machine" && !kept.Has(k):
		case k == "result" || k == "dead_reason":
			if !prefix(lost.String(k), kept.String(k)) && !(k == "dead_reason" && prefix(lost.String(k), kept.String("last_error"))) {
				return false
			}
		case valueText(lost, k) != valueText(kept, k):
			return false
		}
	}
	return prefix(string(lost.Body()), string(kept.Body()))
}

// itemRank orders the copies of one item: the later claim (fence) wins,
// then the later state for the same claim, then updated.
type itemRank struct {
	attempt int64
	state   int
	updated time.Time
	machine string
}

var stateRank = map[string]int{queues.Claimed: 0, queues.Pending: 1, queues.Dead: 2, queues.Done: 3}

func rankOf(d *docstore.Doc, state, machine string) itemRank {
	r := itemRank{state: stateRank[state], machine: machine}
	if d != nil {
		r.attempt, _ = d.Int("claim_attempt")
		r.updated, _ = d.Time("updated")
	} else {
		r.attempt = -1
	}
	return r
}

func (a itemRank) less(b itemRank) bool {
	if a.attempt != b.attempt {
		return a.attempt < b.attempt
	}
	if a.state != b.state {
		return a.state < b.state
	}
	if !a.updated.Equal(b.updated) {
		return a.updated.Before(b.updated)
	}
	return a.machine < b.machine
}

// resolveItem keeps one copy of an item both machines moved or edited.
func (m *merge) resolveItem(paths []string) {
	type cand struct {
		path    string
		e       entry
		rank    itemRank
		machine string
	}
	var cands []cand
	for _, side := range []struct {
		t       map[string]entry
		machine func(string) string
	}{{m.ours, func(string) string { return m.sy.machine }}, {m.theirs, m.machineOf}} {
		for _, p := range paths {
			e, ok := side.t[p]
			if !ok {
				continue
			}
			_, st := itemOf(p)
			mach := side.machine(p)
			cands = append(cands, cand{path: p, e: e, rank: rankOf(parseOrNil(p, m.blob[e.oid]), st, mach), machine: mach})
		}
	}
	if len(cands) == 0 {
		return
	}
	best := 0
	for i := range cands {
		if cands[best].rank.less(cands[i].rank) {
			best = i
		}
	}
	w := cands[best]
	m.out[w.path] = w.e
	desc := func(c cand) string {
		_, st := itemOf(c.path)
		return fmt.Sprintf("%s (%s, claim_attempt %d)", c.path, st, c.rank.attempt)
	}
	for i, c := range cands {
		if i == best || (c.path == w.path && c.e.oid == w.e.oid) {
			continue
		}
		if c.path == w.path && c.rank.attempt == w.rank.attempt && redundantCopy(parseOrNil(w.path, m.blob[w.e.oid]), parseOrNil(c.path, m.blob[c.e.oid])) {
			continue // the same claim's outcome, as the engine's record says it: nothing is lost
		}
		rule := ruleItem
		if _, inBase := m.base[c.path]; inBase && c.path == w.path {
			rule = ruleItemInPlace
		}
		m.losses = append(m.losses, Loss{Path: c.path, Field: "(item)", Kept: desc(w), Lost: desc(c) + "\n" + string(m.blob[c.e.oid]), KeptFrom: w.machine, LostFrom: c.machine, Rule: rule})
	}
}
