package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder fills the Go types from a yaml.Node tree by reflection, so that it
// can report every problem at its node and keep going. It also remembers
// where each field came from, for the checks that run after decoding.
type decoder struct {
	file  string
	errs  Errors
	nodes map[string]*yaml.Node // value node of every field path present in the file
	keys  map[string]*yaml.Node // key node of every mapping entry, by field path
	bad   map[string]bool       // field paths whose value could not be decoded
	// suggested holds the field paths an unknown key was taken to mean: a
	// "missing" error for them would only repeat the "did you mean".
	suggested map[string]bool
	count     int // nodes visited, against alias bombs
}

const (
	maxDepth = 32
	// maxNodes bounds what aliases can expand a small file into. A config
	// of 10,000 written targets (issue 54's scale) is about 130,000 values.
	maxNodes = 1000000
)

var durationType = reflect.TypeFor[time.Duration]()

func newDecoder(file string) *decoder {
	return &decoder{
		file:  file,
		nodes: map[string]*yaml.Node{},
		keys:  map[string]*yaml.Node{},
		bad:   map[string]bool{},

		suggested: map[string]bool{},
	}
}

func childPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// errorAt records an error at node n.
func (d *decoder) errorAt(n *yaml.Node, field, format string, args ...any) {
	e := &Error{File: d.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// typeError records that the value at path has the wrong shape; checks on
// that path and below are skipped afterwards.
func (d *decoder) typeError(path string, n *yaml.Node, want string, hint string) {
	d.bad[path] = true
	msg := "expected " + want + ", got " + describe(n)
	if hint != "" {
		msg += "; " + hint
	}
	d.errorAt(n, path, "%s", msg)
}

// describe names a node's value the way a user reads it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing (null)"
		case "!!bool":
			return "the boolean " + n.Value
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!str":
			return "the string " + strconv.Quote(n.Value)
		}
		return n.Tag + " " + strconv.Quote(n.Value)
	}
	return "an unsupported YAML node"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// decode stores node n into v. A null value leaves v at its zero value (the
// key counts as unset) unless it is a list element.
func (d *decoder) decode(path string, n *yaml.Node, v reflect.Value, depth int, inList bool) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.nodes[path] = n
	if !d.decodable(path, n, depth, inList) {
		return
	}
	t := v.Type()
	switch {
	case t == durationType:
		d.duration(path, n, v)
	case t.Kind() == reflect.Pointer:
		elem := reflect.New(t.Elem())
		d.decode(path, n, elem.Elem(), depth, false)
		v.Set(elem)
	case t.Kind() == reflect.Struct:
		d.mapping(path, n, v, depth)
	case t.Kind() == reflect.Slice:
		d.list(path, n, v, depth)
	case t.Kind() == reflect.String:
		d.text(path, n, v)
	case t.Kind() == reflect.Bool:
		d.boolean(path, n, v)
	case t.Kind() == reflect.Int64:
		d.integer(path, n, v)
	default:
		panic("config: no decoder for " + t.String())
	}
}

// decodable says whether node n may be decoded at all: within the node and
// depth budgets, without a custom tag, and not null (a null list entry is
// an error, any other null leaves the value unset).
func (d *decoder) decodable(path string, n *yaml.Node, depth int, inList bool) bool {
	if d.count++; d.count > maxNodes {
		if d.count == maxNodes+1 {
			d.bad[""] = true
			d.errorAt(n, path, "the file expands to more than %d values (through aliases?); 10,000 targets take about 130,000", maxNodes)
		}
		return false
	}
	if depth > maxDepth {
		d.typeError(path, n, "a shallower document", "nothing in a driftback config nests this deep")
		return false
	}
	if n.Tag != "" && !strings.HasPrefix(n.Tag, "!!") {
		d.bad[path] = true
		d.errorAt(n, path, "custom YAML tag %s is not supported; remove it", n.Tag)
		return false
	}
	if isNull(n) {
		if inList {
			d.typeError(path, n, "an entry", "remove the empty list entry")
		}
		return false
	}
	return true
}

