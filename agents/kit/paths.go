package kit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WritePaths returns the files a tool call is about to write, as absolute
// paths: the file_path of Claude Code's Edit, Write and MultiEdit (the
// notebook_path of NotebookEdit) and of Gemini's write_file and replace;
// the files an apply_patch (Codex) adds, updates, deletes or moves to; and
// the targets of shell commands that clearly write a path (ShellWrites).
// Anything else — reads, searches, MCP tools, commands it cannot read —
// writes nothing as far as Tavern can tell. Relative paths are taken from
// cwd, or from a shell tool's own directory (shellDir).
func WritePaths(toolName string, toolInput json.RawMessage, cwd string) []string {
	var in map[string]any
	if len(toolInput) == 0 || json.Unmarshal(toolInput, &in) != nil {
		return nil
	}
	str := func(k string) string {
		s, _ := in[k].(string)
		return s
	}
	var rel []string
	switch toolName {
	case "Edit", "Write", "MultiEdit", "write_file", "replace":
		rel = append(rel, str("file_path"))
	case "NotebookEdit":
		rel = append(rel, str("notebook_path"))
	case "apply_patch":
		for _, k := range []string{"command", "patch", "input"} {
			if s := str(k); s != "" {
				rel = append(rel, PatchPaths(s)...)
				break
			}
		}
	case "Bash", "run_shell_command", "shell", "local_shell", "exec_command", "container.exec":
		cwd = shellDir(in, cwd)
		rel = append(rel, shellToolPaths(in["command"], &fsView{cwd: cwd}, false)...)
	}
	return absUnique(cwd, rel)
}

// shellToolPaths reads a shell tool's command — a line, or an argv (older
// Codex shell tools) — and returns the paths it writes, or with trees the
// directories it removes or moves whole (commandTrees). v looks at the
// files where that decides (nil: it does not).
func shellToolPaths(command any, v *fsView, trees bool) []string {
	var line string
	switch c := command.(type) {
	case string:
		line = c
	case []any:
		var words []string
		for _, w := range c {
			if s, ok := w.(string); ok {
				words = append(words, s)
			}
		}
		switch {
		case len(words) == 3 && (words[0] == "bash" || words[0] == "sh" || words[0] == "zsh") && (words[1] == "-c" || words[1] == "-lc"):
			line = words[2]
		case len(words) == 2 && words[0] == "apply_patch" && !trees:
			return PatchPaths(words[1])
		default:
			return simplePaths(simpleCommand{words: words}, func(p []string) []string { return p }, v, trees)
		}
	default:
		return nil
	}
	cmds, ok := parseShell(line)
	if !ok {
		return nil
	}
	var out []string
	walkShell(cmds, func(c simpleCommand, rebase func([]string) []string) {
		out = append(out, simplePaths(c, rebase, v, trees)...)
	})
	return out
}

// simplePaths is what one simple command writes (or, with trees, removes
// or moves whole), its relative paths made relative to where the line
// is by then (rebase).
func simplePaths(c simpleCommand, rebase func([]string) []string, v *fsView, trees bool) []string {
	// git checkout NAME (no --) restores NAME when it is a path, else
	// switches to the branch NAME (gitCheckoutOperands tells which).
	here := ""
	if r := rebase([]string{"."}); len(r) == 1 && v != nil {
		here = v.abs(r[0])
	}
	// git --work-tree, --git-dir: paths and the whole tree from there.
	c.words, v = gitWorkTree(c.words, here, v)
	// git's pathspec magic (:(top)a.go, :/a.go, globs, :!x) made into
	// the paths and trees it stands for.
	words, specTrees := gitPathspecs(c.words, here, v)
	c.words = words
	restored := rebase(gitCheckoutOperands(c.words, here, v))
	// What go.mod says a go command writes: the packages named by
	// import path (go fmt, go generate), go.mod and go.sum.
	restored = append(restored, goModuleWrites(c.words, here, v)...)
	diffFiles, diffTree := diffWrites(c, rebase, v)
	if trees {
		var ts, whole []string // whole: git work trees written whole
		// The work tree git runs in, looked for only for a git command.
		top := ""
		if w := commandWords(c.words); len(w) > 0 && filepath.Base(w[0]) == "git" {
			top = gitTree(c.words, here, v)
		}
		for _, t := range commandTrees(c.words) {
			if t == gitTopDir {
				whole = append(whole, top)
			} else {
				ts = append(ts, t)
			}
		}
		for _, t := range specTrees {
			if t == top {
				whole = append(whole, t) // exclusions alone: the whole work tree
			} else {
				ts = append(ts, t)
			}
		}
		if gitSwitches(c.words, here, v) || gitPatchAll(c.words, here, v) {
			whole = append(whole, top)
		}
		out := append(rebase(ts), restored...)
		for _, w := range rebase(whole) {
			out = append(out, wholeTreeMark+w)
		}
		if diffTree != "" {
			// A patch Tavern cannot read: git apply's may write all of
			// its work tree (unless --directory narrows it).
			if top != "" && slices.Equal(rebase([]string{top}), []string{diffTree}) {
				diffTree = wholeTreeMark + diffTree
			}
			out = append(out, diffTree)
		}
		return out
	}
	out := rebase(c.redirects)
	out = append(out, rebase(commandWrites(c.words))...)
	// Codex runs `apply_patch <<'EOF'` (and `apply_patch 'PATCH'`)
	// given to its shell tool as the patch itself: its files are
	// written. The body is the command's stdin, so it is only read for
	// apply_patch.
	if w := commandWords(c.words); len(w) > 0 && (filepath.Base(w[0]) == "apply_patch" || filepath.Base(w[0]) == "applypatch") {
		if len(w) > 1 {
			out = append(out, rebase(PatchPaths(w[1]))...)
		}
		out = append(out, rebase(PatchPaths(c.heredoc))...)
	}
	out = append(out, diffFiles...)
	return append(out, restored...)
}

// shellDir is the directory a shell tool runs its command in: Gemini's
// run_shell_command takes directory (dir_path in newer releases),
// relative to the project, and Codex's shell tools workdir; else cwd.
// Without it, `touch a.go` in src/parser read as ./a.go.
func shellDir(in map[string]any, cwd string) string {
	for _, k := range []string{"workdir", "dir_path", "directory"} {
		if d, _ := in[k].(string); d != "" {
			if filepath.IsAbs(d) {
				return d
			}
			return filepath.Join(cwd, d)
		}
	}
	return cwd
}

