package schema

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// VersionField is the frontmatter key holding a document's schema version.
const VersionField = "schema_version"

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// kebabRule says what kebab accepts, in the field's and ValidKebab's
// errors alike.
const kebabRule = "must be kebab-case (lowercase words joined by -)"

// Validate checks a frontmatter mapping node against the kind. Unknown
// fields are reported (with Unknown set) only when strict is true. The
// returned errors carry line and column but no path; callers add it.
func (k *Kind) Validate(m *yaml.Node, strict bool) []*FieldError {
	if m == nil || m.Kind != yaml.MappingNode {
		line, col := 1, 1
		if m != nil {
			line, col = m.Line, m.Column
		}
		return []*FieldError{{Line: line, Col: col, Msg: "frontmatter must be a mapping of field: value"}}
	}
	var errs []*FieldError
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		name := key.Value
		if seenBefore(m.Content[:i], name) {
			errs = append(errs, &FieldError{Line: key.Line, Col: key.Column, Field: name, Msg: "duplicate field"})
			continue
		}
		if name == VersionField {
			if val.Tag != "!!int" {
				errs = append(errs, &FieldError{Line: val.Line, Col: val.Column, Field: name, Msg: "must be an integer"})
			} else if v, _ := strconv.Atoi(val.Value); v > k.Version {
				errs = append(errs, &FieldError{Line: val.Line, Col: val.Column, Field: name,
					Msg: fmt.Sprintf("version %d is newer than this tavern understands (%d)", v, k.Version)})
			}
			continue
		}
		f := k.Field(name)
		if f == nil {
			switch {
			case k.Closed:
				errs = append(errs, &FieldError{Line: key.Line, Col: key.Column, Field: name, Msg: k.unknownMsg(name)})
			case strict && !k.Open:
				// One letter from a field of the kind (sttae): say which,
				// as set and ls --where do for the same typo.
				msg := "unknown field"
				var he *HintError
				if errors.As(k.FieldHint(name, "", false), &he) && len(he.Near) > 0 {
					msg += " (did you mean " + NearList(he.Near) + "?)"
				}
				errs = append(errs, &FieldError{Line: key.Line, Col: key.Column, Field: name, Msg: msg, Unknown: true})
			}
			continue
		}
		if isNull(val) {
			if f.Required {
				errs = append(errs, &FieldError{Line: val.Line, Col: val.Column, Field: name, Msg: "required, but empty"})
			}
			continue
		}
		if msg := f.check(val); msg != "" {
			errs = append(errs, &FieldError{Line: val.Line, Col: val.Column, Field: name, Msg: msg})
		} else {
			errs = append(errs, f.checkSettings(val, name)...)
		}
	}
	if k.Rules != nil {
		rerrs, _ := k.Rules(m)
		errs = append(errs, rerrs...)
	}
	for _, f := range k.Fields {
		if f.Required && !seenBefore(m.Content, f.Name) {
			errs = append(errs, &FieldError{Line: m.Line, Col: m.Column, Field: f.Name, Msg: "required field missing"})
		}
	}
	return errs
}

// Warnings returns what the kind's Rules find allowed but probably not
// meant in a frontmatter mapping node, with line and column but no path.
func (k *Kind) Warnings(m *yaml.Node) []*FieldError {
	if k.Rules == nil || m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	_, warns := k.Rules(m)
	for _, w := range warns {
		w.Warning = true
	}
	return warns
}