// list decodes a sequence into the slice v, entry by entry.
func (d *decoder) list(path string, n *yaml.Node, v reflect.Value, depth int) {
	if n.Kind != yaml.SequenceNode {
		hint := ""
		if n.Kind == yaml.ScalarNode {
			hint = "write [" + n.Value + "] for a single entry"
		}
		d.typeError(path, n, "a list", hint)
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, el := range n.Content {
		d.decode(indexPath(path, i), el, s.Index(i), depth+1, true)
	}
	v.Set(s)
}

// text decodes a scalar into the string v.
func (d *decoder) text(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.ScalarNode {
		d.typeError(path, n, "a string", "")
		return
	}
	switch n.Tag {
	case "!!str", "!!int", "!!float", "!!timestamp":
		// A number where text is expected keeps its spelling (1.10
		// stays "1.10"); only the boolean reading would lose it.
		v.SetString(n.Value)
	case "!!bool":
		d.typeError(path, n, "a string", fmt.Sprintf("quote it (%q) if you mean the text", n.Value))
	default:
		d.typeError(path, n, "a string", "")
	}
}

// boolean decodes an unquoted true or false into v.
func (d *decoder) boolean(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			hint = "write true or false without quotes"
		}
		d.typeError(path, n, "true or false", hint)
		return
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.typeError(path, n, "true or false", "")
		return
	}
	v.SetBool(b)
}

// integer decodes an unquoted whole number into the int64 v.
func (d *decoder) integer(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			if _, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				hint = "remove the quotes"
			}
		}
		d.typeError(path, n, "a whole number", hint)
		return
	}
	var i int64
	if err := n.Decode(&i); err != nil {
		d.typeError(path, n, "a whole number that fits in 64 bits", "")
		return
	}
	v.SetInt(i)
}

func (d *decoder) duration(path string, n *yaml.Node, v reflect.Value) {
	const want = "a duration such as 30s, 1m or 1h30m"
	if n.Kind != yaml.ScalarNode {
		d.typeError(path, n, want, "")
		return
	}
	switch n.Tag {
	case "!!int", "!!float":
		d.typeError(path, n, want, fmt.Sprintf("add a unit (%ss)", n.Value))
		return
	case "!!str":
	default:
		d.typeError(path, n, want, "")
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.bad[path] = true
		d.errorAt(n, path, "%q is not a duration; write a number with a unit (ns, us, ms, s, m, h) such as 30s, 1m or 1h30m", n.Value)
		return
	}
	v.SetInt(int64(dur))
}

// field describes one key of a mapping type.
type field struct {
	name  string   // the key
	index int      // struct field index
	aka   []string // other spellings people use
	typ   reflect.Type
}

// fieldsOf lists the keys of struct type t in declaration order.
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		var aka []string
		if a := f.Tag.Get("aka"); a != "" {
			aka = strings.Split(a, ",")
		}
		out = append(out, field{name: name, index: i, aka: aka, typ: f.Type})
	}
	return out
}

// structOf returns the struct type behind t (through one pointer), or nil.
func structOf(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t != durationType {
		return t
	}
	return nil
}

func keyNames(fs []field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

func (d *decoder) mapping(path string, n *yaml.Node, v reflect.Value, depth int) {
	fs := fieldsOf(v.Type())
	if n.Kind != yaml.MappingNode {
		d.typeError(path, n, "a mapping with the keys "+keyNames(fs), "")
		return
	}
	byName := map[string]field{}
	for _, f := range fs {
		byName[f.name] = f
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.errorAt(k, path, "keys must be plain words, got %s", describe(k))
			continue
		}
		key := k.Value
		fp := childPath(path, key)
		if key == "<<" {
			d.errorAt(k, path, "merge keys (<<) are not supported; put shared settings under defaults")
			continue
		}
		if first, dup := seen[key]; dup {
			d.errorAt(k, fp, "duplicate key %q (first at line %d); YAML would silently keep only one, so remove one of them", key, first.Line)
			continue
		}
		seen[key] = k
		f, ok := byName[key]
		if !ok {
			d.unknownKey(path, k, v.Type(), fs)
			continue
		}
		d.keys[fp] = k
		d.decode(fp, val, v.Field(f.index), depth+1, false)
	}
}

