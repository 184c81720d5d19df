// Command etcd is the stock etcd server, built from go.etcd.io/etcd/server/v3
// so that the version pinned in this module's go.mod is the one the tests
// run. It adds nothing: etcd's own binary is the same one call.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
