package recall

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Knowledge is one shared knowledge entry (knowledge/<domain>/<id>.md).
// Any agent may add; contributor records who did.
type Knowledge struct {
	ID          string           `json:"id"`
	Domain      string           `json:"domain"`
	Title       string           `json:"title,omitempty"`
	Contributor string           `json:"contributor"`
	Archived    bool             `json:"archived"`
	Created     schema.Timestamp `json:"created"`
	Updated     schema.Timestamp `json:"updated"`
	Text        string           `json:"text"`
	Path        string           `json:"path"`
}

// KnowledgeHit is a search or inspect result.
type KnowledgeHit struct {
	*Knowledge
	Score float64 `json:"score"`
}

// KnowledgeOptions are AddKnowledgeWith's options.
type KnowledgeOptions struct {
	// NewDomain writes the entry to a domain near an existing one (the
	// domain rule would refuse it as a likely typo).
	NewDomain bool
}

// AddKnowledge writes a knowledge entry in domain (a path-safe name, e.g.
// "architecture", "decision") contributed by contributor. A domain that
// has no entries and is near one that has is refused (*DomainError,
// ErrNearDomain): see InstallRules.
func AddKnowledge(s *docstore.Store, domain, contributor, title, text string) (*Knowledge, error) {
	return AddKnowledgeWith(s, domain, contributor, title, text, KnowledgeOptions{})
}

// AddKnowledgeWith is AddKnowledge with options.
func AddKnowledgeWith(s *docstore.Store, domain, contributor, title, text string, opt KnowledgeOptions) (*Knowledge, error) {
	if err := schema.ValidPlainName("domain", domain); err != nil {
		return nil, err
	}
	if err := schema.ValidAgentName(contributor); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, ErrEmpty
	}
	fields := []docstore.Field{{Key: "domain", Value: domain}}
	if title != "" {
		fields = append(fields, docstore.Field{Key: "title", Value: title})
	}
	fields = append(fields, docstore.Field{Key: "contributor", Value: contributor}, docstore.Field{Key: "archived", Value: false})
	// The rule is the store's (every write path obeys it); checked here
	// too, so a store without the rules installed refuses the same.
	if err := checkDomain(s, "add knowledge", "knowledge/"+domain, domain, opt.NewDomain); err != nil {
		return nil, err
	}
	d, err := s.CreateEntryWith(schema.Knowledge, domain, fields, text, docstore.CreateOptions{Force: opt.NewDomain})
	if err != nil {
		return nil, err
	}
	return knowledgeOf(d), nil
}

// RuleKnowledgeDomain names the rule InstallRules adds.
const RuleKnowledgeDomain = "knowledge/domain"

// InstallRules adds the knowledge domain rule to s: a write that creates a
// knowledge entry (`tavern knowledge add`, `tavern new knowledge`, a file
// written through the library) in a domain that has no entries yet, whose
// name is near an existing domain's (schema.Near: "decisoin" beside
// "decision"), is refused with a *DomainError (ErrNearDomain) unless
// forced (Write.Force, KnowledgeOptions.NewDomain): typos never create
// state. A file written by hand is not a write through the store; it is
// listed under its own domain.
func InstallRules(s *docstore.Store) {
	s.AddRule(RuleKnowledgeDomain, func(w docstore.Write) error {
		if w.Doc == nil || w.Prev != nil || w.Doc.Kind != schema.Knowledge {
			return nil
		}
		_, caps, err := schema.KindOfPath(w.Path)
		if err != nil {
			return nil // the path rule reports it
		}
		return checkDomain(s, "create", w.Path, caps["domain"], w.Force)
	})
}

// checkDomain is the rule for a new entry at path in domain.
func checkDomain(s *docstore.Store, op, path, domain string, newDomain bool) error {
	exists, near, err := KnownDomain(s, domain)
	if err != nil || exists {
		return err
	}
	// A new domain is named as knowledge add names it, forced or not
	// (`tavern new knowledge Bad/x` made one add would refuse); an
	// existing one made before the rule still takes entries.
	if err := schema.ValidPlainName("domain", domain); err != nil {
		return err
	}
	if newDomain || len(near) == 0 {
		return nil
	}
	return &DomainError{Op: op, Path: path, Domain: domain, Near: near, Err: ErrNearDomain}
}

// KnownDomain reports whether the knowledge domain has a directory and,
// when not, the existing domains near its name (schema.NearNew), nearest
// first: a filter or a new entry with that name is most likely a typo.
func KnownDomain(s *docstore.Store, domain string) (exists bool, near []string, err error) {
	domains, err := s.Names("knowledge")
	if err != nil {
		return false, nil, err
	}
	if slices.Contains(domains, domain) {
		return true, nil, nil
	}
	return false, schema.NearNew(domain, domains), nil
}

