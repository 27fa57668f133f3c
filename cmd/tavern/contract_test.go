package main

// Tests of the CLI contract that walk the command definitions, so a new
// command or flag is covered without anyone remembering to add it.

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
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

// TestExitCodesCovered: every command that runs has at least one failure
// mode checked against README's exit table by a script (an `exits N
// tavern PATH ...` line, N from 1 to 5). A new command fails here until
// its failure modes are written (exitcodes.txtar holds those no other
// script has).
func TestExitCodesCovered(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	// Only the scripts' exits lines, whole: each command's pattern below
	// matches within one such line, and scanning these instead of every
	// script's text (a regexp per command over 400 kB, under -race) took seconds.
	exitsLine := regexp.MustCompile(`(?m)^exits [1-5] .*$`)
	var all strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range exitsLine.FindAll(data, -1) {
			all.Write(l)
			all.WriteString("\n")
		}
	}
	scripts := all.String()
	leafCommands(docsApp().Commands, "", func(path string, c *cli.Command) {
		if !runs(c) {
			return
		}
		re := regexp.MustCompile(`(?m)^exits [1-5] .*\btavern ` + regexp.QuoteMeta(path) + `(\s|$)`)
		if !re.MatchString(scripts) {
			t.Errorf("no script checks a failure of tavern %s (add one to exitcodes.txtar)", path)
		}
	})
}

// minArgs is how many arguments a command's ArgsUsage requires.
func minArgs(usage string) int {
	least := -1
	for _, alt := range strings.Split(usage, " | ") {
		n, depth := 0, 0
		words := strings.Fields(alt)
		for i := 0; i < len(words); i++ {
			w := words[i]
			if depth == 0 && !strings.HasPrefix(w, "[") && !strings.HasPrefix(w, "-") {
				n++
			}
			if strings.HasPrefix(w, "-") && w != "--" {
				i++
			}
			depth += strings.Count(w, "[") - strings.Count(w, "]")
		}
		if least < 0 || n < least {
			least = n
		}
	}
	return max(least, 0)
}

// TestExitCodesEveryCommand runs every command's generic failure modes
// against README's exit table: an unknown flag is a usage error (2), a
// JSON error object on stderr with --json (the text form is one code
// path for all, checked in exitcodes.txtar); one argument
// more than the command takes is 2, never silently ignored; a command
// that needs a store and runs outside one exits 3 saying how to make one.
func TestExitCodesEveryCommand(t *testing.T) {
	t.Parallel()
	bin := tavernBin(t)
	dir := t.TempDir()
	// Outside a store: these make one, need none or are not about one.
	noStore := map[string]int{"help": 0, "schema": 0, "init": -1, "demo": -1, "demo workflow": -1, "completion": -1,
		"hook": -1, "prime": 0, "setup": -1, "guard": 0, "ui": 2,
		// Required flags are checked first.
		"commit add": 2, "export": 2, "sleep": 2}
	run := func(args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		for _, e := range os.Environ() {
			if k, _, _ := strings.Cut(e, "="); !strings.HasPrefix(k, "TAVERN_") && !strings.HasPrefix(k, "GIT_") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Stdin = strings.NewReader("")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{out: out.String(), err: errb.String(), code: code}
	}
	type job struct {
		path string
		c    *cli.Command
	}
	var jobs []job
	leafCommands(docsApp().Commands, "", func(path string, c *cli.Command) {
		if runs(c) {
			jobs = append(jobs, job{path, c})
		}
	})
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			words := strings.Fields(j.path)
			args := append([]string{"--json"}, append(words, "--no-such-flag")...)
			r := run(args...)
			var obj map[string]any
			if j.path == "hook" {
				// The agent tools read exit 2 as "block": hook fails open
				// (hook_usage_failopen.txtar).
				if r.code != exitOK || !strings.Contains(r.err, "no-such-flag") {
					t.Errorf("tavern %s: want exit 0 and the error on stderr, got %s", strings.Join(args, " "), r)
				}
				return
			}
			if r.code != exitUsage || json.Unmarshal([]byte(r.err), &obj) != nil || obj["code"] != float64(exitUsage) || obj["kind"] != "error" || len(obj) != 6 {
				t.Errorf("tavern %s: want exit 2 and a JSON error object, got %s", strings.Join(args, " "), r)
			}
			if n := maxArgs(j.c.ArgsUsage); n >= 0 {
				args := append([]string{}, words...)
				for i := 0; i <= n; i++ {
					args = append(args, "x"+strconv.Itoa(i))
				}
				if r := run(args...); r.code != exitUsage || !strings.Contains(r.err, "takes") {
					t.Errorf("tavern %s (one argument too many): want exit 2 saying what it takes, got %s", strings.Join(args, " "), r)
				}
			}
			if minArgs(j.c.ArgsUsage) == 0 {
				want, ok := noStore[j.path]
				if !ok {
					want = exitNotFound
				}
				if want >= 0 {
					if r := run(words...); r.code != want || (want == exitNotFound && !strings.Contains(r.err, "tavern init")) {
						t.Errorf("tavern %s outside a store: want exit %d, got %s", j.path, want, r)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestMessagesEnglish: no message in the code hedges a plural with
// "(s)" ("1 part(s)"); counts use counted ("1 document", "2
// documents"). english.txtar runs the commands that print counts with a
// count of one.
func TestMessagesEnglish(t *testing.T) {
	hedge := regexp.MustCompile(`[a-z]\((s|es)\)`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution) // literals only: no identifiers to resolve
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && hedge.MatchString(lit.Value) {
				t.Errorf("%s: %s hedges a plural with (s): say it for the count (counted)", path, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
