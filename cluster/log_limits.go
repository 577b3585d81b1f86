package cluster

import "github.com/tenure-io/tenure/cluster/internal/limitedlog"

// Sources of limited log lines (the source label of
// tenure_log_lines_suppressed_total, the source of log_lines_suppressed).
const (
	logSourceMemberlist    = limitedlog.SourceMemberlist
	logSourceRaftTransport = limitedlog.SourceRaftTransport
)
