package main

// The command reference (docs/commands.md), the man page (docs/tavern.1)
// and the command list in README.md are generated from the command
// definitions: `make docs` runs TestDocs with -update, and `make check`
// runs it without, so a command, flag or usage changed without them
// fails. docs/json.md is generated from the JSON shapes the JSON contract
// test pins (testdata/json/, json_test.go).

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"
)

var update = flag.Bool("update", false, "rewrite the generated docs, testdata/*.golden and the README's screenshots in examples/")

// docsApp is the app as users run it (every command prepared: --dir and
// --json added).
func docsApp() *cli.App { return newApp(strings.NewReader(""), io.Discard, io.Discard) }

// leafCommands walks the command tree: every command with its full name
// ("queue take"), parents before their subcommands, hidden ones left out.
func leafCommands(cmds []*cli.Command, prefix string, fn func(path string, c *cli.Command)) {
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		fn(prefix+c.Name, c)
		leafCommands(c.Subcommands, prefix+c.Name+" ", fn)
	}
}

// synopsis is one command's usage line: tavern PATH [options] ARGS.
func synopsis(path string, c *cli.Command) string {
	s := "tavern " + path
	if !runs(c) {
		return s + " COMMAND"
	}
	if c.ArgsUsage != "" {
		s += " " + c.ArgsUsage
	}
	return s
}

// flagDoc is a flag's name(s) with its placeholder, its default (once)
// and its usage.
func flagDoc(f cli.Flag) (names, def, usage string) {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return strings.Join(f.Names(), ", "), "", ""
	}
	placeholder, usage := unquoteUsage(df.GetUsage())
	var ns []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			ns = append(ns, "-"+n)
		} else {
			ns = append(ns, "--"+n)
		}
	}
	names = strings.Join(ns, ", ")
	if df.TakesValue() {
		if placeholder == "" {
			placeholder = "value"
		}
		names += " " + placeholder
	}
	if df.TakesValue() {
		def = df.GetDefaultText()
		if def == "" {
			def = df.GetValue()
		}
		if def == `""` || def == "[]" {
			def = ""
		}
	}
	return names, def, usage
}

// renderReference is docs/commands.md.
func renderReference(app *cli.App) string {
	var b strings.Builder
	b.WriteString("# tavern command reference\n\n")
	b.WriteString("Generated from the command definitions by `make docs` (cmd/tavern/docs_test.go); do not edit.\n")
	b.WriteString("`tavern help COMMAND` and `tavern COMMAND --help` print the same.\n\n")
	b.WriteString("Every command takes `--dir DIR` (the store; default: search upward, or `$TAVERN_DIR`) and `--json`,\n")
	b.WriteString("which means the same before the command name (`tavern --json ls agents`). Exit codes: see README.md.\n\n")
	b.WriteString("## Commands\n\n")
	leafCommands(app.Commands, "", func(path string, c *cli.Command) {
		fmt.Fprintf(&b, "- [`tavern %s`](#%s) — %s\n", path, anchor("tavern "+path), c.Usage)
	})
	leafCommands(app.Commands, "", func(path string, c *cli.Command) {
		level := strings.Repeat("#", 2+strings.Count(path, " "))
		fmt.Fprintf(&b, "\n%s tavern %s\n\n%s.\n\n```\n%s\n```\n", level, path, strings.TrimSuffix(c.Usage, "."), synopsis(path, c))
		if c.Description != "" {
			b.WriteString("\n" + markdownText(c.Description) + "\n")
		}
		if runs(c) {
			var rows []string
			for _, f := range c.Flags {
				if name := f.Names()[0]; name == "dir" || name == "json" || !visible(f) {
					continue
				}
				names, def, usage := flagDoc(f)
				if def != "" {
					def = "`" + def + "`"
				}
				rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", names, def, escapePipes(usage)))
			}
			if len(rows) > 0 {
				b.WriteString("\n| flag | default | meaning |\n|---|---|---|\n" + strings.Join(rows, "\n") + "\n")
			}
		}
	})
	return b.String()
}

func visible(f cli.Flag) bool {
	v, ok := f.(cli.VisibleFlag)
	return !ok || v.IsVisible()
}

