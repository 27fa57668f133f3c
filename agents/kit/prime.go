package kit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

// PrimeTokens is the most prime prints, counted as characters / 4 (the
// usual estimate for English text and code in LLM tokenizers).
const PrimeTokens = 1000

// PrimeFile is the file in .tavern/ that replaces or extends the command
// part of prime: its text replaces the default commands; a line
// "{{commands}}" in it is replaced by the default commands (extend), and
// "{{agent}}" anywhere by the agent's name.
const PrimeFile = "PRIME.md"

// primeFileMax bounds PRIME.md's share of the budget.
const primeFileMax = 2000

// list limits: prime is read at the start of every session, so it shows
// the first few of each list and says how to see the rest.
const (
	primeItems     = 5
	primeNext      = 3
	primeQuestions = 5
	primeReserved  = 5
	primeCommits   = 6
	primeGates     = 3
	primeLine      = 140
)

// Command is one of the commands prime teaches, with one example.
type Command struct {
	Does    string `json:"does"`
	Example string `json:"example"`
}

// Prime is what an agent needs to start working: who it is, what it holds,
// what is waiting for it, and how to act. Text renders it in at most
// PrimeTokens tokens; JSON carries the same data, lists uncut.
type Prime struct {
	Agent        string                `json:"agent"`
	Role         string                `json:"role,omitempty"`
	State        string                `json:"state,omitempty"`
	Session      string                `json:"session,omitempty"`
	Items        []agents.WakeItem     `json:"items"`
	Next         []NextItem            `json:"next"`
	Unread       []messages.Unread     `json:"unread"`
	Questions    []agents.WakeQuestion `json:"questions"`
	Reservations []*tuples.Reservation `json:"reservations"`
	Commitments  []*agents.Commitment  `json:"commitments"`
	Core         []*recall.Memory      `json:"core"`
	// Gates are the human gates waiting for a person (package queues):
	// work blocked until someone runs `tavern approve` in their own
	// terminal (agents are refused).
	Gates    []*queues.Gate `json:"gates"`
	Commands []Command      `json:"commands"`
	Usage    string         `json:"usage,omitempty"` // PRIME.md as applied, when there is one
	Errors   []string       `json:"errors,omitempty"`
	// For says whose brief this is: ForAgent here, ForPerson in a
	// PersonPrime, so that a reader of either JSON need not guess from
	// the keys.
	For string `json:"for"`
}

// Whose brief a prime is (the JSON "for").
const (
	ForAgent  = "agent"
	ForPerson = agents.Person
)

// PrimeOptions tune BuildPrime.
type PrimeOptions struct {
	Now time.Time
	// MemoriesOnly leaves out everything but identity and core memories
	// (after a compaction the rest is still in the context).
	MemoriesOnly bool
	// Unregistered primes an agent that may have no document yet: the
	// agent a hooked session becomes when `tavern hook session-start`
	// registers it (`prime --hook-json` given the session's payload). Its
	// own parts are then empty. Otherwise an agent without a document is
	// a *schema.UnknownError: a typo never gets a prime.
	Unregistered bool
}

