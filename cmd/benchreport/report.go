package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// pair is one row of the ratio table.
type pair struct {
	Name, Metric, Base string
	// BaseMetric is the baseline's unit when it is not Metric (a p99
	// latency against the typical, p50, write).
	BaseMetric string
	Min, Max   float64 // goals on the ratio; 0 means none
	AbsMax     float64 // without Base: a goal on the value itself
	// Label and Shape put the row in the README (see readme.go).
	Label, Shape string
}

// bench holds one benchmark's figures; with -count > 1 each metric has one
// value per run and the median is reported.
type bench struct {
	Name    string
	Metrics map[string][]float64 // unit → values
	Units   []string             // in first-seen order, for display
}

type results struct {
	Benches  []*bench // in input order
	byName   map[string]*bench
	Failures []string // "--- FAIL" / "FAIL" lines, verbatim
	Notes    []string // "bench-note: " lines (make bench records the load average)
}

// procSuffix is the -GOMAXPROCS suffix go test appends to every name when
// GOMAXPROCS > 1.
var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output. Lines it does not understand (logs,
// headers, PASS/ok) are ignored.
func parse(r io.Reader) (*results, error) {
	type line struct {
		name   string
		fields []string
	}
	var lines []line
	res := &results{byName: map[string]*bench{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		t := sc.Text()
		trimmed := strings.TrimSpace(t)
		if note, ok := strings.CutPrefix(t, "bench-note: "); ok {
			res.Notes = append(res.Notes, note)
			continue
		}
		if strings.HasPrefix(trimmed, "--- FAIL") || strings.HasPrefix(t, "FAIL") || strings.HasPrefix(t, "panic:") {
			res.Failures = append(res.Failures, trimmed)
			continue
		}
		f := strings.Fields(t)
		// A result line: name, iterations, then value/unit pairs.
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			continue
		}
		lines = append(lines, line{f[0], f[2:]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}

	// Strip the -N suffix only if every name carries the same one, so a
	// name like "size-1024" survives a GOMAXPROCS=1 run.
	suffix := ""
	for i, l := range lines {
		s := procSuffix.FindString(l.name)
		if i == 0 {
			suffix = s
		} else if s != suffix {
			suffix = ""
			break
		}
	}
	for _, l := range lines {
		name := strings.TrimSuffix(l.name, suffix)
		b := res.byName[name]
		if b == nil {
			b = &bench{Name: name, Metrics: map[string][]float64{}}
			res.byName[name] = b
			res.Benches = append(res.Benches, b)
		}
		for i := 0; i+1 < len(l.fields); i += 2 {
			v, err := strconv.ParseFloat(l.fields[i], 64)
			if err != nil {
				continue
			}
			unit := l.fields[i+1]
			if _, ok := b.Metrics[unit]; !ok {
				b.Units = append(b.Units, unit)
			}
			b.Metrics[unit] = append(b.Metrics[unit], v)
		}
	}
	return res, nil
}

// values returns one figure per run of a benchmark's unit; "ops/s" falls
// back to 1e9/ns/op. It returns nil if the benchmark or the unit is missing.
func (r *results) values(name, unit string) []float64 {
	b := r.byName[name]
	if b == nil {
		return nil
	}
	if vs := b.Metrics[unit]; len(vs) > 0 {
		return vs
	}
	if unit != "ops/s" {
		return nil
	}
	var ops []float64
	for _, ns := range b.Metrics["ns/op"] {
		if ns > 0 {
			ops = append(ops, 1e9/ns)
		}
	}
	return ops
}

// metric returns the median of values; ok is false if there are none.
func (r *results) metric(name, unit string) (float64, bool) {
	vs := r.values(name, unit)
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// num formats a figure with about three significant digits and thousands
// separators for large ones.
func num(v float64) string {
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return "-"
	case math.Abs(v) >= 1000:
		s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		var out []byte
		for i, c := range []byte(s) {
			if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
				out = append(out, ',')
			}
			out = append(out, c)
		}
		return string(out)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// row is a pair's figures as the tables print them.
type row struct {
	value, base, baseValue, ratio, goal string
	met, missed                         bool
}

// evaluate computes a pair's figures and whether its goal is met.
func evaluate(r *results, p pair) row {
	v, okv := r.metric(p.Name, p.Metric)
	out := row{value: "-", base: "-", baseValue: "-", ratio: "-"}
	if okv {
		out.value = num(v)
	}
	if p.Base == "" {
		if p.AbsMax > 0 {
			out.goal = "≤ " + num(p.AbsMax)
			if okv {
				out.met, out.missed = v <= p.AbsMax, v > p.AbsMax
			}
		}
	} else {
		bm, base := p.Metric, p.Base
		if p.BaseMetric != "" && p.BaseMetric != p.Metric {
			bm, base = p.BaseMetric, p.Base+" ("+p.BaseMetric+")"
		}
		out.base = base
		bv, okb := r.metric(p.Base, bm)
		if okb {
			out.baseValue = num(bv)
		}
		if p.Min > 0 {
			out.goal = fmt.Sprintf("≥ %.2f×", p.Min)
		}
		if p.Max > 0 {
			out.goal = strings.TrimSpace(out.goal + fmt.Sprintf(" ≤ %.2f×", p.Max))
		}
		if okv && okb && bv != 0 {
			x := v / bv
			out.ratio = fmt.Sprintf("%.2f×", x)
			if out.goal != "" {
				out.missed = (p.Min > 0 && x < p.Min) || (p.Max > 0 && x > p.Max)
				out.met = !out.missed
			}
		}
	}
	switch {
	case out.missed:
		out.goal += " MISSED"
	case out.met:
		out.goal += " met"
	}
	return out
}

// render writes the report. It is built in a buffer so the padding after
// empty last cells can be trimmed (stable golden files, clean diffs).
func render(out io.Writer, r *results, pairs []pair) error {
	var w bytes.Buffer
	if err := renderTables(&w, r, pairs); err != nil {
		return err
	}
	lines := strings.Split(w.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(out, strings.Join(lines, "\n"))
	return err
}

func renderTables(w io.Writer, r *results, pairs []pair) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "Benchmarks (ops/s from ns/op unless the benchmark reports ops/s; median of runs)")
	fmt.Fprintf(tw, "benchmark\t%12s\truns\t%-20s\tother metrics\n", "ops/s", "ops/s range")
	for _, b := range r.Benches {
		ops, runs, spread := "-", "-", ""
		if vs := r.values(b.Name, "ops/s"); len(vs) > 0 {
			ops, runs = num(median(vs)), strconv.Itoa(len(vs))
			if len(vs) > 1 {
				spread = num(slices.Min(vs)) + "–" + num(slices.Max(vs))
			}
		}
		var other []string
		for _, u := range b.Units {
			if u == "ns/op" || u == "ops/s" {
				continue
			}
			other = append(other, num(median(b.Metrics[u]))+" "+u)
		}
		fmt.Fprintf(tw, "%s\t%12s\t%4s\t%-20s\t%s\n", b.Name, ops, runs, spread, strings.Join(other, "  "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Ratios against same-run baselines (ratio = value / baseline)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "benchmark\tmetric\t%10s\tbaseline\t%14s\t%7s\tgoal\n", "value", "baseline value", "ratio")
	for _, p := range pairs {
		row := evaluate(r, p)
		fmt.Fprintf(tw, "%s\t%s\t%10s\t%s\t%14s\t%7s\t%s\n", p.Name, p.Metric, row.value, row.base, row.baseValue, row.ratio, row.goal)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintln(w, "note: "+n)
		}
	}
	if len(r.Failures) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "FAILURES in the benchmark run:")
		for _, f := range r.Failures {
			fmt.Fprintln(w, "  "+f)
		}
	}
	return nil
}
