// Package docs holds the machine-readable contract of the HTTP API,
// openapi.yaml, for the server to serve at GET /v1/openapi.yaml, and the
// reader of the metric tables of metrics.md for the checks of the
// reference. The document sits next to http-api.md, which it follows;
// httpapi's tests check it against the router and the server's real
// answers.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml: the OpenAPI 3.1 document of the HTTP API v1.
//
//go:embed openapi.yaml
var OpenAPI []byte
