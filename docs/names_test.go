package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRequestPathsNamesExist keeps docs/request-paths.md true to the
// code: every Go name it gives in a recognisable form must exist in the
// repository. The forms, in code spans and in the diagrams of code blocks:
//
//	pkg.Name            a function, type, variable or constant of pkg
//	pkg.(*Type).Name    a method or field of Type (also pkg.(Type).Name)
//	pkg.Type.Name       the same
//
// pkg is a package of this repository, found by the last element of its
// directory or by its package clause (cluster/internal/lessor is
// lessor), so a name keeps working when a package moves down a folder.
// A selector whose first element is a type (Node.Acquire) is refused:
// the reader cannot tell its package. Names of other modules (raft.Apply,
// time.AfterFunc) and of files (raft.db) are not checked.
func TestRequestPathsNamesExist(t *testing.T) {
	text, err := os.ReadFile("request-paths.md")
	if err != nil {
		t.Fatal(err)
	}
	repo := scanRepo(t, "..")
	refs := goNames(string(text))
	if len(refs) < 100 {
		t.Fatalf("request-paths.md: %d Go names found, want at least 100: is the name reader broken?", len(refs))
	}
	checked := 0
	for _, ref := range refs {
		switch problem := repo.check(ref.name); problem {
		case "":
			checked++
		case "external":
		default:
			t.Errorf("request-paths.md:%d: `%s`: %s", ref.line, ref.name, problem)
		}
	}
	if checked < 100 {
		t.Errorf("request-paths.md: %d names of this repository checked, want at least 100", checked)
	}
}

// The name reader and the checks, on names that exist and names that do
// not.
func TestGoNamesAndChecks(t *testing.T) {
	repo := scanRepo(t, "..")
	for _, c := range []struct {
		name, want string
	}{
		{"cluster.(*Node).Acquire", ""},
		{"cluster.Node.Acquire", ""},
		{"fsm.(*Machine).ApplyLog", ""},
		{"cluster.(*proposer).in", ""}, // a field
		{"fsm.Batch", ""},
		{"httpapi.Config.ForwardScheme", ""},
		{"raft.Apply", "external"},
		{"cluster.(*Node).NoSuchMethod", "no method or field NoSuchMethod of type Node in package cluster"},
		{"cluster.NoSuchFunc", "no NoSuchFunc in package cluster"},
		{"cluster.(*NoSuchType).Run", "no type NoSuchType in package cluster"},
		{"Node.Acquire", "unqualified: name the package, as pkg.(*Type).Method"},
	} {
		if got := repo.check(c.name); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	text := "`cluster.(*Node).Acquire` and `raft.db`, `fsm.Expire{Key, Token}`, `cluster/node.go`\n" +
		"```\n  proposer ──► cluster.(*proposer).run ── e.g. fsm.Batch\n```\n"
	wantJoined(t, "names", goNames(text), func(r goRef) string { return r.name },
		"cluster.(*Node).Acquire fsm.Expire cluster.(*proposer).run fsm.Batch")
}

type goRef struct {
	name string
	line int
}

var (
	// goNameRE matches pkg.Name, pkg.(*T).Name, pkg.T.Name and T.Name.
	goNameRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:\.(?:\(\*?[A-Za-z_][A-Za-z0-9_]*\)|[A-Za-z_][A-Za-z0-9_]*))+`)
	// fileSuffixes end names that are files, not Go: raft.db, node.go.
	fileSuffixes = map[string]bool{"db": true, "go": true, "md": true, "json": true, "yaml": true, "yml": true,
		"pem": true, "snap": true, "txt": true, "pprof": true, "html": true, "jsonl": true, "sh": true, "py": true}
)

// goNames returns the selectors of text: every one in a code span, and,
// in code blocks, those whose first element is lower case (a package).
func goNames(text string) []goRef {
	var out []goRef
	markdownLines(text, func(n int, line string, inCode bool) {
		var spans []string
		if inCode {
			spans = []string{line}
		} else {
			for _, m := range codeSpanRE.FindAllString(line, -1) {
				spans = append(spans, strings.Trim(m, "`"))
			}
		}
		for _, span := range spans {
			for _, loc := range goNameRE.FindAllStringIndex(span, -1) {
				name := span[loc[0]:loc[1]]
				if loc[0] > 0 && strings.ContainsAny(span[loc[0]-1:loc[0]], "/-.@:$") {
					continue // part of a path, a flag, an address
				}
				parts := strings.Split(name, ".")
				if fileSuffixes[parts[len(parts)-1]] {
					continue
				}
				if inCode && (!isLower(parts[0]) || len(parts[0]) < 2) {
					continue // prose in a diagram ("e.g.")
				}
				out = append(out, goRef{name: name, line: n})
			}
		}
	})
	return out
}

