package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// ConstitutionPath is the document path of a role's constitution.
func ConstitutionPath(role string) string { return "constitutions/" + role + ".md" }

// ConstitutionSHA returns the sha256 (hex) of the role's instructions:
// the constitution's markdown body, without the blank lines around it.
// Only the instructions count: frontmatter (description, updated, a
// field added by hand) is bookkeeping, so setting the same text again
// keeps the hash and no agent of the role has to accept anything; any
// change to the text itself, even of white space inside it, is a change
// an agent must not inherit silently.
func (m *Manager) ConstitutionSHA(role string) (string, error) {
	d, err := m.constitution(role)
	if errors.Is(err, docstore.ErrNotExist) {
		// A typo names nothing: say which roles have a constitution
		// (the error still matches docstore.ErrNotExist).
		return "", &schema.UnknownError{What: "constitution", Name: role, Near: m.rolesNear(role), Err: err}
	}
	if err != nil {
		return "", err
	}
	return instructionsSHA(d), nil
}

// rolesNear is the roles that have a constitution whose names are near
// role's, nearest first: what sha offers for "did you mean", and what
// WriteConstitution refuses a new role for.
func (m *Manager) rolesNear(role string) []string {
	return rolesNear(m.Store, role)
}

func rolesNear(s *docstore.Store, role string) []string {
	return schema.Near(role, constitutionRoles(s))
}

// constitutionRoles lists the roles that have a constitution.
func constitutionRoles(s *docstore.Store) []string {
	paths, _ := s.Docs("constitutions")
	roles := make([]string, 0, len(paths))
	for _, p := range paths {
		roles = append(roles, strings.TrimSuffix(strings.TrimPrefix(p, "constitutions/"), ".md"))
	}
	return roles
}

func (m *Manager) constitution(role string) (*docstore.Doc, error) {
	if err := schema.ValidName(role); err != nil {
		return nil, err
	}
	return m.Store.Get(ConstitutionPath(role))
}

func instructionsSHA(d *docstore.Doc) string {
	sum := sha256.Sum256([]byte(strings.Trim(string(d.Body()), "\r\n") + "\n"))
	return hex.EncodeToString(sum[:])
}

// legacySHA is the sha256 of the whole file, which agents recorded before
// the hash covered the instructions only: a record of it still matches.
func (m *Manager) legacySHA(role string) string {
	data, err := m.Store.ReadFile(ConstitutionPath(role))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ConstitutionOptions are the options of WriteConstitution.
type ConstitutionOptions struct {
	// Description is a one-line description of the role ("" keeps the
	// current one).
	Description string
	// New writes the first constitution of a role whose name is near a
	// role that has one, which is otherwise refused as a likely typo.
	New bool
}

// WriteConstitution creates or replaces a role's constitution. Agents
// created under the old text will be refused at their next spawn until
// they accept the new one. A role that has no constitution and that no
// agent has is a new name: one near a role that has a constitution (the
// roles ConstitutionSHA says "did you mean" for) is refused as a likely
// typo with a *RoleError (ErrNearRole) unless opt.New, and it follows
// the plain name rule (schema.ValidPlainName). Nothing is written then.
func (m *Manager) WriteConstitution(role, text string, opt ConstitutionOptions) (string, error) {
	if err := schema.ValidName(role); err != nil {
		return "", err
	}
	rel := ConstitutionPath(role)
	if _, err := m.Store.Stat(rel); errors.Is(err, fs.ErrNotExist) {
		if err := m.checkNewRole("write constitution", rel, role, opt.New); err != nil {
			return "", err
		}
	}
	description := opt.Description
	now := m.now()
	d, err := docstore.New(schema.Constitution, []docstore.Field{
		{Key: schema.VersionField, Value: schema.Constitution.Version},
		{Key: "id", Value: docstore.NewID()}, {Key: "role", Value: role}, {Key: "description", Value: description},
		{Key: "created", Value: now}, {Key: "updated", Value: now},
	}, []byte("\n"+text+"\n"))
	if err != nil {
		return "", err
	}
	if err := m.Store.Create(rel, d); errors.Is(err, docstore.ErrExist) {
		if cur, err := m.constitution(role); err == nil && instructionsSHA(cur) == instructionsSHA(d) &&
			(description == "" || cur.String("description") == description) {
			return instructionsSHA(cur), nil // the same text: nothing to write
		}
		if _, err2 := m.Store.Update(rel, func(cur *docstore.Doc) error {
			cur.SetBody([]byte("\n" + text + "\n"))
			if description != "" {
				if err := cur.Set("description", description); err != nil {
					return err
				}
			}
			return cur.Set("updated", now)
		}); err2 != nil {
			return "", err2
		}
	} else if err != nil {
		return "", err
	}
	sha, err := m.ConstitutionSHA(role)
	if err != nil {
		return "", err
	}
	return sha, m.event(journal.Event{Type: "constitution.written", Kind: "constitution", Path: rel, Data: map[string]any{"role": role, "sha256": sha}})
}

// checkNewRole is the rule for the name of a role that has no
// constitution yet, for WriteConstitution and CreateAgent alike (op and
// path are theirs, for the error). A role that has one, or that agents
// were made with before it had one, is not new: it keeps its name,
// however near another or made before the plain name rule.
func (m *Manager) checkNewRole(op, path, role string, force bool) error {
	if m.roleInUse(role) {
		return nil
	}
	// The typo first: "Reviewer" is better answered with "reviewer"
	// than with the name rule.
	if near := m.rolesNear(role); len(near) > 0 && !force {
		return &RoleError{Op: op, Path: path, Role: role, Near: near, Err: ErrNearRole}
	}
	return schema.ValidPlainName("role", role)
}

// roleInUse reports whether an agent has role.
func (m *Manager) roleInUse(role string) bool { return roleInUse(m.Store, role) }

func roleInUse(s *docstore.Store, role string) bool {
	docs, _ := s.List(schema.Agent) // an agent file that does not parse has no say
	for _, d := range docs {
		if d.String("role") == role {
			return true
		}
	}
	return false
}

// checkConstitution compares the agent's recorded constitution with the
// current file. It returns the sha to record (unchanged, first recording,
// or the accepted new one) and whether it was accepted anew.
func (m *Manager) checkConstitution(a *Agent, accept bool) (sha string, accepted bool, err error) {
	if a.Role == "" {
		return a.Constitution, false, nil
	}
	cur, err := m.ConstitutionSHA(a.Role)
	if err != nil && !errors.Is(err, docstore.ErrNotExist) {
		return "", false, err
	}
	switch {
	case a.Constitution == "":
		return cur, false, nil // first spawn under a role without a recorded constitution
	case a.Constitution == cur:
		return cur, false, nil
	case a.Constitution == m.legacySHA(a.Role):
		return cur, false, nil // recorded by an older version: the same file
	case accept:
		return cur, true, nil
	}
	return "", false, &ConstitutionError{Path: ConstitutionPath(a.Role), Agent: a.Name, Recorded: a.Constitution, Current: cur}
}
