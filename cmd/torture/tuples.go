package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// The tuple-space primitives under contention (issue 15's stresses, the
// larger version; cmd/tavern's TestStress* are the make-test size): 8
// worker processes loop `token acquire --wait` / `release` on tokens of
// count 1 and 3, `reserve --wait` / `unreserve` on globs that all
// intersect, and `tuple in --wait` on tuples a producer writes meanwhile.
// Every holder records the interval it believed it held (after its
// acquire exited 0, before its release started): more overlapping
// intervals than the primitive allows count as executed twice (a tuple
// taken twice too); an acquire, reserve or in that fails within its wait
// (a false error) or a tuple never taken counts as lost.

const tupleWorkers = 8

// interval is one recorded holding.
type interval struct{ start, end time.Time }

// overlapExcess is how far the most intervals open at once exceed limit.
func overlapExcess(iv []interval, limit int) int {
	type ev struct {
		at   time.Time
		open int
	}
	var evs []ev
	for _, i := range iv {
		evs = append(evs, ev{i.start, 1}, ev{i.end, -1})
	}
	// Ends before starts at the same instant: touching is not overlapping.
	sort.Slice(evs, func(a, b int) bool {
		if evs[a].at.Equal(evs[b].at) {
			return evs[a].open < evs[b].open
		}
		return evs[a].at.Before(evs[b].at)
	})
	n, most := 0, 0
	for _, e := range evs {
		n += e.open
		most = max(most, n)
	}
	return max(0, most-limit)
}

// loop runs cycles of body on tupleWorkers goroutines (each runs tavern
// processes) and returns the intervals and the false errors.
func loop(cycles int, body func(w, i int) (interval, string)) ([]interval, []string) {
	var mu sync.Mutex
	var ivs []interval
	var errs []string
	var wg sync.WaitGroup
	for w := range tupleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cycles {
				iv, err := body(w, i)
				mu.Lock()
				if err != "" {
					errs = append(errs, err)
				} else {
					ivs = append(ivs, iv)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ivs, errs
}

func tupleStress(e *env) row {
	dir := e.project("tuples")
	cycles := 25 * e.scale
	var r row
	var notes []string
	note := func(what string, errs []string) {
		if len(errs) > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d false errors, first: %s", what, len(errs), strings.TrimSpace(errs[0])))
		}
	}
	for _, count := range []int{1, 3} {
		name := fmt.Sprintf("t%d", count)
		e.must(dir, "token", "init", name, "--count", fmt.Sprint(count))
		ivs, errs := loop(cycles, func(w, i int) (interval, string) {
			a := e.tavern(dir, "token", "acquire", name, "--wait", "2m", "--ttl", "10m")
			if a.code != 0 {
				return interval{}, fmt.Sprintf("acquire %s: exit %d: %s", name, a.code, a.err)
			}
			iv := interval{start: time.Now()}
			time.Sleep(time.Millisecond)
			iv.end = time.Now()
			if rel := e.tavern(dir, "token", "release", name, strings.TrimSpace(a.out)); rel.code != 0 {
				return iv, fmt.Sprintf("release %s: exit %d: %s", name, rel.code, rel.err)
			}
			return iv, ""
		})
		r.tried += tupleWorkers * cycles
		r.lost += len(errs)
		r.twice += overlapExcess(ivs, count)
		note("token "+name, errs)
	}

	globs := []string{"src/**", "src/a/*.go", "src/a/x.go", "src/*/x.go", "**/x.go", "src/a/"}
	for w := range tupleWorkers {
		e.must(dir, "agent", "new", fmt.Sprintf("w%d", w))
	}
	ivs, errs := loop(cycles, func(w, i int) (interval, string) {
		agent := fmt.Sprintf("w%d", w)
		glob := globs[(w+i)%len(globs)]
		if res := e.tavern(dir, "reserve", glob, "--as", agent, "--wait", "2m"); res.code != 0 {
			return interval{}, fmt.Sprintf("reserve %s --as %s: exit %d: %s", glob, agent, res.code, res.err)
		}
		iv := interval{start: time.Now()}
		time.Sleep(time.Millisecond)
		iv.end = time.Now()
		if un := e.tavern(dir, "unreserve", "--as", agent); un.code != 0 {
			return iv, fmt.Sprintf("unreserve --as %s: exit %d: %s", agent, un.code, un.err)
		}
		return iv, ""
	})
	r.tried += tupleWorkers * cycles
	r.lost += len(errs)
	r.twice += overlapExcess(ivs, 1)
	note("reservations", errs)

	n := tupleWorkers * cycles
	produced := make(chan []string, 1)
	go func() {
		var ids []string
		for i := range n {
			if o := e.tavern(dir, "tuple", "out", "job", fmt.Sprintf("n=%d", i)); o.code == 0 {
				ids = append(ids, strings.TrimSpace(o.out))
			}
		}
		produced <- ids
	}()
	var mu sync.Mutex
	taken := map[string]int{}
	_, errs = loop(cycles, func(w, i int) (interval, string) {
		in := e.tavern(dir, "tuple", "in", "job", "--wait", "2m", "--json")
		var obj struct{ ID string }
		if in.code != 0 || json.Unmarshal([]byte(in.out), &obj) != nil || obj.ID == "" {
			return interval{}, fmt.Sprintf("tuple in: exit %d: %s%s", in.code, in.out, in.err)
		}
		mu.Lock()
		taken[obj.ID]++
		mu.Unlock()
		return interval{}, ""
	})
	ids := <-produced
	r.tried += n
	note("tuple in", errs)
	for _, id := range ids {
		switch c := taken[id]; {
		case c == 0:
			r.lost++
		case c > 1:
			r.twice += c - 1
		}
	}
	r.lost += n - len(ids) // a tuple out that failed

	r.torn, _ = torn(dir, nil)
	var left string
	r.left, left = e.leftAfterDoctor(dir)
	if left != "" {
		notes = append(notes, "doctor: "+left)
	}
	r.note = strings.Join(notes, "; ")
	return r
}