// BuildPrime gathers the prime of agent. Parts that cannot be read (a
// broken document somewhere) are reported in Errors and left out: prime
// runs from a hook and must not fail a session for one bad file.
func BuildPrime(s *docstore.Store, agent string, opt PrimeOptions) (*Prime, error) {
	if agent == "" {
		return nil, ErrNoAgent
	}
	if err := schema.ValidAgentName(agent); err != nil {
		return nil, err
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	p := &Prime{Agent: agent, Items: []agents.WakeItem{}, Next: []NextItem{}, Unread: []messages.Unread{},
		Questions: []agents.WakeQuestion{}, Reservations: []*tuples.Reservation{}, Commitments: []*agents.Commitment{},
		Core: []*recall.Memory{}, Gates: []*queues.Gate{}, Commands: DefaultCommands(agent), For: ForAgent}
	note := func(what string, err error) {
		if err != nil {
			p.Errors = append(p.Errors, what+": "+err.Error())
		}
	}
	exists := true
	if d, err := s.Get(agents.AgentPath(agent)); err == nil {
		p.Role, p.Session = d.String("role"), d.String("session_id")
		p.State = d.String("state")
	} else if !errors.Is(err, fs.ErrNotExist) {
		note("agent", err) // a broken document: the rest still helps
	} else if !opt.Unregistered {
		return nil, agents.AgentExists(s, agent) // names the nearest agents
	} else {
		exists = false
	}
	mems, err := recall.ListMemory(s, agent, recall.MemoryFilter{CoreOnly: true})
	note("memory", err)
	summaries := 0
	for _, m := range mems {
		if m.Topic == agents.SummaryTopic {
			if summaries++; summaries > 1 {
				continue // the last session's summary is enough here
			}
		}
		p.Core = append(p.Core, m)
	}
	usage, err := readPrimeFile(s, agent, p.Commands)
	note(PrimeFile, err)
	p.Usage = usage
	if opt.MemoriesOnly {
		return p, nil
	}

	items, err := agents.ClaimedItems(s, agent)
	note("items", err)
	if items != nil {
		p.Items = items
	}
	if b, err := queues.Open(s, queues.Options{}); err != nil {
		note("queues", err)
	} else {
		if len(p.Items) == 0 {
			next, err := Next(b, agent, NextOptions{Limit: primeNext, Now: opt.Now, Local: true})
			note("next", err)
			if next != nil {
				p.Next = next
			}
		}
		// The gates with a document (everything made through Tavern): a
		// scan of every item for hand-typed ones is too slow for a hook.
		gates, _ := b.GateDocs(true) // unreadable ones are `tavern check`'s to report
		p.Gates = append(p.Gates, gates...)
		b.Close()
	}
	unread, err := messages.Inbox(s, agent)
	note("inbox", err)
	for _, u := range unread {
		if u.Count > 0 {
			p.Unread = append(p.Unread, u)
		}
	}
	qs, err := agents.OpenQuestions(s, agent)
	note("questions", err)
	if qs != nil {
		p.Questions = qs
	}
	sp, err := tuples.NewSpace(s, tuples.SpaceOptions{NoJournal: true})
	note("reservations", err)
	if err == nil {
		rs, _ := sp.AgentReservations(agent) // unreadable ones are `tavern check`'s to report
		p.Reservations = append(p.Reservations, rs...)
		sp.Close()
	}
	if exists {
		m := &agents.Manager{Store: s}
		cs, err := m.Commitments(agent)
		note("commitments", err)
		if cs != nil {
			p.Commitments = cs
		}
	}
	return p, nil
}

// readPrimeFile returns PRIME.md applied for name, whose default
// commands are cmds ("" when there is no PRIME.md). The agent's brief and
// the person's apply it alike: {{commands}} is the reader's own list,
// {{agent}} the reader's name.
func readPrimeFile(s *docstore.Store, name string, cmds []Command) (string, error) {
	data, err := os.ReadFile(filepath.Join(s.Root(), PrimeFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(string(data))
	if len(text) > primeFileMax {
		text = text[:primeFileMax] + "\n… (" + PrimeFile + " is longer: read .tavern/" + PrimeFile + ")"
	}
	var list strings.Builder
	writeCommands(&list, cmds)
	text = strings.ReplaceAll(text, "{{commands}}", strings.TrimRight(list.String(), "\n"))
	return strings.ReplaceAll(text, "{{agent}}", name), nil
}

// DefaultCommands are the commands prime teaches, for agent.
func DefaultCommands(agent string) []Command {
	as := " --as " + agent
	return []Command{
		{"take the next item (prints ID and ATTEMPT)", "tavern next --take" + as},
		{"report it done, or failed", "tavern item done ID --attempt N --result out.txt  |  tavern item fail ID --attempt N --reason \"why\""},
		// @user: the person's direct channel, which every store has (an
		// agent named in the example might not exist).
		{"send a message (@name: direct)", "tavern send @user \"parser done, see PR\"" + as},
		{"read your messages", "tavern recv @" + agent + as},
		{"ask the user (or --to an agent)", "tavern ask --to user \"Postgres or SQLite?\"" + as},
		{"reserve paths before editing them", "tavern reserve 'src/parser/**'" + as + " --ttl 2h"},
		{"commit to a check (stop waits until it passes)", "tavern commit add " + agent + " --desc \"tests pass\" --assert \"go test ./...\""},
		{"remember something for next time", "tavern memory add" + as + " \"the lexer needs Go 1.26\""},
	}
}

// writeCommandsSection writes a brief's command section: PRIME.md's text
// (usage) where the project has one, else the default list.
func writeCommandsSection(w *strings.Builder, usage string, cmds []Command) {
	w.WriteString("\n## Commands\n")
	if usage != "" {
		w.WriteString(usage + "\n")
	} else {
		writeCommands(w, cmds)
	}
}

func writeCommands(w *strings.Builder, cmds []Command) {
	for _, c := range cmds {
		fmt.Fprintf(w, "- %s: `%s`\n", c.Does, c.Example)
	}
}

// Text renders the prime in at most PrimeTokens tokens (characters / 4):
// the commands always, then the lists, filled in turns — every list's
// first entry before any list's second — so a long list cannot crowd out
// a short one; a cut list ends with how to see the rest.
func (p *Prime) Text() string {
	var head, usage strings.Builder
	role := ""
	if p.Role != "" {
		role = ", role " + p.Role
	}
	fmt.Fprintf(&head, "# Tavern: you are %s%s\n", p.Agent, role)
	fmt.Fprintf(&head, "Act as %s in every tavern command (--as %s). If this is cut off, run `tavern prime --as %s`.\n", p.Agent, p.Agent, p.Agent)
	writeCommandsSection(&usage, p.Usage, p.Commands)
	var secs []*primeSection
	add := func(title string, lines []string, more int, hint string) {
		secs = addSection(secs, title, lines, more, hint)
	}
	var lines []string
	leased := false
	for i, it := range p.Items {
		if i == primeItems {
			break
		}
		lease := ""
		if it.LeaseUntil != "" {
			lease, leased = ", a lease until "+it.LeaseUntil, true
		}
		lines = append(lines, fmt.Sprintf("- %s/%s %q (attempt %d%s)", it.Queue, it.ID, it.Title, it.Attempt, lease))
	}
	itemsTitle := "Your items (report with `tavern item done|fail ID --attempt N`)"
	if leased {
		// A lease lapses and the item goes back to the queue for another
		// agent: the one holding it must know to renew it.
		itemsTitle = "Your items (report with `tavern item done|fail ID --attempt N`; renew a lease before it ends, `tavern item renew ID --attempt N --as " + p.Agent + "`, or it goes back to the queue)"
	}
	add(itemsTitle, lines, max(0, len(p.Items)-primeItems), "tavern ls items --where claimed_by="+p.Agent)
	lines = nil
	for _, it := range p.Next {
		lines = append(lines, it.primeLine())
	}
	add("Next, held by nobody (take with `tavern next --take --as "+p.Agent+"`)", lines, 0, "")
	lines = nil
	if len(p.Unread) > 0 {
		parts := make([]string, len(p.Unread))
		for i, u := range p.Unread {
			parts[i] = fmt.Sprintf("%s %d", u.Channel, u.Count)
		}
		lines = append(lines, fmt.Sprintf("%s; read with `tavern recv %s --as %s`", strings.Join(parts, ", "), p.Unread[0].Channel, p.Agent))
	}
	add("Unread messages", lines, 0, "")
	lines = nil
	for i, q := range p.Questions {
		if i == primeQuestions {
			break
		}
		lines = append(lines, fmt.Sprintf("- %s from %s: %s", q.ID, q.From, oneLine(q.Text)))
	}
	add("Questions to you (answer with `tavern answer ID \"...\" --as "+p.Agent+"`)", lines, max(0, len(p.Questions)-primeQuestions), "tavern questions --as "+p.Agent)
	lines = nil
	for i, r := range p.Reservations {
		if i == primeReserved {
			break
		}
		until := "until unreserved"
		if !r.Expires.IsZero() {
			until = "until " + schema.FormatTime(r.Expires.Time)
		}
		lines = append(lines, fmt.Sprintf("- %s %s", r.Glob, until))
	}
	add("Your reservations", lines, max(0, len(p.Reservations)-primeReserved), "tavern reservations")
	lines = nil
	for i, c := range p.Commitments {
		if i == primeCommits {
			break
		}
		lines = append(lines, fmt.Sprintf("- [%s] %s: `%s`", c.Status, c.Description, c.Assertion))
	}
	add("Your commitments (checked before you may stop)", lines, max(0, len(p.Commitments)-primeCommits), "tavern commit ls "+p.Agent)
	lines = nil
	for i, g := range p.Gates {
		if i == primeGates {
			break
		}
		lines = append(lines, fmt.Sprintf("- %s: item %s %q (%s)", g.ID, g.Item, g.Title, oneLine(g.Reason)))
	}
	add("Waiting for a person (they run `tavern approve ID` in their own terminal; agents are refused)", lines, max(0, len(p.Gates)-primeGates), "tavern gate ls")
	lines = nil
	for _, m := range p.Core {
		lines = append(lines, fmt.Sprintf("- [%s] %s", m.Topic, oneLine(m.Text)))
	}
	add("Core memories", lines, 0, "tavern memory ls --core --as "+p.Agent)
	return fillBudget(head.String(), usage.String(), secs)
}

// primeSection is one list of a prime: its lines, the entries beyond them
// (not even offered), how to see the rest, and how many lines fit.
type primeSection struct {
	title string
	lines []string
	more  int
	hint  string
	shown int
}

// addSection adds a list to secs unless it is empty.
func addSection(secs []*primeSection, title string, lines []string, more int, hint string) []*primeSection {
	if len(lines) == 0 {
		return secs
	}
	return append(secs, &primeSection{title: title, lines: lines, more: more, hint: hint})
}

// fillBudget renders head, the sections and tail in at most PrimeTokens
// tokens: head and tail always, the lists filled in turns — every list's
// first entry before any list's second — so a long list cannot crowd out
// a short one; a cut list ends with how to see the rest.
func fillBudget(head, tail string, secs []*primeSection) string {
	budget := PrimeTokens * 4
	for _, sec := range secs {
		for i, l := range sec.lines {
			sec.lines[i] = clipLine(l)
		}
	}
	render := func(sec *primeSection) string {
		if sec.shown == 0 {
			return ""
		}
		var b strings.Builder
		b.WriteString("\n## " + sec.title + "\n")
		for _, l := range sec.lines[:sec.shown] {
			b.WriteString(l + "\n")
		}
		if rest := len(sec.lines) - sec.shown + sec.more; rest > 0 {
			b.WriteString(moreLine(rest, sec.hint) + "\n")
		}
		return b.String()
	}
	total := len(head) + len(tail)
	for grew := true; grew; {
		grew = false
		for _, sec := range secs {
			if sec.shown == len(sec.lines) {
				continue
			}
			before := len(render(sec))
			sec.shown++
			if total-before+len(render(sec)) > budget {
				sec.shown--
				continue
			}
			total += len(render(sec)) - before
			grew = true
		}
	}
	var body strings.Builder
	for _, sec := range secs {
		body.WriteString(render(sec))
	}
	return head + body.String() + tail
}

func moreLine(n int, hint string) string {
	if hint == "" {
		return fmt.Sprintf("… %d more", n)
	}
	return fmt.Sprintf("… %d more: `%s`", n, hint)
}

func clipLine(s string) string {
	r := []rune(s)
	if len(r) > primeLine*2 {
		return string(r[:primeLine*2-1]) + "…"
	}
	return s
}

// oneLine shortens text to its first line and at most primeLine
// characters.
func oneLine(text string) string {
	line, _, more := strings.Cut(strings.TrimSpace(text), "\n")
	r := []rune(line)
	if len(r) > primeLine {
		return string(r[:primeLine-1]) + "…"
	}
	if more {
		return line + " …"
	}
	return line
}

// HookJSON wraps text in the SessionStart envelope Claude Code, Codex CLI
// and Gemini CLI share.
func HookJSON(text string) map[string]any {
	return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "SessionStart", "additionalContext": text}}
}

// NoSessionNote heads the person's brief a hook got (prime --hook-json
// with a payload) when neither the payload's session id nor --as nor
// $TAVERN_AGENT named an agent.
const NoSessionNote = "(Asked by a hook whose payload has no session id, with no --as or $TAVERN_AGENT: this is the person's brief, not an agent's. An agent's session sets TAVERN_AGENT, or runs `tavern prime --as NAME`.)"

// HookJSONFailed is the SessionStart envelope of a brief that could not
// be made (an --as naming no agent, a broken tavern.md): what went wrong,
// for the model (additionalContext) and the user (systemMessage, which
// Claude Code, Codex CLI and Gemini CLI all show), since a hook's stderr
// reaches neither and its exit status must not stop the session.
func HookJSONFailed(msg string) map[string]any {
	head := "Tavern could not brief this session: " + msg + "."
	return map[string]any{
		"hookSpecificOutput": map[string]any{"hookEventName": "SessionStart",
			"additionalContext": head + " Until the user says which agent this session is, do not act as one in tavern commands; `tavern prime --as NAME` briefs an agent, `tavern prime` the person."},
		"systemMessage": head,
	}
}
