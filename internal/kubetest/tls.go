package kubetest

import "crypto/tls"

// The test apiserver serves a self-signed certificate on 127.0.0.1.
func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } //nolint:gosec
