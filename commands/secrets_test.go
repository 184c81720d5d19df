package commands

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The planted value: it must never come out of driftback in any form.
const plantedSecret = "pl4nted-S3cret-value-0xDEADBEEF"

func secretForms() []string {
	sum := sha256.Sum256([]byte(plantedSecret))
	return []string{
		plantedSecret,
		base64.StdEncoding.EncodeToString([]byte(plantedSecret)),
		base64.RawStdEncoding.EncodeToString([]byte(plantedSecret)),
		base64.URLEncoding.EncodeToString([]byte(plantedSecret)),
		hex.EncodeToString(sum[:]), // a digest of a low-entropy value can be brute-forced
		"4ZGVhZGJlZWY",             // a fragment of the base64 form
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// sandboxedRun runs the driftback binary with a proxy that records any
// connection and a PATH whose only git leaves a marker, within 20 s; it
// returns the output and fails on a crash, a network access or a git run.
func sandboxedRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ln, conns := recordingListener(t)
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "git-ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$@\" >> '"+marker+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	proxy := "http://" + ln
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy,
		"http_proxy=" + proxy, "https_proxy=" + proxy, "ALL_PROXY=" + proxy, "NO_PROXY=", "no_proxy="}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("driftback %v took more than 20 s", args)
	}
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.Logf("driftback %s: %s, max RSS %d MiB", args[0], time.Since(start).Round(time.Millisecond), ru.Maxrss>>10)
		if ru.Maxrss > 1<<20 { // KiB: 1 GiB
			t.Errorf("driftback used %d MiB of memory", ru.Maxrss>>10)
		}
	}
	if strings.Contains(e.String(), "panic") || strings.Contains(e.String(), "goroutine ") {
		t.Errorf("driftback crashed:\n%s", e.String())
	}
	if n := conns(); n > 0 {
		t.Errorf("driftback made %d network connection(s)", n)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("driftback ran git: %s", b)
	}
	return o.String(), e.String(), code
}

