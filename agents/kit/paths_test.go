package kit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
		// A tilde inside a word is no expansion: a~ is a file.
		{"Bash", `{"command":"rm a.go~ x=~/y"}`, []string{"/p/a.go~"}},
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

// Every prefix of the forms the gate reads options of (an option
// without its value, a wrapper with nothing after it) is read without a
// panic: the hook runs on every tool call.
func TestShellFormPrefixes(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module example.com/m\n", ".git/refs/remotes/origin/x": "0\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	forms := []string{"find . -fprintf a b", "find . -exec sed -i a ;", "xargs -0I{} --max-args 1 -n", "tar -xzf a -C b", "tar xfC a b",
		"tar --file a --directory b", "unzip -d a", "zip a", "gunzip -d a", "chmod --reference a -R b", "rsync -a --exclude a b", "scp -P 1 host:a b",
		"install -d a", "cp -rT a b", "eslint --fix -o a b", "ruff check --fix -o a", "yq -i e a b", "awk -i inplace -f a b", "eval rm a",
		"go mod init", "go fmt example.com/m/...", "go generate -run a b", "git checkout --theirs a", "sudo -u a env -u b timeout -s c 1 nice -n 2 npx -p d rm e",
		"sed -Ei a b", "echo >& a", "git checkout -- :(top,icase)a", "git -C a stash push -m b -- :/!c", "git checkout :/a b",
		"git clean -f -e a :(glob)b/*", "ln -S a b", "function f { g; }", "git --work-tree a --git-dir b checkout -- c", "GIT_DIR=a git --work-tree=b switch c", "git am -p1 --directory=a b", "patch -i a -d b",
		"export GIT_WORK_TREE=a GIT_DIR; unset GIT_DIR; git reset --hard", "declare -x +x GIT_DIR=a; export -n GIT_DIR",
		"git checkout -qp -b a -- b", "git restore -pW -s a --staged b", "git switch -fcx -d y", "sed -l 1 -ie a b", "perl -I a -pie b c", "ruby -r a -ie b c"}
	for _, f := range forms {
		for i := 0; i <= len(f); i++ {
			line := f[:i]
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%q: %v", line, r)
					}
				}()
				in, _ := json.Marshal(map[string]any{"command": line})
				WritePaths("Bash", in, dir)
				TreePaths("Bash", in, dir)
			}()
		}
	}
}

