package analyzer_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// SOPS-encrypted sources (issue 53, item 5): Flux decrypts them before it
// applies, so the cluster holds the plaintext and Git only the ciphertext.
// No plan may carry either, nor write an encrypted file.

const (
	// sopsPlain is what the cluster holds, decrypted; sopsCipher and
	// sopsCipherData are Git's ciphertext of it, and the part of it that
	// must never be printed.
	sopsPlain      = "hunter2-pl41ntext"
	sopsCipherData = "Q2lwaGVyVGV4dEJ5dGVz"
	sopsCipher     = "ENC[AES256_GCM,data:" + sopsCipherData + ",iv:aXZpdml2aXZpdml2,tag:dGFndGFndGFndGFndGFn,type:str]"
	sopsMAC        = "ENC[AES256_GCM,data:bWFjbWFjbWFj,iv:aXZpdml2aXZpdml2,tag:dGFndGFndGFndGFndGFn,type:str]"
	sopsRecipient  = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
)

// sopsConfigMap is a ConfigMap encrypted with encrypted_regex
// ^(data|stringData)$: its metadata stays plain, as SOPS leaves it.
const sopsConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: shop
  labels:
    team: blue
data:
  password: ` + sopsCipher + `
sops:
  age:
  - recipient: ` + sopsRecipient + `
    enc: |
      -----BEGIN AGE ENCRYPTED FILE-----
      YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOQ==
      -----END AGE ENCRYPTED FILE-----
  lastmodified: "2024-05-01T10:00:00Z"
  mac: ` + sopsMAC + `
  encrypted_regex: ^(data|stringData)$
  version: 3.8.1