// absUnique makes paths absolute (relative ones against cwd), cleans
// them and drops empty ones and repeats, keeping the first order.
func absUnique(cwd string, paths []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// PatchPaths returns the files an apply_patch patch touches: the paths of
// its "*** Add File:", "*** Update File:", "*** Delete File:" and
// "*** Move to:" lines.
func PatchPaths(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimSpace(line)
		for _, h := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"} {
			if p, ok := strings.CutPrefix(line, h); ok {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// ShellWrites returns the paths a shell command line clearly writes:
// targets of output redirections (>, >>, &>, >&FILE, >|, N>), files given to tee, sponge,
// touch, rm, rmdir, mkdir, truncate, sed -i, perl -i, ruby -i, gofmt -w,
// goimports -w and go fmt (and go generate), the file sort -o, curl -o,
// wget -O and find -fprint (-fprint0, -fls, -fprintf) name, the
// archives and compressed files tar -c, zip and gzip (bzip2, xz) write,
// the files chmod, chown and chgrp change, the local destination of
// rsync and scp, what formatters and fixers rewrite in place
// (formatterWrites),
// the destination of cp, ln and install (and DIR/NAME when the
// destination is a directory; ./NAME for ln with one operand), both
// sides of mv, dd's of=, git mv / git rm / git restore / git checkout --
// (after git's -C; pathspec magic read as git does, gitPathspecs), the
// files of a patch given to apply_patch (as its argument or
// here-document, as Codex runs it) and of a diff in the here-document
// of git apply, git am or patch, the
// static arguments of a writing command run by xargs, and all of these
// in the script of a `sh -c` or an eval (inlineShells), in command substitutions
// ($(...), backquotes) and in shell functions' bodies. Relative paths are taken from the directory a cd
// before them went to (walkShell). Words with expansions ($, `, globs)
// are not clear and are skipped, as is a line that does not tokenize (an
// open quote).
//
// It reads no file: WritePaths also reads the patch files given to git
// apply and patch, and takes `git checkout NAME` (no --) as a write of
// NAME when NAME exists.
func ShellWrites(line string) []string {
	return shellToolPaths(line, nil, false)
}

// unknownDir is the directory after a cd Tavern cannot follow.
const unknownDir = "\x00?"

// walkShell calls fn for each command but cd, with rebase, which makes
// the command's relative paths relative to the directory the line is in
// by then: a `cd DIR` (pushd DIR, until its popd) before it, in its own subshell or an
// enclosing one, moves it (`cd src && sed -i ... a.go` writes src/a.go).
// After a cd to a place that is not clear (cd "$X", cd -, cd alone),
// relative paths are not clear either and rebase drops them.
//
// git's variables (GIT_WORK_TREE, GIT_DIR, any GIT_*) that the line
// exports before a command — export NAME=VALUE, declare -x, or NAME=VALUE
// then export NAME — are given to it as if assigned before its words
// (`export GIT_WORK_TREE=../b; git checkout main` runs git in ../b), in
// the same subshell and those under it, until unset or export -n. A
// variable assigned but not exported is not git's.
func walkShell(cmds []simpleCommand, fn func(c simpleCommand, rebase func([]string) []string)) {
	// states[d]: the directory at subshell depth d ("" the start) and
	// git's variables there.
	type state struct {
		dir        string
		env, local []string // NAME=VALUE, exported and only assigned
	}
	var states []state
	at := func(d int) *state {
		for len(states) <= d {
			var inherit state
			if len(states) > 0 {
				inherit = states[len(states)-1]
				inherit.env, inherit.local = slices.Clone(inherit.env), slices.Clone(inherit.local)
			}
			states = append(states, inherit)
		}
		states = states[:d+1] // a subshell deeper than d has ended
		return &states[d]
	}
	// pushd's stack: the directory each pushd left, and the depth it ran at.
	type pushed struct {
		depth int
		dir   string
	}
	var stack []pushed
	for _, c := range cmds {
		st := at(c.depth)
		dir := st.dir
		for len(stack) > 0 && stack[len(stack)-1].depth > c.depth {
			stack = stack[:len(stack)-1] // its subshell has ended
		}
		w := commandWords(c.words)
		if len(w) > 0 && w[0] == "popd" {
			// Back where the last pushd was: without it the rest of the
			// line was read under the pushd's directory.
			if n := len(stack); n > 0 && stack[n-1].depth == c.depth {
				st.dir = stack[n-1].dir
				stack = stack[:n-1]
			} else {
				st.dir = unknownDir
			}
			continue
		}
		if len(w) > 0 && w[0] == "pushd" {
			stack = append(stack, pushed{c.depth, dir})
		}
		if len(w) > 0 && (w[0] == "cd" || w[0] == "pushd") {
			var ops []string
			for _, a := range w[1:] {
				if a != "-L" && a != "-P" && a != "-e" && a != "-@" {
					ops = append(ops, a)
				}
			}
			switch {
			case len(ops) != 1 || ops[0] == "" || ops[0] == "-":
				st.dir = unknownDir
			case filepath.IsAbs(ops[0]):
				st.dir = ops[0]
			case dir == unknownDir:
			default:
				st.dir = filepath.Join(dir, ops[0])
			}
			continue
		}
		// export and assignments write no file of their own, but may
		// redirect to one: they are read too.
		gitVariables(c.words, w, &st.env, &st.local)
		if len(st.env) > 0 && len(w) > 0 {
			c.words = append(slices.Clone(st.env), c.words...)
		}
		fn(c, func(paths []string) []string {
			if dir == "" {
				return paths
			}
			var out []string
			for _, p := range paths {
				switch {
				case filepath.IsAbs(p):
					out = append(out, p)
				case dir != unknownDir:
					if j := filepath.Join(dir, p); !strings.HasPrefix(j, "/dev/") {
						out = append(out, j)
					}
				}
			}
			return out
		})
	}
}

// gitVariables reads a command that sets or exports git's variables
// (GIT_*) into env (exported) and local (assigned only): assignments
// alone (NAME=VALUE; an exported one stays exported), export and
// declare/typeset/local -x (+x, export -n take the export back), unset.
// w is the command's words after its assignments and wrappers. A word
// that is not clear names no variable Tavern knows.
func gitVariables(words, w []string, env, local *[]string) {
	isGit := func(name string) bool { return strings.HasPrefix(name, "GIT_") }
	set := func(list *[]string, name, value string) {
		unsetVariable(list, name)
		*list = append(*list, name+"="+value)
	}
	// assign sets name where it is: exported once exported.
	assign := func(name, value string) {
		if slices.ContainsFunc(*env, func(e string) bool { return strings.HasPrefix(e, name+"=") }) {
			set(env, name, value)
		} else {
			set(local, name, value)
		}
	}
	if len(w) == 0 {
		// Assignments alone, not a wrapper's (env X=1 sets nothing here).
		if slices.ContainsFunc(words, func(a string) bool {
			eq := strings.IndexByte(a, '=')
			return eq <= 0 || strings.ContainsAny(a[:eq], "/-.")
		}) {
			return
		}
		for _, a := range words {
			if name, value, _ := strings.Cut(a, "="); isGit(name) {
				assign(name, value)
			}
		}
		return
	}
	export, unexport := false, false
	switch w[0] {
	case "export":
		export = true
	case "declare", "typeset", "local":
	case "unset":
		for _, a := range w[1:] {
			unsetVariable(env, a)
			unsetVariable(local, a)
		}
		return
	default:
		return
	}
	var operands []string
	for _, a := range w[1:] {
		switch {
		case strings.HasPrefix(a, "-") && len(a) > 1:
			export = export || strings.Contains(a, "x")
			unexport = unexport || w[0] == "export" && strings.Contains(a, "n")
		case strings.HasPrefix(a, "+") && len(a) > 1:
			unexport = unexport || strings.Contains(a, "x")
		default:
			operands = append(operands, a)
		}
	}
	for _, a := range operands {
		name, value, assigned := strings.Cut(a, "=")
		if !isGit(name) {
			continue
		}
		if !assigned {
			// export NAME: the value it was assigned, if any.
			for _, l := range *local {
				if n, val, _ := strings.Cut(l, "="); n == name {
					value, assigned = val, true
				}
			}
		}
		switch {
		case unexport:
			if !assigned {
				for _, e := range *env {
					if n, val, _ := strings.Cut(e, "="); n == name {
						value, assigned = val, true
					}
				}
			}
			unsetVariable(env, name)
			if assigned {
				set(local, name, value)
			}
		case export && assigned:
			unsetVariable(local, name)
			set(env, name, value)
		case assigned:
			assign(name, value)
		}
	}
}

// unsetVariable takes the variable name out of list (NAME=VALUE words).
func unsetVariable(list *[]string, name string) {
	*list = slices.DeleteFunc(*list, func(e string) bool { return strings.HasPrefix(e, name+"=") })
}

type shellWord struct {
	text    string
	dynamic bool // contains an expansion or a glob: not a clear path
}

type simpleCommand struct {
	words     []string // static words; a dynamic word is ""
	redirects []string // static output redirection targets
	heredoc   string   // the bodies of its here-documents (apply_patch reads its patch there)
	stdin     string   // a static input redirection's file (< FILE): git apply and patch read their patch there
	subs      []string // the scripts of its command substitutions, $(...) and `...`
	depth     int      // how many ( ) subshells it is in
}

// parseShell splits a command line into simple commands (separated by ;
// & && || | and newlines), with quotes removed, output redirection
// targets collected, and here-document bodies skipped.
func parseShell(line string) ([]simpleCommand, bool) {
	return parseShellIn(line, 0)
}

// maxShellNesting is how deep in sh -c scripts and command
// substitutions the gate reads: each level is read again from its text,
// so a line of thousands of nested $( would take minutes. Deeper
// commands are not read (as a line that does not tokenize is not).
const maxShellNesting = 16

// parseShellIn is parseShell of a script nest levels deep.
func parseShellIn(line string, nest int) ([]simpleCommand, bool) {
	var cmds []simpleCommand
	var cur simpleCommand
	// Here-documents waiting for the next newline: the delimiter and the
	// command (its index in cmds once flushed) whose stdin the body is.
	type pending struct {
		delim string
		cmd   int
	}
	var heredocs []pending
	rs := []rune(line)
	i := 0
	depth := 0
	flush := func() {
		if len(cur.words) > 0 || len(cur.redirects) > 0 || len(cur.subs) > 0 {
			cur.depth = depth
			cmds = append(cmds, cur)
		}
		cur = simpleCommand{}
	}
	readWord := func() (shellWord, bool) {
		var w strings.Builder
		dyn := false
		// A brace expansion ({a,b}, {1..3}) makes several words; a lone
		// {} (find -exec, xargs -I{}) is one word.
		brace := false
		word := func() shellWord {
			t := w.String()
			if brace && strings.Contains(t, "}") && (strings.Contains(t, ",") || strings.Contains(t, "..")) {
				dyn = true
			}
			return shellWord{text: t, dynamic: dyn}
		}
		for i < len(rs) {
			r := rs[i]
			switch {
			case r == '\'':
				j := i + 1
				for j < len(rs) && rs[j] != '\'' {
					j++
				}
				if j >= len(rs) {
					return shellWord{}, false
				}
				w.WriteString(string(rs[i+1 : j]))
				i = j + 1
			case r == '"':
				// Inside double quotes a backslash escapes only $ ` " \
				// and a newline; substitutions still run.
				j := i + 1
				for j < len(rs) && rs[j] != '"' {
					switch {
					case rs[j] == '\\' && j+1 < len(rs):
						if strings.ContainsRune("$`\"\\", rs[j+1]) {
							w.WriteRune(rs[j+1])
						} else if rs[j+1] != '\n' {
							w.WriteRune(rs[j])
							w.WriteRune(rs[j+1])
						}
						j += 2
						continue
					case rs[j] == '$' || rs[j] == '`':
						dyn = true
						end, script, ok := substitution(rs, j)
						if end < 0 {
							return shellWord{}, false
						}
						if ok {
							cur.subs = append(cur.subs, script)
							w.WriteString(string(rs[j:end]))
							j = end
							continue
						}
					}
					w.WriteRune(rs[j])
					j++
				}
				if j >= len(rs) {
					return shellWord{}, false
				}
				i = j + 1
			case r == '\\':
				switch {
				case i+1 < len(rs) && rs[i+1] == '\n':
					i += 2 // a line continuation joins the word's parts
				case i+1 < len(rs):
					w.WriteRune(rs[i+1])
					i += 2
				default:
					i++
				}
			case r == ' ' || r == '\t' || r == '\n' || r == ';' || r == '&' || r == '|' || r == '<' || r == '>' || r == '(' || r == ')':
				return word(), true
			default:
				if r == '$' || r == '`' {
					end, script, ok := substitution(rs, i)
					if end < 0 {
						return shellWord{}, false
					}
					if ok {
						cur.subs = append(cur.subs, script)
						dyn = true
						w.WriteString(string(rs[i:end]))
						i = end
						continue
					}
				}
				// A tilde expands only at a word's start or after = or :
				// (HEAD~1 is a revision, a~ a file).
				tilde := r == '~' && (w.Len() == 0 || strings.HasSuffix(w.String(), "=") || strings.HasSuffix(w.String(), ":"))
				if r == '$' || r == '`' || r == '*' || r == '?' || r == '[' || tilde {
					dyn = true
				}
				if r == '{' {
					brace = true
				}
				w.WriteRune(r)
				i++
			}
		}
		return word(), true
	}
	skipBlanks := func() {
		for i < len(rs) && (rs[i] == ' ' || rs[i] == '\t') {
			i++
		}
	}
	for i < len(rs) {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t':
			i++
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			i += 2 // a line continuation (cmd \<newline> args) is a blank
		case r == '#' && (i == 0 || rs[i-1] == ' ' || rs[i-1] == '\t' || rs[i-1] == '\n' || rs[i-1] == ';'):
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '\n':
			flush()
			i++
			for _, h := range heredocs {
				var body strings.Builder
				for i < len(rs) {
					j := i
					for j < len(rs) && rs[j] != '\n' {
						j++
					}
					line := strings.TrimLeft(string(rs[i:j]), "\t")
					i = min(j+1, len(rs))
					if line == h.delim {
						break
					}
					body.WriteString(line + "\n")
				}
				if h.cmd < len(cmds) {
					cmds[h.cmd].heredoc += body.String()
				}
			}
			heredocs = nil
		case r == ';' || r == '|' || r == '&' || r == '(' || r == ')':
			// &> and &>> redirect both streams.
			if r == '&' && i+1 < len(rs) && rs[i+1] == '>' {
				i++
				continue
			}
			flush()
			switch {
			case r == '(':
				depth++
			case r == ')' && depth > 0:
				depth--
			}
			i++
		case r == '<':
			if i+1 < len(rs) && rs[i+1] == '<' {
				i += 2
				if i < len(rs) && rs[i] == '<' { // here-string <<<
					i++
					skipBlanks()
					if _, ok := readWord(); !ok {
						return nil, false
					}
					continue
				}
				if i < len(rs) && rs[i] == '-' {
					i++
				}
				skipBlanks()
				w, ok := readWord()
				if !ok {
					return nil, false
				}
				heredocs = append(heredocs, pending{w.text, len(cmds)})
				continue
			}
			i++
			skipBlanks()
			w, ok := readWord() // input redirection: read, not write
			if !ok {
				return nil, false
			}
			if !w.dynamic && w.text != "" {
				cur.stdin = w.text
			}
		case r == '>':
			i++
			if i < len(rs) && (rs[i] == '>' || rs[i] == '|') {
				i++
			}
			if i < len(rs) && rs[i] == '&' { // >&2: a descriptor; >&FILE (both streams) a file
				i++
				skipBlanks()
				w, ok := readWord()
				if !ok {
					return nil, false
				}
				if !w.dynamic && w.text != "" && w.text != "-" && strings.Trim(w.text, "0123456789") != "" && !strings.HasPrefix(w.text, "/dev/") {
					cur.redirects = append(cur.redirects, w.text)
				}
				continue
			}
			skipBlanks()
			w, ok := readWord()
			if !ok {
				return nil, false
			}
			if !w.dynamic && w.text != "" && !strings.HasPrefix(w.text, "/dev/") {
				cur.redirects = append(cur.redirects, w.text)
			}
		default:
			w, ok := readWord()
			if !ok {
				return nil, false
			}
			// "2>" and "1>>": a descriptor number right before >.
			if i < len(rs) && rs[i] == '>' && w.text != "" && strings.Trim(w.text, "0123456789") == "" && !w.dynamic {
				continue
			}
			if w.dynamic {
				cur.words = append(cur.words, "")
			} else {
				cur.words = append(cur.words, w.text)
			}
		}
	}
	flush()
	return inlineShells(cmds, nest), true
}

// inlineShells puts the commands of each `sh -c SCRIPT` (bash, zsh...)
// right after it, and those of its command substitutions right before
// it, one subshell deeper: what the script writes, the line
// writes, and a cd in it moves only its own commands. The script is
// shorter than the line it is in, so the recursion ends.
func inlineShells(cmds []simpleCommand, nest int) []simpleCommand {
	if nest >= maxShellNesting {
		return cmds
	}
	var out []simpleCommand
	for _, c := range cmds {
		// A command substitution runs before its command, in a subshell.
		for _, sub := range c.subs {
			if inner, ok := parseShellIn(sub, nest+1); ok {
				for _, ic := range inner {
					ic.depth += c.depth + 1
					out = append(out, ic)
				}
			}
		}
		out = append(out, c)
		script := shellScript(c.words)
		if script == "" {
			continue
		}
		inner, ok := parseShellIn(script, nest+1)
		if !ok {
			continue
		}
		for _, ic := range inner {
			ic.depth += c.depth + 1
			out = append(out, ic)
		}
	}
	return out
}

// shellScript is the script a shell runs from its -c option (`bash -c
// SCRIPT`, `sh -ec SCRIPT`, `bash --norc -lc SCRIPT`), "" for any other
// command or a script that is not clear.
func shellScript(words []string) string {
	w := commandWords(words)
	if len(w) > 1 && w[0] == "eval" {
		// eval runs its arguments, joined by spaces, as a line; a word
		// that is not clear leaves it not clear.
		if slices.Contains(w[1:], "") {
			return ""
		}
		return strings.Join(w[1:], " ")
	}
	if len(w) < 3 {
		return ""
	}
	switch filepath.Base(w[0]) {
	case "sh", "bash", "zsh", "dash", "ksh":
	default:
		return ""
	}
	for i := 1; i < len(w); i++ {
		a := w[i]
		switch {
		case a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++ // takes a value
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if strings.Contains(a, "c") {
				if i+1 < len(w) {
					return w[i+1]
				}
				return ""
			}
		default:
			return "" // a script file: not read
		}
	}
	return ""
}

// commandWrites returns the paths one simple command clearly writes.
func commandWrites(words []string) []string {
	words = commandWords(words)
	if len(words) == 0 {
		return nil
	}
	name := filepath.Base(words[0])
	args := words[1:]
	operands := func(args []string) []string { return shellOperands(args) }
	clean := cleanPaths
	switch name {
	case "tee", "rm", "rmdir", "unlink", "sponge":
		return clean(operands(args))
	case "touch":
		// touch -r FILE reads FILE's times: the values of the options
		// that take one are no operands.
		return clean(operands(dropOptionValues(args, "-r", "--reference", "-d", "--date", "-t")))
	case "mkdir":
		return clean(operands(dropOptionValues(args, "-m", "--mode", "--context")))
	case "shred":
		return clean(operands(dropOptionValues(args, "-n", "--iterations", "-s", "--size", "--random-source")))
	case "gofmt", "goimports":
		return gofmtWrites(args)
	case "go":
		return goFmtWrites(args)
	case "find":
		return clean(findWrites(args))
	case "tar", "unzip", "zip", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz":
		files, trees := archiveWrites(name, args)
		return append(files, trees...)
	case "sort":
		return clean(optionValues(args, "-o", "--output"))
	case "curl":
		return clean(optionValues(args, "-o", "--output"))
	case "wget":
		return clean(optionValues(args, "-O", "--output-document"))
	case "xargs":
		// What xargs appends comes from its input and is not clear (see
		// commandTrees); the words it is given are.
		cmd, repl := xargsCommand(args)
		if repl != "" {
			cmd = withFound(cmd, repl)
		}
		return cleanFound(commandWrites(cmd))
	case "truncate":
		var out []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "-s" || a == "--size" || a == "-r" || a == "--reference" {
				i++
				continue
			}
			if !strings.HasPrefix(a, "-") {
				out = append(out, a)
			}
		}
		return clean(out)
	case "chmod", "chown", "chgrp":
		return clean(modeOperands(name, args))
	case "prettier", "eslint", "black", "ruff", "rustfmt", "cargo", "clang-format", "yq", "awk", "gawk", "dos2unix", "unix2dos":
		return clean(formatterWrites(name, args))
	case "rsync":
		files, trees := rsyncWrites(args)
		return clean(append(files, trees...))
	case "mv", "cp", "ln", "install", "scp":
		if name == "install" {
			args = dropOptionValues(args, "-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix")
			if slices.Contains(args, "-d") || slices.Contains(args, "--directory") {
				return clean(operands(args)) // each one a directory made
			}
		}
		if name == "ln" {
			args = dropOptionValues(args, "-S", "--suffix")
		}
		if name == "scp" {
			// A remote side (host:path) is not a file here; a remote
			// source's name is still the file written in a local
			// directory.
			args = dropOptionValues(args, "-P", "-i", "-o", "-F", "-l", "-c", "-J", "-S")
			if ops := operands(args); len(ops) < 2 || remotePath(ops[len(ops)-1]) {
				return nil
			}
		}
		var out []string
		if name == "mv" {
			out = operands(args) // the sources are removed
		}
		// The destination, and the files the call writes in it when it
		// is a directory: -t DIR names one; else the last operand, which
		// with a trailing slash or several sources can only be one, and
		// may be one otherwise (`cp a.go src/parser` writes
		// src/parser/a.go when src/parser exists). A copy onto a path a
		// reservation covers the inside of is a conflict either way.
		var dest string
		var srcs []string
		for i, a := range args {
			if (a == "-t" || a == "--target-directory") && i+1 < len(args) {
				dest = args[i+1]
				srcs = operands(append(slices.Clone(args[:i]), args[i+2:]...))
				break
			}
			if d, ok := strings.CutPrefix(a, "--target-directory="); ok {
				dest = d
				srcs = operands(append(slices.Clone(args[:i]), args[i+1:]...))
				break
			}
		}
		if dest == "" {
			ops := operands(args)
			switch {
			case len(ops) == 1 && name == "ln":
				// ln TARGET makes the link ./NAME, NAME TARGET's last part.
				if b := filepath.Base(ops[0]); ops[0] != "" && b != "." && b != "/" && b != ".." {
					out = append(out, b)
				}
				return clean(out)
			case len(ops) < 2:
				return clean(out)
			}
			dest, srcs = ops[len(ops)-1], ops[:len(ops)-1]
		}
		if name != "mv" {
			out = append(out, dest)
		}
		if !slices.Contains(args, "-T") && !slices.Contains(args, "--no-target-directory") && !(name == "install" && slices.Contains(args, "-d")) {
			for _, s := range srcs {
				if name == "scp" && remotePath(s) {
					s = s[strings.IndexByte(s, ':')+1:] // host:dir/a.go writes DEST/a.go
				}
				if b := filepath.Base(s); b != "." && b != "/" && b != ".." {
					out = append(out, filepath.Join(dest, b))
				}
			}
		}
		return clean(out)
	case "dd":
		for _, a := range args {
			if f, ok := strings.CutPrefix(a, "of="); ok {
				return clean([]string{f})
			}
		}
	case "sed", "perl", "ruby":
		inPlace := false
		script := true // the first operand is the script unless -e/-f gave one
		var files []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "--in-place" || strings.HasPrefix(a, "--in-place="):
				inPlace = true
			case a == "--expression" || a == "--file":
				script = false
				i++
			case strings.HasPrefix(a, "--expression=") || strings.HasPrefix(a, "--file="):
				script = false
			case name == "perl" && (a == "-I" || a == "-x" || a == "-M" || a == "-m"),
				name == "ruby" && (a == "-I" || a == "-r" || a == "-C" || a == "-E"),
				name == "sed" && a == "-l":
				i++ // a separate value
			case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && a != "-":
				inP, scr, next := editCluster(name, a)
				inPlace = inPlace || inP
				if scr {
					script = false
					if next {
						i++ // -pe 'CODE'
					}
				}
			case strings.HasPrefix(a, "-"):
			case script:
				script = false
			default:
				files = append(files, a)
			}
		}
		if inPlace {
			return clean(files)
		}
	case "git":
		dir, args, ok := gitCommand(args)
		if !ok {
			return nil
		}
		if len(args) > 0 && (args[0] == "mv" || args[0] == "rm") {
			if !gitTouchesTree(args) {
				return nil
			}
			return clean(inDir(dir, operands(args[1:])))
		}
		return clean(inDir(dir, gitRestored(args)))
	}
	return nil
}