// ShellWrites reads no file: git --work-tree is placed by its words
// alone (outside a work tree given absolute, inside one of ..).
func TestShellWritesWorkTree(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"git --work-tree=/w checkout -- a.go", []string{"/w/a.go"}},
		{"GIT_WORK_TREE=w git rm a.go", []string{"w/a.go"}},
		{"git --work-tree=../.. restore a.go", []string{"a.go"}},
		{"git --git-dir=/r/.git rm a.go", []string{"a.go"}},
		{"export GIT_WORK_TREE=/w; git checkout -- a.go", []string{"/w/a.go"}},
		{"(export GIT_WORK_TREE=/w); git rm a.go", []string{"a.go"}},
	} {
		if got := ShellWrites(tt.line); !slices.Equal(got, tt.want) {
			t.Errorf("ShellWrites(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
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

// The gate's decision on shell forms that write files the words do not
// name as plainly as `rm FILE`: git checkout FILE without --, git apply
// and patch (the diff's files), find -delete, gofmt -w, xargs running a
// writer, and commands in $(...) or backquotes, in a sh -c script too.
// src/parser/** is bob's; each line is run by the session "me".
func TestShellWriteForms(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Dir(e.Store.Root())
	reserve(t, e, "bob", "src/parser/**", "go.sum")
	for _, d := range []string{".git/refs/heads/src", ".git/refs/remotes/origin/src/parser", "src/parser", "src/lexer", "docs"} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"src/parser/a.go":  "package parser\n",
		"src/lexer/l.go":   "package lexer\n",
		"lexer-only.patch": "--- a/src/lexer/l.go\n+++ b/src/lexer/l.go\n@@ -1 +1 @@\n-package lexer\n+package lexer // x\n",
		"parser.patch":     "diff --git a/src/parser/a.go b/src/parser/a.go\n--- a/src/parser/a.go\n+++ b/src/parser/a.go\n@@ -1 +1 @@\n-package parser\n+package parser // x\n",
		"lexer.patch":      "--- a/src/lexer/l.go\n+++ b/src/lexer/l.go\n@@ -1 +1 @@\n--- package lexer\n+++ b/src/parser/not-a-header.go\n",
		// A branch and a tag named like directories (loose and packed).
		".git/refs/heads/src/parser": "0123456789012345678901234567890123456789\n",
		".git/HEAD":                  "ref: refs/heads/work\n",
		".git/packed-refs":           "# pack-refs with: peeled\n0123456789012345678901234567890123456789 refs/tags/src\n0123456789012345678901234567890123456789 refs/remotes/origin/src/parser/rel\n",
		// A remote's branch named like a path under src/parser.
		".git/refs/remotes/origin/src/parser/next": "0123456789012345678901234567890123456789\n",
		"go.mod": "module example.com/m // the module\n\ngo 1.22\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const hunk = "--- a/src/parser/a.go\n+++ b/src/parser/a.go\n@@ -1 +1 @@\n-x\n+y\n"
	for _, tt := range []struct {
		cmd  string
		deny bool
	}{
		// git checkout NAME without --: a path when it exists.
		{"git checkout src/parser/a.go", true},
		{"git checkout HEAD~1 src/parser", true},
		{"git -C src checkout parser/a.go", true},
		{"git checkout main", true},
		{"git checkout -b src/parser/a.go", false},
		// A branch whose name is also a path: git switches to the branch,
		// which rewrites the whole work tree (see below).
		{"sed -i --expression=s/a/b/ src/parser/a.go", true},
		{"sed --expression=s/a/b/ src/parser/a.go", false},
		{"git stash --help", false},
		{"git stash -u", true},
		// A forced switch throws away every local change.
		{"git checkout -f main", true},
		{"git checkout --force main", true},
		{"git switch --discard-changes main", true},
		{"git switch -f main", true},
		{"git switch main", true},
		{"git switch -c feature", false},
		// go fmt rewrites its packages' files.
		{"go fmt ./...", true},
		{"go fmt ./src/parser", true},
		{"go fmt ./src/lexer", false},
		{"go fmt ./docs/...", false},
		{"go vet ./...", false},
		{"go test ./src/parser/...", false},
		// An option's value that names the file written.
		{"sort -o src/parser/a.go src/parser/a.go", true},
		{"sort --output=src/parser/a.go x", true},
		{"sort src/parser/a.go -o sorted.txt", false},
		{"curl -sSL https://example.com/a.go -o src/parser/a.go", true},
		{"curl -osrc/parser/a.go https://example.com/a.go", true},
		{"curl https://example.com/a.go", false},
		{"wget -O src/parser/b.go https://example.com/b.go", true},
		{"wget -q https://example.com/b.go", false},
		// An option's value is no operand: touch -r reads its file.
		{"touch -r src/parser/a.go build.stamp", false},
		{"touch -d '2 hours ago' src/parser/a.go", true},
		{"mkdir -m 755 src/parser/x", true},
		{"rm -r src/parser", true},
		// popd goes back where pushd was.
		{"pushd src/parser && go test . ; popd && touch notes.txt", false},
		{"pushd src >/dev/null; popd; pushd src; touch parser/b.go; popd", true},
		{"(pushd src/lexer; popd); rm parser.patch", false},
		// A line continuation is a blank, not a word.
		{"git \\\n  checkout \\\n  src/parser/a.go", true},
		{"git checkout \\\n  src/lexer/l.go", false},
		{"sed -i s/a/b/ src/par\\\nser/a.go", true},
		{"git checkout src/parser", true},
		{"git checkout src", true},
		{"git checkout src/parser src/parser/a.go", true},
		// The index alone, or a dry run: the work tree is not written.
		{"git rm --cached src/parser/a.go", false},
		{"git rm -r --cached src/parser", false},
		{"git mv -n src/parser/a.go x.go", false},
		{"git rm src/parser/a.go", true},
		// perl's -M and -I take the rest of the word: -Mstrict is no -i.
		{"perl -Mstrict -ne 'print' src/parser/a.go", false},
		{"perl -MList::Util=min -lane 'print' src/parser/a.go", false},
		{"perl -pi -e 's/a/b/' src/parser/a.go", true},
		{"perl -i.bak -pe 's/a/b/' src/parser/a.go", true},
		{"perl -0777 -i -pe 's/a/b/' src/parser/a.go", true},
		{"perl -i -p -e 's/a/b/' -e 's/c/d/' src/parser/a.go", true},
		{"perl -ne 'print' -i src/parser/a.go", true},
		// A script glued to -e (-e's/a/b/', -pes/a/b/) is the script, and
		// the word after it a file.
		{"sed -i -e's/a/b/' src/parser/a.go", true},
		{"sed -i -es/a/b/ -fx.sed src/parser/a.go", true},
		{"sed -l 80 -i s/a/b/ src/parser/a.go", true},
		{"perl -pi -e's/a/b/' src/parser/a.go", true},
		{"perl -i -pes/a/b/ src/parser/a.go", true},
		{"ruby -i -e'x' src/parser/a.go", true},
		{"sed -ne's/a/b/p' src/parser/a.go", false},
		{"perl -ne'print' src/parser/a.go", false},
		// ruby -i edits its files in place as perl -i does; -r, -I, -C
		// and -E take the rest of the word (or the next).
		{"ruby -pi -e 'gsub(/a/, \"b\")' src/parser/a.go", true},
		{"ruby -i.bak -pe 'x' src/parser/a.go", true},
		{"ruby -i -n -e 'x' src/parser/a.go", true},
		{"ruby -rjson -i -pe 'x' src/parser/a.go", true},
		{"ruby -I lib -i -pe 'x' src/parser/a.go", true},
		{"ruby -pe 'x' src/parser/a.go", false},
		{"ruby -Ilib -e 'x' src/parser/a.go", false},
		{"ruby -ryaml -e 'x' src/parser/a.go", false},
		{"ruby -I i -e 'x' src/parser/a.go", false},
		{"ruby src/parser/a.go", false},
		// What an interpreter's own code writes is not read.
		{"python3 -c \"open('src/parser/a.go', 'w')\"", false},
		{"node -e \"require('fs').writeFileSync('src/parser/a.go', '')\"", false},
		{"perl -e \"open(F, '>', 'src/parser/a.go')\"", false},
		{"git checkout src/lexer/l.go", false},
		// git apply and patch: the diff's files, from a file, < FILE or a
		// here-document.
		{"git apply parser.patch", true},
		{"git apply --check parser.patch", false},
		{"git apply --cached parser.patch", false},
		{"git apply lexer.patch", false}, // a removed "-- x" line is no header
		{"git apply -p1 < parser.patch", true},
		{"cd src && git apply ../parser.patch", true}, // from the work tree's top
		{"git apply <<'EOF'\n" + hunk + "EOF", true},
		{"patch -p1 < parser.patch", true},
		{"patch -p1 -i parser.patch", true},
		{"patch -p0 --dry-run < parser.patch", false},
		{"patch src/parser/a.go parser.patch", true},
		{"patch -p1 -o out.go < parser.patch", false},
		{"patch -p1 <<EOF\n" + hunk + "EOF", true},
		// A patch Tavern cannot read (a pipe, a file that is not there)
		// may write any file: the whole work tree.
		{"cat parser.patch | git apply", true},
		{"cat lexer-only.patch | git apply --check", false},
		{"git apply missing.patch", true},
		{"git apply lexer-only.patch", false},
		// find -delete and -exec of a writer: everything under the start.
		{"find src -name '*.orig' -delete", true},
		{"find . -name x -exec rm {} +", true},
		{"find src/lexer -delete", false},
		{"find src -name '*.go'", false},
		{"find src -exec grep -l x {} ;", false},
		// What find -exec and xargs -I put where {} is: a copy reads it.
		{"find src -type d -exec mkdir -p /tmp/{} ;", false},
		{"find src -name '*.go' -exec cp {} /tmp/ ;", false},
		{"find src -name '*.go' -exec mv {} /tmp/ ;", true},
		{"git ls-files | xargs -I{} cp {} /tmp/", false},
		{"git ls-files | xargs -I % mv % /tmp/", true},
		{"git ls-files | xargs -i cp {} /tmp/", false},
		// gofmt -w, goimports -w: files and directories.
		{"gofmt -w src/parser/a.go", true},
		{"gofmt -l -w .", true},
		{"goimports -w -local example.com src", true},
		{"gofmt -l src/parser", false},
		{"gofmt -w src/lexer", false},
		// xargs running a writer: anywhere under where it runs.
		{"git ls-files src/parser | xargs rm", true},
		{"grep -l x -r src | xargs sed -i s/a/b/", true},
		{"find . -name '*.go' | xargs -n 1 -I{} mv {} /tmp/", true},
		{"cd docs && ls | xargs rm", false},
		// Substitutions nested deeper than any command line writes them
		// are not read (reading each level again would take minutes).
		{"echo " + strings.Repeat("$(", 8) + "rm src/parser/a.go" + strings.Repeat(")", 8), true},
		{"echo " + strings.Repeat("$(", maxShellNesting+1) + "rm src/parser/a.go" + strings.Repeat(")", maxShellNesting+1), false},
		{"find src -name '*.go' | xargs grep -l foo", false},
		// Command substitutions, at the top and in sh -c.
		{"echo `touch src/parser/b.go`", true},
		{"echo \"$(rm src/parser/a.go)\"", true},
		{"sh -c 'echo $(touch src/parser/b.go)'", true},
		{"sh -c \"x=\\`rm -f src/parser/a.go\\`\"", true},
		{"bash -c 'echo \"$(cd src/parser && touch b.go)\"'", true},
		{"echo $(git status) > src/lexer/out.txt", false},
		{"echo $((1 + 2)) `date`", false},
		// A here-document in a substitution is text: its apostrophe opens
		// no quote (the commit message form Claude Code writes).
		{"git commit -m \"$(cat <<'EOF'\nDon't (really)\nEOF\n)\" && rm src/parser/a.go", true},
		{"git commit -m \"$(cat <<'EOF'\nDon't (really)\nEOF\n)\"", false},
		// find writes the file -fprint, -fprint0, -fls and -fprintf name,
		// and what -exec's command names.
		{"find src -name '*.go' -fprint src/parser/list.txt", true},
		{"find . -fprint0 src/parser/list0", true},
		{"find . -fprintf src/parser/f.txt '%p\\n'", true},
		{"find . -fls src/parser/ls.txt", true},
		{"find . -name '*.orig' -exec sed -i s/a/b/ src/parser/a.go ;", true},
		{"find src/parser -fprint /tmp/list.txt", false},
		{"find src/parser -fprintf /tmp/f.txt '%p' -print", false},
		// xargs's options with a value, short and long, joined, separate
		// and at the end of a cluster: the value is no command.
		{"git ls-files src | xargs --max-args 1 rm", true},
		{"git ls-files src | xargs --max-procs=4 --max-lines 1 rm", true},
		{"xargs --arg-file list.txt rm", true},
		{"xargs --delimiter x rm", true},
		{"xargs --process-slot-var SLOT rm", true},
		{"xargs -rn 1 rm", true},
		{"xargs -0rP 4 -s 100 rm", true},
		{"xargs -a list.txt -d x -E END -L 2 rm", true},
		{"git ls-files | xargs -rE rm grep -l x", false},
		{"git ls-files | xargs -0rI{} cp {} /tmp/", false},
		{"git ls-files | xargs --replace=% cp % /tmp/", false},
		// go: packages by import path (go.mod's module line), and go.mod /
		// go.sum, which go mod tidy and go get write.
		{"go fmt example.com/m/src/parser", true},
		{"go fmt example.com/m/src/...", true},
		{"cd src/lexer && go fmt example.com/m/...", true},
		{"go generate ./src/parser", true},
		{"go generate -run stringer example.com/m/src/parser/...", true},
		{"go mod tidy", true},
		{"cd src/lexer && go get golang.org/x/text@latest", true},
		{"go mod edit -require=golang.org/x/text@v0.3.0", true},
		{"go fmt example.com/m/src/lexer", false},
		{"go fmt example.com/other/src/parser", false},
		{"go generate -n ./...", false},
		{"go generate ./src/lexer", false},
		{"go build example.com/m/src/parser", false},
		{"go mod edit -json", false},
		{"go mod download", false},
		// git checkout of a path deleted in the work tree brings it back;
		// a name that is a remote's branch or a revision is switched to,
		// a write of the whole work tree.
		{"git checkout src/parser/gone.go", true},
		{"git checkout HEAD src/parser/gone.go", true},
		{"cd src && git checkout parser/gone.go", true},
		{"git checkout --theirs src/parser", true},
		{"git checkout src/parser/next", true},
		{"git checkout src/parser/rel", true},
		{"git checkout feature", true},
		{"git checkout HEAD~1", true},
		{"git checkout 0123abc", true},
		// A switch to another commit rewrites every file that differs
		// between the two, as a fast-forward merge does: the whole work
		// tree, as git merge is. HEAD is on the branch work: a switch to
		// it, a branch made where the tree is, changes no file.
		{"git checkout -", true},
		{"git switch -", true},
		{"git switch feature", true},
		{"cd docs && git switch feature", true},
		{"git switch --detach HEAD~2", true},
		{"git switch -d v1", true},
		{"git checkout --detach feature", true},
		{"git checkout -b new feature", true},
		{"git checkout -B new origin/src/parser/next", true},
		{"git switch -c new feature", true},
		{"git switch -C new HEAD~1", true},
		{"git switch --orphan fresh", true}, // an empty tree
		{"git checkout --orphan fresh feature", true},
		{"git checkout -q --recurse-submodules feature", true},
		{"git checkout ':/fix the parser'", true}, // the commit whose message says it
		{"git bisect start", true},
		{"git bisect start HEAD v1", true},
		{"git bisect good", true},
		{"git bisect bad HEAD~3", true},
		{"git bisect skip", true},
		{"git bisect reset", true},
		{"git bisect run go test ./...", true},
		{"git switch --orphan=fresh", true},
		{"git switch --create=new feature", true},
		{"git checkout -bnew feature", true},
		{"git switch -cnew feature", true},
		{"git checkout -b new", false},
		{"git switch -c new", false},
		{"git switch --create=new", false},
		{"git checkout -bnew", false},
		{"git switch -Cnew", false},
		{"git switch --create new", false},
		// git checkout -p and git restore -p offer to take back each change
		// in their pathspecs, in the whole work tree when given none: a
		// write of those paths, or of the whole work tree.
		{"git checkout -p HEAD~1", true},
		{"git checkout -p", true},
		{"git checkout --patch feature --", true},
		{"git checkout -qp main", true},
		{"cd docs && git checkout -p HEAD~1", true},
		{"git restore -p", true},
		{"git restore --patch --source HEAD~1", true},
		{"git restore -p -s HEAD~1 -W", true},
		{"git checkout -p \"$REV\"", true}, // a revision, or a path: not clear
		{"git checkout --patch HEAD~1 -- src/parser/a.go", true},
		{"git checkout -p HEAD~1 src/parser/a.go", true},
		{"git checkout -p src/parser/a.go", true},
		{"git restore -p src/parser", true},
		{"git checkout -p HEAD~1 -- docs", false},
		{"git checkout -p HEAD~1 docs", false},
		{"git checkout -p docs", false},
		{"git restore -p docs src/lexer", false},
		{"git restore -p --staged", false}, // the index alone
		{"git restore -p -S -s HEAD~1", false},
		{"git checkout -p -h", false},
		{"git reset -p", false},
		{"git add -p", false},
		// A new branch's name glued to -b/-c is its value, not a cluster
		// of switches: the f of fix is no -f (a forced switch).
		{"git checkout -bfix", false},
		{"git switch -cfix", false},
		{"git checkout -Bfix", false}, // reset to HEAD: the tree stays
		{"git switch -Cfix", false},
		{"git checkout -qbfix", false},
		{"git checkout -Bfix feature", true},
		{"git switch -Cfix HEAD~1", true},
		{"git checkout -fbfix", true}, // -f, then -b fix
		{"git switch -fcfix", true},
		{"git checkout --orphan fresh", false}, // git keeps the tree, all of it added
		{"git checkout", false},
		{"git switch", false},
		{"git switch --help", false},
		{"git checkout -h", false},
		{"git checkout HEAD", false},
		{"git checkout @", false},
		{"git checkout work", false},
		{"git switch work", false},
		{"git checkout -b new work", false},
		{"git checkout --detach", false},
		{"git switch --detach", false},
		{"git switch --detach work", false},
		// A branch named by a word that is not clear may be any branch:
		// a switch, a write of the whole work tree. A new branch's name
		// that is not clear is made where HEAD is; paths after the
		// first operand are paths.
		{"git checkout \"$B\"", true},
		{"git switch $BR", true},
		{"git checkout \"$B\" --", true},
		{"git checkout -b new \"$START\"", true},
		{"git switch --detach \"$REV\"", true},
		{"git checkout \"$B\" src/parser/a.go", true},
		{"git checkout -b \"$NEW\"", false},
		{"git switch -c \"$NEW\"", false},
		{"git checkout \"$B\" docs", false},
		{"git checkout \"$B\" -- docs", false},
		{"git switch \"$B\" --help", false},
		{"git -C /tmp/elsewhere switch \"$B\"", false},
		{"git log \"$B\" && git diff \"$B\" && git show \"$B\"", false},
		{"git bisect log", false},
		{"git bisect view", false},
		{"git bisect visualize", false},
		{"git bisect terms", false},
		{"git bisect --help", false},
		{"git bisect", false},
		{"git bisect start --no-checkout", false},
		{"git -C /tmp/elsewhere switch feature", false},
		// Reserved words and wrappers before the command that runs.
		{"for f in a b; do rm src/parser/a.go; done", true},
		{"if true; then rm src/parser/a.go; fi", true},
		{"! rm src/parser/a.go", true},
		{"timeout 10 rm src/parser/a.go", true},
		{"timeout -s KILL 10s rm src/parser/a.go", true},
		{"nice -n 5 rm src/parser/a.go", true},
		{"sudo -u bob rm src/parser/a.go", true},
		{"env -u FOO rm src/parser/a.go", true},
		{"if grep -q x src/parser/a.go; then echo y; fi", false},
		{"timeout 10 cat src/parser/a.go", false},
		{"command -v rm src/parser/a.go", false},
		{"sudo -u", false}, // a wrapper's option without its value
		{"timeout -s", false},
		// sed -i at the end of a cluster of switches.
		{"sed -Ei s/a/b/ src/parser/a.go", true},
		{"sed -ni s/a/b/p src/parser/a.go", true},
		{"sed -ne s/a/b/p src/parser/a.go", false},
		// Archivers: tar -x and unzip may write anything under where they
		// extract; tar -c, zip and gzip write the files they name.
		{"tar -xzf x.tgz -C src", true},
		{"tar xf x.tar", true},
		{"cd src/parser && tar -xf /tmp/x.tar", true},
		{"tar --extract --file x.tar --directory src", true},
		{"tar -czf src/parser/out.tgz docs", true},
		{"tar cf src/parser/out.tar docs", true},
		{"unzip -o x.zip -d src/parser", true},
		{"unzip x.zip", true},
		{"zip src/parser/a.zip docs", true},
		{"gzip src/parser/a.go", true},
		{"gunzip src/parser/a.go.gz", true},
		{"tar -xzf x.tgz -C /tmp/x", false},
		{"tar -tzf x.tgz", false},
		{"tar -xOf x.tar a", false},
		{"tar -czf /tmp/out.tgz src/parser", false},
		{"cd docs && tar xf /tmp/x.tar", false},
		{"unzip -l x.zip", false},
		{"unzip x.zip -d /tmp/u", false},
		{"zip -r /tmp/s.zip src/parser", false},
		{"gzip -c src/parser/a.go", false},
		// A file's mode and owner are part of it.
		{"chmod +x src/parser/a.go", true},
		{"chmod -x src/parser/a.go", true},
		{"chmod -R u+w src", true},
		{"chown -R me src/parser", true},
		{"chmod +x docs/x.sh", false},
		{"chmod --reference=src/parser/a.go docs/x", false},
		// rsync and scp: the local destination (a recursive rsync's as a
		// tree); install -d makes every operand.
		{"rsync -a /tmp/x/ src/", true},
		{"rsync -av --delete build/ src/parser", true},
		{"rsync --exclude .git /tmp/a.go src/parser/", true},
		{"scp host:a.go src/parser/", true},
		{"scp -r host:parser src", true},
		{"install -d src/parser/x docs/y", true},
		{"rsync -a src/parser/ /tmp/p/", false},
		{"rsync -n -a /tmp/x/ src/", false},
		{"rsync -a /tmp/x/ host:src/parser/", false},
		{"scp src/parser/a.go host:a.go", false},
		{"scp -P 2222 src/parser/a.go host:", false},
		// A recursive copy writes everything under the copy.
		{"cp -r /tmp/parser src", true},
		{"cp -a /tmp/parser src/", true},
		{"cp -rT /tmp/x src/parser", true},
		{"cp -r /tmp/x src", false},
		{"cp -a /tmp/x src/lexer/", false},
		// Formatters and fixers that rewrite in place (a directory: every
		// file under it); their checks write nothing.
		{"npx prettier --write src/parser/a.go", true},
		{"prettier -w src", true},
		{"eslint --fix src/parser", true},
		{"eslint -o src/parser/report.txt src/lexer", true},
		{"black src/parser/a.go", true},
		{"ruff format", true},
		{"ruff check --fix src/parser", true},
		{"rustfmt src/parser/a.go", true},
		{"cargo fmt", true},
		{"clang-format -i src/parser/a.go", true},
		{"yq -i '.a=1' src/parser/c.yaml", true},
		{"awk -i inplace '{print}' src/parser/a.go", true},
		{"dos2unix src/parser/a.go", true},
		{"prettier --check src/parser", false},
		{"eslint src/parser", false},
		{"black --check src", false},
		{"ruff check src/parser", false},
		{"ruff format --diff src", false},
		{"rustfmt --check src/parser/a.go", false},
		{"cargo fmt --check", false},
		{"cargo build", false},
		{"clang-format src/parser/a.go", false},
		{"yq '.a' src/parser/c.yaml", false},
		{"awk '{print}' src/parser/a.go", false},
		{"go fmt -n ./...", false},
		// go fmt of one package formats its directory's files, not the
		// packages under it.
		{"go fmt ./src", false},
		{"cd src && go fmt", false},
		{"cd src/parser && go fmt", true},
		{"go fmt example.com/m/src", false},
		// >&FILE sends both streams to FILE; eval runs its words as a
		// line; sponge writes its file; cp -r DIR/. DEST copies into DEST.
		{"make >&src/parser/build.log", true},
		{"make >& src/parser/build.log", true},
		{"make 2>&1 >&- | tee /tmp/log", false},
		{"eval \"rm src/parser/a.go\"", true},
		{"eval rm src/parser/a.go", true},
		{"eval echo src/parser/a.go", false},
		{"sort src/parser/a.go | sponge src/parser/a.go", true},
		{"cp -r /tmp/x/. src/", true},
		{"cp -r /tmp/x/. src/lexer/", false},
		// git commands that rewrite files the line does not name (which
		// ones depends on commits): the whole work tree, from wherever in
		// it they run. Their read-only forms write nothing.
		{"git merge feature", true},
		{"git merge --ff-only origin/main", true},
		{"git merge --abort", true},
		{"cd docs && git merge feature", true},
		{"cd src/lexer && git reset --hard", true},
		{"git reset --keep HEAD~1", true},
		{"git pull", true},
		{"git pull --rebase origin main", true},
		{"git rebase main", true},
		{"git rebase -i HEAD~3", true},
		{"git rebase --continue", true},
		{"git stash pop", true},
		{"git stash apply stash@{1}", true},
		{"git stash pop --index", true},
		{"git stash branch fix", true},
		{"git cherry-pick 0123abc", true},
		{"git cherry-pick -n a..b", true},
		{"git cherry-pick --continue", true},
		{"git revert HEAD", true},
		{"git revert --abort", true},
		{"git am < parser.patch", true},
		{"git am parser.patch", true},
		{"cat parser.patch | git am", true},
		{"git am --abort", true},
		{"git am lexer-only.patch", false},
		{"git am --show-current-patch", false},
		{"git am --quit", false},
		{"git merge --quit", false},
		{"git merge -h", false},
		{"git merge-base HEAD main", false},
		{"git pull --help", false},
		{"git rebase --show-current-patch", false},
		{"git rebase --edit-todo", false},
		{"git cherry-pick --quit", false},
		{"git revert --quit", false},
		{"git stash list", false},
		{"git stash show -p stash@{0}", false},
		{"git stash drop", false},
		{"git stash clear", false},
		{"git reset HEAD~1", false},
		{"git reset --soft HEAD~1", false},
		{"git fetch origin", false},
		{"git log --merges", false},
		{"git -C /tmp/elsewhere merge feature", false},
		// patch: the files of the diff it reads; one it cannot read may
		// write anything under where it runs.
		{"patch -R -p1 < parser.patch", true},
		{"patch -R src/parser/a.go < parser.patch", true},
		{"patch src/parser/a.go", true},
		{"cat parser.patch | patch -p1", true},
		{"patch -p1 < missing.diff", true},
		{"patch -p1 -i missing.diff", true},
		{"cat x.diff | patch -p1 -o /tmp/out.go", false},
		{"cd docs && cat x.diff | patch -p1", false},
		{"patch -p1 < lexer-only.patch", false},
		{"patch -R -p1 < lexer-only.patch", false},
		{"patch --dry-run -p1 < missing.diff", false},
		{"patch --version", false},
		// ln writes the link: ./NAME with one operand, DEST, DIR/NAME.
		{"cd src/parser && ln -s /tmp/x/a.go", true},
		{"cd src/parser && ln /tmp/x/b.go", true},
		{"ln -sf /tmp/a.go src/parser/a.go", true},
		{"ln /tmp/a /tmp/b src/parser/", true},
		{"ln -s ../lexer/l.go src/parser/l.go", true},
		{"ln -t src/parser /tmp/a.go", true},
		{"ln -S .orig -sf /tmp/a.go src/parser/a.go", true},
		{"ln -s /tmp/x/src/parser/a.go", false},
		{"ln -s src/parser/a.go /tmp/link", false},
		{"ln -s src/parser/a.go link.go", false},
		{"ln -sr src/parser/a.go docs/", false},
		{"ln --help", false},
		// A function's body is read as if it ran.
		{"function f { sed -i s/a/b/ src/parser/a.go; }; f", true},
		{"function f() { rm src/parser/a.go; }", true},
		{"f() { sed -i s/a/b/ src/parser/a.go; }; f", true},
		{"function f { cat src/parser/a.go; }; f", false},
		{"f() { grep x src/parser/a.go; }; f > out.txt", false},
		// git pathspec magic: :(top) and :/ are from the work tree's top,
		// :(literal) is the path; a glob is everything under its fixed
		// part; an exclusion takes nothing away (only exclusions: the whole
		// work tree).
		{"git checkout -- ':(top)src/parser/a.go'", true},
		{"cd docs && git checkout -- ':(top)src/parser/a.go'", true},
		{"cd docs && git checkout -- ':/src/parser/a.go'", true},
		{"cd docs && git restore ':/src/parser'", true},
		{"git checkout -- ':(literal)src/parser/a.go'", true},
		{"git checkout -- 'src/parser/*.go'", true},
		{"git checkout -- 'src/*/a.go'", true},
		{"git checkout -- ':(glob)src/**/a.go'", true},
		{"git checkout -- ':(top,icase)SRC/PARSER/a.go'", true},
		{"git checkout -- ':!src/lexer'", true},
		{"cd docs && git rm ':(top)src/parser/a.go'", true},
		{"cd docs && git stash push -- ':/src/parser'", true},
		{"cd docs && git checkout ':/src/parser/a.go'", true},
		{"cd src/parser && git checkout -- ':/docs'", false},
		{"cd src/parser && git restore ':(top)src/lexer/l.go'", false},
		{"git checkout -- src/lexer ':!src/parser'", false},
		{"git checkout -- 'src/lexer/*.go'", false},
		{"git checkout -- ':(literal)src/*'", false},
		{"cd src/parser && git stash push -- ':/docs'", false},
		{"git rm -r --cached 'src/*'", false},
		// Commands that read pathspecs, or write no work-tree file.
		{"git diff -- ':!vendor' ':/src/parser'", false},
		{"git log -p -- 'src/parser/*.go'", false},
		{"git ls-files ':(glob)src/**'", false},
		{"git grep -n x -- ':/src/parser'", false},
		{"git add ':/src/parser' && git commit -m wip", false},
		{"git status && git show HEAD:src/parser/a.go && git blame src/parser/a.go", false},
		{"git cherry -v main && git rebase -h && git revert -h && git am -h && git apply --help", false},
		{"git stash show -p && git stash create && git stash store 0123abc", false},
		{"git push origin HEAD && git tag v1 && git branch -d old", false},
		{"git checkout main -- ':!docs'", true},
		{"git checkout main ':!docs'", true},
		{"git checkout main -- ':(top)src/lexer/l.go'", false},
		{"git checkout main -- ':(top)src/lexer'", false},
		{"git restore --staged ':(icase)SRC/PARSER'", false},
		{"git restore --staged ':!docs'", false},
		{"git rm ':(icase)SRC/PARSER/A.GO'", true},
		{"git clean -f ':(top)src/parser'", true},
		{"git clean -n ':(top)src/parser'", false},
		{"git --literal-pathspecs checkout -- 'src/*/a.go'", false},
		{"GIT_LITERAL_PATHSPECS=1 git checkout -- 'src/*/a.go'", false},
		{"git --noglob-pathspecs checkout -- 'src/*/a.go'", false},
		{"git --icase-pathspecs checkout -- SRC/PARSER/a.go", true},
		{"GIT_ICASE_PATHSPECS=1 git restore Src", true},
		{"git --icase-pathspecs restore docs", false},
		{"cd /tmp && git checkout -- ':/src/parser/a.go'", false}, // another work tree, or none
		// git --work-tree (GIT_WORK_TREE): paths from where git runs when
		// that is in the work tree, else from its top; the whole work
		// tree is it. --git-dir (GIT_DIR) alone: the work tree is where
		// git runs. @PROJ is the project's directory.
		{"git --work-tree=src/parser checkout -- a.go", true},
		{"git --work-tree src/parser restore a.go", true},
		{"GIT_WORK_TREE=src/parser git checkout -- a.go", true},
		{"env GIT_WORK_TREE=src git rm parser/a.go", true},
		{"cd /tmp && git --git-dir=@PROJ/.git --work-tree=@PROJ checkout -- src/parser/a.go", true},
		{"cd /tmp && git --git-dir=@PROJ/.git --work-tree=@PROJ merge feature", true},
		{"cd /tmp && GIT_DIR=@PROJ/.git GIT_WORK_TREE=@PROJ git reset --hard", true},
		{"git --work-tree=src/parser switch feature", true},
		// An exported GIT_WORK_TREE / GIT_DIR holds for the git commands
		// after it on the line (in its subshell, and the scripts it
		// runs), taken from where each runs; a plain assignment only
		// once exported, unset takes it back.
		{"export GIT_WORK_TREE=src/parser; git checkout -- a.go", true},
		{"export GIT_WORK_TREE=src && git rm parser/a.go", true},
		{"cd docs && export GIT_WORK_TREE=../src/parser && git checkout -- a.go", true},
		{"export GIT_DIR=@PROJ/.git GIT_WORK_TREE=@PROJ; cd /tmp && git checkout -- src/parser/a.go", true},
		{"cd /tmp; export GIT_WORK_TREE=@PROJ GIT_DIR=@PROJ/.git; git reset --hard", true},
		{"export GIT_WORK_TREE=src/parser\nbash -c 'git checkout -- a.go'", true},
		{"(export GIT_WORK_TREE=docs); git reset --hard", true},
		{"export GIT_WORK_TREE=docs; unset GIT_WORK_TREE; git reset --hard", true},
		{"export GIT_WORK_TREE=docs; export -n GIT_WORK_TREE; git reset --hard", true},
		{"GIT_WORK_TREE=docs; git reset --hard", true}, // not exported: git runs here
		{"export GIT_WORK_TREE=docs; GIT_WORK_TREE=src/parser; git checkout -- a.go", true},
		{"export GIT_WORK_TREE=docs; declare GIT_WORK_TREE=src/parser; git checkout -- a.go", true},
		{"export GIT_WORK_TREE=docs > src/parser/log.txt", true}, // its redirection still writes
		{"export GIT_WORK_TREE=src/parser; env GIT_WORK_TREE=docs; git checkout -- a.go", true},
		{"export GIT_WORK_TREE=docs; git reset --hard", false},
		{"export GIT_WORK_TREE=../b; git checkout feature", false}, // another tree: ../b
		{"export GIT_WORK_TREE=../b; git checkout feature; unset GIT_WORK_TREE; git checkout feature", true},
		{"export GIT_WORK_TREE=docs\ngit switch feature", false},
		{"GIT_WORK_TREE=docs; export GIT_WORK_TREE; git stash", false},
		{"declare -x GIT_WORK_TREE=docs; git merge feature", false},
		{"export GIT_WORK_TREE=src/lexer; git checkout -- a.go", false},
		{"export GIT_WORK_TREE=/tmp/export; git checkout main -- .", false},
		{"export GIT_WORK_TREE=src/parser; GIT_WORK_TREE=docs git checkout -- a.go", false},
		{"export GIT_WORK_TREE=src/parser; git --work-tree=docs checkout -- a.go", false},
		{"cd src/lexer && export GIT_DIR=../../.git && git reset --hard", false},
		{"export GIT_LITERAL_PATHSPECS=1; git checkout -- 'src/*/a.go'", false},
		{"git --work-tree=src checkout -- ':/parser/a.go'", true},
		{"cd src && git --git-dir=../.git merge feature", true},
		{"cd docs && git --work-tree=.. checkout -- src/parser/a.go", false}, // docs/src/parser/a.go
		{"git --work-tree=src/lexer checkout -- a.go", false},
		{"git --work-tree=/tmp/export checkout main -- .", false},
		{"git --work-tree=/tmp/export reset --hard", false},
		{"git --work-tree=docs switch feature", false},
		{"GIT_WORK_TREE=docs git stash", false},
		{"git --work-tree=docs checkout -- ':/src/parser/a.go'", false},
		{"cd src/lexer && git --git-dir=../../.git reset --hard", false},
		{"cd /tmp && git --git-dir=@PROJ/.git checkout -- src/parser/a.go", false}, // /tmp/src/parser/a.go
		{"git --work-tree \"$W\" checkout -- src/parser/a.go", false},              // not clear, as git -C "$D"
		{"git -C \"$D\" checkout -- src/parser/a.go", false},
	} {
		input, _ := json.Marshal(map[string]any{"command": strings.ReplaceAll(tt.cmd, "@PROJ", proj)})
		in := &Input{Tool: Claude, Event: PreToolUse, Cwd: proj, ToolName: "Bash", ToolInput: input}
		r, err := CheckWrite(e, in, "me")
		if err != nil {
			t.Errorf("%q: %v", tt.cmd, err)
		}
		if got := r != nil && r.Deny != ""; got != tt.deny {
			t.Errorf("%q: denied %v, want %v (%+v)", tt.cmd, got, tt.deny, r)
		}
	}
}

// diffWrites' paths: absolute ones stay absolute, -d and --directory
// move the relative ones, and a value that is not clear writes nothing
// Tavern can name.
func TestDiffWritesPaths(t *testing.T) {
	const hunk = "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"
	for _, tt := range []struct {
		cmd  string
		want []string
	}{
		{"patch -p1 -o /tmp/out.go <<EOF\n" + hunk + "EOF", []string{"/tmp/out.go"}},
		{"patch -p1 -o - <<EOF\n" + hunk + "EOF", nil},
		{"patch -p1 -d sub <<EOF\n" + hunk + "EOF", []string{"/p/sub/x.go"}},
		{"patch -p1 -d \"$D\" <<EOF\n" + hunk + "EOF", nil},
		{"patch /abs/y.go <<EOF\n" + hunk + "EOF", []string{"/abs/y.go"}},
		{"git -C /q apply --directory=mod <<EOF\n" + hunk + "EOF", []string{"/q/mod/x.go"}},
		{"git apply -p0 <<EOF\n--- /etc/x\n+++ /etc/x\nEOF", []string{"/etc/x"}},
		{"patch <<EOF\n--- a/x.go\n+++ a/x.go\nEOF", []string{"/p/x.go"}}, // no -p, and no directory a/: the file name
	} {
		input, _ := json.Marshal(map[string]any{"command": tt.cmd})
		if got := WritePaths("Bash", input, "/p"); !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

// A denial of a command that writes a whole tree names the tree: the
// git work tree it writes (relative to the project when in it, else
// absolute), or the directory holding the project that it removes.
func TestDenyNamesWholeTree(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Dir(e.Store.Root())
	reserve(t, e, "bob", "src/parser/**")
	for _, d := range []string{".git/refs/heads", "src/parser"} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, ".git/HEAD"), []byte("ref: refs/heads/work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(proj)
	for _, tt := range []struct{ cmd, want string }{
		{"git reset --hard", "Tavern: the whole work tree (.), which this command changes, has paths reserved by bob (src/parser/**"},
		{"cd src && git merge feature", "Tavern: the whole work tree (.), which this command changes"},
		{"git --work-tree=src reset --hard", "Tavern: the whole work tree (src), which this command changes, has paths reserved by bob"},
		{"cd src && git --work-tree=. switch feature", "Tavern: the whole work tree (src), which this command changes"},
		{"export GIT_WORK_TREE=src/parser; git checkout -p HEAD~1", "Tavern: the whole work tree (src/parser), which this command changes"},
		{"git --work-tree=.. checkout \"$B\"", "Tavern: the whole work tree (" + parent + "), which this command changes"},
		{"cat x.diff | git --work-tree=src apply", "Tavern: the whole work tree (src), which this command changes"},
		{"cat x.diff | git apply", "Tavern: the whole work tree (.), which this command changes"},
		{"git --work-tree=src checkout -- ':!lexer'", "Tavern: the whole work tree (src), which this command changes"},
		{"cd .. && git reset --hard", "Tavern: the whole work tree (" + parent + "), which this command changes"},
		{"rm -rf .", "Tavern: the whole work tree (.), which this command changes"},
		{"rm -rf ..", "Tavern: " + parent + ", which this command changes, holds paths reserved by bob (src/parser/**"},
	} {
		input, _ := json.Marshal(map[string]any{"command": tt.cmd})
		in := &Input{Tool: Claude, Event: PreToolUse, Cwd: proj, ToolName: "Bash", ToolInput: input}
		r, err := CheckWrite(e, in, "me")
		if err != nil {
			t.Errorf("%q: %v", tt.cmd, err)
		}
		if r == nil || !strings.HasPrefix(r.Deny, tt.want) {
			t.Errorf("%q: got %+v, want a denial starting %q", tt.cmd, r, tt.want)
		}
	}
}
