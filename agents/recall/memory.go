package recall

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Memory is one agent-private memory entry (memory/<agent>/<id>.md).
//
// Privacy is structural: every function takes the acting agent and only
// ever reads memory/<agent>/, so an id of another agent's entry is simply
// not found. (It is not secrecy: the files are readable by anyone who can
// read .tavern/.)
type Memory struct {
	ID       string           `json:"id"`
	Agent    string           `json:"agent"`
	Topic    string           `json:"topic"`
	Core     bool             `json:"core"`
	Archived bool             `json:"archived"`
	Created  schema.Timestamp `json:"created"`
	Updated  schema.Timestamp `json:"updated"`
	Text     string           `json:"text"`
	Path     string           `json:"path"`
}

// DefaultTopic is the topic of a memory added without one.
const DefaultTopic = "general"

// MemoryHit is a search or inspect result.
type MemoryHit struct {
	*Memory
	Score float64 `json:"score"`
}

// AddMemory writes a memory for agent. topic must be kebab-case ("" means
// DefaultTopic): another is a *schema.NameError, and nothing is written.
func AddMemory(s *docstore.Store, agent, topic, text string, core bool) (*Memory, error) {
	if err := schema.ValidAgentName(agent); err != nil {
		return nil, err
	}
	if topic == "" {
		topic = DefaultTopic
	}
	// Before the document is made: the schema would refuse the topic as a
	// field of a file that was never written (path:line:col, exit 5).
	if err := schema.ValidKebab("topic", topic); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, ErrEmpty
	}
	d, err := s.CreateEntry(schema.Memory, agent, []docstore.Field{
		{Key: "agent", Value: agent},
		{Key: "topic", Value: topic},
		{Key: "core", Value: core},
		{Key: "archived", Value: false},
	}, text)
	if err != nil {
		return nil, err
	}
	return memoryOf(d), nil
}

func memoryOf(d *docstore.Doc) *Memory {
	m := &Memory{ID: d.String("id"), Agent: d.String("agent"), Topic: d.String("topic"), Core: d.Bool("core"),
		Archived: d.Bool("archived"), Path: d.Path, Text: strings.TrimSpace(string(d.Body()))}
	if m.ID == "" {
		m.ID = d.Name[strings.LastIndexByte(d.Name, '/')+1:]
	}
	m.Created.Time, _ = d.Time("created")
	m.Updated.Time, _ = d.Time("updated")
	return m
}

// MemoryFilter selects memories for ListMemory.
type MemoryFilter struct {
	Topic    string // only this topic
	CoreOnly bool
	Archived bool      // include archived entries
	Since    time.Time // created at or after
}

// ListMemory returns agent's memories, core entries first, then newest
// first. Archived entries are hidden unless f.Archived.
func ListMemory(s *docstore.Store, agent string, f MemoryFilter) ([]*Memory, error) {
	all, err := agentMemories(s, agent)
	if err != nil && Skipped(err) == nil {
		return nil, err
	}
	var out []*Memory
	for _, m := range all {
		if (m.Archived && !f.Archived) || (f.Topic != "" && m.Topic != f.Topic) || (f.CoreOnly && !m.Core) ||
			(!f.Since.IsZero() && m.Created.Before(f.Since)) {
			continue
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Core != out[j].Core {
			return out[i].Core
		}
		return out[i].ID > out[j].ID
	})
	return out, err // err: nil, or the files skipped
}

// KnownTopic reports whether agent has a memory (archived ones too) of
// topic and, if not, the agent's topics near it (schema.Near): a topic is
// a free tag, so a caller warns of a likely typo rather than refusing it.
// Files that do not parse are left out.
func KnownTopic(s *docstore.Store, agent, topic string) (exists bool, near []string, err error) {
	all, err := agentMemories(s, agent)
	if err != nil && Skipped(err) == nil {
		return false, nil, err
	}
	var topics []string
	for _, m := range all {
		if m.Topic == topic {
			return true, nil, nil
		}
		if !slices.Contains(topics, m.Topic) {
			topics = append(topics, m.Topic)
		}
	}
	slices.Sort(topics)
	return false, schema.Near(topic, topics), nil
}