func escapePipes(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// anchor is GitHub's heading anchor.
func anchor(h string) string {
	h = strings.ToLower(h)
	return regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(strings.ReplaceAll(h, " ", "-"), "")
}

// markdownText renders a command description: indented lines (examples,
// tables) become code blocks, the rest is text.
func markdownText(desc string) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimRight(desc, "\n"), "\n")
	inCode := false
	for i, l := range lines {
		code := strings.HasPrefix(l, "   ") || strings.HasPrefix(l, "\t")
		// A blank line between two indented lines stays in the block.
		if l == "" && inCode && i+1 < len(lines) && (strings.HasPrefix(lines[i+1], "   ") || strings.HasPrefix(lines[i+1], "\t")) {
			code = true
		}
		if code != inCode {
			if code {
				b.WriteString("\n```\n")
			} else {
				b.WriteString("```\n")
			}
			inCode = code
		}
		if code {
			b.WriteString(strings.TrimPrefix(l, "   ") + "\n")
		} else {
			b.WriteString(l + "\n")
		}
	}
	if inCode {
		b.WriteString("```\n")
	}
	return b.String()
}

// renderMan is docs/tavern.1: the command list and every command with
// its flags, through go-md2man (urfave/cli's own man page renderer).
func renderMan(app *cli.App) []byte {
	var b strings.Builder
	b.WriteString("% tavern 1\n\n# NAME\n\ntavern - " + app.Usage + "\n\n# SYNOPSIS\n\n**tavern** [**--dir** DIR] [**--json**] COMMAND [ARGS]\n\n")
	b.WriteString("# DESCRIPTION\n\n" + manText(app.Description) + "\n\n# COMMANDS\n\n")
	leafCommands(app.Commands, "", func(path string, c *cli.Command) {
		fmt.Fprintf(&b, "**%s**\n: %s\n\n", manEscape(synopsis(path, c)), manEscape(c.Usage))
		if !runs(c) {
			return
		}
		for _, f := range c.Flags {
			if name := f.Names()[0]; name == "dir" || name == "json" || !visible(f) {
				continue
			}
			names, def, usage := flagDoc(f)
			if def != "" {
				usage += " (default: " + def + ")"
			}
			fmt.Fprintf(&b, "    %s: %s\n\n", manEscape(names), manEscape(usage))
		}
	})
	b.WriteString("# FILES\n\n.tavern/ in the project directory: the store. See README.md and `tavern schema`.\n\n")
	b.WriteString("# SEE ALSO\n\n`tavern help COMMAND`, docs/commands.md (the full reference with descriptions and examples), docs/json.md.\n")
	return md2man.Render([]byte(b.String()))
}

func manText(s string) string { return manEscape(strings.ReplaceAll(s, "\n\n", "\n\n")) }

func manEscape(s string) string {
	return strings.NewReplacer("\\", "\\\\", "*", "\\*", "_", "\\_", "`", "", "<", "\\<", ">", "\\>", "[", "\\[", "]", "\\]").Replace(s)
}

// renderCommandList is the command list README.md carries between its
// markers: one line per command, its synopsis and what it does.
func renderCommandList(app *cli.App) string {
	var lines []string
	width := 0
	leafCommands(app.Commands, "", func(path string, c *cli.Command) {
		if runs(c) {
			width = max(width, len(synopsis(path, c)))
		}
	})
	leafCommands(app.Commands, "", func(path string, c *cli.Command) {
		if runs(c) {
			lines = append(lines, fmt.Sprintf("%-*s  %s", width, synopsis(path, c), c.Usage))
		}
	})
	return "```\n" + strings.Join(lines, "\n") + "\n```\n"
}

const (
	readmeBegin = "<!-- commands: generated by make docs from the command definitions -->\n"
	readmeEnd   = "<!-- end of commands -->\n"
)

// checkGenerated compares a generated file with the one on disk, or
// writes it with -update.
func checkGenerated(t *testing.T, path string, want []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make docs)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not current: run make docs", path)
	}
}

