package jsonvalue

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// Normalize returns v as a canonical tree: map[string]any, []any, string,
// bool, nil, int64 (every integral number that fits) or float64.
func Normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = Normalize(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = Normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Normalize(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = e
		}
		return out
	case int:
		return int64(t)
	case int8:
		return int64(t)
	case int16:
		return int64(t)
	case int32:
		return int64(t)
	case int64:
		return t
	case uint:
		return normFloatOrUint(uint64(t))
	case uint8:
		return int64(t)
	case uint16:
		return int64(t)
	case uint32:
		return int64(t)
	case uint64:
		return normFloatOrUint(t)
	case float32:
		return normFloat(float64(t))
	case float64:
		return normFloat(t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil {
			return normFloat(f)
		}
		return t.String()
	default:
		return v
	}
}

// NormalizeOwned is Normalize for a value nobody else holds (a decoder's
// fresh output): maps and lists already of the canonical types are
// normalised in place rather than copied.
func NormalizeOwned(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = NormalizeOwned(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = NormalizeOwned(e)
		}
		return t
	case string, bool, nil, int64:
		return v
	}
	return Normalize(v)
}

// IsCanonical reports whether v is already what Normalize would make of
// it, so that it can be read without a normalised copy.
func IsCanonical(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			if !IsCanonical(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range t {
			if !IsCanonical(e) {
				return false
			}
		}
		return true
	case string, bool, nil, int64:
		return true
	case float64:
		n, ok := normFloat(t).(float64)
		return ok && (n == t || math.IsNaN(t))
	}
	return false
}

func normFloatOrUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return float64(u)
}

func normFloat(f float64) any {
	if f == math.Trunc(f) && f >= -(1<<63) && f < (1<<63) && !math.IsInf(f, 0) {
		return int64(f)
	}
	return f
}

// Equal reports whether a and b are the same canonical value. Both are
// normalised first, so callers may pass raw decoder output. NaN equals NaN.
func Equal(a, b any) bool {
	// Values that are canonical already (the common case: renders and live
	// objects are normalised once when read) compare without a copy; any
	// other shape is normalised whole, which is what it means.
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			if len(x) != len(y) {
				return false
			}
			for k, xv := range x {
				yv, ok := y[k]
				if !ok || !Equal(xv, yv) {
					return false
				}
			}
			return true
		}
	case []any:
		if y, ok := b.([]any); ok {
			if len(x) != len(y) {
				return false
			}
			for i := range x {
				if !Equal(x[i], y[i]) {
					return false
				}
			}
			return true
		}
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case int64:
		if y, ok := b.(int64); ok {
			return x == y
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	}
	return equalNorm(Normalize(a), Normalize(b))
}

func equalNorm(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalNorm(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalNorm(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		// NaN equals NaN here: a value compared with itself must be equal,
		// or a document holding .nan would never be a no-op.
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	default:
		return a == b
	}
}

// Copy returns a deep copy of a canonical tree.
func Copy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = Copy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Copy(e)
		}
		return out
	default:
		return v
	}
}

// Bytes estimates the memory v takes: strings by their length, maps,
// slices and boxed scalars by the Go runtime's usual overheads. It is what
// caches of decoded objects count against a byte budget.
func Bytes(v any) int64 {
	switch t := v.(type) {
	case map[string]any:
		n := int64(48)
		for k, e := range t {
			n += 16 + int64(len(k)) + 16 + Bytes(e)
		}
		return n
	case []any:
		n := int64(24)
		for _, e := range t {
			n += 16 + Bytes(e)
		}
		return n
	case string:
		return int64(len(t))
	default:
		return 8
	}
}

// SortedKeys returns the keys of m in byte order, so every walk over a map is
// deterministic.
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// UnionKeys returns the sorted union of the keys of the given maps (nil maps
// are empty).
func UnionKeys(ms ...map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// Canonical returns the canonical JSON encoding of v (sorted keys, normalised
// numbers); two values are Equal exactly when their encodings are identical.
func Canonical(v any) string {
	b, err := json.Marshal(Normalize(v))
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
