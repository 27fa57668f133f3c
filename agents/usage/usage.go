package usage

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// Record is one spawn's entry in the ledger.
type Record struct {
	Agent      string           `json:"agent"`
	Item       string           `json:"item,omitempty"`
	Queue      string           `json:"queue,omitempty"`
	Pool       string           `json:"pool,omitempty"`
	Role       string           `json:"role,omitempty"`
	Model      string           `json:"model,omitempty"`
	Source     string           `json:"source,omitempty"`
	Outcome    string           `json:"outcome,omitempty"`
	SessionID  string           `json:"session_id,omitempty"`
	Started    schema.Timestamp `json:"started"`
	Ended      schema.Timestamp `json:"ended"`
	Wall       float64          `json:"wall_seconds"`
	CPU        float64          `json:"cpu_seconds"`
	ExitCode   int              `json:"exit_code"`
	TokensIn   int64            `json:"tokens_in"`
	TokensOut  int64            `json:"tokens_out"`
	CacheRead  int64            `json:"tokens_cache_read,omitempty"`
	CacheWrite int64            `json:"tokens_cache_write,omitempty"`
	Cost       *float64         `json:"cost_usd,omitempty"`
	Path       string           `json:"path"`
}

func recordFromDoc(d *docstore.Doc) Record {
	r := Record{Agent: d.String("agent"), Item: d.String("item"), Queue: d.String("queue"), Pool: d.String("pool"), Role: d.String("role"),
		Model: d.String("model"), Source: d.String("source"), Outcome: d.String("outcome"), SessionID: d.String("session_id"), Path: d.Path}
	r.Started.Time, _ = d.Time("started")
	r.Ended.Time, _ = d.Time("ended")
	f := d.Fields()
	r.Wall, r.CPU = num(f["wall_seconds"]), num(f["cpu_seconds"])
	if v, ok := d.Int("exit_code"); ok {
		r.ExitCode = int(v)
	}
	r.TokensIn, _ = d.Int("tokens_in")
	r.TokensOut, _ = d.Int("tokens_out")
	r.CacheRead, _ = d.Int("tokens_cache_read")
	r.CacheWrite, _ = d.Int("tokens_cache_write")
	if v, ok := f["cost_usd"]; ok && v != nil {
		c := num(v)
		r.Cost = &c
	}
	return r
}

func num(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// Filter selects records.
type Filter struct {
	Since, Until time.Time // by start time; zero: unbounded
	Pool         string
	Agent        string
	Item         string
}

func (f Filter) match(r Record) bool {
	switch {
	case !f.Since.IsZero() && r.Started.Before(f.Since):
	case !f.Until.IsZero() && !r.Started.Before(f.Until):
	case f.Pool != "" && r.Pool != f.Pool:
	case f.Agent != "" && r.Agent != f.Agent:
	case f.Item != "" && r.Item != f.Item:
	default:
		return true
	}
	return false
}

// Load reads the ledger's records that match f, oldest first. Records
// that do not parse or validate are returned as errors (path:line:col)
// and left out.
func Load(s *docstore.Store, f Filter) ([]Record, []error) {
	docs, errs := s.List(schema.Usage)
	var out []Record
	for _, d := range docs {
		if ve := d.Validate(false); len(ve) > 0 {
			errs = append(errs, &docstore.ValidationError{Path: d.Path, Errors: ve})
			continue
		}
		r := recordFromDoc(d)
		if f.match(r) {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started.Time) })
	return out, errs
}