// checkSettings refuses each key of a Map field's mapping that is not
// one of its Keys or Settings, at its position, naming the known keys
// near it, and each value its setting refuses (at the value's position).
// field is the field's dotted name (etcd, etcd.tls).
func (f *Field) checkSettings(m *yaml.Node, field string) []*FieldError {
	if m.Kind == yaml.AliasNode && m.Alias != nil {
		m = m.Alias
	}
	known := f.Keys
	if known == nil {
		known = settingNames(f.Settings)
	}
	if known == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var errs []*FieldError
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := field + "." + k.Value
		if !contains(known, k.Value) {
			msg := "unknown setting (known: " + strings.Join(known, ", ") + ")"
			if near := Near(k.Value, known); len(near) > 0 {
				msg = "unknown setting (did you mean " + NearList(near) + "?)"
			}
			errs = append(errs, &FieldError{Line: k.Line, Col: k.Column, Field: name, Msg: msg})
			continue
		}
		s := f.setting(k.Value)
		if s == nil || isNull(v) {
			continue
		}
		if msg := s.check(v); msg != "" {
			errs = append(errs, &FieldError{Line: v.Line, Col: v.Column, Field: name, Msg: msg})
			continue
		}
		errs = append(errs, s.checkSettings(v, name)...)
	}
	return errs
}

func settingNames(fs []Field) []string {
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	return names
}

func (f *Field) setting(name string) *Field {
	for i := range f.Settings {
		if f.Settings[i].Name == name {
			return &f.Settings[i]
		}
	}
	return nil
}

// unknownMsg is why a Closed kind refuses name: the known fields near it
// (a typo), else all of them (a key from elsewhere: engine for
// coordination).
func (k *Kind) unknownMsg(name string) string {
	known := make([]string, 0, len(k.Fields)+1)
	known = append(known, VersionField)
	for _, f := range k.Fields {
		known = append(known, f.Name)
	}
	if near := Near(name, known); len(near) > 0 {
		return "unknown field (did you mean " + NearList(near) + "?)"
	}
	return "unknown field (known: " + strings.Join(known, ", ") + ")"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func (f *Field) check(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	scalar := n.Kind == yaml.ScalarNode
	switch f.Type {
	case String:
		if !scalar {
			return "must be a single value (text), not a list or mapping"
		}
		if len(f.Enum) > 0 && !contains(f.Enum, n.Value) {
			return fmt.Sprintf("%q is not one of %s", n.Value, strings.Join(f.Enum, ", ")) + enumHint(n.Value, f.Enum)
		}
		switch f.Pattern {
		case "name":
			if err := ValidName(n.Value); err != nil {
				return err.Error()
			}
		case "kebab":
			if !kebab.MatchString(n.Value) {
				return fmt.Sprintf("%q %s", n.Value, kebabRule)
			}
		case "ref":
			if !strings.HasPrefix(n.Value, "refs/") {
				return fmt.Sprintf("%q: want a full ref name (refs/...)", n.Value)
			}
			if why := refNameProblem(n.Value); why != "" {
				return fmt.Sprintf("%q: not a valid git ref name (%s)", n.Value, why)
			}
			if why := StateRefProblem(n.Value); why != "" {
				return fmt.Sprintf("%q: %s", n.Value, why)
			}
		}
	case Int:
		if !scalar || n.Tag != "!!int" {
			return fmt.Sprintf("must be an integer, got %s", describe(n))
		}
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return "integer out of range"
		}
		if f.Min != nil && v < *f.Min {
			return fmt.Sprintf("must be at least %d", *f.Min)
		}
	case Number:
		if !scalar || (n.Tag != "!!int" && n.Tag != "!!float") {
			return fmt.Sprintf("must be a number, got %s", describe(n))
		}
		var v float64
		if err := n.Decode(&v); err == nil {
			// .nan passes every bound and .inf is none; JSON has neither.
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Sprintf("must be a finite number, got %s", n.Value)
			}
			if f.Min != nil && v < float64(*f.Min) {
				return fmt.Sprintf("must be at least %d", *f.Min)
			}
			if f.Min != nil && f.ZeroWhy != "" && v == float64(*f.Min) {
				return fmt.Sprintf("must be above %d (%s)", *f.Min, f.ZeroWhy)
			}
		}
	case Bool:
		if !scalar || n.Tag != "!!bool" {
			return fmt.Sprintf("must be true or false, got %s", describe(n))
		}
	case Time:
		if !scalar {
			return "must be a timestamp (RFC 3339)"
		}
		if _, err := ParseTime(n.Value); err != nil {
			return fmt.Sprintf("%q is not a timestamp (want RFC 3339, e.g. 2026-01-02T15:04:05Z)", n.Value)
		}
	case Duration:
		if !scalar {
			return "must be a duration like 30s or 5m"
		}
		d, err := time.ParseDuration(n.Value)
		if f.Pattern == "seconds" && n.Tag == "!!int" {
			// etcd's timeouts take a bare number of seconds too.
			var secs int64
			secs, err = strconv.ParseInt(n.Value, 0, 32)
			d = time.Duration(secs) * time.Second
		}
		if err != nil && n.Tag == "!!int" {
			return fmt.Sprintf("%s is not a duration: a number needs its unit (e.g. %ss)", n.Value, n.Value)
		}
		if err != nil {
			return fmt.Sprintf("%q is not a duration (e.g. 30s, 5m, 1h)", n.Value)
		}
		// No duration of the store means anything negative; some mean
		// nothing at zero either (Min 1).
		if d < 0 {
			return fmt.Sprintf("%q: a duration cannot be negative", n.Value)
		}
		if f.Min != nil && int64(d) < *f.Min {
			return fmt.Sprintf("%q: must be a positive duration (%s)", n.Value, f.zeroWhy())
		}
	case Strings:
		if f.Pattern == "endpoints" {
			return checkEndpoints(n)
		}
		if n.Kind != yaml.SequenceNode {
			return fmt.Sprintf("must be a list, got %s", describe(n))
		}
		for _, c := range n.Content {
			if c.Kind == yaml.AliasNode && c.Alias != nil {
				c = c.Alias // [*base, test]
			}
			if c.Kind != yaml.ScalarNode {
				return "list entries must be single values"
			}
		}
	case Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Sprintf("must be a mapping, got %s", describe(n))
		}
		switch f.Pattern {
		case "ids":
			return checkIDs(n)
		case "idlists":
			return checkIDLists(n)
		}
	}
	return ""
}

