package helm

import "testing"

// The digests are fluxcd/pkg chartutil's own test vectors
// (chartutil/digest_test.go at chartutil/v1.27.0, the version
// helm-controller v1.6 uses): key order does not matter, numbers are
// written as YAML integers, empty and nil values digest the empty text.
func TestConfigDigest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"empty", map[string]any{}, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"nil", nil, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"value map", map[string]any{
			"replicas": 3,
			"image":    map[string]any{"tag": "latest", "repository": "nginx"},
			"ports": []any{
				map[string]any{"protocol": "TCP", "port": 8080},
				map[string]any{"port": 9090, "protocol": "UDP"},
			},
		}, "sha256:fcdc2b0de1581a3633ada4afee3f918f6eaa5b5ab38c3fef03d5b48d3f85d9f6"},
		{"value map as JSON decodes it", map[string]any{
			"ports": []any{
				map[string]any{"port": float64(8080), "protocol": "TCP"},
				map[string]any{"protocol": "UDP", "port": float64(9090)},
			},
			"image":    map[string]any{"repository": "nginx", "tag": "latest"},
			"replicas": float64(3),
		}, "sha256:fcdc2b0de1581a3633ada4afee3f918f6eaa5b5ab38c3fef03d5b48d3f85d9f6"},
		{"numeric keys", map[string]any{
			"replicas": 3,
			"test": map[string]any{
				"632bd82398e71231a98004b6": "value4",
				"632bd817c559818a52307da2": "value3",
				"632bd80ddf416cf32fd50679": "value2",
				"632bd80235a05f4192aefade": "value1",
			},
		}, "sha256:8a980fcbeadd6f05818f07e8aec14070c22250ca3d96af1fcd5f93b3e85b4d70"},
	} {
		if got := ConfigDigest(tc.values); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
