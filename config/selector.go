package config

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// checkSelector validates s as a Kubernetes label selector with the same
// parser the cluster package's client sends it through (what kubectl get
// -l accepts), so what passes here is what the API server is asked. The
// error says what is wrong in words.
func checkSelector(s string) error {
	if strings.TrimSpace(s) == "" {
		// labels.Parse reads "" as "everything"; in a config it is a slip.
		return errors.New("is empty")
	}
	if _, err := labels.Parse(s); err != nil {
		msg := strings.TrimPrefix(err.Error(), "unable to parse requirement: ")
		// Field errors without a field path print one as "<nil>".
		return errors.New(strings.ReplaceAll(msg, "<nil>: ", ""))
	}
	return nil
}
