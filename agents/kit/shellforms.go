package kit

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// substitution reads the command substitution at rs[i] — $(...) or
// `...` — and returns the index after it and its script. ok is false
// when there is none at i ($VAR, ${X}); end is -1 when one is not closed
// (the line does not tokenize). An arithmetic $((...)) is read whole, its
// script "".
func substitution(rs []rune, i int) (end int, script string, ok bool) {
	if rs[i] == '`' {
		var b strings.Builder
		for j := i + 1; j < len(rs); j++ {
			switch {
			case rs[j] == '\\' && j+1 < len(rs) && (rs[j+1] == '`' || rs[j+1] == '\\' || rs[j+1] == '$'):
				b.WriteRune(rs[j+1])
				j++
			case rs[j] == '`':
				return j + 1, b.String(), true
			default:
				b.WriteRune(rs[j])
			}
		}
		return -1, "", false
	}
	if rs[i] != '$' || i+1 >= len(rs) || rs[i+1] != '(' {
		return 0, "", false
	}
	arith := i+2 < len(rs) && rs[i+2] == '('
	depth := 0
	var delims []string // here-documents opened on the current line
	for j := i + 1; j < len(rs); j++ {
		switch rs[j] {
		case '\\':
			j++
		case '<':
			// A here-document's body is text, not shell: an apostrophe
			// in it (git commit -m "$(cat <<'EOF' ... EOF)") opens no
			// quote. Its delimiter is read here, the body skipped at the
			// end of the line.
			if arith || j+1 >= len(rs) || rs[j+1] != '<' || (j+2 < len(rs) && rs[j+2] == '<') {
				continue
			}
			k := j + 2
			if k < len(rs) && rs[k] == '-' {
				k++
			}
			for k < len(rs) && (rs[k] == ' ' || rs[k] == '\t') {
				k++
			}
			var d strings.Builder
			for ; k < len(rs) && !strings.ContainsRune(" \t\n;|&<>()", rs[k]); k++ {
				if rs[k] != '\'' && rs[k] != '"' && rs[k] != '\\' {
					d.WriteRune(rs[k])
				}
			}
			if d.Len() > 0 {
				delims = append(delims, d.String())
			}
			j = k - 1
		case '\n':
			for _, delim := range delims {
				for j+1 < len(rs) {
					e := j + 1
					for e < len(rs) && rs[e] != '\n' {
						e++
					}
					line := strings.TrimLeft(string(rs[j+1:e]), "\t")
					j = e // the newline that ends the line (or len(rs))
					if line == delim {
						break
					}
				}
			}
			delims = nil
		case '\'', '"':
			if arith {
				continue
			}
			q := rs[j]
			for j++; j < len(rs) && rs[j] != q; j++ {
				if q == '"' && rs[j] == '\\' {
					j++
				}
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				if arith {
					return j + 1, "", true
				}
				return j + 1, string(rs[i+2 : j]), true
			}
		}
	}
	return -1, "", false
}

// fsView is what the gate reads of the files, where the command line
// alone does not say what it writes: whether `git checkout NAME` names a
// path, and the patches git apply and patch read. A nil *fsView reads
// nothing (ShellWrites).
type fsView struct {
	cwd string
	// For one git command given its work tree or git directory
	// (gitWorkTree): the work tree's top and the git directory and the
	// one holding its refs, absolute ("": found from the files).
	top, gitDir, common string
}

// maxPatchRead bounds what the gate reads of a patch file.
const maxPatchRead = 16 << 20

func (v *fsView) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(v.cwd, p)
}

// existing keeps the paths that exist.
func (v *fsView) existing(paths []string) []string {
	if v == nil {
		return nil
	}
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(v.abs(p)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func (v *fsView) isDir(p string) bool {
	if v == nil {
		return false
	}
	fi, err := os.Stat(v.abs(p))
	return err == nil && fi.IsDir()
}

// read is the text of the file p (its first maxPatchRead bytes), "" when
// it cannot be read.
func (v *fsView) read(p string) string {
	text, _ := v.readOK(p)
	return text
}

// readOK is read, and whether p could be read (a directory cannot).
func (v *fsView) readOK(p string) (string, bool) {
	if v == nil || p == "" {
		return "", false
	}
	f, err := os.Open(v.abs(p))
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPatchRead))
	if err != nil {
		return "", false
	}
	return string(data), true
}