// uuid is the form of every id the engine writes (UUIDv7, lower case).
var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// checkIDs checks that every value of a mapping is an id, empty or null
// (nothing yet). Ids are compared as text, so anything else would sort
// before or after every id there will ever be: a bookmark of "5" would
// say "all read" for good.
func checkIDs(m *yaml.Node) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		v := m.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if isNull(v) || (v.Kind == yaml.ScalarNode && (v.Value == "" || uuid.MatchString(v.Value))) {
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Sprintf("%s: must be an id, got %s", m.Content[i].Value, describe(v))
		}
		return fmt.Sprintf("%s: %q is not an id", m.Content[i].Value, v.Value)
	}
	return ""
}

// checkIDLists checks that every value of a mapping is a list of ids
// (or empty): a bookmark's late messages, each looked up by its id.
func checkIDLists(m *yaml.Node) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		v := m.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if isNull(v) {
			continue
		}
		if v.Kind != yaml.SequenceNode {
			return fmt.Sprintf("%s: must be a list of ids, got %s", m.Content[i].Value, describe(v))
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode || !uuid.MatchString(e.Value) {
				return fmt.Sprintf("%s: %q is not an id", m.Content[i].Value, e.Value)
			}
		}
	}
	return ""
}

// zeroWhy is why a zero is refused for a positive Duration field.
func (f *Field) zeroWhy() string {
	if f.ZeroWhy != "" {
		return f.ZeroWhy
	}
	return "0 means nothing here"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return fmt.Sprintf("%q", n.Value)
}