func writeFiles_(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSecretValuesNeverLeave plants one value in every place a Secret can
// carry it: data, stringData, an annotation, the last-applied annotation, a
// Secret whose keys look like configuration, and an untracked Secret. No
// output format, no error and no written file may hold it.
func TestSecretValuesNeverLeave(t *testing.T) {
	repo := t.TempDir()
	writeFiles_(t, repo, map[string]string{
		"app/kustomization.yaml": "resources:\n- secret.yaml\n- settings.yaml\n- cm.yaml\n",
		"app/secret.yaml":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  annotations:\n    note: from-git\ntype: Opaque\nstringData:\n  password: git-password\n",
		"app/settings.yaml":      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-settings\ndata:\n  color: " + b64("blue") + "\n  replicas: " + b64("3") + "\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  mode: slow\n",
	})
	lastApplied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"stringData":{"password":"` + plantedSecret + `"}}`
	// A person edited the planted fields, so they are compared, not dropped
	// as server defaults.
	managed := `    managedFields:
    - manager: kubectl-edit
      operation: Update
      apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata: {f:annotations: {f:note: {}, f:leak: {}}}
        f:data: {f:password: {}, f:color: {}, f:token: {}}
`
	live := filepath.Join(t.TempDir(), "live.yaml")
	writeFiles_(t, filepath.Dir(live), map[string]string{"live.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata:
    name: db
    namespace: default
    annotations:
      note: "` + plantedSecret + `"
      leak: "` + b64(plantedSecret) + `"
      kubectl.kubernetes.io/last-applied-configuration: '` + lastApplied + `'
` + managed + `  type: Opaque
  data:
    password: ` + b64(plantedSecret) + `
  stringData:
    password: "` + plantedSecret + `"
- apiVersion: v1
  kind: Secret
  metadata:
    name: app-settings
    namespace: default
` + managed + `  data:
    color: ` + b64(plantedSecret) + `
    replicas: ` + b64("3") + `
- apiVersion: v1
  kind: Secret
  metadata:
    name: stray
    namespace: default
` + managed + `  data:
    token: ` + b64(plantedSecret) + `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
    namespace: default
  data:
    mode: fast
`})
	check := func(where, s string) {
		t.Helper()
		for _, f := range secretForms() {
			if strings.Contains(s, f) {
				t.Errorf("%s holds the planted secret (as %q):\n%s", where, f, s)
			}
		}
	}
	for _, format := range []string{"text", "json", "markdown", "patch"} {
		out, stderr, code := sandboxedRun(t, "plan", "--repo", repo, "--root", "app", "--live", live, "-o", format)
		if code != 1 {
			t.Errorf("-o %s: exit %d, want 1 (drift)\n%s\n%s", format, code, out, stderr)
		}
		if format == "json" && (!strings.Contains(out, `"sensitive"`) || !strings.Contains(out, "data.color")) {
			t.Errorf("the drifted Secrets are not refused as sensitive:\n%s", out)
		}
		check("stdout of -o "+format, out)
		check("stderr of -o "+format, stderr)
	}
	out, stderr, code := sandboxedRun(t, "plan", "--repo", repo, "--root", "app", "--live", live, "--write", "-o", "json")
	if code != 1 {
		t.Errorf("--write: exit %d\n%s", code, stderr)
	}
	check("stdout of --write", out)
	check("stderr of --write", stderr)
	if b, err := os.ReadFile(filepath.Join(repo, "app/cm.yaml")); err != nil || !strings.Contains(string(b), "mode: fast") {
		t.Errorf("--write did not write the ConfigMap edit: %v\n%s", err, b)
	}
	err := filepath.Walk(repo, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		check("written file "+p, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSOPSValuesNeverLeave: a ConfigMap whose value Git holds SOPS-encrypted
// and the cluster holds decrypted (Flux's spec.decryption). Neither the
// plaintext nor the ciphertext comes out of plan in any format; without
// managedFields nothing is proposed (exit 0), and once a person's manager
// wrote the value it is refused encrypted-source (exit 1). --write never
// touches the encrypted file.
func TestSOPSValuesNeverLeave(t *testing.T) {
	const cipherData = "c29wcy1jaXBoZXJ0ZXh0LWJ5dGVz"
	encrypted := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n" +
		"  password: ENC[AES256_GCM,data:" + cipherData + ",iv:aXZpdml2aXZpdml2,tag:dGFndGFndGFndGFndGFn,type:str]\n" +
		"sops:\n  mac: ENC[AES256_GCM,data:bWFjbWFjbWFj,iv:aXZpdml2aXZpdml2,tag:dGFndGFndGFndGFndGFn,type:str]\n" +
		"  lastmodified: \"2024-05-01T10:00:00Z\"\n  version: 3.8.1\n" +
		"  age:\n  - recipient: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n    enc: |\n      -----BEGIN AGE ENCRYPTED FILE-----\n      YWdl\n      -----END AGE ENCRYPTED FILE-----\n"
	repo := t.TempDir()
	writeFiles_(t, repo, map[string]string{
		"app/kustomization.yaml": "resources:\n- cm.yaml\n",
		"app/cm.yaml":            encrypted,
	})
	liveDir := t.TempDir()
	edited := "  managedFields:\n  - manager: kubectl-edit\n    operation: Update\n    apiVersion: v1\n    fieldsType: FieldsV1\n    fieldsV1: {\"f:data\": {\"f:password\": {}}}\n"
	for name, mf := range map[string]string{"plain.yaml": "", "edited.yaml": edited} {
		writeFiles_(t, liveDir, map[string]string{name: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n" + mf +
			"data:\n  password: " + plantedSecret + "\n"})
	}
	check := func(where, s string) {
		t.Helper()
		for _, f := range append(secretForms(), "ENC[", cipherData) {
			if strings.Contains(s, f) {
				t.Errorf("%s holds %q:\n%s", where, f, s)
			}
		}
	}
	for live, want := range map[string]int{"plain.yaml": 0, "edited.yaml": 1} {
		for _, format := range planFormats {
			out, stderr, code := sandboxedRun(t, "plan", "--repo", repo, "--root", "app", "--live", filepath.Join(liveDir, live), "-o", format)
			if code != want {
				t.Errorf("%s -o %s: exit %d, want %d\n%s\n%s", live, format, code, want, out, stderr)
			}
			if format == "json" && (want == 1) != strings.Contains(out, `"encrypted-source"`) {
				t.Errorf("%s: refusals:\n%s", live, out)
			}
			check(live+" stdout of -o "+format, out)
			check(live+" stderr of -o "+format, stderr)
		}
		out, stderr, _ := sandboxedRun(t, "plan", "--repo", repo, "--root", "app", "--live", filepath.Join(liveDir, live), "--write")
		check(live+" stdout of --write", out)
		check(live+" stderr of --write", stderr)
		if b, err := os.ReadFile(filepath.Join(repo, "app/cm.yaml")); err != nil || string(b) != encrypted {
			t.Errorf("%s: --write changed the encrypted file: %v\n%s", live, err, b)
		}
	}
}
