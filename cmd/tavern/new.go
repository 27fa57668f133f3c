package main

import (
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

func newNewCommand() *cli.Command {
	return &cli.Command{
		Name:      "new",
		Usage:     "create a document",
		ArgsUsage: "KIND NAME [field=value...]",
		Description: `Creates .tavern/<kind dir>/<NAME>.md with the kind's defaults, then the given
fields. Values are YAML: n=3 is an integer, tags=[a,b] a list, note='"3"' a string;
text that is not a one-line YAML value (title=Fix #12, note=a: b) stays text.
If the document exists nothing is written and the exit code is 4 (conflict:
another writer got there first), so create-if-absent scripts can tell it from
other failures (1). Nothing is written if it would be invalid: a field=value
the kind refuses (topic=Bad for a memory) or a required field not given is a
usage error naming the field and the value given (exit 2; set and edit, whose
file exists, exit 5 with its path:line:col), as is an unusable NAME (../x,
.hidden, a/b for a one-part kind).
--body FILE or --body - (stdin) sets the markdown body, after one blank line.

Examples:
   tavern new agent alice role=reviewer queue=build
   tavern new constitution reviewer --body reviewer.md
   echo "Remember the parser rewrite" | tavern new memory alice/parser-note topic=parser --body -`,
		Flags:  []cli.Flag{bodyFlag(), jsonFlag()},
		Action: runNew,
	}
}

func runNew(c *cli.Context) error {
	if c.NArg() < 2 {
		return usageErr("new takes KIND NAME [field=value...]")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	k, err := schema.Lookup(c.Args().Get(0))
	if err != nil {
		return err
	}
	name := c.Args().Get(1)
	rel, err := k.Path(name, nil)
	if err != nil {
		return err
	}
	assigns, err := parseAssignments(c.Args().Slice()[2:])
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if k == schema.Agent {
		return newAgent(c, s, name, assigns, body)
	}
	if k == schema.Tuple {
		if typ, _, _ := strings.Cut(name, "/"); typ != "" {
			if err := tuples.EngineType("new", typ); err != nil {
				return err
			}
		}
	}
	said := fieldHints(c, k, name, assigns)
	// An item's id, queue and priority are its path's (the rule refuses
	// others): `new item q/p05-x` is id p05-x, queue q, priority 5.
	var fromPath []docstore.Field
	if k == schema.Item {
		fromPath = queues.PathFields(rel)
	}
	// A kind named by id (questions/{id}.md, memory/{agent}/{id}.md...)
	// takes its id from the name given: its commands find it by id (a
	// question made with a random id could not be answered).
	var id string
	if caps, ok := k.Match(rel); ok {
		id = caps["id"]
	}
	d, err := docstore.NewDoc(k, docstore.Template{ID: id, Name: name[strings.LastIndex(name, "/")+1:], Fields: fromPath, Defaults: true, Body: body})
	if err != nil {
		return err
	}
	for _, a := range assigns {
		if err := d.SetYAML(a[0], a[1]); err != nil {
			return err
		}
	}
	if err := s.Create(rel, d); err != nil {
		return notWritten(k, name, rel, assigns, err)
	}
	said()
	if c.Bool("json") {
		return printJSON(c, docJSON(s, d, true))
	}
	outf(c, "%s\n", rel)
	return nil
}

// fieldHints returns what warns, once the document is written, of the
// field=value arguments whose field is one letter from one of k's (stat
// for state): set's warning (field_typo_hints), since new writes the typo
// as a field of its own just as set does. Not called when the write
// fails: nothing was written.
func fieldHints(c *cli.Context, k *schema.Kind, name string, assigns [][2]string) func() {
	var hints []error
	seen := map[string]bool{}
	for _, a := range assigns {
		if seen[a[0]] {
			continue
		}
		seen[a[0]] = true
		if err := k.FieldHint(a[0], "", false); err != nil {
			hints = append(hints, err)
		}
	}
	return func() {
		for _, h := range hints {
			warnf(c, nil, "new %s %s: %w", k.Name, name, h)
		}
	}
}

// notWritten turns the schema's refusal of the new document at rel into
// a *fieldArgError naming the field=value arguments at fault: the store
// reports it at a line:col of a file that was never written. Other
// errors are returned as they are.
func notWritten(k *schema.Kind, name, rel string, assigns [][2]string, err error) error {
	var ve *docstore.ValidationError
	if !errors.As(err, &ve) || ve.Path != rel {
		return err
	}
	given := map[string]string{}
	for _, a := range assigns {
		given[a[0]] = a[1] // the last one given is the one set
	}
	fe := &fieldArgError{Op: "new " + k.Name + " " + name, Path: rel, Kind: k.Name}
	for _, e := range ve.Errors {
		v, ok := given[e.Field]
		switch {
		case ok:
			fe.Errs = append(fe.Errs, e.Field+"="+v+": "+e.Msg)
		case e.Field != "":
			fe.Errs = append(fe.Errs, e.Field+": "+e.Msg)
		default:
			fe.Errs = append(fe.Errs, e.Msg)
		}
	}
	return fe
}

// newAgent is `new agent`: the same document as `agent new` (the agent
// manager writes it: applied state, constitution hash, sections,
// journal), with the given fields set on it before it is written.
func newAgent(c *cli.Context, s *docstore.Store, name string, assigns [][2]string, body []byte) error {
	m, err := agents.NewManager(s)
	if err != nil {
		return err
	}
	defer m.Close()
	spec := agents.AgentSpec{Name: name}
	var rest [][2]string
	for _, a := range assigns {
		switch a[0] {
		case "role":
			spec.Role = a[1]
		case "parent":
			spec.Parent = a[1]
		default:
			rest = append(rest, a)
		}
	}
	spec.Edit = func(d *docstore.Doc) error {
		for _, a := range rest {
			if err := d.SetYAML(a[0], a[1]); err != nil {
				return err
			}
		}
		if body != nil {
			d.SetBody(append([]byte("\n"), body...))
		}
		return nil
	}
	said := fieldHints(c, schema.Agent, name, assigns)
	a, err := m.CreateAgent(spec)
	if err != nil {
		return notWritten(schema.Agent, name, agents.AgentPath(name), assigns, err)
	}
	said()
	d, err := s.Get(agents.AgentPath(a.Name))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, docJSON(s, d, true))
	}
	outf(c, "%s\n", d.Path)
	return nil
}
