package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

func newConstitutionCommand() *cli.Command {
	return &cli.Command{
		Name:  "constitution",
		Usage: "write a role's constitution or print its sha256",
		Description: `Write a role's constitution or print its sha256.

Examples:
   tavern constitution set builder --body builder.md
   tavern constitution sha builder`,
		Subcommands: []*cli.Command{
			{
				Name:      "set",
				Usage:     "create or replace constitutions/ROLE.md (agents under the old text must --accept-constitution)",
				ArgsUsage: "ROLE",
				Description: `Create or replace constitutions/ROLE.md (agents under the old text must --accept-constitution).

A ROLE that has no constitution and that no agent has is a new role. One near
a role that has a constitution (the roles constitution sha says "did you mean"
for) is refused as a likely typo, exit 2, unless --new says it is new; and its
name is lower-case letters, digits, '-', '_' and '.' (exit 2 otherwise).
Nothing is written then.

Examples:
   tavern constitution set builder --body builder.md
   tavern constitution set reviewer --text "Never merge your own work."
   tavern constitution set reviewers --new --text "Review in pairs."`,
				Flags: []cli.Flag{bodyFlag(), &cli.StringFlag{Name: "description", Usage: "a one-line description of the role"}, &cli.StringFlag{Name: "text", Usage: "the constitution `TEXT` (or --body)"},
					&cli.BoolFlag{Name: "new", Usage: "ROLE is a new role, though its name is near an existing one"}},
				Action: runConstitutionSet,
			},
			{
				Name:      "sha",
				Usage:     "print the sha256 agents record for ROLE",
				ArgsUsage: "ROLE",
				Description: `Print the sha256 agents record for ROLE. It hashes the instructions
only (the constitution's markdown body): its frontmatter (description,
updated) does not count, so setting the same text again keeps the hash and
no agent of the role has to --accept-constitution.

Examples:
   tavern constitution sha builder`,
				Flags:  []cli.Flag{jsonFlag()},
				Action: runConstitutionSHA,
			},
		},
	}
}

func runConstitutionSet(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("constitution set takes one ROLE")
	}
	text := c.String("text")
	if text == "" {
		b, err := readBody(c)
		if err != nil {
			return err
		}
		text = string(b)
	}
	if strings.TrimSpace(text) == "" {
		return usageErr("constitution set needs --text or --body")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	sha, err := m.WriteConstitution(c.Args().First(), strings.TrimSpace(text), agents.ConstitutionOptions{Description: c.String("description"), New: c.Bool("new")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]string{"role": c.Args().First(), "path": agents.ConstitutionPath(c.Args().First()), "sha256": sha})
	}
	outf(c, "%s %s\n", agents.ConstitutionPath(c.Args().First()), sha)
	return nil
}

func runConstitutionSHA(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("constitution sha takes ROLE")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	sha, err := m.ConstitutionSHA(c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]string{"role": c.Args().First(), "sha256": sha})
	}
	outf(c, "%s\n", sha)
	return nil
}
