package docstore_test

// The docstore figures `make bench` reports next to the raw baselines in
// baseline_bench_test.go (pairing table: cmd/benchreport/pairs.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/schema"
)

// BenchmarkParse: documents parsed per second (split + yaml.v3 node tree
// + the checks Parse adds), on the same 1 KiB document as BenchmarkRawParse.
func BenchmarkParse(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		d, err := docstore.Parse("queues/build/pending/x.md", benchDoc)
		if err != nil {
			b.Fatal(err)
		}
		if len(d.Keys()) != 11 {
			b.Fatalf("parsed %d fields, want 11", len(d.Keys()))
		}
	}
	storetest.ReportOpsPerSec(b, b.N)
}

// benchStore creates a durable store on the work disk (see storetest.BenchDir).
func benchStore(b *testing.B) *docstore.Store {
	b.Helper()
	s, _, err := docstore.Init(filepath.Join(storetest.BenchDir(b), docstore.DirName), "bench")
	if err != nil {
		b.Fatal(err)
	}
	if !s.Durable() {
		b.Fatal("store is not durable")
	}
	return s
}

// BenchmarkUpdateDurable: durable Updates per second of one 1 KiB item
// document by one writer: lock, read, parse, edit one field, validate,
// re-check the revision, temp write, fsync, rename, fsync(dir). Compare
// with BenchmarkRawDurableWrite, the same disk work without the engine.
func BenchmarkUpdateDurable(b *testing.B) {
	s := benchStore(b)
	rel := "queues/build/pending/0193a1f2-7c4e-7b1a-9d2e-3f4a5b6c7d8e.md"
	if err := os.MkdirAll(filepath.Dir(filepath.Join(s.Root(), rel)), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := s.WriteFile(rel, benchDoc); err != nil {
		b.Fatal(err)
	}
	syscall.Sync()
	b.SetBytes(int64(len(benchDoc)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Update(rel, func(d *docstore.Doc) error { return d.Set("priority", i%100) }); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	storetest.ReportOpsPerSec(b, b.N)
}

// BenchmarkListWhere10k: `tavern ls agents --where state=working` over
// 10,000 agent documents through the library (List + Cond.Match on the
// migrated view), from a warm page cache. ops/s is queries per second;
// files/s is documents read, parsed and matched per second, the figure
// paired with BenchmarkRawGrep/files=10000.
func BenchmarkListWhere10k(b *testing.B) {
	const n = 10_000
	s := benchStore(b)
	states := schema.AgentStates
	for i := range n {
		doc := fmt.Sprintf("---\nschema_version: 1\nid: %s\nname: agent-%05d\nrole: worker\nstate: %s\nqueue: build\nspawns: %d\n"+
			"created: 2026-11-21T23:28:18.000Z\nupdated: 2026-11-21T23:28:18.000Z\n---\n\nAgent %d notes.\n",
			docstore.NewID(), i, states[i%len(states)], i%7, i)
		// Setup writes bypass the durable path: its cost is measured above.
		if err := os.WriteFile(filepath.Join(s.Root(), "agents", fmt.Sprintf("agent-%05d.md", i)), []byte(doc), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Sync()
	cond, err := docstore.ParseWhere("state=working")
	if err != nil {
		b.Fatal(err)
	}
	want := n / len(states)
	b.ResetTimer()
	for b.Loop() {
		docs, errs := s.List(schema.Agent)
		if len(errs) > 0 || len(docs) != n {
			b.Fatalf("listed %d documents with %d errors, want %d: %v", len(docs), len(errs), n, errs)
		}
		hits := 0
		for _, d := range docs {
			if cond.Match(d.View().Fields()) {
				hits++
			}
		}
		if hits < want || hits > want+1 {
			b.Fatalf("%d matches, want about %d", hits, want)
		}
	}
	b.StopTimer()
	storetest.ReportOpsPerSec(b, b.N)
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N*n)/s, "files/s")
	}
}