// gitTop is the work tree dir is in (the nearest directory up from it
// holding .git), absolute; "" for none.
func (v *fsView) gitTop(dir string) string {
	if v == nil {
		return ""
	}
	if v.top != "" {
		return v.top
	}
	d := v.abs(dir)
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// gitCheckoutOperands are the paths `git checkout` without "--"
// restores. Its first operand is the branch (or commit) it switches to
// or a path, which the command line does not tell apart; the ones after
// it are paths either way (`git checkout HEAD~1 a.go`), as are all of
// them under --ours/--theirs. The first is a branch when it is one of
// the repository's refs (git takes a ref first even when a path has its
// name: "git checkout docs" with a docs/ directory switches to the
// branch docs), a remote's branch (which git checks out as a new local
// one), a revision (HEAD~1, v1^, a hex commit id) or, alone, a name
// without a slash or a dot that does not exist (main, feature). Else it
// is a path: one that exists, or one that does not (deleted in the work
// tree, which the checkout brings back) and has a slash or a dot. A
// checkout that makes a branch (-b, -B, --orphan) or detaches restores
// nothing. A switch is a write of the whole work tree (gitSwitches),
// not of its operand. v reads the files and refs (nil: nothing is read,
// no path).
//
// here is the directory the command runs in ("" when not clear).
func gitCheckoutOperands(words []string, here string, v *fsView) []string {
	w := commandWords(words)
	if v == nil || len(w) == 0 || filepath.Base(w[0]) != "git" {
		return nil
	}
	dir, args, ok := gitCommand(w[1:])
	if !ok || len(args) == 0 || args[0] != "checkout" || slices.Contains(args, "--") { // with --: gitRestored
		return nil
	}
	stage := false
	for _, a := range args[1:] {
		if letters, opt, _, ok := gitShortOpts(a, "bB"); ok && (opt != 0 || strings.Contains(letters, "d")) {
			return nil // -b NEW, -bNEW, -qb NEW
		}
		if a == "--orphan" || strings.HasPrefix(a, "--orphan=") || a == "--detach" {
			return nil
		}
		stage = stage || a == "--ours" || a == "--theirs"
	}
	ops := shellOperands(dropOptionValues(args[1:], "--pathspec-from-file", "--conflict"))
	repo := here
	if dir != "" {
		repo = under(here, dir)
	}
	if len(ops) > 0 && !stage {
		first := ops[0]
		switch {
		case first == "" || v.isRef(repo, first):
			ops = ops[1:]
		case repo != "" && len(v.existing([]string{under(repo, first)})) == 1:
		case len(ops) > 1 || isRevision(first) || !strings.ContainsAny(first, "/."):
			ops = ops[1:]
		}
	}
	return cleanPaths(inDir(dir, ops))
}

// isRevision says whether name reads as a revision rather than a path:
// HEAD and its kin, a name with a revision suffix (~, ^, @{...}, :path)
// or a commit id (four to forty hex digits).
func isRevision(name string) bool {
	if slices.Contains([]string{"HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "@", "-"}, name) || strings.ContainsAny(name, "~^:") || strings.Contains(name, "@{") {
		return true
	}
	if len(name) < 4 || len(name) > 40 {
		return false
	}
	return strings.Trim(strings.ToLower(name), "0123456789abcdef") == ""
}

// isRef says whether name is a branch or tag of the repository dir is
// in: a loose ref file, or a line of packed-refs. A nil *fsView reads
// nothing: no name is a ref.
func (v *fsView) isRef(dir, name string) bool {
	if v == nil || dir == "" || dir == unknownDir || name == "" || strings.Contains(name, "..") {
		return false
	}
	_, gitDir := v.gitDirs(dir)
	if gitDir == "" {
		return false
	}
	refs := []string{"refs/heads/" + name, "refs/tags/" + name, "refs/remotes/" + name} // origin/main
	for _, ref := range refs {
		if fi, err := os.Stat(filepath.Join(gitDir, filepath.FromSlash(ref))); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	// A remote's branch: git checkout NAME makes the local branch NAME
	// from origin/NAME.
	if remotes, err := os.ReadDir(filepath.Join(gitDir, "refs", "remotes")); err == nil {
		for _, r := range remotes {
			if fi, err := os.Stat(filepath.Join(gitDir, "refs", "remotes", r.Name(), filepath.FromSlash(name))); err == nil && fi.Mode().IsRegular() {
				return true
			}
		}
	}
	for _, l := range strings.Split(v.read(filepath.Join(gitDir, "packed-refs")), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if slices.Contains(refs, f[1]) {
			return true
		}
		if r, ok := strings.CutPrefix(f[1], "refs/remotes/"); ok {
			if _, b, ok := strings.Cut(r, "/"); ok && b == name {
				return true
			}
		}
	}
	return false
}

// gitDirs are the git directory of the work tree dir is in (its HEAD)
// and the directory holding its refs: the same but for a linked
// worktree, whose .git is a file naming its own git directory, whose
// commondir holds the refs. Both "" outside a work tree.
func (v *fsView) gitDirs(dir string) (gitDir, common string) {
	if v.gitDir != "" {
		return v.gitDir, v.common
	}
	top := v.gitTop(dir)
	if top == "" {
		return "", ""
	}
	gitDir = filepath.Join(top, ".git")
	data, err := os.ReadFile(gitDir)
	if err != nil {
		return gitDir, gitDir
	}
	g, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return gitDir, gitDir
	}
	gitDir = strings.TrimSpace(g)
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(top, gitDir)
	}
	common = gitDir
	if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	return gitDir, common
}

// gitWorkTree reads where a git command's work tree is when its line
// says: git --work-tree W (GIT_WORK_TREE=W, on its words or exported
// before it: walkShell), or --git-dir G (GIT_DIR=G),
// after which the work tree is where git runs. Run outside W, git takes
// paths from W's top: the words returned have -C W before the
// subcommand, so the readers take them from there. The view returned
// has W as the top of the work tree (the whole tree a merge writes,
// :/ pathspecs) and reads refs and HEAD from G, else from the
// repository git runs in. Without either, or with one that is not
// clear, words and v are as given (a --work-tree that is not clear
// makes the command's paths not clear). here is where the command runs,
// absolute ("" when not clear).
func gitWorkTree(words []string, here string, v *fsView) ([]string, *fsView) {
	w := commandWords(words)
	if len(w) == 0 || filepath.Base(w[0]) != "git" {
		return words, v
	}
	dir, args, ok := gitCommand(w[1:])
	if !ok || len(args) == 0 {
		return words, v
	}
	var tree, gdir string
	haveTree, haveDir := false, false
	for _, e := range words[:len(words)-len(w)] {
		if t, ok := strings.CutPrefix(e, "GIT_WORK_TREE="); ok {
			tree, haveTree = t, true
		}
		if g, ok := strings.CutPrefix(e, "GIT_DIR="); ok {
			gdir, haveDir = g, true
		}
	}
	// git's options win over the environment.
	opts := w[1 : len(w)-len(args)]
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		switch {
		case (a == "--work-tree" || a == "--git-dir") && i+1 < len(opts):
			i++
			if a == "--work-tree" {
				tree, haveTree = opts[i], true
			} else {
				gdir, haveDir = opts[i], true
			}
		case strings.HasPrefix(a, "--work-tree="):
			tree, haveTree = strings.TrimPrefix(a, "--work-tree="), true
		case strings.HasPrefix(a, "--git-dir="):
			gdir, haveDir = strings.TrimPrefix(a, "--git-dir="), true
		}
	}
	if !haveTree && !haveDir {
		return words, v
	}
	if haveTree && tree == "" {
		// A work tree that is not clear: nothing the command writes is,
		// as under git -C "$D".
		n := len(words) - len(args)
		return append(append(slices.Clone(words[:n]), "-C", ""), args...), v
	}
	if !haveTree {
		tree = "." // where git runs
	}
	cwd := under(here, inDirOne(dir, "."))
	top := ""
	switch {
	case filepath.IsAbs(tree):
		top = filepath.Clean(tree)
	case cwd != "":
		top = filepath.Join(cwd, tree)
	}
	var inside bool
	if top != "" && cwd != "" {
		inside = cwd == top || strings.HasPrefix(cwd, top+"/")
	} else if !filepath.IsAbs(tree) {
		// Not known where git runs: inside only when W is it or above it.
		inside = strings.Trim(strings.ReplaceAll(filepath.ToSlash(filepath.Clean(tree)), "..", ""), "/") == "" || filepath.Clean(tree) == "."
	}
	if !inside {
		n := len(words) - len(args)
		words = append(append(slices.Clone(words[:n]), "-C", tree), args...)
	}
	if v == nil {
		return words, nil
	}
	nv := &fsView{cwd: v.cwd, top: top}
	switch {
	case haveDir && gdir != "" && under(cwd, gdir) != "":
		nv.gitDir = under(cwd, gdir)
		nv.common = nv.gitDir
		if c, err := os.ReadFile(filepath.Join(nv.gitDir, "commondir")); err == nil {
			nv.common = under(nv.gitDir, strings.TrimSpace(string(c)))
		}
	case !haveDir && cwd != "":
		nv.gitDir, nv.common = v.gitDirs(cwd)
	}
	return words, nv
}

// isHead says whether name is what the work tree dir is in has checked
// out: HEAD, @, the branch .git/HEAD names, or the commit it holds
// when detached. A switch to it changes no file.
func (v *fsView) isHead(dir, name string) bool {
	if name == "HEAD" || name == "@" {
		return true
	}
	if v == nil || dir == "" || dir == unknownDir || name == "" {
		return false
	}
	gitDir, _ := v.gitDirs(dir)
	if gitDir == "" {
		return false
	}
	head := strings.TrimSpace(v.read(filepath.Join(gitDir, "HEAD")))
	if ref, ok := strings.CutPrefix(head, "ref:"); ok {
		ref = strings.TrimSpace(ref)
		return ref == name || ref == "refs/heads/"+name
	}
	return head != "" && head == name
}

// gitSwitches says whether a git command moves the work tree to another
// commit, rewriting every file that differs between the two (which ones
// follows from the commits, as for gitRewrites): git checkout or switch
// to a branch or revision that is not the one checked out (checkout's
// operand read as gitCheckoutOperands reads it, no paths after it), to
// the previous one (-), a branch made at another start point (-b, -B,
// -c, -C, checkout --orphan), switch --orphan (an empty tree), --detach
// at a revision, and git bisect but its read-only forms (log, view,
// visualize, terms, start --no-checkout). A branch made where HEAD is
// (-b NEW), and checkout --orphan NEW, leave the tree as it is. A lone
// operand that is not clear (git checkout "$B", git switch $BR) is a
// switch. here is where the command runs, absolute ("" when not clear).
func gitSwitches(words []string, here string, v *fsView) bool {
	w := commandWords(words)
	if v == nil || len(w) == 0 || filepath.Base(w[0]) != "git" {
		return false
	}
	dir, args, ok := gitCommand(w[1:])
	if !ok || len(args) == 0 {
		return false
	}
	sub, rest := args[0], args[1:]
	opts := rest
	if i := slices.Index(rest, "--"); i >= 0 {
		if i < len(rest)-1 {
			return false // pathspecs: gitRestored
		}
		opts = rest[:i]
	}
	if slices.Contains(opts, "-h") || slices.Contains(opts, "--help") {
		return false
	}
	switch sub {
	case "bisect":
		if len(rest) == 0 {
			return false
		}
		switch rest[0] {
		case "log", "view", "visualize", "terms", "help":
			return false
		case "start":
			return !slices.Contains(rest, "--no-checkout")
		}
		return true // good, bad, skip, reset, run, replay, custom terms
	case "checkout", "switch":
	default:
		return false
	}
	repo := here
	if dir != "" {
		repo = under(here, dir)
	}
	create, orphan, detach := false, false, false
	var ops []string
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		_, opt, next, short := gitShortOpts(a, gitBranchOpts(sub))
		switch {
		case short && opt != 0:
			// -b NEW, -bNEW (a cluster: -qb NEW): the new branch's name.
			create = true
			if next {
				i++
			}
		case sub == "switch" && (a == "--create" || a == "--force-create"):
			create = true
			i++ // the new branch's name
		case a == "--orphan":
			orphan = true
			i++
		case strings.HasPrefix(a, "--orphan="):
			orphan = true
		case a == "--conflict" || a == "--pathspec-from-file":
			i++
		case a == "--detach" || (sub == "switch" && a == "-d"):
			detach = true
		case a == "--ours" || a == "--theirs" || a == "-p" || a == "--patch" || strings.HasPrefix(a, "--pathspec-from-file="):
			return false // paths
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			ops = append(ops, a)
		}
	}
	switch {
	case orphan && sub == "switch":
		return true
	case len(ops) != 1:
		// None: the tree stays; several: checkout's paths
		// (gitCheckoutOperands).
		return false
	case ops[0] == "":
		// Not clear ("$B"): it may name any branch or commit, so it is
		// taken as a switch — unlike a path that is not clear, which is
		// skipped, it may write every file.
		return true
	case ops[0] == "-":
		return true
	case v.isHead(repo, ops[0]):
		return false
	case create || orphan || detach || sub == "switch":
		return true
	}
	return len(gitCheckoutOperands(words, here, v)) == 0 // a branch or revision, not a path
}

