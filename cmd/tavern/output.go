package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/view"
)

// printJSON writes v as indented JSON to the command's output.
func printJSON(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonLine writes v as one compact JSON line (streams: log, watch,
// verifier).
func jsonLine(c *cli.Context, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	outf(c, "%s\n", b)
}

// writeOut writes a command's whole output, in parts, into a pipe made
// big enough to take it all when the output is one.
func writeOut(c *cli.Context, parts ...[]byte) error {
	if f, ok := c.App.Writer.(*os.File); ok {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		growPipe(f, n)
	}
	for _, p := range parts {
		if _, err := c.App.Writer.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func outf(c *cli.Context, format string, args ...any) {
	fmt.Fprintf(c.App.Writer, format, args...)
}

func errf(c *cli.Context, format string, args ...any) {
	fmt.Fprintf(c.App.ErrWriter, format, args...)
}

// orEmpty makes a nil list print as [] in JSON.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// clipLine is s on one line, cut at n runes' worth of bytes.
func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

// oneLine is the first line of s, at most 100 runes.
func oneLine(s string) string {
	r := []rune(s)
	for i, x := range r {
		if x == '\n' {
			return string(r[:i]) + " …"
		}
		if i >= 100 {
			return string(r[:i]) + "…"
		}
	}
	return s
}

// indent indents every line of s by four spaces.
func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// errSilentNothing: nothing to print, exit 3, no message (a command that
// must find one thing found none and says so by its exit code alone).
var errSilentNothing = withCode(exitNotFound, errSilent)

// clearProgress erases a progress line (progress) before other output
// on a terminal.
func clearProgress(c *cli.Context) {
	if !c.Bool("json") && isTerminal(c.App.ErrWriter) {
		errf(c, "\r\033[K")
	}
}

// progress returns a progress display for long work (backup, restore,
// migrate, check, reindex): one line on stderr, rewritten in place at
// most every 100ms and cleared at the end, when stderr is a terminal
// and --json is not given; else nil (silent in pipes, logs and JSON).
// Work on fewer than progressMin files or documents shows nothing (no
// flicker on small stores).
func progress(c *cli.Context, what, unit string) func(done, total int) {
	if c.Bool("json") || !isTerminal(c.App.ErrWriter) {
		return nil
	}
	var last time.Time
	shown := false
	return func(done, total int) {
		if total < progressMin {
			return
		}
		if done >= total {
			if shown {
				errf(c, "\r\033[K")
				shown = false
			}
			return
		}
		if time.Since(last) < 100*time.Millisecond {
			return
		}
		last, shown = time.Now(), true
		errf(c, "\r%s: %d of %d %s", what, done, total, unit)
	}
}

// progressMin is the least work that shows progress: a store this large
// takes long enough to watch.
const progressMin = 1000

// counted is n with its noun, singular for one: "1 document", "2
// documents". plural is given when it is not noun+"s" ("entries").
func counted(n int, noun string, plural ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(plural) > 0 {
		return fmt.Sprintf("%d %s", n, plural[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// were is the verb that agrees with counted(n, …): "1 run failed and
// was retried", "2 runs failed and were retried".
func were(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// A table is a tabwriter whose cells show control characters escaped
// (view.Visible): every text table prints user text (titles, names,
// reasons), and a raw ESC or \r in one would reach the terminal.
type table struct {
	tw   *tabwriter.Writer
	part []byte // an incomplete UTF-8 sequence, kept for the next Write
}

func newTable(w io.Writer, minwidth, tabwidth, padding int, padchar byte, flags uint) *table {
	return &table{tw: tabwriter.NewWriter(w, minwidth, tabwidth, padding, padchar, flags)}
}

// Write escapes before the tabwriter measures the cells, so columns
// line up with what is shown.
func (t *table) Write(p []byte) (int, error) {
	b := append(t.part, p...)
	t.part = nil
	// A rune cut between two writes is held, not shown as bad bytes.
	if k := incompleteTail(b); k > 0 {
		t.part = append([]byte(nil), b[len(b)-k:]...)
		b = b[:len(b)-k]
	}
	if _, err := io.WriteString(t.tw, view.Visible(string(b))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (t *table) Flush() error {
	if len(t.part) > 0 {
		io.WriteString(t.tw, view.Visible(string(t.part)))
		t.part = nil
	}
	return t.tw.Flush()
}

// incompleteTail is the length of an unfinished UTF-8 sequence at the
// end of b (0 when b ends on a whole rune).
func incompleteTail(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}
