package multi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var binPath string

// TestMain builds the tavern command once (without the race detector:
// the processes are what is tested, hundreds of them, and the library
// runs under the race detector in its own packages).
func TestMain(m *testing.M) {
	if os.Getenv(orphanHelperEnv) != "" {
		os.Exit(m.Run()) // TestOrphanHelper needs no binary
	}
	// make test builds the binary once for every package that runs it
	// (TAVERN_TEST_BINDIR; cmd/tavern's main_test.go says why).
	if dir := os.Getenv("TAVERN_TEST_BINDIR"); dir != "" {
		binPath = filepath.Join(dir, "tavern")
		if _, err := os.Stat(binPath); err != nil {
			fmt.Fprintf(os.Stderr, "$TAVERN_TEST_BINDIR: %v\n", err)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "tavern-multi-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "tavern")
	out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building tavern: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func tavernBin(testing.TB) string { return binPath }

type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}
