package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/config"
)

// The webhook secret comes from its file, without the newline a Secret
// created from a file usually ends in; an empty or missing file is an
// error that names the file, never the secret. During a rotation the file
// holds two, and a changed file is read again without a restart.
func TestWebhookSecretFromFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "webhook-secret")
	write := func(s string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		// A mounted Secret's update changes the file's time; the test
		// moves it explicitly, as coarse file clocks might not.
		if err := os.Chtimes(file, at, at); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write("s3cret-value\n", t0)
	read, err := webhookSecrets(config.GitHub{WebhookSecretFile: file}, nil)
	if err != nil || secretsText(read()) != "s3cret-value" {
		t.Fatalf("secrets %q, %v", secretsText(read()), err)
	}
	write("n3w-value\ns3cret-value\n", t0.Add(time.Minute))
	if got := secretsText(read()); got != "n3w-value,s3cret-value" {
		t.Errorf("during the rotation: %q", got)
	}
	write("n3w-value\n", t0.Add(2*time.Minute))
	if got := secretsText(read()); got != "n3w-value" {
		t.Errorf("after the rotation: %q", got)
	}
	// A change that cannot be used keeps what was read before.
	write("a\nb\nc\n", t0.Add(3*time.Minute))
	if got := secretsText(read()); got != "n3w-value" {
		t.Errorf("after an unusable change: %q", got)
	}
	if got, err := webhookSecrets(config.GitHub{}, nil); got != nil || err != nil {
		t.Errorf("no file configured: %v; want nothing (polling only)", err)
	}
	for content, want := range map[string]string{" \n": "is empty", "a\nb\nc\n": "two at most"} {
		write(content, t0)
		if _, err := webhookSecrets(config.GitHub{WebhookSecretFile: file}, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", content, err)
		}
	}
	if _, err := webhookSecrets(config.GitHub{WebhookSecretFile: filepath.Join(dir, "missing")}, nil); err == nil || !strings.Contains(err.Error(), "github.webhookSecretFile") {
		t.Errorf("missing file: %v", err)
	}
}

func secretsText(secrets [][]byte) string {
	var out []string
	for _, s := range secrets {
		out = append(out, string(s))
	}
	return strings.Join(out, ",")
}
