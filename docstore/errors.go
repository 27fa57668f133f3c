package docstore

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

var (
	// ErrNotExist is returned when a document or store does not exist.
	ErrNotExist = fs.ErrNotExist

	// ErrExist is returned by Create when the document already exists.
	ErrExist = fs.ErrExist

	// ErrNoStore is returned by Find and Open when there is no .tavern
	// directory (or it has no tavern.md).
	ErrNoStore = errors.New("no .tavern store found")

	// ErrConflict is returned when an update's base revision is stale: the
	// document changed since the caller read it.
	ErrConflict = errors.New("conflict: document changed since it was read")

	// ErrLost is returned by Claim when another process won the race for
	// the same document. It is a normal outcome, not a failure.
	ErrLost = errors.New("lost the claim race")

	// ErrUnsafePath is returned for paths that leave the store (via "..",
	// absolute paths or symlinks) or name engine-private files.
	ErrUnsafePath = errors.New("path is outside the store")

	// ErrNoteTooLarge is returned by Lock.WriteNote for a note over 4096
	// bytes: a lock's note is a digest, not a document.
	ErrNoteTooLarge = errors.New("lock note too large")

	// ErrInsideStore is returned for a destination of files that are not
	// documents (a backup, exported pages) that lies inside the store.
	ErrInsideStore = errors.New("destination is inside the store")

	// ErrTooLarge is returned for documents larger than MaxDocSize.
	ErrTooLarge = errors.New("document too large")

	// ErrNoFrontmatter is matched by the *ParseError of a file that does
	// not start with a line `---`: plain markdown, not a document (a
	// caller may say how its kind of document is made).
	ErrNoFrontmatter = errors.New("missing frontmatter")

	// ErrAmbiguous is returned when a reference matches several documents.
	ErrAmbiguous = errors.New("reference matches several documents")

	// ErrUneditable is returned by Set, SetNode and Delete when neither a
	// line edit nor re-encoding the frontmatter gives a document that
	// differs only in that field: exotic YAML (custom tags, duplicate keys)
	// that yaml.v3 cannot write back. Nothing is changed; edit by hand.
	ErrUneditable = errors.New("cannot edit this frontmatter automatically (edit the file by hand)")

	// ErrParse is matched by every *ParseError.
	ErrParse = errors.New("cannot parse document")

	// ErrNoField: a field to remove that the document does not have
	// (Doc.Unset); matched by every *NoFieldError.
	ErrNoField = errors.New("no such field")

	// ErrBadRev: a revision to fence a write on (UpdateOptions.IfRev)
	// that is no revision at all (not Revision's 16 lowercase hex
	// digits): bad input, not a document that changed.
	ErrBadRev = errors.New("not a revision")

	// ErrOddFile is matched by every *OddFileError: a path named like a
	// document that is not a regular file this process can read.
	ErrOddFile = errors.New("not a document file")

	// ErrRefused is matched by every *RefusedError: a write a rule
	// (Store.AddRule) refused.
	ErrRefused = errors.New("write refused")

	// ErrBadExpr is matched by every *ExprError: a --where expression
	// that does not parse, or that Cond.CheckKind refuses.
	ErrBadExpr = errors.New("bad --where expression")

	// ErrBadBound is matched by the *ExprError of an expression that
	// parses but orders a field its kind declares by a bound of no type
	// the field can be ordered by (spawns<abc).
	ErrBadBound = errors.New("bound of the wrong type for the field")

	// ErrNote is matched by an error that reports no problem, only a
	// fact its reader should know (a listing answered from the view an
	// earlier command fetched, queues.EngineViewAgeError): returned
	// beside an answer, never instead of one.
	ErrNote = errors.New("note")
)

// ExprError is a --where expression refused before anything is read.
type ExprError struct {
	Op    string // "where"
	Path  string // the documents queried: the kind's plural (agents), "" when no kind is known
	Expr  string // the expression as given (ParseWhere) or as parsed (Cond.String)
	Field string // the field whose bound is refused; "" for one that does not parse
	Why   string
	Err   error // ErrBadBound, or nil for an expression that does not parse
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("%v %q: %s", ErrBadExpr, e.Expr, e.Why)
}

