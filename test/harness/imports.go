package harness

import (
	"go/build"
	"path/filepath"
	"testing"
)

// An Import is one import of a Go file: the file's name and the path it
// imports.
type Import struct {
	File, Path string
}

// Imports reads the imports of the Go files in dir, whatever their build
// constraints, test files left out, by path and then by file; it fails t
// on a file it cannot parse.
func Imports(t testing.TB, dir string) []Import {
	t.Helper()
	ctx := build.Default
	ctx.UseAllFiles = true
	pkg, err := ctx.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Import
	for _, path := range pkg.Imports {
		for _, pos := range pkg.ImportPos[path] {
			out = append(out, Import{File: filepath.Base(pos.Filename), Path: path})
		}
	}
	return out
}
