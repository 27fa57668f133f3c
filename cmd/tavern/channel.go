package main

import (
	"errors"

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

Examples:
   tavern channel create general --topic "project chat"`,
				Flags:  []cli.Flag{&cli.StringFlag{Name: "topic", Usage: "what the channel is for"}, jsonFlag()},
				Action: runChannelCreate,
			},
			{
				Name:  "ls",
				Usage: "list active channels (--all: archived too)",
				Description: `List active channels (--all: archived too).

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
	ch, err := messages.CreateChannel(s, c.Args().First(), c.String("topic"))
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
	chs, errs := messages.ListChannels(s, c.Bool("all"))
	if c.Bool("json") {
		if err := printJSON(c, orEmpty(chs)); err != nil {
			return err
		}
	} else {
		for _, ch := range chs {
			flag := ""
			if ch.Archived {
				flag = " (archived)"
			}
			outf(c, "%-24s %6d  %s%s\n", ch.Name, ch.Messages, ch.Topic, flag)
		}
	}
	return errors.Join(errs...)
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
