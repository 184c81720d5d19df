package sops

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/yamledit"
)

// TestEncryptedFileRules: a file is encrypted when it holds a SOPS
// ciphertext, a dotenv or ini file's sops_mac/sops_version line, or a YAML
// or JSON document with a top-level sops mapping; a sops key anywhere
// else, or a sops scalar, is an ordinary field.
func TestEncryptedFileRules(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       bool
	}{
		{"yaml with a sops block", "kind: ConfigMap\ndata:\n  a: b\nsops:\n  version: 3.8.1\n", true},
		{"second document with a sops block", "kind: A\n---\nkind: B\nsops:\n  version: 3.8.1\n", true},
		{"json with a sops key", `{"kind": "ConfigMap", "sops": {"version": "3.8.1"}}`, true},
		{"dotenv", "PASSWORD=x\nsops_version=3.8.1\n", true},
		{"ini", "[app]\npassword = x\n[sops]\nsops_mac = y\n", true},
		{"a ciphertext alone", "password: ENC[AES256_GCM,data:abc=,iv:...,tag:...,type:str]\n", true},
		{"a sops scalar", "kind: ConfigMap\nsops: enabled\n", false},
		{"a nested sops map", "kind: ConfigMap\nspec:\n  sops:\n    version: 3.8.1\n", false},
		{"a plain env file", "MODE=slow\nSOPS_HOME=/etc\n", false},
		{"not yaml at all", "sops: [unclosed\n", false},
	} {
		data := []byte(tc.data)
		parse := func() (*yamledit.File, error) { return yamledit.Parse("f", data) }
		if got := EncryptedFile(data, parse); got != tc.want {
			t.Errorf("%s: encrypted = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCiphertextsAndWithoutSOPS: the ciphertexts of a render, by path,
// in any field and in the base64 of a Secret's data; withoutSOPS drops
// the sops block and a dotenv file's sops_ keys, leaving its input alone.
func TestCiphertextsAndWithoutSOPS(t *testing.T) {
	const enc = "ENC[AES256_GCM,data:abc=,iv:aXY=,tag:dGFn,type:str]"
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"data": map[string]any{"a": "RU5DW0FFUzI1Nl9HQ00sZGF0YTphYmM9XQ==", "b": "cGxhaW4=", "sops_mac": "eA==", "sops_version": "My44"},
		"spec": map[string]any{"users": []any{map[string]any{"name": "admin", "password": enc}}},
		"sops": map[string]any{"mac": enc},
	}
	got := Without(obj)
	if _, ok := got["sops"]; ok || len(got["data"].(map[string]any)) != 2 {
		t.Errorf("withoutSOPS = %v", got)
	}
	if _, ok := obj["sops"]; !ok || len(obj["data"].(map[string]any)) != 4 {
		t.Errorf("withoutSOPS changed its input: %v", obj)
	}
	paths := Ciphertexts(got)
	var names []string
	for _, p := range paths {
		names = append(names, p.String())
	}
	slices.Sort(names)
	if joined := strings.Join(names, ", "); joined != "data.a, spec.users[admin].password" {
		t.Errorf("ciphertexts = %v", names)
	}
	plain := map[string]any{"kind": "ConfigMap", "data": map[string]any{"a": "ENC is a word", "sops_other": "x"}}
	if Without(plain)["data"].(map[string]any)["sops_other"] != "x" || Ciphertexts(plain) != nil {
		t.Error("an object without SOPS was changed")
	}
}