// editCluster reads a cluster of sed's, perl's or ruby's one-letter
// switches (-i, -Ei, -pi.bak, -ne's/x/y/p'): whether it holds -i, which
// takes the rest of the word as its backup suffix, and whether it gives
// the script (sed's -e and -f, perl's -e and -E, ruby's -e): joined
// (-es/a/b/) or, when it ends the word, as the next word (next). A
// letter that takes a value (perl's -Mstrict and -Ilib, ruby's -rjson,
// sed's -l) ends the cluster: an i in its value is no -i.
func editCluster(name, a string) (inPlace, script, next bool) {
	flags, scripts := "nrEsuz", "ef" // sed
	switch name {
	case "perl":
		flags, scripts = "nparsTtuUwWcSXl0123456789", "eE"
	case "ruby":
		flags, scripts = "nplasSwvdyUc", "e"
	}
	for j := 1; j < len(a); j++ {
		switch c := rune(a[j]); {
		case c == 'i':
			return true, false, false
		case strings.ContainsRune(scripts, c):
			return false, true, j == len(a)-1
		case !strings.ContainsRune(flags, c):
			return false, false, false
		}
	}
	return false, false, false
}

// commandWords skips the assignments, the shell's reserved words that
// start a command (do, then, else, !, {...) and the wrappers (sudo,
// env, nohup, timeout, nice...) with their own options before the
// command that runs: its first word is the command's name.
func commandWords(words []string) []string {
	// The options of a wrapper that take a separate value; timeout's
	// first operand is its duration, busybox's its applet.
	wrappers := map[string][]string{
		"sudo":    {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--chdir", "--host", "--prompt"},
		"doas":    {"-u", "-C"},
		"env":     {"-u", "-C", "--unset", "--chdir"},
		"nice":    {"-n", "--adjustment"},
		"ionice":  {"-c", "-n", "--class", "--classdata"},
		"stdbuf":  {"-i", "-o", "-e", "--input", "--output", "--error"},
		"timeout": {"-s", "-k", "--signal", "--kill-after"},
		"npx":     {"-p", "--package", "-c", "--call"},
		"bunx":    {"-p", "--package"},
		"command": nil, "nohup": nil, "time": nil, "exec": nil, "busybox": nil,
	}
	for len(words) > 0 {
		w := words[0]
		if w == "" {
			return nil
		}
		if eq := strings.IndexByte(w, '='); eq > 0 && !strings.ContainsAny(w[:eq], "/-.") {
			words = words[1:]
			continue
		}
		switch w {
		case "!", "{", "do", "then", "else", "elif", "if", "while", "until":
			words = words[1:]
			continue
		case "function":
			// `function f { BODY; }`: the body is read as if it ran (a
			// function is defined to be run); f() { BODY; } splits at
			// the parentheses and reads the same.
			words = words[min(2, len(words)):]
			continue
		}
		valued, ok := wrappers[w]
		if !ok {
			break
		}
		if w == "command" && len(words) > 1 && (words[1] == "-v" || words[1] == "-V") {
			return nil // says what the name is; runs nothing
		}
		words = words[1:]
		for len(words) > 0 && strings.HasPrefix(words[0], "-") && len(words[0]) > 1 {
			if words[0] == "--" {
				words = words[1:]
				break
			}
			if slices.Contains(valued, words[0]) && len(words) > 1 {
				words = words[1:] // the option's value
			}
			words = words[1:]
		}
		if w == "timeout" && len(words) > 0 {
			words = words[1:] // the duration
		}
	}
	return words
}

// dropOptionValues removes the options that take a separate value, and
// their values, so the values are not read as operands.
func dropOptionValues(args []string, opts ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if slices.Contains(opts, args[i]) {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// optionValues returns the values given to the options named (`-o F`,
// `--output F`, `--output=F`, and `-oF` for a one-letter one), up to
// "--": sort -o and curl -o write the file they name.
func optionValues(args []string, opts ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, o := range opts {
			switch {
			case a == o && i+1 < len(args):
				out = append(out, args[i+1])
			case strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"="):
				out = append(out, a[len(o)+1:])
			case len(o) == 2 && o[0] == '-' && o[1] != '-' && strings.HasPrefix(a, o) && len(a) > 2:
				out = append(out, a[2:])
			}
		}
	}
	return out
}

// shellOperands are a command's arguments that are not options (all of
// them after "--").
func shellOperands(args []string) []string {
	var out []string
	end := false
	for _, a := range args {
		switch {
		case end:
			out = append(out, a)
		case a == "--":
			end = true
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			out = append(out, a)
		}
	}
	return out
}

// cleanFound drops foundArg and the paths made from it.
func cleanFound(ps []string) []string {
	var out []string
	for _, p := range ps {
		if !strings.Contains(p, foundArg) {
			out = append(out, p)
		}
	}
	return out
}

func cleanPaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		if p != "" && p != "-" && !strings.HasPrefix(p, "/dev/") {
			out = append(out, p)
		}
	}
	return out
}

