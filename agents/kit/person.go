package kit

import (
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// primeNeeds bounds the Needs-you lines the person's prime offers
// before the budget does.
const primeNeeds = 12

// PersonNeed is one thing only a person can unblock, as the views'
// Needs-you lens says it (agents/view.Need: a gate waiting for a
// decision, a question to the user, a dead item, a failed agent...).
// The caller gives them: package kit does not build views.
type PersonNeed struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	What  string `json:"what"`
	Why   string `json:"why,omitempty"`
	Do    string `json:"do"`
	Path  string `json:"path,omitempty"`
	Agent string `json:"agent,omitempty"`
	Text  string `json:"text,omitempty"` // markdown: the question, the failing output...
}

// PersonPrime is the prime of the person at a shell, who is no agent (no
// --as, no $TAVERN_AGENT, no session): what waits on them, the items
// nobody holds, and the commands only a person runs. Text renders it in
// at most PrimeTokens tokens; JSON carries the same data, lists uncut.
type PersonPrime struct {
	Person   string       `json:"person"`
	Needs    []PersonNeed `json:"needs_you"`
	Next     []NextItem   `json:"next"`
	Commands []Command    `json:"commands"`
	Usage    string       `json:"usage,omitempty"` // PRIME.md as applied, as in an agent's Prime
	Errors   []string     `json:"errors,omitempty"`
	For      string       `json:"for"` // ForPerson
	// Why says why a hook got the person's brief rather than an agent's
	// (PersonPrimeOptions.Why): a payload without a session id, say.
	Why string `json:"why,omitempty"`
}

// PersonPrimeOptions tune BuildPersonPrime.
type PersonPrimeOptions struct {
	Now time.Time
	// Why is said at the top of the brief when it was asked for as an
	// agent's might have been (a hook whose payload named no session):
	// the reader must not take it for their own agent's.
	Why string
}

// BuildPersonPrime gathers the person's prime from needs (the Needs-you
// lens) and the queues; person is the name the person acts under
// (agents.ResolvePerson). Parts that cannot be read are reported in Errors
// and left out, as BuildPrime's.
func BuildPersonPrime(s *docstore.Store, person string, needs []PersonNeed, opt PersonPrimeOptions) *PersonPrime {
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	if person == "" {
		person = agents.Person
	}
	p := &PersonPrime{Person: person, Needs: needs, Next: []NextItem{}, Commands: PersonCommands(), For: ForPerson, Why: opt.Why}
	if p.Needs == nil {
		p.Needs = []PersonNeed{}
	}
	// The project's PRIME.md speaks to whoever works here, the person
	// too: applied as for an agent, with the person's own commands for
	// {{commands}} and "user" (the name --as takes for the person) for
	// {{agent}}, so that a command it teaches works as written.
	usage, err := readPrimeFile(s, agents.Person, p.Commands)
	if err != nil {
		p.Errors = append(p.Errors, PrimeFile+": "+err.Error())
	}
	p.Usage = usage
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		p.Errors = append(p.Errors, "queues: "+err.Error())
		return p
	}
	defer b.Close()
	// Every queue by priority, as `tavern next` lists them for the person.
	next, err := Next(b, "", NextOptions{Limit: primeNext, Now: now, Local: true})
	if err != nil {
		p.Errors = append(p.Errors, "next: "+err.Error())
	}
	if next != nil {
		p.Next = next
	}
	return p
}

// PersonCommands are the commands the person's prime teaches: the
// decisions only a person makes, each with one example.
func PersonCommands() []Command {
	return []Command{
		{"approve a gate, or reject it with a reason", "tavern approve GATE  |  tavern reject GATE --reason \"why\""},
		{"answer a question", "tavern answer QUESTION \"use SQLite\""},
		{"retry a dead item (attempts reset)", "tavern item retry ITEM"},
		{"respawn a failed agent (to idle)", "tavern agent state NAME idle"},
		{"take an item yourself", "tavern next --take"},
		{"watch it all live: needs you, agents, queues", "tavern ui"},
	}
}

// Text renders the person's prime in at most PrimeTokens tokens, as
// Prime.Text does an agent's.
func (p *PersonPrime) Text() string {
	head := "# Tavern: you are the person (" + p.Person + "), not an agent\n" +
		"Agents cannot approve gates or answer for you. If this is cut off, run `tavern prime` or `tavern ui`.\n"
	if p.Why != "" {
		head += p.Why + "\n"
	}
	var tail strings.Builder
	writeCommandsSection(&tail, p.Usage, p.Commands)
	var secs []*primeSection
	var lines []string
	for i, n := range p.Needs {
		if i == primeNeeds {
			break
		}
		line := "- " + n.What
		if n.Kind == "question" && n.Text != "" {
			line += ": " + oneLine(n.Text)
		}
		// The line is clipped at its end: the why gives way, so that
		// what to do (the command, with its ids) is never cut off.
		do := " → " + n.Do
		if room := primeLine*2 - len([]rune(line)) - len([]rune(do)) - 3; n.Why != "" && room > 20 {
			why := []rune(oneLine(n.Why))
			if len(why) > room {
				why = append(why[:room-1], '…')
			}
			line += " (" + string(why) + ")"
		}
		lines = append(lines, line+do)
	}
	secs = addSection(secs, "Needs you", lines, max(0, len(p.Needs)-primeNeeds), "tavern ui --json --lens needs")
	lines = nil
	for _, it := range p.Next {
		lines = append(lines, it.primeLine())
	}
	secs = addSection(secs, "Next, held by nobody (take one with `tavern next --take`)", lines, 0, "tavern next")
	if len(p.Needs) == 0 {
		head += "\nNothing waits on you.\n"
	}
	return fillBudget(head, tail.String(), secs)
}
