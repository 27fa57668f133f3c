package schema

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Type is the type of a frontmatter field.
type Type string

// The field types. Durations are Go duration strings ("90s", "5m").
// Times are RFC 3339 timestamps (YAML timestamps or strings).
const (
	String   Type = "string"
	Int      Type = "int"
	Number   Type = "number"
	Bool     Type = "bool"
	Time     Type = "time"
	Duration Type = "duration"
	Strings  Type = "strings" // list of strings
	Map      Type = "map"     // any mapping
	Any      Type = "any"
)

// Field describes one frontmatter key of a kind.
type Field struct {
	Name     string
	Type     Type
	Required bool
	Enum     []string // allowed values for String fields
	Default  any      // value new documents get when the field is not given
	// Min is the lower bound of an Int or Number field, and of a Duration field in
	// nanoseconds: 0 where zero is meaningful (retry at once), 1 where
	// only a positive duration is (a lease of 0s expires as it is made).
	// A Duration field without Min may not be negative either.
	Min     *int64
	Pattern string // "name" for path-safe names, "kebab" for kebab-case
	// ZeroWhy is why a positive Duration field refuses 0 (its error says
	// so); on a Number field of Min 0 it makes the bound exclusive (a
	// budget's cost is above 0, and 0.5 is one).
	ZeroWhy string
	// Keys are the settings a Map field knows: any other key in it is an
	// error at its position. Nil: any key (or those of Settings; with
	// Settings, the names of Settings, for engines to compare theirs with).
	Keys []string
	// Settings are the settings of a Map field with their types
	// (tavern.md's etcd: and sync:): a key none of them names is an error
	// at its position, as with Keys, and so is a value its setting's
	// type refuses, whether or not the engine that reads the section
	// runs (a sync.every of "soon" was refused only when syncing).
	Settings []Field
	Doc      string
}

// Kind is one document kind: where its files live and which fields they have.
type Kind struct {
	Name    string   // singular: "agent"
	Plural  string   // directory-style plural: "agents"
	Aliases []string // other accepted spellings
	// Pattern maps documents to paths relative to the store root.
	// Segments in braces capture names: "{agent}". A capture written
	// "{state:a|b}" only matches the listed values and is not part of the
	// document's name. The last segment ends in ".md".
	Pattern string
	Version int // current schema_version
	Fields  []Field
	// Migrations upgrade documents written by older versions, in order.
	Migrations []Migration
	Doc        string
	// Open kinds take any extra field as data (tuple values), so strict
	// validation does not report them as unknown.
	Open bool
	// Closed kinds refuse a field they do not know even without strict
	// validation, naming the known fields near it: the store's config,
	// where a misspelt key would leave a default in force without a word.
	Closed bool
	// Rules check what one field's type cannot: how fields go together
	// (tavern.md's etcd.password under coordination: etcd). They return
	// errors (as Validate's, without a path) and warnings: what is
	// allowed but probably not meant, reported by Warnings, never by
	// Validate, so no write or open is refused for one.
	Rules func(m *yaml.Node) (errs, warnings []*FieldError)

	// segs caches the parsed Pattern (for the Pattern it was parsed from):
	// KindOfPath tries every kind for every document a store touches.
	segs    []segment
	segsFor string
}

// Field returns the named field, or nil.
func (k *Kind) Field(name string) *Field {
	for i := range k.Fields {
		if k.Fields[i].Name == name {
			return &k.Fields[i]
		}
	}
	return nil
}

var registry = map[string]*Kind{}
var ordered []*Kind

// Register adds a kind to the registry. It panics on a duplicate name, which
// is a programming error.
func Register(k *Kind) {
	for _, n := range append([]string{k.Name, k.Plural}, k.Aliases...) {
		if registry[n] == k {
			continue
		}
		if _, dup := registry[n]; dup {
			panic("schema: duplicate kind name " + n)
		}
		registry[n] = k
	}
	k.segs, k.segsFor = parseSegments(k.Pattern), k.Pattern
	ordered = append(ordered, k)
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].Name < ordered[j].Name })
}

