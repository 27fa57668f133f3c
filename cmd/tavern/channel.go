package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
)

func newChannelCommand() *cli.Command {
	return &cli.Command{
		Name:  "channel",
		Usage: "create, list and archive message channels",
		Description: `Create, list and archive message channels.

Examples:
   tavern channel create general --topic "project chat"
   tavern channel ls
   tavern channel archive general`,
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "create a channel",
				ArgsUsage: "NAME",
				Description: `Create a channel.

A name near an existing channel's (gne beside gen) is refused as a likely
typo (exit 2, did you mean; nothing written), as token init and budget set
refuse one: --new makes it anyway. Numbered names (team-2 beside team-1)
are a series, not typos.

Examples:
   tavern channel create general --topic "project chat"
   tavern channel create gne --new`,
				Flags: []cli.Flag{&cli.StringFlag{Name: "topic", Usage: "what the channel is for"},
					&cli.BoolFlag{Name: "new", Usage: "NAME is a new channel, though its name is near an existing one"}, jsonFlag()},
				Action: runChannelCreate,
			},
			{
				Name:  "ls",
				Usage: "list active channels (--all: archived too)",
				Description: `List active channels (--all: archived too).

A channel document or message chunk that does not parse is reported on
stderr with its path:line:col (a JSON error object with --json) and left
out (a chunk, out of its channel's count); the rest is listed and the exit
code stays 0 (` + "`tavern check`" + ` exits 5 for it).

Examples:
   tavern channel ls
   tavern channel ls --all --json`,
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "include archived channels"}, jsonFlag()},
				Action: withStore(runChannelLs),
			},
			{
				Name:      "archive",
				Usage:     "archive a channel: hidden from lists, closed to new messages, kept",
				ArgsUsage: "NAME",
				Description: `Archive a channel: hidden from lists, closed to new messages, kept.

Examples:
   tavern channel archive general`,
				Action: runChannelArchive,
			},
		},
	}
}

func runChannelCreate(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("channel create takes NAME")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	ch, err := messages.CreateChannelWith(s, c.Args().First(), c.String("topic"), messages.CreateOptions{New: c.Bool("new")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, ch)
	}
	outf(c, "%s\n", ch.Path)
	return nil
}

func runChannelLs(c *cli.Context, s *docstore.Store) error {
	chs, err := messages.ListChannels(s, c.Bool("all"))
	// A file that does not parse hides no other channel: warned about
	// (path:line:col), the rest listed, exit 0 as ls; check fails on it.
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c, orEmpty(chs)); err != nil {
			return err
		}
	} else {
		tw := newTable(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHANNEL\tMESSAGES\tTOPIC")
		for _, ch := range chs {
			topic := ch.Topic
			if ch.Archived {
				topic = strings.TrimLeft(topic+" (archived)", " ")
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", ch.Name, ch.Messages, topic)
		}
		return tw.Flush()
	}
	return nil
}

func runChannelArchive(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("channel archive takes NAME")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	if err := messages.ArchiveChannel(s, c.Args().First()); err != nil {
		return err
	}
	ch, err := messages.GetChannel(s, c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, ch)
	}
	outf(c, "%s archived\n", ch.Path)
	return nil
}
