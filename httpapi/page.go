package httpapi

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// pageTemplate is the inspection page: this node's status, the groups
// under the prefix with their stuck workers, every lease in its local state
// machine and its most recent events, refreshed every two seconds.
var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>tenure · {{.Status.NodeID}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 10px;border-bottom:1px solid #ddd}
th{background:#f4f4f4}.held{color:#06602b}.free{color:#888}
code{background:#f4f4f4;padding:1px 4px}
.banner{background:#fde8e8;border:1px solid #c81e1e;color:#9b1c1c;padding:10px 14px;margin:1em 0}
.unknown td{color:#888}
</style></head><body>
<h1>tenure</h1>
{{if not .Status.LeaderID}}<div class="banner" id="no-leader"><b>No leader.</b> {{.Status.NodeID}} ({{.Status.Role}} in term {{.Status.Term}}) knows no leader: it cannot reach a quorum of voters, or an election is under way. Nothing is acquired, renewed or expired until one is elected, and the leases below are this server's last known state, not what holds now.</div>{{end}}
<p>Node <code>{{.Status.NodeID}}</code> is <b>{{.Status.Role}}</b>{{if .Status.Ready}} (established){{end}};
leader <code>{{.Status.LeaderID}}</code>{{if .Status.LeaderHTTPAddr}} at <code>{{.Status.LeaderHTTPAddr}}</code>{{end}};
term {{.Status.Term}}; applied index {{.Status.AppliedIndex}}; last token {{.Status.LastToken}}.
{{if not .Status.Ready}}Deadlines are known only to the leader: open this page on the leader to see them.{{end}}</p>
<h2>Servers</h2>
<table><tr><th>id</th><th>raft</th><th>http</th><th>suffrage</th><th></th></tr>
{{range .Status.Servers}}<tr><td>{{.ID}}</td><td>{{.RaftAddr}}</td><td>{{.HTTPAddr}}</td><td>{{if .Voter}}voter{{else}}non-voter{{end}}</td><td>{{if .Leader}}leader{{end}}</td></tr>
{{end}}</table>
{{if .Groups}}<h2>Groups</h2>
<table><tr><th>group</th><th>keys</th><th>targeted</th><th>stuck workers</th></tr>
{{range .Groups}}<tr><td>{{.Name}}</td><td>{{len .Keys}}</td><td>{{len .Assignment}}</td><td>{{range .Stuck}}<b>{{.}}</b> {{end}}</td></tr>
{{end}}</table>
<p>Unowned keys and stuck workers in detail: <code>tenure leases stale</code>.</p>{{end}}
<h2>Leases ({{len .Leases}}{{if .More}}, the first ones by key{{end}})</h2>
{{if .More}}<p>More leases follow: list them with <code>tenure leases list</code> or GET /v1/leases, or narrow this page with ?prefix=.</p>{{end}}
<table><tr><th>key</th><th>state</th><th>holder</th><th>token</th><th>ttl</th><th>expires in</th><th>acquired</th><th>metadata</th></tr>
{{range .Leases}}<tr class="{{if $.Status.LeaderID}}{{.State}}{{else}}unknown{{end}}"><td>{{.Key}}</td><td>{{.State}}{{if .Reason}} ({{.Reason}}){{end}}{{if not $.Status.LeaderID}} (last known){{end}}</td><td>{{.Holder}}</td><td>{{.Token}}</td><td>{{.TTL}}</td><td>{{if .HasExpiresIn}}{{.ExpiresIn}}{{end}}</td><td>{{if not .AcquiredAt.IsZero}}{{.AcquiredAt.UTC.Format "2006-01-02T15:04:05.999999999Z07:00"}}{{end}}</td><td>{{range $k, $v := .Metadata}}{{$k}}={{$v}} {{end}}</td></tr>
{{end}}</table>
<h2>Recent events</h2>
<table><tr><th>index</th><th>type</th><th>key</th><th>holder</th><th>token</th><th>group</th><th>worker</th><th>by</th></tr>
{{range .Events}}<tr><td>{{.Index}}</td><td>{{.Type}}{{if .Reason}} ({{.Reason}}){{end}}</td><td>{{.Key}}</td><td>{{.Holder}}</td><td>{{if .Token}}{{.Token}}{{end}}</td><td>{{.Group}}</td><td>{{.Worker}}</td><td>{{.By}}</td></tr>
{{end}}</table>
</body></html>
`))

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	// The page shows the first page of leases only; the API and the CLI
	// list the rest.
	leases, err := s.node.ListPage(r.Context(), fsm.Filter{Prefix: r.URL.Query().Get("prefix")}, fsm.Page{Limit: DefaultListLimit}, cluster.Stale)
	if err != nil {
		writeError(w, err)
		return
	}
	prefix := r.URL.Query().Get("prefix")
	groups, _, err := s.node.Groups(r.Context(), cluster.Stale)
	if err != nil {
		writeError(w, err)
		return
	}
	data := struct {
		Status cluster.Status
		Groups []*fsm.Group
		Leases []*client.LeaseInfo
		More   bool
		Events []client.Event
	}{Status: s.node.Status(), More: leases.Next != ""}
	for _, g := range groups {
		if strings.HasPrefix(g.Name, prefix) { // the token's read covers the prefix
			data.Groups = append(data.Groups, g)
		}
	}
	for _, l := range leases.Leases {
		data.Leases = append(data.Leases, leaseOut(l))
	}
	data.Events = s.recentEvents(r, data.Status.AppliedIndex)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(w, data); err != nil {
		s.log.Debug("render page failed", "error", err)
	}
}

// pageEntries and pageEvents bound the events the page shows: those of the
// last pageEntries log entries, the newest pageEvents of them, newest first.
const (
	pageEntries = 500
	pageEvents  = 50
)

// recentEvents returns the newest events of the page's prefix that the
// request may see.
func (s *Server) recentEvents(r *http.Request, applied uint64) []client.Event {
	after := max(s.node.EventBase(), applied-min(applied, pageEntries))
	f := fsm.EventFilter{Prefix: r.URL.Query().Get("prefix")}
	a := authz(r)
	var newest []fsm.Event // the last pageEvents visible ones, oldest first
	for after < applied {
		evs, next, err := s.node.Events(after, f, 0)
		if err != nil {
			return nil // compacted since: the page shows none this time
		}
		for _, e := range evs {
			if visible(a, e) {
				newest = append(newest, e)
			}
		}
		if len(newest) > pageEvents {
			newest = append(newest[:0], newest[len(newest)-pageEvents:]...)
		}
		if next <= after {
			break
		}
		after = next
	}
	out := make([]client.Event, 0, len(newest))
	for i := len(newest) - 1; i >= 0; i-- {
		out = append(out, eventOut(newest[i]))
	}
	return out
}
