package schema

import (
	"errors"
	"strings"
	"testing"
)

// validNameRule is ValidName's rule as first written (before its single
// pass), the reference the fast version is held to.
func validNameRule(s string) string {
	switch {
	case s == "":
		return "empty name"
	case len(s) > 200:
		return "longer than 200 bytes"
	case strings.HasPrefix(s, "."):
		return "leading dot"
	case strings.ContainsAny(s, `/\`):
		return "contains a path separator"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return "contains a control or invalid character"
		}
	}
	return ""
}

func checkValidName(t *testing.T, s string) {
	t.Helper()
	got := ""
	if err := ValidName(s); err != nil {
		got = err.(*NameError).Reason
	}
	if want := validNameRule(s); got != want {
		t.Errorf("ValidName(%q): %q, want %q", s, got, want)
	}
}

func TestValidNameRule(t *testing.T) {
	for _, s := range []string{"", "a", ".a", "a.b", "a/b", `a\b`, "a\x00/b", "\x01a/", "a\x7f", "a\ufffd", "a\xff", "a\xc3",
		"ünï", "p01-00000001-0000-7000-8000-000000000000", strings.Repeat("x", 200), strings.Repeat("x", 201), "tab\there"} {
		checkValidName(t, s)
	}
}

func FuzzValidName(f *testing.F) {
	f.Add("p01-00000001-0000-7000-8000-000000000000")
	f.Add("a\x00/b\xff")
	f.Fuzz(checkValidName)
}

// New plans, queues, tokens and budgets get the agent name rule, and the
// error says what the name is of.
func TestValidPlainName(t *testing.T) {
	for _, s := range []string{"build", "docs-todo", "v1.2_x", "a"} {
		if err := ValidPlainName("plan", s); err != nil {
			t.Errorf("ValidPlainName(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "Bad Name", "UPPER", "-x", ".x", "a/b", "tab\there", strings.Repeat("x", 65)} {
		err := ValidPlainName("plan", s)
		if !errors.Is(err, ErrInvalidName) || errors.Is(err, ErrBadAgentName) || !strings.HasPrefix(err.Error(), "invalid plan name ") {
			t.Errorf("ValidPlainName(%q) = %v, want an invalid plan name", s, err)
		}
	}
}

// Machine names: the plain rule with upper case (host names) and up to
// 100 bytes, never ending with '.' (git drops it from a commit's author,
// which is how a sync names the machine that changed a file).
func TestValidMachineName(t *testing.T) {
	for _, s := range []string{"alpha", "MacBook-Pro.local-abcd", "vm_2", "a", strings.Repeat("x", 100)} {
		if err := ValidMachineName(s); err != nil {
			t.Errorf("ValidMachineName(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "bad name", "x.", "-x", ".x", "_x", "a/b", `a\b`, "a:b", "a@b", "a<b", "tab\there", "é", strings.Repeat("x", 101)} {
		err := ValidMachineName(s)
		if !errors.Is(err, ErrInvalidName) || !strings.HasPrefix(err.Error(), "invalid machine name ") {
			t.Errorf("ValidMachineName(%q) = %v, want an invalid machine name", s, err)
		}
	}
}
