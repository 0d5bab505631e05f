package narma_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/narma-rma/narma"

// TestLayers enforces the layer rules of docs/architecture.md on the
// imports of every non-test file: the public API knows nothing of
// transports (except inproc and join, which make the endpoints of Run and
// Init); shmem and coarray use the public API alone (directly and through
// internal/symheap); transports know nothing of the engine, and the
// engine knows the transport contract and no transport; programs do not
// link the test-only transport; only internal/sys talks to the kernel
// through golang.org/x/sys/unix; and only internal/mem and internal/sys
// use unsafe (the shared-memory transport's segment layouts are typed
// views that package mem makes), besides the cgo binding of the fabric
// transport to libfabric.
func TestLayers(t *testing.T) {
	direct := []struct {
		dir       string // package directory, relative to the module root
		forbidden []string
	}{
		{".", []string{module + "/internal/transport", module + "/internal/transport/local", module + "/internal/transport/async", module + "/internal/transport/transporttest", module + "/internal/transport/shm", module + "/internal/transport/tcp", module + "/internal/transport/hybrid", module + "/internal/sys"}},
	}
	for _, r := range direct {
		imports := packageImports(t, r.dir)
		for _, f := range r.forbidden {
			if files, ok := imports[f]; ok {
				t.Errorf("package %s imports %s (in %s)", r.dir, f, strings.Join(files, ", "))
			}
		}
	}

	// shmem and coarray are built on the public API alone, directly and
	// through internal/symheap, which is itself built on it alone.
	for _, dir := range []string{"shmem", "coarray", "internal/symheap"} {
		for imp, files := range packageImports(t, dir) {
			if strings.HasPrefix(imp, module+"/") && imp != module+"/internal/symheap" {
				t.Errorf("package %s imports %s (in %s); it may use only the public API and internal/symheap", dir, imp, strings.Join(files, ", "))
			}
		}
	}

	// Rules on everything a package depends on inside the module, not only
	// what it imports itself.
	engineSide := []string{module, module + "/internal/engine", module + "/internal/match", module + "/internal/symheap", module + "/shmem", module + "/coarray"}
	transports := []string{"local", "shm", "tcp", "hybrid", "fabric", "async", "inproc", "join", "transporttest", "registry", "builtin"}
	deps := moduleDeps(t)
	forbidDeps := func(pkg string, forbidden []string) {
		for _, f := range forbidden {
			if deps[pkg][f] {
				t.Errorf("package %s depends on %s", strings.TrimPrefix(pkg, module+"/"), f)
			}
		}
	}
	forbidDeps(module+"/internal/transport", engineSide)
	for _, tr := range transports {
		forbidDeps(module+"/internal/transport/"+tr, engineSide)
	}
	var concrete []string
	for _, tr := range transports {
		concrete = append(concrete, module+"/internal/transport/"+tr)
	}
	forbidDeps(module+"/internal/engine", concrete)
	forbidDeps(module+"/internal/match", append(concrete, module+"/internal/transport"))
	// The registry knows no transport; transports register themselves.
	forbidDeps(module+"/internal/transport/registry", slices.DeleteFunc(slices.Clone(concrete), func(p string) bool { return p == module+"/internal/transport/registry" }))
	// Programs do not link the test-only transport: it registers itself
	// only where a test imports it.
	for pkg, d := range deps {
		if (pkg == module || strings.HasPrefix(pkg, module+"/cmd/") || strings.HasPrefix(pkg, module+"/examples/")) && d[module+"/internal/transport/async"] {
			t.Errorf("package %s links internal/transport/async, which only tests may", strings.TrimPrefix(pkg, module+"/"))
		}
	}
	for pkg, d := range deps {
		if (pkg == module+"/internal/sys" || pkg == module+"/internal/mem") && len(d) > 0 {
			t.Errorf("package %s, a floor, depends on %v inside the module", strings.TrimPrefix(pkg, module+"/"), keys(d))
		}
	}

	// Only internal/sys imports golang.org/x/sys/unix, and only
	// internal/mem, internal/sys and the libfabric binding of the fabric
	// transport (built with its tag) import unsafe.
	floors := map[string][]string{
		"golang.org/x/sys/unix": {"internal/sys"},
		"unsafe":                {"internal/mem", "internal/sys", "internal/transport/fabric"},
	}
	for path, imports := range allImports(t) {
		for imp, allowed := range floors {
			if files, ok := imports[imp]; ok && !slices.Contains(allowed, path) {
				t.Errorf("package %s imports %s (in %s); only %s may", path, imp, strings.Join(files, ", "), strings.Join(allowed, ", "))
			}
		}
	}
}

// moduleDeps maps each package of the module (by import path) to the
// packages of the module it depends on, directly or not, through its
// non-test files.
func moduleDeps(t *testing.T) map[string]map[string]bool {
	t.Helper()
	direct := map[string][]string{}
	for path, imports := range allImports(t) {
		if len(imports) == 0 {
			continue
		}
		pkg := module
		if path != "." {
			pkg = module + "/" + filepath.ToSlash(path)
		}
		direct[pkg] = nil
		for imp := range imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				direct[pkg] = append(direct[pkg], imp)
			}
		}
	}
	all := map[string]map[string]bool{}
	var visit func(pkg string) map[string]bool
	visit = func(pkg string) map[string]bool {
		if d, ok := all[pkg]; ok {
			return d
		}
		d := map[string]bool{}
		all[pkg] = d // an import cycle cannot compile, so no loop here
		for _, imp := range direct[pkg] {
			d[imp] = true
			for dd := range visit(imp) {
				d[dd] = true
			}
		}
		return d
	}
	for pkg := range direct {
		visit(pkg)
	}
	return all
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// allImports maps each directory of the module (relative to its root, "."
// for the root) to the imports of its non-test Go files (packageImports).
func allImports(t *testing.T) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case !d.IsDir():
			return nil
		case path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		}
		out[path] = packageImports(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
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
