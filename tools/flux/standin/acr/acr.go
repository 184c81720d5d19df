// Package acr would fetch Alibaba Cloud Container Registry credentials.
// Written for driftback's test tools as a stand-in for the module of the
// same path (whose zip the module proxy refuses), with only the API that
// docker-credential-acr-helper's credhelper calls (cosign imports it for its
// registry keychain): every lookup fails with ErrUnsupported. The tests never
// pull from ACR.
package acr

import "errors"

// UserAgent is sent with requests; the credhelper sets it.
var UserAgent = "docker-credential-acr-helper"

// ErrUnsupported is what every credential lookup returns.
var ErrUnsupported = errors.New("acr: Alibaba Cloud registry credentials are not supported by this stand-in")

// ClientOptions configures a Client; there is nothing to configure.
type ClientOptions struct{}

// Client looks up credentials.
type Client struct{}

// NewClient returns a Client.
func NewClient(*ClientOptions) (*Client, error) { return &Client{}, nil }

// Credentials are a registry user name and password.
type Credentials struct {
	UserName string
	Password string
}

// Logger is the part of a logrus logger the client would log through.
type Logger interface {
	Debugf(format string, args ...any)
}

// GetCredentials always fails with ErrUnsupported.
func (*Client) GetCredentials(serverURL string, _ Logger) (*Credentials, error) {
	return nil, ErrUnsupported
}
