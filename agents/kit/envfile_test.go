package kit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The env file is sourced by bash before each command: what WriteEnvFile
// appends must come out as variables, whatever the file held before.
func TestWriteEnvFileSourced(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	tests := []struct{ name, before string }{
		{"new", ""},
		{"after a full line", "export OTHER='x'\n"},
		{"after a line without its newline", "export OTHER='x'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "env")
			if tt.before != "" {
				if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteEnvFile(path, map[string]string{"TAVERN_AGENT": "alice", "Q": "it's"}); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("bash", "-c", `. "$1" && printf '%s|%s|%s' "$TAVERN_AGENT" "$Q" "$OTHER"`, "bash", path).CombinedOutput()
			if err != nil {
				t.Fatalf("source: %v: %s", err, out)
			}
			want := "alice|it's|"
			if tt.before != "" {
				want += "x"
			}
			if got := string(out); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
