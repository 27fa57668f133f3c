// Package soak checks the outcome of the soak scenario (soak.sh): a pool
// of coder drones that reserve the file they edit and commit through a
// one-slot merge token while drones are SIGKILLed at random.
//
// Check reads the project's git history, the commit end times the drones
// wrote to .soak/commits and the store's event journal, and reports every
// commit that was not made under a live reservation of its paths and a
// held merge slot, commits that overlapped, and items not done. Each
// commit carries trailers written by drone.sh: Tavern-Item,
// Tavern-Agent, Tavern-Instance, Tavern-Reservation (the reservation id),
// Tavern-Token (the slot handle ID:EPOCH) and Tavern-Start (ns, taken
// just before `git commit`). A drone killed between its commit and
// writing the end time leaves the end unknown; the hold must then have
// been ended by a reclaim (the holder died), never by a release before
// the commit began.
package soak

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// Commit is one drone commit and what it says it was made under.
type Commit struct {
	SHA, Item, Agent, Instance, Reservation, Token string
	Paths                                          []string
	Start, End                                     time.Time // End zero: the drone died before writing it
}

// Report is what Check found.
type Report struct {
	Commits    []Commit
	Done, Left int // items done; items pending, claimed or dead
	Kills      int // kills soak.sh made (.soak/kills)
	Violations []string
}

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak check: %d commits, %d items done, %d not done, %d kills, %d violations\n",
		len(r.Commits), r.Done, r.Left, r.Kills, len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  violation: %s\n", v)
	}
	return b.String()
}

// span is one holding as the journal recorded it.
type span struct {
	path       string // reservation: its glob
	start, end time.Time
	endType    string // "" while still held
}

// Check verifies the soak scenario's project directory.
func Check(project string) (*Report, error) {
	r := &Report{}
	if data, err := os.ReadFile(filepath.Join(project, ".soak", "kills")); err == nil {
		r.Kills, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	commits, err := readCommits(project)
	if err != nil {
		return nil, err
	}
	r.Commits = commits
	res, toks, err := readHolds(filepath.Join(project, ".tavern"))
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, args...)) }
	items := map[string]bool{}
	for _, c := range commits {
		id := c.SHA[:12]
		if c.Item == "" || c.Reservation == "" || c.Token == "" || c.Start.IsZero() {
			bad("%s: missing trailers (item %q, reservation %q, token %q)", id, c.Item, c.Reservation, c.Token)
			continue
		}
		items[c.Item] = true
		rs, ok := res[c.Reservation]
		switch {
		case !ok:
			bad("%s: reservation %s was never made", id, c.Reservation)
		default:
			for _, p := range c.Paths {
				if p != rs.path {
					bad("%s: commits %s, but its reservation %s is of %s", id, p, c.Reservation, rs.path)
				}
			}
			bad2 := within(c, rs)
			if bad2 != "" {
				bad("%s: not under its reservation %s: %s", id, c.Reservation, bad2)
			}
		}
		ts, ok := toks[c.Token]
		switch {
		case !ok:
			bad("%s: merge slot %s was never acquired", id, c.Token)
		default:
			if bad2 := within(c, ts); bad2 != "" {
				bad("%s: not under merge slot %s: %s", id, c.Token, bad2)
			}
		}
	}
	// The merge token has one slot: commits never overlap.
	known := make([]Commit, 0, len(commits))
	for _, c := range commits {
		if !c.End.IsZero() && !c.Start.IsZero() {
			known = append(known, c)
		}
	}
	sort.Slice(known, func(i, j int) bool { return known[i].Start.Before(known[j].Start) })
	for i := 1; i < len(known); i++ {
		if known[i].Start.Before(known[i-1].End) {
			bad("commits %s and %s overlap", known[i-1].SHA[:12], known[i].SHA[:12])
		}
	}
	for _, st := range []string{"done", "pending", "claimed", "dead"} {
		files, _ := filepath.Glob(filepath.Join(project, ".tavern", "queues", "code", st, "*.md"))
		for _, f := range files {
			if st != "done" {
				r.Left++
				bad("item %s is %s", filepath.Base(f), st)
				continue
			}
			r.Done++
			item := strings.TrimSuffix(filepath.Base(f), ".md")
			if !items[item] {
				bad("done item %s has no commit", item)
			}
		}
	}
	if r.Done == 0 {
		bad("no item done")
	}
	return r, nil
}

