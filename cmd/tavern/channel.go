package main

import (
	"errors"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "channel",
		Usage: "create, list and archive message channels",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "create a channel",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "topic", Usage: "what the channel is for"}, jsonFlag},
				Action: func(c *cli.Context) error {
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
				},
			},
			{
				Name:  "ls",
				Usage: "list active channels (--all: archived too)",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "include archived channels"}, jsonFlag},
				Action: func(c *cli.Context) error {
					s, err := openStore(c)
					if err != nil {
						return err
					}
					chs, errs := messages.ListChannels(s, c.Bool("all"))
					if c.Bool("json") {
						if chs == nil {
							chs = []*messages.Channel{}
						}
						if err := printJSON(c, chs); err != nil {
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
				},
			},
			{
				Name:      "archive",
				Usage:     "archive a channel: hidden from lists, closed to new messages, kept",
				ArgsUsage: "NAME",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErr("channel archive takes NAME")
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
					return messages.ArchiveChannel(s, c.Args().First())
				},
			},
		},
	})
}
