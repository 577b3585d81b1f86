package httpapi

import (
	"io/fs"
	"strings"
	"testing"
)

// The page's files put data into the page as text only, and load nothing
// from elsewhere: no HTML built from strings, no script evaluated from
// strings, no absolute URL (a CDN, or another origin than the server that
// served the page).
func TestPageFilesTextOnlySameOrigin(t *testing.T) {
	forbidden := []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "http://", "https://", "//cdn"}
	err := fs.WalkDir(uiFiles, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(uiFiles, path)
		if err != nil {
			return err
		}
		for _, f := range forbidden {
			if strings.Contains(string(b), f) {
				t.Errorf("%s contains %q", path, f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