// Lookup finds a kind by its singular, plural or alias name.
func Lookup(name string) (*Kind, error) {
	if k, ok := registry[strings.ToLower(name)]; ok {
		return k, nil
	}
	names := make([]string, 0, 2*len(ordered))
	for _, k := range ordered {
		names = append(names, k.Plural, k.Name)
		names = append(names, k.Aliases...)
	}
	// Each kind once, by its nearest name, the plural on a tie (agentz):
	// agnet is one edit from agent and two from agents, agnets the other
	// way round.
	lower := strings.ToLower(name)
	var kinds []*Kind
	best := map[*Kind]string{}
	for _, n := range Near(lower, names) {
		k := registry[n]
		cur, ok := best[k]
		switch {
		case !ok:
			kinds = append(kinds, k)
			best[k] = n
		case n == k.Plural && EditDistance(lower, n) <= EditDistance(lower, cur):
			best[k] = n
		}
	}
	var near []string
	for _, k := range kinds {
		near = append(near, best[k])
	}
	return nil, &UnknownKindError{Name: name, Near: near}
}

// Kinds returns every registered kind sorted by name.
func Kinds() []*Kind { return append([]*Kind(nil), ordered...) }

type segment struct {
	literal string
	capture string
	choices []string // for {x:a|b}
}

func (k *Kind) segments() []segment {
	if k.segsFor == k.Pattern && k.segs != nil {
		return k.segs
	}
	return parseSegments(k.Pattern)
}

func parseSegments(pattern string) []segment {
	parts := strings.Split(strings.TrimSuffix(pattern, ".md"), "/")
	segs := make([]segment, len(parts))
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			name, choices, _ := strings.Cut(p[1:len(p)-1], ":")
			segs[i].capture = name
			if choices != "" {
				segs[i].choices = strings.Split(choices, "|")
			}
		} else {
			segs[i].literal = p
		}
	}
	return segs
}

// Match reports whether rel (slash-separated, relative to the store root)
// is a document of this kind, and returns its captures.
func (k *Kind) Match(rel string) (map[string]string, bool) {
	var buf [8]string
	parts, ok := k.match(rel, buf[:0])
	if !ok {
		return nil, false
	}
	segs := k.segments()
	caps := make(map[string]string, len(parts))
	for i, s := range segs {
		if s.capture != "" {
			caps[s.capture] = parts[i]
		}
	}
	return caps, true
}

// Matches reports whether rel is a document of this kind (Match without
// the captures).
func (k *Kind) Matches(rel string) bool {
	var buf [8]string
	_, ok := k.match(rel, buf[:0])
	return ok
}

// Captures is Match for hot paths: the captured values in the pattern's
// order (for items: queue, state, id), appended to dst, no map.
func (k *Kind) Captures(rel string, dst []string) ([]string, bool) {
	var buf [8]string
	parts, ok := k.match(rel, buf[:0])
	if !ok {
		return dst, false
	}
	for i, s := range k.segments() {
		if s.capture != "" {
			dst = append(dst, parts[i])
		}
	}
	return dst, true
}

// match splits rel into one part per pattern segment, checking each. It
// does not allocate while parts has room: KindOfPath tries every kind in
// turn.
func (k *Kind) match(rel string, parts []string) ([]string, bool) {
	rest, ok := strings.CutSuffix(rel, ".md")
	if !ok {
		return nil, false
	}
	segs := k.segments()
	for i, s := range segs {
		var p string
		if i == len(segs)-1 {
			if strings.IndexByte(rest, '/') >= 0 {
				return nil, false
			}
			p = rest
		} else if p, rest, ok = strings.Cut(rest, "/"); !ok {
			return nil, false
		}
		switch {
		case s.literal != "":
			if p != s.literal {
				return nil, false
			}
		case s.choices != nil:
			if !contains(s.choices, p) {
				return nil, false
			}
		default:
			if ValidName(p) != nil {
				return nil, false
			}
		}
		parts = append(parts, p)
	}
	return parts, true
}

// DocName is the document's name within its kind: the free captures of
// its path joined by "/" ("alice", "alice/01J..." for commitments).
func (k *Kind) DocName(caps map[string]string) string {
	var parts []string
	for _, s := range k.segments() {
		if s.capture != "" && s.choices == nil {
			parts = append(parts, caps[s.capture])
		}
	}
	return strings.Join(parts, "/")
}

