package kit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestWritePaths(t *testing.T) {
	tests := []struct {
		tool  string
		input string
		want  []string
	}{
		{"Write", `{"file_path":"/p/src/a.go","content":"x"}`, []string{"/p/src/a.go"}},
		{"Edit", `{"file_path":"src/a.go","old_string":"a","new_string":"b"}`, []string{"/p/src/a.go"}},
		{"MultiEdit", `{"file_path":"/p/b.go","edits":[]}`, []string{"/p/b.go"}},
		{"NotebookEdit", `{"notebook_path":"/p/n.ipynb","new_source":"x"}`, []string{"/p/n.ipynb"}},
		{"write_file", `{"file_path":"/p/w.txt","content":"x"}`, []string{"/p/w.txt"}},
		{"replace", `{"file_path":"/p/r.txt","old_string":"a","new_string":"b"}`, []string{"/p/r.txt"}},
		{"Read", `{"file_path":"/p/a.go"}`, nil},
		{"apply_patch", `{"command":"*** Begin Patch\n*** Add File: new.go\n+x\n*** Update File: src/old.go\n*** Move to: src/moved.go\n*** Delete File: gone.go\n*** End Patch"}`,
			[]string{"/p/new.go", "/p/src/old.go", "/p/src/moved.go", "/p/gone.go"}},
		{"apply_patch", `{"patch":"*** Update File: x.go\n"}`, []string{"/p/x.go"}},
		{"Bash", `{"command":"ls -la && cat a.go | grep x"}`, nil},
		{"Bash", `{"command":"go test ./... > out.txt 2>&1"}`, []string{"/p/out.txt"}},
		{"run_shell_command", `{"command":"echo hi >> logs/a.log; echo x >/dev/null"}`, []string{"/p/logs/a.log"}},
		{"Bash", `{"command":"make 2>err.txt &> all.txt"}`, []string{"/p/err.txt", "/p/all.txt"}},
		{"Bash", `{"command":"echo x | tee -a one.txt two.txt"}`, []string{"/p/one.txt", "/p/two.txt"}},
		{"Bash", `{"command":"sed -i 's/a/b/' src/a.go src/b.go"}`, []string{"/p/src/a.go", "/p/src/b.go"}},
		{"Bash", `{"command":"sed -e 's/a/b/' src/a.go"}`, nil},
		{"Bash", `{"command":"perl -pi -e 's/a/b/' x.pl"}`, []string{"/p/x.pl"}},
		{"Bash", `{"command":"cp -r a b dest/ && mv old.go new.go"}`, []string{"/p/dest", "/p/dest/a", "/p/dest/b", "/p/old.go", "/p/new.go", "/p/new.go/old.go"}},
		{"Bash", `{"command":"cp -t target a b"}`, []string{"/p/target", "/p/target/a", "/p/target/b"}},
		{"Bash", `{"command":"install -m 0644 -T a.go bin/a"}`, []string{"/p/bin/a"}},
		// Codex's apply_patch through its shell tool: the patch is written.
		{"Bash", `{"command":"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.go\n*** End Patch\nEOF\necho > b.txt"}`, []string{"/p/src/a.go", "/p/b.txt"}},
		{"Bash", `{"command":"apply_patch '*** Begin Patch\n*** Delete File: c.go\n*** End Patch'"}`, []string{"/p/c.go"}},
		// git overwriting work-tree files, and git -C.
		{"Bash", `{"command":"git checkout -- a.go && git restore -s HEAD~1 b && git restore --staged c && git -C sub rm d"}`, []string{"/p/a.go", "/p/b", "/p/sub/d"}},
		{"Bash", `{"command":"git checkout main && git -C /dev rm null"}`, nil},
		// The shell tools' own directory.
		{"run_shell_command", `{"command":"touch a","directory":"sub"}`, []string{"/p/sub/a"}},
		{"shell", `{"command":["rm","b"],"workdir":"/q"}`, []string{"/q/b"}},
		// A cd moves the relative paths after it, in its subshell.
		{"Bash", `{"command":"cd src/parser && sed -i s/a/b/ a.go && echo > /abs/x"}`, []string{"/p/src/parser/a.go", "/abs/x"}},
		{"Bash", `{"command":"cd /q; cd r; touch a; (cd s && touch b); touch c"}`, []string{"/q/r/a", "/q/r/s/b", "/q/r/c"}},
		{"Bash", `{"command":"cd \"$D\" && touch a /abs/b; cd -; touch c"}`, []string{"/abs/b"}},
		{"Bash", `{"command":"cd /dev && echo x > null"}`, nil},
		// A here-document of another command is its input, not a patch.
		{"Bash", `{"command":"cat <<'EOF'\n*** Update File: src/a.go\nEOF"}`, nil},
		{"Bash", `{"command":"rm -f 'src/my file.go' && touch x"}`, []string{"/p/src/my file.go", "/p/x"}},
		{"Bash", `{"command":"FOO=1 sudo truncate -s 0 big.log"}`, []string{"/p/big.log"}},
		{"Bash", `{"command":"git mv a.go b.go; git rm -q c.go; git status"}`, []string{"/p/a.go", "/p/b.go", "/p/c.go"}},
		{"Bash", `{"command":"dd if=/dev/zero of=disk.img bs=1M count=1"}`, []string{"/p/disk.img"}},
		{"Bash", `{"command":"cat > gen.go <<'EOF'\npackage gen\nrm -rf /\nEOF\necho done > done.txt"}`, []string{"/p/gen.go", "/p/done.txt"}},
		// Expansions are not clear paths.
		{"Bash", `{"command":"echo x > \"$OUT\" && rm *.tmp && touch ~/x"}`, nil},
		// An open quote does not tokenize: nothing is clear.
		{"Bash", `{"command":"echo 'oops > a.txt"}`, nil},
		{"Bash", `{"command":"grep -r foo . 2>/dev/null >&2"}`, nil},
		{"Bash", `{"command":["bash","-lc","echo x > argv.txt"]}`, []string{"/p/argv.txt"}},
		{"mcp__tavern__send", `{"text":"> x"}`, nil},
	}
	for _, tt := range tests {
		got := WritePaths(tt.tool, json.RawMessage(tt.input), "/p")
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s %s:\ngot  %q\nwant %q", tt.tool, tt.input, got, tt.want)
		}
	}
}

