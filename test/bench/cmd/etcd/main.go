// Command etcd is etcd's own server, built from its Go modules at the
// version test/bench/go.mod names, for the comparison's current etcd
// beside Debian's etcd-server 3.4 (`make bench-compare` builds it into
// bin/etcd-3.6).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
