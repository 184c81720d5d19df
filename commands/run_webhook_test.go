package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftback/driftback/config"
)

// The webhook secret comes from its file, without the newline a Secret
// created from a file usually ends in; an empty or missing file is an
// error that names the file, never the secret.
func TestWebhookSecretFromFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(file, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := webhookSecret(config.GitHub{WebhookSecretFile: file})
	if err != nil || string(got) != "s3cret-value" {
		t.Errorf("secret %q, %v", got, err)
	}
	if got, err := webhookSecret(config.GitHub{}); got != nil || err != nil {
		t.Errorf("no file configured: %q, %v; want nothing (polling only)", got, err)
	}
	if err := os.WriteFile(file, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := webhookSecret(config.GitHub{WebhookSecretFile: file}); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := webhookSecret(config.GitHub{WebhookSecretFile: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "github.webhookSecretFile") {
		t.Errorf("missing file: %v", err)
	}
}