// ParseTime accepts RFC 3339 with or without fractional seconds, and the
// space-separated form YAML allows.
func ParseTime(s string) (time.Time, error) {
	if t, ok := parseStamp(s); ok {
		return t, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not a timestamp: %q", s)
}

// FormatTime is the one timestamp format the engine writes: RFC 3339 in
// UTC with millisecond precision, which sorts lexically.
func FormatTime(t time.Time) string {
	u := t.UTC()
	if y := u.Year(); y < 0 || y > 9999 {
		return u.Format(TimeLayout)
	}
	var buf [len("2006-01-02T15:04:05.000Z")]byte
	return string(appendStamp(buf[:0], u))
}

// IsStamp reports whether s is RFC 3339 in UTC with 0 to 9 fraction
// digits and in range: a string time.Parse(time.RFC3339Nano, s) accepts,
// checked without its layout interpretation. false says nothing: s may
// still be a time in another form.
func IsStamp(s string) bool {
	_, ok := parseStamp(s)
	return ok
}

// seenBefore reports whether key is among the keys of the mapping
// entries content (key, value, key, value...). Quadratic, but documents
// have tens of fields and a map costs more at that size.
func seenBefore(content []*yaml.Node, key string) bool {
	for j := 0; j+1 < len(content); j += 2 {
		if content[j].Value == key {
			return true
		}
	}
	return false
}

// parseStamp parses FormatTime's form and RFC 3339 in UTC with 0 to 9
// fraction digits (2006-01-02T15:04:05[.000]Z), the stamps the engine
// writes and reads on every state change, without time.Parse's layout
// interpretation. It gives what time.Parse(time.RFC3339Nano, s) gives,
// and ok=false for anything else (including out-of-range fields), which
// ParseTime then hands to time.Parse.
func parseStamp(s string) (time.Time, bool) {
	if len(s) < 20 || len(s) > 30 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, false
	}
	nsec := 0
	switch frac := s[19 : len(s)-1]; {
	case frac == "":
	case frac[0] == '.' && len(frac) >= 2 && len(frac) <= 10:
		n, ok := num(20, len(s)-1)
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			n *= 10
		}
		nsec = n
	default:
		return time.Time{}, false
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // Feb 30 and the like: time.Parse refuses them
		return time.Time{}, false
	}
	return t, true
}

// refNameProblem says why git would refuse ref as a ref name (the rules
// of git check-ref-format), or "". The schema cannot run git, and a ref
// git refuses fails every sync round as if the remote were unreachable.
// StateRefProblem says why ref cannot hold a store's synced state ("" if
// it can): a branch or tag of the project (a round would merge the
// project's files into .tavern/ and push the store onto the branch), a
// remote-tracking ref, or the git engine's claim refs.
func StateRefProblem(ref string) string {
	for _, p := range []struct{ prefix, what string }{
		{"refs/heads/", "a branch"},
		{"refs/tags/", "a tag"},
		{"refs/remotes/", "a remote-tracking ref"},
		{"refs/tavern/claims/", "where coordination: git keeps its claims"},
	} {
		if strings.HasPrefix(ref, p.prefix) {
			return fmt.Sprintf("%s (%s...): the store's state needs a ref of its own, such as refs/tavern/state", p.what, p.prefix)
		}
	}
	return ""
}

func refNameProblem(ref string) string {
	switch {
	case strings.HasSuffix(ref, "/"):
		return "it ends with /"
	case strings.HasSuffix(ref, "."):
		return "it ends with ."
	case strings.Contains(ref, "//"):
		return "it contains //"
	case strings.Contains(ref, ".."):
		return "it contains .."
	case strings.Contains(ref, "@{"):
		return "it contains @{"
	}
	for _, r := range ref {
		if r < 0x20 || r == 0x7f {
			return "it contains a control character"
		}
		if strings.ContainsRune(" ~^:?*[\\", r) {
			return fmt.Sprintf("it contains %q", r)
		}
	}
	for _, c := range strings.Split(ref, "/") {
		if strings.HasPrefix(c, ".") {
			return "a component begins with ."
		}
		if strings.HasSuffix(c, ".lock") {
			return "a component ends in .lock"
		}
	}
	return ""
}

// enumHint is "; did you mean X?" for a value near some of an enum's
// (a different case counts: WORKING for working), or "".
func enumHint(value string, enum []string) string {
	near := Near(value, enum)
	if lower := strings.ToLower(value); lower != value && contains(enum, lower) {
		near = append([]string{lower}, slices.DeleteFunc(near, func(s string) bool { return s == lower })...)
	}
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + NearList(near) + "?"
}