// TreePaths returns the directories a tool call removes or moves as a
// whole, everything under them with them, as absolute paths: the
// operands of rm -r, rmdir, git rm -r and gofmt -w, the starting
// points of find -delete, the directory xargs runs a writing command in
// (what it writes comes from its input), the sources of mv and git
// mv, the directory tar -x and unzip extract into, a recursive rsync's
// destination, the copies a recursive cp or scp makes, the operands of
// chmod/chown/chgrp -R, the packages go fmt and go generate name,
// what git checkout/restore, stash and clean -f discard (gitDiscarded),
// the whole work tree for the git commands that rewrite files their
// line does not name (merge, pull, rebase, reset --hard...: gitRewrites;
// a switch to another commit, git bisect: gitSwitches)
// and for a patch git apply or git am cannot be read from, the directory
// patch runs in for one it cannot, what a wildcard or :(icase) pathspec
// stands for (in shell commands, as ShellWrites reads them). WritePaths has them
// too, as paths; a reservation of a path under one of them is written by
// the call as well. Relative paths are taken from cwd.
func TreePaths(toolName string, toolInput json.RawMessage, cwd string) []string {
	trees, _ := treePaths(toolName, toolInput, cwd)
	return trees
}

// wholeTreeMark starts, in what simplePaths returns for trees, a git
// work tree the command writes whole (a merge, a switch): the gate's
// denial names it as one.
const wholeTreeMark = "\x00whole:"

