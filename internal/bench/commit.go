package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// buildCommit returns Meta.Commit for this program: the build's (see
// commitOf), or, when the build carries no VCS revision (go run or go
// build with -buildvcs=false, a test binary), the commit that git gives
// for the module's tree if the program runs inside it (from the current
// directory up, the first go.mod names the program's main module), with
// "+dirty" if the tree has changes; "unknown" otherwise.
func buildCommit() string {
	bi, _ := debug.ReadBuildInfo()
	c := commitOf(bi)
	if c != "unknown" || bi == nil {
		return c
	}
	dir, err := os.Getwd()
	if err != nil {
		return c
	}
	if rev, ok := gitCommit(dir, bi.Main.Path); ok {
		return rev
	}
	return c
}

// gitCommit returns the commit of the git tree of module modPath, as
// git reports it, if dir lies in the module: the first go.mod from dir
// up must declare modPath. The commit has "+dirty" appended if git
// status lists changes, as the vcs.modified of Go's builds says.
func gitCommit(dir, modPath string) (string, bool) {
	root, ok := moduleRoot(dir)
	if !ok || modPath == "" || modulePath(filepath.Join(root, "go.mod")) != modPath {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	git := func(args ...string) (string, bool) {
		// --no-optional-locks: status must not refresh the index.
		cmd := exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks", "-C", root}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		out, err := cmd.Output()
		return string(bytes.TrimSpace(out)), err == nil
	}
	rev, ok := git("rev-parse", "HEAD")
	if !ok || rev == "" {
		return "", false
	}
	status, ok := git("status", "--porcelain")
	if !ok {
		return "", false
	}
	if status != "" {
		rev += "+dirty"
	}
	return rev, true
}

// moduleRoot returns the directory of the first go.mod from dir up.
func moduleRoot(dir string) (string, bool) {
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// modulePath returns the module path that the go.mod file declares, or
// "" if it cannot be read or declares none.
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
