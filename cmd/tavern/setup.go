package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/kit"
)

func newSetupCommand() *cli.Command {
	return &cli.Command{
		Name:      "setup",
		Usage:     "install Tavern's hooks and AGENTS.md block for claude, codex, gemini or aider",
		ArgsUsage: "claude|codex|gemini|aider",
		Description: `Installs, in the project (the directory holding .tavern/):

   claude   .claude/settings.json hooks; CLAUDE.md imports AGENTS.md (@AGENTS.md)
   codex    .codex/hooks.json hooks (Codex reads AGENTS.md itself)
   gemini   .gemini/settings.json hooks; GEMINI.md imports AGENTS.md (@./AGENTS.md)
   aider    .aider.conf.yml reads AGENTS.md (Aider has no hooks: see examples/agents)

and, for every tool, a short block in AGENTS.md between <!-- tavern:begin --> and
<!-- tavern:end --> (the file is created if absent). The hooks run 'tavern hook
EVENT --tool TOOL' on session start, prompt submit, before and after tool
calls, stop and session end (see 'tavern hook --help').

Settings files are merged, never overwritten: other keys, their order and other
hooks stay as they are, and running setup again changes nothing. A settings
file that does not parse is reported (path:line:col, exit 5) and left alone.

--check reports each part as ok, missing, outdated (a hand edit or an older
setup) or warning, and exits 3 unless everything is installed and current.
--remove takes out exactly what setup added: its hook handlers (and groups or
files they leave empty), its import lines, and the AGENTS.md block once no
other tool's setup uses it.

--bin names the tavern the hooks run (default "tavern", found on PATH; an
absolute path pins one binary, but settings files are often committed).

Examples:
   tavern init && tavern setup claude
   tavern setup codex --check
   tavern setup gemini --remove`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "check", Usage: "report what is installed and whether it is current"},
			&cli.BoolFlag{Name: "remove", Usage: "take out what setup added"},
			&cli.StringFlag{Name: "bin", Value: "tavern", Usage: "the tavern `COMMAND` the hooks run"},
			jsonFlag(),
		},
		Action: runSetup,
	}
}

func runSetup(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("setup takes one of claude, codex, gemini, aider")
	}
	if c.Bool("check") && c.Bool("remove") {
		return usageErr("setup takes --check or --remove, not both")
	}
	tool, err := kit.ParseTool(c.Args().First())
	if err != nil {
		return err
	}
	dir, err := storeDir(c)
	if err != nil {
		return fmt.Errorf("setup needs a Tavern project (run `tavern init` first): %w", err)
	}
	opt := kit.SetupOptions{Project: filepath.Dir(dir), Bin: c.String("bin")}
	if c.Bool("check") {
		items, err := kit.Check(tool, opt)
		if err != nil {
			return err
		}
		bad := false
		for _, it := range items {
			bad = bad || it.Status == "missing" || it.Status == "outdated"
		}
		if c.Bool("json") {
			if err := printJSON(c, items); err != nil {
				return err
			}
		} else {
			tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
			for _, it := range items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Status, it.Path, it.What, it.Detail)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if bad {
			return errSilentNothing
		}
		return nil
	}
	run := kit.Setup
	if c.Bool("remove") {
		run = kit.Remove
	}
	changes, err := run(tool, opt)
	if c.Bool("json") {
		if changes == nil {
			changes = []kit.Change{}
		}
		if perr := printJSON(c, changes); perr != nil {
			return perr
		}
	} else {
		tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
		for _, ch := range changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Action, ch.Path, ch.What)
		}
		if ferr := tw.Flush(); ferr != nil {
			return ferr
		}
	}
	return err
}
