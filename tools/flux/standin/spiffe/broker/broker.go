// Package broker names the SPIFFE Broker client that Flux uses for
// object-level workload identity. Stand-in (see the parent package): the
// types are there so that kustomize-controller and fluxcd/pkg/auth compile;
// New always fails, because the tests use no workload identity and this
// stand-in does not speak the broker's gRPC API.
package broker

import (
	"context"
	"errors"

	"github.com/spiffe/go-spiffe/v2/svid/jwtsvid"
	"github.com/spiffe/go-spiffe/v2/workloadapi"
)

// KubernetesObjectReference names the Flux object a JWT-SVID is asked for.
type KubernetesObjectReference struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
	UID       string
}

// Interface fetches JWT-SVIDs for Flux objects.
type Interface interface {
	FetchJWTSVID(ctx context.Context, ref KubernetesObjectReference, audiences []string) (*jwtsvid.SVID, error)
}

// Client is an Interface that holds a connection to close.
type Client interface {
	Interface
	Close() error
}

// ErrUnsupported is what New returns.
var ErrUnsupported = errors.New("SPIFFE Broker client is not part of this stand-in build of kustomize-controller")

// New would connect to the broker at endpoint; here it always fails.
func New(endpoint string, ids []string, source *workloadapi.X509Source) (Client, error) {
	return nil, ErrUnsupported
}
