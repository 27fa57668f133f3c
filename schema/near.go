package schema

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Near returns the candidates close to name, nearest first: those at most
// two edits away (one for names of three letters or fewer; a swap of two
// adjacent letters is one edit, EditDistance), and those
// that name is a prefix of or that are a prefix of name. It is the one
// "did you mean" rule of commands, agents, channels and queues.
func Near(name string, candidates []string) []string {
	type hit struct {
		name string
		d    int
	}
	limit := 2
	if len(name) <= 3 {
		limit = 1
	}
	var hits []hit
	seen := map[string]bool{}
	for _, c := range candidates {
		if c == name || seen[c] {
			continue
		}
		d := EditDistance(name, c)
		switch {
		case d <= limit && d < len(name):
		case len(name) >= 2 && (strings.HasPrefix(c, name) || strings.HasPrefix(name, c) && len(c) >= 2):
			d = limit + 1
		default:
			continue
		}
		seen[c] = true
		hits = append(hits, hit{c, d})
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].name < hits[j].name
	})
	out := make([]string, 0, len(hits))
	for _, h := range hits {
		out = append(out, h.name)
	}
	return out
}

// NearNew is Near for a name about to be created: the existing names it
// may be a typo of. Numbered siblings are left out: d3 next to d2, team-2
// next to team-1 are a series, not typos, and so is a name that is
// another plus an optional '-' or '_' and digits (builders-2, builders2
// beside builders or each other, builders beside builders-2); so are
// short names one letter apart (cpu, gpu, tpu; db1 is a numbered one): a name of three letters
// or fewer is refused only for an existing name of another length (gpu
// beside gpus) or with two adjacent letters swapped (bbo beside bob: the
// same letters, not another name of a series). It is the one "did you
// mean" rule of writes that create what they do not find (budget set,
// token init, a knowledge domain).
func NearNew(name string, names []string) []string {
	digits := func(r rune) bool { return r >= '0' && r <= '9' }
	strip := func(s string) string {
		return strings.Map(func(r rune) rune {
			if digits(r) {
				return -1
			}
			return r
		}, s)
	}
	if b := seriesBase(name); b != name && slices.Contains(names, b) {
		// The next of an existing name's series (drones3 beside drones):
		// near other names only through that one (dornes).
		return nil
	}
	return slices.DeleteFunc(Near(name, names), func(n string) bool {
		if len(name) <= 3 && len(n) == len(name) && !Swapped(name, n) {
			return true
		}
		if b := seriesBase(name); b == seriesBase(n) && (b != name || b != n) {
			return true
		}
		return strings.ContainsFunc(name, digits) && strings.ContainsFunc(n, digits) && strip(n) == strip(name)
	})
}

// seriesBase is name without the number that ends it and the '-' or '_'
// before that number (builders-2, builders2, builders_2: builders), or
// name when it ends with no digit.
func seriesBase(name string) string {
	b := strings.TrimRight(name, "0123456789")
	if b == name || b == "" {
		return name
	}
	if c := b[len(b)-1]; c == '-' || c == '_' {
		b = b[:len(b)-1]
	}
	if b == "" {
		return name
	}
	return b
}

// Swapped says whether b is a with two adjacent letters swapped.
func Swapped(a, b string) bool {
	x, y := []rune(a), []rune(b)
	if len(x) != len(y) {
		return false
	}
	i := 0
	for i < len(x) && x[i] == y[i] {
		i++
	}
	return i+1 < len(x) && x[i] == y[i+1] && x[i+1] == y[i] && string(x[i+2:]) == string(y[i+2:])
}

// EditDistance is the optimal string alignment distance of two short
// strings, in letters: the Levenshtein distance (insertions, deletions,
// substitutions) where a swap of two adjacent letters is one edit too,
// the commonest typo (wroking, agnets). A swapped pair is not edited
// again (ca is three edits from abc, not two).
func EditDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// Three rows: the one before the previous is the swap's.
	pprev := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur := make([]int, len(y)+1)
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
		}
		pprev, prev = prev, cur
	}
	return prev[len(y)]
}

// ChoiceHint is the "; did you mean X?" of a value given for one of a
// closed set of choices (a flag's: --by itme, --before clam), or "" when
// none is near: a value outside the set is the caller's error, and this
// is its hint, as an enum field's (a value in another case counts as
// near: Claim for claim).
func ChoiceHint(value string, choices []string) string { return enumHint(value, choices) }

// NearList is the "did you mean" list of near (Near's answer): at most
// the first three, quoted, as `"a", "b" or "c"`; "" when near is empty.
func NearList(near []string) string {
	near = near[:min(len(near), 3)]
	if len(near) == 0 {
		return ""
	}
	q := make([]string, len(near))
	for i, n := range near {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// itemStateField is what --where calls an item's state (its directory).
const itemStateField = "state"

// FieldHint reports a field name or value given for k (ls --where, set)
// that looks like a typo, as a *HintError, or nil: a name that is none of
// k's fields (nor, for an open kind, anything) but one edit from one of
// them (stat, sate, satte: state), or, for a comparison by equality (eq), a
// value outside the field's enum (state=idel). Documents may carry fields
// of their own, so this is a warning, not a refusal; a distance of one
// (not Near's two) keeps fields of one's own like "status" quiet.
func (k *Kind) FieldHint(field, value string, eq bool) error {
	if k == Item && field == itemStateField {
		// An item's state is its directory, not a field: its values are
		// the pattern's (ls items --where state=claimd listed nothing).
		if eq && !slices.Contains(ItemStates, value) {
			return &HintError{Kind: k.Name, Field: field, Value: value, Enum: ItemStates}
		}
		return nil
	}
	if f := k.Field(field); f != nil {
		if eq && len(f.Enum) > 0 && !slices.Contains(f.Enum, value) {
			return &HintError{Kind: k.Name, Field: field, Value: value, Enum: f.Enum}
		}
		return nil
	}
	if k.Open || len(field) < 4 || strings.Contains(field, ".") {
		return nil
	}
	var near []string
	for _, f := range k.Fields {
		if EditDistance(field, f.Name) == 1 {
			near = append(near, f.Name)
		}
	}
	if k == Item && EditDistance(field, itemStateField) == 1 {
		near = append(near, itemStateField)
	}
	if len(near) == 0 {
		return nil
	}
	return &HintError{Kind: k.Name, Field: field, Near: near}
}
