package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Webhook describes a mutating admission webhook that the test process
// serves itself (MutatingWebhook).
type Webhook struct {
	// Name names the MutatingWebhookConfiguration; unique per apiserver.
	Name string
	// Resource is what the webhook is called for, on CREATE and UPDATE.
	Resource schema.GroupVersionResource
	// Namespaces are the only namespaces it is called in (its
	// namespaceSelector), so no other test meets it. At least one.
	Namespaces []string
	// Patch is the webhook's JSON patch for the request's object; none
	// lets the object through unchanged.
	Patch func(obj map[string]any) []map[string]any
	// Probe is an object of Resource in Namespaces[0] that the webhook is
	// called for: it is created as a dry run until the webhook sees it,
	// since the apiserver learns of a new webhook through a watch.
	Probe *unstructured.Unstructured
}

// MutatingWebhook serves w over TLS on 127.0.0.1, with a CA made here for
// its caBundle, registers it (clientConfig.url) and waits until the
// apiserver calls it. It returns the count of the calls; the server and
// the registration are removed when the test ends.
func MutatingWebhook(tb testing.TB, dyn dynamic.Interface, w Webhook) *atomic.Int64 {
	tb.Helper()
	caPEM, cert, err := webhookCerts()
	if err != nil {
		tb.Fatal(err)
	}
	calls := &atomic.Int64{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review struct {
			Request struct {
				UID    string         `json:"uid"`
				Object map[string]any `json:"object"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": review.Request.UID, "allowed": true}
		if w.Patch != nil {
			if ops := w.Patch(review.Request.Object); len(ops) > 0 {
				b, _ := json.Marshal(ops)
				resp["patchType"], resp["patch"] = "JSONPatch", b
			}
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	tb.Cleanup(srv.Close)

	namespaces := make([]any, len(w.Namespaces))
	for i, ns := range w.Namespaces {
		namespaces[i] = ns
	}
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	cfg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": w.Name},
		"webhooks": []any{map[string]any{
			"name":         w.Name + ".driftback.test",
			"clientConfig": map[string]any{"url": srv.URL + "/mutate", "caBundle": base64.StdEncoding.EncodeToString(caPEM)},
			"rules": []any{map[string]any{"apiGroups": []any{w.Resource.Group}, "apiVersions": []any{w.Resource.Version},
				"resources": []any{w.Resource.Resource}, "operations": []any{"CREATE", "UPDATE"}, "scope": "Namespaced"}},
			"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{
				"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}}},
			"sideEffects": "None", "admissionReviewVersions": []any{"v1"}, "failurePolicy": "Fail", "timeoutSeconds": int64(10),
		}},
	}}
	ctx := context.Background()
	if _, err := dyn.Resource(gvr).Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = dyn.Resource(gvr).Delete(context.Background(), w.Name, metav1.DeleteOptions{}) })

	err = Poll(15*time.Second, func() (bool, error) {
		before := calls.Load()
		_, err := dyn.Resource(w.Resource).Namespace(w.Namespaces[0]).Create(ctx, w.Probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return calls.Load() > before, fmt.Errorf("the apiserver has not called webhook %s yet", w.Name)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return calls
}

// MirrorImage is a Webhook.Patch that rewrites every container image from
// to image to, as a registry-mirror webhook does, and labels what it
// rewrote mirrored: "true".
func MirrorImage(from, to string) func(obj map[string]any) []map[string]any {
	return func(obj map[string]any) []map[string]any {
		var ops []map[string]any
		cs, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "containers")
		for i, c := range cs {
			if m, _ := c.(map[string]any); m["image"] == from {
				ops = append(ops, map[string]any{"op": "replace", "path": fmt.Sprintf("/spec/template/spec/containers/%d/image", i), "value": to})
			}
		}
		if len(ops) == 0 {
			return nil
		}
		if labels, _, _ := unstructured.NestedMap(obj, "metadata", "labels"); labels == nil {
			return append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]any{"mirrored": "true"}})
		}
		return append(ops, map[string]any{"op": "add", "path": "/metadata/labels/mirrored", "value": "true"})
	}
}

// webhookCerts makes a self-signed CA and a serving certificate it signs
// for 127.0.0.1: the CA's PEM (a webhook's caBundle) and the server's
// certificate with its key.
func webhookCerts() ([]byte, tls.Certificate, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftback test webhook CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
