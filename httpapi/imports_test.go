package httpapi

import (
	"strings"
	"testing"

	"github.com/tenure-io/tenure/test/harness"
)

// The server takes the contract of the API from package client/wire, never
// from the Go client itself; tests may still call the API through it.
func TestProductCodeDoesNotImportTheClient(t *testing.T) {
	for _, imp := range harness.Imports(t, ".") {
		if imp.Path == "github.com/tenure-io/tenure/client" || (strings.HasPrefix(imp.Path, "github.com/tenure-io/tenure/client/") && imp.Path != "github.com/tenure-io/tenure/client/wire") {
			t.Errorf("%s imports %s; take the contract from client/wire", imp.File, imp.Path)
		}
	}
}