`

func sopsRepo(t *testing.T, files map[string]string) *repofs.Repo {
	t.Helper()
	r := repofs.New()
	for p, c := range files {
		if err := r.Add(p, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// sopsLive reads live objects as `plan --live` does, managedFields and all.
func sopsLive(t *testing.T, y string) []kube.LiveObject {
	t.Helper()
	live, err := cluster.ParseLive("live.yaml", []byte(y), cluster.DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	return live
}

func sopsPlan(t *testing.T, repo *repofs.Repo, live []kube.LiveObject) *analyzer.Plan {
	t.Helper()
	p, err := analyzer.Analyze(analyzer.Input{Repo: repo, Root: "", Live: live})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// printed is the plan in every form `plan -o` prints it.
func printed(t *testing.T, p *analyzer.Plan, repo *repofs.Repo) map[string]string {
	t.Helper()
	j, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"text":     report.Text(p),
		"markdown": report.Markdown(p, report.MarkdownOptions{}),
		"json":     string(j),
		"yaml":     string(y),
		"patch":    report.Patch(p, repo.File),
	}
}

// holdsNone fails when any form of the plan holds one of the values, or
// any SOPS ciphertext at all.
func holdsNone(t *testing.T, p *analyzer.Plan, repo *repofs.Repo, values ...string) {
	t.Helper()
	for format, out := range printed(t, p, repo) {
		for _, v := range append(values, "ENC[", sopsCipherData) {
			if strings.Contains(out, v) {
				t.Errorf("-o %s holds %q:\n%s", format, v, out)
			}
		}
	}
}

func oneRefusal(t *testing.T, p *analyzer.Plan, code, field, file string) analyzer.Refusal {
	t.Helper()
	if len(p.Refusals) != 1 || len(p.Edits) != 0 || len(p.Files) != 0 {
		b, _ := json.MarshalIndent(p, "", "  ")
		t.Fatalf("want one refusal and nothing written:\n%s", b)
	}
	r := p.Refusals[0]
	if r.Code != code || r.Field != field || r.File != file {
		t.Fatalf("refusal %s %s %s, want %s %s %s: %+v", r.Code, r.Field, r.File, code, field, file, r)
	}
	return r
}

// managed is a managedFields list, each entry "manager operation fieldsV1".
func managed(entries ...[3]string) string {
	var b strings.Builder
	b.WriteString("  managedFields:\n")
	for _, e := range entries {
		b.WriteString("  - manager: " + e[0] + "\n    operation: " + e[1] + "\n    apiVersion: v1\n    fieldsType: FieldsV1\n    fieldsV1: " + e[2] + "\n")
	}
	return b.String()
}

// liveConfigMap is the ConfigMap as the cluster holds it once Flux has
// decrypted and applied it: the plaintext, no sops block.
func liveConfigMap(team, password, managedFields string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: shop\n  labels:\n    team: " + team + "\n" +
		managedFields + "data:\n  password: " + password + "\n"
}

var sopsFiles = map[string]string{
	"kustomization.yaml": "resources:\n- cm.yaml\n",
	"cm.yaml":            sopsConfigMap,
}

// Without managedFields nothing tells whether the plaintext the cluster
// holds is Git's: the encrypted field is not compared, and the plan says
// so without any value. Before issue 53 the plaintext was proposed into
// the encrypted file and its sops block deleted.
func TestSOPSPlaintextWithoutManagedFieldsIsNotCompared(t *testing.T) {
	repo := sopsRepo(t, sopsFiles)
	p := sopsPlan(t, repo, sopsLive(t, liveConfigMap("blue", sopsPlain, "")))
	if len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
		b, _ := json.MarshalIndent(p, "", "  ")
		t.Fatalf("an encrypted field was compared with the plaintext:\n%s", b)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "1 encrypted field was not compared") {
		t.Errorf("notes %q do not say the encrypted field was not compared", p.Notes)
	}
	holdsNone(t, p, repo, sopsPlain)
}

// A person changed the encrypted value (kubectl edit): refused by name,
// the value shown nowhere.
func TestSOPSValueAPersonChangedIsRefused(t *testing.T) {
	repo := sopsRepo(t, sopsFiles)
	mf := managed(
		[3]string{"kustomize-controller", "Apply", `{"f:metadata": {"f:labels": {"f:team": {}}}}`},
		[3]string{"kubectl-edit", "Update", `{"f:data": {"f:password": {}}}`},
	)
	p := sopsPlan(t, repo, sopsLive(t, liveConfigMap("blue", sopsPlain, mf)))
	r := oneRefusal(t, p, analyzer.CodeEncryptedSource, "data.password", "cm.yaml")
	if r.Object.Name != "app" || !strings.Contains(r.Message, "SOPS-encrypted") || !strings.Contains(r.Message, "kubectl-edit") ||
		!strings.Contains(r.Hint, "sops cm.yaml") {
		t.Errorf("refusal %+v", r)
	}
	holdsNone(t, p, repo, sopsPlain)
}

// The cluster holds what Flux decrypted and applied, and only Flux wrote
// it: nothing to do. The render itself fed back as live (the ciphertext
// and the sops block, as a cluster without decryption holds them) is the
// same no-op.
func TestSOPSDecryptedByTheApplierIsInSync(t *testing.T) {
	repo := sopsRepo(t, sopsFiles)
	mf := managed([3]string{"kustomize-controller", "Apply", `{"f:metadata": {"f:labels": {"f:team": {}}}, "f:data": {"f:password": {}}}`})
	p := sopsPlan(t, repo, sopsLive(t, liveConfigMap("blue", sopsPlain, mf)))
	if !p.InSync() || len(p.Files) != 0 || len(p.Notes) != 0 {
		b, _ := json.MarshalIndent(p, "", "  ")
		t.Fatalf("decrypted by the applier, not a no-op:\n%s", b)
	}
	asRendered := sopsLive(t, strings.Replace(sopsConfigMap, "namespace: shop\n", "namespace: shop\n"+mf, 1))
	for _, plan := range []func(analyzer.Input) (*analyzer.Plan, error){analyzer.Analyze, analyzer.AnalyzeForcingDye} {
		p, err := plan(analyzer.Input{Repo: repo, Live: asRendered})
		if err != nil || !p.InSync() || len(p.Files) != 0 {
			t.Fatalf("the render fed back as live is not a no-op: %v %+v", err, p)
		}
	}
}

// A field SOPS left in plain text (a label) is still in an encrypted
// file, whose MAC covers it: a person's change is refused, never written
// there nor anywhere else.
func TestSOPSPlainFieldOfAnEncryptedFileIsNeverWritten(t *testing.T) {
	repo := sopsRepo(t, sopsFiles)
	mf := managed(
		[3]string{"kustomize-controller", "Apply", `{"f:metadata": {"f:labels": {}}, "f:data": {"f:password": {}}}`},
		[3]string{"kubectl-edit", "Update", `{"f:metadata": {"f:labels": {"f:team": {}}}}`},
	)
	p := sopsPlan(t, repo, sopsLive(t, liveConfigMap("crimson-by-hand", sopsPlain, mf)))
	r := oneRefusal(t, p, analyzer.CodeEncryptedSource, "metadata.labels.team", "cm.yaml")
	if !strings.Contains(r.Message, "cm.yaml is SOPS-encrypted and driftback never writes it") {
		t.Errorf("refusal %+v", r)
	}
	holdsNone(t, p, repo, sopsPlain, "crimson-by-hand")
	// The same with the file in a base other roots read: no override in
	// the target's own folder carries it either.
	shared := sopsRepo(t, map[string]string{
		"base/kustomization.yaml":    "resources:\n- cm.yaml\n",
		"base/cm.yaml":               sopsConfigMap,
		"prod/kustomization.yaml":    "resources:\n- ../base\n",
		"staging/kustomization.yaml": "resources:\n- ../base\n",
	})
	p, err := analyzer.Analyze(analyzer.Input{Repo: shared, Root: "prod", Live: sopsLive(t, liveConfigMap("crimson-by-hand", sopsPlain, mf))})
	if err != nil {
		t.Fatal(err)
	}
	oneRefusal(t, p, analyzer.CodeEncryptedSource, "metadata.labels.team", "base/cm.yaml")
	holdsNone(t, p, shared, sopsPlain, "crimson-by-hand")
}

// A configMapGenerator reads a SOPS dotenv file: its values render as
// ciphertexts, and its sops_ lines as keys the decrypted object lacks. The
// object is paired by the stem of its name (Flux hashes the plaintext).
func TestSOPSGeneratorEnvFile(t *testing.T) {
	repo := sopsRepo(t, map[string]string{
		"kustomization.yaml": "configMapGenerator:\n- name: app-env\n  namespace: shop\n  envs:\n  - app.env\n",
		"app.env": "PASSWORD=" + sopsCipher + "\nMODE_unencrypted=slow\n" +
			"sops_age__list_0__map_enc=-----BEGIN AGE ENCRYPTED FILE-----\\nYWdl\\n-----END AGE ENCRYPTED FILE-----\\n\n" +
			"sops_age__list_0__map_recipient=" + sopsRecipient + "\nsops_lastmodified=2024-05-01T10:00:00Z\n" +
			"sops_mac=" + sopsMAC + "\nsops_unencrypted_suffix=_unencrypted\nsops_version=3.8.1\n",
	})
	live := func(mode, mf string) []kube.LiveObject {
		return sopsLive(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-env-7b2kc9m4td\n  namespace: shop\n"+mf+
			"data:\n  PASSWORD: "+sopsPlain+"\n  MODE_unencrypted: "+mode+"\n")
	}
	p := sopsPlan(t, repo, live("slow", ""))
	if len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 || !strings.Contains(strings.Join(p.Notes, "\n"), "1 encrypted field was not compared") {
		b, _ := json.MarshalIndent(p, "", "  ")
		t.Fatalf("the decrypted env file drifts:\n%s", b)
	}
	holdsNone(t, p, repo, sopsPlain)

	applied := `{"f:data": {".": {}, "f:PASSWORD": {}, "f:MODE_unencrypted": {}}}`
	p = sopsPlan(t, repo, live("slow", managed([3]string{"kustomize-controller", "Apply", applied})))
	if !p.InSync() || len(p.Notes) != 0 {
		t.Fatalf("decrypted by the applier, not a no-op: %+v", p)
	}

	edited := managed([3]string{"kustomize-controller", "Apply", `{"f:data": {".": {}, "f:MODE_unencrypted": {}}}`},
		[3]string{"kubectl-edit", "Update", `{"f:data": {"f:PASSWORD": {}}}`})
	p = sopsPlan(t, repo, live("slow", edited))
	oneRefusal(t, p, analyzer.CodeEncryptedSource, "data.PASSWORD", "app.env")
	holdsNone(t, p, repo, sopsPlain)

	// A value SOPS left plain (the _unencrypted suffix) lives in the
	// encrypted file all the same: refused, not written.
	edited = managed([3]string{"kustomize-controller", "Apply", `{"f:data": {".": {}, "f:PASSWORD": {}}}`},
		[3]string{"kubectl-edit", "Update", `{"f:data": {"f:MODE_unencrypted": {}}}`})
	for _, plan := range []func(analyzer.Input) (*analyzer.Plan, error){analyzer.Analyze, analyzer.AnalyzeForcingDye} {
		p, err := plan(analyzer.Input{Repo: repo, Live: live("fast-by-hand", edited)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Refusals {
			if r.Code != analyzer.CodeEncryptedSource || r.Field != "data.MODE_unencrypted" {
				t.Errorf("refusal %+v", r)
			}
		}
		if len(p.Refusals) == 0 || len(p.Edits)+len(p.Files) != 0 {
			t.Fatalf("a plain value of an encrypted env file: %+v", p)
		}
		holdsNone(t, p, repo, sopsPlain, "fast-by-hand")
	}
}

// The same rules hold for any kind and any path: an encrypted Secret
// (whose data values are compared as digests) and a custom resource whose
// ciphertext sits in a list of named elements, owned whole by a person's
// manager when the list is atomic.
func TestSOPSAnyKindAnyPath(t *testing.T) {
	repo := sopsRepo(t, map[string]string{
		"kustomization.yaml": "resources:\n- secret.yaml\n- db.yaml\n",
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: shop\ntype: Opaque\ndata:\n  password: " + sopsCipher +
			"\nsops:\n  mac: " + sopsMAC + "\n  version: 3.8.1\n",
		"db.yaml": "apiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: db\n  namespace: shop\nspec:\n  users:\n  - name: admin\n    password: " + sopsCipher +
			"\n  - name: reader\n    password: plain-reader\nsops:\n  mac: " + sopsMAC + "\n  version: 3.8.1\n",
	})
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: shop\n%stype: Opaque\ndata:\n  password: aHVudGVyMi1wbDQxbnRleHQ=\n"
	db := "apiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: db\n  namespace: shop\n%sspec:\n  users:\n  - name: admin\n    password: " + sopsPlain +
		"\n  - name: reader\n    password: plain-reader\n"
	lives := func(smf, dmf string) []kube.LiveObject {
		return sopsLive(t, "apiVersion: v1\nkind: List\nitems:\n"+indentItem(fmt.Sprintf(secret, smf))+indentItem(fmt.Sprintf(db, dmf)))
	}
	p := sopsPlan(t, repo, lives("", ""))
	if len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 || !strings.Contains(strings.Join(p.Notes, "\n"), "2 encrypted fields were not compared") {
		b, _ := json.MarshalIndent(p, "", "  ")
		t.Fatalf("decrypted objects drift:\n%s", b)
	}
	holdsNone(t, p, repo, sopsPlain, "aHVudGVyMi1wbDQxbnRleHQ")

	person := func(fields string) string {
		return managed([3]string{"kubectl-edit", "Update", fields})
	}
	p = sopsPlan(t, repo, lives(person(`{"f:data": {"f:password": {}}}`), person(`{"f:spec": {"f:users": {}}}`)))
	if len(p.Refusals) != 2 || len(p.Edits)+len(p.Files) != 0 {
		b, _ := json.MarshalIndent(p, "", "  ")
		t.Fatalf("want both refused:\n%s", b)
	}
	for _, r := range p.Refusals {
		want := map[string]string{"Secret": "data.password", "Database": "spec.users[admin].password"}[r.Object.Kind]
		if r.Code != analyzer.CodeEncryptedSource || r.Field != want {
			t.Errorf("refusal %+v, want %s of %s", r, want, r.Object.Kind)
		}
	}
	holdsNone(t, p, repo, sopsPlain, "aHVudGVyMi1wbDQxbnRleHQ")
}

// indentItem makes one object an item of a List.
func indentItem(obj string) string {
	lines := strings.Split(strings.TrimSuffix(obj, "\n"), "\n")
	for i, l := range lines {
		if i == 0 {
			lines[i] = "- " + l
		} else {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// A value an unencrypted patch supplies lives in that patch, not in the
// encrypted base it patches: it is written there, and verify compares
// the edited render as Flux applies it, without the sops block.
func TestSOPSPatchOverAnEncryptedBaseIsWritten(t *testing.T) {
	repo := sopsRepo(t, map[string]string{
		"base/kustomization.yaml": "resources:\n- cm.yaml\n",
		"base/cm.yaml":            sopsConfigMap,
		"prod/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: mode.yaml\n",
		"prod/mode.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: shop\ndata:\n  mode: slow\n",
	})
	live := sopsLive(t, strings.Replace(liveConfigMap("blue", sopsPlain, ""), "\ndata:\n", "\ndata:\n  mode: fast\n", 1))
	p, err := analyzer.Analyze(analyzer.Input{Repo: repo, Root: "prod", Live: live})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Refusals) != 0 || len(p.Edits) != 1 || p.Edits[0].Field != "data.mode" || p.Edits[0].File != "prod/mode.yaml" ||
		len(p.Files) != 1 || p.Files[0].Path != "prod/mode.yaml" {
		b, _ := json.MarshalIndent(p, "", "  ")
		t.Fatalf("want the patch written:\n%s", b)
	}
	holdsNone(t, p, repo, sopsPlain)
}

// A cluster that holds another SOPS ciphertext than Git's was given
// another version of the file as it is, undecrypted: that differs from
// Git for certain, and is refused by name, no value shown, with or
// without managedFields.
func TestSOPSOtherCiphertextInTheClusterIsRefused(t *testing.T) {
	repo := sopsRepo(t, map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata:\n  password: ENC[AES256_GCM,data:Zm9v,iv:aXY=,tag:dGFn,type:str]\n" +
			"sops:\n  mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]\n  version: 3.9.0\n",
	})
	live := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata:\n  password: ENC[AES256_GCM,data:YmFy,iv:aXY=,tag:dGFn,type:str]\n"
	p := sopsPlan(t, repo, sopsLive(t, live))
	out, _ := json.Marshal(p)
	if len(p.Edits) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != analyzer.CodeEncryptedSource || p.Refusals[0].Field != "data.password" {
		t.Fatalf("another ciphertext in the cluster:\n%s", out)
	}
	if strings.Contains(string(out), "YmFy") || strings.Contains(string(out), "Zm9v") {
		t.Fatalf("a ciphertext shown:\n%s", out)
	}
}