// NameParts is the number of "/"-separated parts in a document name.
func (k *Kind) NameParts() int {
	n := 0
	for _, s := range k.segments() {
		if s.capture != "" && s.choices == nil {
			n++
		}
	}
	return n
}

// NameShape says what a name of the kind looks like, for an error about
// one that does not.
func (k *Kind) NameShape() string {
	var caps []string
	for _, s := range k.segments() {
		if s.capture != "" && s.choices == nil {
			caps = append(caps, strings.ToUpper(s.capture))
		}
	}
	switch len(caps) {
	case 0:
		return fmt.Sprintf("the %s is one document (%s) and takes no name", k.Name, strings.TrimPrefix(k.Pattern, "/"))
	case 1:
		return fmt.Sprintf("%s names are one part (%s), without /", k.Name, caps[0])
	}
	return fmt.Sprintf("%s names have %d parts, %s", k.Name, len(caps), strings.Join(caps, "/"))
}

// Path builds a document path from a name ("alice", or "alice/ID") and
// values for enumerated captures (e.g. state). It validates every part.
func (k *Kind) Path(name string, choice map[string]string) (string, error) {
	var parts []string
	if name != "" {
		parts = strings.Split(name, "/")
	}
	if len(parts) != k.NameParts() {
		return "", &NameError{Name: name, Reason: k.NameShape()}
	}
	var out []string
	i := 0
	for _, s := range k.segments() {
		switch {
		case s.literal != "":
			out = append(out, s.literal)
		case s.choices != nil:
			v := choice[s.capture]
			if v == "" {
				v = s.choices[0]
			}
			if !contains(s.choices, v) {
				return "", &NameError{Name: v, Reason: s.capture + " must be one of " + strings.Join(s.choices, ", ")}
			}
			out = append(out, v)
		default:
			if err := ValidName(parts[i]); err != nil {
				return "", err
			}
			out = append(out, parts[i])
			i++
		}
	}
	return strings.Join(out, "/") + ".md", nil
}

// Dir returns the directory holding this kind's documents, up to the first
// capture ("agents", "queues", "" for the store config).
func (k *Kind) Dir() string {
	var out []string
	for _, s := range k.segments() {
		if s.literal == "" {
			break
		}
		out = append(out, s.literal)
	}
	if len(out) == len(k.segments()) { // a fixed path like tavern.md
		out = out[:len(out)-1]
	}
	return strings.Join(out, "/")
}

// NameOfPath is KindOfPath giving the document's name (DocName) instead
// of the captures; it allocates only for names of several parts.
func NameOfPath(rel string) (*Kind, string, error) {
	for _, k := range ordered {
		var buf [8]string
		parts, ok := k.match(rel, buf[:0])
		if !ok {
			continue
		}
		name := ""
		for i, s := range k.segments() {
			if s.capture == "" || s.choices != nil {
				continue
			}
			if name == "" {
				name = parts[i]
			} else {
				name += "/" + parts[i]
			}
		}
		return k, name, nil
	}
	return nil, "", &UnknownKindError{Path: rel}
}

