//go:build !(linux || darwin || freebsd)

package metrics

// fileSystemSpace is not measured on this platform: the metrics of the
// data dir's file system are absent.
func fileSystemSpace(dir string) (free, size uint64, ok bool) {
	return 0, 0, false
}