// TestDocs checks the generated reference, man page and README command
// list against the command definitions.
func TestDocs(t *testing.T) {
	app := docsApp()
	checkGenerated(t, filepath.Join("docs", "commands.md"), []byte(renderReference(app)))
	checkGenerated(t, filepath.Join("docs", "tavern.1"), renderMan(app))
	readme := filepath.Join("..", "..", "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(data), readmeBegin)
	_, after, ok2 := strings.Cut(rest, readmeEnd)
	if !ok1 || !ok2 {
		t.Fatalf("README.md has no generated command list (markers %q ... %q)", readmeBegin, readmeEnd)
	}
	checkGenerated(t, readme, []byte(before+readmeBegin+renderCommandList(app)+readmeEnd+after))

	// The man page renders with man(1), as a user reads it.
	if _, err := exec.LookPath("man"); err != nil {
		t.Log("man is not installed: the man page is not rendered (make tools installs it)")
		return
	}
	cmd := exec.Command("man", "-l", filepath.Join("docs", "tavern.1"))
	cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "MANWIDTH=100")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tavern queue take") {
		t.Errorf("man -l docs/tavern.1: %v\n%s", err, out)
	}
}

// TestReadmeCommands: every `tavern ...` line in README.md's code blocks
// names a command that exists, with flags it has, so the hand-written
// examples cannot drift from the commands.
func TestReadmeCommands(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	app := docsApp()
	// The checker itself: it must refuse what does not exist.
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"queue take Q --wait 1s --as A   note", true},
		{"memory add|ls --as A", true},
		{"queue tak Q", false},
		{"ls agents --bogus", false},
	} {
		if err := checkReadmeLine(app, tc.line); (err == nil) != tc.ok {
			t.Errorf("checkReadmeLine(%q) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
	inCode, generated := false, false
	for n, line := range strings.Split(string(data), "\n") {
		switch line + "\n" {
		case readmeBegin:
			generated = true
		case readmeEnd:
			generated = false
		}
		if generated {
			continue
		}
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			continue
		}
		for _, seg := range regexp.MustCompile(`(?:^|[;|&(]\s*|\$\()tavern (.*)`).FindAllStringSubmatch(line, -1) {
			if err := checkReadmeLine(app, seg[1]); err != nil {
				t.Errorf("README.md:%d: tavern %s: %v", n+1, seg[1], err)
			}
		}
	}
}

// checkReadmeLine checks one command line of README.md: the command path
// exists and every --flag is one of its flags.
func checkReadmeLine(app *cli.App, line string) error {
	line, _, _ = strings.Cut(line, "#")   // a comment
	line, _, _ = strings.Cut(line, ";")   // the next command
	line, _, _ = strings.Cut(line, "   ") // a note in a column of its own
	words := strings.Fields(line)
	cmds, flags := app.Commands, app.Flags
	var cmd *cli.Command
	for len(words) > 0 {
		w, _, _ := strings.Cut(words[0], "|") // add|ls|search: the first
		w = strings.TrimRight(w, "),.")       // prose in a code block: (tavern ui),
		if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "[]") {
			break
		}
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(w) {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd, cmds, flags, words = next, next.Subcommands, append(next.Flags, app.Flags...), words[1:]
		if runs(cmd) && (len(words) == 0 || cmd.Command(words[0]) == nil) {
			break
		}
	}
	if cmd != nil && !runs(cmd) {
		return fmt.Errorf("%s takes a subcommand", cmd.Name)
	}
	if cmd == nil {
		if len(words) > 0 && strings.HasPrefix(words[0], "-") {
			// global flags only (tavern --version)
		} else {
			return fmt.Errorf("no such command")
		}
	}
	for _, w := range words {
		if w == "--" || w == "..." {
			break
		}
		name, ok := strings.CutPrefix(w, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		name = strings.TrimRight(name, "]).,;")
		if i := strings.IndexAny(name, "|["); i >= 0 {
			name = name[:i]
		}
		found := false
		for _, f := range flags {
			for _, n := range f.Names() {
				found = found || n == name
			}
		}
		if !found && name != "dir" && name != "json" && name != "help" {
			return fmt.Errorf("no flag --%s", name)
		}
	}
	return nil
}