// treePaths is TreePaths, and which of them are git work trees the call
// writes whole (gitRewrites, gitSwitches...).
func treePaths(toolName string, toolInput json.RawMessage, cwd string) (trees, whole []string) {
	var in map[string]any
	if len(toolInput) == 0 || json.Unmarshal(toolInput, &in) != nil {
		return nil, nil
	}
	var rel, wholeRel []string
	switch toolName {
	case "Bash", "run_shell_command", "shell", "local_shell", "exec_command", "container.exec":
		cwd = shellDir(in, cwd)
		for _, p := range shellToolPaths(in["command"], &fsView{cwd: cwd}, true) {
			if w, ok := strings.CutPrefix(p, wholeTreeMark); ok {
				p = w
				wholeRel = append(wholeRel, w)
			}
			rel = append(rel, p)
		}
	}
	return absUnique(cwd, rel), absUnique(cwd, wholeRel)
}

// commandTrees returns the directories one simple command removes or
// moves with everything under them.
func commandTrees(words []string) []string {
	words = commandWords(words)
	if len(words) == 0 {
		return nil
	}
	name := filepath.Base(words[0])
	args := words[1:]
	recursive := func(args []string) bool {
		for _, a := range args {
			if a == "--" {
				return false
			}
			if a == "--recursive" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR")) {
				return true
			}
		}
		return false
	}
	sources := func(args []string) []string {
		for _, a := range args {
			if a == "-t" || a == "--target-directory" || strings.HasPrefix(a, "--target-directory=") {
				return nil // the operands mix the target and the sources: not clear
			}
		}
		ops := shellOperands(args)
		if len(ops) < 2 {
			return nil
		}
		return ops[:len(ops)-1]
	}
	switch name {
	case "rm":
		if recursive(args) {
			return cleanPaths(shellOperands(args))
		}
	case "rmdir":
		return cleanPaths(shellOperands(args))
	case "mv":
		return cleanPaths(sources(args))
	case "gofmt", "goimports":
		return gofmtWrites(args)
	case "go":
		return goFmtWrites(args)
	case "find":
		return findDeletes(args)
	case "tar", "unzip":
		_, trees := archiveWrites(name, args)
		return trees
	case "rsync":
		_, trees := rsyncWrites(args)
		return cleanPaths(trees)
	case "prettier", "eslint", "black", "ruff", "rustfmt", "cargo", "clang-format":
		return cleanPaths(formatterWrites(name, args)) // a directory: every file under it
	case "cp", "scp":
		// A recursive copy writes the whole tree it copies: DEST/NAME for
		// each source (DEST itself under -T), anything under it.
		if !recursive(args) && !slices.ContainsFunc(args, func(a string) bool {
			return a == "--archive" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "a")
		}) {
			return nil
		}
		out := commandWrites(words)
		if len(out) > 0 && !slices.Contains(args, "-T") && !slices.Contains(args, "--no-target-directory") &&
			!slices.ContainsFunc(shellOperands(args), func(s string) bool { return filepath.Base(s) == "." }) {
			out = out[1:] // DEST, which holds the copies (cp -r a/. DEST copies into DEST itself)
		}
		return cleanPaths(out)
	case "chmod", "chown", "chgrp":
		if recursive(args) {
			return cleanPaths(modeOperands(name, args))
		}
	case "xargs":
		// A writing command run on what comes in (`find ... | xargs
		// rm`, `grep -l x | xargs sed -i ...`) writes paths the line
		// does not say: anywhere under the directory it runs in.
		if writesFound(xargsCommand(args)) {
			return []string{"."}
		}
	case "git":
		dir, args, ok := gitCommand(args)
		if !ok {
			return nil
		}
		if len(args) > 0 && (args[0] == "rm" || args[0] == "mv") && !gitTouchesTree(args) {
			return nil
		}
		if len(args) > 0 && args[0] == "rm" && recursive(args[1:]) {
			return cleanPaths(inDir(dir, shellOperands(args[1:])))
		}
		if len(args) > 0 && args[0] == "mv" {
			return cleanPaths(inDir(dir, sources(args[1:])))
		}
		discarded := gitDiscarded(args)
		if slices.Contains(discarded, gitTopDir) || gitRewrites(args) {
			return []string{gitTopDir} // simplePaths finds where it is
		}
		// A directory restored is everything under it.
		return cleanPaths(inDir(dir, append(gitRestored(args), discarded...)))
	}
	return nil
}