// gitPatchAll says whether git checkout -p or git restore -p (--patch)
// is given no pathspec: it offers to take back every change in the work
// tree, from the index or a commit, and which ones the user takes only
// running it tells — a write of the whole work tree, as git stash -p is.
// Given pathspecs it writes them (gitCheckoutOperands, gitRestored).
// checkout's one operand is its tree-ish unless it names a path; one
// that is not clear may be either, and is taken as the tree-ish. restore
// --staged alone writes the index, not the work tree. here is where the
// command runs, absolute ("" when not clear).
func gitPatchAll(words []string, here string, v *fsView) bool {
	w := commandWords(words)
	if len(w) == 0 || filepath.Base(w[0]) != "git" {
		return false
	}
	_, args, ok := gitCommand(w[1:])
	if !ok || len(args) == 0 || (args[0] != "checkout" && args[0] != "restore") {
		return false
	}
	sub, rest := args[0], args[1:]
	opts := rest
	dd := slices.Index(rest, "--")
	if dd >= 0 {
		opts = rest[:dd]
	}
	valued := "bB"
	if sub == "restore" {
		valued = "s"
	}
	patch, staged, worktree := false, false, false
	for _, a := range opts {
		letters, _, _, short := gitShortOpts(a, valued)
		switch {
		case a == "-h" || a == "--help":
			return false
		case a == "--patch":
			patch = true
		case a == "--staged":
			staged = true
		case a == "--worktree":
			worktree = true
		case short:
			patch = patch || strings.Contains(letters, "p")
			staged = staged || sub == "restore" && strings.Contains(letters, "S")
			worktree = worktree || sub == "restore" && strings.Contains(letters, "W")
		}
	}
	if !patch || staged && !worktree {
		return false
	}
	if dd >= 0 {
		return dd == len(rest)-1 // no pathspec after --
	}
	var ops []string
	if sub == "restore" {
		ops = shellOperands(dropOptionValues(opts, "-s", "--source", "--pathspec-from-file", "--conflict"))
	} else {
		ops = shellOperands(dropOptionValues(opts, "-b", "-B", "--orphan", "--pathspec-from-file", "--conflict"))
	}
	switch {
	case len(ops) == 0:
		return true
	case sub == "checkout" && len(ops) == 1:
		return ops[0] == "" || len(gitCheckoutOperands(words, here, v)) == 0
	}
	return false
}

