package commands

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/cluster"
)

// keptClusters carries each cluster's lister from one generation to the
// next while the connection to it stays the same (DESIGN §12, "Reloads"):
// the kinds it keeps watched and the digests it knows outlive a reload,
// so a reload does not list the whole cluster again. A long-running `run`
// keeps the kinds its rounds list watched (watch); `run --once` lists.
type keptClusters struct {
	mu    sync.Mutex
	watch bool
	// current are the listers of the running generation, building those
	// of the build in progress, by connection.
	current, building map[string]*keptLister
}

type keptLister struct {
	l    *cluster.ClientLister
	stop context.CancelFunc // ends its watches
}

// lister is the kept lister of the connection rc, or a new one; ctx (the
// process's) bounds a new one's watches.
func (k *keptClusters) lister(ctx context.Context, rc *rest.Config) (*cluster.ClientLister, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := connectionOf(rc)
	if kl := k.current[key]; kl != nil {
		k.stage(key, kl)
		return kl.l, nil
	}
	if kl := k.building[key]; kl != nil {
		return kl.l, nil
	}
	l, err := cluster.NewClientLister(rc)
	if err != nil {
		return nil, err
	}
	kl := &keptLister{l: l, stop: func() {}}
	if k.watch {
		wctx, stop := context.WithCancel(ctx)
		if err := l.KeepWatched(wctx); err != nil {
			stop()
			return nil, err
		}
		kl.stop = stop
	}
	k.stage(key, kl)
	return l, nil
}

func (k *keptClusters) stage(key string, kl *keptLister) {
	if k.building == nil {
		k.building = map[string]*keptLister{}
	}
	k.building[key] = kl
}

// settle ends a build. Built (its generation takes over): the listers it
// did not take are stopped. Not built: those it made are, and the running
// generation's stay as they were.
func (k *keptClusters) settle(built bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	keep, drop := k.current, k.building
	if built {
		keep, drop = k.building, k.current
	}
	for key, kl := range drop {
		if keep[key] != kl {
			kl.stop()
		}
	}
	k.current, k.building = keep, nil
}

// connectionOf names what a lister of rc connects to and as whom: a
// rotated credential or another server is another connection. Hashed,
// so no credential is kept in a key.
func connectionOf(rc *rest.Config) string {
	tls := rc.TLSClientConfig
	exec := ""
	if rc.ExecProvider != nil {
		exec = fmt.Sprintf("%q %q %v %q", rc.ExecProvider.Command, rc.ExecProvider.Args, rc.ExecProvider.Env, rc.ExecProvider.APIVersion)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%q %q %q %q %q %q %q %v %q %q %q %q %q %q %q %v %v %q %v %v %v",
		rc.Host, rc.APIPath, rc.BearerToken, rc.BearerTokenFile, rc.Username, rc.Password, rc.Impersonate.UserName, rc.Impersonate.Groups,
		tls.CertFile, tls.KeyFile, tls.CAFile, tls.CertData, tls.KeyData, tls.CAData, tls.ServerName, tls.Insecure, rc.QPS, exec,
		rc.Burst, rc.Timeout, rc.Proxy != nil))
	return fmt.Sprintf("%x", sum)
}
