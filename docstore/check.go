package docstore

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// Problem is one thing wrong with a document, as Check reports it.
type Problem struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Field   string `json:"field,omitempty"`
	Error   string `json:"error"`   // the message alone
	Message string `json:"message"` // path[:line:col]: [field: ]message, one line
	Unknown bool   `json:"unknown_field,omitempty"`
	// Warning: allowed but probably not meant (an etcd.password tavern.md
	// does not use); it never makes the report invalid.
	Warning bool  `json:"warning,omitempty"`
	Err     error `json:"-"` // the error reported, for errors.Is/As
}

// CheckReport is the outcome of Check.
type CheckReport struct {
	Checked  int       `json:"checked"`
	Problems []Problem `json:"problems"`
}

// Valid reports whether the checked documents are valid: no problems,
// where fields the schema does not know count only when strict.
func (r *CheckReport) Valid(strict bool) bool {
	for _, p := range r.Problems {
		if p.Warning {
			continue
		}
		if !p.Unknown || strict {
			return false
		}
	}
	return true
}

// Check parses and validates documents and runs the installed Checks
// (AddCheck, AddRunCheck) on each one that parses. targets are store-relative paths
// of documents or of directories, walked with Walk; none means the whole
// store. Every problem is reported, one bad file never hides another;
// fields the schema does not know are reported only when strict. The
// error is for a target that cannot be walked at all.
func (s *Store) Check(targets []string, strict bool) (*CheckReport, error) {
	return s.CheckWith(targets, CheckOptions{Strict: strict})
}

// CheckOptions configure CheckWith.
type CheckOptions struct {
	Strict bool // report unknown fields too
	// Progress, if set, is called after each document checked with the
	// count so far and the total (for a progress display).
	Progress func(done, total int)
}

// CheckWith is Check with options.
func (s *Store) CheckWith(targets []string, opt CheckOptions) (*CheckReport, error) {
	strict := opt.Strict
	var paths []string
	add := func(rel string) error { paths = append(paths, rel); return nil }
	if len(targets) == 0 {
		targets = []string{""}
	}
	for _, t := range targets {
		// A directory named like a document is not walked into: it is
		// checked (and reported) as the document it pretends to be, as
		// a walk of the whole store does.
		if t == "" || (s.isDir(t) && !strings.HasSuffix(strings.TrimSuffix(t, "/"), ".md")) {
			if err := s.Walk(t, add); err != nil {
				return nil, err
			}
			continue
		}
		paths = append(paths, t)
	}
	r := &CheckReport{Checked: len(paths), Problems: []Problem{}}
	checks := s.runChecks()
	for i, rel := range paths {
		r.Problems = append(r.Problems, s.checkDoc(rel, strict, checks)...)
		if opt.Progress != nil {
			opt.Progress(i+1, len(paths))
		}
	}
	return r, nil
}

func (s *Store) checkDoc(rel string, strict bool, checks []Check) []Problem {
	d, err := s.Get(rel)
	if err != nil {
		path, line, col := Position(err)
		if path == "" {
			path = rel
		}
		msg, alone := err.Error(), err.Error()
		var pe *fs.PathError
		var perr *ParseError
		switch {
		case errors.As(err, &pe):
			msg, alone = rel+": "+pe.Err.Error(), pe.Err.Error()
		case errors.As(err, &perr) && perr.Error() == msg:
			alone = perr.Msg // Error is the message alone; path:line:col are beside it
		}
		return []Problem{{Path: path, Line: line, Col: col, Error: alone, Message: msg, Err: err}}
	}
	var out []Problem
	for _, e := range d.Validate(strict) {
		out = append(out, Problem{Path: e.Path, Line: e.Line, Col: e.Col, Field: e.Field, Error: e.Msg, Message: e.Error(), Unknown: e.Unknown, Err: e})
	}
	for _, w := range d.Warnings() {
		out = append(out, Problem{Path: w.Path, Line: w.Line, Col: w.Col, Field: w.Field, Error: w.Msg, Message: w.Error(), Warning: true, Err: w})
	}
	for _, c := range checks {
		for _, err := range c(d) {
			path, line, col := Position(err)
			if path == "" {
				path = rel
			}
			p := Problem{Path: path, Line: line, Col: col, Error: err.Error(), Message: err.Error(), Err: err}
			var re *RefError
			var fe *schema.FieldError
			switch {
			case errors.As(err, &re):
				p.Field, p.Warning = re.Field, re.Warning
			case errors.As(err, &fe):
				p.Warning = fe.Warning
			}
			out = append(out, p)
		}
	}
	return out
}