// diffWrites returns the files `git apply`, `git am` and `patch` write:
// the files named in the diff they read — the here-document or < FILE
// that is their input, or the patch files they are given (v reads them)
// — after their -p strip, under git's work tree and --directory or
// patch's -d; patch's ORIGFILE operand or -o FILE instead when given.
// A patch Tavern cannot read (from a pipe, a file that is not there or
// not clear) may name any file: tree is then the directory it may write
// anything under (git's work tree, patch's directory), else "". Paths
// are rebased like the others.
func diffWrites(c simpleCommand, rebase func([]string) []string, v *fsView) (paths []string, tree string) {
	w := commandWords(c.words)
	if len(w) == 0 {
		return nil, ""
	}
	here := rebase([]string{"."})
	if len(here) == 0 {
		return nil, "" // after a cd Tavern cannot follow
	}
	base := here[0]
	var files []string // patch files; "-" is stdin
	strip := 1
	switch filepath.Base(w[0]) {
	case "git":
		gdir, args, ok := gitCommand(w[1:])
		if !ok || len(args) == 0 || (args[0] != "apply" && args[0] != "am") {
			return nil, ""
		}
		if slices.ContainsFunc(args[1:], func(a string) bool {
			return slices.Contains([]string{"-h", "--help"}, a) || args[0] == "am" &&
				(slices.Contains([]string{"--abort", "--skip", "--continue", "-r", "--resolved", "--retry", "--quit", "--show-current-patch"}, a) ||
					strings.HasPrefix(a, "--show-current-patch="))
		}) {
			return nil, "" // writes nothing, or nothing a patch names (gitRewrites)
		}
		if gdir != "" {
			base = under(base, gdir)
		}
		// git apply takes the diff's paths from the top of the work tree.
		if top := v.gitTop(base); top != "" {
			base = top
		}
		check, apply, cached, prefix := false, false, false, ""
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "--":
				files = append(files, args[i+1:]...)
				i = len(args)
			case a == "--check" || a == "--stat" || a == "--numstat" || a == "--summary":
				check = true
			case a == "--apply":
				apply = true
			case a == "--cached":
				cached = true
			case a == "-p" && i+1 < len(args):
				i++
				strip = atoiOr(args[i], 1)
			case strings.HasPrefix(a, "-p"):
				strip = atoiOr(a[2:], 1)
			case a == "--directory" && i+1 < len(args):
				i++
				prefix = args[i]
			case strings.HasPrefix(a, "--directory="):
				prefix = strings.TrimPrefix(a, "--directory=")
			case a == "--exclude" || a == "--include" || a == "--whitespace" || a == "--build-fake-ancestor":
				i++
			case strings.HasPrefix(a, "-"):
			default:
				files = append(files, a)
			}
		}
		if (check && !apply) || cached {
			return nil, "" // the work tree is not written
		}
		if prefix != "" {
			base = under(base, prefix)
		}
	case "patch":
		strip = -1 // patch's default: see below
		var ops []string
		var output string
		args := w[1:]
		for i := 0; i < len(args); i++ {
			a := args[i]
			next := func() string {
				if i+1 < len(args) {
					i++
					return args[i]
				}
				return ""
			}
			switch {
			case a == "--":
				ops = append(ops, args[i+1:]...)
				i = len(args)
			case a == "--dry-run" || a == "--check" || a == "--help" || a == "-v" || a == "--version":
				return nil, ""
			case a == "-p" || a == "--strip":
				strip = atoiOr(next(), 0)
			case strings.HasPrefix(a, "--strip="):
				strip = atoiOr(strings.TrimPrefix(a, "--strip="), 0)
			case strings.HasPrefix(a, "-p"):
				strip = atoiOr(a[2:], 0)
			case a == "-i" || a == "--input":
				files = append(files, next())
			case strings.HasPrefix(a, "--input="):
				files = append(files, strings.TrimPrefix(a, "--input="))
			case strings.HasPrefix(a, "-i"):
				files = append(files, a[2:])
			case a == "-d" || a == "--directory":
				base = under(base, next())
			case strings.HasPrefix(a, "--directory="):
				base = under(base, strings.TrimPrefix(a, "--directory="))
			case a == "-o" || a == "--output":
				output = next()
			case strings.HasPrefix(a, "--output="):
				output = strings.TrimPrefix(a, "--output=")
			case slices.Contains([]string{"-B", "--prefix", "-z", "--suffix", "-V", "--version-control", "-r", "--reject-file",
				"-F", "--fuzz", "-D", "--ifdef", "-Y", "--basename-prefix", "-g", "--get", "--quoting-style"}, a):
				i++
			case strings.HasPrefix(a, "-"):
			default:
				ops = append(ops, a)
			}
		}
		// patch [ORIGFILE [PATCHFILE]]: ORIGFILE is the one file written.
		if len(ops) > 1 {
			files = append(files, ops[1])
		}
		switch {
		case base == "" || output == "-":
			return nil, "" // -d DIR not clear; -o - writes no file
		case output != "":
			return cleanPaths([]string{under(base, output)}), ""
		case len(ops) > 0:
			return cleanPaths([]string{under(base, ops[0])}), ""
		}
	default:
		return nil, ""
	}
	if base == "" {
		return nil, "" // a directory that is not clear
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	var out []string
	for _, f := range files {
		text, ok := "", false
		switch {
		case f == "-" && c.heredoc != "":
			text, ok = c.heredoc, true
		case f == "-" && c.stdin != "":
			if r := rebase([]string{c.stdin}); len(r) == 1 {
				text, ok = v.readOK(r[0])
			}
		case f != "" && f != "-":
			if r := rebase([]string{f}); len(r) == 1 {
				text, ok = v.readOK(r[0])
			}
		}
		if !ok {
			// From a pipe, a file not there, or a name not clear: the
			// patch may name any file under base.
			tree = base
			continue
		}
		for _, p := range diffPaths(text, strip) {
			if strip < 0 {
				// GNU patch without -p: the whole name when its
				// directories exist, else the file name alone.
				if d := filepath.Dir(p); d != "." && !v.isDir(filepath.Join(base, d)) {
					p = filepath.Base(p)
				}
			}
			out = append(out, under(base, p))
		}
	}
	return cleanPaths(out), tree
}

