package main

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every command group (queue, item, agent, pool, token...) names itself
// in the error of a subcommand it does not have, exit 2: the one
// parentAction all groups share, checked on the built binary.
func TestUnknownSubcommandNamesGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := 0
	leafCommands(docsApp().Commands, "", func(path string, c *cli.Command) {
		if runs(c) {
			return
		}
		n++
		p := &project{t: t, dir: dir}
		r := p.run(append(strings.Fields(path), "zzqx")...)
		want := `tavern: unknown command "zzqx" for "tavern ` + path + `"`
		if r.code != exitUsage || !strings.Contains(r.err, want) {
			t.Errorf("tavern %s zzqx: exit %d, stderr %q; want exit 2 and %s", path, r.code, r.err, want)
		}
	})
	if n < 10 {
		t.Fatalf("found %d command groups; the walk is broken", n)
	}
}
