package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A command in the log reads as a shell would take it back, with no
// escapes added on top of the log's own quoting (it was %q-quoted once
// more: command="\"sh -c 'echo hi'\"").
func TestCommandInTheLogIsQuotedOnce(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf})
	cmd := []string{"sh", "-c", "echo 'hi there' > /tmp/out", "", "plain-arg_1.txt"}
	log.Info("lease acquired; running the command", "command", fmtCommand(cmd))
	want := `command="sh -c 'echo '\''hi there'\'' > /tmp/out' '' plain-arg_1.txt"`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log line %q, want %s in it", buf.String(), want)
	}
}