func knowledgeOf(d *docstore.Doc) *Knowledge {
	k := &Knowledge{ID: d.String("id"), Domain: d.String("domain"), Title: d.String("title"), Contributor: d.String("contributor"),
		Archived: d.Bool("archived"), Path: d.Path, Text: strings.TrimSpace(string(d.Body()))}
	if _, caps, err := schema.KindOfPath(d.Path); err == nil {
		if k.ID == "" {
			k.ID = caps["id"]
		}
		k.Domain = caps["domain"] // the directory is the truth
	}
	k.Created.Time, _ = d.Time("created")
	k.Updated.Time, _ = d.Time("updated")
	return k
}

// KnowledgeFilter selects entries for ListKnowledge.
type KnowledgeFilter struct {
	Domains  []string // only these domains (any if empty)
	Archived bool     // include archived entries
	Since    time.Time
}

// ListKnowledge returns knowledge entries, newest first.
func ListKnowledge(s *docstore.Store, f KnowledgeFilter) ([]*Knowledge, error) {
	// A domain no entry can have ("", ../x) would list nothing, as if
	// there were no knowledge: refused as the name it is. Only that: a
	// domain made before the plain name rule (Arch) is found by its name.
	for _, d := range f.Domains {
		if err := schema.ValidName(d); err != nil {
			if ne := (*schema.NameError)(nil); errors.As(err, &ne) {
				ne.What = "domain"
			}
			return nil, err
		}
	}
	docs, errs := s.List(schema.Knowledge)
	var bad []error
	for _, err := range errs {
		if !badFile(err) {
			return nil, err
		}
		bad = append(bad, err) // reported, skipped: it hides nothing else
	}
	var out []*Knowledge
	for _, d := range docs {
		k := knowledgeOf(d)
		if (k.Archived && !f.Archived) || (len(f.Domains) > 0 && !slices.Contains(f.Domains, k.Domain)) ||
			(!f.Since.IsZero() && k.Updated.Before(f.Since) && k.Created.Before(f.Since)) {
			continue
		}
		out = append(out, k)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, skipped(bad)
}

// GetKnowledge finds an entry by id or unique id prefix.
func GetKnowledge(s *docstore.Store, id string) (*Knowledge, error) {
	all, err := ListKnowledge(s, KnowledgeFilter{Archived: true})
	if err != nil && Skipped(err) == nil {
		return nil, err
	}
	return pickByID(all, id, func(k *Knowledge) string { return k.ID }, "knowledge", "knowledge entry")
}

// ArchiveKnowledge marks an entry archived: hidden, kept.
func ArchiveKnowledge(s *docstore.Store, id string) (*Knowledge, error) {
	k, err := GetKnowledge(s, id)
	if err != nil {
		return nil, err
	}
	d, err := s.Update(k.Path, func(d *docstore.Doc) error {
		if err := d.Set("archived", true); err != nil {
			return err
		}
		return d.Set("updated", time.Now())
	})
	if err != nil {
		return nil, err
	}
	return knowledgeOf(d), nil
}

func knowledgeIndex(list []*Knowledge) *Index {
	entries := make([]IndexEntry, len(list))
	for i, k := range list {
		entries[i] = IndexEntry{ID: k.ID, Title: k.Title, Text: k.Text, Tags: k.Domain}
	}
	return BuildIndex(entries)
}

// SearchKnowledge ranks unarchived entries (of domains, if given) by
// keyword similarity to query.
func SearchKnowledge(s *docstore.Store, query string, domains []string, limit int) ([]KnowledgeHit, error) {
	list, err := ListKnowledge(s, KnowledgeFilter{Domains: domains})
	if err != nil && Skipped(err) == nil {
		return nil, err
	}
	return knowledgeHits(list, knowledgeIndex(list).Search(query, limit)), err
}

// InspectKnowledge returns an entry and its most related other entries.
func InspectKnowledge(s *docstore.Store, id string, limit int) (*Knowledge, []KnowledgeHit, error) {
	k, err := GetKnowledge(s, id)
	if err != nil {
		return nil, nil, err
	}
	list, err := ListKnowledge(s, KnowledgeFilter{})
	if err != nil && Skipped(err) == nil {
		return nil, nil, err
	}
	if k.Archived {
		list = append(list, k)
	}
	return k, knowledgeHits(list, knowledgeIndex(list).Related(k.ID, limit)), nil
}

func knowledgeHits(list []*Knowledge, hits []Hit) []KnowledgeHit {
	byID := map[string]*Knowledge{}
	for _, k := range list {
		byID[k.ID] = k
	}
	out := []KnowledgeHit{}
	for _, h := range hits {
		out = append(out, KnowledgeHit{Knowledge: byID[h.ID], Score: h.Score})
	}
	return out
}
