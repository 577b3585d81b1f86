package harness

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Imports reads each import of the files of a folder, those of another
// platform included, and leaves its test files out.
func TestImports(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"a.go":      "package a\n\nimport (\n\t\"fmt\"\n\tx \"example.com/x\"\n)\n",
		"b.go":      "package a\n\nimport \"os\"\n",
		"c.go":      "//go:build windows\n\npackage a\n\nimport \"os\"\n",
		"a_test.go": "package a\n\nimport \"testing\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := Imports(t, dir)
	want := []Import{
		{File: "a.go", Path: "example.com/x"},
		{File: "a.go", Path: "fmt"},
		{File: "b.go", Path: "os"},
		{File: "c.go", Path: "os"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Imports = %v, want %v", got, want)
	}
}
