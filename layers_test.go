package narma_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/narma-rma/narma"

// TestLayers enforces the layer rules of docs/architecture.md on the
// imports of every non-test file: the public API knows nothing of
// transports (except inproc and join, which make the endpoints of Run and
// Init), transports know nothing of the engine, and only internal/mem and
// the shared-memory transport (mappings, futexes) use unsafe.
func TestLayers(t *testing.T) {
	rules := []struct {
		dir       string // package directory, relative to the module root
		forbidden []string
	}{
		{".", []string{module + "/internal/transport", module + "/internal/transport/local", module + "/internal/transport/async", module + "/internal/transport/transporttest", module + "/internal/transport/shm"}},
		{"shmem", []string{module + "/internal/engine", module + "/internal/transport"}},
		{"coarray", []string{module + "/internal/engine", module + "/internal/transport"}},
		{"internal/engine", []string{module + "/internal/transport/local", "unsafe"}},
		{"internal/transport", []string{module + "/internal/engine", "unsafe"}},
		{"internal/transport/local", []string{module + "/internal/engine", "unsafe"}},
		{"internal/transport/shm", []string{module + "/internal/engine"}},
		{"internal/transport/transporttest", []string{module + "/internal/engine"}},
	}
	for _, r := range rules {
		imports := packageImports(t, r.dir)
		for _, f := range r.forbidden {
			if files, ok := imports[f]; ok {
				t.Errorf("package %s imports %s (in %s)", r.dir, f, strings.Join(files, ", "))
			}
		}
	}
	// Only internal/mem and internal/transport/shm may import unsafe.
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case !d.IsDir() || path == "internal/mem" || path == "internal/transport/shm":
			return nil
		case path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		}
		if files, ok := packageImports(t, path)["unsafe"]; ok {
			t.Errorf("package %s imports unsafe (in %s); unsafe code belongs in internal/mem (or the mappings of internal/transport/shm)", path, strings.Join(files, ", "))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// packageImports maps each import path of the non-test Go files in dir to
// the files importing it.
func packageImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[p] = append(out[p], name)
		}
	}
	return out
}
