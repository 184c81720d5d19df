// Package spiffe holds the flag names and the mTLS helper kustomize-controller
// uses for SPIFFE inter-controller authentication. Written for driftback's
// test tools as a stand-in for the Flux module of the same path, whose zip the
// module proxy refuses. The tests never set these flags, so none of this runs
// there; BuildTLSConfig is nonetheless a working go-spiffe mTLS client config.
package spiffe

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/workloadapi"
)

// Controller flag names. The values are this stand-in's own choice.
const (
	ControllerFlagAuthorizedArtifactServerSPIFFEID = "authorized-artifact-server-spiffe-id"
	ControllerFlagAuthorizedArtifactClientSPIFFEID = "authorized-artifact-client-spiffe-id" // source-controller's
	ControllerFlagAuthorizedEventServerSPIFFEID    = "authorized-event-server-spiffe-id"
	ControllerFlagSPIFFEBrokerEndpoint             = "spiffe-broker-endpoint"
	ControllerFlagSPIFFEBrokerID                   = "spiffe-broker-id"
)

// BuildTLSConfig returns an mTLS client configuration that presents the
// workload's X.509 SVID from source and accepts only servers whose SPIFFE ID
// is one of ids.
func BuildTLSConfig(source *workloadapi.X509Source, ids ...string) (*tls.Config, error) {
	if source == nil {
		return nil, errors.New("spiffe: nil X.509 source")
	}
	if len(ids) == 0 {
		return nil, errors.New("spiffe: no authorized SPIFFE IDs")
	}
	parsed := make([]spiffeid.ID, 0, len(ids))
	for _, s := range ids {
		id, err := spiffeid.FromString(s)
		if err != nil {
			return nil, fmt.Errorf("spiffe: authorized ID %q: %w", s, err)
		}
		parsed = append(parsed, id)
	}
	return tlsconfig.MTLSClientConfig(source, source, tlsconfig.AuthorizeOneOf(parsed...)), nil
}
