package main

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// -log-format text|json chooses the server's log lines, from a flag, its
// variable or a config key; the deprecated -log-json still means json; an
// unknown format, or -log-json with -log-format text, is refused naming
// the flag and the allowed values.
func TestServerLogFormat(t *testing.T) {
	config := writeFile(t, filepath.Join(t.TempDir(), "server.json"), `{"log-json": true}`)
	cases := []struct {
		name     string
		args     []string
		env      map[string]string
		wantJSON bool
		wantErr  []string // substrings of the error; nil: no error
	}{
		{name: "default text", wantJSON: false},
		{name: "flag json", args: []string{"-log-format", "json"}, wantJSON: true},
		{name: "flag text", args: []string{"-log-format", "text"}, wantJSON: false},
		{name: "variable", env: map[string]string{"TENURE_LOG_FORMAT": "json"}, wantJSON: true},
		{name: "flag beats variable", args: []string{"-log-format", "text"}, env: map[string]string{"TENURE_LOG_FORMAT": "json"}, wantJSON: false},
		{name: "deprecated -log-json", args: []string{"-log-json"}, wantJSON: true},
		{name: "deprecated -log-json with -log-format json", args: []string{"-log-json", "-log-format", "json"}, wantJSON: true},
		{name: "deprecated log-json in a config file", args: []string{"-config", config}, wantJSON: true},
		{name: "unknown format", args: []string{"-log-format", "xml"}, wantErr: []string{"-log-format", `"xml"`, "text or json"}},
		{name: "unknown format in the variable", env: map[string]string{"TENURE_LOG_FORMAT": "logfmt"}, wantErr: []string{"TENURE_LOG_FORMAT", `"logfmt"`, "text or json"}},
		{name: "-log-json against -log-format text", args: []string{"-log-json", "-log-format", "text"}, wantErr: []string{"-log-json", "-log-format text"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := logSettings(t, tc.args, tc.env, tc.wantErr)
			if !ok {
				return
			}
			var out bytes.Buffer
			s.logFlags.logger("tenure", &out).Info("lease_expired", "key", "k", "token", 7)
			var line map[string]any
			isJSON := json.Unmarshal(out.Bytes(), &line) == nil
			if isJSON != tc.wantJSON {
				t.Errorf("log line %q: JSON = %v, want %v", out.String(), isJSON, tc.wantJSON)
			}
			if isJSON && (line["@message"] != "lease_expired" || line["key"] != "k" || line["token"] != float64(7)) {
				t.Errorf("JSON line %v lacks the message, key or token", line)
			}
		})
	}
}

// The other commands that log take -log-format too, and refuse an unknown
// one the same way.
func TestCommandsRefuseUnknownLogFormat(t *testing.T) {
	for _, args := range [][]string{
		{"lock", "-log-format", "xml", "k", "--", "true"},
		{"elect", "-log-format", "xml", "e", "--", "true"},
		{"demo-worker", "-group", "g", "-log-format", "xml"},
	} {
		r := runCLI(t, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "-log-format") || !strings.Contains(r.stderr, "text or json") {
			t.Errorf("%v: exit %d, stderr %q; want %d naming -log-format and the formats", args, r.code, r.stderr, exitUsage)
		}
	}
}

// -log-level takes trace, debug, info, warn or error (in any case); another
// level is refused when the server starts, naming the flag, its variable
// or config key, the value and the allowed levels, instead of logging at
// hclog's default.
func TestServerLogLevel(t *testing.T) {
	config := writeFile(t, filepath.Join(t.TempDir(), "server.json"), `{"log-level": "verbose"}`)
	allowed := "trace, debug, info, warn or error"
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		want    hclog.Level
		wantErr []string // substrings of the error; nil: no error
	}{
		{name: "default info", want: hclog.Info},
		{name: "flag debug", args: []string{"-log-level", "debug"}, want: hclog.Debug},
		{name: "flag in capitals", args: []string{"-log-level", "WARN"}, want: hclog.Warn},
		{name: "variable trace", env: map[string]string{"TENURE_LOG_LEVEL": "trace"}, want: hclog.Trace},
		{name: "unknown level", args: []string{"-log-level", "verbose"}, wantErr: []string{"-log-level", `"verbose"`, allowed}},
		{name: "empty level", args: []string{"-log-level", ""}, wantErr: []string{"-log-level", `""`, allowed}},
		{name: "unknown level in the variable", env: map[string]string{"TENURE_LOG_LEVEL": "loud"}, wantErr: []string{"TENURE_LOG_LEVEL", `"loud"`, allowed}},
		{name: "unknown level in a config file", args: []string{"-config", config}, wantErr: []string{`key "log-level"`, `"verbose"`, allowed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := logSettings(t, tc.args, tc.env, tc.wantErr)
			if !ok {
				return
			}
			if got := s.logFlags.logger("tenure", io.Discard).GetLevel(); got != tc.want {
				t.Errorf("log level = %v, want %v", got, tc.want)
			}
		})
	}
}

// lock and elect, which take -log-level too, refuse an unknown level the
// same way, before they contact a server.
func TestCommandsRefuseUnknownLogLevel(t *testing.T) {
	for _, args := range [][]string{
		{"lock", "-log-level", "verbose", "k", "--", "true"},
		{"elect", "-log-level", "verbose", "e", "--", "true"},
	} {
		r := runCLI(t, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "-log-level") || !strings.Contains(r.stderr, `"verbose"`) ||
			!strings.Contains(r.stderr, "trace, debug, info, warn or error") {
			t.Errorf("%v: exit %d, stderr %q; want %d naming -log-level, the value and the levels", args, r.code, r.stderr, exitUsage)
		}
	}
}

// logSettings loads the server's settings from args and env. With wantErr
// it checks that they are refused with an error holding each substring and
// answers false; without, it fails the test on an error.
func logSettings(t *testing.T, args []string, env map[string]string, wantErr []string) (*serverSettings, bool) {
	t.Helper()
	s, err := loadServerSettings(append([]string{"-data-dir", "d"}, args...), func(k string) string { return env[k] })
	if wantErr != nil {
		if err == nil {
			t.Fatalf("settings = %+v, want an error with %q", s.logFlags, wantErr)
		}
		for _, w := range wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		return s, false
	}
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	return s, true
}
