package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitCommit: inside the git tree of the module the commit is git's,
// marked dirty once the tree has a change; outside the module (another
// module's go.mod first, or none) there is none.
func TestGitCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), "// a module\nmodule example.com/mod // its path\n\ngo 1.26\n")
	write(filepath.Join(root, "cmd", "x", "main.go"), "package main\n")
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	rev := git("rev-parse", "HEAD")

	sub := filepath.Join(root, "cmd", "x")
	if got, ok := gitCommit(sub, "example.com/mod"); !ok || got != rev {
		t.Errorf("gitCommit in the module = %q, %v; want %q", got, ok, rev)
	}
	if got, ok := gitCommit(sub, "example.com/other"); ok {
		t.Errorf("gitCommit for another module = %q, want none", got)
	}
	nested := filepath.Join(root, "nested")
	write(filepath.Join(nested, "go.mod"), "module example.com/nested\n")
	if got, ok := gitCommit(nested, "example.com/mod"); ok {
		t.Errorf("gitCommit under another module's go.mod = %q, want none", got)
	}
	// nested/go.mod is an untracked change now.
	if got, ok := gitCommit(sub, "example.com/mod"); !ok || got != rev+"+dirty" {
		t.Errorf("gitCommit of a changed tree = %q, %v; want %q", got, ok, rev+"+dirty")
	}
	if got, ok := gitCommit(t.TempDir(), "example.com/mod"); ok {
		t.Errorf("gitCommit outside any module = %q, want none", got)
	}
}
