package httpapi

import (
	"bytes"
	"io"
	"log"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
)

// Defaults of the refusal log's limit (Config.RefusalLogLines and
// RefusalLogInterval): at most 10 lines per reason every 10 seconds, so a
// flood of refused requests (unknown tokens, missing rights) writes at most
// 11 lines per reason per 10 seconds, whatever its rate.
const (
	DefaultRefusalLogLines    = cluster.DefaultLogLines
	DefaultRefusalLogInterval = cluster.DefaultLogInterval
)

// aclRefusalLog limits the acl_request lines of log: per reason (the
// error code of the answer), the first lines of each interval are logged,
// the rest only counted, and once the interval ends an
// acl_requests_suppressed line says how many were left out. Lines of
// requests that succeed are not limited.
func aclRefusalLog(log hclog.Logger, lines int, interval time.Duration) *cluster.LogLimiter {
	return cluster.NewLogLimiter(lines, interval, func(reason string, n int) {
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
	lim := cluster.NewLogLimiter(DefaultRefusalLogLines, DefaultRefusalLogInterval, func(reason string, n int) {
		summary.Printf("http: %d more %s lines left out of the log in %v", n, reason, DefaultRefusalLogInterval)
	})
	return log.New(limitedWriter{out: out, lim: lim}, prefix, flags)
}

// limitedWriter writes the lines of an http.Server's error log within lim.
type limitedWriter struct {
	out io.Writer
	lim *cluster.LogLimiter
}

func (w limitedWriter) Write(p []byte) (int, error) {
	reason := "error log"
	if bytes.Contains(p, []byte("TLS handshake error")) {
		reason = "TLS handshake error"
	}
	if !w.lim.Allow(reason) {
		return len(p), nil
	}
	return w.out.Write(p)
}

// refusalCodes are the codes of the requests that the ACL check refuses:
// an unknown secret, or a token (or none) without the right.
var refusalCodes = []string{wire.CodeACLNotFound, wire.CodePermissionDenied}

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