// under is p taken from dir: p itself when absolute, "" when either is
// not clear (a dynamic word is "").
func under(dir, p string) string {
	switch {
	case dir == "" || p == "":
		return ""
	case filepath.IsAbs(p):
		return p
	}
	return filepath.Join(dir, p)
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n
	}
	return def
}

// diffPaths returns the files a unified diff (as diff -u and git diff
// write it) names: both names of each "--- A" / "+++ B" pair and of each
// "diff --git a/A b/B" line outside the hunks, /dev/null left out, each with its first
// strip directories taken off (git apply's and patch's -p; strip < 0
// takes none off). A name with fewer directories than strip is dropped.
func diffPaths(diff string, strip int) []string {
	name := func(s string) string {
		s = strings.TrimRight(s, "\r")
		if t := strings.IndexByte(s, '\t'); t >= 0 {
			s = s[:t]
		}
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, `"`) {
			if u, err := strconv.Unquote(s); err == nil {
				s = u
			}
		}
		if s == "/dev/null" || s == "" {
			return ""
		}
		if strip > 0 {
			parts := strings.Split(s, "/")
			if len(parts) <= strip {
				return ""
			}
			s = strings.Join(parts[strip:], "/")
		}
		return s
	}
	var out []string
	add := func(ps ...string) {
		for _, p := range ps {
			if p = name(p); p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	lines := strings.Split(diff, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r")
		if old, added, ok := hunkHeader(l); ok {
			// The hunk's own lines: a removed "-- x" reads "--- x".
		hunk:
			for ; i+1 < len(lines) && (old > 0 || added > 0); i++ {
				switch n := strings.TrimRight(lines[i+1], "\r"); {
				case strings.HasPrefix(n, "\\"): // \ No newline at end of file
				case strings.HasPrefix(n, "-"):
					old--
				case strings.HasPrefix(n, "+"):
					added--
				case strings.HasPrefix(n, " ") || n == "":
					old, added = old-1, added-1
				default:
					break hunk
				}
			}
			continue
		}
		if rest, ok := strings.CutPrefix(l, "diff --git "); ok {
			if j := strings.Index(rest, " b/"); j > 0 {
				add(rest[:j], rest[j+1:])
			} else if f := strings.Fields(rest); len(f) == 2 {
				add(f[0], f[1])
			}
			continue
		}
		if rest, ok := strings.CutPrefix(l, "--- "); ok && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") {
			add(rest, lines[i+1][4:])
			i++
		}
	}
	return out
}

// hunkHeader reads "@@ -OLD[,N] +NEW[,M] @@": how many old and new lines
// the hunk has (N and M, 1 when left out).
func hunkHeader(l string) (old, added int, ok bool) {
	rest, ok := strings.CutPrefix(l, "@@ -")
	if !ok {
		return 0, 0, false
	}
	f := strings.Fields(rest)
	if len(f) < 2 || !strings.HasPrefix(f[1], "+") {
		return 0, 0, false
	}
	count := func(r string) (int, bool) {
		_, n, found := strings.Cut(r, ",")
		if !found {
			return 1, true
		}
		c, err := strconv.Atoi(n)
		return c, err == nil
	}
	o, ok1 := count(f[0])
	a, ok2 := count(strings.TrimPrefix(f[1], "+"))
	return o, a, ok1 && ok2
}

// xargsCommand is the command xargs runs and its static arguments: its
// words after xargs's own options; and the string -I (-i, --replace,
// BSD's -J) says to replace with each input line, "" when it appends
// them. Every option that takes a value is read with it — separate
// (-n 1, --max-args 1), joined (-n1, --max-args=1) or at the end of a
// cluster (-rn 1, -0I{}) — so the value is not taken for the command.
func xargsCommand(args []string) (cmd []string, repl string) {
	// Long options that take a value, and those whose value is optional
	// (only --opt=VALUE gives one).
	longValue := []string{"--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			switch {
			case name == "--replace":
				repl = "{}"
				if hasVal {
					repl = val
				}
			case slices.Contains(longValue, name) && !hasVal:
				i++
			}
			continue
		}
		// A cluster of one-letter options: a letter that takes a value
		// takes the rest of the word, or the next word when none is left.
	cluster:
		for j := 1; j < len(a); j++ {
			c, rest := a[j], a[j+1:]
			switch {
			case strings.IndexByte("aEdLnPsIJRS", c) >= 0:
				if rest == "" && i+1 < len(args) {
					i++
					rest = args[i]
				}
				if c == 'I' || c == 'J' {
					repl = rest
				}
			case c == 'i': // -i[REPLACE]: the value only joined
				repl = "{}"
				if rest != "" {
					repl = rest
				}
			case c == 'e' || c == 'l': // -e[EOF], -l[LINES]: the value only joined
			default:
				continue // a letter without a value (-0, -r, -t, -p, -x, -o)
			}
			break cluster
		}
	}
	if i >= len(args) {
		return nil, repl
	}
	return args[i:], repl
}

// foundArg stands for what find -exec and xargs give the command they
// run: no word on a command line is it.
const foundArg = "\x00found"

// withFound is cmd given what find or xargs found: in place of each word
// that is repl (find's {}, xargs -I's string), or after the words when
// repl is "". A word that holds repl among other text (/tmp/{}) names a
// path that is not clear ("").
func withFound(cmd []string, repl string) []string {
	if repl == "" {
		return append(slices.Clone(cmd), foundArg)
	}
	out := make([]string, len(cmd))
	for i, w := range cmd {
		switch {
		case i > 0 && w == repl:
			out[i] = foundArg
		case i > 0 && strings.Contains(w, repl):
			out[i] = ""
		default:
			out[i] = w
		}
	}
	return out
}

// writesFound says whether the command words, given what find -exec or
// xargs found (withFound), write it.
func writesFound(cmd []string, repl string) bool {
	if len(cmd) == 0 {
		return false
	}
	more := withFound(cmd, repl)
	return slices.Contains(commandWrites(more), foundArg) || len(commandTrees(more)) > 0
}

// findDeletes returns the starting points of a find that deletes what it
// finds (-delete, or -exec/-execdir of a command that writes its
// operand): everything under them may be removed. "." when none is given.
func findDeletes(args []string) []string {
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O") {
			i++
			continue
		}
		if a == "-D" {
			i += 2
			continue
		}
		break
	}
	var starts []string
	for ; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == ")" || a == "," {
			break
		}
		starts = append(starts, a)
	}
	deletes := false
	for j := i; j < len(args); j++ {
		switch args[j] {
		case "-delete":
			deletes = true
		case "-exec", "-execdir", "-ok", "-okdir":
			var cmd []string
			for k := j + 1; k < len(args) && args[k] != ";" && args[k] != "+"; k++ {
				cmd = append(cmd, args[k])
			}
			deletes = deletes || writesFound(cmd, "{}")
		}
	}
	if !deletes {
		return nil
	}
	if len(starts) == 0 {
		return []string{"."}
	}
	return cleanPaths(starts)
}

