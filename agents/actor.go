package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"sort"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Person is the name of the person who runs a command without naming an
// agent (no --as, no $TAVERN_AGENT): "user" on every machine (the journal's
// writer field says which host). It passes the agent name rule, so it can
// claim, hold tokens and reservations, send and read messages like an
// agent, but it is no agent: it has no document, no state and no
// liveness lock, so what it claims or holds is a lease. Its direct
// channel is "@user", where questions bubble up to (User). No agent may
// be called "user".
const Person = "user"

// ErrPersonNotAgent is returned when a command that works only for an
// agent (wake, sleep, commit add without AGENT) is run by the person.
var ErrPersonNotAgent = errors.New("acts for an agent: name one with --as AGENT or $TAVERN_AGENT")

// Actor is who a command acts for.
type Actor struct {
	Name  string // an agent's name, or Person
	Agent bool   // Name is an agent with a document (agents/<Name>.md)
	// Via says how the actor was named: "--as", "TAVERN_AGENT", or ""
	// for the person.
	Via string
}

// ResolvePerson is the one rule naming the person who acts through a view
// (tavern ui, serve, export) or decides a gate (approve, reject): name if
// given (--as, --by), else $TAVERN_USER, else the login name when it is a
// valid agent name, else Person. Unlike ResolveActor it names a person,
// who needs no document: the name is recorded as who answered, sent or
// decided.
func ResolvePerson(name string) string {
	if name != "" {
		return name
	}
	if p := os.Getenv("TAVERN_USER"); p != "" {
		return p
	}
	if u, err := user.Current(); err == nil && ValidAgentName(strings.ToLower(u.Username)) == nil {
		return strings.ToLower(u.Username)
	}
	return Person
}

// AgentName is the actor's agent name, or "" for the person (the
// convention of the library's functions that take an optional agent).
func (a Actor) AgentName() string {
	if a.Agent {
		return a.Name
	}
	return ""
}

// ResolveActor is the one rule naming who a command acts for: as (the
// --as flag) if given, else env (the value of $TAVERN_AGENT, which `tavern
// spawn` sets for its child), else the person (Person). A named agent must
// pass the agent name rule (schema.ErrBadAgentName) and have a document:
// an unknown one is a *schema.UnknownError listing the nearest agent
// names, never created. "user" names the person explicitly.
func ResolveActor(s *docstore.Store, as, env string) (Actor, error) {
	name, via := as, "--as"
	if name == "" {
		name, via = env, "TAVERN_AGENT"
	}
	if name == "" {
		return Actor{Name: Person}, nil
	}
	if name == Person {
		return Actor{Name: Person, Via: via}, nil
	}
	if err := AgentExists(s, name); err != nil {
		return Actor{}, fmt.Errorf("%s: %w", via, err)
	}
	return Actor{Name: name, Agent: true, Via: via}, nil
}

// AgentExists returns nil if name is an agent with a document, a
// *NameError for a name outside the rule, and a *schema.UnknownError
// (with the nearest names) if there is no such agent.
func AgentExists(s *docstore.Store, name string) error {
	if err := ValidAgentName(name); err != nil {
		return err
	}
	if name == Person {
		return &schema.NameError{Name: name, Reason: `"user" is the person running tavern, not an agent`, Agent: true}
	}
	abs, err := s.Abs(AgentPath(name))
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return &schema.UnknownError{What: "agent", Name: name, Near: schema.Near(name, AgentNames(s))}
}

// AgentNames lists the names of the agents that have a document, sorted.
func AgentNames(s *docstore.Store) []string {
	abs, err := s.Abs("agents")
	if err != nil {
		return nil
	}
	ents, _ := os.ReadDir(abs)
	var out []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".md")
		if ok && !e.IsDir() && ValidAgentName(n) == nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
