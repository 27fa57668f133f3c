package journal

import (
	"slices"
	"strings"
	"sync"

	"github.com/tavernhq/tavern/schema"
)

// The registry of event types: each package that journals events
// registers the types it writes (RegisterTypes, from an init), so a reader
// can tell a type filter that names no type (item.claimd) from one that
// names a type nothing has done yet. It is what the binary was built with:
// a package not linked in has not registered its types.
var (
	typesMu sync.RWMutex
	types   = map[string]bool{}
)

func init() {
	RegisterTypes(TypeCreated, TypeUpdated, TypeRemoved, TypeInvalid, TypeError,
		TypeExternal, TypeMissed, TypeMoved, TypeLeft, TypeDegraded)
}

// RegisterTypes records event types a package journals. Call it from an
// init of the package that writes them.
func RegisterTypes(ts ...string) {
	typesMu.Lock()
	defer typesMu.Unlock()
	for _, t := range ts {
		types[t] = true
	}
}

// KnownTypes returns every registered event type, sorted.
func KnownTypes() []string {
	typesMu.RLock()
	defer typesMu.RUnlock()
	out := make([]string, 0, len(types))
	for t := range types {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// IsTypePattern reports whether a Filter.Types entry matches by prefix or
// glob (item., agent*, *.claimed) rather than naming one type.
func IsTypePattern(t string) bool {
	return strings.HasSuffix(t, ".") || strings.ContainsAny(t, "*?[")
}

// TypeHint says what a Filter.Types entry that names no registered type
// was probably meant to be, or returns nil when it names one, is a
// pattern, or is near none. Such a filter matches nothing tavern writes,
// yet the journal may hold types this binary does not know (a newer
// tavern's, synced from another machine), so it is a hint, not a
// refusal.
//
// Near: one or two edits from a type (item.claimd: item.claimed). A
// family name without its dot (item): the prefix filter "item.". The
// last part of types without the family (claimed): those types and the
// glob "*.claimed". An
// unknown type of a known family (item.nope): that family's types.
func TypeHint(t string) *TypeHintError {
	if t == "" || IsTypePattern(t) {
		return nil
	}
	known := KnownTypes()
	if slices.Contains(known, t) {
		return nil
	}
	if slices.ContainsFunc(known, func(k string) bool { return strings.HasPrefix(k, t+".") }) {
		return &TypeHintError{Type: t, Near: []string{t + "."}}
	}
	if !strings.Contains(t, ".") {
		// The last part of types without their family (created, as one
		// says "a created event"): those types, and the glob of them all.
		// The glob first, then the document event (doc.created): a hint
		// names at most three.
		ends := []string{"*." + t}
		if k := "doc." + t; slices.Contains(known, k) {
			ends = append(ends, k)
		}
		for _, k := range known {
			if strings.HasSuffix(k, "."+t) && k != "doc."+t {
				ends = append(ends, k)
			}
		}
		if len(ends) > 1 {
			return &TypeHintError{Type: t, Near: ends}
		}
	}
	if near := schema.Near(t, known); len(near) > 0 {
		return &TypeHintError{Type: t, Near: near}
	}
	if i := strings.IndexByte(t, '.'); i > 0 {
		family := t[:i+1]
		var of []string
		for _, k := range known {
			if strings.HasPrefix(k, family) {
				of = append(of, k)
			}
		}
		if len(of) > 0 {
			return &TypeHintError{Type: t, Family: of}
		}
	}
	return nil
}
