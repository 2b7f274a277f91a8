package testobj

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// fieldSet is a set of field paths, as server-side apply tracks them: a
// node per field, map key or list item, whose children are the fields
// inside it; self marks a node that is itself in the set besides its
// children (the "." of the FieldsV1 format).
type fieldSet struct {
	self     bool
	children map[string]*fieldSet
}

// podSchema says, for the parts of a Pod the realistic Pods set, which
// lists are associative, by their keys, and which objects are atomic (one
// field, whatever they hold). Paths leave out list items. Every other
// object is a struct or a map (each member a field of its own) and every
// other list is atomic, as the Pod's OpenAPI schema has them (+listType,
// +listMapKey, +structType).
var podSchema = struct {
	keys   map[string][]string
	atomic map[string]bool
}{
	keys: map[string][]string{
		"metadata.ownerReferences":         {"uid"},
		"spec.containers":                  {"name"},
		"spec.containers.env":              {"name"},
		"spec.containers.ports":            {"containerPort", "protocol"},
		"spec.containers.volumeMounts":     {"mountPath"},
		"spec.initContainers":              {"name"},
		"spec.initContainers.env":          {"name"},
		"spec.initContainers.ports":        {"containerPort", "protocol"},
		"spec.initContainers.volumeMounts": {"mountPath"},
		"spec.volumes":                     {"name"},
		"status.conditions":                {"type"},
		"status.podIPs":                    {"ip"},
	},
	atomic: map[string]bool{
		"metadata.ownerReferences":                      true, // its items
		"spec.containers.env.valueFrom.fieldRef":        true,
		"spec.initContainers.env.valueFrom.fieldRef":    true,
		"spec.containers.env.valueFrom.secretKeyRef":    true,
		"spec.containers.env.valueFrom.configMapKeyRef": true,
	},
}

// fieldsV1 returns the FieldsV1 JSON of the fields an Update from base to
// obj sets, as the API server's field manager records them for the update's
// manager: every field of obj (as JSON: empty omitempty fields are not
// there) whose value is not base's, and, as a member of the set itself,
// every object or list that base lacks.
func fieldsV1(obj, base any) []byte {
	set := &fieldSet{}
	addFields(set, toJSON(obj), toJSON(base), true, "")
	var out bytes.Buffer
	set.write(&out)
	return out.Bytes()
}

// toJSON returns v as JSON values: map[string]any, []any, json.Number...
func toJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("testobj: %v", err)) // the objects here always marshal
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		panic(fmt.Sprintf("testobj: %v", err))
	}
	return out
}

// addFields adds to set the fields of the JSON value v found at path,
// where base holds based (if inBase). It reports whether it added any.
func addFields(set *fieldSet, v, base any, inBase bool, path string) bool {
	obj, ok := v.(map[string]any)
	if !ok || podSchema.atomic[path] {
		return !inBase || !reflect.DeepEqual(v, base)
	}
	baseObj, _ := base.(map[string]any)
	added := false
	for name, fv := range obj {
		fpath := join(path, name)
		bv, inB := baseObj[name]
		child := &fieldSet{}
		var changed bool
		if keys, ok := podSchema.keys[fpath]; ok {
			changed = addItems(child, fv, bv, keys, fpath)
			child.self = !inB
		} else {
			changed = addFields(child, fv, bv, inB, fpath)
			_, isObj := fv.(map[string]any)
			child.self = !inB && isObj && !podSchema.atomic[fpath]
		}
		if changed || !inB {
			set.put("f:"+name, child)
			added = true
		}
	}
	return added
}

// addItems adds to set the items of the associative list v (keyed by
// keys) that base's list lacks or holds with other values.
func addItems(set *fieldSet, v, base any, keys []string, path string) bool {
	items, _ := v.([]any)
	baseItems, _ := base.([]any)
	added := false
	for _, it := range items {
		item, _ := it.(map[string]any)
		k := itemKey(item, keys)
		var bv any
		inB := false
		for _, b := range baseItems {
			if bi, _ := b.(map[string]any); bi != nil && itemKey(bi, keys) == k {
				bv, inB = bi, true
			}
		}
		child := &fieldSet{self: !inB}
		if podSchema.atomic[path] {
			child.self = false
		}
		if addFields(child, item, bv, inB, path) || !inB {
			set.put("k:"+k, child)
			added = true
		}
	}
	return added
}

// itemKey is the key of an associative list's item: a JSON object of its
// key fields, in name order.
func itemKey(item map[string]any, keys []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(slices.Values(keys)) {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(item[k])
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.String()
}

func (s *fieldSet) put(name string, c *fieldSet) {
	if s.children == nil {
		s.children = map[string]*fieldSet{}
	}
	s.children[name] = c
}

// write writes s as FieldsV1 JSON: "." first, then the fields in name
// order.
func (s *fieldSet) write(out *bytes.Buffer) {
	out.WriteByte('{')
	sep := ""
	if s.self && len(s.children) > 0 {
		out.WriteString(`".":{}`)
		sep = ","
	}
	for _, name := range slices.Sorted(maps.Keys(s.children)) {
		out.WriteString(sep)
		sep = ","
		nb, _ := json.Marshal(name)
		out.Write(nb)
		out.WriteByte(':')
		s.children[name].write(out)
	}
	out.WriteByte('}')
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
