package recall

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rankCorpus is the fixed corpus of the ranking golden test: 36 entries in
// four domains (the tags), short ids so the golden file reads well.
var rankCorpus = []IndexEntry{
	{ID: "pg-pool", Title: "PostgreSQL connection pool", Text: "The API keeps at most 20 PostgreSQL connections in its pool; pgbouncer sits in front in production.", Tags: "architecture"},
	{ID: "pg-upgrade", Title: "Upgrading PostgreSQL", Text: "Major PostgreSQL upgrades use pg_upgrade with --link; take a base backup first.", Tags: "ops"},
	{ID: "pg-choice", Title: "Why PostgreSQL", Text: "We chose PostgreSQL over MySQL for transactional DDL and JSONB.", Tags: "decision"},
	{ID: "db-migrations", Title: "Database migrations", Text: "Schema migrations run at deploy time, one transaction each; never edit an applied migration.", Tags: "ops"},
	{ID: "db-backups", Title: "Backups of the databases", Text: "Each database is dumped nightly; dumps are kept 30 days and restored monthly as a drill.", Tags: "ops"},
	{ID: "db-tests", Title: "Tests against a real database", Text: "Integration tests start a throwaway database in a container; no mocks of the storage layer.", Tags: "testing"},
	{ID: "sqlite-local", Title: "SQLite for local tools", Text: "Local command line tools keep their state in SQLite, one file per user.", Tags: "decision"},
	{ID: "lock-files", Title: "Lock files", Text: "Lock files live under .locks and are never deleted while held; acquirers re-check the inode after flock.", Tags: "architecture"},
	{ID: "flock-nfs", Title: "flock on NFS", Text: "On NFS flock is emulated with POSIX locks; a partitioned client can lose its lock. Use fencing tokens.", Tags: "architecture"},
	{ID: "claim-rename", Title: "Claims", Text: "A claim is a rename from pending to claimed; exactly one racer wins the rename, losers get ENOENT.", Tags: "architecture"},
	{ID: "durable-write", Title: "Durable writes", Text: "Durable write: temp file, fsync, rename, fsync the directory. A crash leaves old or new file.", Tags: "architecture"},
	{ID: "chunk-format", Title: "Message chunks", Text: "Message chunks hold up to one hundred messages; each message is a section with its id.", Tags: "architecture"},
	{ID: "inotify", Title: "inotify limits", Text: "inotify does not recurse and its queue overflows; the watcher rescans on overflow.", Tags: "architecture"},
	{ID: "lease", Title: "Leases", Text: "A lease expires unless renewed by a heartbeat; the fencing token rejects a stale holder's writes.", Tags: "architecture"},
	{ID: "retry-backoff", Title: "Retries", Text: "Failed HTTP calls are retried with exponential backoff and jitter, at most five attempts.", Tags: "decision"},
	{ID: "rate-limit", Title: "Rate limiting", Text: "The public API allows 100 requests per minute per token; bursts are smoothed with a token bucket.", Tags: "architecture"},
	{ID: "cache-redis", Title: "Redis cache", Text: "Hot reads are cached in Redis for 60 seconds; writes invalidate the cached keys.", Tags: "architecture"},
	{ID: "cache-invalidation", Title: "Cache invalidation rules", Text: "Invalidate on write, never on a timer alone; stale caches caused the March outage.", Tags: "decision"},
	{ID: "deploy-canary", Title: "Canary deploys", Text: "Deploying to production goes through a 5% canary for ten minutes before the full rollout.", Tags: "ops"},
	{ID: "deploy-rollback", Title: "Rollback", Text: "A failed deploy is rolled back with the previous image tag; migrations must stay backward compatible.", Tags: "ops"},
	{ID: "logging", Title: "Structured logging", Text: "Services log JSON lines with a request id; never log secrets or tokens.", Tags: "decision"},
	{ID: "tracing", Title: "Tracing", Text: "OpenTelemetry traces are sampled at 10%; every request id is a trace attribute.", Tags: "ops"},
	{ID: "flaky-tests", Title: "Flaky tests", Text: "A flaky test is quarantined within a day and fixed within a week; retries hide bugs.", Tags: "testing"},
	{ID: "race-detector", Title: "Race detector", Text: "CI runs go test -race on every package; data races fail the build.", Tags: "testing"},
	{ID: "fuzzing", Title: "Fuzzing parsers", Text: "Every parser has a fuzz target; crashers become regression tests in testdata.", Tags: "testing"},
	{ID: "golden-files", Title: "Golden files", Text: "Golden files are rewritten with -update and reviewed in the diff.", Tags: "testing"},
	{ID: "code-review", Title: "Code review", Text: "Every change needs one approving review; the author merges.", Tags: "decision"},
	{ID: "feature-flags", Title: "Feature flags", Text: "New behaviour ships dark behind a flag and is enabled per tenant.", Tags: "decision"},
	{ID: "auth-tokens", Title: "Authentication tokens", Text: "Access tokens expire after 15 minutes; refresh tokens after 30 days and rotate on use.", Tags: "architecture"},
	{ID: "secrets", Title: "Secrets", Text: "Secrets come from the vault at start; nothing secret is committed or logged.", Tags: "ops"},
	{ID: "search-index", Title: "Search ranking", Text: "The keyword index ranks entries with BM25 over stemmed words.", Tags: "architecture"},
	{ID: "timezones", Title: "Time zones", Text: "Times are stored in UTC and rendered in the user's zone.", Tags: "decision"},
	{ID: "http-timeouts", Title: "HTTP timeouts", Text: "Every outgoing HTTP call has a deadline; the default is five seconds.", Tags: "architecture"},
	{ID: "queue-priority", Title: "Queue priorities", Text: "Items sort by priority then age; a starving queue is served by weighted stealing.", Tags: "architecture"},
	{ID: "oncall", Title: "On-call", Text: "The on-call engineer acknowledges pages within 15 minutes and writes the incident report.", Tags: "ops"},
	{ID: "indexes", Title: "Index before you query", Text: "Every query on a large table needs an index; EXPLAIN ANALYZE before merging.", Tags: "decision"},
}