// secretKeys are keys in github: that would hold the private key itself.
var secretKeys = []string{"privatekey", "key", "pem", "privatekeypem", "privatekeydata", "secret", "clientsecret", "webhooksecret", "hooksecret", "token"}

func (d *decoder) unknownKey(path string, k *yaml.Node, t reflect.Type, fs []field) {
	key := k.Value
	if t == reflect.TypeFor[GitHub]() {
		for _, s := range secretKeys {
			if strings.EqualFold(key, s) {
				// No "neither privateKeyFile nor privateKeyEnv" on top.
				d.suggested[childPath(path, "privateKeyFile")] = true
				how := "put the App's PEM private key in a file and set privateKeyFile to its path, or in an environment variable and set privateKeyEnv to its name"
				if strings.Contains(strings.ToLower(key), "webhook") {
					how = "put the App's webhook secret in a file (a Secret mounted as one) and set webhookSecretFile to its path"
				}
				d.errorAt(k, childPath(path, key), "secrets do not belong in the config file (it gets committed, shared and printed); %s", how)
				return
			}
		}
	}
	msg := fmt.Sprintf("unknown key %q", key)
	if s := suggest(key, fs); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
		d.suggested[childPath(path, s)] = true
	} else {
		msg += "; allowed keys are: " + keyNames(fs)
	}
	d.errorAt(k, path, "%s", msg)
}

// suggest returns the known key the user most likely meant, or "": the same
// key in another case or a known alias first, then the key one level down
// (labels written in a target instead of under pullRequest), then the
// nearest key by edit distance.
func suggest(key string, fs []field) string {
	lk := strings.ToLower(key)
	for _, f := range fs {
		if strings.ToLower(f.name) == lk {
			return f.name
		}
	}
	for _, f := range fs {
		for _, a := range f.aka {
			if strings.ToLower(a) == lk {
				return f.name
			}
		}
	}
	for _, f := range fs {
		if st := structOf(f.typ); st != nil {
			for _, g := range fieldsOf(st) {
				if g.name == key {
					return f.name + "." + g.name
				}
			}
		}
	}
	best, bestD := "", 1<<30
	for _, f := range fs {
		dist := editDistance(lk, strings.ToLower(f.name))
		if dist < bestD {
			best, bestD = f.name, dist
		}
	}
	if bestD <= 2 || bestD <= len(key)/3 {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, by bytes (keys
// are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// present reports whether path was set to a non-null value in the file.
func (d *decoder) present(path string) bool {
	n, ok := d.nodes[path]
	return ok && !isNull(n)
}

// isBad reports whether path or one of its parents failed to decode, so a
// follow-up check would only repeat that error.
func (d *decoder) isBad(path string) bool {
	for {
		if d.bad[path] {
			return true
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return d.bad[""]
		}
		path = path[:i]
	}
}

// badUnder reports whether anything at or below prefix failed to decode.
func (d *decoder) badUnder(prefix string) bool {
	for p := range d.bad {
		if p == prefix || strings.HasPrefix(p, prefix+".") || strings.HasPrefix(p, prefix+"[") {
			return true
		}
	}
	return false
}

// at returns the node of path, or of its nearest present parent: a missing
// key is reported at the mapping that lacks it.
func (d *decoder) at(path string) *yaml.Node {
	for {
		if n, ok := d.nodes[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return d.nodes[""]
		}
		path = path[:i]
	}
}

// fail records a validation error at path unless path already failed to
// decode, or is missing because of a misspelt key already reported.
func (d *decoder) fail(path, format string, args ...any) {
	if d.isBad(path) || (!d.present(path) && d.suggested[path]) {
		return
	}
	d.errorAt(d.at(path), path, format, args...)
}

// failKey is fail positioned at the key of path rather than its value.
func (d *decoder) failKey(path, field, format string, args ...any) {
	if d.isBad(path) {
		return
	}
	n := d.keys[path]
	if n == nil {
		n = d.at(path)
	}
	d.errorAt(n, field, format, args...)
}

// line is the line of path's value, for "first at line N".
func (d *decoder) line(path string) int {
	if n := d.at(path); n != nil {
		return n.Line
	}
	return 0
}

// sortedKeys is used for stable lists in messages.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