func isLower(s string) bool { return s != "" && s[0] >= 'a' && s[0] <= 'z' }

// goPackage is what one package (all its directories of that name)
// declares: top-level names, and the methods and fields of each type.
type goPackage struct {
	names   map[string]bool
	members map[string]map[string]bool // type → method and field names
}

type goRepo map[string]*goPackage

// scanRepo parses every Go file under root (tests and build-tagged files
// too; testdata, hidden folders and vendor left out), indexing each
// package by its directory's name and by its package clause.
func scanRepo(t *testing.T, root string) goRepo {
	t.Helper()
	repo := goRepo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Base(filepath.Dir(path))
		for _, key := range []string{dir, f.Name.Name} {
			p := repo[key]
			if p == nil {
				p = &goPackage{names: map[string]bool{}, members: map[string]map[string]bool{}}
				repo[key] = p
			}
			p.add(f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func (p *goPackage) member(typ, name string) {
	if p.members[typ] == nil {
		p.members[typ] = map[string]bool{}
	}
	p.members[typ][name] = true
}

func (p *goPackage) add(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				p.names[d.Name.Name] = true
				continue
			}
			if typ := receiverType(d.Recv.List[0].Type); typ != "" {
				p.member(typ, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					p.names[s.Name.Name] = true
					p.member(s.Name.Name, "") // the type exists, members or not
					switch tt := s.Type.(type) {
					case *ast.StructType:
						for _, fld := range tt.Fields.List {
							for _, n := range fld.Names {
								p.member(s.Name.Name, n.Name)
							}
							if len(fld.Names) == 0 { // embedded: its name is the type's
								if typ := receiverType(fld.Type); typ != "" {
									p.member(s.Name.Name, typ)
								}
							}
						}
					case *ast.InterfaceType:
						for _, m := range tt.Methods.List {
							for _, n := range m.Names {
								p.member(s.Name.Name, n.Name)
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.names[n.Name] = true
					}
				}
			}
		}
	}
}

// receiverType is the type name of a receiver or embedded field: T, *T,
// T[K], pkg.T.
func receiverType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverType(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return receiverType(x.X)
	case *ast.IndexListExpr:
		return receiverType(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

// check says what is wrong with name, "" when it exists, and "external"
// for a name of another module.
func (r goRepo) check(name string) string {
	parts := strings.Split(name, ".")
	for i, part := range parts {
		parts[i] = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(part, "("), ")"), "*")
	}
	if !isLower(parts[0]) {
		return "unqualified: name the package, as pkg.(*Type).Method"
	}
	p := r[parts[0]]
	if p == nil {
		return "external"
	}
	switch len(parts) {
	case 2:
		if !p.names[parts[1]] {
			return "no " + parts[1] + " in package " + parts[0]
		}
	case 3:
		m, ok := p.members[parts[1]]
		if !ok {
			return "no type " + parts[1] + " in package " + parts[0]
		}
		if !m[parts[2]] {
			return "no method or field " + parts[2] + " of type " + parts[1] + " in package " + parts[0]
		}
	default:
		return "not a name of the form pkg.Name or pkg.(*Type).Name"
	}
	return ""
}

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
