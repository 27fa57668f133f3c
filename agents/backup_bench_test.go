package agents

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
)

// backupBenchDocs is the store size of the backup benchmarks: the issue's
// 20k documents (a backup of them took 45 s with an fsync per file; the
// goal is 5 s on the development VM).
const backupBenchDocs = 20000

// benchStore writes a store of n small documents (agents, done items,
// message chunks) once for a benchmark.
func benchStore(b *testing.B, n int) *docstore.Store {
	b.Helper()
	dir := filepath.Join(storetest.BenchDir(b), docstore.DirName)
	s, _, err := docstore.Init(dir, "bench")
	if err != nil {
		b.Fatal(err)
	}
	doc := func(i int) []byte {
		return fmt.Appendf(nil, "---\nschema_version: 1\nid: %08d\ntitle: item %d\nresult: ok\n---\n\nSome text of item %d.\n", i, i, i)
	}
	for i := range n {
		var rel string
		switch {
		case i%20 == 0:
			rel = fmt.Sprintf("agents/a%05d.md", i)
		case i%20 == 1:
			rel = fmt.Sprintf("messages/general/c%05d.md", i)
		default:
			rel = fmt.Sprintf("queues/build/done/p00-%08d.md", i)
		}
		full := filepath.Join(dir, rel)
		if i < 3 {
			os.MkdirAll(filepath.Dir(full), 0o755)
		}
		if err := os.WriteFile(full, doc(i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := docstore.SyncFS(dir); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkBackup is `tavern backup` of a 20k-document store; its
// baseline is BenchmarkRawCopySync, `cp -r` of the same store and `sync`.
func BenchmarkBackup(b *testing.B) {
	b.Run(fmt.Sprintf("docs=%d", backupBenchDocs), func(b *testing.B) {
		s := benchStore(b, backupBenchDocs)
		dest := filepath.Join(filepath.Dir(s.Root()), "backups")
		b.ResetTimer()
		for i := range b.N {
			if _, err := Backup(s, dest, time.Unix(int64(i), 0)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	})
}

func BenchmarkRawCopySync(b *testing.B) {
	b.Run(fmt.Sprintf("docs=%d", backupBenchDocs), func(b *testing.B) {
		s := benchStore(b, backupBenchDocs)
		b.ResetTimer()
		for i := range b.N {
			dst := filepath.Join(filepath.Dir(s.Root()), fmt.Sprintf("copy-%d", i))
			if out, err := exec.Command("sh", "-c", `cp -r "$1" "$2" && sync`, "sh", s.Root(), dst).CombinedOutput(); err != nil {
				b.Fatalf("cp -r: %v\n%s", err, out)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
	})
}
