package httpapi

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"path"

	"github.com/tenure-io/tenure/client/wire"
)

// The inspection page (/ui) is a shell that holds no data: its script
// reads everything through the API with the token the operator typed
// (kept in the browser's sessionStorage and sent as X-Tenure-Token), and
// follows blocking queries and the event stream, so an idle page costs
// the server nothing. The shell and its static files are served without a
// token; every answer that holds data needs the token's rights as usual.

//go:embed ui/page.html ui/static
var uiFiles embed.FS

// uiStatic are the page's script and style sheet, under /ui/static/.
var uiStatic = func() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui/static")
	if err != nil {
		panic(err)
	}
	return sub
}()

// pageTemplate renders the shell: the navigation, the five views and
// their empty tables.
var pageTemplate = template.Must(template.ParseFS(uiFiles, "ui/page.html"))

// pageViews are the page's views, in the order of the navigation bar.
var pageViews = []struct{ ID, Title string }{
	{"cluster", "Cluster"},
	{"leases", "Leases"},
	{"groups", "Groups"},
	{"workers", "Workers"},
	{"events", "Events"},
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	data := struct {
		Views      any
		EventTypes []string
		Static     string
	}{Views: pageViews, EventTypes: wire.EventTypes(), Static: "/ui/static/"}
	if err := pageTemplate.Execute(w, data); err != nil {
		s.log.Debug("render page failed", "error", err)
	}
}

// uiAsset serves one file of ui/static.
func (s *Server) uiAsset(w http.ResponseWriter, r *http.Request) {
	name := pathVar(r, "file")
	b, err := fs.ReadFile(uiStatic, name)
	if err != nil || !fs.ValidPath(name) {
		writeError(w, &apiError{code: wire.CodeNotFound, msg: "no file " + name + " under /ui/static/"})
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}