// findWrites returns the files a find writes by name: the FILE of
// -fprint, -fprint0, -fls and -fprintf FILE FORMAT (each truncates it
// and writes its list there), and what a command run by -exec/-execdir
// writes among its static words (`-exec sed -i s/a/b/ x.go ;`); what it
// does to the files found is findDeletes'.
func findWrites(args []string) []string {
	var out []string
	for j := 0; j < len(args); j++ {
		switch args[j] {
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if j+1 < len(args) {
				out = append(out, args[j+1])
			}
			j++
			if args[j-1] == "-fprintf" {
				j++ // the format
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			var cmd []string
			k := j + 1
			for ; k < len(args) && args[k] != ";" && args[k] != "+"; k++ {
				cmd = append(cmd, args[k])
			}
			out = append(out, cleanFound(commandWrites(withFound(cmd, "{}")))...)
			j = k
		}
	}
	return out
}

// goFmtWrites returns the directories `go generate PACKAGES` runs its
// generators in (what they write is up to them: Tavern takes it as
// anywhere under the packages' directories): a pattern's directory
// (./x/... is x), the current directory with no package named. go fmt's
// files, and packages named by import path, are goModuleWrites', which
// reads the directories and go.mod.
func goFmtWrites(args []string) []string {
	if len(args) == 0 || args[0] != "generate" || slices.Contains(args[1:], "-n") {
		return nil // -n prints the commands, runs none
	}
	pkgs := shellOperands(dropOptionValues(args[1:], "-mod", "-modfile", "-run", "-skip"))
	if len(pkgs) == 0 {
		return []string{"."}
	}
	var dirs []string
	for _, p := range pkgs {
		if p == "all" || p == "..." {
			dirs = append(dirs, ".")
			continue
		}
		if !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "/") {
			continue // an import path: goModuleWrites
		}
		p = strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
		if p == "" {
			p = "."
		}
		dirs = append(dirs, p)
	}
	return cleanPaths(dirs)
}

// goModuleWrites returns, as absolute paths, what a go command writes
// that the files say: the .go files of the packages `go fmt` formats
// (it runs gofmt -l -w on them: a package is its directory's .go files,
// x/... every directory under x, taken whole; none named is the current
// directory's), the directories of the packages go generate names by
// import path in the module here is in (example.com/m/internal/x is
// internal/x under go.mod's directory), and go.mod and go.sum, which
// `go mod tidy`, `go get`, `go mod edit` (but -print, -json) and `go mod
// init` (here) write, vendor/ too for `go mod vendor`. It reads go.mod
// and the packages' directories, runs nothing; nil when here is not
// clear.
func goModuleWrites(words []string, here string, v *fsView) []string {
	w := commandWords(words)
	if v == nil || here == "" || len(w) < 2 || filepath.Base(w[0]) != "go" {
		return nil
	}
	args := w[1:]
	if args[0] == "mod" && len(args) > 1 && args[1] == "init" {
		return []string{filepath.Join(here, "go.mod"), filepath.Join(here, "go.sum")}
	}
	root := ""
	for d := here; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			root = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	modFiles := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	switch {
	case args[0] != "fmt" && args[0] != "generate" && root == "":
		return nil
	case args[0] == "get":
		return modFiles
	case args[0] == "mod" && len(args) > 1 && (args[1] == "tidy"):
		return modFiles
	case args[0] == "mod" && len(args) > 1 && args[1] == "edit":
		if slices.Contains(args, "-print") || slices.Contains(args, "-json") {
			return nil
		}
		return modFiles
	case args[0] == "mod" && len(args) > 1 && args[1] == "vendor":
		return append(modFiles, filepath.Join(root, "vendor"))
	case args[0] != "fmt" && args[0] != "generate":
		return nil
	case slices.Contains(args[1:], "-n"):
		return nil // go fmt -n, go generate -n: print the commands
	}
	module := ""
	if root != "" {
		for _, l := range strings.Split(v.read(filepath.Join(root, "go.mod")), "\n") {
			if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module"); ok && m != "" && (m[0] == ' ' || m[0] == '\t') {
				module = strings.Trim(strings.TrimSpace(strings.SplitN(strings.TrimSpace(m), "//", 2)[0]), `"`)
				break
			}
		}
	}
	fmtCmd := args[0] == "fmt"
	pkgs := shellOperands(dropOptionValues(args[1:], "-mod", "-modfile", "-run", "-skip"))
	if len(pkgs) == 0 && fmtCmd {
		pkgs = []string{"."}
	}
	var out []string
	for _, p := range pkgs {
		all := strings.HasSuffix(p, "...") || p == "all"
		p = strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
		var dir string
		switch {
		case p == "all" && root != "":
			dir = root
		case !fmtCmd && (p == "" || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "/")):
			continue // goFmtWrites
		case p == "" || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "/"):
			dir = under(here, p)
			if p == "" {
				dir = here
			}
		case module != "" && p == module:
			dir = root
		case module != "" && strings.HasPrefix(p, module+"/"):
			dir = filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, module+"/")))
		default:
			continue // another module's package, or the standard library
		}
		if all || !fmtCmd {
			out = append(out, dir)
			continue
		}
		// One package: its directory's .go files, not its subdirectories.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// gofmtWrites returns the files and directories gofmt -w and goimports
// -w rewrite in place (a directory: every .go file under it).
func gofmtWrites(args []string) []string {
	if !slices.ContainsFunc(args, func(a string) bool { return a == "-w" || a == "--w" || a == "-w=true" || a == "--w=true" }) {
		return nil
	}
	return cleanPaths(shellOperands(dropOptionValues(args, "-r", "--r", "-cpuprofile", "-local", "--local", "-srcdir", "--srcdir")))
}

