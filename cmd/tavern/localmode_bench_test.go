package main

// make bench: what the several-machines engines cost a store that does
// not use them (coordination: local, the default). The same command is
// built twice, as shipped and with -tags tavern_local_only (without the
// etcd engine and its gRPC client), and each runs a take+done cycle of
// one-shot commands on a local store, and --help, interleaved op by op so
// both see the same load. Both builds' figures are metrics of one
// benchmark (cpu-ms and wall-ms as shipped, local-only-cpu-ms and
// local-only-wall-ms without the engine); cmd/benchreport prints the
// ratio shipped / local-only.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/queues"
)

var (
	localOnlyOnce sync.Once
	localOnlyBins [2]string // as shipped, local only
	localOnlyErr  error
)

func localModeBins(b *testing.B) [2]string {
	b.Helper()
	localOnlyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tavern-localmode-")
		if err != nil {
			localOnlyErr = err
			return
		}
		for i, tags := range []string{"", "tavern_local_only"} {
			localOnlyBins[i] = filepath.Join(dir, fmt.Sprintf("tavern-%d", i))
			out, err := exec.Command("go", "build", "-tags", tags, "-o", localOnlyBins[i], ".").CombinedOutput()
			if err != nil {
				localOnlyErr = fmt.Errorf("go build -tags %q: %v\n%s", tags, err, out)
				return
			}
		}
	})
	if localOnlyErr != nil {
		b.Fatal(localOnlyErr)
	}
	return localOnlyBins
}

type localModeTimes struct{ wall, cpu time.Duration }

func (t *localModeTimes) run(b *testing.B, dir string, argv ...string) string {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TAVERN_DIR="+filepath.Join(dir, ".tavern"))
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%v: %v", argv, err)
	}
	t.wall += time.Since(start)
	t.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return string(out)
}

func BenchmarkLocalMode(b *testing.B) {
	bins := localModeBins(b)
	b.Run("take-done", func(b *testing.B) {
		var stores [2]string
		for i := range stores {
			stores[i] = storetest.BenchDir(b)
			s, _, err := docstore.Init(filepath.Join(stores[i], ".tavern"), "bench")
			if err != nil {
				b.Fatal(err)
			}
			br, err := queues.Open(s, queues.Options{})
			if err != nil {
				b.Fatal(err)
			}
			br.CreateQueue("q", queues.QueueOptions{})
			for n := 0; n < b.N; n++ {
				if _, err := br.Add("q", queues.AddOptions{Title: "t"}); err != nil {
					b.Fatal(err)
				}
			}
			br.Close()
		}
		var t [2]localModeTimes
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			for i := range bins {
				f := strings.Fields(t[i].run(b, stores[i], bins[i], "queue", "take", "q"))
				if len(f) < 2 {
					b.Fatalf("take printed %q", f)
				}
				t[i].run(b, stores[i], bins[i], "item", "done", f[0], "--attempt", f[1])
			}
		}
		b.StopTimer()
		report(b, t)
	})
	b.Run("help", func(b *testing.B) {
		var t [2]localModeTimes
		dir := b.TempDir()
		for n := 0; n < b.N; n++ {
			for i := range bins {
				t[i].run(b, dir, bins[i], "--help")
			}
		}
		report(b, t)
	})
}

// report gives both builds' figures per op.
func report(b *testing.B, t [2]localModeTimes) {
	for i, prefix := range []string{"", "local-only-"} {
		b.ReportMetric(float64(t[i].wall.Microseconds())/1000/float64(b.N), prefix+"wall-ms")
		b.ReportMetric(float64(t[i].cpu.Microseconds())/1000/float64(b.N), prefix+"cpu-ms")
	}
}
