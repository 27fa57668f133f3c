package tuples

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"src/a/b.go", "src/a/b.go", true},
		{"src/a/b.go", "src/a/c.go", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/a/b.go", false},
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/a/b/c.go", true},
		{"src/**/*.go", "src/a/b/c.txt", false},
		{"src/**", "src/a/b/c.txt", true},
		{"src/**", "srcx/a", false},
		{"src/", "src/a", true},
		{"**/*.md", "README.md", true},
		{"**/*.md", "docs/x/y.md", true},
		{"**", "anything/at/all", true},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"[a-c]x", "bx", true},
		{"[!a-c]x", "bx", false},
		{"[^a-c]x", "dx", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{"./src/a.go", "src/a.go", true},
		{"a**b", "axxb", true},
		{"a**b", "ax/xb", false},
	}
	for _, tt := range tests {
		g, err := ParseGlob(tt.glob)
		if err != nil {
			t.Fatalf("ParseGlob(%q): %v", tt.glob, err)
		}
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
}

func TestGlobOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		// The three from the issue: each overlaps each.
		{"src/**/*.go", "src/a/b.go", true},
		{"src/**/*.go", "src/a/*", true},
		{"src/a/b.go", "src/a/*", true},
		{"src/*.go", "src/a/*.go", false},
		{"src/*.go", "src/*.txt", false},
		{"src/*.go", "src/x*", true},
		{"docs/**", "src/**", false},
		{"**", "x", true},
		{"*.go", "**/main.go", true},
		{"a/*/c", "a/b/*", true},
		{"a/*/c", "a/b/d", false},
		{"[a-c]", "[c-e]", true},
		{"[a-c]", "[d-e]", false},
		{"[!a]", "a", false},
		{"[!a]", "[a-b]", true},
		{"?", "[!x]", true},
		{"src/**/test/*.go", "src/a/**", true},
		{"src/**/test/*.go", "src/a/b.go", false},
		{"x/**/y", "x/y", true},
		{"x/**/y", "x/a/b/y", true},
		{"x/**/y", "x/a/b/z", false},
	}
	for _, tt := range tests {
		a, b := MustGlob(tt.a), MustGlob(tt.b)
		if got := a.Overlaps(b); got != tt.want {
			t.Errorf("%q overlaps %q = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := b.Overlaps(a); got != tt.want {
			t.Errorf("%q overlaps %q = %v, want %v (reverse)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestParseGlobErrors(t *testing.T) {
	for _, bad := range []string{"", ".", "/etc/passwd", "../x", "a/../b", "a//b", "[", "[a", "[]", "a\\", "[z-a]", "[a/b]", strings.Repeat("a", MaxGlobLen+1)} {
		if _, err := ParseGlob(bad); !errors.Is(err, ErrBadGlob) {
			t.Errorf("ParseGlob(%q) = %v, want ErrBadGlob", bad, err)
		}
	}
}

// FuzzGlob checks the glob automaton three ways: it agrees with
// path.Match on globs without "**" and negation by "!" (except that our
// classes, like git's, never match '/'), overlap is
// symmetric, and a path matched by two globs means they overlap.
func FuzzGlob(f *testing.F) {
	for _, s := range [][3]string{
		{"src/*.go", "src/a/*", "src/a.go"},
		{"src/**/*.go", "src/a/b.go", "src/a/b.go"},
		{"[a-c]?x", "b*", "bqx"},
		{"a/[^b]/c", "a/*/c", "a/z/c"},
		{`\*x`, "*", "*x"},
		{"**", "x/**/y", "x/y"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, p string) {
		ga, errA := ParseGlob(a)
		gb, errB := ParseGlob(b)
		if errA != nil && !errors.Is(errA, ErrBadGlob) {
			t.Fatalf("ParseGlob(%q): %v is not ErrBadGlob", a, errA)
		}
		if errA == nil && !strings.Contains(a, "**") && !strings.Contains(a, "[!") && !strings.HasSuffix(a, "/") && ga.String() == a && !strings.ContainsAny(p, "\x00") &&
			!(strings.Contains(a, "[") && strings.Contains(p, "/")) { // our classes never match '/'; path.Match's may
			if want, err := path.Match(a, p); err == nil {
				if got := ga.Match(p); got != want {
					t.Fatalf("%q.Match(%q) = %v, path.Match says %v", a, p, got, want)
				}
			}
		}
		if errA != nil || errB != nil {
			return
		}
		if ga.Overlaps(gb) != gb.Overlaps(ga) {
			t.Fatalf("overlap of %q and %q is not symmetric", a, b)
		}
		if ga.Match(p) && gb.Match(p) && !ga.Overlaps(gb) {
			t.Fatalf("%q and %q both match %q but do not overlap", a, b, p)
		}
	})
}

// globPrefix lets CheckPaths skip reservations without compiling their
// globs: every path a glob matches must begin with it.
func TestGlobPrefixNeverHidesAMatch(t *testing.T) {
	globs := []string{"src/**", "./src/a.go", "src/", "src/*.go", "src/a?.go", "src/[ab].go", `src/\*.go`, "**/x.go", "*", "docs/**/*.md", "a/b/c", "src"}
	paths := []string{"src/a.go", "src/ab.go", "src/b.go", "src/*.go", "src/x/y.go", "x.go", "a/x.go", "docs/a/b.md", "docs/a.md", "a/b/c", "src", "srcx/a.go", "README.md"}
	for _, gs := range globs {
		g := MustGlob(gs)
		for _, p := range paths {
			if g.Match(p) && !strings.HasPrefix(p, globPrefix(gs)) {
				t.Errorf("glob %q matches %q, but its prefix %q would skip it", gs, p, globPrefix(gs))
			}
		}
	}
}