// gitCommand skips git's own options before the subcommand and returns
// the directory -C moves it to ("" for none) and the subcommand with its
// arguments. ok is false when -C names a directory that is not clear.
func gitCommand(args []string) (dir string, rest []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C":
			if i+1 >= len(args) || args[i+1] == "" {
				return "", nil, false
			}
			i++
			if filepath.IsAbs(args[i]) {
				dir = args[i]
			} else {
				dir = filepath.Join(dir, args[i])
			}
		case a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return dir, args[i:], true
		}
	}
	return dir, nil, true
}

// gitTouchesTree says whether git mv or git rm (args[0]) changes the
// work tree: not under -n/--dry-run, nor git rm --cached (the index
// alone).
func gitTouchesTree(args []string) bool {
	for _, a := range args[1:] {
		switch {
		case a == "--":
			return true
		case a == "--dry-run" || a == "-n" || (args[0] == "rm" && a == "--cached"):
			return false
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "n"):
			return false // -nf, -rn
		}
	}
	return true
}

// gitRestored returns the paths a git subcommand overwrites in the work
// tree from the index or a commit, throwing away their changes: the
// pathspecs of `git restore` (unless only --staged) and of `git checkout
// ... -- PATHS`.
func gitRestored(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	switch args[0] {
	case "restore":
		staged, worktree := false, false
		var ops []string
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "--":
				ops = append(ops, args[i+1:]...)
				i = len(args)
			case a == "-s" || a == "--source":
				i++
			case a == "--staged" || a == "-S":
				staged = true
			case a == "--worktree" || a == "-W":
				worktree = true
			case strings.HasPrefix(a, "-"):
				if !strings.HasPrefix(a, "--") && strings.Contains(a, "S") {
					staged = true
				}
				if !strings.HasPrefix(a, "--") && strings.Contains(a, "W") {
					worktree = true
				}
			default:
				ops = append(ops, a)
			}
		}
		if staged && !worktree {
			return nil
		}
		return ops
	case "checkout":
		if i := slices.Index(args, "--"); i >= 0 {
			return args[i+1:]
		}
	}
	return nil
}

