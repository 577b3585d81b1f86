package httpapi

import (
	"bytes"
	"io"
	"log"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/client"
)

// Defaults of the refusal log's limit (Config.RefusalLogLines and
// RefusalLogInterval): at most 10 lines per reason every 10 seconds, so a
// flood of refused requests (unknown tokens, missing rights) writes at most
// 11 lines per reason per 10 seconds, whatever its rate.
const (
	DefaultRefusalLogLines    = 10
	DefaultRefusalLogInterval = 10 * time.Second
)

// refusalLog limits the log lines of refusals: per reason (for the
// acl_request lines of refused requests, the error code of the answer),
// the first lines of each interval are logged, the rest only counted, and
// once the interval ends summary is called with how many were left out
// (for acl_request lines, an acl_requests_suppressed line). Lines of
// requests that succeed are not limited. Its methods are safe for
// concurrent use.
type refusalLog struct {
	summary  func(reason string, suppressed int)
	lines    int
	interval time.Duration

	mu      sync.Mutex
	reasons map[string]*refusalWindow
}

// refusalWindow is one reason's current interval.
type refusalWindow struct {
	start      time.Time
	logged     int
	suppressed int
	// timer logs the summary at the end of the interval, once a line was
	// left out in it.
	timer *time.Timer
}

func newRefusalLog(lines int, interval time.Duration, summary func(reason string, suppressed int)) *refusalLog {
	return &refusalLog{summary: summary, lines: lines, interval: interval, reasons: map[string]*refusalWindow{}}
}

// aclRefusalLog limits the acl_request lines of log.
func aclRefusalLog(log hclog.Logger, lines int, interval time.Duration) *refusalLog {
	return newRefusalLog(lines, interval, func(reason string, n int) {
		log.Info("acl_requests_suppressed", "reason", reason, "suppressed", n, "interval", interval.String())
	})
}

// limitedErrorLog is errorLog (an http.Server's) with its lines limited
// as refusals: those of failed TLS handshakes (a client without a
// certificate of the cluster's CA, a scanner) under one reason, any other
// under another, DefaultRefusalLogLines every DefaultRefusalLogInterval
// each, and then one line that counts the rest.
func limitedErrorLog(errorLog *log.Logger) *log.Logger {
	out := errorLog.Writer()
	prefix, flags := errorLog.Prefix(), errorLog.Flags()
	summary := log.New(out, prefix, flags)
	lim := newRefusalLog(DefaultRefusalLogLines, DefaultRefusalLogInterval, func(reason string, n int) {
		summary.Printf("http: %d more %s lines left out of the log in %v", n, reason, DefaultRefusalLogInterval)
	})
	return log.New(limitedWriter{out: out, lim: lim}, prefix, flags)
}

// limitedWriter writes the lines of an http.Server's error log within lim.
type limitedWriter struct {
	out io.Writer
	lim *refusalLog
}

func (w limitedWriter) Write(p []byte) (int, error) {
	reason := "error log"
	if bytes.Contains(p, []byte("TLS handshake error")) {
		reason = "TLS handshake error"
	}
	if !w.lim.allow(reason) {
		return len(p), nil
	}
	return w.out.Write(p)
}

// allow reports whether a refusal for reason may be logged now; if not, it
// is counted for the interval's summary.
func (l *refusalLog) allow(reason string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.reasons[reason]
	if w == nil {
		w = &refusalWindow{start: now}
		l.reasons[reason] = w
	}
	if now.Sub(w.start) >= l.interval {
		// A new interval: the last one's summary first, if its timer has
		// not logged it yet.
		l.summarize(reason, w)
		w.start, w.logged = now, 0
	}
	if w.logged < l.lines {
		w.logged++
		return true
	}
	w.suppressed++
	if w.suppressed == 1 {
		start := w.start
		w.timer = time.AfterFunc(start.Add(l.interval).Sub(now), func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if w.start == start { // else allow summarized this interval already
				l.summarize(reason, w)
			}
		})
	}
	return false
}

// summarize logs how many refusals for reason w left out, if any, and
// starts its count again. l.mu is held.
func (l *refusalLog) summarize(reason string, w *refusalWindow) {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.suppressed == 0 {
		return
	}
	l.summary(reason, w.suppressed)
	w.suppressed = 0
}

// refusalCodes are the codes of the requests that the ACL check refuses:
// an unknown secret, or a token (or none) without the right.
var refusalCodes = []string{client.CodeACLNotFound, client.CodePermissionDenied}

// newRefusalCounter is tenure_acl_refusals_total, with every code at zero
// so that the series exist from the start.
func newRefusalCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tenure_acl_refusals_total",
		Help: "Requests this server refused for their ACL token, by code: acl_not_found (a secret no token has), permission_denied (no token, or one without the right or outside its holder binding).",
	}, []string{"code"})
	for _, code := range refusalCodes {
		c.WithLabelValues(code)
	}
	return c
}
