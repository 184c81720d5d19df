// Package v1 holds the types through which kustomize-controller and
// github.com/fluxcd/pkg/auth pass cloud and workload-identity settings
// around. Written for driftback's test tools as a stand-in for the Flux
// module of the same path, whose zip the module proxy refuses.
//
// The tests run kustomize-controller without SOPS decryption, remote
// kubeconfigs or cloud credentials, which are the only callers of this
// package. So the types are complete enough to compile against, BuildSpec
// reads no annotations (an object that relies on them gets no auth settings),
// and the cloud-specific parsers report ErrUnsupported.
package v1

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// ErrUnsupported is returned by every helper this stand-in does not implement.
var ErrUnsupported = errors.New("cloud provider parsing is not part of this stand-in build of kustomize-controller")

// Provider names, as used in kubeconfig ConfigMaps and decryption settings.
const (
	ProviderAWS     = "aws"
	ProviderAzure   = "azure"
	ProviderGCP     = "gcp"
	ProviderGeneric = "generic"
)

// Credential providers and types.
const (
	CredentialProviderKubernetes = "kubernetes"
	CredentialProviderSPIFFE     = "spiffe"
	CredentialTypeJWT            = "jwt"
	CredentialTypeX509           = "x509"
)

// Default token audiences and special registry inputs. Unused in the tests.
const (
	DefaultAudienceAWS   = "sts.amazonaws.com"
	DefaultAudienceAzure = "api://AzureADTokenExchange"
	RegistryAWSPublicECR = "public.ecr.aws"
)

// Annotation keys a ServiceAccount may carry. This stand-in's BuildSpec does
// not read them.
const (
	AnnotationCredentialProvider     = "auth.fluxcd.io/credential-provider"
	AnnotationCredentialType         = "auth.fluxcd.io/credential-type"
	AnnotationTransitEngineLoginPath = "transit-engine.auth.fluxcd.io/login-path"
	AnnotationTransitEngineRole      = "transit-engine.auth.fluxcd.io/role"
)

// Spec is a validated authentication configuration.
type Spec struct {
	Auth *AuthSpec
}

// AuthSpec groups the settings per provider.
type AuthSpec struct {
	Credential    *CredentialSpec
	AWS           *AWSSpec
	Azure         *AzureSpec
	GCP           *GCPSpec
	DockerHub     *DockerHubSpec
	TransitEngine *TransitEngineSpec
}

// OptedIn says whether the object chose a credential provider itself.
func (a *AuthSpec) OptedIn() bool {
	return a != nil && a.Credential != nil && a.Credential.Provider != ""
}

type CredentialSpec struct {
	Provider   string
	Type       string
	Expiration time.Duration
	Username   string
	Audiences  []string
}

type AWSSpec struct {
	RoleARN     string
	STSEndpoint string
	Cluster     *AWSClusterSpec
}

type AWSClusterSpec struct {
	Region string
	Name   string
}

type AzureSpec struct {
	TenantID string
	ClientID string
	Cluster  *AzureClusterSpec
}

type AzureClusterSpec struct {
	SubscriptionID string
	ResourceGroup  string
	Name           string
}

type GCPSpec struct {
	WorkloadIdentityProvider string
	ServiceAccount           string
}

type DockerHubSpec struct {
	OIDCConnectionID string
}

type TransitEngineSpec struct {
	LoginPath string
	Role      string
}

// Option is one input to BuildSpec.
type Option func(*buildInput)

type buildInput struct {
	annotations        map[string]string
	provider           string
	sopsVaultConfigMap bool
	kubeConfigCluster  string
	kubeConfigAudience string
	oci                bool
	stsProvider        string
	stsEndpoint        string
	certSecretRef      bool
	secretRefCerts     bool
	secretRefAuth      bool
	gitHubEnterprise   bool
	imagePullSecrets   bool
}

func WithAnnotations(a map[string]string) Option {
	return func(b *buildInput) { b.annotations = a }
}

func WithServiceProvider(p string) Option { return func(b *buildInput) { b.provider = p } }

func WithSOPSVaultConfigMap() Option { return func(b *buildInput) { b.sopsVaultConfigMap = true } }

func WithKubeConfigCluster(c string) Option { return func(b *buildInput) { b.kubeConfigCluster = c } }

func WithKubeConfigAudiences(a string) Option {
	return func(b *buildInput) { b.kubeConfigAudience = a }
}

// WithOCI and the options below are the ones source-controller passes;
// like the others, BuildSpec records and ignores them.
func WithOCI() Option { return func(b *buildInput) { b.oci = true } }

func WithSTSEndpoint(provider, endpoint string) Option {
	return func(b *buildInput) { b.stsProvider, b.stsEndpoint = provider, endpoint }
}

func WithCertSecretRef() Option { return func(b *buildInput) { b.certSecretRef = true } }

func WithSecretRefCerts() Option { return func(b *buildInput) { b.secretRefCerts = true } }

func WithSecretRefAuth() Option { return func(b *buildInput) { b.secretRefAuth = true } }

func WithGitHubEnterpriseServer() Option { return func(b *buildInput) { b.gitHubEnterprise = true } }

func WithImagePullSecrets() Option { return func(b *buildInput) { b.imagePullSecrets = true } }

// BuildSpec returns an empty Spec: no auth settings. See the package comment.
func BuildSpec(opts ...Option) (*Spec, error) {
	var b buildInput
	for _, o := range opts {
		o(&b)
	}
	return &Spec{}, nil
}

func GetDefaultAudienceGCP(workloadIdentityProvider string) string {
	return "//iam.googleapis.com/" + workloadIdentityProvider
}

func GetAWSRoleSessionName(name, namespace, region string) string {
	return fmt.Sprintf("%s.%s.%s.fluxcd.io", name, namespace, region)
}

func GetAWSRegionFromArtifactRegistryInput(string) string { return "" }

func GetAWSRegionFromCodeCommitURL(string) (string, error) { return "", ErrUnsupported }

func ParseArtifactRepository(provider, repository string) (string, error) {
	return "", ErrUnsupported
}

func ParseGitRepository(provider, gitURL string) (string, error) { return "", ErrUnsupported }

// GetRegistryFromArtifactRepository returns the host of an OCI repository
// reference such as oci://host:port/path or host/path.
func GetRegistryFromArtifactRepository(repository string) (string, error) {
	r := strings.TrimPrefix(repository, "oci://")
	host, _, _ := strings.Cut(r, "/")
	if host == "" {
		return "", fmt.Errorf("no registry host in %q", repository)
	}
	return host, nil
}

// ParseClusterAddress returns the https URL of a cluster address given with
// or without scheme.
func ParseClusterAddress(address string) (string, error) {
	if !strings.Contains(address, "://") {
		address = "https://" + address
	}
	u, err := url.Parse(address)
	if err != nil {
		return "", err
	}
	if u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("cluster address %q is not an https host", address)
	}
	return "https://" + u.Host, nil
}
