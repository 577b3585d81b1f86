package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// testNameRE matches a Go test, benchmark, fuzz target or example named
	// in a code span, with an optional subtest: `TestJepsen`,
	// `TestRestoreNeverGivesAKeyAnOlderToken/the_key_forgotten`.
	testNameRE = regexp.MustCompile("`((?:Test|Benchmark|Fuzz|Example)[A-Za-z0-9_]*)(?:/[^`]*)?`")
	// goTestFuncRE finds the functions of the repository's Go files.
	goTestFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)[A-Za-z0-9_]*)\(`)
	// pyTestRE matches a Python test named in a code span: `test_x` or
	// `Class.test_x`.
	pyTestRE   = regexp.MustCompile("`(?:([A-Z][A-Za-z0-9]*)\\.)?(test_[a-z0-9_]+)`")
	pyDefRE    = regexp.MustCompile(`(?m)^\s*def (test_[a-z0-9_]+)\(`)
	pyClassRE  = regexp.MustCompile(`(?m)^class ([A-Z][A-Za-z0-9]*)\(`)
	pyTestDirs = []string{"../client/python/tests"}
)

// TestNamedTestsExist checks that every test the README and the guides
// name as the proof of a claim exists: a Go test, benchmark, fuzz target
// or example in a _test.go file of the repository (any module of it), or a
// Python test method of the Python client's tests (with its class when
// named). A guarantee whose test was renamed or removed would otherwise
// stand on nothing.
func TestNamedTestsExist(t *testing.T) {
	goTests := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range goTestFuncRE.FindAllStringSubmatch(string(text), -1) {
			goTests[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pyTests := map[string]bool{} // "test_x" and "Class.test_x"
	for _, dir := range pyTestDirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.py"))
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			class := ""
			for _, line := range strings.Split(string(text), "\n") {
				if m := pyClassRE.FindStringSubmatch(line); m != nil {
					class = m[1]
				}
				if m := pyDefRE.FindStringSubmatch(line); m != nil {
					pyTests[m[1]] = true
					pyTests[class+"."+m[1]] = true
				}
			}
		}
	}
	if len(goTests) < 500 || len(pyTests) < 20 {
		t.Fatalf("found %d Go and %d Python tests in the repository: is the reader broken?", len(goTests), len(pyTests))
	}
	checked := 0
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range testNameRE.FindAllStringSubmatch(line, -1) {
				checked++
				if !goTests[m[1]] {
					t.Errorf("%s:%d: `%s`: no such Go test, benchmark, fuzz target or example", file, i+1, m[1])
				}
			}
			for _, m := range pyTestRE.FindAllStringSubmatch(line, -1) {
				checked++
				name := m[2]
				if m[1] != "" {
					name = m[1] + "." + m[2]
				}
				if !pyTests[name] {
					t.Errorf("%s:%d: `%s`: no such Python test in %s", file, i+1, name, strings.Join(pyTestDirs, ", "))
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("%d test names checked, want at least 100: is the name reader broken?", checked)
	}
}
