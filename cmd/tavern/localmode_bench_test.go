package main

// make bench: what the several-machines engines cost a store that does
// not use them (coordination: local, the default). The same command is
// built twice, as shipped and with -tags tavern_local_only (without the
// etcd engine and its gRPC client), and each runs a take+done cycle of
// one-shot commands on a local store, and --help, one right after the
// other (sub-benchmarks engines and local-only); cmd/benchreport prints
// the CPU per op as shipped against local-only.

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
	names := [2]string{"engines", "local-only"}
	for i := range bins {
		b.Run("take-done/"+names[i], func(b *testing.B) {
			dir := storetest.BenchDir(b)
			s, _, err := docstore.Init(filepath.Join(dir, ".tavern"), "bench")
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
			var t localModeTimes
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				f := strings.Fields(t.run(b, dir, bins[i], "queue", "take", "q"))
				if len(f) < 2 {
					b.Fatalf("take printed %q", f)
				}
				t.run(b, dir, bins[i], "item", "done", f[0], "--attempt", f[1])
			}
			b.StopTimer()
			t.report(b)
		})
	}
	for i := range bins {
		b.Run("help/"+names[i], func(b *testing.B) {
			var t localModeTimes
			dir := b.TempDir()
			for n := 0; n < b.N; n++ {
				t.run(b, dir, bins[i], "--help")
			}
			t.report(b)
		})
	}
}

func (t *localModeTimes) report(b *testing.B) {
	b.ReportMetric(float64(t.wall.Microseconds())/1000/float64(b.N), "ms/op")
	b.ReportMetric(float64(t.cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