// gitDiscarded returns the directories a git subcommand resets or cleans
// as a whole, gitTopDir for the whole work tree: `git checkout .`
// (restoring the current directory, as `git checkout -- .` does), `git
// checkout -f` and `git switch --discard-changes` (a forced switch),
// `git stash` (push or save; its pathspecs, else everything changed) and
// `git clean -f` (its paths, else the untracked files under the current
// directory). Each throws away uncommitted changes, another agent's
// among them, in a shared checkout.
func gitDiscarded(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	sub, rest := args[0], args[1:]
	opts := rest
	if i := slices.Index(rest, "--"); i >= 0 {
		opts = rest[:i]
	}
	if slices.Contains(opts, "--help") || slices.Contains(opts, "-h") {
		return nil // git stash --help shows its manual, and does no more
	}
	// none is what the command does without pathspecs: git stash the
	// whole work tree, git clean the directory it runs in.
	pathspecs := func(none string, rest []string, valued ...string) []string {
		if i := slices.Index(rest, "--"); i >= 0 {
			if ps := rest[i+1:]; len(ps) > 0 {
				return ps
			}
			return []string{none}
		}
		if ps := shellOperands(dropOptionValues(rest, valued...)); len(ps) > 0 {
			return ps
		}
		return []string{none}
	}
	switch sub {
	case "checkout", "switch":
		// -f / --force (switch: --discard-changes too) throws away every
		// local change the switch meets, whichever branch it goes to.
		// A new branch's name glued to -b (-c) is no cluster of
		// switches: -bfix makes fix, it forces nothing.
		for _, a := range opts {
			letters, _, _, short := gitShortOpts(a, gitBranchOpts(sub))
			if a == "--force" || a == "--discard-changes" || short && strings.Contains(letters, "f") {
				return []string{gitTopDir}
			}
		}
		if sub == "checkout" && !slices.Contains(rest, "--") && slices.Equal(shellOperands(rest), []string{"."}) {
			return []string{"."}
		}
	case "stash":
		if len(rest) == 0 {
			return []string{gitTopDir}
		}
		switch rest[0] {
		case "push":
			return pathspecs(gitTopDir, rest[1:], "-m", "--message", "--pathspec-from-file")
		case "save":
			return []string{gitTopDir} // its operand is the message
		}
		if strings.HasPrefix(rest[0], "-") { // `git stash -u`: push
			return pathspecs(gitTopDir, rest, "-m", "--message", "--pathspec-from-file")
		}
	case "clean":
		force, dry := false, false
		for _, a := range rest {
			switch {
			case a == "--":
			case a == "--force":
				force = true
			case a == "--dry-run":
				dry = true
			case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
				force = force || strings.Contains(a, "f")
				dry = dry || strings.Contains(a, "n")
			}
		}
		if force && !dry {
			return pathspecs(".", rest, "-e", "--exclude")
		}
	}
	return nil
}

// gitTopDir stands, in what commandTrees returns, for the top of the
// work tree the git command runs in: simplePaths finds it (gitTree).
const gitTopDir = "\x00top"

// gitRewrites says whether a git subcommand rewrites work-tree files that
// its command line does not name: which ones follows from commits, a
// stash or a fetch, known only once it runs. git merge, pull, rebase,
// cherry-pick and revert (and their --abort, --continue, --skip, which
// restore or go on writing), git stash pop, apply and branch, git reset
// --hard, --keep and --merge, and git am's --abort, --skip and
// --continue (its patches are read: diffWrites). The gate takes each as a
// write of the whole work tree: it runs no git to learn the files, and
// a merge that changes a file another agent reserved is as much an
// edit of it as a sed -i. Their read-only forms (--help, --quit,
// rebase --show-current-patch and --edit-todo) write nothing. A switch
// to another commit is one too, told from one that changes nothing by
// reading the refs and HEAD: gitSwitches.
func gitRewrites(args []string) bool {
	if len(args) == 0 {
		return false
	}
	sub, rest := args[0], args[1:]
	opts := rest
	if i := slices.Index(rest, "--"); i >= 0 {
		opts = rest[:i]
	}
	has := func(names ...string) bool {
		return slices.ContainsFunc(opts, func(a string) bool { return slices.Contains(names, a) })
	}
	if has("-h", "--help") {
		return false
	}
	switch sub {
	case "merge":
		return !has("--quit", "--continue") // --continue commits what is there
	case "pull":
		return true
	case "rebase":
		return !has("--quit", "--show-current-patch", "--edit-todo")
	case "cherry-pick", "revert":
		return !has("--quit")
	case "am":
		return has("--abort", "--skip", "--continue", "-r", "--resolved", "--retry")
	case "stash":
		return len(rest) > 0 && (rest[0] == "pop" || rest[0] == "apply" || rest[0] == "branch")
	case "reset":
		return has("--hard", "--keep", "--merge")
	}
	return false
}

// gitTree is the work tree a git command runs in: the top of it (after
// -C), absolute, when the files say (here is where the command runs,
// absolute; "" when not clear); else the directory the command runs in,
// relative as the line's other paths are.
func gitTree(words []string, here string, v *fsView) string {
	dir := "."
	if w := commandWords(words); len(w) > 0 {
		if d, _, ok := gitCommand(w[1:]); ok && d != "" {
			dir = d
		}
	}
	if here != "" {
		if top := v.gitTop(under(here, dir)); top != "" {
			return top
		}
	}
	return dir
}

// pathMagic is what a git pathspec's magic says (gitglossary, pathspec):
// from the work tree's top, no wildcards, wildcards that do not cross a
// slash unless **, either case, left out.
type pathMagic struct {
	top, literal, glob, icase, exclude bool
}

// parsePathspec splits a pathspec into its magic and its pattern:
// ":(top,icase)PAT" (attr: takes nothing away from what is written),
// the short form ":/PAT", ":!PAT", ":^PAT" (its magic letters ended by
// ":" or the pattern's first other character), or PAT. ok is false for a
// magic git refuses.
func parsePathspec(s string) (pat string, m pathMagic, ok bool) {
	rest, isMagic := strings.CutPrefix(s, ":")
	if !isMagic {
		return s, m, true
	}
	if long, ok := strings.CutPrefix(rest, "("); ok {
		end := strings.IndexByte(long, ')')
		if end < 0 {
			return "", m, false
		}
		for _, w := range strings.Split(long[:end], ",") {
			switch w = strings.TrimSpace(w); {
			case w == "top":
				m.top = true
			case w == "literal":
				m.literal = true
			case w == "glob":
				m.glob = true
			case w == "icase":
				m.icase = true
			case w == "exclude":
				m.exclude = true
			case w == "" || strings.HasPrefix(w, "attr:"):
			default:
				return "", m, false
			}
		}
		return long[end+1:], m, true
	}
	for ; rest != ""; rest = rest[1:] {
		switch rest[0] {
		case '/':
			m.top = true
		case '!', '^':
			m.exclude = true
		case ':':
			return rest[1:], m, true
		default:
			return rest, m, true
		}
	}
	return "", m, true
}

// globPrefix is the directory a wildcard pattern cannot match outside:
// its part before the first wildcard, up to the last slash ("." for
// none). A pattern without wildcards is itself.
func globPrefix(p string) string {
	i := strings.IndexAny(p, "*?[\\")
	if i < 0 {
		return p
	}
	if j := strings.LastIndexByte(p[:i], '/'); j > 0 {
		return p[:j]
	}
	return "."
}