func FuzzShellWrites(f *testing.F) {
	for _, s := range []string{"echo > a", "cat <<EOF\nx\nEOF", "a 2>&1 | b", `sed -i "s/x/y/" f`, "'", "\\", "(cd x && touch y)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, p := range ShellWrites(line) {
			if p == "" || strings.HasPrefix(p, "/dev/") {
				t.Fatalf("ShellWrites(%q) gave %q", line, p)
			}
		}
	})
}

func TestTreePaths(t *testing.T) {
	for _, tt := range []struct {
		tool, input string
		want        []string
	}{
		{"Bash", `{"command":"rm -rf src/parser && rm -f x.go"}`, []string{"/p/src/parser"}},
		{"Bash", `{"command":"sudo rm -R --force a b; rmdir c"}`, []string{"/p/a", "/p/b", "/p/c"}},
		{"Bash", `{"command":"mv src/a src/b dest && git mv old new && git rm -r -q gone"}`, []string{"/p/src/a", "/p/src/b", "/p/old", "/p/gone"}},
		{"Bash", `{"command":"mv -t dest a b; rm -- -r; git rm x; mkdir -p d"}`, nil},
		{"shell", `{"command":["bash","-lc","rm -rf /p/build"]}`, []string{"/p/build"}},
		{"shell", `{"command":["rm","-r","lib"]}`, []string{"/p/lib"}},
		{"Bash", `{"command":"cd src && rm -rf parser"}`, []string{"/p/src/parser"}},
		{"Edit", `{"file_path":"a.go"}`, nil},
	} {
		got := TreePaths(tt.tool, json.RawMessage(tt.input), "/p")
		if !slices.Equal(got, tt.want) {
			t.Errorf("TreePaths(%s, %s) = %q, want %q", tt.tool, tt.input, got, tt.want)
		}
	}
}