func agentMemories(s *docstore.Store, agent string) ([]*Memory, error) {
	if err := schema.ValidAgentName(agent); err != nil {
		return nil, err
	}
	// Only memory/<agent>/: privacy by construction, and no walk of every
	// other agent's memory.
	paths, err := s.Docs("memory/" + agent)
	if err != nil {
		return nil, err
	}
	var out []*Memory
	var bad []error
	for _, p := range paths {
		d, err := s.Get(p)
		if err != nil {
			if badFile(err) {
				bad = append(bad, err) // reported, skipped: it hides nothing else
				continue
			}
			return nil, err
		}
		out = append(out, memoryOf(d))
	}
	return out, skipped(bad)
}

// GetMemory finds one of agent's memories by id or unique id prefix.
func GetMemory(s *docstore.Store, agent, id string) (*Memory, error) {
	all, err := agentMemories(s, agent)
	if err != nil && Skipped(err) == nil {
		return nil, err
	}
	return pickByID(all, id, func(m *Memory) string { return m.ID }, "memory/"+agent, "memory entry")
}

// pickByID finds the entry whose id is id, or the only one starting with
// it (ids are long; people paste prefixes).
func pickByID[T any](list []T, id string, idOf func(T) string, where, what string) (T, error) {
	var zero T
	var found []T
	for _, x := range list {
		if idOf(x) == id {
			return x, nil
		}
		if id != "" && strings.HasPrefix(idOf(x), id) {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		// Named as the other commands name what they do not find, with
		// the ids a mistyped one is near (a pasted id with a letter off).
		ids := make([]string, 0, len(list))
		for _, x := range list {
			ids = append(ids, idOf(x))
		}
		return zero, &schema.UnknownError{What: what, Name: id, Near: schema.Near(id, ids), Err: fs.ErrNotExist}
	}
	return zero, &fs.PathError{Op: "find", Path: where + "/" + id, Err: fmt.Errorf("%w: %d entries start with %q", docstore.ErrAmbiguous, len(found), id)}
}

// ArchiveMemory marks one of agent's memories archived: hidden from list,
// search, inspect and wake, kept on disk (archived: true, restorable by
// editing the file).
func ArchiveMemory(s *docstore.Store, agent, id string) (*Memory, error) {
	m, err := GetMemory(s, agent, id)
	if err != nil {
		return nil, err
	}
	d, err := s.Update(m.Path, func(d *docstore.Doc) error {
		if err := d.Set("archived", true); err != nil {
			return err
		}
		return d.Set("updated", time.Now())
	})
	if err != nil {
		return nil, err
	}
	return memoryOf(d), nil
}

// memoryEntry is what the index sees of a memory: the topic is a tag (it
// helps a search, it does not make two memories related).
func memoryEntry(m *Memory) IndexEntry {
	return IndexEntry{ID: m.ID, Text: m.Text, Tags: strings.ReplaceAll(m.Topic, "-", " ")}
}

func memoryIndex(list []*Memory) *Index {
	entries := make([]IndexEntry, len(list))
	for i, m := range list {
		entries[i] = memoryEntry(m)
	}
	return BuildIndex(entries)
}

// SearchMemory ranks agent's unarchived memories by keyword similarity to
// query. The index covers only this agent's entries, so word rarity is
// measured within its own memory.
func SearchMemory(s *docstore.Store, agent, query string, limit int) ([]MemoryHit, error) {
	list, err := ListMemory(s, agent, MemoryFilter{})
	if err != nil && Skipped(err) == nil {
		return nil, err
	}
	return memoryHits(list, memoryIndex(list).Search(query, limit)), err
}

// InspectMemory returns one of agent's memories and its most related other
// unarchived memories.
func InspectMemory(s *docstore.Store, agent, id string, limit int) (*Memory, []MemoryHit, error) {
	m, err := GetMemory(s, agent, id)
	if err != nil {
		return nil, nil, err
	}
	list, err := ListMemory(s, agent, MemoryFilter{})
	if err != nil && Skipped(err) == nil {
		return nil, nil, err
	}
	if m.Archived {
		list = append(list, m) // inspecting an archived entry still works
	}
	return m, memoryHits(list, memoryIndex(list).Related(m.ID, limit)), nil
}

func memoryHits(list []*Memory, hits []Hit) []MemoryHit {
	byID := map[string]*Memory{}
	for _, m := range list {
		byID[m.ID] = m
	}
	out := []MemoryHit{}
	for _, h := range hits {
		out = append(out, MemoryHit{Memory: byID[h.ID], Score: h.Score})
	}
	return out
}
