package sourceform

import "github.com/driftback/driftback/internal/jsonvalue"

// Value is a field's value in one view, where absence is a value of its
// own: two absences are equal, an absence never equals a present value.
type Value struct {
	V       any
	Present bool
}

// Of is v, present.
func Of(v any) Value { return Value{V: v, Present: true} }

// Absent is the value of a field a view does not hold.
var Absent = Value{}

// Equal reports whether a and b are the same value, or both absent.
func (a Value) Equal(b Value) bool {
	if a.Present != b.Present {
		return false
	}
	return !a.Present || jsonvalue.Equal(a.V, b.V)
}

func child(v Value, key string) Value {
	m, ok := v.V.(map[string]any)
	if !ok {
		return Absent
	}
	c, ok := m[key]
	if !ok {
		return Absent
	}
	return Of(c)
}

func asMap(v Value) (map[string]any, bool) {
	if !v.Present {
		return nil, true
	}
	m, ok := v.V.(map[string]any)
	return m, ok
}

func asList(v Value) ([]any, bool) {
	if !v.Present {
		return nil, true
	}
	l, ok := v.V.([]any)
	return l, ok
}

// element is the element named n of a list indexed by name.
func element(byName map[string]map[string]any, n string) Value {
	if e, ok := byName[n]; ok {
		return Of(e)
	}
	return Absent
}

// Restore makes dst hold from's value (or absence) at p, copying the
// shortest missing ancestor whole when dst lacks part of the way.
func Restore(dst, from map[string]any, p jsonvalue.Path) {
	for i := 1; i <= len(p); i++ {
		q := p[:i]
		if _, ok := jsonvalue.Get(dst, q); ok && i < len(p) {
			continue
		}
		if v, ok := jsonvalue.Get(from, q); ok {
			jsonvalue.Set(dst, q, jsonvalue.Copy(v))
		} else {
			jsonvalue.Delete(dst, q)
		}
		return
	}
}
