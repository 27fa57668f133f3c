package schema

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownKind is returned (wrapped in *UnknownKindError) when a kind
// name or a document path matches no registered kind.
var ErrUnknownKind = errors.New("unknown kind")

// ErrInvalidName is returned (wrapped in *NameError) when a name cannot be
// used as a path segment.
var ErrInvalidName = errors.New("invalid name")

// ErrBadAgentName is returned (wrapped) for a name outside the agent name
// rule (ValidAgentName).
var ErrBadAgentName = errors.New("invalid agent name")

// ErrInvalid is matched by every *FieldError, so callers can test
// errors.Is(err, schema.ErrInvalid) for "the document does not validate".
var ErrInvalid = errors.New("invalid document")

// UnknownKindError names the kind or the path that matched nothing.
type UnknownKindError struct {
	Name string   // the kind name given, if any
	Path string   // the document path given, if any
	Near []string // kind names near Name (did you mean)
}

func (e *UnknownKindError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s: not a document of any known kind", e.Path)
	}
	if len(e.Near) > 0 {
		return fmt.Sprintf("unknown kind %q (did you mean %s?)", e.Name, NearList(e.Near))
	}
	return fmt.Sprintf("unknown kind %q", e.Name)
}

func (e *UnknownKindError) Unwrap() error { return ErrUnknownKind }

// NameError explains why a name was refused. Every NameError matches
// ErrInvalidName; one from the agent name rule matches ErrBadAgentName too.
type NameError struct {
	Name   string
	Reason string
	Agent  bool   // refused by ValidAgentName
	What   string // refused by ValidPlainName or ValidKebab: what the name is of ("plan", "topic")
}

func (e *NameError) Error() string {
	switch {
	case e.Agent:
		return fmt.Sprintf("invalid agent name %q: %s", e.Name, e.Reason)
	case e.What != "":
		return fmt.Sprintf("invalid %s name %q: %s", e.What, e.Name, e.Reason)
	}
	return fmt.Sprintf("invalid name %q: %s", e.Name, e.Reason)
}

func (e *NameError) Unwrap() []error {
	if e.Agent {
		return []error{ErrBadAgentName, ErrInvalidName}
	}
	return []error{ErrInvalidName}
}

// FieldError is one validation problem at a position in a document.
type FieldError struct {
	Path    string // document path; set by the caller that knows it
	Line    int
	Col     int
	Field   string // empty for problems with the document as a whole
	Msg     string
	Unknown bool // an unknown field, reported only in strict mode
	Warning bool // allowed but probably not meant (Kind.Warnings): no refusal
}

func (e *FieldError) Error() string {
	loc := fmt.Sprintf("%d:%d", e.Line, e.Col)
	if e.Path != "" {
		loc = e.Path + ":" + loc
	}
	if e.Warning {
		loc += ": warning"
	}
	if e.Field == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Field + ": " + e.Msg
}

// Unwrap: a warning is no invalid value.
func (e *FieldError) Unwrap() error {
	if e.Warning {
		return nil
	}
	return ErrInvalid
}

// ErrUnknownName is matched by every *UnknownError: a name (an agent, a
// channel, a queue) that should name something existing names nothing.
// Typos never create state: the caller refuses, and creation is explicit.
var ErrUnknownName = errors.New("unknown name")

// UnknownError is a name that names nothing, with the existing names
// nearest to it (Near, nearest first) for a "did you mean" hint. It
// matches ErrUnknownName and, when set, Err: a package's own sentinel
// (queues.ErrUnknownQueue), so older checks keep working.
type UnknownError struct {
	What string   // "agent", "channel", "queue"...
	Name string   // the name given
	Near []string // existing names close to Name
	Err  error    // a package sentinel, or nil
}

func (e *UnknownError) Error() string { return fmt.Sprintf("unknown %s %q", e.What, e.Name) }

func (e *UnknownError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrUnknownName, e.Err}
	}
	return []error{ErrUnknownName}
}

// ErrLikelyTypo is matched by every *HintError.
var ErrLikelyTypo = errors.New("likely typo")

// HintError says why a field name or value given for a kind looks like a
// typo (Kind.FieldHint): a name that is none of the kind's fields but one
// letter from one (Near), or a value outside a field's enum (Enum). It is
// a warning's text: the field may be the user's own, the query may mean it.
type HintError struct {
	Kind  string
	Field string
	Value string   // set for a value outside Enum
	Near  []string // fields the name is one letter from
	Enum  []string // the values the field takes
}

func (e *HintError) Error() string {
	if len(e.Enum) > 0 {
		return fmt.Sprintf("%s %q is not one of %s: no valid %s document has it", e.Field, e.Value, strings.Join(e.Enum, ", "), e.Kind) + enumHint(e.Value, e.Enum)
	}
	return fmt.Sprintf("%q is not a field of %s documents (did you mean %s?)", e.Field, e.Kind, NearList(e.Near))
}

func (e *HintError) Unwrap() error { return ErrLikelyTypo }
