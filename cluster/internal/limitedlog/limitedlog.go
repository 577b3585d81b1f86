package limitedlog

import (
	"bytes"
	"io"
	"log"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Sources of limited log lines (the source label of
// tenure_log_lines_suppressed_total, the source of log_lines_suppressed).
const (
	SourceMemberlist    = "memberlist"
	SourceRaftTransport = "raft_transport"
)

// MemberlistLogger is memberlist's logger: its lines go to l (hclog
// reads their [DEBUG]/[WARN]/[ERR] levels), limited per kind
// (memberlistKind) to DefaultLines every DefaultInterval,
// then one log_lines_suppressed line (source memberlist) per kind and
// interval counts the rest. Anyone who reaches the gossip port can make
// memberlist log a line per packet (a packet without the key: "Decrypt
// packet failed"); the limit keeps such a flood from filling the log and
// pushing everything else out of /v1/debug/logs. Lines below l's level
// are not counted: hclog drops them anyway. suppressed, if not nil, is
// called for every line left out. sender, if not nil, names the member
// behind the "from=ADDR" of a line about gossip that memberlist refused
// (refusedKinds; for a stream, memberlist names only the port of the
// connection, not one the member gossips on); the line gets
// "member=NAME member_addr=ADDR role=ROLE" (the fields known), each a
// single word (Word).
func MemberlistLogger(l hclog.Logger, suppressed func(), sender func(from string) (Member, bool)) *log.Logger {
	w := &limitedLogWriter{
		sender: sender,
		out:    l.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
		log:    New(l, SourceMemberlist, suppressed),
	}
	// No date prefix, so hclog can read the [DEBUG]/[WARN] levels.
	return log.New(w, "", 0)
}

// limitedLogWriter writes memberlist's log lines to out within the limits
// of log.
type limitedLogWriter struct {
	out    io.Writer
	log    *Logger
	sender func(from string) (Member, bool)
}

// Member is the member that sent refused gossip: its node name, the
// gossip address it announces, its role; "" where unknown.
type Member struct {
	Name, Addr, Role string
}

// refusedKinds are the kinds of memberlist's lines about gossip it
// refused: a packet it could not decrypt, a stream it could not read (not
// encrypted while gossip is, or under another key). memberlist writes them
// holding none of its locks, so a sender function may read the membership
// table (whose updates run under memberlist's lock).
var refusedKinds = map[string]bool{"Decrypt packet failed": true, "failed to receive": true}

func (w *limitedLogWriter) Write(p []byte) (int, error) {
	if len(p) == 0 || lineLevel(p) < w.log.GetLevel() {
		return w.out.Write(p) // below the level: hclog drops it
	}
	kind := memberlistKind(p)
	if !w.log.allow(lineLevel(p), kind) {
		return len(p), nil
	}
	if refusedKinds[kind] {
		p = w.withSender(p)
	}
	if _, err := w.out.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// withSender is line p with the member behind its "from=ADDR" added, when
// the sender function knows it.
func (w *limitedLogWriter) withSender(p []byte) []byte {
	if w.sender == nil {
		return p
	}
	i := bytes.LastIndex(p, []byte("from="))
	if i < 0 {
		return p
	}
	from := p[i+len("from="):]
	if j := bytes.IndexAny(from, " \t\n"); j >= 0 {
		from = from[:j]
	}
	m, ok := w.sender(string(from))
	if !ok {
		return p
	}
	out := append([]byte(nil), bytes.TrimRight(p, "\n")...)
	out = append(out, " member="+Word(m.Name)...)
	if m.Addr != "" {
		out = append(out, " member_addr="+Word(m.Addr)...)
	}
	if m.Role != "" {
		out = append(out, " role="+Word(m.Role)...)
	}
	return append(out, '\n')
}

// Word is s as one word of a log line: as it is when it holds only the
// characters of names and addresses, else quoted (a stranger may have
// chosen it), and at most 128 bytes.
func Word(s string) string {
	if len(s) > 128 {
		s = s[:128]
	}
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:/#@-[]", r)) {
			return strconv.Quote(s)
		}
	}
	return s
}

// lineLevel is the level of a standard log line as hclog infers it from
// its [TAG] (Info without one).
func lineLevel(p []byte) hclog.Level {
	switch {
	case bytes.HasPrefix(p, []byte("[TRACE]")):
		return hclog.Trace
	case bytes.HasPrefix(p, []byte("[DEBUG]")):
		return hclog.Debug
	case bytes.HasPrefix(p, []byte("[WARN]")):
		return hclog.Warn
	case bytes.HasPrefix(p, []byte("[ERR]")), bytes.HasPrefix(p, []byte("[ERROR]")):
		return hclog.Error
	}
	return hclog.Info
}

// maxKindWords and maxKindLen bound the kind of a line.
const (
	maxKindWords = 5
	maxKindLen   = 64
)

// memberlistKind is the kind of a memberlist log line: its message without
// the level tag and the "memberlist: " prefix, up to the first colon,
// quote, parenthesis or digit, where the details of one line (an error, a
// node name, an address, a count) start, and at most its first 5 words
// (a node name without quotes comes after them): "[ERR] memberlist:
// Decrypt packet failed: ... from=10.0.0.1:7946" is "Decrypt packet
// failed".
func memberlistKind(p []byte) string {
	if p[0] == '[' {
		if i := bytes.IndexByte(p, ']'); i >= 0 {
			p = p[i+1:]
		}
	}
	p = bytes.TrimSpace(p)
	p = bytes.TrimPrefix(p, []byte("memberlist: "))
	if i := bytes.IndexFunc(p, func(r rune) bool {
		return r == ':' || r == '\'' || r == '"' || r == '(' || r == '%' || (r >= '0' && r <= '9')
	}); i >= 0 {
		p = p[:i]
	}
	words := bytes.Fields(p)
	if n := len(words); n > 0 && bytes.HasPrefix(words[n-1], []byte("from=")) {
		words = words[:n-1]
	}
	kind := bytes.Join(words[:min(len(words), maxKindWords)], []byte(" "))
	return string(kind[:min(len(kind), maxKindLen)])
}

// Logger is an hclog.Logger whose lines are limited per message to
// DefaultLines every DefaultInterval, then one
// log_lines_suppressed line per message and interval counts the rest. It
// is Raft's network transport's logger: it logs a line for every inbound
// connection that sends what is not a Raft RPC ("failed to decode
// incoming command"), which anyone who reaches the Raft port can open
// when it runs without TLS. Named, With and the standard loggers it
// returns are not limited.
type Logger struct {
	hclog.Logger
	lim        *Limiter
	suppressed func()
}

// New returns l limited as Logger says; its summary lines name source.
func New(l hclog.Logger, source string, suppressed func()) *Logger {
	// Each interval's summary is one log_lines_suppressed line on l.
	lim := NewLimiter(DefaultLines, DefaultInterval, func(kind string, n int) {
		l.Info("log_lines_suppressed", "source", source, "kind", kind, "suppressed", n, "interval", DefaultInterval.String())
	})
	return &Logger{Logger: l, lim: lim, suppressed: suppressed}
}

// allow reports whether a line of msg at level may be logged; lines below
// the logger's level are not counted (it drops them).
func (l *Logger) allow(level hclog.Level, msg string) bool {
	if level < l.Logger.GetLevel() {
		return true
	}
	if l.lim.Allow(msg) {
		return true
	}
	if l.suppressed != nil {
		l.suppressed()
	}
	return false
}

func (l *Logger) Log(level hclog.Level, msg string, args ...any) {
	if l.allow(level, msg) {
		l.Logger.Log(level, msg, args...)
	}
}

func (l *Logger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *Logger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *Logger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *Logger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *Logger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }
