package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Values of -log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// logFormatFlag is -log-format: text (hclog's default lines) or json (one
// JSON object per line). set records that the flag, its variable or a
// config key gave it, so that a contradicting -log-json is refused.
type logFormatFlag struct {
	format string
	set    bool
}

func (f *logFormatFlag) String() string {
	if f == nil || f.format == "" {
		return logFormatText
	}
	return f.format
}

func (f *logFormatFlag) Set(s string) error {
	switch s {
	case logFormatText, logFormatJSON:
		f.format, f.set = s, true
		return nil
	}
	return fmt.Errorf("unknown log format %q: want %s or %s", s, logFormatText, logFormatJSON)
}

// logLevels are the values of -log-level, as hclog names them.
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// logLevelFlag is -log-level: one of logLevels, in any case (hclog's own
// parsing ignores case too); the zero value is info. An unknown level is
// refused, naming the allowed ones: hclog would silently log at its
// default level instead.
type logLevelFlag struct {
	level string
}

func (f *logLevelFlag) String() string {
	if f == nil || f.level == "" {
		return "info"
	}
	return f.level
}

func (f *logLevelFlag) Set(s string) error {
	level := strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(logLevels, level) {
		return fmt.Errorf("unknown log level %q: want trace, debug, info, warn or error", s)
	}
	f.level = level
	return nil
}

// logOutput is how a command logs: its -log-format, the deprecated
// -log-json (same as -log-format json) where the command had it, and
// -log-level.
type logOutput struct {
	format logFormatFlag
	// json is the deprecated boolean -log-json, kept for old command lines
	// and config files.
	json  bool
	level logLevelFlag
}

// jsonFormat reports whether lines are JSON, and refuses -log-json with
// an explicit -log-format text.
func (o *logOutput) jsonFormat() (bool, error) {
	if o.json && o.format.set && o.format.format == logFormatText {
		return false, errors.New("-log-json (deprecated, the same as -log-format json) contradicts -log-format text: give -log-format alone")
	}
	return o.json || o.format.format == logFormatJSON, nil
}

// logger returns the root logger called name that writes to out. The flags
// must not contradict each other (jsonFormat; loadServerSettings checks).
func (o *logOutput) logger(name string, out io.Writer) hclog.Logger {
	json, _ := o.jsonFormat()
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(o.level.String()),
		JSONFormat: json,
		Output:     out,
	})
}