var rankQueries = []string{
	"postgres",
	"databases",
	"database migration",
	"postgres connection pool",
	"lock",
	"fsync rename crash",
	"fencing token",
	"the and of",
	"watcher overflow rescan",
	"zebra quagga",
	"cache invalidation",
	"deploying rollback",
	"retry backoff",
	"tokens expire",
	"architecture",
}

var inspectIDs = []string{"lock-files", "lease", "durable-write", "pg-pool", "cache-redis", "deploy-canary"}

func TestSearchRankingGolden(t *testing.T) {
	ix := BuildIndex(rankCorpus)
	var b strings.Builder
	for _, q := range rankQueries {
		fmt.Fprintf(&b, "search %q\n", q)
		for _, h := range ix.Search(q, 5) {
			fmt.Fprintf(&b, "  %-18s %.4f\n", h.ID, h.Score)
		}
	}
	for _, id := range inspectIDs {
		fmt.Fprintf(&b, "inspect %s (keywords %v)\n", id, ix.Keywords(id, 4))
		for _, h := range ix.Related(id, 3) {
			fmt.Fprintf(&b, "  %-18s %.4f\n", h.ID, h.Score)
		}
	}
	golden := filepath.Join("testdata", "search.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("ranking changed:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// The properties the golden file pins, stated so a reader (and a failing
// run) sees what they mean.
func TestSearchFinds(t *testing.T) {
	ix := BuildIndex(rankCorpus)
	ids := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out
	}
	tests := []struct {
		query   string
		top     []string // the first hits, in any order
		absent  []string // must not be found at all
		nothing bool
	}{
		// A short form finds the product name it is a prefix of.
		{query: "postgres", top: []string{"pg-pool", "pg-upgrade", "pg-choice"}},
		// Plural and singular are one term.
		{query: "databases", top: []string{"db-migrations", "db-backups", "db-tests"}},
		{query: "database", top: []string{"db-migrations", "db-backups", "db-tests"}},
		// Both words beat either word alone.
		{query: "database migration", top: []string{"db-migrations"}},
		{query: "postgres connection pool", top: []string{"pg-pool"}},
		{query: "deploying rollback", top: []string{"deploy-rollback"}},
		{query: "lock", top: []string{"lock-files", "flock-nfs"}},
		// Too short to expand: "pg" finds nothing it is only a prefix of.
		{query: "pg", absent: []string{"pg-pool", "pg-choice"}},
		{query: "the and of", nothing: true},
	}
	for _, tt := range tests {
		got := ids(ix.Search(tt.query, 0))
		if tt.nothing {
			if len(got) != 0 {
				t.Errorf("search %q: got %v, want nothing", tt.query, got)
			}
			continue
		}
		if len(got) < len(tt.top) {
			t.Errorf("search %q: got %v, want %v first", tt.query, got, tt.top)
			continue
		}
		for _, id := range tt.top {
			if !slices.Contains(got[:len(tt.top)], id) {
				t.Errorf("search %q: got %v, want %v first", tt.query, got, tt.top)
				break
			}
		}
		for _, id := range tt.absent {
			if slices.Contains(got, id) {
				t.Errorf("search %q: found %s", tt.query, id)
			}
		}
	}
}

// Inspect is not decided by the domain: an entry that shares nothing but
// the domain with another is not related to it at all, and the best
// relation of pg-pool is the other PostgreSQL entries, whatever their
// domain.
func TestRelatedIgnoresDomain(t *testing.T) {
	ix := BuildIndex(rankCorpus)
	rel := ix.Related("pg-pool", 0)
	if len(rel) < 2 || !slices.Contains([]string{rel[0].ID, rel[1].ID}, "pg-upgrade") || !slices.Contains([]string{rel[0].ID, rel[1].ID}, "pg-choice") {
		t.Errorf("related to pg-pool: got %v, want pg-upgrade and pg-choice first", rel)
	}
	for _, h := range rel {
		if h.ID == "chunk-format" || h.ID == "inotify" || h.ID == "queue-priority" {
			t.Errorf("related to pg-pool: %s shares only the domain, got %v", h.ID, rel)
		}
	}
	// The domain still helps a search for it.
	if hits := ix.Search("architecture", 0); len(hits) == 0 {
		t.Error("search architecture: nothing found")
	}
}

func TestMatchesEveryWord(t *testing.T) {
	ix := BuildIndex(rankCorpus)
	var got []string
	for i, ok := range ix.Matches("Postgres pools") {
		if ok {
			got = append(got, rankCorpus[i].ID)
		}
	}
	if fmt.Sprint(got) != "[pg-pool]" {
		t.Errorf("Matches(Postgres pools): got %v, want [pg-pool]", got)
	}
	for i, ok := range ix.Matches("the of") {
		if ok {
			t.Errorf("Matches(stopwords only) matched %s", rankCorpus[i].ID)
		}
	}
}

func TestTokenizeAndTerms(t *testing.T) {
	got := strings.Join(Tokenize("The parser's re-write: UUIDv7 ids, a B-tree and 42 Öl!"), " ")
	if want := "parser write uuidv7 ids tree 42 öl"; got != want {
		t.Errorf("Tokenize: got %q, want %q", got, want)
	}
	got = strings.Join(Terms("Databases database Locking locks PostgreSQL"), " ")
	if want := "databas databas lock lock postgresql"; got != want {
		t.Errorf("Terms: got %q, want %q", got, want)
	}
}
