package jsonvalue

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// RedactSecret replaces the values of a Secret's data and stringData with
// digests of their decoded bytes, so two Secrets can be compared without any
// value being held, printed or written. stringData folds into data, as the
// API server does on write. Other kinds pass through unchanged. The input is
// not modified.
func RedactSecret(obj map[string]any) map[string]any {
	// Only the core Secret (apiVersion v1) holds values the API server
	// treats as secret; a custom kind that happens to be named Secret is
	// compared and written like any other object.
	if obj == nil || obj["kind"] != "Secret" || obj["apiVersion"] != "v1" {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "data" && k != "stringData" {
			out[k] = v
		}
	}
	digests := map[string]any{}
	if data, ok := obj["data"].(map[string]any); ok {
		for k, v := range data {
			s, _ := v.(string)
			if isDigest(s) {
				digests[k] = s // already redacted: keep, so redaction is idempotent
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				raw = []byte(s) // not base64: digest what is there
			}
			digests[k] = digest(raw)
		}
	}
	if sd, ok := obj["stringData"].(map[string]any); ok {
		for k, v := range sd {
			s, _ := v.(string)
			digests[k] = digest([]byte(s))
		}
	}
	if len(digests) > 0 {
		out["data"] = digests
	}
	return out
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// isDigest recognises a value RedactSecret wrote. A colon is not in the
// base64 alphabet, so no real data value reads as one.
func isDigest(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	_, err := hex.DecodeString(s[len(prefix):])
	return err == nil
}
