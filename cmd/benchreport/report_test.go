package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestGolden renders a recorded run (three packages, -count=3 for two
// benchmarks, logs, a skipped benchmark, Tavern figures that meet and miss
// goals) against the real pairing table.
func TestGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "run.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := parse(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := render(&got, res, pairs); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "run.golden")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("report differs from %s (run with -update after checking):\ngot:\n%s\nwant:\n%s", golden, got.String(), want)
	}
}

func TestMetric(t *testing.T) {
	in := `BenchmarkA-4   	100	 2000000 ns/op
BenchmarkA-4   	100	 1000000 ns/op
BenchmarkA-4   	100	 4000000 ns/op
BenchmarkB/workers=8-4	10	 100 ns/op	 3000 ops/s	 5.5 p50-µs
BenchmarkB/workers=8-4	10	 100 ns/op	 1000 ops/s	 7.5 p50-µs
`
	res, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, unit string
		want       float64
		ok         bool
	}{
		{"BenchmarkA", "ops/s", 500, true},            // median ns/op 2 ms, derived
		{"BenchmarkA", "ns/op", 2000000, true},        // odd count: middle value
		{"BenchmarkB/workers=8", "ops/s", 2000, true}, // reported ops/s wins over ns/op
		{"BenchmarkB/workers=8", "p50-µs", 6.5, true}, // even count: mean of the middle two
		{"BenchmarkB/workers=8", "files/s", 0, false}, // unit not reported
		{"BenchmarkC", "ops/s", 0, false},             // benchmark not in the run
	}
	for _, tt := range tests {
		got, ok := res.metric(tt.name, tt.unit)
		if got != tt.want || ok != tt.ok {
			t.Errorf("metric(%q, %q) = %v, %v; want %v, %v", tt.name, tt.unit, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSuffix(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"GOMAXPROCS=2", "BenchmarkX/size-1024-2\t1\t5 ns/op\nBenchmarkY-2\t1\t5 ns/op\n",
			[]string{"BenchmarkX/size-1024", "BenchmarkY"}},
		{"GOMAXPROCS=1 keeps a dash in a name", "BenchmarkX/size-1024\t1\t5 ns/op\nBenchmarkY\t1\t5 ns/op\n",
			[]string{"BenchmarkX/size-1024", "BenchmarkY"}},
		{"one benchmark, no suffix", "BenchmarkX/n-3\t1\t5 ns/op\n",
			[]string{"BenchmarkX/n"}}, // indistinguishable from GOMAXPROCS=3: stripped
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range res.Benches {
				got = append(got, b.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("names = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFailuresReported(t *testing.T) {
	in := `BenchmarkRawParse-2	100	5 ns/op
--- FAIL: BenchmarkSQLiteQueue/full/workers=8-2
    sqlite_bench_test.go:170: item 17 claimed 2 times, want exactly once
FAIL
FAIL	github.com/tavernhq/tavern/queues	3.1s
`
	res, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Failures), 3; got != want {
		t.Fatalf("got %d failure lines %q, want %d", got, res.Failures, want)
	}
	var out bytes.Buffer
	if err := render(&out, res, pairs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "FAILURES") || !strings.Contains(out.String(), "--- FAIL: BenchmarkSQLiteQueue/full/workers=8-2") {
		t.Errorf("report does not show the failure:\n%s", out.String())
	}
}

func TestNum(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0.5, "0.50"}, {12.345, "12.3"}, {512.4, "512"}, {2866, "2,866"},
		{193741.2, "193,741"}, {1234567, "1,234,567"}, {-1500, "-1,500"},
	}
	for _, tt := range tests {
		if got := num(tt.in); got != tt.want {
			t.Errorf("num(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPairsWellFormed guards the table against typos that would silently
// print "-" forever: every field set, names in go test's form, no duplicate.
func TestPairsWellFormed(t *testing.T) {
	seen := map[pair]bool{}
	for _, p := range pairs {
		absolute := p.Base == ""
		if !strings.HasPrefix(p.Name, "Benchmark") || (!absolute && !strings.HasPrefix(p.Base, "Benchmark")) || p.Metric == "" {
			t.Errorf("malformed pair %+v", p)
		}
		if absolute && (p.Min != 0 || p.Max != 0 || p.BaseMetric != "") {
			t.Errorf("pair %+v: a ratio goal without a baseline", p)
		}
		if !absolute && p.AbsMax != 0 {
			t.Errorf("pair %+v: an absolute goal with a baseline", p)
		}
		if strings.ContainsAny(p.Name+p.Base, " \t") {
			t.Errorf("pair %+v: go test never prints spaces in names", p)
		}
		if p.Name == p.Base && (p.BaseMetric == "" || p.BaseMetric == p.Metric) {
			t.Errorf("pair %+v compares a figure with itself", p)
		}
		if seen[p] {
			t.Errorf("duplicate pair %+v", p)
		}
		seen[p] = true
	}
}

// TestReadme renders the README section of the recorded run twice (as
// two runs) into a README, between its markers, leaving the rest alone.
func TestReadme(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "run.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run.txt")
	if err := os.WriteFile(run, in, 0o644); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	before, after := "# T\n\n## Performance\n\n", "\n## Next\n"
	if err := os.WriteFile(readme, []byte(before+readmeBegin+"\nSTALE-CONTENT\n"+readmeEnd+after), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReadme(readme, []string{run, run}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "readme.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("README differs from %s (run with -update after checking):\n%s", golden, got)
	}
	if !strings.HasPrefix(string(got), before+readmeBegin) || !strings.HasSuffix(string(got), readmeEnd+after) || strings.Contains(string(got), "STALE-CONTENT") {
		t.Errorf("the section was not replaced in place:\n%s", got)
	}
	if err := writeReadme(filepath.Join(dir, "none.md"), []string{run}); err == nil {
		t.Error("a README without the markers: no error")
	}
}