// KindsUnder returns the kinds whose documents lie under dir, a
// store-relative directory ("queues/build/pending", no slash at either
// end): dir's segments match the start of the kind's pattern, and the
// rest of the pattern still has a capture, so dir holds a set of the
// kind's documents and not one fixed file (queues/build holds items; of
// the queue kind only its own queue.md, so not the queue kind).
func KindsUnder(dir string) []*Kind {
	parts := strings.Split(dir, "/")
	var out []*Kind
	for _, k := range ordered {
		segs := k.segments()
		if len(parts) >= len(segs) || !segsMatch(segs, parts) {
			continue
		}
		for _, s := range segs[len(parts):] {
			if s.literal == "" {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// NearDirs returns the directories of the store that dir, under which
// no documents lie (KindsUnder is empty), is most likely a typo of: dir
// with one fixed part replaced by a near one (schema.Near), a literal
// (queus for queues) or one of a part's choices (pendin for pending).
// It is ls DIR/'s "did you mean"; names chosen by people (a queue's) are
// the store's to list, not the schema's.
func NearDirs(dir string) []string {
	parts := strings.Split(dir, "/")
	seen := map[string]bool{}
	var out []string
	for i, p := range parts {
		for _, k := range ordered {
			segs := k.segments()
			if len(parts) >= len(segs) {
				continue
			}
			alts := segs[i].choices
			if segs[i].literal != "" {
				alts = []string{segs[i].literal}
			}
			for _, n := range Near(p, alts) {
				try := slices.Clone(parts)
				try[i] = n
				d := strings.Join(try, "/")
				if !seen[d] && len(KindsUnder(d)) > 0 {
					seen[d] = true
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// segsMatch reports whether parts match the first len(parts) segments.
func segsMatch(segs []segment, parts []string) bool {
	for i, p := range parts {
		s := segs[i]
		switch {
		case s.literal != "":
			if p != s.literal {
				return false
			}
		case s.choices != nil:
			if !contains(s.choices, p) {
				return false
			}
		default:
			if ValidName(p) != nil {
				return false
			}
		}
	}
	return true
}

// NamedDir is the part of dir, a directory under which documents of the
// kind lie (KindsUnder), that names something: up to its last free
// capture ("queues/build" of "queues/build/pending", a queue that must
// exist, where pending/ may simply not have been made yet). "" when dir
// names nothing (queues).
func (k *Kind) NamedDir(dir string) string {
	parts := strings.Split(dir, "/")
	segs := k.segments()
	n := 0
	for i := range parts {
		if i < len(segs) && segs[i].capture != "" && segs[i].choices == nil {
			n = i + 1
		}
	}
	return strings.Join(parts[:n], "/")
}

// DirOfName is the directory that the leading parts of a name (or the
// whole of it) fix for the kind, when documents of the kind lie under
// it: "build" of items is queues/build. "" when the parts fix no such
// directory (an agent's name is its one document, not a directory).
func (k *Kind) DirOfName(name string) string {
	parts := strings.Split(name, "/")
	segs := k.segments()
	var out []string
	for _, s := range segs {
		if len(parts) == 0 || s.choices != nil {
			break
		}
		if s.literal != "" {
			out = append(out, s.literal)
			continue
		}
		if ValidName(parts[0]) != nil {
			return ""
		}
		out, parts = append(out, parts[0]), parts[1:]
	}
	if len(parts) > 0 || len(out) >= len(segs) {
		return ""
	}
	dir := strings.Join(out, "/")
	if !slices.Contains(KindsUnder(dir), k) {
		return ""
	}
	return dir
}

// PlainFiles are the files in the store that are plain text, not
// documents: no frontmatter, no kind. `tavern check` and the watcher leave
// them alone.
var PlainFiles = map[string]string{
	"PRIME.md": "replaces or extends the commands tavern prime teaches",
}

// PlainFile reports whether rel (relative to .tavern/) is one of
// PlainFiles.
func PlainFile(rel string) bool {
	_, ok := PlainFiles[rel]
	return ok
}

// KindOfPath finds the kind whose pattern matches rel.
func KindOfPath(rel string) (*Kind, map[string]string, error) {
	for _, k := range ordered {
		if caps, ok := k.Match(rel); ok {
			return k, caps, nil
		}
	}
	return nil, nil, &UnknownKindError{Path: rel}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ValidName reports whether s may be used as one path segment of a
// document: no "/", "\", "..", control characters, or leading dot.
func ValidName(s string) error {
	switch {
	case s == "":
		return &NameError{Name: s, Reason: "empty name"}
	case len(s) > 200:
		return &NameError{Name: s, Reason: "longer than 200 bytes"}
	case strings.HasPrefix(s, "."):
		return &NameError{Name: s, Reason: "leading dot"}
	}
	// One pass (every path of a scan is checked): a separator is
	// reported before a control or invalid character, wherever each is.
	sep, bad := false, false
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			sep = sep || c == '/' || c == '\\'
			bad = bad || c < 0x20 || c == 0x7f
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		bad = bad || r == utf8.RuneError // an invalid byte, or U+FFFD itself
		i += size
	}
	switch {
	case sep:
		return &NameError{Name: s, Reason: "contains a path separator"}
	case bad:
		return &NameError{Name: s, Reason: "contains a control or invalid character"}
	}
	return nil
}