// archiveWrites returns what an archiver writes: the files (the archive
// tar -c/-r/-u/--delete and zip write; the file gzip, bzip2 and xz
// compress or uncompress in place, and the one they make) and the trees
// (the directory tar -x and unzip extract into — the archive's members
// are not on the command line, so anywhere under it: tar's -C, unzip's
// -d, else the current directory). Listing, testing and extracting to
// stdout write nothing.
func archiveWrites(name string, args []string) (files, trees []string) {
	switch name {
	case "tar":
		mode, archive, dir := "", "", ""
		valued := "bCfFgHIKLNTVX" // the one-letter options that take a value
		take := func(c byte, v string) {
			switch c {
			case 'f':
				archive = v
			case 'C':
				dir = v
			}
		}
		setMode := func(c byte) {
			if strings.IndexByte("xcrutAd", c) >= 0 && mode == "" {
				mode = string(c)
			}
		}
		toStdout := false
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case i == 0 && !strings.HasPrefix(a, "-"):
				// Old style: tar xzf FILE; each letter with a value
				// takes the next word, in order.
				for j := 0; j < len(a); j++ {
					setMode(a[j])
					toStdout = toStdout || a[j] == 'O'
					if strings.IndexByte(valued, a[j]) >= 0 && i+1 < len(args) {
						i++
						take(a[j], args[i])
					}
				}
			case a == "--":
				i = len(args)
			case strings.HasPrefix(a, "--"):
				n, v, has := strings.Cut(a, "=")
				if !has && slices.Contains([]string{"--file", "--directory", "--files-from", "--exclude-from", "--transform", "--xform"}, n) && i+1 < len(args) {
					i++
					v = args[i]
				}
				switch n {
				case "--extract", "--get":
					mode = "x"
				case "--create", "--append", "--update", "--delete":
					mode = "c"
				case "--list", "--diff", "--compare":
					mode = "t"
				case "--to-stdout", "--to-command":
					toStdout = true
				case "--file":
					archive = v
				case "--directory":
					dir = v
				}
			case strings.HasPrefix(a, "-") && len(a) > 1:
				for j := 1; j < len(a); j++ {
					setMode(a[j])
					toStdout = toStdout || a[j] == 'O'
					if strings.IndexByte(valued, a[j]) >= 0 {
						v := a[j+1:]
						if v == "" && i+1 < len(args) {
							i++
							v = args[i]
						}
						take(a[j], v)
						break
					}
				}
			}
		}
		switch {
		case mode == "x" && !toStdout:
			if dir == "" {
				dir = "."
			}
			return nil, cleanPaths([]string{dir})
		case mode == "c" || mode == "r" || mode == "u" || mode == "A":
			// The archive is opened where tar starts, before any -C.
			return cleanPaths([]string{archive}), nil
		}
	case "unzip":
		dir := "."
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-d" && i+1 < len(args):
				i++
				dir = args[i]
			case strings.HasPrefix(a, "-d") && len(a) > 2:
				dir = a[2:]
			case a == "-Z" || strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], "lptcvz"):
				return nil, nil // lists, tests or prints: writes nothing
			}
		}
		return nil, cleanPaths([]string{dir})
	case "zip":
		if ops := shellOperands(dropOptionValues(args, "-b", "-n", "-t", "-tt", "-P", "-O", "--out")); len(ops) > 0 {
			return cleanPaths(append([]string{ops[0]}, optionValues(args, "-O", "--out")...)), nil
		}
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz":
		ops := shellOperands(dropOptionValues(args, "-S", "--suffix"))
		un := strings.HasPrefix(name, "un") || strings.HasPrefix(name, "gun") || strings.HasPrefix(name, "bun")
		keep := false
		for _, a := range args {
			switch {
			case a == "--":
			case a == "--stdout" || a == "--to-stdout" || a == "--list" || a == "--test":
				return nil, nil
			case a == "--decompress" || a == "--uncompress":
				un = true
			case a == "--keep":
				keep = true
			case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
				if strings.ContainsAny(a[1:], "clt") {
					return nil, nil
				}
				un = un || strings.Contains(a, "d")
				keep = keep || strings.Contains(a, "k")
			}
		}
		ext := map[string]string{"gzip": ".gz", "gunzip": ".gz", "bzip2": ".bz2", "bunzip2": ".bz2", "xz": ".xz", "unxz": ".xz"}[name]
		for _, o := range ops {
			if o == "" || o == "-" {
				continue
			}
			if !keep {
				files = append(files, o) // removed
			}
			if un {
				if t, ok := strings.CutSuffix(o, ext); ok {
					files = append(files, t)
				} else if t, ok := strings.CutSuffix(o, ".tgz"); ok && name == "gunzip" {
					files = append(files, t+".tar")
				}
			} else {
				files = append(files, o+ext)
			}
		}
		return cleanPaths(files), nil
	}
	return nil, nil
}

// modeOperands are the files chmod, chown and chgrp change (their mode
// or owner is part of what the file is: git sees a mode change): the
// operands after the mode or owner, or all of them with --reference. A
// mode that reads as an option (chmod -x f) is the mode.
func modeOperands(name string, args []string) []string {
	haveMode := false
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			for _, o := range args[i+1:] {
				if haveMode {
					out = append(out, o)
				}
				haveMode = true
			}
			return out
		case strings.HasPrefix(a, "--reference"):
			haveMode = true
			if a == "--reference" {
				i++
			}
		case name == "chmod" && !haveMode && len(a) > 1 && (a[0] == '-' || a[0] == '+') && strings.Trim(a[1:], "rwxXstugo") == "":
			haveMode = true // -x, -w: a mode, not an option
		case strings.HasPrefix(a, "-") && len(a) > 1:
		case !haveMode:
			haveMode = true
		default:
			out = append(out, a)
		}
	}
	return out
}

// remotePath says whether an scp or rsync operand names another host's
// file (host:path, user@host:path, rsync://...), not one here.
func remotePath(p string) bool {
	if strings.Contains(p, "://") {
		return true
	}
	c := strings.IndexByte(p, ':')
	return c > 0 && !strings.Contains(p[:c], "/")
}

// rsyncWrites returns what rsync writes here: its local destination (the
// last operand) — as a tree when it copies recursively (-r, -a), since
// anything under it may be written or, with --delete, removed; else the
// file and DEST/NAME as cp does — and its local sources when it removes
// them (--remove-source-files). A dry run writes nothing.
func rsyncWrites(args []string) (files, trees []string) {
	valued := []string{"-e", "--rsh", "--exclude", "--include", "-f", "--filter", "--exclude-from", "--include-from", "--files-from",
		"-T", "--temp-dir", "--backup-dir", "--suffix", "--chmod", "--log-file", "--password-file", "--port", "--partial-dir",
		"--compare-dest", "--link-dest", "--copy-dest", "-B", "--block-size", "--bwlimit", "--timeout", "--max-size", "--min-size",
		"--max-delete", "--out-format", "--info", "--debug", "-M", "--remote-option", "--rsync-path", "--chown", "--usermap", "--groupmap"}
	rest := dropOptionValues(args, valued...)
	recursive, remove := false, false
	for _, a := range rest {
		switch {
		case a == "--":
		case a == "--dry-run" || a == "--list-only":
			return nil, nil
		case a == "--recursive" || a == "--archive":
			recursive = true
		case a == "--remove-source-files":
			remove = true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
			if strings.Contains(a, "n") {
				return nil, nil
			}
			recursive = recursive || strings.ContainsAny(a, "ra")
		}
	}
	ops := shellOperands(rest)
	if len(ops) < 2 {
		return nil, nil // one operand lists it
	}
	dest, srcs := ops[len(ops)-1], ops[:len(ops)-1]
	if remove {
		for _, s := range srcs {
			if !remotePath(s) {
				files = append(files, s)
			}
		}
	}
	if remotePath(dest) {
		return files, nil
	}
	if recursive {
		return files, []string{dest}
	}
	files = append(files, dest)
	for _, s := range srcs {
		if b := filepath.Base(s); b != "." && b != "/" && b != ".." && !strings.HasSuffix(s, "/") {
			files = append(files, filepath.Join(dest, b))
		}
	}
	return files, nil
}