// Row is a total over a group of records.
type Row struct {
	Key       string  `json:"key"`
	Runs      int     `json:"runs"`
	Failed    int     `json:"failed"` // runs whose item failed (a child exiting 0 whose merge failed counts)
	Wall      float64 `json:"wall_seconds"`
	CPU       float64 `json:"cpu_seconds"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Cost      float64 `json:"cost_usd"`
	CostRuns  int     `json:"cost_runs"` // runs that reported a cost
}

// Tokens is tokens in plus out.
func (r Row) Tokens() int64 { return r.TokensIn + r.TokensOut }

func (r *Row) add(rec Record) {
	r.Runs++
	if rec.Outcome == "failed" || (rec.Outcome == "" && rec.ExitCode != 0) {
		r.Failed++
	}
	r.Wall = decimalSum(r.Wall, rec.Wall)
	r.CPU = decimalSum(r.CPU, rec.CPU)
	r.TokensIn += rec.TokensIn
	r.TokensOut += rec.TokensOut
	if rec.Cost != nil {
		r.Cost = decimalSum(r.Cost, *rec.Cost)
		r.CostRuns++
	}
}

// decimalSum is a + b to the nanosecond (or nano-dollar): records hold
// milliseconds and cents, and float sums of them printed as
// 0.19299999999999998 in usage --json.
func decimalSum(a, b float64) float64 { return math.Round((a+b)*1e9) / 1e9 }

// Groupings of Summarize.
var Groupings = []string{"agent", "item", "pool", "queue", "model", "day"}

// ErrGrouping is returned for a grouping Summarize does not know.
var ErrGrouping = errors.New("unknown grouping")

// Summarize totals records by agent, item, pool, queue, model or day
// (UTC), sorted by key, and returns the grand total too. Records without
// the grouping's field count under "-".
func Summarize(recs []Record, by string) ([]Row, Row, error) {
	key := map[string]func(Record) string{
		"agent": func(r Record) string { return r.Agent },
		"item":  func(r Record) string { return r.Item },
		"pool":  func(r Record) string { return r.Pool },
		"queue": func(r Record) string { return r.Queue },
		"model": func(r Record) string { return r.Model },
		"day":   func(r Record) string { return r.Started.UTC().Format("2006-01-02") },
	}[by]
	if key == nil {
		return nil, Row{}, fmt.Errorf("%w %q (want %s)%s", ErrGrouping, by, strings.Join(Groupings, ", "), schema.ChoiceHint(by, Groupings))
	}
	rows := map[string]*Row{}
	total := Row{Key: "total"}
	for _, r := range recs {
		k := key(r)
		if k == "" {
			k = "-"
		}
		if rows[k] == nil {
			rows[k] = &Row{Key: k}
		}
		rows[k].add(r)
		total.add(r)
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, total, nil
}

// ResolveItem is the item id ref names, for Filter.Item: an id, QUEUE/ID,
// or a unique prefix of an id, as item show and approve take it (ids are
// long; people paste prefixes). The ids are those of the store's items
// and of the ledger's runs (an item removed since keeps its runs). A
// prefix of several is docstore.ErrAmbiguous (an *fs.PathError listing
// them). A ref that names nothing comes back as given: it counts nothing,
// which Unknown reports.
func ResolveItem(b *queues.Broker, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	recs, _ := Load(b.Store(), Filter{})
	var ids []string
	for _, r := range recs {
		if r.Item != "" {
			ids = append(ids, r.Item)
		}
	}
	if slices.Contains(ids, ref) {
		return ref, nil
	}
	id, err := b.ResolveID(ref)
	if errors.Is(err, docstore.ErrAmbiguous) {
		return "", err
	}
	bare := strings.TrimSuffix(strings.TrimPrefix(ref, "items/"), ".md")
	if strings.Contains(bare, "/") {
		// QUEUE/ID: the queue says which item; the ledger's ids have none.
		if err != nil {
			return ref, nil
		}
		return id, nil
	}
	if err == nil {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	got, err := docstore.MatchPrefix("item", bare, slices.Compact(ids))
	if errors.Is(err, fs.ErrNotExist) {
		return ref, nil
	}
	return got, err
}

// Unknown reports each name f filters by (agent, pool, item) that names
// nothing: no record of the ledger has it and no document is so named.
// Such a filter totals zero, which a typo must not pass for: each comes
// back as a *schema.UnknownError whose Near lists the names (of the
// ledger and of the documents) close to it. Records that do not load are
// Load's to report; they are skipped here.
func Unknown(s *docstore.Store, f Filter) []error {
	if f.Agent == "" && f.Pool == "" && f.Item == "" {
		return nil
	}
	seen := map[string]map[string]bool{"agent": {}, "pool": {}, "item": {}}
	recs, _ := Load(s, Filter{})
	for _, r := range recs {
		seen["agent"][r.Agent] = true
		seen["pool"][r.Pool] = true
		seen["item"][r.Item] = true
	}
	var out []error
	check := func(what, name string, exists func() bool, docs []string) {
		if name == "" || seen[what][name] || exists() {
			return
		}
		names := docs
		for n := range seen[what] {
			if n != "" {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		out = append(out, &schema.UnknownError{What: what, Name: name, Near: schema.Near(name, slices.Compact(names))})
	}
	stat := func(rel string) func() bool {
		return func() bool { _, err := s.Stat(rel); return err == nil }
	}
	if f.Agent != "" {
		check("agent", f.Agent, stat(agents.AgentPath(f.Agent)), agents.AgentNames(s))
	}
	if f.Pool != "" {
		check("pool", f.Pool, stat(agents.PoolPath(f.Pool)), PoolNames(s))
	}
	if f.Item != "" {
		check("item", f.Item, func() bool { _, err := s.Resolve("items/" + f.Item); return err == nil }, nil)
	}
	return out
}

// PoolNames lists the names of the pools that have a document, sorted.
func PoolNames(s *docstore.Store) []string {
	files, _ := s.Names("pools")
	var out []string
	for _, f := range files {
		if n, ok := strings.CutSuffix(f, ".md"); ok && schema.ValidName(n) == nil {
			out = append(out, n)
		}
	}
	return out
}
