package main

import (
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs lets flags follow positional arguments, as in
// `tavern set agents/alice n=3 --if-rev R` (urfave/cli v2 stops parsing
// flags at the first argument). Everything after "--" stays positional.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	flags := app.Flags
	var cmd *cli.Command
	cmds := app.Commands
	// Global flags and the command path.
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return args
		}
		if isFlag(a) {
			out = append(out, a)
			if takesValue(flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(a) {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd = next
		out = append(out, a)
		flags = cmd.Flags
		cmds = cmd.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	// An unknown subcommand (`tavern item shwo X --json`): leave the rest
	// alone so it is reported as such, not as a flag of the parent.
	if cmd == nil || cmd.SkipFlagParsing || len(cmd.Subcommands) > 0 {
		return append(out, args[i:]...)
	}
	var fl, pos, rest []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = args[i+1:]
			break
		}
		if isFlag(a) {
			fl = append(fl, a)
			if takesValue(flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				fl = append(fl, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out = append(out, fl...)
	// `tavern ls agents --help` asks for the command's help; passed on,
	// the positionals would read as a help topic ("No help topic for ...").
	if slices.ContainsFunc(fl, func(f string) bool { return f == "--help" || f == "-h" || f == "-help" }) {
		return out
	}
	if len(pos)+len(rest) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
		out = append(out, rest...)
	}
	return out
}

func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	if a[1] >= '0' && a[1] <= '9' { // a negative number
		return false
	}
	return true
}

func takesValue(flags []cli.Flag, a string) bool {
	name := strings.TrimLeft(a, "-")
	name, _, _ = strings.Cut(name, "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return name == "dir"
}

// needArgs checks the number of arguments: at least min, at most max
// (-1: any); msg is the usage error otherwise.
func needArgs(msg string, min, max int) func(*cli.Context) error {
	return func(c *cli.Context) error {
		if n := c.NArg(); n < min || max >= 0 && n > max {
			return usageErr("%s", msg)
		}
		return nil
	}
}

// parseAssignments splits field=value arguments.
func parseAssignments(args []string) ([][2]string, error) {
	var out [][2]string
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, usageErr("%q is not field=value", a)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// readBody reads --body: a file, or stdin for "-".
func readBody(c *cli.Context) ([]byte, error) { return readFileArg(c, "body") }

// readFileArg reads the file flag names, or stdin for "-"; "" is no
// content.
func readFileArg(c *cli.Context, flag string) ([]byte, error) {
	f := c.String(flag)
	switch f {
	case "":
		return nil, nil
	case "-":
		return io.ReadAll(c.App.Reader)
	}
	return readInputFile("--"+flag, f, "a file")
}

// readInputFile reads file f that the command line names (what: the flag
// or command naming it). A directory is the command line's mistake (exit
// 2, saying want), not a read error (exit 1, "is a directory").
func readInputFile(what, f, want string) ([]byte, error) {
	data, err := os.ReadFile(f)
	if err != nil {
		if fi, serr := os.Stat(f); serr == nil && fi.IsDir() {
			return nil, usageErr("%s: %s is a directory; give %s", what, f, want)
		}
	}
	return data, err
}

// textArg is the text from the arguments from index from on, or stdin
// when there are none (or the one argument is "-").
func textArg(c *cli.Context, from int) (string, error) {
	args := c.Args().Slice()[from:]
	if len(args) == 0 || (len(args) == 1 && args[0] == "-") {
		if f, ok := c.App.Reader.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				return "", usageErr("no text: give it as an argument or on stdin")
			}
		}
		b, err := io.ReadAll(c.App.Reader)
		return string(b), err
	}
	return strings.Join(args, " "), nil
}

// queryArg is a search's QUERY (the arguments from from on, joined). A
// blank one is a usage error: it has no word to rank by, and an empty
// list would read as "nothing matches".
func queryArg(c *cli.Context, from int, cmd string) (string, error) {
	q := strings.Join(c.Args().Slice()[from:], " ")
	if strings.TrimSpace(q) == "" {
		return "", usageErr("%s: the query is blank: give the words to search for", cmd)
	}
	return q, nil
}

// splitList accepts repeated flags and comma lists: --queue a,b --queue c.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// helpJSONArgs turns a command line that asks for help under --json
// (`tavern ls --help --json`, `tavern queue help take --json`) into
// `tavern help --json PATH...`: urfave/cli's --help and its parents' help
// subcommand print the text help whatever else is given, and `help
// --json` is the one JSON form of a command's help (docs/json.md). ok is
// false for every other command line, which runs as given. The command
// path is found as reorderArgs finds it; an unknown name at a parent ends
// it, and is kept so that help reports it as unknown.
func helpJSONArgs(app *cli.App, args []string) (out []string, ok bool) {
	var path []string
	flags, cmds := app.Flags, app.Commands
	var cmd *cli.Command
	help, asJSON := false, false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if isFlag(a) {
			name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			on := !hasVal
			if hasVal {
				on, _ = strconv.ParseBool(val)
			}
			switch name {
			case "help", "h":
				help = on
			case "json":
				asJSON = on
			}
			if !hasVal && takesValue(flags, a) {
				i++
			}
			continue
		}
		if cmd != nil && len(cmds) == 0 {
			continue // a leaf's argument (reorderArgs moves its flags ahead)
		}
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(a) && !c.Hidden {
				next = c
			}
		}
		if next == nil && cmd != nil && (a == "help" || a == "h") {
			help = true // urfave/cli's help subcommand of a parent: its own parse ignores --json
			continue
		}
		if next == nil {
			if !help {
				// The parent stops parsing flags here, and reports the
				// name as unknown.
				return nil, false
			}
			path = append(path, a)
			break
		}
		if next.SkipFlagParsing {
			return nil, false
		}
		cmd, flags, cmds = next, next.Flags, next.Subcommands
		path = append(path, a)
	}
	if !help || !asJSON && len(path) < 2 {
		return nil, false
	}
	if !asJSON {
		// urfave/cli shows the help of the first command named when
		// --help comes before it (`tavern --help queue take` printed
		// queue's); help PATH prints the one asked for.
		return append([]string{args[0], "help"}, path...), true
	}
	return append([]string{args[0], "help", "--json"}, path...), true
}
