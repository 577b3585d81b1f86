package wire

// DebugProfiles are the runtime profiles a server serves at
// /v1/debug/pprof/{profile}.
var DebugProfiles = []string{"goroutine", "heap"}