// gitPathspecs rewrites the pathspecs of the git commands that write
// what they name (checkout, restore, rm, stash, clean) as the paths they
// stand for, so the readers after it take them as plain paths: :(top)P
// and :/P become P under the work tree's top (absolute; not clear, "",
// when the top is not known); :(literal)P is P; a wildcard pattern (git
// matches * ? [ in pathspecs unless told not to, :(glob) too) becomes
// the directory it cannot match outside, returned in trees as well, as
// is the directory an :(icase) one is in. An exclusion (:!P, :^P,
// :(exclude)P) is taken out: it can only leave files as they are, and
// the gate is conservative — it does not subtract it from the rest;
// when every pathspec is one, git takes it as if none were given, and
// the whole work tree is in trees (and an operand). Trees are returned
// only when the command, so rewritten, writes what it names. The first operand of a checkout
// without -- stays as it is unless it names a path that exists (:/TEXT
// is also the revision whose message has TEXT). here is where the
// command runs, absolute ("" when not clear). Under git
// --literal-pathspecs (GIT_LITERAL_PATHSPECS=1) nothing is magic;
// --noglob-pathspecs and --icase-pathspecs (and their variables) are
// read too.
func gitPathspecs(words []string, here string, v *fsView) (out, trees []string) {
	w := commandWords(words)
	if len(w) == 0 || filepath.Base(w[0]) != "git" {
		return words, nil
	}
	dir, args, ok := gitCommand(w[1:])
	if !ok || len(args) < 2 {
		return words, nil
	}
	// git's own options, and the environment the line gives it, may make
	// every pathspec literal, literal as to wildcards, or of any case.
	gitOpts := w[1 : len(w)-len(args)]
	env := words[:len(words)-len(w)]
	set := func(opt, variable string) bool {
		return slices.Contains(gitOpts, opt) || slices.Contains(env, variable+"=1") || slices.Contains(env, variable+"=true")
	}
	if set("--literal-pathspecs", "GIT_LITERAL_PATHSPECS") {
		return words, nil
	}
	noglob := set("--noglob-pathspecs", "GIT_NOGLOB_PATHSPECS")
	icase := set("--icase-pathspecs", "GIT_ICASE_PATHSPECS")
	first := 1 // where the operands start
	var valued []string
	switch args[0] {
	case "checkout":
		valued = []string{"-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"}
	case "restore":
		valued = []string{"-s", "--source", "--pathspec-from-file"}
	case "rm":
		valued = []string{"--pathspec-from-file"}
	case "clean":
		valued = []string{"-e", "--exclude"}
	case "stash":
		switch {
		case args[1] == "push":
			first = 2
		case !strings.HasPrefix(args[1], "-"):
			return words, nil // pop, apply, show...: a stash, no pathspecs
		}
		valued = []string{"-m", "--message", "--pathspec-from-file"}
	default:
		return words, nil
	}
	top := ""
	if here != "" {
		top = v.gitTop(under(here, inDirOne(dir, ".")))
	}
	dd := slices.Index(args, "--")
	rewritten := slices.Clone(args[:first])
	excludes, others := 0, 0
	seenFirst := false
	branch := args[0] == "checkout" && dd < 0 // its first operand may be a branch or revision
	for i := first; i < len(args); i++ {
		a := args[i]
		operand := dd >= 0 && i > dd
		if dd >= 0 && i < dd && !strings.HasPrefix(a, "-") {
			rewritten = append(rewritten, a) // before --: the commit (git checkout main -- P)
			continue
		}
		if !operand && (i == dd || strings.HasPrefix(a, "-") && a != "-") {
			rewritten = append(rewritten, a)
			if slices.Contains(valued, a) && i+1 < len(args) {
				i++
				rewritten = append(rewritten, args[i])
			}
			continue
		}
		pat, m, ok := parsePathspec(a)
		m.icase = m.icase || icase
		firstOfCheckout := branch && !seenFirst
		seenFirst = true
		switch {
		case a == "" || !ok:
			others++
			rewritten = append(rewritten, "")
			continue
		case m.exclude:
			excludes++
			continue
		}
		if !firstOfCheckout {
			others++ // a checkout's first operand may be the commit (git checkout main ':!x')
		}
		base := "" // relative to where git runs
		if m.top {
			if top == "" {
				rewritten = append(rewritten, "") // not clear
				continue
			}
			base = top
		}
		path := pat
		if base != "" {
			path = filepath.Join(base, pat)
		}
		switch {
		case firstOfCheckout && a != path:
			// Magic on what may be a revision: a path only when it is one.
			if under(here, inDirOne(dir, path)) == "" || len(v.existing([]string{under(here, inDirOne(dir, path))})) == 0 {
				path = a
			}
		case m.icase:
			// Any case: the paths on disk it names (their fixed part, for
			// a wildcard), each as a tree; not clear where the command
			// runs, anything under there.
			fixed := pat
			if !m.literal && !noglob {
				fixed = globPrefix(pat)
			}
			from := base
			if from == "" && here != "" {
				from = under(here, inDirOne(dir, "."))
			}
			if from == "" {
				trees = append(trees, inDirOne(dir, "."))
				rewritten = append(rewritten, ".")
				continue
			}
			for _, p := range v.caseVariants(from, fixed) {
				if base != "" {
					p = filepath.Join(base, p)
				}
				trees = append(trees, inDirOne(dir, p))
				rewritten = append(rewritten, p)
			}
			continue
		case !m.literal && (m.glob || !noglob):
			if g := globPrefix(pat); g != pat {
				path = g
				if base != "" {
					path = filepath.Join(base, g)
				}
				trees = append(trees, inDirOne(dir, path))
			}
		}
		rewritten = append(rewritten, path)
	}
	if excludes > 0 && others == 0 {
		// The whole work tree, as an operand too, so that the readers
		// below see the command write it.
		all := "."
		if top != "" {
			all = top
		}
		rewritten = append(rewritten, all)
		trees = append(trees, gitTree(words, here, v))
	}
	out = append(slices.Clone(words[:len(words)-len(args)]), rewritten...)
	// The trees are written only when the command writes its pathspecs
	// (not git rm --cached, git restore --staged).
	if len(commandWrites(out)) == 0 && len(commandTrees(out)) == 0 && len(gitCheckoutOperands(out, here, v)) == 0 {
		trees = nil
	}
	return out, trees
}

// caseVariants returns the paths under dir (absolute) that rel names in
// any case, relative to dir: each of its parts matched against the
// entries of the directory before it (a.go and A.go both match), or kept
// as it is where none does (a file git would bring back). "." for rel ".".
func (v *fsView) caseVariants(dir, rel string) []string {
	if v == nil {
		return []string{rel} // reads nothing
	}
	cur := []string{"."}
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if part == "." || part == "" {
			continue
		}
		var next []string
		for _, c := range cur {
			entries, _ := os.ReadDir(filepath.Join(dir, c))
			found := false
			for _, e := range entries {
				if strings.EqualFold(e.Name(), part) {
					next = append(next, filepath.Join(c, e.Name()))
					found = true
				}
			}
			if !found {
				next = append(next, filepath.Join(c, part))
			}
		}
		cur = next
	}
	return cur
}

// inDirOne is inDir of one path.
func inDirOne(dir, p string) string {
	return inDir(dir, []string{p})[0]
}

// inDir makes relative paths relative to dir (git -C).
func inDir(dir string, paths []string) []string {
	if dir == "" {
		return paths
	}
	var out []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out = append(out, p)
	}
	return out
}
