//go:build linux || darwin || freebsd

package metrics

import "golang.org/x/sys/unix"

// fileSystemSpace returns the bytes available to an unprivileged process
// and the size of the file system that holds dir.
func fileSystemSpace(dir string) (free, size uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), true
}