// Unwrap matches ErrBadExpr, and Err when set.
func (e *ExprError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrBadExpr}
	}
	return []error{ErrBadExpr, e.Err}
}

// RefusedError is a write that a rule refused; nothing was written. Err is
// the rule's own error (package agents: a *TransitionError for an illegal
// state, ErrSelfVerify for an agent writing its own commitment's result).
type RefusedError struct {
	Op   string // "create", "update" or "move"
	Path string
	Rule string // the rule's name
	Err  error
}

// Error is the rule's message: it names the document and what is allowed.
func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap makes every RefusedError match ErrRefused and the rule's error.
func (e *RefusedError) Unwrap() []error { return []error{ErrRefused, e.Err} }

// OddFileError is a path named like a document that is not one: a FIFO,
// socket, device, directory or symbolic link (even one pointing inside the
// store), or a regular file this process may not read. Readers that list
// a directory of documents (queue takes and listings, check) skip and
// report it like a parse error; it is never opened if it is a FIFO or
// device, never followed if it is a link, and never changed.
type OddFileError struct {
	Op   string
	Path string
	What string // "a FIFO", "a directory", "a symbolic link", "unreadable (permission denied)"...
	Err  error  // the underlying cause (ErrUnsafePath for a link, fs.ErrPermission...), or nil
}

func (e *OddFileError) Error() string {
	return e.Op + " " + e.Path + ": " + e.What + ", not a document file"
}

// Unwrap matches ErrOddFile and the cause.
func (e *OddFileError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrOddFile}
	}
	return []error{ErrOddFile, e.Err}
}

// oddKind names a file type that is not a regular file, or "".
func oddKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return ""
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return "not a regular file"
}

// oddErr is the error for reading rel whose lstat mode is mode (not a
// regular file), or for a failed open (errno).
func oddErr(rel string, mode uint32, errno error) error {
	switch {
	case errno == unix.EACCES || errno == unix.EPERM:
		return &OddFileError{Op: "read", Path: rel, What: "unreadable (permission denied)", Err: fs.ErrPermission}
	case errno == unix.ELOOP || mode&unix.S_IFMT == unix.S_IFLNK:
		return &OddFileError{Op: "read", Path: rel, What: "a symbolic link", Err: ErrUnsafePath}
	case errno != nil:
		return pathErr("read", rel, errno)
	}
	return &OddFileError{Op: "read", Path: rel, What: oddKind(mode)}
}

// PathError records a failed operation on a document path. Path is
// relative to the store root where one is known.
type PathError = fs.PathError

func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// ParseError is a syntax problem at a position in a document file.
type ParseError struct {
	Path string
	Line int // 1-based; 0 when unknown
	Col  int
	Msg  string
	Err  error // a more specific sentinel (ErrTooLarge, ErrNoFrontmatter), or nil
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes every ParseError match ErrParse, and also Err if set.
func (e *ParseError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrParse, e.Err}
	}
	return []error{ErrParse}
}

// ValidationError lists every schema problem of one document.
type ValidationError struct {
	Path   string
	Errors []*schema.FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "\n")
}

func (e *ValidationError) Unwrap() error { return schema.ErrInvalid }