// within says how commit c was not inside holding s ("" if it was).
func within(c Commit, s span) string {
	if c.Start.Before(s.start) {
		return fmt.Sprintf("commit began %s before it was taken", s.start.Sub(c.Start))
	}
	if s.endType == "" {
		return ""
	}
	if !c.End.IsZero() {
		if s.end.Before(c.End) {
			return fmt.Sprintf("%s %s before the commit ended", s.endType, c.End.Sub(s.end))
		}
		return ""
	}
	// The drone died after committing and before noting the end: only its
	// death may have ended the hold, after the commit began.
	if !strings.HasSuffix(s.endType, ".reclaimed") || s.end.Before(c.Start) {
		return fmt.Sprintf("%s at %s, commit end unknown", s.endType, s.end.Format(time.RFC3339Nano))
	}
	return ""
}

func git(project string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = project
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

func readCommits(project string) ([]Commit, error) {
	ends := map[string]time.Time{}
	if data, err := os.ReadFile(filepath.Join(project, ".soak", "commits")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if sha, ns, ok := strings.Cut(line, " "); ok {
				ends[sha] = nsTime(ns)
			}
		}
	}
	out, err := git(project, "log", "--format=%H", "--grep=^Tavern-Item:")
	if err != nil {
		return nil, err
	}
	var commits []Commit
	for _, sha := range strings.Fields(string(out)) {
		msg, err := git(project, "show", "-s", "--format=%B", sha)
		if err != nil {
			return nil, err
		}
		c := Commit{SHA: sha, End: ends[sha]}
		sc := bufio.NewScanner(bytes.NewReader(msg))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ": ")
			switch k {
			case "Tavern-Item":
				c.Item = v
			case "Tavern-Agent":
				c.Agent = v
			case "Tavern-Instance":
				c.Instance = v
			case "Tavern-Reservation":
				c.Reservation = v
			case "Tavern-Token":
				c.Token = v
			case "Tavern-Start":
				c.Start = nsTime(v)
			}
		}
		paths, err := git(project, "diff-tree", "--no-commit-id", "--name-only", "-r", sha)
		if err != nil {
			return nil, err
		}
		c.Paths = strings.Fields(string(paths))
		commits = append(commits, c)
	}
	return commits, nil
}

func nsTime(s string) time.Time {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// readHolds reads from the journal the life of every reservation (by id)
// and of every merge slot holding (by handle ID:EPOCH).
func readHolds(store string) (res, toks map[string]span, err error) {
	res, toks = map[string]span{}, map[string]span{}
	end := func(m map[string]span, key, typ string, at time.Time) {
		if s, ok := m[key]; ok && s.endType == "" {
			s.end, s.endType = at, typ
			m[key] = s
		}
	}
	_, err = journal.Read(store, journal.Filter{}, func(e journal.Event, err error) bool {
		if err != nil {
			return true
		}
		id := fmt.Sprint(e.Data["id"])
		switch e.Type {
		case "reservation.made":
			res[id] = span{path: fmt.Sprint(e.Data["glob"]), start: e.Time.Time}
		case "reservation.released", "reservation.reclaimed", "reservation.expired":
			end(res, id, e.Type, e.Time.Time)
		case "tuple.expired":
			if e.Data["type"] == "reservation" {
				end(res, id, "reservation.expired", e.Time.Time)
			}
		case "token.acquired", "token.released", "token.reclaimed":
			if e.Data["token"] != "merge" {
				return true
			}
			key := id + ":" + fmt.Sprint(e.Data["epoch"])
			if e.Type == "token.acquired" {
				toks[key] = span{start: e.Time.Time}
			} else {
				end(toks, key, e.Type, e.Time.Time)
			}
		}
		return true
	})
	return res, toks, err
}
