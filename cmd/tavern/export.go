package main

import (
	"errors"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/view/web"
)

func newExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write a static snapshot of the views (HTML or Markdown) for sharing",
		ArgsUsage: "[DIR]",
		Description: `Writes the pages of tavern serve as they are now, for people without the
repository or a server: --html DIR writes static HTML pages (index.html is
Needs you; agents, queues with their items, channels, resources, journal; the
style is inlined, there are no forms or scripts). --md DIR writes the same
pages as Markdown files (README.md first); --md without DIR prints them as
one Markdown document. --json prints the snapshot (as tavern ui --json).
--md without DIR and --json both print to stdout, so they are refused
together (exit 2); with a DIR, --json prints the snapshot while the pages
go to DIR. DIR may hold an earlier export, which is replaced (its pages of
agents, items and channels gone since are removed); a file there
with a page's name that is not an export (a README.md, an index.html) is
never overwritten: refused (exit 4) before anything is written.

Examples:
   tavern export --html snapshot/ && (cd snapshot && zip -r ../board.zip .)
   tavern export --md > STATUS.md`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "html", Usage: "write HTML pages into DIR"},
			&cli.BoolFlag{Name: "md", Usage: "write Markdown pages into DIR, or one document to stdout without DIR"},
			jsonFlag(), personFlag(),
		},
		Action: runExport,
	}
}

func runExport(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr("export takes at most one DIR")
	}
	dir := c.Args().First()
	html, md, asJSON := c.Bool("html"), c.Bool("md"), c.Bool("json")
	switch {
	case !html && !md && !asJSON:
		return usageErr("export needs --html DIR, --md [DIR] or --json")
	case html && dir == "":
		return usageErr("export --html needs a DIR to write the pages into")
	case !html && !md && dir != "":
		// Only pages go to a DIR: a DIR with --json alone would be
		// ignored, and the user would look for files that were never written.
		return usageErr("export --json prints to stdout and takes no DIR (add --html or --md to write pages into %s)", dir)
	case md && asJSON && dir == "":
		// Both would print to stdout, and a reader of either would choke
		// on the other: refuse rather than pick one silently.
		return usageErr("export takes --md or --json, not both, without a DIR: both print to stdout (give --md a DIR to write the pages there)")
	}
	v, err := openView(c, false, "export")
	if err != nil {
		return err
	}
	defer v.Close()
	if dir != "" {
		// Before --json prints: a DIR refused leaves stdout empty.
		flag := "md"
		if html {
			flag = "html"
		}
		if err := web.CheckExportDir(v, dir); err != nil {
			return exportDirErr(flag, dir, err)
		}
	}
	if asJSON {
		snap, err := v.Snapshot()
		if err != nil {
			return err
		}
		if err := printJSON(c, snap); err != nil {
			return err
		}
	}
	if html {
		files, err := web.ExportHTML(v, dir)
		if err != nil {
			return err
		}
		errf(c, "tavern: wrote %d HTML files to %s (open %s)\n", len(files), dir, filepath.Join(dir, "index.html"))
	}
	if md {
		if dir == "" {
			snap, err := v.Snapshot()
			if err != nil {
				return err
			}
			return web.WriteMarkdown(c.App.Writer, snap)
		}
		files, err := web.ExportMarkdown(v, dir)
		if err != nil {
			return err
		}
		errf(c, "tavern: wrote %d Markdown files to %s\n", len(files), dir)
	}
	return nil
}

// exportDirErr says which flag took a DIR that is not a directory: a
// usage error (exit 2), not a failure to write.
func exportDirErr(flag, dir string, err error) error {
	if errors.Is(err, web.ErrNotDir) {
		return usageErr("--%s takes a directory to write the pages into: %s is not a directory", flag, dir)
	}
	return err
}