// formatterWrites returns the files and directories (everything under
// them) a formatter or fixer rewrites in place: prettier --write,
// eslint --fix (and its --output-file), black, ruff format, ruff check
// --fix, rustfmt, cargo fmt/fix (the crate: the current directory),
// clang-format -i, yq -i, awk -i inplace, dos2unix. Their checks and
// diffs (--check, --diff, dry runs) write nothing. The default of a
// tool that formats the current directory when given no path is ".".
func formatterWrites(name string, args []string) []string {
	has := func(opts ...string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(opts, a) })
	}
	orDot := func(ops []string) []string {
		if len(ops) == 0 {
			return []string{"."}
		}
		return ops
	}
	switch name {
	case "prettier":
		if has("--write", "-w") {
			return shellOperands(dropOptionValues(args, "--config", "--ignore-path", "--plugin", "--parser", "--log-level", "--cache-location",
				"--stdin-filepath", "--tab-width", "--print-width", "--trailing-comma", "--end-of-line", "--arrow-parens", "--prose-wrap",
				"--quote-props", "--cache-strategy", "--config-precedence"))
		}
	case "eslint":
		out := optionValues(args, "-o", "--output-file")
		if has("--fix") {
			out = append(out, shellOperands(dropOptionValues(args, "-c", "--config", "--ext", "--rule", "-f", "--format", "--parser",
				"--parser-options", "--plugin", "--resolve-plugins-relative-to", "--ignore-path", "--ignore-pattern", "--max-warnings",
				"--cache-location", "--env", "--global", "--rulesdir", "-o", "--output-file", "--fix-type"))...)
		}
		return out
	case "black":
		if has("--check", "--diff", "-c", "--code") {
			return nil
		}
		return shellOperands(dropOptionValues(args, "-l", "--line-length", "-t", "--target-version", "--include", "--exclude",
			"--extend-exclude", "--force-exclude", "--config", "--required-version", "-W", "--workers", "--stdin-filename", "--python-cell-magics"))
	case "ruff":
		if len(args) == 0 {
			return nil
		}
		rest := args[1:]
		valued := []string{"--config", "--select", "--ignore", "--extend-select", "--line-length", "--target-version", "--exclude",
			"--extend-exclude", "--per-file-ignores", "--output-format", "-o", "--output-file", "--stdin-filename", "--cache-dir", "--fixable", "--unfixable"}
		out := optionValues(rest, "-o", "--output-file")
		switch {
		case args[0] == "format" && !slices.Contains(rest, "--check") && !slices.Contains(rest, "--diff"):
			return append(out, orDot(shellOperands(dropOptionValues(rest, valued...)))...)
		case args[0] == "check" && (slices.Contains(rest, "--fix") || slices.Contains(rest, "--fix-only")) && !slices.Contains(rest, "--diff"):
			return append(out, orDot(shellOperands(dropOptionValues(rest, valued...)))...)
		}
		return out
	case "rustfmt":
		if has("--check", "--emit") {
			return nil
		}
		return shellOperands(dropOptionValues(args, "--edition", "--config", "--config-path", "--style-edition", "--color"))
	case "cargo":
		if len(args) > 0 && (args[0] == "fmt" && !has("--check") || args[0] == "fix" || args[0] == "clippy" && has("--fix")) {
			return []string{"."}
		}
	case "clang-format":
		if has("-i", "--i") {
			return shellOperands(dropOptionValues(args, "--style", "-style", "--assume-filename", "--lines", "--offset", "--length"))
		}
	case "yq":
		if !has("-i", "--inplace") {
			return nil
		}
		ops := shellOperands(dropOptionValues(args, "-o", "--output-format", "-p", "--input-format", "--from-file", "--indent", "-I"))
		if len(ops) > 0 && (ops[0] == "e" || ops[0] == "eval" || ops[0] == "ea" || ops[0] == "eval-all") {
			ops = ops[1:]
		}
		if len(ops) > 1 {
			return ops[1:] // after the expression
		}
	case "awk", "gawk":
		inplace := false
		prog := true // the first operand is the program unless -f gave one
		var files []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case (a == "-i" || a == "--include") && i+1 < len(args):
				i++
				inplace = inplace || args[i] == "inplace"
			case a == "-iinplace" || a == "--include=inplace":
				inplace = true
			case a == "-f" || a == "--file":
				prog = false
				i++
			case a == "-v" || a == "-F" || a == "--assign" || a == "--field-separator":
				i++
			case strings.HasPrefix(a, "-"):
			case prog:
				prog = false
			case strings.Contains(a, "="): // an assignment operand
			default:
				files = append(files, a)
			}
		}
		if inplace {
			return files
		}
	case "dos2unix", "unix2dos":
		return shellOperands(args)
	}
	return nil
}

// gitShortOpts reads a cluster of one-letter git options (-qf, -bNEW,
// -fb NEW): the letters it sets before the first of valued, that letter
// (opt, 0 for none), which takes the rest of the word as its value, or
// the next word when none is left (next). ok is false for a word that
// is no cluster (a long option, an operand, "-").
func gitShortOpts(a, valued string) (letters string, opt byte, next, ok bool) {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return "", 0, false, false
	}
	for j := 1; j < len(a); j++ {
		if strings.IndexByte(valued, a[j]) >= 0 {
			return a[1:j], a[j], j == len(a)-1, true
		}
	}
	return a[1:], 0, false, true
}

// gitBranchOpts are the one-letter options of git checkout (switch)
// that take a new branch's name.
func gitBranchOpts(sub string) string {
	if sub == "switch" {
		return "cC"
	}
	return "bB"
}
