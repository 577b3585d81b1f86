package httpapi

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The server takes the contract of the API from package client/wire, never
// from the Go client itself; tests may still call the API through it.
func TestProductCodeDoesNotImportTheClient(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if path == "github.com/tenure-io/tenure/client" || (strings.HasPrefix(path, "github.com/tenure-io/tenure/client/") && path != "github.com/tenure-io/tenure/client/wire") {
				t.Errorf("%s imports %s; take the contract from client/wire", name, path)
			}
		}
	}
}
