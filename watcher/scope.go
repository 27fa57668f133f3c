package watcher

import (
	"strings"
	"sync"

	"github.com/tavernhq/tavern/schema"
)

// kindPattern is a kind's path pattern, split into segments, for deciding
// without allocating whether a directory can hold documents of the kind
// (so a scoped projection does not descend into others) and whether a
// file is one. matchFile agrees with schema.Kind.Match.
type kindPattern struct {
	kind string
	segs []patSeg // the last one is the file name without ".md"
}

type patSeg struct {
	literal string
	choices []string // {x:a|b}; neither: any valid name
}

func newKindPattern(k *schema.Kind) *kindPattern {
	p := &kindPattern{kind: k.Name}
	for _, part := range strings.Split(strings.TrimSuffix(k.Pattern, ".md"), "/") {
		var s patSeg
		if strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}") {
			if _, choices, ok := strings.Cut(part[1:len(part)-1], ":"); ok {
				s.choices = strings.Split(choices, "|")
			}
		} else {
			s.literal = part
		}
		p.segs = append(p.segs, s)
	}
	return p
}

func (p *kindPattern) matchSeg(i int, name string) bool {
	s := &p.segs[i]
	switch {
	case s.literal != "":
		return name == s.literal
	case s.choices != nil:
		for _, c := range s.choices {
			if c == name {
				return true
			}
		}
		return false
	default:
		return schema.ValidName(name) == nil
	}
}

// match reports whether rel's segments match the pattern's first ones:
// all of them (file) or fewer (a directory on the way).
func (p *kindPattern) match(rel string, file bool) bool {
	if file {
		if !strings.HasSuffix(rel, ".md") {
			return false
		}
		rel = rel[:len(rel)-3]
	} else if rel == "" {
		return true
	}
	for i := range p.segs {
		name, rest, more := strings.Cut(rel, "/")
		if !p.matchSeg(i, name) {
			return false
		}
		if !more {
			if file {
				return i == len(p.segs)-1
			}
			return i < len(p.segs)-1
		}
		rel = rest
	}
	return false
}

// dirOf reports whether dir is exactly the directory part of a path of
// the pattern (its files then match if their name does).
func (p *kindPattern) dirOf(dir string) bool {
	n := len(p.segs) - 1
	if dir == "" {
		return n == 0
	}
	for i := range n {
		name, rest, more := strings.Cut(dir, "/")
		if !p.matchSeg(i, name) {
			return false
		}
		if !more {
			return i == n-1
		}
		dir = rest
	}
	return false
}

func (p *kindPattern) matchFile(rel string) bool { return p.match(rel, true) }
func (p *kindPattern) matchDir(rel string) bool  { return p.match(rel, false) }

// scope is the set of kinds a projection covers; nil covers everything,
// including files that match no kind.
type scope []*kindPattern

// scopeFilter is a scope's Ignore rule with a memo of the last directory
// whose files it looked at: a walk asks about every file of a directory
// in turn, and only the last segment then needs matching.
type scopeFilter struct {
	sc      scope
	mu      sync.Mutex
	lastDir string
	dirOK   []bool // per pattern: lastDir matches its directory part
}

func (f *scopeFilter) excludes(rel string, dir bool) bool {
	if f.sc == nil {
		return false
	}
	if dir || !strings.HasSuffix(rel, ".md") {
		return f.sc.excludes(rel, dir)
	}
	parent, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirOK == nil || f.lastDir != parent {
		f.dirOK = f.dirOK[:0]
		for _, p := range f.sc {
			f.dirOK = append(f.dirOK, p.dirOf(parent))
		}
		f.lastDir = parent
	}
	name = name[:len(name)-3]
	for i, p := range f.sc {
		if f.dirOK[i] && p.matchSeg(len(p.segs)-1, name) {
			return false
		}
	}
	return true
}

func newScope(kinds []string) (scope, error) {
	if kinds == nil {
		return nil, nil
	}
	sc := scope{}
	seen := map[string]bool{}
	for _, name := range kinds {
		k, err := schema.Lookup(name)
		if err != nil {
			return nil, err
		}
		if !seen[k.Name] {
			seen[k.Name] = true
			sc = append(sc, newKindPattern(k))
		}
	}
	return sc, nil
}

// has reports whether kind (a singular name, "" for no kind) is covered.
func (sc scope) has(kind string) bool {
	if sc == nil {
		return true
	}
	for _, p := range sc {
		if p.kind == kind {
			return true
		}
	}
	return false
}

// kinds lists the covered sections (nil: all).
func (sc scope) kinds() []string {
	if sc == nil {
		return nil
	}
	out := make([]string, len(sc))
	for i, p := range sc {
		out[i] = p.kind
	}
	return out
}

// excludes is the watcher's Ignore rule for a scope: directories that
// cannot hold a covered document, and files that are not one.
func (sc scope) excludes(rel string, dir bool) bool {
	if sc == nil {
		return false
	}
	for _, p := range sc {
		if p.match(rel, !dir) {
			return false
		}
	}
	return true
}
