package deploycheck

// ConfigFacts is what the checks need from a parsed driftback config.
type ConfigFacts struct {
	PrivateKeyFile string
	PrivateKeyEnv  string
	// WebhookSecretFile is github.webhookSecretFile, "" when unset.
	WebhookSecretFile string
	Kubeconfigs       []string // clusters[i].kubeconfig, "" where unset
	Listen            string
}

// Expect describes the installation the objects should make up.
type Expect struct {
	Namespace string // where every namespaced object goes
	Name      string // the app.kubernetes.io/name label on every object
	// OwnsNamespace: the installation creates its Namespace (the
	// kustomize base does; a Helm release goes into one that exists).
	OwnsNamespace bool
	// KeySecret and KeyItem name the Secret and key that hold the App's
	// private key; ShipsKeySecret says the installation creates that
	// Secret itself (the chart, given the key). No other Secret is allowed.
	KeySecret, KeyItem string
	ShipsKeySecret     bool
	// WebhookItem is the key of that Secret that holds the webhook secret,
	// which github.webhookSecretFile must name when set.
	WebhookItem string
	// Replicas is the exact replica count wanted; 0 means at least 2.
	Replicas int
	// ParseConfig validates a config file the way driftback does and
	// returns the facts the checks compare with the pod.
	ParseConfig func(name string, data []byte) (ConfigFacts, error)
}

// Check is one property of a rendered installation.
type Check struct {
	Name string
	Run  func(objs []*Object) []string
}

// Checks are every check, for one expectation.
func (e Expect) Checks() []Check {
	return []Check{
		{"objects", e.checkObjects},
		{"api-types", e.checkAPITypes},
		{"rbac", e.checkRBAC},
		{"bindings", e.checkBindings},
		{"deployment", e.checkDeployment},
		{"config", e.checkConfig},
		{"labels", e.checkLabels},
		{"selectors", e.checkSelectors},
		{"monitoring", e.checkMonitoring},
	}
}

// Run runs every check and returns the problems, each prefixed with its
// check's name.
func (e Expect) Run(objs []*Object) []string {
	var ps []string
	for _, c := range e.Checks() {
		for _, p := range c.Run(objs) {
			ps = append(ps, c.Name+": "+p)
		}
	}
	return ps
}