// ConflictError says which revision the caller expected and which it found.
type ConflictError struct {
	Path string
	Want string // base revision the caller had
	Got  string // current revision on disk
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: conflict: revision is %s, not %s (re-read and retry)", e.Path, e.Got, e.Want)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// RefError is a field of a document that names another document which
// is not in the store (a dangling reference), as a Check reports it: at
// the field's value, with what it means (Why). A Warning is one that may
// be legitimate (an agent another machine made, not synced here yet; a
// record of something since removed): check lists it and stays valid.
// An error matches schema.ErrInvalid (`tavern check` exits 5); both match
// schema.ErrUnknownName.
type RefError struct {
	Path      string
	Line, Col int
	Field     string
	What      string   // "agent", "queue", "item", ...
	Name      string   // the name the field gives
	Near      []string // existing names near it (a typo's likely meaning)
	Why       string
	Warning   bool
}

func (e *RefError) Error() string {
	loc := fmt.Sprintf("%s:%d:%d", e.Path, e.Line, e.Col)
	if e.Warning {
		loc += ": warning"
	}
	msg := fmt.Sprintf("%s: %s: unknown %s %q", loc, e.Field, e.What, e.Name)
	if len(e.Near) > 0 {
		msg += " (did you mean " + schema.NearList(e.Near) + "?)"
	}
	if e.Why != "" {
		msg += ": " + e.Why
	}
	return msg
}

func (e *RefError) Unwrap() []error {
	if e.Warning {
		return []error{schema.ErrUnknownName}
	}
	return []error{schema.ErrUnknownName, schema.ErrInvalid}
}

// Position is where the reference is: its field's value.
func (e *RefError) Position() (string, int, int) { return e.Path, e.Line, e.Col }

// RefAt makes the RefError of field naming what, a name that has no
// document. It is placed at the name: the field's value, the list
// element or the map key that gives it; at the field's line otherwise,
// and at 1:1 for a name the document's path gives (an absent field).
func (d *Doc) RefAt(field, what, name string, near []string, why string, warning bool) *RefError {
	line, col := d.KeyLine(field), 1
	if line == 0 {
		line = 1
	}
	at := func(n *yaml.Node) {
		if n.Line > 0 {
			line, col = n.Line+d.frontLine()-1, n.Column
		}
	}
	if n := d.Get(field); n != nil {
		switch n.Kind {
		case yaml.ScalarNode:
			if n.Value == name {
				at(n)
			} else {
				line = 1 // the name is the path's, not the field's
			}
		case yaml.SequenceNode:
			for _, e := range n.Content {
				if e.Kind == yaml.ScalarNode && e.Value == name {
					at(e)
					break
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					at(n.Content[i])
					break
				}
			}
		}
	}
	return &RefError{Path: d.Path, Line: line, Col: col, Field: field, What: what, Name: name, Near: near, Why: why, Warning: warning}
}

// Positioner is an error of another package that knows where it is (a
// plan's checklist line): Position reports it like the store's own.
type Positioner interface {
	Position() (path string, line, col int)
}

// Position returns path, line and column for errors that have them, for
// one-line messages and JSON error objects.
func Position(err error) (path string, line, col int) {
	var pos Positioner
	var pe *ParseError
	var fe *schema.FieldError
	var ve *ValidationError
	var ce *ConflictError
	var re *RefusedError
	var oe *OddFileError
	var ph *fs.PathError
	switch {
	case errors.As(err, &pe):
		return pe.Path, pe.Line, pe.Col
	case errors.As(err, &fe):
		return fe.Path, fe.Line, fe.Col
	case errors.As(err, &ve) && len(ve.Errors) > 0:
		return ve.Path, ve.Errors[0].Line, ve.Errors[0].Col
	case errors.As(err, &ce):
		return ce.Path, 0, 0
	case errors.As(err, &re):
		return re.Path, 0, 0
	case errors.As(err, &oe):
		// Before PathError: an unreadable file's cause is one, with the
		// absolute path; the odd file is named by its store path.
		return oe.Path, 0, 0
	case errors.As(err, &ph):
		return ph.Path, 0, 0
	case errors.As(err, &pos):
		return pos.Position()
	}
	return "", 0, 0
}

// ErrNested is returned (in a *NestedError) by CheckNested for a store
// that would be created inside the project of another one.
var ErrNested = errors.New("a store already exists above")

// NestedError names the store above the one being created.
type NestedError struct {
	Path     string // the .tavern directory being created
	Above    string // the .tavern directory of the enclosing project
	Worktree string // the main worktree, when Path is in a linked git worktree of it
}

func (e *NestedError) Error() string {
	if e.Worktree != "" {
		return fmt.Sprintf("a store already exists at %s; this is a linked git worktree of %s, and commands in it use that store", e.Above, e.Worktree)
	}
	return fmt.Sprintf("a store already exists at %s; commands below it use that store", e.Above)
}

func (e *NestedError) Unwrap() error { return ErrNested }

// ErrEngineFile is returned when a document operation names a file the
// engine owns and needs: tavern.md (every command reads it), the journal,
// engine-private dot names. Deleting one would break every later command.
var ErrEngineFile = errors.New("an engine file, not a document")

// SkippedError is returned together with a full result by a listing that
// skips files it could not read as documents (they do not parse or
// validate, or are not regular files): the result holds the rest. Errs
// has one error per file, each with its path (and line:col where known).
// errors.Is sees through it (ErrParse...).
type SkippedError struct {
	Errs []error
}

func (e *SkippedError) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap gives the errors of the skipped files.
func (e *SkippedError) Unwrap() []error { return e.Errs }

// NotFoundError is a document that does not exist, with the documents
// beside it whose names are near the one given (Store.NotFound), so that
// a typo in a name is answered with "did you mean". It wraps the error
// the read or write gave (an *fs.PathError), so it matches ErrNotExist.
type NotFoundError struct {
	Op   string
	Path string
	Near []string // references (agents/alice) of existing documents
	Err  error
}

func (e *NotFoundError) Error() string {
	if len(e.Near) == 0 {
		return e.Err.Error()
	}
	return e.Err.Error() + " (did you mean " + schema.NearList(e.Near) + "?)"
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// NoFieldError is a field to remove (Doc.Unset) that the document does
// not have, with the fields it has near it (a typo's likely meaning).
// Nothing was removed, which is what was asked: it is a warning's text.
type NoFieldError struct {
	Op    string
	Path  string
	Field string
	Near  []string
}

func (e *NoFieldError) Error() string {
	msg := fmt.Sprintf("%s: no field %q to %s", e.Path, e.Field, e.Op)
	if len(e.Near) > 0 {
		msg += " (did you mean " + schema.NearList(e.Near) + "?)"
	}
	return msg
}

func (e *NoFieldError) Unwrap() error { return ErrNoField }

// Position gives the document's path to a JSON error object.
func (e *NoFieldError) Position() (string, int, int) { return e.Path, 0, 0 }

// RevError is a revision to fence a write on that is malformed.
type RevError struct {
	Op   string // "update"
	Path string
	Rev  string
}

func (e *RevError) Error() string {
	return fmt.Sprintf("%s: %q is not a revision (16 lowercase hex digits: the rev of `tavern show REF --json`)", e.Path, e.Rev)
}

func (e *RevError) Unwrap() error { return ErrBadRev }

// Position gives the document's path to a JSON error object.
func (e *RevError) Position() (string, int, int) { return e.Path, 0, 0 }

// CloneSuffix and a pid name the directory beside a store (.tavern.clone-
// PID) where `tavern sync --clone` builds it before renaming it into
// place (queues/gitsync.Clone).
const CloneSuffix = ".clone-"

// NoStoreError is ErrNoStore where a `tavern sync --clone` was building
// the store (killed, or still running): Leftover is its directory. The
// cure is to clone again, not `tavern init`, whose store the next clone
// refuses to replace.
type NoStoreError struct {
	Op       string
	Path     string
	Leftover string
}

func (e *NoStoreError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s is what a killed `tavern sync --clone` left (run the clone again: it removes it)", e.Op, e.Path, ErrNoStore, e.Leftover)
}
func (e *NoStoreError) Unwrap() error { return ErrNoStore }

// noStore is ErrNoStore for a store expected at dir (a .tavern directory),
// a *NoStoreError if a clone was building one there.
func noStore(op, dir string, err error) error {
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), filepath.Base(dir)+CloneSuffix+"*")); len(m) > 0 {
		return &NoStoreError{Op: op, Path: dir, Leftover: m[0]}
	}
	return err
}
