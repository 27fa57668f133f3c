package main

// Tests of the CLI contract that walk the command definitions, so a new
// command or flag is covered without anyone remembering to add it.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// allFlags calls fn for every flag of every visible command.
func allFlags(fn func(path string, c *cli.Command, f cli.Flag)) {
	leafCommands(docsApp().Commands, "", func(path string, c *cli.Command) {
		for _, f := range c.Flags {
			if visible(f) {
				fn(path, c, f)
			}
		}
	})
}

// TestHelpDefaultOnce: help says each flag's default once: never both in
// its usage text and from its value ("(default 10s) (default: 0s)"), nor
// an environment variable both as "(default $X)" and "[$X]".
func TestHelpDefaultOnce(t *testing.T) {
	defaults := regexp.MustCompile(`(?i)\bdefault\b`)
	env := regexp.MustCompile(`\[\$(\w+)\]`)
	allFlags(func(path string, c *cli.Command, f cli.Flag) {
		line := cli.FlagStringer(f)
		if n := len(defaults.FindAllString(line, -1)); n > 1 {
			t.Errorf("tavern %s: %q says its default %d times", path, line, n)
		}
		for _, m := range env.FindAllStringSubmatch(line, -1) {
			if strings.Count(line, "$"+m[1]) > 1 {
				t.Errorf("tavern %s: %q names $%s twice", path, line, m[1])
			}
		}
	})
}

// zeroScript holds a case for every numeric and duration flag set to 0.
const zeroScript = "testdata/script/zero_flags.txtar"

// TestZeroFlagsCovered: every numeric and duration flag of every command
// is set to 0 somewhere in zero_flags.txtar, which checks the result (the
// zero honoured) or the refusal (exit 2 saying why). A new flag fails
// here until its case is written.
func TestZeroFlagsCovered(t *testing.T) {
	data, err := os.ReadFile(filepath.FromSlash(zeroScript))
	if err != nil {
		t.Fatal(err)
	}
	script := string(data)
	n := 0
	allFlags(func(path string, c *cli.Command, f cli.Flag) {
		var zero string
		switch f.(type) {
		case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.Float64Flag:
			zero = "0"
		case *cli.DurationFlag:
			zero = (time.Duration(0)).String()
		default:
			return
		}
		n++
		// A line running tavern PATH [args] --flag 0.
		re := regexp.MustCompile(`(?m)^(?:exec|exits \d+) .*\btavern ` + regexp.QuoteMeta(path) + `\b.* --` + regexp.QuoteMeta(f.Names()[0]) + `[ =]` + regexp.QuoteMeta(zero) + `(\s|'|$)`)
		if !re.MatchString(script) {
			t.Errorf("%s has no case for tavern %s --%s %s", zeroScript, path, f.Names()[0], zero)
		}
	})
	if n < 40 {
		t.Fatalf("found %d numeric and duration flags; the walk is broken", n)
	}
}
